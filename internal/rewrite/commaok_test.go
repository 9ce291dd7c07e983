package rewrite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// A redeclaring define among once's top-level statements is left as it
// is (a notebook cell's, run in a new frame); in ordinary Go (once nil)
// it is stale and gets the fix, with the file's positions. The kernel's
// tests (kernel/session/commaok_test.go) check every form against Go's
// output.
func TestCommaOKOnce(t *testing.T) {
	const src = "package main\n\nfunc main() {\n\tm := map[string]int{}\n\tv := 5\n\tv, ok := m[\"b\"]\n\t_, _ = v, ok\n}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "redeclared.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := CommaOK(fset, f, src, f.Decls[0].(*ast.FuncDecl)); got != src {
		t.Errorf("with once = main, rewritten as\n%s", got)
	}
	got := CommaOK(fset, f, src, nil)
	const want = "\tv, ok := m[\"b\"]; /*line redeclared.go:6:11*/if !ok { v = m[\"b\"] }/*line redeclared.go:6:17*/\n"
	if !strings.Contains(got, want) {
		t.Errorf("rewritten as\n%s\nwant it to hold\n%s", got, want)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "redeclared.go", got, 0); err != nil {
		t.Errorf("the rewrite does not parse: %v", err)
	}
}
