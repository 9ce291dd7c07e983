package session

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"strings"
)

// The cell splitter. yaegi decides how to parse a source from its first
// token alone, so `import "fmt"` followed by a statement does not parse. We
// cut a cell into its top-level units (a declaration or a statement each:
// the scanner's semicolons at bracket depth 0), classify them, hoist the
// imports, and run the rest in source order as chunks of consecutive
// declarations (compiled as a file, so they may refer to each other) or of
// consecutive statements (compiled as the body of main, which yaegi runs at
// global scope, so `x := 1` defines a global).
//
// Every chunk is compiled from the cell's own text with the bytes of other
// units blanked out (newlines kept) behind a `//line` directive, so that
// positions in errors are the cell's own line:column. The directive puts
// the cell at line base(n)+1 of one shared file name, since yaegi keys
// imports by file name (all cells must share one) and we still need to know
// which cell a position belongs to; see cellPos.

type unitKind int

const (
	unitImport unitKind = iota
	unitDecl            // func, method, type, const
	unitStmt            // statements, including var
)

// A unit is one top-level declaration or statement: cell[start:end].
type unit struct {
	kind       unitKind
	start, end int
	// semi is the offset of the explicit ';' that ends the unit, -1 when a
	// newline or the end of the cell ends it. An explicit ';' suppresses
	// the result, and masked keeps it: it is what separates two units on
	// one line (`a := 1; b := 2`).
	semi int
}

// fileName is the file name of every chunk; cellPos decodes positions.
const fileName = "cell"

// lineBase is the first line of cell n in the shared file: cell n line l is
// line n*lineBase+l. A cell of lineBase lines or more would spill into the
// next cell's lines (only its messages would point at the wrong cell).
const lineBase = 10_000

// maxCellIDs bounds the internal cell ids: a //line directive takes line
// numbers up to 1<<30 (at lineBase 1,000,000 the 1074th cell of a session
// was refused as a syntax error). Ids are reused after that many cells;
// a message about code from a cell that old may then show a newer cell.
const maxCellIDs = (1 << 30) / lineBase

// splitUnits cuts code into top-level units. Scanner errors are returned
// with cell-relative positions.
func splitUnits(code string) ([]unit, error) {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(code))
	var errs scanner.ErrorList
	var s scanner.Scanner
	s.Init(file, []byte(code), func(pos token.Position, msg string) { errs.Add(pos, msg) }, 0)
	var units []unit
	depth := 0
	start := -1
	var kindToks []token.Token // first tokens of the current unit, for classification
	lastEnd := 0
	header := false // in the header of a for, if or switch: its ';' do not end the unit
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		off := file.Offset(pos)
		if tok == token.SEMICOLON && depth == 0 && !header {
			if start >= 0 {
				semi := -1
				if lit == ";" {
					semi = off
				}
				units = append(units, unit{kind: classify(kindToks), start: start, end: lastEnd, semi: semi})
			}
			start, kindToks = -1, kindToks[:0]
			continue
		}
		if start < 0 {
			start = off
		}
		if len(kindToks) < 64 {
			kindToks = append(kindToks, tok)
		}
		switch tok {
		case token.FOR, token.IF, token.SWITCH:
			header = header || depth == 0
		case token.LBRACE:
			if depth == 0 {
				header = false
			}
			depth++
		case token.LPAREN, token.LBRACK:
			depth++
		case token.RPAREN, token.RBRACK, token.RBRACE:
			depth--
		}
		switch {
		case lit != "":
			lastEnd = off + len(lit)
		default:
			lastEnd = off + len(tok.String())
		}
	}
	if start >= 0 {
		units = append(units, unit{kind: classify(kindToks), start: start, end: lastEnd, semi: -1})
	}
	if errs.Len() > 0 {
		return nil, errs
	}
	return units, nil
}

