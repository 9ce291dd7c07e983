package session

import (
	"reflect"
	"strings"
	"testing"

	"github.com/traefik/yaegi/interp"
)

// binSession is a session with a compiled package "bin" whose values have
// compiled types, the kind yaegi cannot index in a global define.
func binSession(t *testing.T, calls *int) *Session {
	t.Helper()
	s := newSession(t)
	err := s.Use(interp.Exports{"example.com/bin/bin": {
		"Names": reflect.ValueOf(func() []string { *calls++; return []string{"a", "b"} }),
		"Errs":  reflect.ValueOf(func() []error { return []error{nil} }),
		"Map":   reflect.ValueOf(func() map[string]int { return map[string]int{"k": 7} }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, exec(t, s, 1, "import \"example.com/bin\"\nimport \"fmt\""))
	return s
}

func TestIndexDefineOfCompiledValue(t *testing.T) {
	calls := 0
	s := binSession(t, &calls)
	mustOK(t, exec(t, s, 2, "ns := bin.Names()\nn := 3"))
	r := exec(t, s, 3, "fmt.Println(\"before\")\nc := ns[0]\nfirst := bin.Names()[1]\nvar d = ns[1] + \"!\"\nfmt.Println(c, first, d, n)")
	mustOK(t, r)
	if r.stdout != "before\na b b! 3\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	if calls != 2 {
		t.Errorf("bin.Names called %d times, want 2 (each define evaluated once)", calls)
	}
	for _, tc := range []struct{ code, want string }{
		{"c := ns[1]\nc", `"b"`},          // redefinition of a global
		{"v, ok := bin.Map()[\"k\"]", ""}, // comma-ok: checked below
		{"x, y := ns[1], ns[0]\nx + y", `"ba"`},
		{"e := bin.Errs()[0]\ne = fmt.Errorf(\"set\")\ne.Error()", `"set"`}, // e has the static type error
	} {
		r := exec(t, s, 4, tc.code)
		mustOK(t, r)
		if tc.want != "" && r.text() != tc.want {
			t.Errorf("%q: result %s, want %s", tc.code, r.text(), tc.want)
		}
	}
	r = exec(t, s, 5, "fmt.Println(v+1, ok)")
	mustOK(t, r)
	if r.stdout != "8 true\n" {
		t.Errorf("comma-ok: stdout = %q", r.stdout)
	}
}

func TestIndexDefineErrors(t *testing.T) {
	calls := 0
	s := binSession(t, &calls)
	mustOK(t, exec(t, s, 2, "ns := bin.Names()"))

	// Next to a value yaegi can type (possibly an interpreted type): refused.
	r := exec(t, s, 3, "a, b := ns[0], 1")
	want := "cell[3]:1:1: cannot infer the type of a: yaegi (the notebook's interpreter) cannot type a global defined by indexing a value from a compiled package next to other values; define it alone (a := ns[0]), write the type (var a T = ns[0]) or index inside a function"
	if r.res.Err == nil || r.res.Err.Value != want {
		t.Fatalf("error = %v, want %s", r.res.Err, want)
	}

	// An ordinary error after such a define is yaegi's own, at its place;
	// the units up to the define have run (see globals.go).
	r = exec(t, s, 4, "fmt.Println(\"ran\")\nc := ns[0]\nd := undefinedThing")
	if r.res.Err == nil || !strings.Contains(r.res.Err.Value, "cell[4]:3:6: incomplete type undefinedThing") || r.stdout != "ran\n" {
		t.Fatalf("error = %v, stdout %q", r.res.Err, r.stdout)
	}
	// An error in the define itself is reported at its place, run nothing.
	r = exec(t, s, 5, "fmt.Println(\"ran\")\nc := ns[0] + missing")
	if r.res.Err == nil || !strings.HasPrefix(r.res.Err.Value, "cell[5]:2:14: undefined: missing") || r.stdout != "" {
		t.Fatalf("error = %v, stdout %q", r.res.Err, r.stdout)
	}
	// A panic while evaluating it points at the cell.
	r = exec(t, s, 6, "\nz := ns[5]")
	if r.res.Err == nil || r.res.Err.Name != "panic" || !strings.Contains(strings.Join(r.res.Err.Traceback, "\n"), "cell[6]:2:") {
		t.Fatalf("error = %v\n%s", r.res.Err, strings.Join(r.res.Err.Traceback, "\n"))
	}
}
