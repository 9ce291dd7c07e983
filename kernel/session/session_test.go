package session

import (
	"context"
	"fmt"
	"go/token"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragen-go/ragen/kernel/display"
)

// run is one executed cell as a test sees it.
type run struct {
	stdout, stderr string
	displays       []display.Data
	res            *Result
}

func (r run) text() string {
	if r.res.Data == nil {
		return ""
	}
	s, _ := r.res.Data["text/plain"].(string)
	return s
}

func exec(t *testing.T, s *Session, n int, code string) run {
	t.Helper()
	var mu sync.Mutex
	var r run
	r.res = s.Execute(context.Background(), Cell{Code: code, Number: n}, Output{
		Stream: func(name, text string) {
			mu.Lock()
			defer mu.Unlock()
			if name == "stdout" {
				r.stdout += text
			} else {
				r.stderr += text
			}
		},
		Display: func(d display.Data) {
			mu.Lock()
			defer mu.Unlock()
			r.displays = append(r.displays, d)
		},
	})
	return r
}

func newSession(t *testing.T) *Session {
	t.Helper()
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustOK(t *testing.T, r run) {
	t.Helper()
	if r.res.Err != nil {
		t.Fatalf("unexpected error: %s\n%s", r.res.Err, strings.Join(r.res.Err.Traceback, "\n"))
	}
}

func TestStateAcrossCells(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "x := 20"))
	mustOK(t, exec(t, s, 2, "func double(v int) int { return 2 * v }"))
	r := exec(t, s, 3, "double(x) + 2")
	mustOK(t, r)
	if r.text() != "42" {
		t.Fatalf("result = %q, want 42", r.text())
	}
}

func TestMixedCell(t *testing.T) {
	s := newSession(t)
	r := exec(t, s, 1, `x := 3
import "fmt"
func sq(v int) int { return v * v }
type P struct{ A int }
fmt.Println("sq", sq(x))
var y = P{A: sq(2)}
import "strings"
strings.Repeat("ab", y.A)`)
	mustOK(t, r)
	if r.stdout != "sq 9\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	if r.text() != `"abababab"` {
		t.Errorf("result = %q", r.text())
	}
	// Re-running the same cell works: imports and identical types are skipped.
	r = exec(t, s, 2, `import "fmt"
type P struct{ A int }
fmt.Println(P{A: 1})`)
	mustOK(t, r)
	if r.stdout != "{1}\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
}

func TestRedefinition(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "func f() int { return 1 }\nfunc g() int { return f() * 10 }\nfunc h() int { return g() + 1 }"))
	mustOK(t, exec(t, s, 2, "func f() int { return 2 }"))
	r := exec(t, s, 3, "h()")
	mustOK(t, r)
	if r.text() != "21" {
		t.Errorf("after redefining f, h() = %s, want 21 (callers recompiled)", r.text())
	}
	mustOK(t, exec(t, s, 4, "type T struct{ A int }"))
	mustOK(t, exec(t, s, 5, "type T struct{ A int }")) // same definition: fine
	r = exec(t, s, 6, "type T struct{ A, B int }")
	want := "cell[6]:1:1: type T is already declared in cell[4]; the interpreter cannot change a declared type: restart the kernel to redefine it, or use a new name"
	if r.res.Err == nil || r.res.Err.Value != want {
		t.Errorf("type redefinition error = %v, want %q", r.res.Err, want)
	}
	// A method cannot change either: say so instead of keeping the old one
	// silently (issue 27). The same method again, or a new one, is fine.
	mustOK(t, exec(t, s, 7, "func (t T) Name() string { return \"a\" }\nfunc (t *T) Set(a int) { t.A = a }"))
	mustOK(t, exec(t, s, 8, "func (t T) Name() string { return \"a\" }\nfunc (t T) Size() int { return 1 }"))
	for code, want := range map[string]string{
		"x := 1\nfunc (t T) Name() string { return \"b\" }": "cell[9]:2:1: method T.Name is already declared in cell[7]; the interpreter cannot change a method (calls would keep the first one): restart the kernel to redefine it, or use a new name",
		"func (t T) Set(a int) {}":                          "cell[9]:1:1: method T.Set is already declared in cell[7]; the interpreter cannot change a method (calls would keep the first one): restart the kernel to redefine it, or use a new name",
	} {
		r = exec(t, s, 9, code)
		if r.res.Err == nil || r.res.Err.Value != want {
			t.Errorf("%q: error = %v, want %q", code, r.res.Err, want)
		}
	}
	if r = exec(t, s, 10, "import \"fmt\"\nT{}.Name() + fmt.Sprint(T{}.Size())"); r.res.Err != nil || r.text() != `"a1"` {
		t.Errorf("methods after a refused redefinition: %q %v", r.text(), r.res.Err)
	}
}

