package session

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"reflect"
	"strings"

	"github.com/ragen-go/ragen/stdlib"
)

// Completion and inspection after a dot type the expression before it
// without running it: `exp.Algo.`, `ragen.StarPOS().Cl`, `run.Metric(`,
// `ragen.Experiment{}.Con`. The expression is cut from the text (operandStart)
// and parsed; names are the interpreter's globals and the packages the
// session knows; a call gives its function's single result type, an index
// its element type. Reading a field of a known value runs no code, so the
// value is kept as long as the chain has no call, and inspect shows it.

// operand is what is known of an expression: a package, a type (a
// conversion or a composite literal's), or a value's type and, when
// reading it ran no code, the value itself.
type operand struct {
	pkgs   []string      // a package name: the import paths it may denote
	typ    reflect.Type  // the value's type, or the type named
	isType bool          // the expression names a type
	val    reflect.Value // the value, when known without running code
	skip   int           // parameters of typ to hide: a method's receiver
}

// operandStart is the start of the operand that ends at end (just before a
// '.'): identifiers joined by dots, with calls, indexes and composite
// literals (balanced brackets) between them. Brackets in strings and
// comments are not told apart.
func operandStart(code string, end int) int {
	i := end
	for {
		j := identBefore(code, i)
		if j == i && i > 0 && strings.IndexByte(")]}", code[i-1]) >= 0 {
			open := matchingOpen(code, i-1)
			if open < 0 {
				return i
			}
			i = open
			continue // a call, index or literal: its operand comes before it
		}
		i = j
		if i > 0 && code[i-1] == '.' && j < end {
			i--
			continue
		}
		return i
	}
}

// matchingOpen is the offset of the bracket that code[close] closes, -1 if
// none.
func matchingOpen(code string, close int) int {
	depth := 0
	for i := close; i >= 0; i-- {
		switch code[i] {
		case ')', ']', '}':
			depth++
		case '(', '[', '{':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// operandBefore types the operand ending at end.
func (s *Session) operandBefore(code string, end int) (operand, string, bool) {
	src := code[operandStart(code, end):end]
	if src == "" {
		return operand{}, "", false
	}
	e, err := parser.ParseExpr(src)
	if err != nil {
		return operand{}, "", false
	}
	o, ok := s.typeOf(e, s.globals())
	return o, src, ok
}

// typeOf types e (see operand).
func (s *Session) typeOf(e ast.Expr, globals map[string]reflect.Value) (operand, bool) {
	switch x := e.(type) {
	case *ast.ParenExpr:
		return s.typeOf(x.X, globals)
	case *ast.Ident:
		if v, ok := globals[x.Name]; ok && v.IsValid() {
			return operand{typ: v.Type(), val: v}, true
		}
		if p := s.packages(x.Name); len(p) > 0 {
			return operand{pkgs: p}, true
		}
	case *ast.SelectorExpr:
		o, ok := s.typeOf(x.X, globals)
		if !ok {
			return operand{}, false
		}
		return s.selectOn(o, x.Sel.Name)
	case *ast.CallExpr:
		o, ok := s.typeOf(x.Fun, globals)
		switch {
		case !ok || o.typ == nil:
		case o.isType:
			return operand{typ: o.typ}, true // a conversion
		case o.typ.Kind() == reflect.Func && o.typ.NumOut() == 1:
			return operand{typ: o.typ.Out(0)}, true
		}
	case *ast.IndexExpr:
		o, ok := s.typeOf(x.X, globals)
		if !ok || o.typ == nil || o.isType {
			return operand{}, false
		}
		t := o.typ
		if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Array {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			return operand{typ: t.Elem()}, true
		}
	case *ast.CompositeLit:
		if x.Type == nil {
			return operand{}, false
		}
		o, ok := s.typeOf(x.Type, globals)
		if ok && o.isType {
			return operand{typ: o.typ}, true
		}
	case *ast.StarExpr:
		o, ok := s.typeOf(x.X, globals)
		if ok && !o.isType && o.typ != nil && o.typ.Kind() == reflect.Pointer {
			return operand{typ: o.typ.Elem()}, true
		}
	}
	return operand{}, false
}

// selectOn is o.name: a package's member, a method, or a field.
func (s *Session) selectOn(o operand, name string) (operand, bool) {
	for _, p := range o.pkgs {
		s.mu.Lock()
		v, ok := s.exports[p][name]
		s.mu.Unlock()
		if !ok {
			continue
		}
		if v.Kind() == reflect.Pointer && v.IsNil() { // a type
			return operand{typ: v.Type().Elem(), isType: true}, true
		}
		return operand{typ: v.Type(), val: v}, true
	}
	if o.typ == nil || o.isType {
		return operand{}, false
	}
	if m, ok := method(o.typ, name); ok {
		skip := 1
		if o.typ.Kind() == reflect.Interface {
			skip = 0
		}
		return operand{typ: m.Type, skip: skip}, true
	}
	t, v := o.typ, o.val
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if v.IsValid() && !v.IsNil() {
			v = v.Elem()
		} else {
			v = reflect.Value{}
		}
	}
	if t.Kind() != reflect.Struct {
		return operand{}, false
	}
	f, ok := t.FieldByName(name)
	if !ok || !f.IsExported() {
		return operand{}, false
	}
	out := operand{typ: f.Type}
	if v.IsValid() {
		if fv, err := v.FieldByIndexErr(f.Index); err == nil {
			out.val = fv
		}
	}
	return out, true
}

// method finds a method of t or of *t (a variable is addressable).
func method(t reflect.Type, name string) (reflect.Method, bool) {
	if m, ok := t.MethodByName(name); ok {
		return m, true
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		return reflect.PointerTo(t).MethodByName(name)
	}
	return reflect.Method{}, false
}

// typeMembers lists the methods of t (and *t) and the exported fields of
// the struct it is or points to.
func typeMembers(t reflect.Type) []string {
	var out []string
	pt := t
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		pt = reflect.PointerTo(t)
	}
	for i := 0; i < pt.NumMethod(); i++ {
		out = append(out, pt.Method(i).Name)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			if f := t.Field(i); f.IsExported() {
				out = append(out, f.Name)
			}
		}
	}
	return out
}

