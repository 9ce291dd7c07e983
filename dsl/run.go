package dsl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/internal/atomicfile"
	"github.com/ragen-go/ragen/plots"
)

// cacheVersion changes when the layout of run.json or the meaning of a
// cached run changes, so old entries are not trusted.
const cacheVersion = 1

// Run is a finished (or interrupted) training run: its metrics, events and
// files. A cell that ends with a Run shows its summary.
type Run struct {
	// Name labels the run in plots and tables.
	Name string `json:"name"`
	// Key is the hash of the full configuration the run is cached under.
	Key string `json:"key"`
	// Dir is the run directory: config.json, metrics.jsonl, events.jsonl,
	// checkpoints/ and run.json (the cached result).
	Dir string `json:"-"`
	// Cached: loaded from the cache, not trained now.
	Cached bool `json:"-"`
	// History holds every step's metrics and the events.
	History metrics.History `json:"history"`
	// RewardErrors counts the reward expression's run-time errors replaced
	// by 0 (RewardErrors: UseZero); RewardErrorSamples keeps the first few.
	RewardErrors       int      `json:"reward_errors"`
	RewardErrorSamples []string `json:"reward_error_samples,omitempty"`
	// Interrupted: training was stopped (a kernel interrupt, Ctrl-C) after
	// the steps in History; the run is not cached.
	Interrupted bool `json:"-"`
}

// Train runs the experiment, or loads its result from the cache, with the
// context set by SetContext. An interrupt stops training at the next safe
// point and returns the run so far, marked Interrupted, so that
// `run := exp.Train()` keeps the metrics of the steps done. Any other error
// panics (see TrainContext to handle errors yourself).
func (e Experiment) Train() *Run {
	r, err := e.TrainContext(currentContext())
	if err != nil && r != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		r.Interrupted = true
		return r
	}
	if err != nil {
		panic(err)
	}
	return r
}

// TrainContext runs the experiment, or loads its cached result unless
// Fresh. Cancelling ctx stops training at the next safe point: the run so
// far is returned, marked Interrupted, with ctx's error, and is not cached.
// The context set by SetContext (the kernel's interrupt) stops it too, so
// TrainContext(context.Background()) in a cell can still be interrupted.
// It trains in this process whatever Executor says (Sweep and Seeds use
// the Executor).
func (e Experiment) TrainContext(ctx context.Context) (run *Run, err error) {
	s, err := e.Spec()
	if err != nil {
		return nil, err
	}
	return s.train(ctx)
}

// withSession returns ctx cancelled also when the context set by
// SetContext is, and the function that releases it.
func withSession(ctx context.Context) (context.Context, func()) {
	sc := currentContext()
	if sc == ctx || sc.Done() == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(sc, func() { cancel(context.Cause(sc)) })
	return ctx, func() { unhook(); cancel(nil) }
}

// hooks are the trainer callbacks of one run: the reward expression with
// its error policy, and the filter expression's group scores.
type hooks struct {
	spec *RunSpec
	run  *Run
	mu   sync.Mutex
}

func (h *hooks) reward(t *rollout.Trajectory, group []*rollout.Trajectory) (float64, error) {
	rec := Record(t, group)
	v, err := h.spec.reward.Eval(rec)
	if err == nil {
		return v, nil
	}
	err = fmt.Errorf("reward expression on trajectory (success=%v, turns=%d, actions=%v, reward=%g): %w",
		rec.Success, rec.NumTurns, rec.Actions, rec.Reward, err)
	if h.spec.RewardErrors != UseZero {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.run.RewardErrors++
	if len(h.run.RewardErrorSamples) < 5 {
		h.run.RewardErrorSamples = append(h.run.RewardErrorSamples, err.Error())
	}
	return 0, nil
}

// scorer scores a group with the filter expression.
func (h *hooks) scorer(f *FilterRule) func(group []*rollout.Trajectory, returns []float64) (float64, error) {
	return func(group []*rollout.Trajectory, returns []float64) (float64, error) {
		var succ float64
		for _, t := range group {
			if t.Success {
				succ++
			}
		}
		v, err := f.score(returns, succ/float64(len(group)))
		if err != nil {
			return 0, fmt.Errorf("filter expression on group (rewards %v): %w", returns, err)
		}
		return v, nil
	}
}

// warmStartVersion is train.WarmStartVersion for a run that warm-starts,
// else 0: the run's config names the warm start's settings, not the expert
// that wrote its demonstrations.
func warmStartVersion(cfg *train.Config) int {
	if cfg.WarmStart.Steps > 0 {
		return train.WarmStartVersion
	}
	return 0
}

// cacheRoot is $RAGEN_CACHE, else ragen/ in the user cache directory.
func cacheRoot() (string, error) {
	if dir := os.Getenv("RAGEN_CACHE"); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("run cache: %w (set RAGEN_CACHE)", err)
	}
	return filepath.Join(base, "ragen"), nil
}

type runFile struct {
	Version int `json:"version"`
	*Run
}

func loadRun(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return nil, err
	}
	f := runFile{Run: &Run{}}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if f.Version != cacheVersion {
		return nil, fmt.Errorf("run cache version %d, want %d", f.Version, cacheVersion)
	}
	return f.Run, nil
}