func TestErrors(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "x := 1"))
	for _, tc := range []struct {
		code, name, value string
		tb                []string
	}{
		{"y := 2\nz := x + undefinedName", "CompileError", "cell[2]:2:10: undefined: undefinedName",
			[]string{"CompileError: cell[2]:2:10: undefined: undefinedName", "    2 | z := x + undefinedName", "      |          ^"}},
		{"func broken() {\n\treturn 1\n}", "CompileError", "cell[3]:2:2: too many arguments to return",
			nil},
		{"a := [3]int{}\nfor {", "SyntaxError", "cell[4]:2:6: expected '}', found 'EOF'", nil},
		{"s := \"unterminated", "SyntaxError", "cell[5]:1:6: string literal not terminated", nil},
		// The '}' closing the function a cell's statements are wrapped in is not the user's.
		{"x +", "SyntaxError", "cell[6]:1:4: expected operand, found 'EOF'", nil},
		{"y := 1\nfmt.Println(y,", "SyntaxError", "cell[7]:2:15: expected operand, found 'EOF'", nil},
	} {
		r := exec(t, s, int(tc.value[5]-'0'), tc.code) // the cell number is the one in the message
		if r.res.Err == nil {
			t.Errorf("%q: no error", tc.code)
			continue
		}
		if r.res.Err.Name != tc.name || r.res.Err.Value != tc.value {
			t.Errorf("%q: error %s: %s, want %s: %s", tc.code, r.res.Err.Name, r.res.Err.Value, tc.name, tc.value)
		}
		if tc.tb != nil && strings.Join(r.res.Err.Traceback, "\n") != strings.Join(tc.tb, "\n") {
			t.Errorf("%q: traceback\n%s\nwant\n%s", tc.code, strings.Join(r.res.Err.Traceback, "\n"), strings.Join(tc.tb, "\n"))
		}
	}
	// The session survives errors with its state.
	r := exec(t, s, 9, "x + 1")
	mustOK(t, r)
	if r.text() != "2" {
		t.Errorf("x + 1 = %s", r.text())
	}
}

func TestPanic(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "func boom(m map[string]int) {\n\tm[\"a\"] = 1\n}"))
	r := exec(t, s, 2, "var m map[string]int\nboom(m)")
	if r.res.Err == nil || r.res.Err.Name != "panic" || r.res.Err.Value != "assignment to entry in nil map" {
		t.Fatalf("panic error = %+v", r.res.Err)
	}
	tb := strings.Join(r.res.Err.Traceback, "\n")
	for _, want := range []string{"cell[1]:2:2 in main.boom", "    2 | \tm[\"a\"] = 1", "cell[2]:2:1 in main"} {
		if !strings.Contains(tb, want) {
			t.Errorf("traceback lacks %q:\n%s", want, tb)
		}
	}
	r = exec(t, s, 3, `panic("custom")`)
	if r.res.Err == nil || r.res.Err.Value != "custom" {
		t.Errorf("panic(\"custom\") = %+v", r.res.Err)
	}
	r = exec(t, s, 4, "import \"os\"\nos.Exit(3)")
	if r.res.Err == nil || r.res.Err.Name != "Exit" || r.res.Err.Value != "os.Exit(3) called in a cell" {
		t.Errorf("os.Exit = %+v", r.res.Err)
	}
	// The cell's own frame names the statement that panicked, not the
	// cell's first line (yaegi#1266).
	for code, want := range map[string]string{
		"var mm map[string]int\nmm[\"a\"] = 1":      "cell[6]:2:1 in main\n    2 | mm[\"a\"] = 1\n      | ^",
		"a := []int{1}; i := 3\n\ta[i] = 2":         "cell[6]:2:2 in main\n    2 | \ta[i] = 2\n      | \t^",
		"x := 0\nvar pp *struct{ X int }\npp.X = 1": "cell[6]:3:1 in main",
	} {
		r := exec(t, s, 6, code)
		if r.res.Err == nil || r.res.Err.Name != "panic" {
			t.Errorf("%q: err = %+v, want a panic", code, r.res.Err)
			continue
		}
		if tb := strings.Join(r.res.Err.Traceback, "\n"); !strings.Contains(tb, want) {
			t.Errorf("%q: traceback lacks %q:\n%s", code, want, tb)
		}
	}
	r = exec(t, s, 5, "m = map[string]int{}\nboom(m)\nlen(m)")
	mustOK(t, r)
	if r.text() != "1" {
		t.Errorf("after panics, len(m) = %s", r.text())
	}
}

