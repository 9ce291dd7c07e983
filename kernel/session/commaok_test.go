package session

import (
	"fmt"
	"go/token"
	"strings"
	"testing"
	"time"
)

// TestCommaOKMissingKey runs each comma-ok map index form yaegi v0.16.1
// leaves stale (a present key, then a missing one) and compares with Go's
// output (the same code compiled by go, main wrapping each case).
func TestCommaOKMissingKey(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import (\"fmt\"; \"net/url\"; \"time\")\ntype S struct{ A int }"))
	mustOK(t, exec(t, s, 2, "m := map[string]int{\"a\": 1}\nkeys := []string{\"a\", \"b\"}\nms := map[string]string{\"a\": \"x\"}\nmt := map[string]S{\"a\": {1}}\none := 1\nmp := map[string]*int{\"a\": &one}\nml := map[string][]int{\"a\": {1}}\nma := map[string]any{\"a\": 1}\nuv := url.Values{\"a\": {\"x\"}}"))
	mustOK(t, exec(t, s, 3, "func assertRedeclared(i any) (int, bool) {\n\tx := 5\n\tx, ok := i.(int)\n\treturn x, ok\n}\n\nfunc redeclared(k string) (int, bool) {\n\tv := 5\n\tv, ok := m[k]\n\treturn v, ok\n}\n\nfunc param(v int, k string) (int, bool) {\n\tv, ok := m[k]\n\treturn v, ok\n}\n\nfunc gotoLoop() {\n\ti := 0\nL:\n\tv, ok := m[keys[i]]\n\tfmt.Println(v, ok)\n\tif i++; i < 2 {\n\t\tgoto L\n\t}\n}"))
	for i, tc := range []struct{ name, code, out string }{
		{"define in a loop", "for _, k := range keys {\n\tv, ok := m[k]\n\tfmt.Println(k, v, ok)\n}",
			"a 1 true\nb 0 false\n"},
		{"var in a loop", "for _, k := range keys {\n\tvar v, ok = m[k]\n\tfmt.Println(k, v, ok)\n}",
			"a 1 true\nb 0 false\n"},
		{"grouped var", "for _, k := range keys {\n\tvar (\n\t\tv, ok = m[k]\n\t\tw     = 2\n\t)\n\tfmt.Println(k, v, ok, w)\n}",
			"a 1 true 2\nb 0 false 2\n"},
		{"blank ok", "for _, k := range keys {\n\tv, _ := m[k]\n\tfmt.Println(k, v)\n}",
			"a 1\nb 0\n"},
		{"if init", "for _, k := range keys {\n\tif v, ok := m[k]; ok {\n\t\tfmt.Println(k, v)\n\t} else {\n\t\tfmt.Println(k, v, ok)\n\t}\n}",
			"a 1\nb 0 false\n"},
		{"else if init", "for _, k := range keys {\n\tif k == \"z\" {\n\t} else if v, ok := m[k]; true {\n\t\tfmt.Println(k, v, ok)\n\t}\n}",
			"a 1 true\nb 0 false\n"},
		{"switch init", "for _, k := range keys {\n\tswitch v, ok := m[k]; {\n\tcase ok:\n\t\tfmt.Println(k, v)\n\tdefault:\n\t\tfmt.Println(k, v, ok)\n\t}\n}",
			"a 1\nb 0 false\n"},
		{"type switch init", "for _, k := range keys {\n\tswitch v, ok := ma[k]; x := v.(type) {\n\tcase int:\n\t\tfmt.Println(k, x+1, ok)\n\tdefault:\n\t\tfmt.Println(k, x, ok)\n\t}\n}",
			"a 2 true\nb <nil> false\n"},
		{"for init", "for _, k := range keys {\n\tfor v, ok := m[k]; ; {\n\t\tfmt.Println(k, v, ok)\n\t\tbreak\n\t}\n}",
			"a 1 true\nb 0 false\n"},
		{"labeled loop", "L:\nfor _, k := range keys {\n\tv, ok := m[k]\n\tfmt.Println(k, v, ok)\n\tcontinue L\n}",
			"a 1 true\nb 0 false\n"},
		{"string", "for _, k := range keys {\n\tv, ok := ms[k]\n\tfmt.Printf(\"%s %q %v\\n\", k, v, ok)\n}",
			"a \"x\" true\nb \"\" false\n"},
		{"struct", "for _, k := range keys {\n\tv, ok := mt[k]\n\tfmt.Println(k, v, ok)\n}",
			"a {1} true\nb {0} false\n"},
		{"pointer", "for _, k := range keys {\n\tv, ok := mp[k]\n\tfmt.Println(k, v != nil, ok)\n}",
			"a true true\nb false false\n"},
		{"slice", "for _, k := range keys {\n\tv, ok := ml[k]\n\tfmt.Println(k, v, v == nil, ok)\n}",
			"a [1] false true\nb [] true false\n"},
		{"compiled named map", "for _, k := range keys {\n\tv, ok := uv[k]\n\tfmt.Println(k, v, v == nil, ok)\n}",
			"a [x] false true\nb [] true false\n"},
		{"func literal", "f := func() {\n\tfor _, k := range keys {\n\t\tv, ok := m[k]\n\t\tfmt.Println(k, v, ok)\n\t}\n}\nf()",
			"a 1 true\nb 0 false\n"},
		{"assign", "v, ok := m[\"a\"]\nv, ok = m[\"b\"]\nfmt.Println(v, ok)",
			"0 false\n"},
		{"assign blank ok", "v := 7\nv, _ = m[\"b\"]\nfmt.Println(v)",
			"0\n"},
		{"assign to an interface", "var v any = \"x\"\nvar ok bool\nv, ok = m[\"b\"]\nfmt.Printf(\"%v %T %v\\n\", v, v, ok)",
			"0 int false\n"},
		{"assign in a for post", "n := 0\nfor v, ok := m[\"a\"]; n < 2; v, ok = m[\"b\"] {\n\tfmt.Println(v, ok)\n\tn++\n}",
			"1 true\n0 false\n"},
		{"assign in an if init", "v, ok := 5, true\nif v, ok = m[\"b\"]; !ok {\n\tfmt.Println(v, ok)\n}",
			"0 false\n"},
		{"redeclared", "fmt.Println(redeclared(\"b\"))",
			"0 false\n"},
		{"parameter", "fmt.Println(param(5, \"b\"))",
			"0 false\n"},
		{"goto", "gotoLoop()",
			"1 true\n0 false\n"},
		{"key with a call", "calls := 0\nnext := func() string { calls++; return keys[calls-1] }\nfor i := 0; i < 2; i++ {\n\tv, ok := m[next()]\n\tfmt.Println(v, ok)\n}\nfmt.Println(calls)",
			"1 true\n0 false\n2\n"},
		{"map from a call", "theMap := func() map[string]int { return m }\nfor _, k := range keys {\n\tv, ok := theMap()[k]\n\tfmt.Println(k, v, ok)\n}",
			"a 1 true\nb 0 false\n"},
		{"key names ok", "mb := map[bool]string{false: \"f\"}\nfor i := 0; i < 2; i++ {\n\tok := true\n\ts, ok := mb[ok]\n\tfmt.Printf(\"%q %v\\n\", s, ok)\n}",
			"\"\" false\n\"\" false\n"},
		{"assert in a loop", "for _, i := range []any{1, \"s\"} {\n\tx, ok := i.(int)\n\tfmt.Println(x, ok)\n}",
			"1 true\n0 false\n"},
		{"assert var", "for _, i := range []any{1, \"s\"} {\n\tvar x, ok = i.(int)\n\tfmt.Println(x, ok)\n}",
			"1 true\n0 false\n"},
		{"assert if init", "for _, i := range []any{\"s\", 1} {\n\tif x, ok := i.(string); !ok {\n\t\tfmt.Printf(\"%q %v\\n\", x, ok)\n\t}\n}",
			"\"\" false\n"},
		{"assert error", "for _, i := range []any{fmt.Errorf(\"e\"), 1} {\n\tx, ok := i.(error)\n\tfmt.Println(x, ok)\n}",
			"e true\n<nil> false\n"},
		{"assert compiled interface", "for _, i := range []any{time.Second, 1} {\n\tx, ok := i.(fmt.Stringer)\n\tfmt.Println(x, ok)\n}",
			"1s true\n<nil> false\n"},
		{"assert pointer", "for _, i := range []any{&one, 1} {\n\tx, ok := i.(*int)\n\tfmt.Println(x != nil, ok)\n}",
			"true true\nfalse false\n"},
		{"assert slice", "for _, i := range []any{[]int{1}, 1} {\n\tx, ok := i.([]int)\n\tfmt.Println(x, x == nil, ok)\n}",
			"[1] false true\n[] true false\n"},
		{"assert compiled type", "for _, i := range []any{uv, 1} {\n\tx, ok := i.(url.Values)\n\tfmt.Println(len(x), x == nil, ok)\n}",
			"1 false true\n0 true false\n"},
		{"assert assign", "var x any = \"x\"\nvar ok bool\nfor _, i := range []any{1, \"s\"} {\n\tx, ok = i.(int)\n\tfmt.Printf(\"%v %T %v\\n\", x, x, ok)\n}",
			"1 int true\n0 int false\n"},
		{"assert redeclared", "fmt.Println(assertRedeclared(\"s\"))",
			"0 false\n"},
		{"assign with a call on the left", "a := []int{7, 7}\nidx := func() int { return 1 }\nvar found bool\nfor _, k := range keys {\n\ta[idx()], found = m[k]\n\tfmt.Println(a, found)\n}",
			"[7 1] true\n[7 0] false\n"},
		{"assign to the key", "mk := map[string]string{\"a\": \"b\"}\nk := \"a\"\nvar found bool\nfor i := 0; i < 2; i++ {\n\tk, found = mk[k]\n\tfmt.Printf(\"%q %v\\n\", k, found)\n}",
			"\"b\" true\n\"\" false\n"},
		{"type switch variable redeclared", "var iv any = 5\nswitch v := iv.(type) {\ncase int:\n\tv, ok := m[\"b\"]\n\tfmt.Println(v, ok)\ncase string:\n}",
			"0 false\n"},
	} {
		r := exec(t, s, 4+i, tc.code)
		mustOK(t, r)
		if r.stdout != tc.out {
			t.Errorf("%s: stdout = %q, want %q", tc.name, r.stdout, tc.out)
		}
		if r.res.Data != nil {
			t.Errorf("%s: result = %+v, want none", tc.name, r.res.Data)
		}
	}
}

