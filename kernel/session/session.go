package session

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"io"
	"log"
	"os"
	"path"
	"reflect"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/traefik/yaegi/interp"

	"github.com/ragen-go/ragen/kernel/cellctx"
	"github.com/ragen-go/ragen/kernel/display"
	"github.com/ragen-go/ragen/stdlib"
)

// Options configure a Session. The zero value is ready to use.
type Options struct {
	// InterruptGrace is how long a first Interrupt waits for the cell to
	// stop by itself (compiled code honouring cellctx) before the
	// interpreter is stopped. Default 10s: a training step, the distance
	// between two safe points, takes seconds, and stopping the interpreter
	// first would lose the run the cell was about to assign (a second
	// interrupt stops it at once).
	InterruptGrace time.Duration
	// Args is os.Args as the cells see it. Default ["ragen"].
	Args []string
}

// Output receives what a cell produces while it runs. Either func may be
// nil. They are called from other goroutines, never concurrently with
// themselves for Stream.
type Output struct {
	Stream  func(name, text string) // "stdout" or "stderr", batched
	Display func(display.Data)      // display_data and update_display_data
}

// Result is the outcome of one cell.
type Result struct {
	// Data and Metadata are the execute_result bundle, nil when the cell
	// does not end with a value.
	Data, Metadata map[string]any
	// Err is the cell's error, nil on success.
	Err *Error
}

// Error is a failed cell in Jupyter's terms.
type Error struct {
	Name      string   // CompileError, panic, Exit, Interrupted
	Value     string   // the message
	Traceback []string // lines shown to the user
}

func (e *Error) Error() string { return e.Name + ": " + e.Value }

// Cell is one cell to execute.
type Cell struct {
	Code   string
	Number int // the execution count shown to the user, used in messages
}

// A Session is one interpreter whose state carries over between cells.
// Execute runs one cell at a time; Interrupt may be called from any
// goroutine.
type Session struct {
	opts Options
	in   *interp.Interpreter
	yi   *internals // the interpreter's fields its API lacks (yaegi.go)

	mu         sync.Mutex                          // guards the fields below and the running cell's state
	cells      []Cell                              // by internal id (index); a cell's positions decode to its id
	nextID     int                                 // the next cell's id (ids wrap at maxCellIDs)
	imported   map[string]string                   // package name -> path imported by cells
	pkgNames   map[string]string                   // path -> package name, from Use
	exports    map[string]map[string]reflect.Value // path -> symbols, from Use
	decls      map[string]*decl                    // top-level func, method and type by key
	declSeq    int
	running    *running
	stop       *stopped // the last run stopped, until the next run (yaegi.go)
	cellNumber int      // execution count of the running cell

	out       batcher
	capture   [2]*fdCapture
	frames    []string // panic positions printed by yaegi during the cell
	at        [2]int   // line (shared file) and column of the running top-level statement
	goPanic   []string // goroutine panics during the running cell
	latePanic []string // goroutine panics while no cell ran, told at the next cell
	result    *Result  // set by the result helpers during the cell

	kept    []reflect.Value         // values of the define being declared (globals.go)
	getters map[reflect.Type]string // getter name by type (globals.go)
}

// running is the state of the cell being executed, for Interrupt.
type running struct {
	soft, hard context.CancelFunc
	interrupts int
	timer      *time.Timer
}

// decl is a top-level declaration a cell made, kept to handle redefinition.
type decl struct {
	key  string          // "f", "T" or "T.M"
	kind token.Token     // token.FUNC or token.TYPE
	src  string          // the declaration's text
	id   int             // internal id of the cell that declared it
	text string          // the cell's text masked to this declaration
	refs map[string]bool // identifiers it mentions
	seq  int             // declaration order
}

