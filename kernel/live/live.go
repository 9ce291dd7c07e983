package live

import (
	"context"
	"errors"
	"fmt"
	"html"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/kernel/display"
	"github.com/ragen-go/ragen/plots"
	"gonum.org/v1/plot/vg"
)

// Options tune a View; zero fields take the defaults.
type Options struct {
	// ProgressEvery is the shortest interval between two updates of the
	// progress bar (250 ms: at most 4 per second).
	ProgressEvery time.Duration
	// ChartEvery is the shortest interval between two renders of the chart
	// (2 s); a step slower than that is charted when it ends.
	ChartEvery time.Duration
	// TickEvery is how often the bar is redrawn while nothing else changes
	// it (1 s), so its elapsed time runs during a phase that reports
	// nothing for long, like the warm start's demonstrations and
	// vocabulary (its fine-tuning reports every step).
	TickEvery time.Duration
	// Now is the clock (time.Now); tests replace it.
	Now func() time.Time
}

// chartMetrics are the live chart's metrics: the dashboard draws a panel
// for each one a run recorded (reward with its in-group std band, in-group
// std, success with validation dashed, entropy, gradient norm), and only
// these, so a render stays cheap while training waits for it.
var chartMetrics = []string{
	metrics.RewardMean, metrics.InGroupStd, metrics.SuccessRate, metrics.ValSuccessRate,
	metrics.Entropy, metrics.GradNorm,
}

// phaseNames are how the bar names the trainer's phases.
var phaseNames = map[string]string{
	"warm_start": "warm start", "rollout": "rollout", "train": "train",
	"validate": "validate", "checkpoint": "checkpoint",
}

// liveDPI is the live chart's resolution (the final chart has the plots
// default).
const liveDPI = 96

// maxEventLines bounds the event lines under the bar; later ones are
// counted, not listed.
const maxEventLines = 8

// A View shows one training run live (see the package documentation). Its
// methods may be called from any goroutine.
type View struct {
	publish func(display.Data)
	opts    Options
	bar     string // display ids
	chart   string

	mu         sync.Mutex
	name       string
	total      int // steps the run will take; 0 = not told
	start      time.Time
	trainStart time.Time // when step 1 began: the ETA's time base
	trainFrom  int       // steps done when trainStart was taken
	phase      string
	current    int // step being worked on
	done       int // steps finished
	last       map[string]float64
	warm       train.WarmStartProgress // the warm start's last report; Steps 0: none
	hist       metrics.History         // chartMetrics only
	events     []metrics.Event

	shown             map[string]bool
	lastBar, lastPlot time.Time
	barDirty          bool
	plotDirty         bool
	timer             *time.Timer
	ended             bool
}

// New returns a view that publishes through publish.
func New(publish func(display.Data), opts Options) *View {
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 250 * time.Millisecond
	}
	if opts.ChartEvery <= 0 {
		opts.ChartEvery = 2 * time.Second
	}
	if opts.TickEvery <= 0 {
		opts.TickEvery = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &View{
		publish: publish, opts: opts,
		bar: display.NewHandle().ID(), chart: display.NewHandle().ID(),
		start: opts.Now(), last: map[string]float64{}, shown: map[string]bool{},
	}
}

// Observer returns the function dsl.SetObserver takes: a new View per run.
func Observer(publish func(display.Data), opts Options) func() train.Observer {
	return func() train.Observer { return New(publish, opts) }
}

// IDs are the display ids of the bar and the chart.
func (v *View) IDs() (bar, chart string) { return v.bar, v.chart }

// Begin implements dsl.RunObserver: it shows the bar.
func (v *View) Begin(name string, steps int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.name, v.total = name, steps
	v.start = v.opts.Now()
	v.barDirty = true
	v.flushLocked(true)
}

// Phase implements train.Observer.
func (v *View) Phase(step int, phase string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if step > 0 && v.trainStart.IsZero() {
		v.trainStart, v.trainFrom = v.opts.Now(), step-1
	}
	v.phase, v.current = phase, step
	v.barDirty = true
	v.flushLocked(false)
}

// Step implements train.Observer.
func (v *View) Step(s metrics.Step) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.done = max(v.done, s.Step)
	vals := map[string]float64{}
	for _, m := range chartMetrics {
		if x, ok := s.Values[m]; ok {
			vals[m] = x
			v.last[m] = x
		}
	}
	if len(vals) > 0 {
		v.hist.Steps = append(v.hist.Steps, metrics.Step{Step: s.Step, Values: vals})
		// A line needs two points: with one the chart would be empty boxes.
		v.plotDirty = len(v.hist.Steps) >= 2
	}
	v.barDirty = true
	v.flushLocked(false)
}

