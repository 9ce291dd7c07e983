package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	iofs "io/fs"
	"os"
	"os/signal"
	"strings"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/internal/rewrite"
	"github.com/ragen-go/ragen/stdlib"
)

func init() {
	register("script", "run a Go program (package main) through the notebook's interpreter", runScript)
}

// runScript runs `ragen script [-q] file.go [args...]`: a complete Go file,
// package main with func main, interpreted by yaegi with the packages a
// notebook cell may import (see package stdlib), "ragen" among them. The
// program's os.Args are the file and the arguments after it.
//
// Training reports one line per step on standard error (-q: none); values
// given to ragen.Display print their text form. The first Ctrl-C cancels
// the context Train uses, so a run stops at its next safe point; a second
// stops the interpreter at once. The file is run with the comma-ok
// statements yaegi would leave stale rewritten, as a cell's are (see
// commaOKFiles).
func runScript(args []string) error {
	fs := flag.NewFlagSet("ragen script", flag.ContinueOnError)
	quiet := fs.Bool("q", false, "do not report training progress")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: ragen script [-q] file.go [args...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return errors.New("no file to run")
	}
	file := fs.Arg(0)

	// First interrupt: cancel training. Second: stop the interpreter.
	trainCtx, cancelTrain := context.WithCancel(context.Background())
	evalCtx, cancelEval := context.WithCancel(context.Background())
	defer cancelTrain()
	defer cancelEval()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	go func() {
		for n := 0; ; n++ {
			if _, ok := <-sig; !ok {
				return
			}
			if n == 0 {
				fmt.Fprintln(os.Stderr, "\ninterrupted: stopping at the next safe point (Ctrl-C again to stop now)")
				cancelTrain()
			} else {
				cancelEval()
			}
		}
	}()
	dsl.SetContext(func() context.Context { return trainCtx })
	if !*quiet {
		dsl.SetObserver(func() train.Observer { return &stepPrinter{} })
	}

	i, err := stdlib.NewInterpreter(stdlib.Options{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Args:   fs.Args(),
		Source: commaOKFiles{},
	})
	if err != nil {
		return err
	}
	_, err = i.EvalPathWithContext(evalCtx, file)
	if err != nil && trainCtx.Err() != nil {
		return fmt.Errorf("interrupted: %v", err)
	}
	return err
}

// commaOKFiles are the OS's files as the interpreter reads Go source (the
// script, and any package it imports by a relative path): a Go file comes
// with the comma-ok statements yaegi would leave stale rewritten
// (rewrite.CommaOK), as a notebook cell's are. The /*line*/ comments of the
// rewrite keep errors at the file's own lines and columns.
type commaOKFiles struct{}

// Open opens a file or folder as os.Open does: yaegi stats and lists
// through it.
func (commaOKFiles) Open(name string) (iofs.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err // a nil interface, not a nil *os.File in one
	}
	return f, nil
}

// ReadFile reads a file, a Go file rewritten; iofs.ReadFile, with which
// yaegi reads source, calls it.
func (commaOKFiles) ReadFile(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil || !strings.HasSuffix(name, ".go") {
		return b, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, b, parser.SkipObjectResolution)
	if err != nil {
		return b, nil // yaegi's own parse reports the error
	}
	src := string(b)
	if w := rewrite.CommaOK(fset, f, src, nil); w != src {
		return []byte(w), nil
	}
	return b, nil
}

// stepPrinter reports each training step on one line of standard error,
// and the warm start's progress as ragen train does.
type stepPrinter struct{ warm warmStartLines }

func (p *stepPrinter) WarmStart(w train.WarmStartProgress) { p.warm.print(os.Stderr, w) }

func (*stepPrinter) Phase(step int, phase string) {
	if phase == "warm_start" {
		fmt.Fprintln(os.Stderr, "warm start (cached after the first run)...")
	}
}

func (*stepPrinter) Step(s metrics.Step) {
	line := fmt.Sprintf("step %3d", s.Step)
	for _, m := range []struct{ label, name string }{
		{"reward", metrics.RewardMean}, {"success", metrics.SuccessRate},
		{"val", metrics.ValSuccessRate}, {"entropy", metrics.Entropy},
	} {
		if v, ok := s.Values[m.name]; ok {
			line += fmt.Sprintf("  %s %.3f", m.label, v)
		}
	}
	fmt.Fprintln(os.Stderr, line)
}

func (*stepPrinter) Event(e metrics.Event) {
	fmt.Fprintf(os.Stderr, "  ! step %d %s: %s\n", e.Step, e.Kind, e.Message)
}
