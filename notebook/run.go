package notebook

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/kernel/cellctx"
	"github.com/ragen-go/ragen/kernel/display"
	"github.com/ragen-go/ragen/kernel/session"
)

// Options configure Run. The zero value runs every cell without a time
// limit, stops at the first error and reports nothing.
type Options struct {
	// Timeout limits each cell; a cell still running then is interrupted
	// and fails with a TimeoutError output. 0: no limit.
	Timeout time.Duration
	// AllowErrors keeps executing after a failed cell (the error stays in
	// its outputs); Report.Failed is then nil.
	AllowErrors bool
	// Progress receives "cell i/N" lines and one line per training step.
	// It must not be os.Stderr itself while cells run: the session captures
	// fd 2 as cell output (pass a duplicate of it). nil: quiet.
	Progress io.Writer
}

// A CellReport is what happened to one code cell.
type CellReport struct {
	Index    int    // position in Notebook.Cells
	ID       string // the cell's id
	Number   int    // execution count; 0 when not executed
	Duration time.Duration
	Err      *session.Error // the cell's error, nil on success
	TimedOut bool
	Skipped  bool // tagged skip-execution, or not reached
	Expected bool // failed as its raises-exception tag says it would
}

// A Report is the outcome of Run.
type Report struct {
	Cells       []*CellReport // every code cell, in order
	Duration    time.Duration
	Failed      *CellReport // the failure that stopped the run; nil if none
	Interrupted bool        // ctx was cancelled (Ctrl-C) and the run stopped
}

// Errors counts the cells that failed, expected failures excluded.
func (r *Report) Errors() int {
	n := 0
	for _, c := range r.Cells {
		if c.Err != nil && !c.Expected {
			n++
		}
	}
	return n
}

// Run executes the code cells of nb in order in a new session, the way the
// Jupyter kernel runs them, and fills in their outputs, execution counts and
// timing metadata (metadata.execution, as nbclient records it) in place.
// Earlier outputs are cleared first, so a partial notebook never mixes
// runs. A failed cell stops the run unless opts.AllowErrors or the cell is
// tagged raises-exception; cancelling ctx interrupts the running cell and
// stops. The error is about the session itself; cell failures are in the
// Report.
func Run(ctx context.Context, nb *Notebook, opts Options) (*Report, error) {
	s, err := session.New(session.Options{Args: []string{"ragen-run"}})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	r := &runner{nb: nb, opts: opts, sess: s, displays: map[string][]*Output{}}
	dsl.SetContext(cellctx.Context)
	dsl.SetDisplay(r.dslDisplay)
	if opts.Progress != nil {
		dsl.SetObserver(func() train.Observer { return &stepPrinter{w: opts.Progress} })
	}
	defer func() {
		dsl.SetContext(nil)
		dsl.SetDisplay(nil)
		dsl.SetObserver(nil)
	}()
	return r.run(ctx), nil
}

type runner struct {
	nb   *Notebook
	opts Options
	sess *session.Session

	mu       sync.Mutex
	cur      *Cell                // the running cell
	displays map[string][]*Output // display id -> outputs showing it
	dslIDs   map[string]bool      // display ids the DSL has shown
}

func (r *runner) run(ctx context.Context) *Report {
	start := time.Now()
	rep := &Report{}
	var code []*Cell
	for i, c := range r.nb.Cells {
		if c.Type != "code" {
			continue
		}
		c.Outputs, c.ExecutionCount = nil, nil
		if c.Metadata == nil {
			c.Metadata = map[string]any{}
		}
		delete(c.Metadata, "execution")
		code = append(code, c)
		rep.Cells = append(rep.Cells, &CellReport{Index: i, ID: c.ID, Skipped: true})
	}
	count := 0
	for k, c := range code {
		cr := rep.Cells[k]
		if c.HasTag(TagSkipExecution) {
			r.progress("cell %d/%d [%s] skipped (skip-execution)\n", k+1, len(code), c.ID)
			continue
		}
		if ctx.Err() != nil {
			rep.Interrupted = true
			break
		}
		count++
		r.progress("cell %d/%d [%s] %s\n", k+1, len(code), c.ID, firstLine(c.Source))
		r.execute(ctx, c, cr, count)
		switch {
		case cr.Err == nil:
		case cr.Err.Name == "Interrupted" && ctx.Err() != nil:
			rep.Interrupted = true
		case c.HasTag(TagRaisesException):
			cr.Expected = true
		}
		r.progress("  %s\n", cellStatus(cr))
		if rep.Interrupted {
			break
		}
		if cr.Err != nil && !cr.Expected && !r.opts.AllowErrors {
			rep.Failed = cr
			break
		}
	}
	rep.Duration = time.Since(start)
	return rep
}