func TestStdoutCapture(t *testing.T) {
	s := newSession(t)
	r := exec(t, s, 1, `import ("fmt"; "os")
fmt.Println("interpreted")
fmt.Fprintln(os.Stderr, "to stderr")
os.Stdout.WriteString("compiled write\n")
println("builtin")
for i := 0; i < 3000; i++ { fmt.Printf("line %d\n", i) }
fmt.Print("héllo ✓")`)
	mustOK(t, r)
	if !strings.HasPrefix(r.stdout, "interpreted\ncompiled write\nbuiltin\nline 0\n") || !strings.HasSuffix(r.stdout, "line 2999\nhéllo ✓") {
		t.Errorf("stdout = %.200q ... %q", r.stdout, r.stdout[max(0, len(r.stdout)-40):])
	}
	if strings.Count(r.stdout, "\n") != 3003 {
		t.Errorf("stdout has %d lines, want 3003 (nothing dropped)", strings.Count(r.stdout, "\n"))
	}
	if r.stderr != "to stderr\n" {
		t.Errorf("stderr = %q", r.stderr)
	}
}

func TestInterrupt(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "n := 0"))
	for _, code := range []string{"for { n++ }", `import "ragen/cellctx"
<-cellctx.Context().Done()
n = -1`} {
		go func() {
			time.Sleep(200 * time.Millisecond)
			s.Interrupt()
		}()
		start := time.Now()
		r := exec(t, s, 2, code)
		if r.res.Err == nil || r.res.Err.Name != "Interrupted" {
			t.Fatalf("%q: err = %+v, want Interrupted", code, r.res.Err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%q: interrupt took %v", code, d)
		}
	}
	r := exec(t, s, 3, "n")
	mustOK(t, r)
	if r.text() != "-1" {
		t.Errorf("n = %s: the cell honouring cellctx should have finished", r.text())
	}
}

func TestDisplay(t *testing.T) {
	s := newSession(t)
	r := exec(t, s, 1, `import "ragen/display"
type Card struct{ Name string }
func (c Card) MIMEBundle() map[string]any { return map[string]any{"text/html": "<b>" + c.Name + "</b>", "text/plain": c.Name} }
type Note struct{}
func (Note) Markdown() string { return "# note" }
display.Display(display.HTML("<i>hi</i>"))
h := display.NewHandle()
h.Show(display.Text("v1"))
h.Update(display.Text("v2"))
Card{"ace"}`)
	mustOK(t, r)
	if len(r.displays) != 3 {
		t.Fatalf("displays = %+v", r.displays)
	}
	if r.displays[0].Bundle["text/html"] != "<i>hi</i>" || r.displays[1].ID == "" || !r.displays[2].Update || r.displays[2].ID != r.displays[1].ID {
		t.Errorf("displays = %+v", r.displays)
	}
	if r.res.Data["text/html"] != "<b>ace</b>" || r.res.Data["text/plain"] != "ace" {
		t.Errorf("result = %+v", r.res.Data)
	}
	for code, want := range map[string]map[string]any{
		"Note{}":                         {"text/markdown": "# note", "text/plain": "# note"},
		`display.SVG("<svg/>")`:          {"image/svg+xml": "<svg/>", "text/plain": "<SVG image>"},
		`display.PNG([]byte{1, 2, 3})`:   {"image/png": "AQID", "text/plain": "<PNG image>"},
		`"str"`:                          {"text/plain": `"str"`},
		`fmt.Errorf("bad %d", 1)`:        {"text/plain": "bad 1"},
		`import "fmt"; fmt.Println("x")`: nil,
		`var z int;`:                     nil,
	} {
		if strings.Contains(code, "fmt.Errorf") {
			code = "import \"fmt\"\n" + code
		}
		r := exec(t, s, 2, code)
		mustOK(t, r)
		if len(want) != len(r.res.Data) {
			t.Errorf("%s: result %v, want %v", code, r.res.Data, want)
			continue
		}
		for k, v := range want {
			if r.res.Data[k] != v {
				t.Errorf("%s: result[%s] = %v, want %v", code, k, r.res.Data[k], v)
			}
		}
	}
}

