package rewrite

import (
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"strings"
)

// Comma-ok forms. yaegi (v0.16.1, and its master of January 2025)
// compiles `v, ok := m[k]` to an operation that sets v only when the key is
// present (interp/run.go, getIndexMap2), and `x, ok := i.(T)` to one that
// sets x only when the assertion holds (typeAssert): otherwise v keeps
// what its slot held, where Go gives the zero value. (`v, ok := <-ch`,
// the single-value `v := m[k]` and `_, ok := m[k]` are right.) A slot holds
// an older value when
//
//   - the statement assigns (`v, ok = m[k]`), anywhere;
//   - a define runs again in the same frame: in a loop, or in a function
//     with a goto;
//   - a define redeclares v (`v := 5; v, ok := m[k]`: a name declared
//     before in the same block, a parameter in a function's body, a type
//     switch's variable in its clauses).
//
// A define among a notebook cell's top-level statements (compiled as
// main's body) is none of these, even one that redeclares: a global
// defined so is typed by running the define inside a function of its own,
// whose frame is new (kernel/session/globals.go); CommaOK's once names
// such a main. So, before compiling, those statements are rewritten into
// forms yaegi computes right, with the same meaning:
//
//	v, _ := m[k]     becomes   v := m[k]
//	v, ok := m[k]    becomes   v, ok := m[k]; if !ok { v = m[k] }
//	x, ok := i.(T)   becomes   x, ok := i.(T); if !ok { x = *new(T) }
//
// and the same for `=` and var. The fix indexes again on a miss (the
// single-value index gives the zero value, converted to v's type as Go
// does); m and k are bound first to variables (__ragenM1, __ragenK1) when
// evaluating them twice could differ: they hold a call or a receive, or
// name a variable the statement sets. A statement in an if, switch or for
// statement's init is moved with its fix into a block around the
// statement: `{ v, ok := m[k]; if !ok { v = m[k] }; if ; ok { ... } }`.
// A map index assignment where that cannot be (in a for post, or with a
// call on its left side) runs in a function literal, whose frame is new at
// each call, so its define starts from zero values:
//
//	(func() { __ragenV, __ragenOK := m[k]; v, ok = __ragenV, __ragenOK })()
//
// (in braces in a statement list, so it is never a cell's result). The
// call is dear: a loop of a million such assignments took 2.1 s of CPU
// against 0.1 unrewritten, where the fix after the statement costs 0.12.
// yaegi loses an interface value through a function literal's results or
// assignments, so a type assertion's assignment has no such fallback.
//
// Left as they are: a labeled for or switch whose init would move (a
// break or continue names the label); a typed `var v, ok T = m[k]`; a map
// or key expression holding a function literal; an assertion in a for
// post, without its status (`x, _ := i.(T)`), or to a type yaegi cannot
// assign the zero of (see zeroSafe: a bare name, which may be an
// interpreted interface, an interface literal, any). /*line*/ comments keep
// the source's own positions after every inserted text, so errors name the
// cell's or file's line and column.

// CommaOK rewrites the comma-ok statements of src, a Go file parsed into
// f in fset, that yaegi may leave stale (see above). once, if not nil, is
// a function whose body's defines each run in a new frame, so that a
// redeclaration among them is not stale (a notebook cell's main); nil for
// ordinary Go. A file without such statements is returned as it is.
func CommaOK(fset *token.FileSet, f *ast.File, src string, once *ast.FuncDecl) string {
	g := &commaOKGuard{fset: fset, src: src, once: once, gotos: map[ast.Node]bool{}}
	var stack []ast.Node // the ancestors of the node visited, f first
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			g.assign(n, stack)
		case *ast.DeclStmt:
			g.varDecl(n, stack)
		}
		stack = append(stack, n)
		return true
	})
	if len(g.edits) == 0 {
		return src
	}
	return Apply(src, g.edits)
}

type commaOKGuard struct {
	fset  *token.FileSet
	src   string
	once  *ast.FuncDecl     // see CommaOK
	gotos map[ast.Node]bool // function (FuncDecl, FuncLit) -> holds a goto
	edits []Edit
	temps int    // __ragenM<n> and __ragenK<n> made
	bind  string // the defines of the statement being fixed's temps
}

func (g *commaOKGuard) off(p token.Pos) int    { return g.fset.PositionFor(p, false).Offset }
func (g *commaOKGuard) at(p token.Pos) string  { return PositionComment(g.fset, p) }
func (g *commaOKGuard) text(n ast.Node) string { return g.src[g.off(n.Pos()):g.off(n.End())] }