// execute runs one cell with its timeout and fills in its outputs.
func (r *runner) execute(ctx context.Context, c *Cell, cr *CellReport, n int) {
	r.mu.Lock()
	r.cur = c
	r.mu.Unlock()
	var timeout atomic.Bool
	done := make(chan struct{})
	if r.opts.Timeout > 0 {
		t := time.AfterFunc(r.opts.Timeout, func() {
			timeout.Store(true)
			r.sess.Interrupt()
		})
		defer t.Stop()
	}
	go func() {
		select {
		case <-ctx.Done():
			r.sess.Interrupt()
		case <-done:
		}
	}()
	begin := time.Now()
	res := r.sess.Execute(context.Background(), session.Cell{Code: c.Source, Number: n}, session.Output{
		Stream:  r.stream,
		Display: r.display,
	})
	end := time.Now()
	close(done)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = nil
	cr.Skipped, cr.Number, cr.Duration = false, n, end.Sub(begin)
	c.ExecutionCount = &n
	c.Metadata["execution"] = map[string]any{
		"iopub.status.busy":   timestamp(begin),
		"iopub.execute_input": timestamp(begin),
		"shell.execute_reply": timestamp(end),
		"iopub.status.idle":   timestamp(end),
	}
	if res.Err != nil {
		e := res.Err
		if timeout.Load() && e.Name == "Interrupted" {
			cr.TimedOut = true
			tb := []string{fmt.Sprintf("TimeoutError: the cell did not finish within %s (--timeout) and was interrupted; its outputs are partial", r.opts.Timeout)}
			if len(e.Traceback) > 1 {
				tb = append(tb, e.Traceback[1:]...)
			}
			e = &session.Error{Name: "TimeoutError", Value: fmt.Sprintf("cell execution timed out after %s", r.opts.Timeout), Traceback: tb}
		}
		cr.Err = e
		tb := e.Traceback
		if tb == nil {
			tb = []string{}
		}
		c.Outputs = append(c.Outputs, &Output{Type: "error", EName: e.Name, EValue: e.Value, Traceback: tb})
		return
	}
	if len(res.Data) > 0 {
		meta := res.Metadata
		if meta == nil {
			meta = map[string]any{}
		}
		c.Outputs = append(c.Outputs, &Output{Type: "execute_result", Data: res.Data, Metadata: meta, ExecutionCount: &n})
	}
}

// timestamp formats t as nbclient records timing: UTC ISO 8601 with
// microseconds and a Z.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// stream appends text to the running cell's last output when that is the
// same stream, as Jupyter frontends and nbclient do.
func (r *runner) stream(name, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cur
	if c == nil {
		return
	}
	if k := len(c.Outputs); k > 0 && c.Outputs[k-1].Type == "stream" && c.Outputs[k-1].Name == name {
		c.Outputs[k-1].Text = carriageReturns(c.Outputs[k-1].Text + text)
		return
	}
	c.Outputs = append(c.Outputs, &Output{Type: "stream", Name: name, Text: carriageReturns(text)})
}

// overwritten is a line's text before a carriage return that more text
// follows: a progress bar redrawing itself.
var overwritten = regexp.MustCompile(`[^\n]*\r([^\n\r])`)

