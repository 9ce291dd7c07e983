package session

import (
	"go/ast"
	"go/token"
	"strings"

	"github.com/ragen-go/ragen/internal/rewrite"
)

// guardCommaOK rewrites the comma-ok statements of src, a chunk as
// compiled and parsed into f in fset, that yaegi may leave stale
// (rewrite.CommaOK). A statement chunk's main is the once of
// rewrite.CommaOK: globals.go runs each of its global defines in a frame
// of its own. A chunk without such statements is returned as it is.
func guardCommaOK(fset *token.FileSet, f *ast.File, src string) string {
	var main *ast.FuncDecl
	if strings.HasPrefix(src, stmtPrefix) && len(f.Decls) == 1 {
		main, _ = f.Decls[0].(*ast.FuncDecl)
	}
	return rewrite.CommaOK(fset, f, src, main)
}
