package session

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/scanner"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// Error positions. Every chunk is compiled as part of the shared file
// "cell" at line id*lineBase+l (see split.go). A position is shown as
// cell[N]:l:c, N being the execution count the user saw.

var posRE = regexp.MustCompile(fileName + `:(\d+):(\d+)`)

// decode maps a line of the shared file to the cell and its line.
func (s *Session) decode(line int) (Cell, int, bool) {
	id, l := cellPos(line)
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id >= len(s.cells) {
		return Cell{}, 0, false
	}
	return s.cells[id], l, true
}

// rewrite replaces every shared-file position in msg by cell[N]:l:c.
func (s *Session) rewrite(msg string) string {
	return posRE.ReplaceAllStringFunc(msg, func(m string) string {
		sub := posRE.FindStringSubmatch(m)
		line, _ := strconv.Atoi(sub[1])
		cell, l, ok := s.decode(line)
		if !ok {
			return m
		}
		return fmt.Sprintf("cell[%d]:%d:%s", cell.Number, l, sub[2])
	})
}

// sourceLines is the source line l of code and a caret under column col.
func sourceLines(code string, l, col int) []string {
	lines := strings.Split(code, "\n")
	if l < 1 || l > len(lines) {
		return nil
	}
	src := strings.TrimRight(lines[l-1], "\r")
	caret := ""
	if col >= 1 && col <= len(src)+1 {
		// Keep tabs so the caret lines up under the same column.
		var b strings.Builder
		for _, r := range src[:col-1] {
			if r == '\t' {
				b.WriteByte('\t')
			} else {
				b.WriteByte(' ')
			}
		}
		caret = b.String() + "^"
	}
	out := []string{fmt.Sprintf("%5d | %s", l, src)}
	if caret != "" {
		out = append(out, "      | "+caret)
	}
	return out
}

// posError is an error at line l, column col of cell id.
func (s *Session) posError(name string, id, l, col int, msg string) *Error {
	s.mu.Lock()
	cell := s.cells[id]
	s.mu.Unlock()
	// An error past the end (an unexpected EOF) points just after the last
	// line. Past the end there is only the '}' that closes the function a
	// statement chunk is wrapped in (stmtSource): for the user, that is
	// the end of the cell.
	if lines := strings.Split(strings.TrimRight(cell.Code, "\n"), "\n"); l > len(lines) {
		l, col = len(lines), len(lines[len(lines)-1])+1
		if name == "SyntaxError" {
			msg = strings.Replace(msg, "found '}'", "found 'EOF'", 1)
		}
	}
	v := fmt.Sprintf("cell[%d]:%d:%d: %s", cell.Number, l, col, msg)
	return &Error{Name: name, Value: v, Traceback: append([]string{name + ": " + v}, sourceLines(cell.Code, l, col)...)}
}

var compileErrRE = regexp.MustCompile(`^` + fileName + `:(\d+):(\d+): (.*)$`)

// toError turns what the interpreter returned into a Jupyter error.
func (s *Session) toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var p interp.Panic
	if errors.As(err, &p) {
		return s.panicError(p)
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Name: "Interrupted", Value: "the cell was interrupted", Traceback: []string{"Interrupted: the cell was interrupted"}}
	}
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return s.lineError("SyntaxError", list[0].Pos.Line, list[0].Pos.Column, list[0].Msg)
	}
	msg := err.Error()
	if m := compileErrRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		return s.lineError("CompileError", line, col, s.rewrite(m[3]))
	}
	msg = s.rewrite(msg)
	return &Error{Name: "CompileError", Value: msg, Traceback: []string{"CompileError: " + msg}}
}

// lineError is an error at a line of the shared file.
func (s *Session) lineError(name string, line, col int, msg string) *Error {
	id, l := cellPos(line)
	s.mu.Lock()
	ok := id >= 1 && id < len(s.cells)
	s.mu.Unlock()
	if !ok {
		return &Error{Name: name, Value: msg, Traceback: []string{name + ": " + msg}}
	}
	return s.posError(name, id, l, col, msg)
}

var exitRE = regexp.MustCompile(`^os\.Exit\((-?\d+)\)$`)