// TestCommaOKErrorPosition checks that compile errors inside rewritten
// statements name the cell's own line and column: in a define with its
// fix, in a key bound to a variable, in a moved if init and its
// condition, and in an assignment run in a function literal.
func TestCommaOKErrorPosition(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"fmt\"\nm := map[string]int{}\nkeys := []string{\"a\"}\nv, ok := 0, false"))
	for i, code := range []string{
		"for _, k := range keys {\n\tw, found := m[k+undefinedA]\n\tfmt.Println(w, found)\n}",
		"for _, k := range keys {\n\tw, found := m[fmt.Sprint(k, undefinedB)]\n\tfmt.Println(w, found)\n}",
		"for _, k := range keys {\n\tif w, found := m[k]; found && undefinedC {\n\t\tfmt.Println(w)\n\t}\n}",
		"for _, k := range keys {\n\tif w, found := m[undefinedD]; found {\n\t\tfmt.Println(w, k)\n\t}\n}",
		"v, ok = m[undefinedE]",
		"x := 1\nv, ok = m[\"a\"]; x = undefinedF",
	} {
		n := 2 + i
		r := exec(t, s, n, code)
		at := strings.Index(code, "undefined")
		line := 1 + strings.Count(code[:at], "\n")
		col := at - strings.LastIndex(code[:at], "\n")
		want := fmt.Sprintf("cell[%d]:%d:%d: undefined: %s", n, line, col, code[at:at+len("undefinedA")])
		if r.res.Err == nil || r.res.Err.Name != "CompileError" || r.res.Err.Value != want {
			t.Errorf("%q: err = %+v, want CompileError %q", code, r.res.Err, want)
		}
	}
}

