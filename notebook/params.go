package notebook

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Tags with a meaning to the runner (papermill's and nbval's conventions).
const (
	TagParameters         = "parameters"          // the cell that declares the parameters and their defaults
	TagInjectedParameters = "injected-parameters" // the cell the runner inserts after it
	TagNoCheck            = "nocheck"             // --check does not compare this cell's outputs
	TagRaisesException    = "raises-exception"    // the cell is expected to fail
	TagSkipExecution      = "skip-execution"      // the runner does not execute this cell

	// NoCheckComment in a cell's source has the effect of TagNoCheck.
	NoCheckComment = "// ragen:nocheck"
)

// A Param is a variable or constant the parameters cell declares.
type Param struct {
	Name string
	Type string // Go type as written or inferred ("int", "time.Duration"); "" when unknown
	Expr string // the default value's source
	// Const marks a constant: it cannot be reassigned, so not set either.
	Const bool
}

// DeclaredParams finds the declarations of a parameters cell: `var x = v`,
// `var x T`, `const x = v` and `x := v`, with their types, written or
// inferred from the default value (an untyped constant's default type; a
// product with time.Second is a time.Duration). Single-line imports in the
// cell are ignored.
func DeclaredParams(src string) ([]Param, error) {
	body := blankImports(src)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "parameters", "package p;func _() {\n"+body+"\n}", 0)
	if err != nil {
		return nil, fmt.Errorf("cannot parse the parameters cell: %v", err)
	}
	var ps []Param
	add := func(name string, typ, val ast.Expr, isConst bool) {
		p := Param{Name: name, Const: isConst}
		if typ != nil {
			p.Type = types.ExprString(typ)
		}
		if val != nil {
			p.Expr = types.ExprString(val)
			if p.Type == "" {
				p.Type = inferType(val)
			}
		}
		ps = append(ps, p)
	}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.DeclStmt:
			gd, ok := st.Decl.(*ast.GenDecl)
			if !ok || (gd.Tok != token.VAR && gd.Tok != token.CONST) {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					var val ast.Expr
					if i < len(vs.Values) {
						val = vs.Values[i]
					}
					add(n.Name, vs.Type, val, gd.Tok == token.CONST)
				}
			}
		case *ast.AssignStmt:
			if st.Tok != token.DEFINE || len(st.Lhs) != len(st.Rhs) {
				continue
			}
			for i, l := range st.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
					add(id.Name, nil, st.Rhs[i], false)
				}
			}
		}
	}
	return ps, nil
}

// blankImports replaces the cell's import declarations by spaces (keeping
// newlines, so positions stay), leaving statements a function body can
// hold.
func blankImports(src string) string {
	b := []byte(src)
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(b))
	var sc scanner.Scanner
	sc.Init(file, b, nil, 0)
	blank := func(from, to int) {
		for i := from; i < to && i < len(b); i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	for {
		pos, tok, _ := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.IMPORT {
			continue
		}
		start := file.Offset(pos)
		depth := 0
		for {
			p, t, lit := sc.Scan()
			end := file.Offset(p) + len(lit)
			if t == token.LPAREN {
				depth++
			}
			if t == token.RPAREN {
				depth--
				end = file.Offset(p) + 1
			}
			if t == token.EOF || depth == 0 && (t == token.STRING || t == token.RPAREN) {
				blank(start, end)
				break
			}
		}
	}
	return string(b)
}

// inferType is the type of a default value when its declaration names none.
func inferType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		switch e.Kind {
		case token.INT:
			return "int"
		case token.FLOAT:
			return "float64"
		case token.STRING:
			return "string"
		}
	case *ast.Ident:
		if e.Name == "true" || e.Name == "false" {
			return "bool"
		}
	case *ast.ParenExpr:
		return inferType(e.X)
	case *ast.UnaryExpr:
		return inferType(e.X)
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" {
			switch e.Sel.Name {
			case "Nanosecond", "Microsecond", "Millisecond", "Second", "Minute", "Hour":
				return "time.Duration"
			}
		}
	case *ast.BinaryExpr:
		l, r := inferType(e.X), inferType(e.Y)
		switch {
		case l == "time.Duration" || r == "time.Duration":
			return "time.Duration"
		case l == "float64" || r == "float64":
			return "float64"
		case l == r:
			return l
		}
	case *ast.CallExpr:
		if len(e.Args) == 1 && literalKind(types.ExprString(e.Fun)) != "" {
			return types.ExprString(e.Fun) // a conversion: float32(0.1)
		}
	}
	return ""
}

// literalKind is how a command-line value of type typ is read: "int",
// "float", "bool", "string", "duration", or "" when it cannot be.
func literalKind(typ string) string {
	switch typ {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "int"
	case "float32", "float64":
		return "float"
	case "bool", "string":
		return typ
	case "time.Duration":
		return "duration"
	}
	return ""
}

