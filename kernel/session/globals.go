package session

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"reflect"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// Globals yaegi cannot type. A statement chunk runs at global scope, where
// yaegi (v0.16.1) types a define `x := E` by a global type analysis that
// does not handle every expression: indexing a value of a compiled
// package's type (cs[0] with cs a []string from a compiled call, or a
// comma-ok index of a compiled map) has no type there, and the chunk fails
// with "constant definition loop", "nil type" or a compiler panic. Inside a
// function the same define compiles (the full type check handles it).
//
// So when a statement chunk fails so, it is run again unit by unit: each
// unit is compiled; a define (or an untyped var) that does not compile is
// run inside a function literal instead,
//
//	func() { x, ok := E; __ragen.Keep(&x, &ok) }()
//
// which evaluates E once and hands the variables' addresses to Keep, whose
// pointer types give their static types T (an interface type stays an
// interface). The globals are then declared by calling compiled getters
// made for those types, `x, ok := __ragen.T0(), __ragen.T1()`, which yaegi
// types like any call into a compiled package (the way `cs :=
// strings.Split(...)` is typed). Units before such a define are compiled
// first, then run, so a chunk with an ordinary compile error still runs
// nothing before that error's unit or the first define that needed this.
//
// The getters' types are the run-time representation of the values: right
// for compiled types, not for an interpreted named type (yaegi gives it a
// reflect type without its methods). A define that fails alone has a
// compiled type in practice; a define with several right-hand sides of
// which one alone compiles (it may have an interpreted type) is refused
// with an error that says how to write it instead.

// typeLoop reports whether err is one of yaegi's failures to type a global.
func typeLoop(err error) bool {
	msg := err.Error()
	return strings.HasSuffix(msg, "constant definition loop") || msg == "nil type" ||
		strings.Contains(msg, "CFG post-order panic") || strings.Contains(msg, "runtime error:")
}

// A define is a top-level `x, y := E...` or `var x, y = E...` (no type).
type define struct {
	tok   token.Token // token.DEFINE or token.VAR
	names []string    // the left-hand side, "_" included
	rhs   []string    // the right-hand expressions' source
}

// parseDefine recognizes a define in the text of one unit, nil otherwise.
func parseDefine(text string) *define {
	const pre = "package p; func _() {\n"
	f, err := parseFile(token.NewFileSet(), "", pre+text+"\n}", 0)
	if err != nil {
		return nil
	}
	body := f.Decls[0].(*ast.FuncDecl).Body.List
	if len(body) != 1 {
		return nil
	}
	src := func(e ast.Expr) string { return text[int(e.Pos())-1-len(pre) : int(e.End())-1-len(pre)] }
	d := &define{}
	var lhs []*ast.Ident
	var rhs []ast.Expr
	switch st := body[0].(type) {
	case *ast.AssignStmt:
		if st.Tok != token.DEFINE {
			return nil
		}
		d.tok, rhs = token.DEFINE, st.Rhs
		for _, e := range st.Lhs {
			id, ok := e.(*ast.Ident)
			if !ok {
				return nil
			}
			lhs = append(lhs, id)
		}
	case *ast.DeclStmt:
		g, ok := st.Decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR || len(g.Specs) != 1 {
			return nil
		}
		vs := g.Specs[0].(*ast.ValueSpec)
		if vs.Type != nil || len(vs.Values) == 0 {
			return nil
		}
		d.tok, lhs, rhs = token.VAR, vs.Names, vs.Values
	default:
		return nil
	}
	for _, id := range lhs {
		d.names = append(d.names, id.Name)
	}
	for _, e := range rhs {
		d.rhs = append(d.rhs, src(e))
	}
	return d
}