// Units joined by ';' on one line run as written: masking other units
// must not blank the ';' between two kept ones (issue 27).
func TestSemicolonJoined(t *testing.T) {
	s := newSession(t)
	for i, tc := range []struct{ code, want string }{
		{"a := 1; b := 2\na + b", "3"},
		{"x := 0\nx++; x++\nx", "2"},
		{"func one() int { return 1 }; func two() int { return 2 }\none() + two()", "3"},
		{"type U int; func (u U) Twice() U { return 2 * u }; var u U = 4; u.Twice()", "8"},
		{"import \"strings\"; n := 2; strings.Repeat(\"ab\", n)", `"abab"`},
		{"c := 1; c++;", ""},
	} {
		r := exec(t, s, i+1, tc.code)
		mustOK(t, r)
		if r.text() != tc.want {
			t.Errorf("%q = %q, want %q", tc.code, r.text(), tc.want)
		}
	}
	r := exec(t, s, 9, "c")
	mustOK(t, r)
	if r.text() != "2" {
		t.Errorf("c = %s after `c := 1; c++;`, want 2", r.text())
	}
}

func TestSplitter(t *testing.T) {
	for _, tc := range []struct {
		code    string
		imports int // import specs
		chunks  []unitKind
		result  string
	}{
		{"", 0, nil, ""},
		{"// only a comment\n", 0, nil, ""},
		{"1 + 2", 0, nil, "1 + 2"},
		{"x := 1\nx", 0, []unitKind{unitStmt}, "x"},
		{"x := 1\nx;", 0, []unitKind{unitStmt}, ""},
		{`import "fmt"` + "\nfmt.Println(1)", 1, nil, "fmt.Println(1)"},
		{"func f() {}\nfunc (t T) M() {}\ntype T int\nconst c = 1\nf()", 0, []unitKind{unitDecl}, "f()"},
		{"func() { println(1) }()", 0, nil, "func() { println(1) }()"},
		{"func (x int) int { return x }(3)", 0, nil, "func (x int) int { return x }(3)"},
		{"var a = 1\nfunc g() int { return a }\nimport (\n\t\"os\"\n\t\"fmt\"\n)\nfor i := 0; i < 2; i++ {\n}\nif x := 1; x > 0 { a = x }\ng()",
			2, []unitKind{unitStmt, unitDecl, unitStmt}, "g()"},
		{"x := 1; y := 2; x + y", 0, []unitKind{unitStmt}, "x + y"},
		{"switch x := 3; x {\ncase 1:\n}\nvar v struct{ a, b int }", 0, []unitKind{unitStmt}, ""},
	} {
		p, err := makePlan(token.NewFileSet(), 1, tc.code, nil)
		if err != nil {
			t.Errorf("%q: %v", tc.code, err)
			continue
		}
		var kinds []unitKind
		for _, c := range p.chunks {
			kinds = append(kinds, c.kind)
		}
		result := ""
		if p.result != nil {
			result = tc.code[p.result.start:p.result.end]
		}
		imports := 0
		if p.imports != nil {
			imports = len(p.imports.Imports)
		}
		if imports != tc.imports || fmt.Sprint(kinds) != fmt.Sprint(tc.chunks) || result != tc.result {
			t.Errorf("%q: imports %d chunks %v result %q; want %d %v %q", tc.code, imports, kinds, result, tc.imports, tc.chunks, tc.result)
		}
	}
}