// saveRun writes run.json last, through a rename, so a run directory
// holds it only once the run is complete.
func saveRun(r *Run) error {
	b, err := json.Marshal(runFile{cacheVersion, r})
	if err != nil {
		return fmt.Errorf("run cache: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(r.Dir, "run.json"), b); err != nil {
		return fmt.Errorf("run cache: %w", err)
	}
	return nil
}

// Series is one metric of a run over its steps. A cell that ends with one
// shows its line chart.
type Series struct {
	Name   string
	Steps  []int
	Values []float64

	run *metrics.History
}

// Metric returns a metric's series ("actor/entropy", see engine/metrics).
// A metric the run never recorded has no points.
func (r *Run) Metric(name string) Series {
	steps, values := r.History.Series(name)
	return Series{Name: name, Steps: steps, Values: values, run: &r.History}
}

// Len is the number of points.
func (s Series) Len() int { return len(s.Values) }

// Last is the last value; NaN without points.
func (s Series) Last() float64 {
	if len(s.Values) == 0 {
		return math.NaN()
	}
	return s.Values[len(s.Values)-1]
}

// First is the first value; NaN without points.
func (s Series) First() float64 {
	if len(s.Values) == 0 {
		return math.NaN()
	}
	return s.Values[0]
}

// Max is the largest value; NaN without points.
func (s Series) Max() float64 {
	if len(s.Values) == 0 {
		return math.NaN()
	}
	return slices.Max(s.Values)
}

// String lists the points: "actor/entropy: 1:0.52 2:0.50".
func (s Series) String() string {
	if len(s.Values) == 0 {
		return s.Name + ": no points"
	}
	var b strings.Builder
	b.WriteString(s.Name + ":")
	for i, v := range s.Values {
		fmt.Fprintf(&b, " %d:%.4g", s.Steps[i], v)
	}
	return b.String()
}

// MIMEBundle is the series' line chart.
func (s Series) MIMEBundle() map[string]any {
	c := plots.NewLineChart(s.Name)
	c.Add(s.run)
	bundle := c.MIMEBundle()
	bundle["text/plain"] = s.String()
	return bundle
}

// Events returns what the trainer and the collapse monitor reported.
func (r *Run) Events() []metrics.Event { return r.History.Events }

// Steps is the number of training steps recorded.
func (r *Run) Steps() int {
	if r == nil {
		return 0
	}
	n := 0
	for _, s := range r.History.Steps {
		n = max(n, s.Step)
	}
	return n
}

// Checkpoints lists the run's checkpoint directories, oldest first.
func (r *Run) Checkpoints() []string {
	dirs, _ := filepath.Glob(filepath.Join(r.Dir, "checkpoints", "step-*"))
	sort.Strings(dirs)
	return dirs
}

// Dashboard is the run's overview chart (plots.Dashboard).
func (r *Run) Dashboard() *plots.Dashboard {
	d := plots.NewDashboard()
	d.Title = r.Name
	d.Add(&r.History)
	return d
}

// summaryMetrics are the rows of a run's summary, when recorded.
var summaryMetrics = []string{
	metrics.RewardMean, metrics.SuccessRate, metrics.ValSuccessRate, metrics.ValRewardMean,
	metrics.Entropy, metrics.ResponseTokens, metrics.FilterKeepRatio, metrics.InGroupStd,
}

// Summary is a table of the run's main metrics: first, last, min and max.
// A nil Run (a Train that failed before it made one) has an empty table
// that says so.
func (r *Run) Summary() *Table {
	if r == nil {
		return &Table{Title: "no run (nil *Run: training failed before it started)", Columns: []string{"metric", "first", "last", "min", "max"}}
	}
	t := &Table{Title: r.title(), Columns: []string{"metric", "first", "last", "min", "max"}}
	for _, name := range summaryMetrics {
		_, vs := r.History.Series(name)
		if len(vs) == 0 {
			continue
		}
		lo, hi := vs[0], vs[0]
		for _, v := range vs {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		t.Rows = append(t.Rows, []string{name, sig3(vs[0]), sig3(vs[len(vs)-1]), sig3(lo), sig3(hi)})
	}
	return t
}

func (r *Run) title() string {
	s := fmt.Sprintf("%s: %d steps", r.Name, r.Steps())
	if r.Cached {
		s += " (cached)"
	}
	if r.Interrupted {
		s += " (interrupted)"
	}
	if r.RewardErrors > 0 {
		s += fmt.Sprintf(", %d reward errors replaced by 0", r.RewardErrors)
	}
	if n := len(r.History.Events); n > 0 {
		s += fmt.Sprintf(", %d events", n)
	}
	return s
}

// String is the summary as text.
func (r *Run) String() string { return r.Summary().String() }

// MIMEBundle shows the summary.
func (r *Run) MIMEBundle() map[string]any { return r.Summary().MIMEBundle() }

func num(v float64) string { return fmt.Sprintf("%.4g", v) }

// sig3 formats a table value with three significant digits, trailing zeros
// kept, so that a column reads at one precision: 0.200, 0.513, 0.0312, 40.9,
// 1235 (never an exponent for a large value), 1.25e-05 below 0.001; 0 is
// "0".
func sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	// The exponent after rounding to three digits: 0.9996 is 1.00, not 1.000.
	e := strconv.FormatFloat(v, 'e', 2, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -3 {
		return e
	}
	return strconv.FormatFloat(v, 'f', max(0, 2-exp), 64)
}