// panicError reports a panic with the interpreted frames yaegi printed,
// innermost first, each with its source line.
func (s *Session) panicError(p interp.Panic) *Error {
	v := p.Value
	if rv, ok := v.(reflect.Value); ok && rv.IsValid() && rv.CanInterface() {
		v = rv.Interface()
	}
	msg := fmt.Sprint(v)
	if m := exitRE.FindStringSubmatch(msg); m != nil {
		return &Error{Name: "Exit", Value: "os.Exit(" + m[1] + ") called in a cell",
			Traceback: []string{"Exit: os.Exit(" + m[1] + ") called in a cell; the kernel keeps running with its state (restart it to start afresh)"}}
	}
	tb := []string{"panic: " + msg, ""}
	s.mu.Lock()
	frames := s.frames
	s.frames = nil
	at := s.at
	s.mu.Unlock()
	located := false
	for _, f := range frames {
		m := panicLine.FindStringSubmatch(strings.TrimRight(f, "\n"))
		line, _ := strconv.Atoi(m[2])
		cell, l, ok := s.decode(line)
		if m[1] != fileName || !ok {
			tb = append(tb, fmt.Sprintf("%s:%s:%s in %s", m[1], m[2], m[3], m[4]))
			continue
		}
		col, _ := strconv.Atoi(m[3])
		if m[4] == "main(...)" && at[0] > 0 {
			// The cell's own frame: yaegi names its first statement; the
			// marker names the statement that was running (see marked).
			if c, l2, ok := s.decode(at[0]); ok && c.Number == cell.Number {
				l, col = l2, at[1]
				m[3] = strconv.Itoa(col)
			}
		}
		if pe, ok := v.(exprPositioner); ok && !located {
			// An expression error (a reward or filter rule that does not
			// compile) points into the string literal passed at this call.
			if el, ec, ok := literalPosition(cell.Code, l, col, pe); ok {
				located = true
				head := []string{fmt.Sprintf("cell[%d]:%d:%d: %s", cell.Number, el, ec, msg)}
				head = append(head, sourceLines(cell.Code, el, ec)...)
				tb = append(append(head, ""), tb...)
			}
		}
		tb = append(tb, fmt.Sprintf("cell[%d]:%d:%s in %s", cell.Number, l, m[3], strings.TrimSuffix(m[4], "(...)")))
		tb = append(tb, sourceLines(cell.Code, l, col)...)
	}
	return &Error{Name: "panic", Value: msg, Traceback: tb}
}

// exprPositioner is a panic value that knows where in an expression's
// source it went wrong (dsl.ExprError).
type exprPositioner interface {
	ExprPosition() (line, column int)
}

// literalPosition maps an expression error to the cell: the expression is
// the first string literal at or after the call at (line, col), and the
// error's position is relative to the literal's content.
func literalPosition(code string, line, col int, pe exprPositioner) (int, int, bool) {
	el, ec := pe.ExprPosition()
	if el < 1 || ec < 1 {
		return 0, 0, false
	}
	lines := strings.Split(code, "\n")
	for l := line; l <= len(lines); l++ {
		src := lines[l-1]
		from := 0
		if l == line {
			from = min(max(col-1, 0), len(src))
		}
		i := strings.IndexAny(src[from:], "`\"")
		if i < 0 {
			continue
		}
		start := from + i + 2 // column of the literal's first character
		if el == 1 {
			return l, start + ec - 1, true
		}
		return l + el - 1, ec, true
	}
	return 0, 0, false
}

// Redefinition. yaegi binds a call to the function defined when the
// caller was compiled (yaegi#1673), so after `func f` is redefined, an
// older g calling f would still call the old f. After a cell redefines a
// function or method, the session recompiles every earlier function that
// mentions its name, transitively, in their original order, so g calls the
// new f as a notebook user expects. A type cannot be redefined at all
// (yaegi#1410: old and new code keep seeing the first definition), so a
// different definition of an existing type is an error; an identical one
// (re-running a cell) is skipped. The same holds for a method: yaegi adds
// the new one after the old, and method lookup finds the old one first.