func TestIsComplete(t *testing.T) {
	for code, want := range map[string]string{
		"x := 1":                 "complete",
		"func f() {":             "incomplete",
		"s := `raw":              "incomplete",
		"x := 1 +":               "incomplete",
		"x := )":                 "invalid",
		"import \"fmt\"\nfmt.Pr": "complete",
	} {
		if got, _ := IsComplete(code); got != want {
			t.Errorf("IsComplete(%q) = %s, want %s", code, got, want)
		}
	}
}

func TestCompleteInspect(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"strings\"\ntype Point struct{ X, Y int }\nfunc (p Point) Norm() int { return p.X*p.X + p.Y*p.Y }\nvar origin = Point{}\ncounter := 3"))
	for _, tc := range []struct {
		code string
		want []string
	}{
		{"strings.Rep", []string{"Repeat", "Replace", "ReplaceAll", "Replacer"}},
		{"fmt.Sprin", []string{"Sprint", "Sprintf", "Sprintln"}}, // not imported yet: still completes
		{"cou", []string{"counter"}},
		{"x := ori", []string{"origin"}},
		{"Poi", []string{"Point"}},
	} {
		got, start, end := s.Complete(tc.code, len(tc.code))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || end != len(tc.code) || start != identBefore(tc.code, end) {
			t.Errorf("Complete(%q) = %v [%d,%d), want %v", tc.code, got, start, end, tc.want)
		}
	}
	for code, want := range map[string]string{
		"strings.Repeat": "func strings.Repeat(string, int) string",
		"Point":          "type Point struct{ X, Y int }\n\n(declared in cell[1])",
		"counter":        "var counter int = 3",
	} {
		got, ok := s.Inspect(code, len(code))
		if !ok || got != want {
			t.Errorf("Inspect(%q) = %q, %v; want %q", code, got, ok, want)
		}
	}
}

func TestGoroutinePanic(t *testing.T) {
	s := newSession(t)
	r := exec(t, s, 1, `import ("sync"; "time")
var wg sync.WaitGroup
results := make([]int, 3)
for i := 0; i < 3; i++ {
	wg.Add(1)
	go func(k int) { defer wg.Done(); results[k] = k * k }(i)
}
wg.Wait()
func work(k int, out []int, wg *sync.WaitGroup) { defer wg.Done(); out[k] = 10 * k }
for i := 0; i < 3; i++ {
	wg.Add(1)
	go work(i, results, &wg)
}
wg.Wait()
results`)
	mustOK(t, r)
	if r.text() != "[0 10 20]" {
		t.Errorf("results = %s: arguments must be evaluated when the goroutine starts", r.text())
	}
	r = exec(t, s, 2, `done := make(chan bool)
go func() {
	defer close(done)
	var m map[int]int
	m[1] = 1
}()
<-done
time.Sleep(50 * time.Millisecond) // done closes before the goroutine's recover runs`)
	if r.res.Err == nil || r.res.Err.Name != "panic" ||
		r.res.Err.Value != "a goroutine started at cell[2]:2:1 panicked: assignment to entry in nil map" {
		t.Fatalf("goroutine panic: %+v", r.res.Err)
	}
	r = exec(t, s, 3, "len(results)")
	mustOK(t, r)
	if r.text() != "3" {
		t.Errorf("the session lost its state: %s", r.text())
	}
}

