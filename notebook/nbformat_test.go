package notebook

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) *Notebook {
	t.Helper()
	nb, err := ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

// A notebook read and written reads back the same, and writing is stable:
// ids are generated once, deterministically, and kept.
func TestRoundTrip(t *testing.T) {
	nb := readTestdata(t, "smoke.ipynb")
	again := readTestdata(t, "smoke.ipynb")
	for i := range nb.Cells {
		if nb.Cells[i].ID != again.Cells[i].ID {
			t.Fatalf("cell %d: ids %q and %q differ between two reads", i, nb.Cells[i].ID, again.Cells[i].ID)
		}
	}
	nb.Cells[2].Outputs = []*Output{
		{Type: "stream", Name: "stdout", Text: "a\nb\n"},
		{Type: "display_data", Data: map[string]any{"image/png": "iVBORw0KGgo=", "text/plain": "<PNG>", "text/html": "<b>x</b>\n<i>y</i>"}, Metadata: map[string]any{}},
		{Type: "error", EName: "panic", EValue: "boom", Traceback: []string{"panic: boom"}},
	}
	b1, err := nb.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	nb2, err := Parse(b1)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := nb2.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) {
		t.Errorf("write, read, write differs:\n%s\n---\n%s", b1, b2)
	}
	for _, want := range []string{`"nbformat_minor": 5`, `"text/html": [` + "\n" + `       "<b>x</b>\n",`, `"image/png": "iVBORw0KGgo="`, `"name": "ragen-go"`} {
		if !bytes.Contains(b1, []byte(want)) {
			t.Errorf("written notebook lacks %s", want)
		}
	}
	if got := nb2.Cells[2].Outputs[1].Data["text/html"]; got != "<b>x</b>\n<i>y</i>" {
		t.Errorf("text/html read back as %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not json", "{\n \"cells\": [,]\n}", "not a notebook: invalid JSON at line 2, column 12: invalid character ',' looking for beginning of value"},
		{"not an object", "[]", "not a notebook: invalid JSON: json: cannot unmarshal array into Go value of type map[string]json.RawMessage"},
		{"no nbformat", "{}", `not a notebook: missing "nbformat"`},
		{"nbformat 3", `{"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": []}`, "nbformat 3 is not supported: ragen-run reads nbformat 4 (upgrade the notebook with `jupyter nbconvert --to notebook --nbformat 4 --inplace FILE`, or open and save it in Jupyter)"},
		{"cell type", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "heading", "source": "", "metadata": {}}]}`, `cell 1: unknown cell_type "heading" (want code, markdown or raw)`},
		{"tags", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "a", "cell_type": "raw", "source": "", "metadata": {}}, {"id": "b", "cell_type": "raw", "source": "", "metadata": {"tags": [1]}}]}`, "cell 2: metadata.tags must be a list of strings (got 1)"},
		{"stream name", `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "source": [], "metadata": {}, "outputs": [{"output_type": "stream", "name": "stdin", "text": ""}]}]}`, `cell 1 output 1: stream name "stdin" (want stdout or stderr)`},
	} {
		_, err := Parse([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got error\n  %v\nwant\n  %s", tc.name, err, tc.want)
		}
	}
}

// Duplicate ids (a cell copied in an editor) are replaced, the first kept.
func TestDuplicateIDs(t *testing.T) {
	nb, err := Parse([]byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "a", "cell_type": "raw", "source": "x", "metadata": {}}, {"id": "a", "cell_type": "raw", "source": "x", "metadata": {}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if nb.Cells[0].ID != "a" || nb.Cells[1].ID == "a" || !idPattern.MatchString(nb.Cells[1].ID) {
		t.Errorf("ids %q, %q", nb.Cells[0].ID, nb.Cells[1].ID)
	}
}

func TestCheckKernel(t *testing.T) {
	for _, tc := range []struct{ meta, want string }{
		{`{}`, ""},
		{`{"kernelspec": {"name": "ragen-go", "display_name": "Go (ragen)", "language": "go"}}`, ""},
		{`{"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}`, `the notebook's kernel is "python3" (language "python"), not "ragen-go": ragen-run executes Go notebooks of the ragen kernel; select the "Go (ragen)" kernel in Jupyter and save, or set metadata.kernelspec to {"name": "ragen-go", "language": "go", "display_name": "Go (ragen)"}`},
		{`{"kernelspec": {"name": "gophernotes", "display_name": "Go", "language": "go"}}`, `the notebook's kernel is "gophernotes" (language "go"), not "ragen-go": ragen-run executes Go notebooks of the ragen kernel; select the "Go (ragen)" kernel in Jupyter and save, or set metadata.kernelspec to {"name": "ragen-go", "language": "go", "display_name": "Go (ragen)"}`},
		{`{"language_info": {"name": "python"}}`, `the notebook's language is "python", not "go": ragen-run executes Go notebooks of the ragen kernel (metadata.language_info.name)`},
	} {
		nb, err := Parse([]byte(`{"nbformat": 4, "nbformat_minor": 5, "cells": [], "metadata": ` + tc.meta + `}`))
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if err := nb.CheckKernel(); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("metadata %s:\ngot  %s\nwant %s", tc.meta, got, tc.want)
		}
	}
}

// A notebook write replaces the file whole, and a failed write leaves
// nothing behind.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "nb.ipynb")
	nb := readTestdata(t, "smoke.ipynb")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := nb.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err != nil {
		t.Errorf("written notebook does not read back: %v", err)
	}
	if err := nb.WriteFile(filepath.Join(dir, "missing", "x.ipynb")); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only nb.ipynb", len(entries))
	}
}

// validateWithNbformat validates a written notebook with Debian's
// python3-nbformat, the reference implementation of the schema.
func validateWithNbformat(t *testing.T, path string) {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import nbformat").Run(); err != nil {
		t.Skipf("nbformat validation skipped: %s cannot import nbformat (apt-get install -y python3-nbformat)", py)
	}
	out, err := exec.Command(py, "-c", `import sys, nbformat; nbformat.validate(nbformat.read(sys.argv[1], 4))`, path).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat rejects %s: %v\n%s", path, err, strings.TrimSpace(string(out)))
	}
	// nbformat writes the same bytes: no diff noise when a notebook moves
	// between Jupyter and ragen-run.
	rewritten := path + ".nbformat"
	if out, err := exec.Command(py, "-c", `import sys, nbformat; nbformat.write(nbformat.read(sys.argv[1], 4), sys.argv[2])`, path, rewritten).CombinedOutput(); err != nil {
		t.Fatalf("nbformat cannot rewrite %s: %v\n%s", path, err, out)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(rewritten)
	if !bytes.Equal(a, b) {
		t.Errorf("nbformat writes %s differently from ragen-run", path)
	}
}
