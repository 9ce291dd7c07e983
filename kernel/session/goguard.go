package session

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"
	"sync/atomic"

	"github.com/ragen-go/ragen/internal/rewrite"
)

// Goroutine panics. yaegi does not recover a panic in a goroutine a cell
// started, so it would end the kernel. Before compiling, every go statement
// of a cell is rewritten so the goroutine recovers and reports the panic:
//
//	go f(a, b)   becomes
//	{ g1f, g1a0, g1a1 := f, a, b; go func() { defer __ragenRecover("cell[3]:2:1"); g1f(g1a0, g1a1) }() }
//
// The function value and the arguments are evaluated in the starting
// goroutine, as Go does (a loop variable passed as an argument keeps its
// value). Literals, nil/true/false/iota, package-qualified names (maybe
// untyped constants) and plain function names are left in place: binding
// an untyped constant would give it its default type. A goroutine started
// by compiled code cannot be guarded; it must recover by itself.

const recoverFunc = "__ragenRecover"

// recoverDecl is declared in main when the session starts.
const recoverDecl = `func ` + recoverFunc + `(at string) {
	if r := recover(); r != nil {
		__ragen.GoPanic(at, r)
	}
}`

var goSeq atomic.Int64

// guard rewrites a cell's chunk, a complete file as compiled and parsed
// into f, before it is compiled: the comma-ok statements yaegi would
// leave stale (guardCommaOK, commaok.go), the top-level statements that
// need a function scope (guardScope, scopeguard.go), its go statements
// (guardGo) and its make calls (guardMake, makeguard.go). It is a
// guardFunc: a chunk with none of them is returned as it is, without
// parsing it again.
func (s *Session) guard(fset *token.FileSet, f *ast.File, src string) string {
	if w := guardCommaOK(fset, f, src); w != src {
		fset = token.NewFileSet()
		var err error
		if f, err = parseFile(fset, fileName, w, 0); err != nil {
			return w // the real parse reports the error
		}
		src = w
	}
	if w := guardScope(fset, f, src); w != src {
		fset = token.NewFileSet()
		var err error
		if f, err = parseFile(fset, fileName, w, 0); err != nil {
			return w // the real parse reports the error
		}
		src = w
	}
	g := s.guardGo(fset, f, src)
	if g != src {
		f = nil // guardMake parses the rewritten source
	}
	return guardMake(fset, f, g)
}

// guardGo rewrites the go statements of src, a complete file as compiled,
// parsed into f in fset. Each pass rewrites the outermost unguarded
// statements; nested ones are reached by the next pass, which parses the
// rewritten source.
func (s *Session) guardGo(fset *token.FileSet, f *ast.File, src string) string {
	for pass := 0; pass < 8; pass++ {
		if pass > 0 {
			fset = token.NewFileSet()
			var err error
			if f, err = parseFile(fset, fileName, src, 0); err != nil {
				return src // the real parse reports the error
			}
		}
		imported := map[string]bool{}
		s.mu.Lock()
		for name := range s.imported {
			imported[name] = true
		}
		s.mu.Unlock()
		var edits []rewrite.Edit
		ast.Inspect(f, func(n ast.Node) bool {
			g, ok := n.(*ast.GoStmt)
			if !ok {
				return true
			}
			if guarded(g) {
				return true // look inside for nested go statements
			}
			off := func(p token.Pos) int { return fset.PositionFor(p, false).Offset }
			text := func(e ast.Node) string { return src[off(e.Pos()):off(e.End())] }
			pos := fset.Position(g.Pos())
			at := s.rewrite(fmt.Sprintf("%s:%d:%d", fileName, pos.Line, pos.Column))
			id := goSeq.Add(1)
			var names, values, args []string
			bind := func(e ast.Expr, name string) string {
				if keepInPlace(e, imported) {
					return text(e)
				}
				names = append(names, name)
				values = append(values, text(e))
				return name
			}
			fun := text(g.Call.Fun)
			switch g.Call.Fun.(type) {
			case *ast.Ident, *ast.FuncLit:
			default:
				fun = bind(g.Call.Fun, fmt.Sprintf("__ragenG%df", id))
			}
			for i, a := range g.Call.Args {
				args = append(args, bind(a, fmt.Sprintf("__ragenG%da%d", id, i)))
			}
			call := fun + "(" + strings.Join(args, ", ")
			if g.Call.Ellipsis.IsValid() {
				call += "..."
			}
			call += ")"
			body := fmt.Sprintf("go func() { defer %s(%q); %s }()", recoverFunc, at, call)
			if len(names) > 0 {
				body = fmt.Sprintf("{ %s := %s; %s }", strings.Join(names, ", "), strings.Join(values, ", "), body)
			}
			edits = append(edits, rewrite.Edit{Start: off(g.Pos()), End: off(g.End()), Text: body})
			return false
		})
		if len(edits) == 0 {
			return src
		}
		src = rewrite.Apply(src, edits)
	}
	return src
}

// guarded reports whether g is already `go func() { defer __ragenRecover(...); ... }()`.
func guarded(g *ast.GoStmt) bool {
	lit, ok := g.Call.Fun.(*ast.FuncLit)
	if !ok || len(lit.Body.List) == 0 {
		return false
	}
	d, ok := lit.Body.List[0].(*ast.DeferStmt)
	if !ok {
		return false
	}
	id, ok := d.Call.Fun.(*ast.Ident)
	return ok && id.Name == recoverFunc
}

// keepInPlace reports whether an expression may stay unevaluated until the
// goroutine runs: it has no state that could change, and binding it could
// change its type.
func keepInPlace(e ast.Expr, imported map[string]bool) bool {
	switch x := e.(type) {
	case *ast.BasicLit, *ast.FuncLit:
		return true
	case *ast.Ident:
		switch x.Name {
		case "nil", "true", "false", "iota":
			return true
		}
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && imported[id.Name] {
			return true
		}
	case *ast.ParenExpr:
		return keepInPlace(x.X, imported)
	case *ast.UnaryExpr:
		return x.Op != token.AND && x.Op != token.ARROW && keepInPlace(x.X, imported)
	case *ast.BinaryExpr:
		return keepInPlace(x.X, imported) && keepInPlace(x.Y, imported)
	}
	return false
}