// TestInterruptEscalation: a cell that took the context but ignores it is
// stopped after the grace period, or at once by a second interrupt.
func TestInterruptEscalation(t *testing.T) {
	s, err := New(Options{InterruptGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code := "import \"ragen/cellctx\"\nctx := cellctx.Context()\n_ = ctx\nk := 0\nfor { k++ }"
	for _, tc := range []struct {
		interrupts int
		min, max   time.Duration
	}{{1, 300 * time.Millisecond, 2 * time.Second}, {2, 0, 250 * time.Millisecond}} {
		go func() {
			time.Sleep(100 * time.Millisecond)
			for i := 0; i < tc.interrupts; i++ {
				s.Interrupt()
			}
		}()
		start := time.Now()
		r := exec(t, s, 1, code)
		d := time.Since(start) - 100*time.Millisecond
		if r.res.Err == nil || r.res.Err.Name != "Interrupted" || d < tc.min || d > tc.max {
			t.Errorf("%d interrupts: stopped after %v (want %v..%v), err %+v", tc.interrupts, d, tc.min, tc.max, r.res.Err)
		}
	}
}

// TestClosuresSurviveStop: stopping the interpreter used to leave every
// function literal made before the stop returning zero values (yaegi pins
// a closure to the run id it was made under; see yaegi.go).
func TestClosuresSurviveStop(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, `add := func(a, b int) int { return a + b }
type P struct{ X int }
mk := func() P { return P{X: 7} }
func named() int { return 5 }
v := 3`))
	interrupt := func(code string) run {
		t.Helper()
		go func() {
			time.Sleep(100 * time.Millisecond)
			s.Interrupt()
		}()
		r := exec(t, s, 2, code)
		if r.res.Err == nil || r.res.Err.Name != "Interrupted" {
			t.Fatalf("%q: err = %+v, want Interrupted", code, r.res.Err)
		}
		return r
	}
	check := func(want map[string]string) {
		t.Helper()
		for code, w := range want {
			r := exec(t, s, 3, code)
			mustOK(t, r)
			if r.text() != w {
				t.Errorf("%s = %q, want %q", code, r.text(), w)
			}
		}
	}
	interrupt("for {}")
	check(map[string]string{"add(1, 2)": "3", "mk()": "{7}", "named()": "5", "v": "3"})
	// A closure made after one stop survives the next.
	mustOK(t, exec(t, s, 4, "mul := func(a, b int) int { return a * b }"))
	interrupt("k := 0\nfor { k++ }")
	check(map[string]string{"add(2, 2)": "4", "mul(2, 3)": "6"})

	// Stopped inside a compiled call that goes on: the id cannot be put
	// back (the cell would resume), and the next cell says so.
	interrupt(`import "time"` + "\ntime.Sleep(20 * time.Second)")
	r := exec(t, s, 5, "named()")
	mustOK(t, r)
	if !strings.Contains(r.stderr, "function literals made before it") || r.text() != "5" {
		t.Errorf("after a stop in a compiled call: %q, stderr %q", r.text(), r.stderr)
	}
}

// Inspect inside a call's parentheses shows the function called; on a
// global's field or method, that member; a compiled type's methods
// without their receiver as a parameter.
func TestInspectCallsAndMembers(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"strings\"\ntype Point struct{ X, Y int }\norigin := Point{X: 2}\nrep := strings.NewReplacer(\"a\", \"b\")"))
	for code, want := range map[string]string{
		"strings.Repeat(":          "func strings.Repeat(string, int) string",
		`strings.Repeat("a", `:     "func strings.Repeat(string, int) string",
		`x := strings.Repeat(f(1)`: "func strings.Repeat(string, int) string",
		"origin.X":                 "field origin.X int = 2",
		"rep.Replace":              "func (*strings.Replacer) Replace(string) string",
		"rep.WriteString(":         "func (*strings.Replacer) WriteString(io.Writer, string) (int, error)",
	} {
		got, ok := s.Inspect(code, len(code))
		if !ok || got != want {
			t.Errorf("Inspect(%q) = %q, %v; want %q", code, got, ok, want)
		}
	}
	got, _ := s.Inspect("strings.Builder", len("strings.Builder"))
	if !strings.Contains(got, "func (Builder) Len() int\n") {
		t.Errorf("Inspect(strings.Builder) = %q: want Len() int without the receiver as a parameter", got)
	}
}

