package session

import (
	"go/token"
	"strings"
	"testing"
	"time"
)

// TestMultiDefineInCompound runs multi-value defines inside a cell's
// top-level compound statements, which yaegi v0.16.1 cannot compile at
// global scope ("undefined: n"): guardScope runs them in a function literal.
func TestMultiDefineInCompound(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, `import ("fmt"; "strconv")
m := map[string]int{"a": 1}
var anyv any = "s"
ch := make(chan int, 4)`))
	for _, tc := range []struct{ code, out string }{
		{"for i := 0; i < 2; i++ {\n\tn, err := strconv.Atoi(\"13\")\n\tfmt.Println(n, err)\n}", "13 <nil>\n13 <nil>\n"},
		{"for i := 0; i < 2; i++ {\n\tvar n, err = strconv.Atoi(\"7\")\n\tfmt.Println(n, err)\n}", "7 <nil>\n7 <nil>\n"},
		{"for _, s := range []string{\"1\", \"x\"} {\n\tn, err := strconv.Atoi(s)\n\tfmt.Println(n, err != nil)\n}", "1 false\n0 true\n"},
		{"if true {\n\tn, err := strconv.Atoi(\"5\")\n\tfmt.Println(n, err)\n}", "5 <nil>\n"},
		{"switch k := 2; k {\ncase 2:\n\tn, err := strconv.Atoi(\"2\")\n\tfmt.Println(n, err)\n}", "2 <nil>\n"},
		{"{\n\tn, err := strconv.Atoi(\"9\")\n\tfmt.Println(n, err)\n}", "9 <nil>\n"},
		{"switch v := anyv.(type) {\ncase string:\n\tn, err := strconv.Atoi(v)\n\tfmt.Println(n, err != nil)\n}", "0 true\n"},
		// Comma-ok forms.
		// (A missing key after a present one would show the stale value:
		// yaegi does not zero v there, inside functions too.)
		{"for _, k := range []string{\"b\", \"a\"} {\n\tv, ok := m[k]\n\tfmt.Println(v, ok)\n}", "0 false\n1 true\n"},
		{"if true {\n\tstr, ok := anyv.(string)\n\tfmt.Println(str, ok)\n}", "s true\n"},
		{"ch <- 3\nclose(ch)\nfor i := 0; i < 2; i++ {\n\tv, ok := <-ch\n\tfmt.Println(v, ok)\n}", "3 true\n0 false\n"},
		{"select {\ncase v, ok := <-ch:\n\tfmt.Println(v, ok)\n}", "0 false\n"},
		// A labeled loop with a labeled continue inside.
		{"outer:\nfor i := 0; i < 3; i++ {\n\tn, _ := strconv.Atoi(\"4\")\n\tif i == 1 {\n\t\tcontinue outer\n\t}\n\tfmt.Println(n + i)\n}", "4\n6\n"},
	} {
		r := exec(t, s, 2, tc.code)
		mustOK(t, r)
		if r.stdout != tc.out {
			t.Errorf("%q: stdout = %q, want %q", tc.code, r.stdout, tc.out)
		}
		if r.res.Data != nil {
			t.Errorf("%q: result = %+v, want none", tc.code, r.res.Data)
		}
	}
	// Names already global (the nil-pointer compile error before): the
	// loop's define shadows them and leaves them as they were.
	mustOK(t, exec(t, s, 3, "n, err := strconv.Atoi(\"1\")"))
	r := exec(t, s, 4, "for i := 0; i < 2; i++ {\n\tn, err := strconv.Atoi(\"13\")\n\tfmt.Println(n, err)\n}\nn")
	mustOK(t, r)
	if r.stdout != "13 <nil>\n13 <nil>\n" || r.text() != "1" {
		t.Errorf("stdout = %q, n = %s; want the loop's 13s and n still 1", r.stdout, r.text())
	}
}

// TestMultiDefineUpdatesGlobals checks that a wrapped statement assigns
// the cell's globals, those of earlier cells and of its own cell.
func TestMultiDefineUpdatesGlobals(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"strconv\"\nsum := 0"))
	r := exec(t, s, 2, "count := 0\nfor _, x := range []string{\"1\", \"2\", \"3\"} {\n\tn, err := strconv.Atoi(x)\n\tif err == nil {\n\t\tsum += n\n\t\tcount++\n\t}\n}\ncount*100 + sum")
	mustOK(t, r)
	if r.text() != "306" {
		t.Errorf("count*100 + sum = %s, want 306", r.text())
	}
}