// goLiteral checks value against the parameter's type and returns the Go
// expression that assigns it.
func (p Param) goLiteral(value string) (string, error) {
	def := ""
	if p.Expr != "" {
		def = " (default " + p.Expr + ")"
	}
	bad := func(what string) error {
		return fmt.Errorf("-p %s=%s: %s is declared as %s in the parameters cell%s; %q is not %s",
			p.Name, value, p.Name, p.Type, def, value, what)
	}
	switch literalKind(p.Type) {
	case "int":
		bits := 64
		if n := strings.TrimLeft(p.Type, "uint"); n != "" {
			bits, _ = strconv.Atoi(n)
		}
		var err error
		if strings.HasPrefix(p.Type, "u") {
			_, err = strconv.ParseUint(value, 0, bits)
		} else {
			_, err = strconv.ParseInt(value, 0, bits)
		}
		if err != nil {
			return "", bad("an integer of type " + p.Type)
		}
		return value, nil
	case "float":
		if _, err := strconv.ParseFloat(value, 64); err != nil || strings.ContainsAny(value, "xXpP_") || strings.EqualFold(value, "inf") || strings.EqualFold(value, "nan") || strings.EqualFold(value, "infinity") {
			return "", bad("a number")
		}
		return value, nil
	case "bool":
		if value != "true" && value != "false" {
			return "", bad("a bool (true or false)")
		}
		return value, nil
	case "string":
		if s, err := strconv.Unquote(value); err == nil {
			return strconv.Quote(s), nil
		}
		return strconv.Quote(value), nil
	case "duration":
		d, err := time.ParseDuration(value)
		if err != nil {
			return "", bad("a duration (like 5s, 1m30s, 200ms)")
		}
		return fmt.Sprintf("time.Duration(%d) // %s", int64(d), d), nil
	}
	typ := p.Type
	if typ == "" {
		typ = "an unknown type"
	}
	return "", fmt.Errorf("-p %s=%s: %s is declared as %s in the parameters cell%s; only int, float, bool, string and time.Duration parameters can be set from the command line",
		p.Name, value, p.Name, typ, def)
}

// InjectParams sets parameters the papermill way: values ("name=value",
// Go literals) are checked against the declarations of the first cell
// tagged "parameters", and a code cell tagged "injected-parameters" that
// assigns them is inserted right after it (replacing one a previous run
// inserted). An undeclared name or a value of the wrong type is an error
// that names the parameter, its declared type and the value.
func (nb *Notebook) InjectParams(values []string) error {
	if len(values) == 0 {
		return nil
	}
	at := -1
	for i, c := range nb.Cells {
		if c.Type == "code" && c.HasTag(TagParameters) {
			at = i
			break
		}
	}
	if at < 0 {
		return fmt.Errorf("-p %s: the notebook has no cell tagged %q to declare parameters in (tag the code cell that sets their defaults)", values[0], TagParameters)
	}
	declared, err := DeclaredParams(nb.Cells[at].Source)
	if err != nil {
		return err
	}
	byName := map[string]Param{}
	var names []string
	for _, p := range declared {
		byName[p.Name] = p
		names = append(names, p.Name)
	}
	sort.Strings(names)
	var order []string
	assign := map[string]string{}
	for _, v := range values {
		name, value, ok := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("-p %s: want name=value", v)
		}
		p, ok := byName[name]
		if !ok {
			return fmt.Errorf("-p %s: %q is not declared in the parameters cell (it declares: %s)", v, name, strings.Join(names, ", "))
		}
		if p.Const {
			return fmt.Errorf("-p %s: %s is a constant in the parameters cell and cannot be reassigned; declare it with var or :=", v, name)
		}
		lit, err := p.goLiteral(value)
		if err != nil {
			return err
		}
		if _, seen := assign[name]; !seen {
			order = append(order, name)
		}
		assign[name] = lit
	}
	var src strings.Builder
	src.WriteString("// Parameters injected by ragen-run\n")
	for _, n := range order {
		fmt.Fprintf(&src, "%s = %s\n", n, assign[n])
	}
	cell := &Cell{Type: "code", Metadata: map[string]any{"tags": []any{TagInjectedParameters}}, Source: strings.TrimSuffix(src.String(), "\n")}
	cells := append([]*Cell{}, nb.Cells[:at+1]...)
	cells = append(cells, cell)
	for _, c := range nb.Cells[at+1:] {
		if !c.HasTag(TagInjectedParameters) {
			cells = append(cells, c)
		}
	}
	nb.Cells = cells
	nb.EnsureIDs()
	return nil
}

// CIParams returns the parameters a notebook declares for continuous
// integration: its metadata ragen.ci_parameters, a list of "name=value"
// strings (the -p syntax) that make a run short enough for CI while
// exercising every cell. A notebook without them gets an error that says
// where to put them.
func (nb *Notebook) CIParams() ([]string, error) {
	missing := fmt.Errorf(`no CI parameters: add {"ragen": {"ci_parameters": ["steps=2", ...]}} to the notebook's metadata`)
	r, ok := nb.Metadata["ragen"].(map[string]any)
	if !ok {
		return nil, missing
	}
	raw, ok := r["ci_parameters"]
	if !ok {
		return nil, missing
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("metadata ragen.ci_parameters: want a list of \"name=value\" strings, got %T", raw)
	}
	out := make([]string, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("metadata ragen.ci_parameters[%d]: want a \"name=value\" string, got %v", i, v)
		}
		out[i] = s
	}
	return out, nil
}