// classify tells a declaration from a statement by its first tokens. A
// `func` starts a declaration when a name follows it, or a receiver and
// then a name and '(' (a method); otherwise it is a function literal.
func classify(toks []token.Token) unitKind {
	if len(toks) == 0 {
		return unitStmt
	}
	switch toks[0] {
	case token.IMPORT:
		return unitImport
	case token.TYPE, token.CONST:
		return unitDecl
	case token.FUNC:
		if len(toks) > 1 && toks[1] == token.IDENT {
			return unitDecl
		}
		if len(toks) > 1 && toks[1] == token.LPAREN {
			depth := 0
			for i := 1; i < len(toks); i++ {
				switch toks[i] {
				case token.LPAREN:
					depth++
				case token.RPAREN:
					depth--
				}
				if depth == 0 {
					if i+2 < len(toks) && toks[i+1] == token.IDENT && (toks[i+2] == token.LPAREN || toks[i+2] == token.LBRACK) {
						return unitDecl
					}
					return unitStmt
				}
			}
		}
	}
	return unitStmt
}

// masked returns code with every byte outside the given units replaced by
// a space, newlines kept, so offsets, lines and columns stay the cell's.
// The ';' ending a unit is kept with it, or `a := 1; b := 2` would read
// `a := 1  b := 2`.
func masked(code string, units []unit) string {
	b := []byte(code)
	keep := make([]bool, len(b))
	for _, u := range units {
		for i := u.start; i < u.end; i++ {
			keep[i] = true
		}
		if u.semi >= 0 {
			keep[u.semi] = true
		}
	}
	for i := range b {
		if !keep[i] && b[i] != '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// marked is masked(code, units) with a call __ragen.At(line, col) before
// each unit, a /*line*/ comment after it so the unit keeps its position.
// The calls tell which top-level statement of the cell is running: yaegi
// reports a panic at the first statement of the panicking frame, not at
// the statement that panicked (yaegi#1266), so the cell's own frame would
// always point at its first line. Only top-level statements are marked: a
// call per statement inside loops and functions would slow them down.
func marked(code string, n int, units []unit) string {
	m := masked(code, units)
	var b strings.Builder
	prev := 0
	for _, u := range units {
		l, c := lineCol(code, u.start)
		line := n*lineBase + l
		b.WriteString(m[prev:u.start])
		fmt.Fprintf(&b, "__ragen.At(%d, %d); /*line %s:%d:%d*/", line, c, fileName, line, c)
		prev = u.start
	}
	b.WriteString(m[prev:])
	return b.String()
}

// lineDirective places the text that follows on line 1, column 1 of cell n.
func lineDirective(n int) string {
	return fmt.Sprintf("\n//line %s:%d:1\n", fileName, n*lineBase+1)
}

// declSource is a file holding text (already masked) as top-level
// declarations of package main.
func declSource(n int, text string) string { return "package main" + lineDirective(n) + text }

// stmtPrefix begins every statement chunk as compiled.
const stmtPrefix = "package main; func main() {"

// stmtSource wraps text (already masked) in main's body, the form yaegi
// runs at global scope.
func stmtSource(n int, text string) string {
	return stmtPrefix + lineDirective(n) + text + "\n}"
}

// guardFunc rewrites src, a complete file as compiled and parsed into f
// in fset, before it is compiled (goguard.go, makeguard.go); it returns src
// itself when nothing needs a guard.
type guardFunc func(fset *token.FileSet, f *ast.File, src string) string

// parseDecls parses a declaration chunk; guard, if not nil, rewrites it,
// and the rewritten source is parsed instead.
func parseDecls(fset *token.FileSet, n int, text string, guard guardFunc) (*ast.File, error) {
	return parseGuarded(fset, declSource(n, text), parser.ParseComments, guard)
}

// parseStmts parses a statement chunk and returns main's body; guard as
// for parseDecls.
func parseStmts(fset *token.FileSet, n int, text string, guard guardFunc) (*ast.BlockStmt, error) {
	f, err := parseGuarded(fset, stmtSource(n, text), 0, guard)
	if err != nil {
		return nil, err
	}
	return f.Decls[0].(*ast.FuncDecl).Body, nil
}

func parseGuarded(fset *token.FileSet, src string, mode parser.Mode, guard guardFunc) (*ast.File, error) {
	f, err := parseFile(fset, fileName, src, mode)
	if err != nil || guard == nil {
		return f, err
	}
	if g := guard(fset, f, src); g != src {
		return parseFile(fset, fileName, g, mode)
	}
	return f, nil
}

// A chunk is a run of units compiled together, parsed as compiled: a
// declaration chunk as a file, a statement chunk as main's body.
type chunk struct {
	kind  unitKind
	units []unit
	file  *ast.File      // unitDecl
	body  *ast.BlockStmt // unitStmt
}

// plan is a cell parsed once, in the interpreter's FileSet, with the
// cell's own positions: its imports (nil if none), then chunks in source
// order, and result, the unit whose value is the cell's result (the last
// unit, when it is a bare expression not ended by ';'; nil if none), and
// its expression. Splitting, the redefinition checks, the guards and the
// display of the result all work on these trees; only the guards' rewrites
// (a cell with go statements or make calls) and yaegi's fallbacks
// (globals.go, redefinitions) parse again.
type plan struct {
	imports *ast.File
	chunks  []chunk
	result  *unit
	expr    ast.Expr
}

// makePlan splits and parses cell n's code. Errors carry positions in the
// shared file, as the interpreter's do.
func makePlan(fset *token.FileSet, n int, code string, guard guardFunc) (*plan, error) {
	units, err := splitUnits(code)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				e.Pos.Filename, e.Pos.Line = fileName, n*lineBase+e.Pos.Line
			}
		}
		return nil, err
	}
	p := &plan{}
	var imports, rest []unit
	for _, u := range units {
		if u.kind == unitImport {
			imports = append(imports, u)
		} else {
			rest = append(rest, u)
		}
	}
	if len(imports) > 0 {
		if p.imports, err = parseDecls(fset, n, masked(code, imports), nil); err != nil {
			return nil, err
		}
	}
	for _, u := range rest {
		if k := len(p.chunks); k > 0 && p.chunks[k-1].kind == u.kind {
			p.chunks[k-1].units = append(p.chunks[k-1].units, u)
		} else {
			p.chunks = append(p.chunks, chunk{kind: u.kind, units: []unit{u}})
		}
	}
	for i := range p.chunks {
		c := &p.chunks[i]
		if c.kind == unitDecl {
			if c.file, err = parseDecls(fset, n, masked(code, c.units), guard); err != nil {
				return nil, err
			}
			continue
		}
		if c.body, err = parseStmts(fset, n, marked(code, n, c.units), guard); err != nil {
			// Reported on the text as written, without the markers.
			if _, perr := parseStmts(token.NewFileSet(), n, masked(code, c.units), nil); perr != nil {
				err = perr
			}
			return nil, err
		}
	}
	// The result: the last unit, a statement not ended by ';', when it is
	// a bare expression. It is the last statement of the last chunk, after
	// its marker (see marked), and leaves the chunk.
	if k := len(p.chunks); k > 0 && p.chunks[k-1].kind == unitStmt {
		c := &p.chunks[k-1]
		last, list := c.units[len(c.units)-1], c.body.List
		if es, ok := list[len(list)-1].(*ast.ExprStmt); ok && last.semi < 0 && len(list) >= 2 {
			p.result, p.expr = &last, es.X
			c.units, c.body.List = c.units[:len(c.units)-1], list[:len(list)-2]
			if len(c.units) == 0 {
				p.chunks = p.chunks[:k-1]
			}
		}
	}
	return p, nil
}

// cellPos decodes a line of the shared file into (cell, line in cell).
func cellPos(line int) (cell, l int) { return line / lineBase, line % lineBase }
