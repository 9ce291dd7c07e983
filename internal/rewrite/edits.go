// Package rewrite edits Go source by position before yaegi compiles it:
// the edits the notebook's guards (kernel/session) are made of, and
// CommaOK, the fix for the comma-ok values yaegi leaves stale, which
// notebook cells and `ragen script` files both get. Inserted text is
// followed by a /*line*/ comment, so errors still name the user's file (or
// cell), line and column.
package rewrite

import (
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"sort"
)

// Edit replaces src[Start:End] by Text; Start == End inserts. A rewrite is
// a list of edits found on the source's parsed tree.
type Edit struct {
	Start, End int
	Text       string
}

// Insert is an edit that inserts text at offset at.
func Insert(at int, text string) Edit { return Edit{at, at, text} }

// Apply applies non-overlapping edits to src. They are applied from the
// end, so earlier offsets stay valid; of two insertions at one offset the
// one listed first ends up last (the closing text of an inner rewrite goes
// after the opening of an outer one).
func Apply(src string, edits []Edit) string {
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].Start > edits[j].Start })
	for _, e := range edits {
		src = src[:e.Start] + e.Text + src[e.End:]
	}
	return src
}

// PositionComment is a /*line*/ comment that keeps the position of the text
// after it at p's, so errors in rewritten code name the source's own file,
// line and column. The scanner reads a relative file name in the comment as
// relative to the folder of the file that holds it, so that is how it is
// written.
func PositionComment(fset *token.FileSet, p token.Pos) string {
	pos := fset.Position(p)
	name := pos.Filename
	if !filepath.IsAbs(name) {
		if rel, err := filepath.Rel(filepath.Dir(fset.File(p).Name()), name); err == nil {
			name = rel
		}
	}
	return fmt.Sprintf("/*line %s:%d:%d*/", name, pos.Line, pos.Column)
}

// InspectOutsideFuncs calls visit for every node under root that is not
// inside a function literal.
func InspectOutsideFuncs(root ast.Node, visit func(ast.Node)) {
	ast.Inspect(root, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || n == nil {
			return false
		}
		visit(n)
		return true
	})
}