// WarmStart implements train.Observer: during the warm start the bar shows
// its fine-tuning's step i/N, loss and ETA.
func (v *View) WarmStart(p train.WarmStartProgress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.warm = p
	v.barDirty = true
	v.flushLocked(false)
}

// Event implements train.Observer: the event becomes a line under the bar
// and a marker on the chart.
func (v *View) Event(e metrics.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.events = append(v.events, e)
	v.hist.Events = append(v.hist.Events, e)
	v.barDirty = true
	v.flushLocked(false)
}

// End implements dsl.RunObserver: the bar shows the outcome, the chart the
// run's full dashboard. Nothing is published after. The summary table is the
// Run's own display: a cell `run := exp.Train(); run` shows it once.
func (v *View) End(r *dsl.Run, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ended {
		return
	}
	v.ended = true
	if v.timer != nil {
		v.timer.Stop()
	}
	if r != nil {
		v.done = max(v.done, r.Steps())
	}
	outcome := v.outcomeLocked(err)
	bundle := map[string]any{
		"text/html":  `<div style="font-family:monospace">` + html.EscapeString(outcome) + "</div>" + v.eventsHTMLLocked(),
		"text/plain": outcome + v.eventsTextLocked(),
	}
	v.emitLocked(v.bar, bundle, nil)
	if r != nil && hasChartable(&r.History) {
		data, meta := display.Render(r.Dashboard())
		v.emitLocked(v.chart, data, meta)
	} else if v.plotDirty {
		v.plotLocked()
	}
}

// outcomeLocked is the bar's last line.
func (v *View) outcomeLocked(err error) string {
	elapsed := v.opts.Now().Sub(v.start)
	switch {
	case err == nil:
		return fmt.Sprintf("%s: done, %d steps in %s", v.label(), v.done, clock(elapsed))
	case errors.Is(err, context.Canceled) && v.done == 0:
		return fmt.Sprintf("%s: interrupted before step 1 (%s), after %s", v.label(), v.phaseName(), clock(elapsed))
	case errors.Is(err, context.Canceled):
		return fmt.Sprintf("%s: interrupted at step %d of %d, after %s; the run holds the metrics so far", v.label(), v.done, v.total, clock(elapsed))
	default:
		return fmt.Sprintf("%s: stopped at step %d of %d: %v", v.label(), v.done, v.total, err)
	}
}

func (v *View) label() string {
	if v.name == "" {
		return "run"
	}
	return v.name
}

func (v *View) phaseName() string {
	if n, ok := phaseNames[v.phase]; ok {
		return n
	}
	if v.phase == "" {
		return "starting"
	}
	return v.phase
}

// flushLocked publishes what is dirty and due now, and arms the timer for
// what is dirty but not yet due. force publishes the bar regardless.
func (v *View) flushLocked(force bool) {
	if v.ended {
		return
	}
	now := v.opts.Now()
	var wait time.Duration
	if v.barDirty {
		if due := v.lastBar.Add(v.opts.ProgressEvery); force || !now.Before(due) {
			v.emitLocked(v.bar, v.barBundleLocked(now), nil)
			v.lastBar, v.barDirty = now, false
		} else {
			wait = due.Sub(now)
		}
	}
	if v.plotDirty {
		if due := v.lastPlot.Add(v.opts.ChartEvery); !now.Before(due) {
			v.plotLocked()
			v.lastPlot = v.opts.Now() // after the render: its time does not count against the interval
		} else if d := due.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	if wait == 0 {
		wait = v.lastBar.Add(v.opts.TickEvery).Sub(now) // the elapsed time's next tick
	}
	if v.timer == nil {
		v.timer = time.AfterFunc(max(wait, time.Millisecond), v.tick)
	}
}

func (v *View) tick() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.timer = nil
	if !v.opts.Now().Before(v.lastBar.Add(v.opts.TickEvery)) {
		v.barDirty = true
	}
	v.flushLocked(false)
}