// New starts an interpreter made by stdlib.NewInterpreter: the allowed Go
// standard library, the DSL ("ragen") and our packages, and the kernel's
// ("ragen/display", "ragen/cellctx").
func New(opts Options) (*Session, error) {
	if opts.InterruptGrace <= 0 {
		opts.InterruptGrace = 10 * time.Second
	}
	if len(opts.Args) == 0 {
		opts.Args = []string{"ragen"}
	}
	s := &Session{
		opts:     opts,
		imported: map[string]string{},
		pkgNames: map[string]string{},
		exports:  map[string]map[string]reflect.Value{},
		decls:    map[string]*decl{},
		getters:  map[reflect.Type]string{},
		cells:    []Cell{{}}, // id 0 is the session's own setup code
		nextID:   1,
	}
	var err error
	s.in, err = stdlib.NewInterpreter(stdlib.Options{
		Stdin:  strings.NewReader(""),
		Stdout: os.Stdout, // fd 1, captured during cells
		Stderr: &stderrFilter{s: s},
		Args:   opts.Args,
	})
	if err != nil {
		return nil, err
	}
	s.record(stdlib.Exports())
	if s.yi, err = newInternals(s.in); err != nil {
		return nil, err
	}
	if err := s.Use(s.resultSymbols()); err != nil {
		return nil, err
	}
	f, err := parseDecls(s.in.FileSet(), 0, `import __ragen "ragen/internal/cellresult"`+"\n"+recoverDecl, nil)
	if err == nil {
		_, err = s.compileRun(context.Background(), f)
	}
	if err != nil {
		return nil, fmt.Errorf("session setup: %w", err)
	}
	for i, name := range streamNames {
		c, err := newFDCapture(i+1, name, s.out.add)
		if err != nil {
			return nil, err
		}
		s.capture[i] = c
	}
	return s, nil
}

// Use makes more packages importable by cells (yaegi's symbol tables:
// "import/path/name" -> symbol -> value), beyond stdlib's.
func (s *Session) Use(exports interp.Exports) error {
	if err := s.in.Use(exports); err != nil {
		return err
	}
	s.record(exports)
	return nil
}

// record notes the packages of exports for completion and inspection.
func (s *Session) record(exports interp.Exports) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, syms := range exports {
		p, name := path.Dir(key), path.Base(key)
		s.pkgNames[p] = name
		s.exports[p] = syms
	}
}

// Close releases the capture pipes. The interpreter itself cannot be
// stopped: goroutines a cell left running keep running.
func (s *Session) Close() error {
	for _, c := range s.capture {
		if c != nil {
			c.close()
		}
	}
	return nil
}

// Interrupt asks the running cell to stop. The first call cancels the
// cell's context (cellctx), so compiled code stops at its next safe point
// and returns; if the cell has not ended after Options.InterruptGrace the
// interpreter is stopped. If nothing in the cell asked for the context,
// nothing can honour it, and the interpreter is stopped at once. A second call stops the interpreter at once: an
// interpreted loop ends at its next instruction. A compiled call that
// ignores its context cannot be stopped: the cell is then reported as
// interrupted and abandoned, and the call finishes in the background.
// Without a running cell Interrupt does nothing.
func (s *Session) Interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.running
	if r == nil {
		return
	}
	r.soft() // always: a hard stop also ends compiled calls that honour the context
	r.interrupts++
	if r.interrupts == 1 && cellctx.Observed() {
		r.timer = time.AfterFunc(s.opts.InterruptGrace, r.hard)
		return
	}
	r.hard()
}

// Execute runs one cell and returns its result. Output and displays go to
// out while the cell runs; everything the cell wrote has been delivered when
// Execute returns. The cell's context is a child of ctx.
func (s *Session) Execute(ctx context.Context, cell Cell, out Output) *Result {
	captureMu.Lock()
	defer captureMu.Unlock()

	soft, cancelSoft := context.WithCancel(ctx)
	hard, cancelHard := context.WithCancel(context.Background())
	defer cancelSoft()
	defer cancelHard()
	r := &running{soft: cancelSoft, hard: cancelHard}

	s.mu.Lock()
	id := s.nextID
	s.nextID = max(1, (s.nextID+1)%maxCellIDs)
	if id < len(s.cells) {
		s.cells[id] = cell
	} else {
		s.cells = append(s.cells, cell)
	}
	s.running = r
	s.cellNumber = cell.Number
	s.frames = nil
	s.at = [2]int{}
	s.goPanic = nil
	late := s.latePanic
	s.latePanic = nil
	s.result = &Result{}
	s.mu.Unlock()

	s.out.mu.Lock()
	s.out.emit = out.Stream
	s.out.mu.Unlock()
	restorePub := display.SetPublisher(func(d display.Data) {
		if out.Display != nil {
			out.Display(d)
		}
	})
	restoreCtx := cellctx.Set(soft)
	for _, c := range s.capture {
		if err := c.begin(); err != nil {
			fmt.Fprintf(os.Stderr, "ragen: %v; cell output goes to the kernel's terminal\n", err)
		}
	}

	for _, msg := range late {
		fmt.Fprintf(os.Stderr, "(after its cell ended, %s)\n", msg)
	}
	err := s.runSafe(hard, id, cell)

	for _, c := range s.capture {
		c.end()
	}
	restoreCtx()
	restorePub()
	s.out.flush(true)
	s.out.mu.Lock()
	s.out.emit = nil
	s.out.mu.Unlock()

	s.mu.Lock()
	if r.timer != nil {
		r.timer.Stop()
	}
	s.running = nil
	res := s.result
	s.result = nil
	goPanic := s.goPanic
	s.mu.Unlock()
	if err == nil && len(goPanic) > 0 {
		err = &Error{Name: "panic", Value: goPanic[0], Traceback: append([]string{"panic: " + goPanic[0]}, goPanic[1:]...)}
	}
	if r.interrupts > 0 {
		e := &Error{Name: "Interrupted", Value: "the cell was interrupted",
			Traceback: []string{"Interrupted: the cell was interrupted; its outputs are partial"}}
		if hard.Err() != nil {
			e.Traceback = append(e.Traceback,
				"(the interpreter was stopped; a compiled call that ignores interrupts may still finish in the background)")
		}
		err = e
	}
	if err != nil {
		res.Data, res.Metadata = nil, nil
		res.Err = s.toError(err)
	}
	return res
}