// commaOKRHS is the right-hand side of a comma-ok statement with values
// rhs, nil if it is not one: a map index (a two-valued index expression
// can only be a map's) or a type assertion.
func commaOKRHS(rhs []ast.Expr) ast.Expr {
	if len(rhs) != 1 {
		return nil
	}
	switch e := ast.Unparen(rhs[0]).(type) {
	case *ast.IndexExpr:
		return e
	case *ast.TypeAssertExpr:
		if e.Type != nil { // not a type switch's x.(type)
			return e
		}
	}
	return nil
}

func isBlank(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "_"
}

// assign handles `v, ok := m[k]`, `v, ok = m[k]` and the type assertions
// `x, ok := i.(T)` and `x, ok = i.(T)`.
func (g *commaOKGuard) assign(st *ast.AssignStmt, stack []ast.Node) {
	rhs := commaOKRHS(st.Rhs)
	if len(st.Lhs) != 2 || rhs == nil || isBlank(st.Lhs[0]) {
		return
	}
	value, ok := st.Lhs[0], st.Lhs[1]
	if ta, isAssert := rhs.(*ast.TypeAssertExpr); isAssert {
		switch {
		case isBlank(ok) || !zeroSafe(ta.Type):
		case st.Tok == token.ASSIGN && !mayDiffer(value, nil) && !mayDiffer(ok, nil) && !hasFuncLit(value) && !hasFuncLit(ok),
			st.Tok == token.DEFINE && g.stale(st, value.(*ast.Ident), stack):
			g.fix(st, value, ok, ta, stack, func() string { return "*new(" + g.text(ta.Type) + ")" })
		}
		return
	}
	ix := rhs.(*ast.IndexExpr)
	parent := stack[len(stack)-1]
	if st.Tok == token.ASSIGN {
		if isBlank(ok) {
			g.dropBlank(value, ok)
			return
		}
		if hasFuncLit(value) || hasFuncLit(ok) {
			return
		}
		if !mayDiffer(value, nil) && !mayDiffer(ok, nil) && g.fixIndex(st, ix, value, ok, stack) {
			return
		}
		open, close := "{ func() { ", " }() }"
		if !inList(parent) {
			open, close = "(func() { ", " })()" // a simple statement: an init, a for post
		}
		rhs := st.Rhs[0]
		g.edits = append(g.edits,
			Edit{Start: g.off(st.Pos()), End: g.off(rhs.Pos()), Text: open + "__ragenV, __ragenOK := " + g.at(rhs.Pos())},
			Insert(g.off(st.End()), "; "+g.at(st.Pos())+g.text(value)+", "+g.at(ok.Pos())+g.text(ok)+
				" = __ragenV, __ragenOK"+close+g.at(st.End())))
		return
	}
	if st.Tok != token.DEFINE || !g.stale(st, value.(*ast.Ident), stack) {
		return
	}
	if isBlank(ok) {
		g.dropBlank(value, ok)
		return
	}
	g.fixIndex(st, ix, value, ok, stack)
}

// varDecl handles `var v, ok = m[k]` and `var x, ok = i.(T)` (each such
// spec of the declaration).
func (g *commaOKGuard) varDecl(st *ast.DeclStmt, stack []ast.Node) {
	gd, ok := st.Decl.(*ast.GenDecl)
	if !ok || gd.Tok != token.VAR {
		return
	}
	for _, sp := range gd.Specs {
		vs := sp.(*ast.ValueSpec)
		rhs := commaOKRHS(vs.Values)
		if len(vs.Names) != 2 || rhs == nil || vs.Type != nil || isBlank(vs.Names[0]) || !g.stale(st, nil, stack) {
			continue
		}
		value, ok := vs.Names[0], vs.Names[1]
		switch rhs := rhs.(type) {
		case *ast.IndexExpr:
			if isBlank(ok) {
				g.dropBlank(value, ok)
				continue
			}
			g.fixIndex(st, rhs, value, ok, stack)
		case *ast.TypeAssertExpr:
			if !isBlank(ok) && zeroSafe(rhs.Type) {
				g.fix(st, value, ok, rhs, stack, func() string { return "*new(" + g.text(rhs.Type) + ")" })
			}
		}
	}
}

// dropBlank turns `v, _ := m[k]` (or = or var) into `v := m[k]`.
func (g *commaOKGuard) dropBlank(value, blank ast.Expr) {
	g.edits = append(g.edits, Edit{Start: g.off(value.End()), End: g.off(blank.End()), Text: g.at(blank.End())})
}

