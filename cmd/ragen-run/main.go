// Command ragen-run executes Go notebooks of the ragen kernel headless, for
// CI and for sharing: every code cell in order in the same in-process
// session the Jupyter kernel uses, outputs filled in as Jupyter would.
//
//	ragen-run [flags] notebook.ipynb... [flags]
//
//	ragen-run -p steps=5 notebooks/00-quickstart.ipynb -o out/quickstart.ipynb
//	ragen-run --check --rtol 1e-6 --junit results.xml notebooks/*.ipynb
//	ragen-run --inplace --html report.html analysis.ipynb
//	ragen-run --ci --check notebooks/*.ipynb
//
// --ci runs each notebook with the parameters it declares for CI, in its
// metadata: {"ragen": {"ci_parameters": ["steps=2", "seeds=1"]}}. With
// --check, cells whose outputs depend on those parameters (numbers of a
// shortened run) are tagged nocheck; the rest must reproduce exactly.
//
// Flags may come before or after the notebooks. With one notebook, -o
// names the output (its folder is made if missing, as for --html); with several use --inplace or --output-dir. Without
// any of them the notebooks are executed (and checked with --check) but
// not written. Every write is atomic: the notebook goes to a temporary
// file that is renamed over the target, so an input given to --inplace
// holds either the old notebook or the new one, never a part.
//
// RAGEN_EXECUTOR sets where sweeps and seeds train when a cell does not
// set Experiment.Executor: "local" (the default) or
// "slurm:partition=debug,cpus=2,..." (see dsl.ParseExecutor), each run a
// task of one Slurm job array running `ragen-run run-spec FILE`, which is
// not for people to type.
//
// Exit status: 0 success; 1 a cell failed (the cell and its error are
// printed, the partial notebook is still written) or --check found a
// difference; 2 a usage error, an unreadable notebook (not JSON, not
// nbformat 4, another kernel) or a bad -p parameter, before any cell runs;
// 130 interrupted by Ctrl-C or SIGTERM: the running cell is interrupted
// and the partial notebook written (a second Ctrl-C quits at once without
// writing; the input is untouched either way).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/internal/atomicfile"
	"github.com/ragen-go/ragen/notebook"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func main() { os.Exit(run(os.Args[1:])) }

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type config struct {
	output, outputDir, html, junit string
	inplace, allowErrors           bool
	check, quiet, ci               bool
	rtol                           float64
	timeout                        time.Duration
	params                         listFlag
	notebooks                      []string
}

func parseArgs(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("ragen-run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.output, "o", "", "write the executed notebook to `FILE` (one notebook only)")
	fs.BoolVar(&c.inplace, "inplace", false, "write each executed notebook over its input")
	fs.StringVar(&c.outputDir, "output-dir", "", "write each executed notebook to `DIR` under its own name")
	fs.Var(&c.params, "p", "set a parameter of the cell tagged parameters: `name=value` (Go literal: int, float, bool, string, duration like 5s); repeatable")
	fs.DurationVar(&c.timeout, "timeout", 0, "interrupt a cell running longer than `D` and fail it with a TimeoutError (0: no limit)")
	fs.BoolVar(&c.allowErrors, "allow-errors", false, "keep executing after a failed cell (the error stays in its outputs)")
	fs.BoolVar(&c.check, "check", false, "compare fresh outputs with those stored in the notebook; print a diff and exit 1 on a difference")
	fs.BoolVar(&c.ci, "ci", false, "first apply each notebook's CI parameters (its metadata ragen.ci_parameters); -p values override them")
	fs.Float64Var(&c.rtol, "rtol", 0, "with --check, relative tolerance for numbers in text outputs")
	fs.StringVar(&c.html, "html", "", "write a self-contained HTML report of the executed notebook to `FILE` (one notebook only)")
	fs.StringVar(&c.junit, "junit", "", "write JUnit XML with one test case per code cell to `FILE`")
	fs.BoolVar(&c.quiet, "quiet", false, "print only failures, differences and the summary (for CI logs)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ragen-run [flags] notebook.ipynb...\n\nExecutes Go notebooks of the ragen kernel headless; see `go doc ./cmd/ragen-run` for exit statuses.\n\nflags:")
		fs.PrintDefaults()
	}
	// Flags and notebooks may be interleaved.
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		c.notebooks = append(c.notebooks, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch {
	case len(c.notebooks) == 0:
		return nil, errors.New("no notebook given")
	case c.output != "" && (c.inplace || c.outputDir != ""), c.inplace && c.outputDir != "":
		return nil, errors.New("use one of -o, --inplace and --output-dir")
	case c.output != "" && len(c.notebooks) > 1:
		return nil, errors.New("-o takes one notebook; with several use --inplace or --output-dir DIR")
	case c.html != "" && len(c.notebooks) > 1:
		return nil, errors.New("--html takes one notebook")
	case c.rtol < 0:
		return nil, fmt.Errorf("--rtol must be >= 0 (got %g)", c.rtol)
	case c.timeout < 0:
		return nil, fmt.Errorf("--timeout must be >= 0 (got %s)", c.timeout)
	}
	return c, nil
}

// job is one notebook to run.
type job struct {
	path   string
	nb     *notebook.Notebook
	stored *notebook.Notebook // as read, for --check
	out    string             // where to write; "" for nowhere
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "run-spec" {
		return runSpec(args[1:])
	}
	// The session captures fds 1 and 2 while a cell runs; the runner's own
	// messages go to a copy of fd 2 made before any cell runs.
	stderr := stderrCopy()
	ex, err := dsl.ParseExecutor(os.Getenv("RAGEN_EXECUTOR"))
	if err != nil {
		fmt.Fprintf(stderr, "ragen-run: RAGEN_EXECUTOR: %v\n", err)
		return exitUsage
	}
	dsl.SetExecutor(ex)
	c, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "ragen-run: %v\n", err)
		return exitUsage
	}

	// Read and prepare every notebook before running any: a bad input or
	// parameter fails fast.
	var jobs []*job
	for _, p := range c.notebooks {
		j, err := prepare(c, p)
		if err != nil {
			fmt.Fprintf(stderr, "ragen-run: %v\n", err)
			return exitUsage
		}
		jobs = append(jobs, j)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; !ok {
			return
		}
		fmt.Fprintln(stderr, "\nragen-run: interrupted: stopping the running cell, then writing the partial notebook (Ctrl-C again to quit without writing)")
		cancel()
		if _, ok := <-sig; ok {
			fmt.Fprintln(stderr, "ragen-run: quit without writing the notebook")
			os.Exit(exitInterrupted)
		}
	}()

	var progress io.Writer
	if !c.quiet {
		progress = stderr
	}
	status := exitOK
	var results []notebook.Result
	for _, j := range jobs {
		if progress != nil && len(jobs) > 1 {
			fmt.Fprintf(progress, "== %s\n", j.path)
		}
		rep, err := notebook.Run(ctx, j.nb, notebook.Options{Timeout: c.timeout, AllowErrors: c.allowErrors, Progress: progress})
		if err != nil {
			fmt.Fprintf(stderr, "ragen-run: %s: %v\n", j.path, err)
			return exitFailed
		}
		results = append(results, notebook.Result{Name: j.path, Notebook: j.nb, Report: rep})
		if f := rep.Failed; f != nil {
			fmt.Fprintf(stderr, "ragen-run: %s: cell %d [%s] failed: %s\n", j.path, f.Index+1, f.ID, f.Err.Error())
			for _, l := range f.Err.Traceback {
				fmt.Fprintf(stderr, "    %s\n", l)
			}
			status = exitFailed
		}
		if c.check && !rep.Interrupted {
			ms := notebook.Check(j.stored, j.nb, c.rtol)
			for _, m := range ms {
				fmt.Fprintf(stderr, "ragen-run: %s: cell %d [%s]: outputs differ from the stored ones\n%s", j.path, m.Index+1, m.ID, m.Diff)
				status = exitFailed
			}
			if len(ms) == 0 && progress != nil {
				fmt.Fprintf(progress, "%s: outputs match the stored ones\n", j.path)
			}
		}
		if err := write(c, j); err != nil {
			fmt.Fprintf(stderr, "ragen-run: %v\n", err)
			status = exitFailed
		}
		if rep.Interrupted {
			status = exitInterrupted
			break
		}
	}
	if c.junit != "" {
		b, err := notebook.JUnit(results)
		if err == nil {
			err = atomicfile.WriteFile(c.junit, b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "ragen-run: --junit: %v\n", err)
			status = max(status, exitFailed)
		}
	}
	if len(jobs) > 1 || !c.quiet {
		summary(stderr, results)
	}
	return status
}