// runSafe is run with the kernel's own panics turned into an error, so a
// bug of ours never leaves the fds captured or the kernel dead.
func (s *Session) runSafe(ctx context.Context, id int, cell Cell) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Name: "InternalError", Value: fmt.Sprint(r),
				Traceback: append([]string{"InternalError: the kernel failed running this cell (please report it): " + fmt.Sprint(r)},
					strings.Split(string(debug.Stack()), "\n")...)}
		}
	}()
	return s.run(ctx, id, cell)
}

// run plans and executes a cell: parse everything first (a syntax error
// anywhere runs nothing), then imports, then chunks in order, then the
// result expression.
func (s *Session) run(ctx context.Context, id int, cell Cell) error {
	code := cell.Code
	fset := s.in.FileSet()
	p, err := makePlan(fset, id, code, s.guard)
	if err != nil {
		return err
	}

	// Imports: skip those already imported under the same name.
	if p.imports != nil {
		var specs []ast.Spec
		decls := p.imports.Decls[:0]
		for _, d := range p.imports.Decls {
			g := d.(*ast.GenDecl)
			kept := g.Specs[:0]
			for _, sp := range g.Specs {
				sp := sp.(*ast.ImportSpec)
				ipath, _ := strconv.Unquote(sp.Path.Value)
				name := s.pkgName(ipath)
				if sp.Name != nil {
					name = sp.Name.Name
				}
				if prev, ok := s.imported[name]; ok {
					if prev == ipath {
						continue
					}
					pos := fset.Position(sp.Pos())
					return fmt.Errorf("%s:%d:%d: %s already imported as %q", fileName, pos.Line, pos.Column, name, prev)
				}
				kept = append(kept, sp)
				specs = append(specs, sp)
			}
			if g.Specs = kept; len(kept) > 0 {
				decls = append(decls, g)
			}
		}
		p.imports.Decls, p.imports.Imports = decls, nil
		for _, sp := range specs {
			p.imports.Imports = append(p.imports.Imports, sp.(*ast.ImportSpec))
		}
		if len(specs) > 0 {
			if _, err := s.compileRun(ctx, p.imports); err != nil {
				return err
			}
			for _, sp := range specs {
				sp := sp.(*ast.ImportSpec)
				ipath, _ := strconv.Unquote(sp.Path.Value)
				name := s.pkgName(ipath)
				if sp.Name != nil {
					name = sp.Name.Name
				}
				s.mu.Lock()
				s.imported[name] = ipath
				s.mu.Unlock()
			}
		}
	}

	// Check every declaration before running anything.
	newDecls := make([][]*decl, len(p.chunks))
	for i := range p.chunks {
		if c := &p.chunks[i]; c.kind == unitDecl {
			if newDecls[i], err = s.checkDecls(id, code, c); err != nil {
				return err
			}
		}
	}
	for i, c := range p.chunks {
		var n ast.Node
		switch {
		case c.kind == unitStmt:
			n = c.body
		case len(c.file.Decls) > 0:
			n = c.file
		default:
			continue // only declarations run before
		}
		s.setAt(0, 0)
		prog, err := s.compile(n)
		switch {
		case err == nil:
			if _, err := s.execute(ctx, prog); err != nil {
				return err
			}
		case c.kind == unitStmt && typeLoop(err):
			if err := s.runUnits(ctx, id, code, c.units); err != nil {
				return err
			}
		default:
			return err
		}
		s.recordDecls(ctx, newDecls[i])
	}
	if p.expr != nil {
		s.setAt(0, 0) // the result is not marked: yaegi's position is right
		return s.runResult(ctx, p.expr)
	}
	return nil
}