// members lists what may follow the operand ending at end and a dot.
func (s *Session) members(code string, end int) []string {
	o, _, ok := s.operandBefore(code, end)
	if !ok {
		return nil
	}
	if o.pkgs != nil {
		var out []string
		s.mu.Lock()
		for _, p := range o.pkgs {
			for name := range s.exports[p] {
				out = append(out, name)
			}
		}
		s.mu.Unlock()
		return out
	}
	if o.isType || o.typ == nil {
		return nil
	}
	return typeMembers(o.typ)
}

// describeMember is inspect's text for qual.name, qual typed as o: the
// member's declaration, its value when known, and its doc comment.
func (s *Session) describeMember(o operand, qual, name string) (string, bool) {
	if o.pkgs != nil {
		for _, p := range o.pkgs {
			s.mu.Lock()
			v, ok := s.exports[p][name]
			s.mu.Unlock()
			if ok {
				return withDoc(describe(p, name, v), stdlib.Docs[p][name]), true
			}
		}
		return "", false
	}
	if o.typ == nil || o.isType {
		return "", false
	}
	if m, ok := method(o.typ, name); ok {
		recv := o.typ
		if m.Type.NumIn() > 0 && o.typ.Kind() != reflect.Interface {
			recv = m.Type.In(0)
		}
		skip := 1
		if o.typ.Kind() == reflect.Interface {
			skip = 0
		}
		return withDoc(fmt.Sprintf("func (%s) %s%s", recv, name, signature(m.Type, skip)), typeDoc(o.typ, name)), true
	}
	m, ok := s.selectOn(o, name)
	if !ok {
		return "", false
	}
	text := fmt.Sprintf("field %s.%s %s", qual, name, m.typ)
	if m.val.IsValid() {
		text += " = " + short(fmt.Sprintf("%v", m.val))
	}
	return withDoc(text, fieldDoc(o.typ, name)), true
}

// typeDoc is the doc of member name (a method or a field) declared on t
// (or what t points to), from the generated doc tables.
func typeDoc(t reflect.Type, name string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return stdlib.Docs[t.PkgPath()][t.Name()+"."+name]
}

// fieldDoc is the doc of field name of the struct t is or points to,
// looked up on the struct that declares it (an embedded one's).
func fieldDoc(t reflect.Type, name string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	f, ok := t.FieldByName(name)
	if !ok {
		return ""
	}
	for _, i := range f.Index[:len(f.Index)-1] {
		t = t.Field(i).Type
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
	}
	return typeDoc(t, name)
}

// withDoc adds a doc comment under a declaration.
func withDoc(decl, docText string) string {
	if docText == "" {
		return decl
	}
	return decl + "\n\n" + docText
}

// synopsis is the first sentence of a doc comment.
func synopsis(text string) string { return (&doc.Package{}).Synopsis(text) }

// short cuts a value's text to 200 bytes.
func short(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
