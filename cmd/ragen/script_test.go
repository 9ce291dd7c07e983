package main

import (
	"bytes"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ragen-go/ragen/stdlib"
)

// Every example compiles against the current API (without running: the
// examples train for a while).
func TestExamplesCompile(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		i, err := stdlib.NewInterpreter(stdlib.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := i.CompilePath(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestScriptCommand(t *testing.T) {
	if err := runScript([]string{"-q", "../../dsl/testdata/scripts/display.go"}); err != nil {
		t.Errorf("display.go: %v", err)
	}
	err := runScript([]string{"../../dsl/testdata/scripts/err_reward_name.go"})
	if err == nil || !strings.Contains(err.Error(), "reward expression: unknown name sucess (1:1)") {
		t.Errorf("err_reward_name.go: %v", err)
	}
	if err := runScript(nil); err == nil || err.Error() != "no file to run" {
		t.Errorf("no file: %v", err)
	}
}

// runScriptOutput runs runScript(args) with os.Stdout and os.Stderr
// captured.
func runScriptOutput(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	outR, outW, perr := os.Pipe()
	if perr != nil {
		t.Fatal(perr)
	}
	errR, errW, perr := os.Pipe()
	if perr != nil {
		t.Fatal(perr)
	}
	var out, errOut bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); io.Copy(&out, outR) }()
	go func() { defer wg.Done(); io.Copy(&errOut, errR) }()
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outW, errW
	err = runScript(args)
	os.Stdout, os.Stderr = oldOut, oldErr
	outW.Close()
	errW.Close()
	wg.Wait()
	outR.Close()
	errR.Close()
	return out.String(), errOut.String(), err
}

// writeScript writes src to name in a new temporary folder and returns its
// path, relative to the working folder (yaegi's scanner reads a relative
// name in a /*line*/ comment as relative to the file's folder).
func writeScript(t *testing.T, name, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// A script gets the kernel's comma-ok fix: the forms yaegi v0.16.1 leaves
// stale on a miss (in a loop, redeclared, assigned) print Go's values, the
// output of `go run` on the same file.
func TestScriptCommaOK(t *testing.T) {
	file := writeScript(t, "stale.go", `package main

import "fmt"

type S struct{ A int }

func lookup(m map[string]int, k string) (int, bool) {
	v := -1
	v, ok := m[k]
	return v, ok
}

func main() {
	m := map[string]int{"a": 1}
	ms := map[string]S{"a": {1}}
	for _, k := range []string{"a", "b"} {
		v, ok := m[k]
		s, _ := ms[k]
		var w, found = m[k]
		if u, ok := m[k]; !ok {
			fmt.Println("missing", k, u)
		}
		fmt.Println(k, v, ok, s, w, found)
	}
	for _, x := range []any{1, "x"} {
		n, ok := x.(int)
		fmt.Println(n, ok)
	}
	v, ok := 5, true
	v, ok = m["b"]
	fmt.Println(v, ok)
	fmt.Println(lookup(m, "b"))
	x := 7
	x, found := m["b"]
	fmt.Println(x, found)
}
`)
	stdout, stderr, err := runScriptOutput(t, "-q", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	const want = "a 1 true {1} 1 true\nmissing b 0\nb 0 false {0} 0 false\n1 true\n0 false\n0 false\n0 false\n0 false\n"
	if stdout != want {
		t.Errorf("output\n%s\nwant (go run's)\n%s", stdout, want)
	}
}

// Errors inside a rewritten statement name the script's own file, line
// and column: a compile error in an if init in a loop, which the rewrite
// moves into a block after a "{", and a panic (reported on standard
// error).
func TestScriptCommaOKErrorPosition(t *testing.T) {
	file := writeScript(t, "undefined.go", `package main

func main() {
	m := map[string]int{}
	for i := 0; i < 2; i++ {
		if v, ok := m[undefinedKey]; ok {
			_ = v
		}
	}
}
`)
	_, _, err := runScriptOutput(t, "-q", file)
	if want := file + ":6:17: undefined: undefinedKey"; err == nil || err.Error() != want {
		t.Errorf("compile error %v, want %s", err, want)
	}

	// yaegi v0.16.1 reports a panic at the first node its function runs:
	// here the key, a call, which the rewrite binds to a variable before
	// the statement (v, a parameter, is redeclared).
	file = writeScript(t, "panic.go", `package main

import (
	"fmt"
	"regexp"
)

var m = map[string]int{"a": 1}

func get(v int, k string) (int, bool) {
	v, ok := m[regexp.MustCompile(k).String()]
	return v, ok
}

func main() {
	fmt.Println(get(5, "b"))
	fmt.Println(get(5, "("))
}
`)
	stdout, stderr, err := runScriptOutput(t, "-q", file)
	if err == nil || !strings.Contains(err.Error(), "missing closing )") {
		t.Errorf("panic error %v", err)
	}
	if want := file + ":11:13: panic: main.get(...)\n"; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr %q, want it to begin with %s", stderr, want)
	}
	if stdout != "0 false\n" {
		t.Errorf("stdout %q, want \"0 false\\n\"", stdout)
	}
}

// A script without comma-ok statements is read as it is and runs as
// before.
func TestScriptUnaffected(t *testing.T) {
	const file = "../../dsl/testdata/scripts/display.go"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	read, err := iofs.ReadFile(commaOKFiles{}, file)
	if err != nil || !bytes.Equal(read, src) {
		t.Errorf("display.go read as\n%s\n(%v), want it unchanged", read, err)
	}
	stdout, stderr, err := runScriptOutput(t, "-q", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := "# Results\nscores\narm      reward\nTeacher    0.15\nGambler       1\n<b>done</b>\n0.25\n"
	if stdout != want {
		t.Errorf("output\n%s\nwant\n%s", stdout, want)
	}
}