// fixIndex adds `if !ok { v = m[k] }` after st, with m and k bound to
// variables first where evaluating them again may differ, and reports
// whether it could (see fix).
func (g *commaOKGuard) fixIndex(st ast.Stmt, ix *ast.IndexExpr, value, ok ast.Expr, stack []ast.Node) bool {
	if hasFuncLit(ix.X) || hasFuncLit(ix.Index) {
		return false
	}
	return g.fix(st, value, ok, ix, stack, func() string {
		var names []string // the variables st sets, or that its left side names
		for _, e := range []ast.Expr{value, ok} {
			ast.Inspect(e, func(n ast.Node) bool {
				if id, isIdent := n.(*ast.Ident); isIdent {
					names = append(names, id.Name)
				}
				return true
			})
		}
		operand := func(e ast.Expr, prefix string) string {
			if !mayDiffer(e, names) {
				return g.text(e)
			}
			g.temps++
			name := fmt.Sprintf("__ragen%s%d", prefix, g.temps)
			g.bind += name + " := " + g.at(e.Pos()) + g.text(e) + "; "
			g.edits = append(g.edits, Edit{Start: g.off(e.Pos()), End: g.off(e.End()), Text: name + g.at(e.End())})
			return name
		}
		m := operand(ix.X, "M")
		return m + "[" + operand(ix.Index, "K") + "]"
	})
}

// fix adds `if !ok { value = zero() }` (at rhs's position) after st, in a
// statement list, or,
// st being an if, switch or for statement's init, moves st with it into a
// block around that statement. zero may bind variables before st (g.bind).
// It reports false, changing nothing, for st elsewhere (a for post) or the
// init of a labeled for or switch.
func (g *commaOKGuard) fix(st ast.Stmt, value, ok, rhs ast.Expr, stack []ast.Node, zero func() string) bool {
	parent := stack[len(stack)-1]
	var kw string // the statement whose init st is
	var next token.Pos
	var init ast.Stmt
	switch p := parent.(type) {
	case *ast.IfStmt:
		kw, next, init = "if", p.Cond.Pos(), p.Init
	case *ast.SwitchStmt:
		kw, next, init = "switch", p.Body.Lbrace, p.Init
		if p.Tag != nil {
			next = p.Tag.Pos()
		}
	case *ast.TypeSwitchStmt:
		kw, next, init = "switch", p.Assign.Pos(), p.Init
	case *ast.ForStmt:
		kw, next, init = "for ;", p.Body.Lbrace, p.Init
		switch {
		case p.Cond != nil:
			kw, next = "for", p.Cond.Pos()
		case p.Post != nil:
			next = p.Post.Pos()
		}
	default:
		if !inList(parent) {
			return false
		}
	}
	if kw != "" && init != st {
		return false
	}
	if _, labeled := stack[len(stack)-2].(*ast.LabeledStmt); labeled && kw != "" && kw != "if" {
		return false // the label would move off the statement its break or continue names
	}
	g.bind = ""
	fix := g.at(rhs.Pos()) + "if !" + g.text(ok) + " { " + g.text(value) + " = " + zero() + " }"
	if kw == "" {
		if g.bind != "" {
			g.edits = append(g.edits, Insert(g.off(st.Pos()), g.bind+g.at(st.Pos())))
		}
		g.edits = append(g.edits, Insert(g.off(st.End()), "; "+fix+g.at(st.End())))
		return true
	}
	g.edits = append(g.edits,
		Edit{Start: g.off(parent.Pos()), End: g.off(parent.Pos()) + len(strings.Fields(kw)[0]), Text: "{"},
		Insert(g.off(st.Pos()), g.bind+g.at(st.Pos())),
		Edit{Start: g.off(st.End()), End: g.off(next), Text: "; " + fix + "; " + g.at(parent.Pos()) + kw + " ; " + g.at(next)},
		Insert(g.off(parent.End()), " }"+g.at(parent.End())))
	return true
}

// zeroSafe reports whether yaegi can assign *new(t): not when t is an
// interface type declared in interpreted code ("reflect.Set: value of type
// interface {} is not assignable to type interp.valueInterface"), which
// a name other than a predeclared one, or an interface or struct type
// literal, may be. A qualified name is a compiled package's type.
func zeroSafe(t ast.Expr) bool {
	switch t := t.(type) {
	case *ast.ParenExpr:
		return zeroSafe(t.X)
	case *ast.Ident:
		return predeclaredZeroSafe[t.Name]
	case *ast.SelectorExpr, *ast.StarExpr, *ast.MapType, *ast.ChanType, *ast.FuncType:
		return true
	case *ast.ArrayType:
		return t.Len == nil // a slice
	}
	return false
}

// predeclaredZeroSafe are the predeclared types but any: yaegi's i.(any)
// fails whatever i holds.
var predeclaredZeroSafe = map[string]bool{
	"bool": true, "string": true, "error": true, "byte": true, "rune": true, "uintptr": true,
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true,
	"float32": true, "float64": true, "complex64": true, "complex128": true,
}