// The key of a compiled struct type's composite literal completes to its
// fields.
func TestCompleteLiteralFields(t *testing.T) {
	s := newSession(t)
	code := "c := tls.Config{ServerName: f(\"a\"), InsecureSkip"
	got, _, _ := s.Complete(code, len(code))
	if fmt.Sprint(got) != "[InsecureSkipVerify]" {
		t.Errorf("Complete(%q) = %v, want [InsecureSkipVerify]", code, got)
	}
	code = "c := tls.Config{Min"
	if got, _, _ := s.Complete(code, len(code)); fmt.Sprint(got) != "[MinVersion]" {
		t.Errorf("Complete(%q) = %v, want [MinVersion]", code, got)
	}
	code = "exp := ragen.Experiment{Steps: 3,\n\tAlgo: ragen.Algo{ClipH"
	if got, _, _ := s.Complete(code, len(code)); fmt.Sprint(got) != "[ClipHigh]" {
		t.Errorf("Complete(%q) = %v, want [ClipHigh]", code, got)
	}
}

// Inspect shows the doc comment of a package member, a type, a field and a
// method, from the generated doc tables; a struct's fields carry the first
// sentence of theirs.
func TestInspectDoc(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"ragen\"\nexp := ragen.Experiment{Steps: 3}"))
	for code, want := range map[string]string{
		"ragen.Bandit(":  "func ragen.Bandit(...interface {}) dsl.EnvSpec\n\nBandit is the two-armed bandit (one turn, one action).",
		"exp.Steps":      "field exp.Steps int = 3\n\nSteps of training (40).",
		"exp.Algo.ClipC": "field exp.Algo.ClipC float64 = 0\n\ndual-clip constant c > 1 bounding the loss −A·c for A < 0; 0 turns it off (3.0; veRL clip_ratio_c)",
		"exp.Validate":   "func (dsl.Experiment) Validate() error\n\nValidate checks",
	} {
		got, ok := s.Inspect(code, len(code))
		if !ok || !strings.HasPrefix(got, want) {
			t.Errorf("Inspect(%q) = %q, %v; want it to start %q", code, got, ok, want)
		}
	}
	got, _ := s.Inspect("ragen.Experiment", len("ragen.Experiment"))
	for _, want := range []string{"\tSteps int // Steps of training (40).\n", "\n\nExperiment is"} {
		if !strings.Contains(got, want) {
			t.Errorf("Inspect(ragen.Experiment) = %q: want %q", got, want)
		}
	}
}

// After a dot, completion and inspect type the expression before it: a
// call's result, a field of a field, a composite literal, an index.
func TestCompleteChains(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"ragen\"\nexp := ragen.Experiment{}\nvar run *ragen.Run\nruns := []*ragen.Run{}"))
	for _, tc := range []struct {
		code string
		want []string
	}{
		{"ragen.StarPOS().Clip", []string{"ClipC", "ClipHigh", "ClipLow"}},
		{"exp.Algo.Clip", []string{"ClipC", "ClipHigh", "ClipLow"}},
		{"x := (exp.Algo).ClipH", []string{"ClipHigh"}},
		{"ragen.Experiment{Steps: 2}.Vali", []string{"Validate"}},
		{"run.Metric(\"a\").Na", []string{"Name"}},
		{"runs[0].Metr", []string{"Metric"}},
		{"f(exp.Algo.Clip", []string{"ClipC", "ClipHigh", "ClipLow"}},
		{"ragen.Nothing().X", nil},
		{"exp.Config().Ste", nil}, // two results: not a value
	} {
		got, _, _ := s.Complete(tc.code, len(tc.code))
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Complete(%q) = %v, want %v", tc.code, got, tc.want)
		}
	}
	for code, want := range map[string]string{
		"run.Metric(":                 "func (*dsl.Run) Metric(string) dsl.Series\n\nMetric returns",
		"ragen.StarPOS().Validate(":   "func (*algo.Config) Validate() error",
		"run.Metric(\"a\").Values":    "field run.Metric(\"a\").Values []float64",
		"ragen.StarPOS().FilterRatio": "field ragen.StarPOS().FilterRatio float64\n\n",
	} {
		got, ok := s.Inspect(code, len(code))
		if !ok || !strings.HasPrefix(got, want) {
			t.Errorf("Inspect(%q) = %q, %v; want it to start %q", code, got, ok, want)
		}
	}
}
