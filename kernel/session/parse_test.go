package session

import "testing"

// TestParsesPerCell counts the go/parser calls that running a cell makes:
// one per chunk (the imports are one), and for a chunk the guards rewrite,
// their own parses and the rewritten chunk's. Before the cell was parsed
// once into a plan, these cells took 24, 32 and 26.
func TestParsesPerCell(t *testing.T) {
	s := newSession(t)
	mustOK(t, exec(t, s, 1, "import \"strings\"\ntype P struct{ X int }\nfunc (p P) Twice() int { return 2 * p.X }"))
	for _, tc := range []struct {
		code string
		max  int64
	}{
		{"x := 1\nx", 1},
		{"import \"fmt\"\ny := strings.Repeat(\"a\", 3)\nfmt.Println(y)\nfunc g() int { return 1 }\nz := g()\nP{X: z}.Twice()", 4},
		{"ch := make(chan int, 1)\ngo func() { ch <- 1 }()\n<-ch", 4},
		// guardScope's rewrite and its parse, then the rewritten chunk's.
		{"for i := 0; i < 1; i++ { k, v, ok := strings.Cut(\"a=b\", \"=\"); _, _, _ = k, v, ok }", 3},
	} {
		before := parses.Load()
		mustOK(t, exec(t, s, 2, tc.code))
		n := parses.Load() - before
		t.Logf("%d parses: %q", n, tc.code)
		if n > tc.max {
			t.Errorf("%q: %d parses, want at most %d", tc.code, n, tc.max)
		}
	}
}