// carriageReturns keeps what a terminal would show of each line, as
// nbclient does when it coalesces streams: text before a "\r" on the same
// line is dropped. A trailing "\r" stays until more text arrives.
func carriageReturns(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return overwritten.ReplaceAllString(s, "$1")
}

// display adds a display_data output to the running cell; an update
// replaces the data of every earlier output with the same display id,
// wherever it is in the notebook, as the frontends do with
// update_display_data (an id never shown is ignored).
func (r *runner) display(d display.Data) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.Update {
		for _, o := range r.displays[d.ID] {
			o.Data, o.Metadata = d.Bundle, d.Metadata
		}
		return
	}
	if r.cur == nil {
		return
	}
	o := &Output{Type: "display_data", Data: d.Bundle, Metadata: d.Metadata, displayID: d.ID}
	if o.Metadata == nil {
		o.Metadata = map[string]any{}
	}
	r.cur.Outputs = append(r.cur.Outputs, o)
	if d.ID != "" {
		r.displays[d.ID] = append(r.displays[d.ID], o)
	}
}

// dslDisplay is the DSL's display hook: a bundle, and a display id whose
// first use shows it and later uses update it.
func (r *runner) dslDisplay(bundle map[string]any, id string) {
	data, meta := display.Normalize(bundle, nil, "")
	d := display.Data{Bundle: data, Metadata: meta, ID: id}
	if id != "" {
		r.mu.Lock()
		if r.dslIDs == nil {
			r.dslIDs = map[string]bool{}
		}
		d.Update = r.dslIDs[id]
		r.dslIDs[id] = true
		r.mu.Unlock()
	}
	r.display(d)
}

func (r *runner) progress(format string, args ...any) {
	if r.opts.Progress != nil {
		fmt.Fprintf(r.opts.Progress, format, args...)
	}
}

func firstLine(src string) string {
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 60 {
				l = l[:57] + "..."
			}
			return l
		}
	}
	return "(empty)"
}

func cellStatus(cr *CellReport) string {
	d := cr.Duration.Round(time.Millisecond)
	switch {
	case cr.Err == nil:
		return fmt.Sprintf("ok %s", d)
	case cr.Expected:
		return fmt.Sprintf("failed as expected (raises-exception) %s: %s", d, cr.Err.Error())
	}
	return fmt.Sprintf("FAILED %s: %s", d, cr.Err.Error())
}

// stepPrinter reports a training run's progress, one line per step, and
// during the warm start's fine-tuning its first and last step and one
// every warmStartEvery in between.
type stepPrinter struct {
	w         io.Writer
	warmShown time.Duration // Elapsed of the last warm-start line
}

// warmStartEvery is the longest the warm start goes without a line.
const warmStartEvery = 10 * time.Second

func (p *stepPrinter) WarmStart(w train.WarmStartProgress) {
	if w.Step == 1 || w.Step == w.Steps || w.Elapsed-p.warmShown >= warmStartEvery {
		p.warmShown = w.Elapsed
		fmt.Fprintln(p.w, "  "+w.String())
	}
}

func (p *stepPrinter) Phase(step int, phase string) {
	if phase == "warm_start" {
		fmt.Fprintln(p.w, "  warm start (cached after the first run)...")
	}
}

func (p *stepPrinter) Step(s metrics.Step) {
	line := fmt.Sprintf("  step %3d", s.Step)
	for _, m := range []struct{ label, name string }{
		{"reward", metrics.RewardMean}, {"success", metrics.SuccessRate},
		{"val", metrics.ValSuccessRate}, {"entropy", metrics.Entropy},
	} {
		if v, ok := s.Values[m.name]; ok {
			line += fmt.Sprintf("  %s %.3f", m.label, v)
		}
	}
	fmt.Fprintln(p.w, line)
}

func (p *stepPrinter) Event(e metrics.Event) {
	fmt.Fprintf(p.w, "  ! step %d %s: %s\n", e.Step, e.Kind, e.Message)
}