// setAt records the top-level statement being run (see marked), line in
// the shared file; 0 when unknown.
func (s *Session) setAt(line, col int) {
	s.mu.Lock()
	s.at = [2]int{line, col}
	s.mu.Unlock()
}

// pkgName is the name a package is imported under by default.
func (s *Session) pkgName(ipath string) string {
	if n, ok := s.pkgNames[ipath]; ok {
		return n
	}
	return path.Base(ipath)
}

// compileRun compiles an AST parsed with the interpreter's FileSet and runs it.
func (s *Session) compileRun(ctx context.Context, n ast.Node) (reflect.Value, error) {
	prog, err := s.compile(n)
	if err != nil {
		return reflect.Value{}, err
	}
	return s.execute(ctx, prog)
}

// compile compiles an AST. yaegi's compiler sometimes panics on code it
// does not support (e.g. panic(...) used as a value); that is a compile
// error too. Some of those panics are log.Panic("nil type") (a global it
// cannot type, which globals.go then runs another way), which first
// prints the message through the standard logger into the cell's stderr:
// while compiling, that line is dropped (quietCompileLog).
func (s *Session) compile(n ast.Node) (prog *interp.Program, err error) {
	prev := log.Writer()
	log.SetOutput(quietCompileLog{prev})
	defer func() {
		log.SetOutput(prev)
		s.forgetCompiled()
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return s.in.CompileAST(n)
}

// quietCompileLog is the standard logger's output while yaegi compiles:
// it passes every line on but yaegi's own "nil type" (with the logger's
// date prefix or none), a compiler panic whose error the session reports
// or recovers from. The logger writes one line per call.
type quietCompileLog struct{ w io.Writer }

func (q quietCompileLog) Write(p []byte) (int, error) {
	if line := bytes.TrimSuffix(p, []byte("\n")); bytes.Equal(line, []byte("nil type")) || bytes.HasSuffix(line, []byte(" nil type")) {
		return len(p), nil
	}
	return q.w.Write(p)
}

// The result of a cell is its last bare expression E. Which display form E
// has is found by compiling probes (without running them) until one
// compiles: each calls one display method of E, so the method set of an
// interpreted type is seen by the interpreter itself (compiled code cannot
// see methods of interpreted types). The first that compiles is run, so E
// is evaluated once. If none compiles, E has no single value (a call of a
// function with zero or several results) and runs as a plain statement:
// `fmt.Println(x)` shows its output, not `12 <nil>`. The probes are built
// around E's tree as parsed, at E's position (yaegi takes the file a tree
// belongs to, and with it the cell's imports, from its position):
//
//	func() { __ragenV := E; __ragen.BundleMeta(__ragenV.MIMEBundle(), __ragenV.MIMEMetadata()) }()
//	__ragen.Bundle((E).MIMEBundle())
//	__ragen.PNG((E).PNG()), SVG, HTML, Markdown, Text((E).String()), Text((E).Error())
//	__ragen.Value(E)
func resultProbes(e ast.Expr) []ast.Stmt {
	pos := e.Pos()
	ident := func(name string) *ast.Ident { return &ast.Ident{NamePos: pos, Name: name} }
	sel := func(x ast.Expr, name string) ast.Expr { return &ast.SelectorExpr{X: x, Sel: ident(name)} }
	call := func(f ast.Expr, args ...ast.Expr) ast.Expr {
		return &ast.CallExpr{Fun: f, Lparen: pos, Args: args, Rparen: pos}
	}
	helper := func(name string, args ...ast.Expr) ast.Stmt {
		return &ast.ExprStmt{X: call(sel(ident("__ragen"), name), args...)}
	}
	method := func(name string) ast.Expr { return call(sel(&ast.ParenExpr{Lparen: pos, X: e, Rparen: pos}, name)) }
	v := "__ragenV"
	bundleMeta := &ast.FuncLit{
		Type: &ast.FuncType{Func: pos, Params: &ast.FieldList{Opening: pos, Closing: pos}},
		Body: &ast.BlockStmt{Lbrace: pos, Rbrace: pos, List: []ast.Stmt{
			&ast.AssignStmt{Lhs: []ast.Expr{ident(v)}, TokPos: pos, Tok: token.DEFINE, Rhs: []ast.Expr{e}},
			helper("BundleMeta", call(sel(ident(v), "MIMEBundle")), call(sel(ident(v), "MIMEMetadata"))),
		}},
	}
	return []ast.Stmt{
		&ast.ExprStmt{X: call(bundleMeta)},
		helper("Bundle", method("MIMEBundle")),
		helper("PNG", method("PNG")),
		helper("SVG", method("SVG")),
		helper("HTML", method("HTML")),
		helper("Markdown", method("Markdown")),
		helper("Text", method("String")),
		helper("Text", method("Error")),
		helper("Value", e),
	}
}

func (s *Session) runResult(ctx context.Context, e ast.Expr) error {
	block := func(st ast.Stmt) *ast.BlockStmt {
		return &ast.BlockStmt{Lbrace: e.Pos(), List: []ast.Stmt{st}, Rbrace: e.End()}
	}
	for _, probe := range resultProbes(e) {
		prog, err := s.compile(block(probe))
		if err != nil {
			continue
		}
		_, err = s.execute(ctx, prog)
		return err
	}
	_, err := s.compileRun(ctx, block(&ast.ExprStmt{X: e}))
	return err
}

// resultSymbols is the helper package the result probes call. Each helper
// renders its argument and stores it as the cell's result.
func (s *Session) resultSymbols() interp.Exports {
	set := func(data, meta map[string]any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.result != nil {
			s.result.Data, s.result.Metadata = data, meta
		}
	}
	bundle := func(b, m map[string]any) { set(display.Normalize(b, m, "<no text/plain form>")) }
	binary := func(mime string) func([]byte, error) {
		return func(b []byte, err error) {
			if err != nil {
				set(display.Render(err))
				return
			}
			set(display.Render(display.Value{Bundle: map[string]any{mime: b, "text/plain": "<" + mime + ">"}}))
		}
	}
	return interp.Exports{"ragen/internal/cellresult/cellresult": {
		"BundleMeta": reflect.ValueOf(bundle),
		"Bundle":     reflect.ValueOf(func(b map[string]any) { bundle(b, nil) }),
		"PNG":        reflect.ValueOf(binary("image/png")),
		"SVG":        reflect.ValueOf(binary("image/svg+xml")),
		"HTML":       reflect.ValueOf(func(h string) { set(display.Render(display.HTML(h))) }),
		"Markdown":   reflect.ValueOf(func(md string) { set(display.Render(display.Markdown(md))) }),
		"Text":       reflect.ValueOf(func(t string) { set(display.Render(display.Text(t))) }),
		"Value":      reflect.ValueOf(func(v any) { set(display.Render(v)) }),
		"GoPanic":    reflect.ValueOf(s.goroutinePanic),
		"Keep":       reflect.ValueOf(s.keep),
		"MakeSize":   reflect.ValueOf(makeSize),
		"At":         reflect.ValueOf(s.setAt),
	}}
}

// goroutinePanic is called by a guarded goroutine that recovered a panic
// (see goguard.go). During a cell, the cell fails with it; otherwise it is
// logged and told at the start of the next cell.
func (s *Session) goroutinePanic(at string, r any) {
	if rv, ok := r.(reflect.Value); ok && rv.IsValid() && rv.CanInterface() {
		r = rv.Interface()
	}
	msg := fmt.Sprintf("a goroutine started at %s panicked: %v", at, r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running != nil {
		s.goPanic = append(s.goPanic, msg)
		return
	}
	s.latePanic = append(s.latePanic, msg)
	fmt.Fprintln(os.Stderr, "ragen: "+msg)
}

// stderrFilter is yaegi's stderr. yaegi prints one line per interpreted
// frame of a panic ("cell:LINE:COL: panic: main.f(...)"); those become the
// traceback instead of output. Everything else goes to fd 2.
type stderrFilter struct{ s *Session }

var panicLine = regexp.MustCompile(`^(\S+):(\d+):(\d+): panic: (.*)\n?$`)

func (w *stderrFilter) Write(p []byte) (int, error) {
	if m := panicLine.FindSubmatch(p); m != nil {
		w.s.mu.Lock()
		w.s.frames = append(w.s.frames, string(p))
		w.s.mu.Unlock()
		return len(p), nil
	}
	return os.Stderr.Write(p)
}