// TestMultiDefineErrorPosition checks that a compile error inside a wrapped
// statement names the cell's own line and column.
func TestMultiDefineErrorPosition(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"strconv\""))
	r := exec(t, s, 2, "x := 1\nfor i := 0; i < 2; i++ { n, err := strconv.Atoi(\"1\"); _, _ = n, err\n\ty := x + undefinedName\n}")
	if r.res.Err == nil || r.res.Err.Name != "CompileError" {
		t.Fatalf("err = %+v, want a CompileError", r.res.Err)
	}
	if want := "cell[2]:3:11: undefined: undefinedName"; r.res.Err.Value != want {
		t.Errorf("error = %q, want %q", r.res.Err.Value, want)
	}
	// On the statement's first line, after the inserted text.
	r = exec(t, s, 3, "for i := 0; i < 2; i++ { n, err := strconv.Atoi(\"1\"); _, _ = n, err + undefinedName }")
	if r.res.Err == nil || r.res.Err.Value != "cell[3]:1:71: undefined: undefinedName" {
		t.Errorf("err = %+v, want cell[3]:1:71: undefined: undefinedName", r.res.Err)
	}
}

// TestMultiDefineInterrupt interrupts a long wrapped loop.
func TestMultiDefineInterrupt(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"strconv\"\ntotal := 0"))
	go func() {
		time.Sleep(200 * time.Millisecond)
		s.Interrupt()
	}()
	start := time.Now()
	r := exec(t, s, 2, "for {\n\tn, err := strconv.Atoi(\"1\")\n\tif err == nil {\n\t\ttotal += n\n\t}\n}")
	if r.res.Err == nil || r.res.Err.Name != "Interrupted" {
		t.Fatalf("err = %+v, want Interrupted", r.res.Err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("interrupt took %v", d)
	}
	r = exec(t, s, 3, "total > 0")
	mustOK(t, r)
	if r.text() != "true" {
		t.Errorf("total > 0 = %s: the loop should have run", r.text())
	}
}

// TestGuardScope checks which statements guardScope wraps.
func TestGuardScope(t *testing.T) {
	for _, tc := range []struct {
		code string
		wrap bool
	}{
		{"for { n, err := f(); _, _ = n, err }", true},
		{"for { var n, err = f(); _, _ = n, err }", true},
		{"if true { v, ok := m[k]; _, _ = v, ok }", true},
		{"{ v, ok := <-ch; _, _ = v, ok }", true},
		{"L: for { n, err := f(); _, _ = n, err; continue L }", true},
		{"L: for { for { n, err := f(); _, _ = n, err; break L } }", true},
		{"n, err := f()", false},                                             // not compound: a global define
		{"for { n := f(); _ = n }", false},                                   // single value
		{"for { n, err := 1, error(nil); _, _ = n, err }", false},            // as many values as names
		{"for { g := func() { n, err := f(); _, _ = n, err }; g() }", false}, // inside a literal
		{"for { n, err := f(); _, _ = n, err; return }", false},
		{"for { n, err := f(); _, _ = n, err; defer g() }", false},
		{"for { n, err := f(); _, _ = n, err; goto L }\nL:", false},
		{"M: for { for { n, err := f(); _, _ = n, err; break M } }", true},
		{"M: for { n, err := f(); _, _ = n, err }\ngoto M", false}, // its label is a goto's target
		{"for { n, err := f(); _, _ = n, err; break M }", false},   // a label outside
		{"for { n, err := f(); _, _ = n, err; func() { return }() }", true},
	} {
		src := stmtSource(1, tc.code)
		fset := token.NewFileSet()
		f, err := parseFile(fset, fileName, src, 0)
		if err != nil {
			t.Fatalf("%q: %v", tc.code, err)
		}
		got := guardScope(fset, f, src)
		if wrapped := got != src; wrapped != tc.wrap {
			t.Errorf("%q: wrapped = %v, want %v:\n%s", tc.code, wrapped, tc.wrap, got)
		}
		if tc.wrap && !strings.Contains(got, "{ func() { /*line cell:10001:") {
			t.Errorf("%q: rewritten as\n%s", tc.code, got)
		}
	}
	// A declaration chunk is left as it is.
	src := declSource(1, "func g() { for { n, err := f(); _, _ = n, err } }")
	fset := token.NewFileSet()
	f, err := parseFile(fset, fileName, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := guardScope(fset, f, src); got != src {
		t.Errorf("declaration chunk rewritten:\n%s", got)
	}
}
