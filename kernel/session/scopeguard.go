package session

import (
	"go/ast"
	"go/token"
	"strings"

	"github.com/ragen-go/ragen/internal/rewrite"
)

// Multi-value defines in a cell's loops. A statement chunk is compiled as
// main's body, which yaegi (v0.16.1) runs at global scope; there a define
// of several names from one expression (`n, err := strconv.Atoi(s)`,
// `var n, err = f()`, the comma-ok forms `v, ok := m[k]`, `x.(T)`, `<-ch`)
// inside a nested block fails: "undefined: n", or a nil-pointer compile
// error when n and err are globals already. Inside a function the same code
// compiles. So a top-level compound statement (for, range, if, switch, type
// switch, select, block, labeled statement) that holds such a define,
// outside any function literal, is run as a function literal:
//
//	for ... { n, err := f() }   becomes   { func() { for ... { n, err := f() } }() }
//
// A compound statement defines nothing outside itself, and the literal
// refers to the cell's globals as the statement did (closures capture
// them), so the rewrite changes nothing else. The outer braces make it a
// block, not an expression statement, so it is never taken for the cell's
// result. A statement is left as it is when the rewrite would change its
// meaning: it holds a return, a goto, a defer, or a break or continue to a
// label outside it, or a goto elsewhere in the chunk targets its label.
// /*line*/ comments after the inserted text keep the positions of the
// cell's own tokens, so errors inside still name the cell's line and column.

// guardScope rewrites the top-level compound statements of src, a statement
// chunk as compiled and parsed into f in fset, that need a function scope.
// Any other source (a declaration chunk) is returned as it is.
func guardScope(fset *token.FileSet, f *ast.File, src string) string {
	if !strings.HasPrefix(src, stmtPrefix) || len(f.Decls) != 1 {
		return src
	}
	main, ok := f.Decls[0].(*ast.FuncDecl)
	if !ok || main.Body == nil {
		return src
	}
	gotoTargets := map[string]bool{}
	rewrite.InspectOutsideFuncs(main.Body, func(n ast.Node) {
		if b, ok := n.(*ast.BranchStmt); ok && b.Tok == token.GOTO && b.Label != nil {
			gotoTargets[b.Label.Name] = true
		}
	})
	var edits []rewrite.Edit
	off := func(p token.Pos) int { return fset.PositionFor(p, false).Offset }
	at := func(p token.Pos) string { return rewrite.PositionComment(fset, p) }
	for _, st := range main.Body.List {
		if !needsFuncScope(st, gotoTargets) {
			continue
		}
		edits = append(edits,
			rewrite.Insert(off(st.Pos()), "{ func() { "+at(st.Pos())),
			rewrite.Insert(off(st.End()), " }() }"+at(st.End())))
	}
	return rewrite.Apply(src, edits)
}

// needsFuncScope reports whether the top-level statement st is a compound
// statement with a multi-value define that can run as a function literal
// without changing its meaning (see guardScope).
func needsFuncScope(st ast.Stmt, gotoTargets map[string]bool) bool {
	switch st := st.(type) {
	case *ast.LabeledStmt:
		if gotoTargets[st.Label.Name] {
			return false
		}
	case *ast.ForStmt, *ast.RangeStmt, *ast.IfStmt, *ast.SwitchStmt, *ast.TypeSwitchStmt,
		*ast.SelectStmt, *ast.BlockStmt:
	default:
		return false
	}
	multi, escapes := false, false
	labels := map[string]bool{}     // labels declared inside st
	branches := []*ast.BranchStmt{} // labeled break and continue
	rewrite.InspectOutsideFuncs(st, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.AssignStmt:
			multi = multi || n.Tok == token.DEFINE && len(n.Lhs) > len(n.Rhs)
		case *ast.ValueSpec:
			multi = multi || len(n.Values) > 0 && len(n.Names) > len(n.Values)
		case *ast.LabeledStmt:
			labels[n.Label.Name] = true
		case *ast.ReturnStmt, *ast.DeferStmt:
			escapes = true
		case *ast.BranchStmt:
			switch {
			case n.Tok == token.GOTO:
				escapes = true
			case n.Label != nil:
				branches = append(branches, n)
			}
		}
	})
	for _, b := range branches {
		escapes = escapes || !labels[b.Label.Name]
	}
	return multi && !escapes
}