// stale reports whether the define st, in the function its stack ends in,
// may find its value's slot holding an older value: it runs in a loop, the
// function has a goto, or value (nil for a var declaration, which always
// declares) names a variable declared before in the same block, unless
// st is among once's top-level statements (see above).
func (g *commaOKGuard) stale(st ast.Stmt, value *ast.Ident, stack []ast.Node) bool {
	child := ast.Node(st)
	var fn ast.Node
	for i := len(stack) - 1; i >= 0 && fn == nil; i-- {
		switch p := stack[i].(type) {
		case *ast.FuncLit, *ast.FuncDecl:
			fn = p
		case *ast.ForStmt:
			if child != p.Init {
				return true
			}
		case *ast.RangeStmt:
			if child == p.Body {
				return true
			}
		}
		child = stack[i]
	}
	if fn == nil {
		return false
	}
	if g.hasGoto(fn) {
		return true
	}
	pi := len(stack) - 1 // parent's index
	if l, ok := stack[pi].(*ast.LabeledStmt); ok {
		pi, st = pi-1, l
	}
	parent := stack[pi]
	if g.once != nil && parent == g.once.Body {
		return false
	}
	if value == nil || !inList(parent) {
		return false
	}
	var list []ast.Stmt
	switch p := parent.(type) {
	case *ast.BlockStmt:
		list = p.List
		if ft := funcType(fn); ft != nil && funcBody(fn) == p && fieldsDeclare(value.Name, ft.Params, ft.Results) {
			return true
		}
		if fd, ok := fn.(*ast.FuncDecl); ok && funcBody(fn) == p && fieldsDeclare(value.Name, fd.Recv) {
			return true
		}
	case *ast.CaseClause:
		list = p.Body
		if ts, ok := stack[pi-2].(*ast.TypeSwitchStmt); ok {
			// `switch v := x.(type)` declares v in each clause's block.
			if a, ok := ts.Assign.(*ast.AssignStmt); ok && a.Lhs[0].(*ast.Ident).Name == value.Name {
				return true
			}
		}
	case *ast.CommClause:
		list = p.Body
	}
	for _, s := range list {
		if s == st {
			break
		}
		if declares(s, value.Name) {
			return true
		}
	}
	return false
}

// hasGoto reports whether the function fn holds a goto outside its
// function literals.
func (g *commaOKGuard) hasGoto(fn ast.Node) bool {
	has, seen := g.gotos[fn]
	if !seen {
		InspectOutsideFuncs(funcBody(fn), func(n ast.Node) {
			if b, ok := n.(*ast.BranchStmt); ok && b.Tok == token.GOTO {
				has = true
			}
		})
		g.gotos[fn] = has
	}
	return has
}

func funcBody(fn ast.Node) *ast.BlockStmt {
	if fd, ok := fn.(*ast.FuncDecl); ok {
		return fd.Body
	}
	return fn.(*ast.FuncLit).Body
}

func funcType(fn ast.Node) *ast.FuncType {
	if fd, ok := fn.(*ast.FuncDecl); ok {
		return fd.Type
	}
	return fn.(*ast.FuncLit).Type
}

// fieldsDeclare reports whether one of the field lists names name.
func fieldsDeclare(name string, lists ...*ast.FieldList) bool {
	for _, l := range lists {
		if l == nil {
			continue
		}
		for _, f := range l.List {
			for _, n := range f.Names {
				if n.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// declares reports whether the statement s declares a variable name in
// its block.
func declares(s ast.Stmt, name string) bool {
	if l, ok := s.(*ast.LabeledStmt); ok {
		s = l.Stmt
	}
	switch s := s.(type) {
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			for _, e := range s.Lhs {
				if id, ok := e.(*ast.Ident); ok && id.Name == name {
					return true
				}
			}
		}
	case *ast.DeclStmt:
		if gd, ok := s.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
			for _, sp := range gd.Specs {
				for _, n := range sp.(*ast.ValueSpec).Names {
					if n.Name == name {
						return true
					}
				}
			}
		}
	}
	return false
}

// inList reports whether a statement whose parent is p is in a statement
// list (where more statements may follow it).
func inList(p ast.Node) bool {
	switch p.(type) {
	case *ast.BlockStmt, *ast.CaseClause, *ast.CommClause, *ast.LabeledStmt:
		return true
	}
	return false
}

// mayDiffer reports whether evaluating e again may give another value: it
// holds a call (conversions included: they cannot be told apart) or a
// receive, or names one of the variables the statement sets.
func mayDiffer(e ast.Expr, names []string) bool {
	differ := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			differ = true
		case *ast.UnaryExpr:
			differ = differ || n.Op == token.ARROW
		case *ast.Ident:
			differ = differ || slices.Contains(names, n.Name)
		}
		return !differ
	})
	return differ
}

func hasFuncLit(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		_, isLit := n.(*ast.FuncLit)
		found = found || isLit
		return !found
	})
	return found
}