// TestCommaOKResultAndInterrupt checks that a cell's result is shown after
// rewritten statements and that a cell ending with a rewritten assignment
// has none, and interrupts a long loop of rewritten statements.
func TestCommaOKResultAndInterrupt(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "m := map[string]int{\"a\": 1}\nv, ok := m[\"a\"]\ntotal := 0"))
	r := exec(t, s, 2, "for _, k := range []string{\"a\", \"b\"} {\n\tw, found := m[k]\n\tif !found {\n\t\tw = 10\n\t}\n\ttotal += w\n}\ntotal")
	mustOK(t, r)
	if r.text() != "11" {
		t.Errorf("total = %s, want 11", r.text())
	}
	r = exec(t, s, 3, "v, ok = m[\"b\"]")
	mustOK(t, r)
	if r.res.Data != nil {
		t.Errorf("result = %+v, want none", r.res.Data)
	}
	r = exec(t, s, 4, "v")
	mustOK(t, r)
	if r.text() != "0" {
		t.Errorf("v = %s, want 0", r.text())
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		s.Interrupt()
	}()
	start := time.Now()
	r = exec(t, s, 5, "for {\n\tw, found := m[\"b\"]\n\tv, ok = m[\"a\"]\n\tif !found {\n\t\ttotal += w + v\n\t}\n}")
	if r.res.Err == nil || r.res.Err.Name != "Interrupted" {
		t.Fatalf("err = %+v, want Interrupted", r.res.Err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("interrupt took %v", d)
	}
	r = exec(t, s, 6, "total > 11")
	mustOK(t, r)
	if r.text() != "true" {
		t.Errorf("total > 11 = %s: the loop should have run", r.text())
	}
}