// prepare reads a notebook, checks its kernel and injects the parameters.
func prepare(c *config, path string) (*job, error) {
	nb, err := notebook.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := nb.CheckKernel(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	stored, err := notebook.ReadFile(path)
	if err != nil {
		return nil, err
	}
	params := c.params
	if c.ci {
		ci, err := nb.CIParams()
		if err != nil {
			return nil, fmt.Errorf("%s: --ci: %w", path, err)
		}
		params = append(ci, params...)
	}
	if err := nb.InjectParams(params); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	j := &job{path: path, nb: nb, stored: stored}
	switch {
	case c.output != "":
		j.out = c.output
	case c.inplace:
		j.out = path
	case c.outputDir != "":
		if err := os.MkdirAll(c.outputDir, 0o755); err != nil {
			return nil, err
		}
		j.out = filepath.Join(c.outputDir, filepath.Base(path))
	}
	return j, nil
}

// write writes the executed notebook and the HTML report, making their
// folders as needed (the README's out/quickstart.ipynb on a fresh checkout).
func write(c *config, j *job) error {
	for _, f := range []string{j.out, c.html} {
		if f != "" {
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				return fmt.Errorf("cannot write %s: %w", f, err)
			}
		}
	}
	if j.out != "" {
		if err := j.nb.WriteFile(j.out); err != nil {
			return fmt.Errorf("cannot write %s: %w", j.out, err)
		}
	}
	if c.html != "" {
		b, err := notebook.HTML(j.nb, filepath.Base(j.path))
		if err == nil {
			err = atomicfile.WriteFile(c.html, b)
		}
		if err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	return nil
}

// summary prints one line per notebook: code cells executed, failures
// (expected ones excluded) and wall time.
func summary(w io.Writer, results []notebook.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "notebook\tcells\tfailed\ttime")
	for _, r := range results {
		n := 0
		for _, c := range r.Report.Cells {
			if !c.Skipped {
				n++
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.Name, n, r.Report.Errors(), r.Report.Duration.Round(10*time.Millisecond))
	}
	tw.Flush()
}

// runSpec runs `ragen-run run-spec FILE`: a Slurm task of a sweep started
// from a notebook ragen-run executes (dsl.Slurm runs this same binary),
// training one run spec into the run cache. SIGTERM (scancel, the time
// limit) and Ctrl-C stop it at the next safe point, uncached.
func runSpec(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: ragen-run run-spec FILE (a Slurm task of a sweep runs it)")
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := dsl.TrainSpecFile(ctx, args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ragen-run run-spec: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(os.Stderr, "ragen-run run-spec: %s: %d steps in %s\n", r.Name, r.Steps(), r.Dir)
	return exitOK
}
