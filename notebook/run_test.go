package notebook

import (
	"bytes"
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func codeCell(src string, tags ...any) *Cell {
	c := &Cell{Type: "code", Source: src, Metadata: map[string]any{}}
	if len(tags) > 0 {
		c.Metadata["tags"] = tags
	}
	return c
}

// The smoke notebook fills in every kind of output as Jupyter would, and
// the written notebook validates with nbformat.
func TestRunSmoke(t *testing.T) {
	nb := readTestdata(t, "smoke.ipynb")
	if err := nb.InjectParams([]string{"steps=5"}); err != nil {
		t.Fatal(err)
	}
	nb.Cells = append(nb.Cells,
		codeCell("h := display.NewHandle()\nh.Show(display.Text(\"0%\"))\nfmt.Println(\"working\")\nh.Update(display.Text(\"100%\"))"),
		codeCell("panic(\"expected\")", "raises-exception"),
		codeCell("fmt.Println(\"skipped\")", "skip-execution"),
	)
	nb.EnsureIDs()
	var progress bytes.Buffer
	rep, err := Run(context.Background(), nb, Options{AllowErrors: true, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	c := nb.Cells // 0 markdown, 1 parameters, 2 injected, 3 print, 4 value, 5 error, 6 image, 7 update, 8 raises, 9 skipped
	if got := c[3].Outputs; len(got) != 1 || got[0].Type != "stream" || got[0].Text != "steps 5 name bandit\nrate 0.50\n" {
		t.Errorf("print cell outputs: %+v", got)
	}
	if got := c[4].Outputs; len(got) != 1 || got[0].Type != "execute_result" || got[0].Data["text/plain"] != "10" || *got[0].ExecutionCount != 4 || *c[4].ExecutionCount != 4 {
		t.Errorf("value cell outputs: %+v", got)
	}
	if got := c[5].Outputs; len(got) != 1 || got[0].Type != "error" || got[0].EName != "panic" || !strings.Contains(got[0].EValue, "index out of range") {
		t.Errorf("error cell outputs: %+v", got)
	}
	if got := c[6].Outputs; len(got) != 1 || got[0].Type != "display_data" {
		t.Errorf("image cell outputs: %+v", got)
	} else if b, err := base64.StdEncoding.DecodeString(got[0].Data["image/png"].(string)); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("image/png is not a base64 PNG: %v", err)
	}
	if got := c[7].Outputs; len(got) != 2 || got[0].Data["text/plain"] != "100%" || got[1].Text != "working\n" {
		t.Errorf("update_display_data must replace the display in place: %+v", got)
	}
	if c[9].ExecutionCount != nil || len(c[9].Outputs) != 0 {
		t.Errorf("skip-execution cell ran")
	}
	if rep.Failed != nil || rep.Errors() != 1 || !rep.Cells[7].Expected || !rep.Cells[8].Skipped {
		t.Errorf("report: failed %v, errors %d, %+v", rep.Failed, rep.Errors(), rep.Cells)
	}
	exec, _ := c[3].Metadata["execution"].(map[string]any)
	for _, k := range []string{"iopub.execute_input", "shell.execute_reply"} {
		if _, err := time.Parse("2006-01-02T15:04:05.000000Z", exec[k].(string)); err != nil {
			t.Errorf("metadata.execution[%q]: %v", k, err)
		}
	}
	for _, want := range []string{"cell 1/9 [", "cell 4/9 [", "FAILED", "failed as expected", "skipped (skip-execution)"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	out := filepath.Join(t.TempDir(), "out.ipynb")
	if err := nb.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	validateWithNbformat(t, out)
}

// Without AllowErrors the run stops at the first failed cell; later cells
// keep no stale outputs.
func TestRunStopsAtError(t *testing.T) {
	nb := &Notebook{NBFormat: 4, Cells: []*Cell{
		codeCell("x := 1"), codeCell("x.Foo()"),
		{Type: "code", Source: "x", Metadata: map[string]any{}, Outputs: []*Output{{Type: "stream", Name: "stdout", Text: "stale"}}},
	}}
	nb.EnsureIDs()
	rep, err := Run(context.Background(), nb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed == nil || rep.Failed.Index != 1 || rep.Failed.Err.Name != "CompileError" {
		t.Fatalf("failed: %+v", rep.Failed)
	}
	if len(nb.Cells[2].Outputs) != 0 || nb.Cells[2].ExecutionCount != nil || !rep.Cells[2].Skipped {
		t.Errorf("cell after the failure: outputs %v, count %v", nb.Cells[2].Outputs, nb.Cells[2].ExecutionCount)
	}
}

// A cell that never returns is interrupted at the timeout and fails with
// a TimeoutError; cancelling the context interrupts the running cell.
func TestRunTimeoutAndInterrupt(t *testing.T) {
	nb := &Notebook{NBFormat: 4, Cells: []*Cell{codeCell("for {\n}"), codeCell("1")}}
	nb.EnsureIDs()
	start := time.Now()
	rep, err := Run(context.Background(), nb, Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed == nil || !rep.Failed.TimedOut || time.Since(start) > 10*time.Second {
		t.Fatalf("report %+v after %s", rep.Failed, time.Since(start))
	}
	outs := nb.Cells[0].Outputs
	o := outs[len(outs)-1]
	if o.EName != "TimeoutError" || o.EValue != "cell execution timed out after 200ms" {
		t.Errorf("timeout output %+v", o)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	rep, err = Run(ctx, nb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Cells[0].Err == nil || rep.Cells[0].Err.Name != "Interrupted" || !rep.Cells[1].Skipped {
		t.Errorf("interrupted run: %+v %+v", rep, rep.Cells[0])
	}
}

func TestJUnitAndHTML(t *testing.T) {
	nb := readTestdata(t, "smoke.ipynb")
	rep, err := Run(context.Background(), nb, Options{AllowErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := JUnit([]Result{{Name: "smoke.ipynb", Notebook: nb, Report: rep}})
	if err != nil {
		t.Fatal(err)
	}
	x := string(b)
	for _, want := range []string{
		`<testsuite name="smoke.ipynb" tests="5" failures="1" skipped="0"`,
		`<testcase name="cell 3 [` + nb.Cells[2].ID + `]: fmt.Println(&#34;steps&#34;, steps, &#34;name&#34;, name)" classname="smoke.ipynb" time="`,
		`<failure message="panic: reflect: slice index out of range" type="panic">panic: reflect: slice index out of range`,
	} {
		if !strings.Contains(x, want) {
			t.Errorf("JUnit lacks %s:\n%s", want, x)
		}
	}
	h, err := HTML(nb, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	page := string(h)
	for _, want := range []string{
		"<h1>Smoke test</h1>", "<em>small</em>", "<table>", // markdown rendered, GFM tables
		`<img alt="`, `src="data:image/png;base64,iVBORw0KGgo`, // image embedded
		`<span class="k">import</span> <span class="s">&#34;fmt&#34;</span>`, // code highlighted
		`<span class="c">// index out of range</span>`,
		`<pre class="output error">panic: reflect: slice index out of range`,
		`<span class="prompt">Out[3]:</span><pre>6</pre>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML lacks %s", want)
		}
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("HTML page refers to an external resource")
	}
}

func TestCarriageReturns(t *testing.T) {
	for in, want := range map[string]string{
		"a\rb\n":             "b\n",
		"10%\r50%\r100%\nok": "100%\nok",
		"x\r\ny\n":           "x\ny\n",
		"line\r":             "line\r",
		"plain\n":            "plain\n",
	} {
		if got := carriageReturns(in); got != want {
			t.Errorf("carriageReturns(%q) = %q, want %q", in, got, want)
		}
	}
}
