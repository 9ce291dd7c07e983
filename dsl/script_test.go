package dsl_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/stdlib"
)

var update = flag.Bool("update", false, "rewrite the // Output: and // Error: blocks of testdata/scripts")

// TestScripts runs each program in testdata/scripts through the interpreter
// cells use (stdlib.NewInterpreter) and compares what it prints with the
// comment block that ends the file, as yaegi's own _test/ programs do:
//
//	// Output:
//	// what the program prints, line by line
//
// or, for a program that must fail,
//
//	// Error:
//	// the error, verbatim
//
// Each script gets its own empty run cache. With -update the blocks are
// rewritten from what the programs do.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".go"), func(t *testing.T) {
			t.Setenv("RAGEN_CACHE", t.TempDir())
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			body, kind, want := splitExpected(string(src))
			if kind == "" && !*update {
				t.Fatalf("%s: no // Output: or // Error: block", file)
			}
			got, gotKind := runScript(t, file)
			if *update {
				if err := os.WriteFile(file, []byte(body+formatBlock(gotKind, got)), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if gotKind != kind || got != want {
				t.Errorf("%s:\ngot %s\n%s\nwant %s\n%s", file, gotKind, got, kind, want)
			}
		})
	}
}

// runScript runs one program; it returns its output, or its error.
func runScript(t *testing.T, file string) (string, string) {
	t.Helper()
	var out, stderr bytes.Buffer
	dsl.SetDisplay(func(bundle map[string]any, id string) {
		fmt.Fprintln(&out, bundle["text/plain"])
	})
	defer dsl.SetDisplay(nil)
	i, err := stdlib.NewInterpreter(stdlib.Options{Stdout: &out, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := i.EvalPath(file); err != nil {
		// What the program printed before it failed, then the error.
		return strings.TrimSpace(out.String() + err.Error()), "Error"
	}
	return strings.TrimSpace(out.String()), "Output"
}

// splitExpected cuts the final comment block from a script.
func splitExpected(src string) (body, kind, want string) {
	for _, k := range []string{"Output", "Error"} {
		marker := "\n// " + k + ":\n"
		if i := strings.LastIndex(src, marker); i >= 0 {
			var lines []string
			for _, l := range strings.Split(strings.TrimRight(src[i+len(marker):], "\n"), "\n") {
				l = strings.TrimPrefix(l, "//")
				lines = append(lines, strings.TrimPrefix(l, " "))
			}
			return strings.TrimRight(src[:i], "\n") + "\n", k, strings.Join(lines, "\n")
		}
	}
	return src, "", ""
}

func formatBlock(kind, text string) string {
	var b strings.Builder
	b.WriteString("\n// " + kind + ":\n")
	for _, l := range strings.Split(text, "\n") {
		b.WriteString(strings.TrimRight("// "+l, " ") + "\n")
	}
	return b.String()
}