// checkDecls goes through the declarations of a chunk as parsed: it drops
// identical type re-declarations from c.file, rejects changed types, and
// returns the declarations to record once the chunk has run. Each
// declaration is the unit that starts at its position.
func (s *Session) checkDecls(id int, code string, c *chunk) ([]*decl, error) {
	fset := s.in.FileSet()
	unitAt := map[[2]int]unit{}
	for _, u := range c.units {
		l, col := lineCol(code, u.start)
		unitAt[[2]int{id*lineBase + l, col}] = u
	}
	var keep []ast.Decl
	var ds []*decl
	for _, d := range c.file.Decls {
		pos := fset.Position(d.Pos())
		u, ok := unitAt[[2]int{pos.Line, pos.Column}]
		if !ok {
			keep = append(keep, d)
			continue
		}
		src := code[u.start:u.end]
		refs := map[string]bool{}
		ast.Inspect(d, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				refs[id.Name] = true
			}
			return true
		})
		text := masked(code, []unit{u})
		switch d := d.(type) {
		case *ast.FuncDecl:
			key := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				key = recvName(d.Recv.List[0].Type) + "." + key
				s.mu.Lock()
				prev := s.decls[key]
				s.mu.Unlock()
				if prev != nil && prev.src == src {
					continue // re-running the same declaration
				}
				if prev != nil {
					l, c := lineCol(code, u.start)
					s.mu.Lock()
					n := s.cells[prev.id].Number
					s.mu.Unlock()
					return nil, s.posError("CompileError", id, l, c, fmt.Sprintf(
						"method %s is already declared in cell[%d]; the interpreter cannot change a method (calls would keep the first one): restart the kernel to redefine it, or use a new name", key, n))
				}
			}
			ds = append(ds, &decl{key: key, kind: token.FUNC, src: src, id: id, text: text, refs: refs})
		case *ast.GenDecl:
			if d.Tok != token.TYPE {
				keep = append(keep, d)
				continue
			}
			same := true
			for _, sp := range d.Specs {
				ts := sp.(*ast.TypeSpec)
				name := ts.Name.Name
				s.mu.Lock()
				prev := s.decls[name]
				s.mu.Unlock()
				if prev == nil {
					same = false
					ds = append(ds, &decl{key: name, kind: token.TYPE, src: src, id: id, text: text, refs: refs})
					continue
				}
				if prev.src != src {
					l, c := lineCol(code, u.start)
					s.mu.Lock()
					n := s.cells[prev.id].Number
					s.mu.Unlock()
					return nil, s.posError("CompileError", id, l, c, fmt.Sprintf(
						"type %s is already declared in cell[%d]; the interpreter cannot change a declared type: restart the kernel to redefine it, or use a new name", name, n))
				}
			}
			if same {
				continue // re-running the same declaration
			}
		}
		keep = append(keep, d)
	}
	c.file.Decls = keep
	return ds, nil
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// lineCol is the 1-based line and column of byte offset off in code.
func lineCol(code string, off int) (int, int) {
	l := 1 + strings.Count(code[:off], "\n")
	return l, off - (strings.LastIndexByte(code[:off], '\n') + 1) + 1
}

// recordDecls records the declarations of a chunk that ran and recompiles
// the dependents of redefined functions.
func (s *Session) recordDecls(ctx context.Context, ds []*decl) {
	changed := map[string]bool{}
	fresh := map[*decl]bool{}
	s.mu.Lock()
	for _, d := range ds {
		prev := s.decls[d.key]
		s.declSeq++
		d.seq = s.declSeq
		s.decls[d.key] = d
		fresh[d] = true
		if d.kind == token.FUNC && prev != nil && prev.src != d.src {
			changed[d.key[strings.LastIndexByte(d.key, '.')+1:]] = true
		}
	}
	var redo []*decl
	for len(changed) > 0 {
		next := map[string]bool{}
		for _, d := range s.decls {
			if d.kind != token.FUNC || fresh[d] {
				continue
			}
			for name := range changed {
				if d.refs[name] {
					fresh[d] = true
					redo = append(redo, d)
					next[d.key[strings.LastIndexByte(d.key, '.')+1:]] = true
					break
				}
			}
		}
		changed = next
	}
	s.mu.Unlock()
	sort.Slice(redo, func(i, j int) bool { return redo[i].seq < redo[j].seq })
	for _, d := range redo {
		f, err := parseDecls(s.in.FileSet(), d.id, d.text, s.guard)
		if err == nil {
			_, err = s.compileRun(ctx, f)
		}
		if err != nil {
			e := s.toError(err)
			fmt.Fprintf(os.Stderr, "warning: %s no longer compiles after this redefinition and keeps calling the old code: %s\n", d.key, e.Value)
		}
	}
}
