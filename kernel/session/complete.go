package session

import (
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"reflect"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragen-go/ragen/stdlib"
)

// Completion and inspection work on what the session knows at run time:
// the packages it Uses (their symbol tables), what cells imported, the
// globals of the interpreter and the declarations cells made, and on the
// doc tables generated into package stdlib. A package member completes
// even before the cell importing the package has run (`strings.Rep` ->
// Repeat), which GoNB cannot do; after a dot the expression before it is
// typed without running it (operand.go).

var keywords = strings.Fields(`break case chan const continue default defer else fallthrough for func go goto if
import interface map package range return select struct switch type var
append cap clear close complex copy delete imag len make max min new panic print println real recover
any bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string
uint uint8 uint16 uint32 uint64 uintptr true false nil iota`)

func isIdentRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// identBefore is the start of the identifier that ends at byte offset end.
func identBefore(code string, end int) int {
	i := end
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(code[:i])
		if !isIdentRune(r) {
			break
		}
		i -= n
	}
	return i
}

// globals is the interpreter's globals. yaegi's Globals panics when a
// failed compile left a variable without a slot (until the next cell runs);
// completion then sees none.
func (s *Session) globals() (g map[string]reflect.Value) {
	defer func() {
		if recover() != nil {
			g = nil
		}
	}()
	return s.in.Globals()
}

// Complete returns the completions of the identifier ending at byte offset
// cursor and the byte range [start, end) they replace.
func (s *Session) Complete(code string, cursor int) (matches []string, start, end int) {
	cursor = max(0, min(cursor, len(code)))
	start = identBefore(code, cursor)
	prefix := code[start:cursor]
	var cands []string
	if start > 0 && code[start-1] == '.' {
		cands = s.members(code, start-1)
	} else {
		cands = s.names(code[:start] + code[cursor:]) // not the word being typed
		cands = append(s.literalFields(code, start), cands...)
	}
	seen := map[string]bool{}
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) && !strings.HasPrefix(c, "_") && !seen[c] {
			seen[c] = true
			matches = append(matches, c)
		}
	}
	sort.Strings(matches)
	return matches, start, cursor
}

// packages maps a package name to the import paths it may denote: what
// cells imported, else every Used package of that name.
func (s *Session) packages(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.imported[name]; ok {
		return []string{p}
	}
	var paths []string
	for p, n := range s.pkgNames {
		if n == name && !strings.HasPrefix(p, "ragen/internal") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	return paths
}

// names lists identifiers in scope at top level.
func (s *Session) names(code string) []string {
	out := append([]string(nil), keywords...)
	for name := range s.globals() {
		out = append(out, name)
	}
	s.mu.Lock()
	for key := range s.decls {
		if !strings.Contains(key, ".") {
			out = append(out, key)
		}
	}
	for name := range s.imported {
		out = append(out, name)
	}
	for _, name := range s.pkgNames {
		out = append(out, name)
	}
	s.mu.Unlock()
	// Identifiers of the cell being edited.
	var sc scanner.Scanner
	fset := token.NewFileSet()
	sc.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.IDENT {
			out = append(out, lit)
		}
	}
	return out
}

// Inspect describes the symbol at byte offset cursor: a package member's
// Go type, a cell declaration's source, a global's type and value.
func (s *Session) Inspect(code string, cursor int) (string, bool) {
	cursor = max(0, min(cursor, len(code)))
	end := cursor
	for end < len(code) {
		r, n := utf8.DecodeRuneInString(code[end:])
		if !isIdentRune(r) {
			break
		}
		end += n
	}
	start := identBefore(code, cursor)
	name := code[start:end]
	if name == "" {
		// Inside a call's parentheses (Shift-Tab after `ragen.Bandit(`):
		// the function called.
		if open := openParen(code, cursor); open > 0 && identBefore(code, open) < open {
			return s.Inspect(code, open)
		}
		return "", false
	}
	if start > 0 && code[start-1] == '.' {
		o, qual, ok := s.operandBefore(code, start-1)
		if !ok {
			return "", false
		}
		return s.describeMember(o, qual, name)
	}
	s.mu.Lock()
	d := s.decls[name]
	var cellN int
	if d != nil {
		cellN = s.cells[d.id].Number
	}
	s.mu.Unlock()
	if d != nil {
		return fmt.Sprintf("%s\n\n(declared in cell[%d])", d.src, cellN), true
	}
	if v, ok := s.globals()[name]; ok && v.IsValid() {
		return fmt.Sprintf("var %s %s = %s", name, v.Type(), short(fmt.Sprintf("%v", v))), true
	}
	for _, p := range s.packages(name) {
		return withDoc(fmt.Sprintf("package %s (%q)", name, p), stdlib.Docs[p][""]), true
	}
	return "", false
}

// literalFields lists the fields of the struct type whose composite literal
// the key at start is in (`ragen.Experiment{Ste`), for a compiled package's
// type; nil elsewhere.
func (s *Session) literalFields(code string, start int) []string {
	i := strings.TrimRightFunc(code[:start], unicode.IsSpace)
	if !strings.HasSuffix(i, "{") && !strings.HasSuffix(i, ",") {
		return nil // not where a key goes
	}
	open := -1
	depth := 0
	for j := start - 1; j >= 0 && open < 0; j-- {
		switch code[j] {
		case ')', ']', '}':
			depth++
		case '(', '[':
			if depth == 0 {
				return nil
			}
			depth--
		case '{':
			if depth == 0 {
				open = j
			}
			depth--
		}
	}
	if open <= 0 {
		return nil
	}
	o, _, ok := s.operandBefore(code, open)
	if !ok || !o.isType || o.typ.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for k := 0; k < o.typ.NumField(); k++ {
		if f := o.typ.Field(k); f.IsExported() {
			out = append(out, f.Name)
		}
	}
	return out
}