// runUnits runs a statement chunk unit by unit (see above).
func (s *Session) runUnits(ctx context.Context, id int, code string, units []unit) error {
	fset := s.in.FileSet()
	var progs []*interp.Program // compiled, not yet run
	runProgs := func() error {
		for _, p := range progs {
			if _, err := s.execute(ctx, p); err != nil {
				return err
			}
		}
		progs = nil
		return nil
	}
	defer func() {
		s.mu.Lock()
		s.kept = nil
		s.mu.Unlock()
	}()
	for _, u := range units {
		m := masked(code, []unit{u})
		b, err := parseStmts(fset, id, m, s.guard)
		if err != nil {
			return err
		}
		prog, err := s.compile(b)
		if err == nil {
			progs = append(progs, prog)
			continue
		}
		d := parseDefine(code[u.start:u.end])
		if d == nil || !typeLoop(err) {
			return err
		}
		l, c := lineCol(code, u.start)
		at := fmt.Sprintf("/*line %s:%d:%d*/", fileName, id*lineBase+l, c)
		if len(d.rhs) > 1 {
			// Each right-hand side alone: one yaegi can type may have an
			// interpreted type, which a getter cannot give.
			untyped, typed := -1, 0
			for i, e := range d.rhs {
				pb, perr := parseStmts(fset, id, "__ragenProbe := "+e, nil)
				if perr == nil {
					_, perr = s.compile(pb)
				}
				switch {
				case perr == nil:
					typed++
				case untyped < 0 && d.names[i] != "_":
					untyped = i
				}
			}
			if untyped < 0 {
				return err
			}
			if typed > 0 {
				n, e := d.names[untyped], d.rhs[untyped]
				return s.posError("CompileError", id, l, c, fmt.Sprintf(
					"cannot infer the type of %s: yaegi (the notebook's interpreter) cannot type a global defined by indexing a value from a compiled package next to other values; define it alone (%s := %s), write the type (var %s T = %s) or index inside a function",
					n, n, e, n, e))
			}
		}
		var addrs, gets, names []string
		for _, n := range d.names {
			if n != "_" {
				addrs = append(addrs, "&"+n)
				names = append(names, n)
			}
		}
		// The define alone inside a function first: its error is then
		// yaegi's precise one (with Keep, an undefined name on the right
		// is reported as the variable being undefined at Keep).
		var wprog *interp.Program
		for _, keep := range []string{"", "; __ragen.Keep(" + strings.Join(addrs, ", ") + ")"} {
			wb, err := parseStmts(fset, id, m[:u.start]+"func() {"+at+code[u.start:u.end]+keep+" }()"+m[u.end:], s.guard)
			if err != nil {
				return err
			}
			if wprog, err = s.compile(wb); err != nil {
				return err
			}
		}
		if err := runProgs(); err != nil {
			return err
		}
		if _, err := s.execute(ctx, wprog); err != nil {
			return err
		}
		if len(names) == 0 {
			continue
		}
		s.mu.Lock()
		kept := s.kept
		s.mu.Unlock()
		if len(kept) != len(names) {
			return fmt.Errorf("%s:%d:%d: internal error: %d values kept for %d variables", fileName, id*lineBase+l, c, len(kept), len(names))
		}
		for _, v := range kept {
			gets = append(gets, "__ragen."+s.getter(v.Type())+"()")
		}
		decl := strings.Join(names, ", ") + " := " + strings.Join(gets, ", ")
		if d.tok == token.VAR {
			decl = "var " + strings.Join(names, ", ") + " = " + strings.Join(gets, ", ")
		}
		db, err := parseStmts(fset, id, m[:u.start]+at+decl+m[u.end:], s.guard)
		if err != nil {
			return err
		}
		if _, err := s.compileRun(ctx, db); err != nil {
			return err
		}
	}
	return runProgs()
}

// keep is Keep: it records the variables the pointers point to, in order.
func (s *Session) keep(ptrs ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kept = s.kept[:0]
	for _, p := range ptrs {
		s.kept = append(s.kept, reflect.ValueOf(p).Elem())
	}
}

// getter is the name of the compiled function of type func() t, in the
// result package, that returns the next kept value.
func (s *Session) getter(t reflect.Type) string {
	s.mu.Lock()
	name, ok := s.getters[t]
	s.mu.Unlock()
	if ok {
		return name
	}
	fn := reflect.MakeFunc(reflect.FuncOf(nil, []reflect.Type{t}, false), func([]reflect.Value) []reflect.Value {
		s.mu.Lock()
		defer s.mu.Unlock()
		v := reflect.New(t).Elem()
		v.Set(s.kept[0])
		s.kept = s.kept[1:]
		return []reflect.Value{v}
	})
	s.mu.Lock()
	name = fmt.Sprintf("T%d", len(s.getters))
	s.getters[t] = name
	s.mu.Unlock()
	s.in.Use(interp.Exports{"ragen/internal/cellresult/cellresult": {name: fn}})
	return name
}