// plotLocked renders and publishes the live chart.
func (v *View) plotLocked() {
	d := plots.NewDashboard()
	d.Title = v.label()
	h := v.hist
	h.Name = v.label()
	d.Add(&h)
	f, err := d.Figure()
	if err != nil {
		v.emitLocked(v.chart, map[string]any{"text/plain": err.Error()}, nil)
		v.plotDirty = false
		return
	}
	// Smaller and at screen resolution: a quarter of the final chart's
	// pixels, so a render costs tens of milliseconds, not hundreds.
	f.DPI, f.PanelWidth, f.PanelHeight = liveDPI, 3*vg.Inch, 1.9*vg.Inch
	data, meta := display.Render(f)
	v.emitLocked(v.chart, data, meta)
	v.plotDirty = false
}

// emitLocked shows a display the first time and updates it afterwards.
func (v *View) emitLocked(id string, bundle, meta map[string]any) {
	data, md := display.Normalize(bundle, meta, "")
	v.publish(display.Data{Bundle: data, Metadata: md, ID: id, Update: v.shown[id]})
	v.shown[id] = true
}

// barBundleLocked renders the progress bar.
func (v *View) barBundleLocked(now time.Time) map[string]any {
	elapsed := now.Sub(v.start)
	step := fmt.Sprintf("step %d", v.current)
	if v.total > 0 {
		step = fmt.Sprintf("step %d/%d", min(max(v.current, v.done), v.total), v.total)
	}
	parts := []string{step, v.phaseName()}
	if v.phase == "warm_start" && v.warm.Steps > 0 {
		w := v.warm
		parts = append(parts[:1], fmt.Sprintf("warm start %d/%d", w.Step, w.Steps), fmt.Sprintf("loss %.3g", w.Loss), "ETA "+clock(w.ETA()))
	}
	parts = append(parts, "elapsed "+clock(elapsed))
	if eta, ok := v.etaLocked(now); ok {
		parts = append(parts, "ETA "+clock(eta))
	}
	if x, ok := v.last[metrics.RewardMean]; ok {
		parts = append(parts, fmt.Sprintf("reward %.3g", x))
	}
	if x, ok := v.last[metrics.SuccessRate]; ok {
		parts = append(parts, fmt.Sprintf("success %.0f%%", 100*x))
	}
	if x, ok := v.last[metrics.ValSuccessRate]; ok {
		parts = append(parts, fmt.Sprintf("val %.0f%%", 100*x))
	}
	line := strings.Join(parts, " · ")

	frac := 0.0
	if v.total > 0 {
		frac = math.Min(1, float64(v.done)/float64(v.total))
	}
	const width = 30
	filled := int(frac * width)
	text := v.label() + " [" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "] " + line + v.eventsTextLocked()
	h := fmt.Sprintf(`<div style="font-family:monospace"><b>%s</b> <progress value="%d" max="%d" style="width:30%%;vertical-align:middle"></progress> %s</div>`,
		html.EscapeString(v.label()), v.done, max(v.total, 1), html.EscapeString(line))
	return map[string]any{"text/html": h + v.eventsHTMLLocked(), "text/plain": text}
}

// etaLocked extrapolates the time per step since step 1 began (the warm
// start is not a step).
func (v *View) etaLocked(now time.Time) (time.Duration, bool) {
	n := v.done - v.trainFrom
	if v.total == 0 || v.trainStart.IsZero() || n <= 0 {
		return 0, false
	}
	per := now.Sub(v.trainStart) / time.Duration(n)
	return per * time.Duration(max(v.total-v.done, 0)), true
}

func (v *View) eventsTextLocked() string {
	var b strings.Builder
	for i, e := range v.events {
		if i == maxEventLines {
			fmt.Fprintf(&b, "\n  ... and %d more events", len(v.events)-i)
			break
		}
		fmt.Fprintf(&b, "\n  step %d %s: %s", e.Step, e.Kind, e.Message)
	}
	return b.String()
}

func (v *View) eventsHTMLLocked() string {
	var b strings.Builder
	for i, e := range v.events {
		if i == maxEventLines {
			fmt.Fprintf(&b, `<div style="font-family:monospace;color:#b45309">… and %d more events</div>`, len(v.events)-i)
			break
		}
		fmt.Fprintf(&b, `<div style="font-family:monospace;color:#b45309">⚠ step %d %s: %s</div>`,
			e.Step, html.EscapeString(e.Kind), html.EscapeString(e.Message))
	}
	return b.String()
}

// hasChartable reports whether h recorded any of the chart's metrics.
func hasChartable(h *metrics.History) bool {
	for _, s := range h.Steps {
		for _, m := range chartMetrics {
			if _, ok := s.Values[m]; ok {
				return true
			}
		}
	}
	return false
}

// clock formats a duration as 1h02m03s, 2m03s or 4.2s.
func clock(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm%02ds", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	}
}