// openParen is the offset of the innermost '(' left open before cursor,
// -1 if none (brackets in strings and comments are not told apart).
func openParen(code string, cursor int) int {
	depth := 0
	for i := cursor - 1; i >= 0; i-- {
		switch code[i] {
		case ')', ']', '}':
			depth++
		case '[', '{':
			if depth == 0 {
				return -1
			}
			depth--
		case '(':
			if depth == 0 {
				return i
			}
			depth--
		}
	}
	return -1
}

// signature is a func type's parameters and results, its first skip
// parameters (a method expression's receiver) left out: "(int) string".
func signature(t reflect.Type, skip int) string {
	var in, out []string
	for i := skip; i < t.NumIn(); i++ {
		p := t.In(i).String()
		if t.IsVariadic() && i == t.NumIn()-1 {
			p = "..." + t.In(i).Elem().String()
		}
		in = append(in, p)
	}
	for i := 0; i < t.NumOut(); i++ {
		out = append(out, t.Out(i).String())
	}
	sig := "(" + strings.Join(in, ", ") + ")"
	switch len(out) {
	case 0:
	case 1:
		sig += " " + out[0]
	default:
		sig += " (" + strings.Join(out, ", ") + ")"
	}
	return sig
}

// describe renders a symbol of a compiled package from its reflect value
// (types are given as pointers to their zero value, variables
// addressable), with its doc comment from the generated doc tables; a
// struct's fields and a type's methods carry the first sentence of theirs.
func describe(pkg, name string, v reflect.Value) string {
	full := pkg + "." + name
	docs := stdlib.Docs[pkg]
	switch {
	case v.Kind() == reflect.Pointer && v.IsNil():
		t := v.Type().Elem()
		line := func(text, key string) string {
			if d := synopsis(docs[key]); d != "" {
				return text + " // " + d
			}
			return text
		}
		out := fmt.Sprintf("type %s %s", full, t.Kind())
		if t.Kind() == reflect.Struct {
			var fields []string
			for i := 0; i < t.NumField(); i++ {
				if f := t.Field(i); f.IsExported() {
					fields = append(fields, line(fmt.Sprintf("\t%s %s", f.Name, f.Type), name+"."+f.Name))
				}
			}
			out = fmt.Sprintf("type %s struct {\n%s\n}", full, strings.Join(fields, "\n"))
		}
		pt := reflect.PointerTo(t)
		var methods []string
		for i := 0; i < pt.NumMethod(); i++ {
			m := pt.Method(i)
			// m.Type has the receiver as its first parameter.
			methods = append(methods, line(fmt.Sprintf("func (%s) %s%s", name, m.Name, signature(m.Type, 1)), name+"."+m.Name))
		}
		if t.Kind() == reflect.Interface {
			for i := 0; i < t.NumMethod(); i++ {
				m := t.Method(i)
				methods = append(methods, line(fmt.Sprintf("%s%s", m.Name, strings.TrimPrefix(m.Type.String(), "func")), name+"."+m.Name))
			}
		}
		if len(methods) > 0 {
			out += "\n\n" + strings.Join(methods, "\n")
		}
		return withDoc(out, docs[name])
	case v.Kind() == reflect.Func:
		return withDoc("func "+full+strings.TrimPrefix(v.Type().String(), "func"), docs[name])
	case v.CanAddr():
		return withDoc(fmt.Sprintf("var %s %s", full, v.Type()), docs[name])
	default:
		return withDoc(fmt.Sprintf("const %s = %v", full, v), docs[name])
	}
}

// IsComplete tells a console whether code is ready to run: "complete",
// "incomplete" (an open bracket, string or comment, or a parse error at
// the end of the input; indent is what to prefix the next line with) or
// "invalid".
func IsComplete(code string) (status, indent string) {
	depth := 0
	unterminated := false
	var sc scanner.Scanner
	fset := token.NewFileSet()
	sc.Init(fset.AddFile("", -1, len(code)), []byte(code), func(_ token.Position, msg string) {
		if strings.Contains(msg, "not terminated") {
			unterminated = true
		}
	}, scanner.ScanComments)
	for {
		_, tok, _ := sc.Scan()
		if tok == token.EOF {
			break
		}
		switch tok {
		case token.LPAREN, token.LBRACK, token.LBRACE:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
		}
	}
	switch {
	case unterminated || depth > 0:
		return "incomplete", strings.Repeat("\t", max(depth, 0))
	case depth < 0:
		return "invalid", ""
	}
	lines := strings.Count(strings.TrimRight(code, "\n"), "\n") + 1
	if _, err := makePlan(token.NewFileSet(), 1, code, nil); err != nil {
		// An error at the end of input (or at main's closing brace, past
		// the cell's last line) means more input may fix it.
		var list scanner.ErrorList
		if strings.Contains(err.Error(), "EOF") ||
			errors.As(err, &list) && len(list) > 0 && list[0].Pos.Line%lineBase > lines {
			return "incomplete", ""
		}
		return "invalid", ""
	}
	return "complete", ""
}