// TestGuardCommaOK checks which statements guardCommaOK rewrites, and
// how.
func TestGuardCommaOK(t *testing.T) {
	for _, tc := range []struct {
		code string
		want []string // in the rewritten text; none: left as it is
	}{
		// Not stale: a top-level define (a global), the single-value
		// index, the status alone, other comma-ok forms, a define in a
		// function that runs once per call and redeclares nothing.
		{"v, ok := m[k]", nil},
		{"var v, ok = m[k]", nil},
		{"v, _ := m[k]", nil},
		{"for { v := m[k]; _ = v }", nil},
		{"for { _, ok := m[k]; _ = ok }", nil},
		{"for { _, ok = m[k] }", nil},
		{"for { v, ok := <-ch; _, _ = v, ok }", nil},
		{"for { v, ok := x.(T); _, _ = v, ok }", nil},                // T may be a cell's interface
		{"for { v, ok := x.(interface{ M() }); _, _ = v, ok }", nil}, // an interface
		{"for { v, ok := x.(any); _, _ = v, ok }", nil},              // yaegi's x.(any) fails
		{"for { v, _ := x.(int); _ = v }", nil},                      // no status to test
		{"for ; ; v, ok = x.(int) {}", nil},                          // a for post
		{"a[f()], ok = x.(int)", nil},                                // the value evaluated again may differ
		{"for { n, err := f(); _, _ = n, err }", nil},
		{"f := func(k string) { v, ok := m[k]; _, _ = v, ok }", nil},
		{"f := func(k string) { w := 1; v, ok := m[k]; _, _, _ = v, ok, w }", nil},
		{"f := func(k string) { if v, ok := m[k]; ok { _ = v } }", nil},
		{"for { var v, ok any = m[k]; _, _ = v, ok }", nil}, // typed: left
		{"L: for v, ok := m[k]; ; { _, _ = v, ok; continue L }", nil},
		{"for { L: for v, ok := m[k]; ; { _, _ = v, ok; continue L } }", nil}, // the label would move
		// Stale.
		{"for { v, ok := m[k]; _, _ = v, ok }", []string{"v, ok := m[k]; /*line cell:10001:16*/if !ok { v = m[k] }/*line cell:10001:20*/;"}},
		{"for { var v, ok = m[k]; _, _ = v, ok }", []string{"var v, ok = m[k]; /*line cell:10001:19*/if !ok { v = m[k] }"}},
		{"for { v, _ := m[k]; _ = v }", []string{"v/*line cell:10001:11*/ := m[k]"}},
		{"v, ok = m[k]", []string{"v, ok = m[k]; /*line cell:10001:9*/if !ok { v = m[k] }/*line cell:10001:13*/"}},
		{"v, ok = m[v]", []string{"__ragenK1 := /*line cell:10001:11*/v; /*line cell:10001:1*/v, ok = m[__ragenK1/*line cell:10001:12*/]", "if !ok { v = m[__ragenK1] }"}},
		{"a[f()], ok = m[k]", []string{"{ func() { __ragenV, __ragenOK := /*line cell:10001:14*/m[k]; /*line cell:10001:1*/a[f()], /*line cell:10001:9*/ok = __ragenV, __ragenOK }() }/*line cell:10001:18*/"}},
		{"v, _ = m[k]", []string{"v/*line cell:10001:5*/ = m[k]"}},
		{"if v, ok = m[k]; ok {}", []string{"{ /*line cell:10001:4*/v, ok = m[k]; /*line cell:10001:12*/if !ok { v = m[k] }; /*line cell:10001:1*/if ; /*line cell:10001:18*/ok {} }/*line cell:10001:23*/"}},
		{"for ; ; v, ok = m[k] {}", []string{"for ; ; (func() { __ragenV, __ragenOK := "}},
		{"for { if v, ok := m[k]; ok { _ = v } }", []string{"for { { /*line cell:10001:10*/v, ok := m[k]; /*line cell:10001:19*/if !ok { v = m[k] }; /*line cell:10001:7*/if ; /*line cell:10001:25*/ok { _ = v } }/*line cell:10001:37*/ }"}},
		{"for { for v, ok := m[k]; ; { _, _ = v, ok } }", []string{"for ; ; /*line cell:10001:"}},
		{"for { v, ok := m[f()]; _, _ = v, ok }", []string{"__ragenK1 := /*line cell:10001:18*/f(); /*line cell:10001:7*/v, ok := m[__ragenK1/*line cell:10001:21*/]", "if !ok { v = m[__ragenK1] }"}},
		{"for { ok := true; v, ok := mb[ok]; _ = v }", []string{"__ragenK1 := ", "if !ok { v = mb[__ragenK1] }"}},
		{"f := func(k string) { v := 1; v, ok := m[k]; _, _ = v, ok }", []string{"if !ok { v = m[k] }"}},
		{"f := func(v int) { v, ok := m[k]; _ = ok }", []string{"if !ok { v = m[k] }"}},
		{"f := func() { L: v, ok := m[k]; _, _ = v, ok; goto L }", []string{"if !ok { v = m[k] }"}},
		{"for { v, ok := x.(int); _, _ = v, ok }", []string{"v, ok := x.(int); /*line cell:10001:16*/if !ok { v = *new(int) }/*line cell:10001:23*/;"}},
		{"for { var v, ok = x.([]T); _, _ = v, ok }", []string{"if !ok { v = *new([]T) }"}},
		{"v, ok = x.(fmt.Stringer)", []string{"v, ok = x.(fmt.Stringer); /*line cell:10001:9*/if !ok { v = *new(fmt.Stringer) }"}},
		{"for { if v, ok := x.(*T); ok { _ = v } }", []string{"if !ok { v = *new(*T) }; /*line cell:10001:7*/if ; "}},
	} {
		src := stmtSource(1, tc.code)
		fset := token.NewFileSet()
		f, err := parseFile(fset, fileName, src, 0)
		if err != nil {
			t.Fatalf("%q: %v", tc.code, err)
		}
		got := guardCommaOK(fset, f, src)
		if tc.want == nil {
			if got != src {
				t.Errorf("%q: rewritten as\n%s", tc.code, got)
			}
			continue
		}
		if _, err := parseFile(token.NewFileSet(), fileName, got, 0); err != nil {
			t.Errorf("%q: the rewrite does not parse: %v\n%s", tc.code, err, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q: rewritten as\n%s\nwant it to hold %s", tc.code, got, w)
			}
		}
	}
	// In a declaration chunk, every function is a function.
	src := declSource(1, "func g(k string) { for { v, ok := m[k]; _, _ = v, ok } }")
	fset := token.NewFileSet()
	f, err := parseFile(fset, fileName, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := guardCommaOK(fset, f, src); !strings.Contains(got, "if !ok { v = m[k] }") {
		t.Errorf("declaration chunk rewritten as\n%s", got)
	}
}

// TestCommaOKTopLevelQuiet: a top-level comma-ok index of a map, which
// yaegi fails to type as a global with log.Panic("nil type") before
// globals.go runs it another way, prints nothing but the cell's own
// output (the logger's line was in the cell's stderr, twice).
func TestCommaOKTopLevelQuiet(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"fmt\"\nm := map[string]int{\"a\": 1}"))
	r := exec(t, s, 2, "v, ok := m[\"b\"]\nfmt.Println(v, ok)")
	mustOK(t, r)
	if r.stdout != "0 false\n" || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q; want \"0 false\\n\" and nothing", r.stdout, r.stderr)
	}
}
