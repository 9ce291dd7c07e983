package live

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragen-go/ragen/dsl"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/train"
	"github.com/ragen-go/ragen/kernel/display"
)

// recorder collects what a view publishes.
type recorder struct {
	mu  sync.Mutex
	out []display.Data
}

func (r *recorder) publish(d display.Data) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out = append(r.out, d)
}

func (r *recorder) take() []display.Data {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.out
	r.out = nil
	return out
}

// fakeClock is advanced by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func step(i int, reward, success float64) metrics.Step {
	return metrics.Step{Step: i, Values: map[string]float64{
		metrics.RewardMean: reward, metrics.InGroupStd: 0.1, metrics.SuccessRate: success,
		metrics.Entropy: 1.5 - 0.1*float64(i), metrics.GradNorm: 0.3, metrics.ResponseTokens: 12,
	}}
}

func bundleText(d display.Data) string {
	s, _ := d.Bundle["text/plain"].(string)
	return s
}

func summarize(ds []display.Data) string {
	var parts []string
	for _, d := range ds {
		_, png := d.Bundle["image/png"]
		parts = append(parts, fmt.Sprintf("{id=%s update=%v png=%v}", d.ID, d.Update, png))
	}
	return strings.Join(parts, " ")
}

// The bar and the chart are shown once, then updated in place under their
// own ids, at most as often as the options allow; the end shows the
// outcome, the summary and the final chart.
func TestViewThrottlesAndEnds(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	rec := &recorder{}
	// Long intervals: the timer (real time) never fires during the test, so
	// every publication is one the calls below caused.
	v := New(rec.publish, Options{ProgressEvery: time.Minute, ChartEvery: 10 * time.Minute, TickEvery: time.Hour, Now: clk.now})
	bar, chart := v.IDs()
	if bar == chart || bar == "" {
		t.Fatalf("ids %q %q", bar, chart)
	}

	v.Begin("bandit", 4)
	out := rec.take()
	if len(out) != 1 || out[0].ID != bar || out[0].Update || !strings.Contains(bundleText(out[0]), "step 0/4") {
		t.Fatalf("Begin published %s %q", summarize(out), bundleText(out[0]))
	}
	if _, ok := out[0].Bundle["text/html"].(string); !ok {
		t.Errorf("bar has no HTML: %v", out[0].Bundle)
	}

	clk.advance(100 * time.Millisecond)
	v.Phase(0, "warm_start") // inside the bar's interval: held back
	if out := rec.take(); len(out) != 0 {
		t.Fatalf("throttled phase published %s", summarize(out))
	}
	clk.advance(2 * time.Minute)
	v.Phase(1, "rollout")
	out = rec.take()
	if len(out) != 1 || !out[0].Update || !strings.Contains(bundleText(out[0]), "step 1/4 · rollout") {
		t.Fatalf("phase: %s %v", summarize(out), out)
	}

	clk.advance(2 * time.Minute)
	v.Step(step(1, 0.25, 0.5)) // one point: no chart yet
	out = rec.take()
	if len(out) != 1 || out[0].ID != bar {
		t.Fatalf("first step: %s", summarize(out))
	}
	text := bundleText(out[0])
	for _, want := range []string{"step 1/4", "ETA 6m00s", "reward 0.25", "success 50%", "[#######"} {
		if !strings.Contains(text, want) {
			t.Errorf("bar %q lacks %q", text, want)
		}
	}

	clk.advance(2 * time.Minute)
	v.Step(step(2, 0.5, 1))
	out = rec.take()
	if len(out) != 2 || out[0].ID != bar || out[1].ID != chart || out[1].Update {
		t.Fatalf("second step: %s", summarize(out))
	}
	if png, ok := out[1].Bundle["image/png"].(string); !ok || !strings.HasPrefix(png, "iVBORw0KGgo") {
		t.Fatalf("chart is not a base64 PNG: %T", out[1].Bundle["image/png"])
	}
	if text := bundleText(out[0]); !strings.Contains(text, "step 2/4") || !strings.Contains(text, "ETA 4m00s") {
		t.Errorf("bar %q: want step 2/4, ETA 4m00s", text)
	}

	clk.advance(2 * time.Minute)
	v.Event(metrics.Event{Step: 1, Kind: "entropy_drop", Message: "entropy fell <50%"})
	clk.advance(2 * time.Minute)
	v.Step(step(3, 0.5, 1)) // chart interval (10 min) not over: the bar only
	out = rec.take()
	if len(out) != 2 || out[0].ID != bar || out[1].ID != bar {
		t.Fatalf("third step: %s", summarize(out))
	}
	if text := bundleText(out[1]); !strings.Contains(text, "step 1 entropy_drop: entropy fell <50%") {
		t.Errorf("event line missing: %q", text)
	}
	if h := out[1].Bundle["text/html"].(string); !strings.Contains(h, "entropy fell &lt;50%") {
		t.Errorf("event not escaped in HTML: %q", h)
	}

	run := &dsl.Run{Name: "bandit"}
	run.History.Steps = []metrics.Step{step(1, 0.25, 0.5), step(2, 0.5, 1), step(3, 0.5, 1)}
	v.End(run, context.Canceled)
	out = rec.take()
	if len(out) != 2 || out[0].ID != bar || !out[0].Update || out[1].ID != chart || !out[1].Update {
		t.Fatalf("end: %s", summarize(out))
	}
	end := bundleText(out[0])
	// The summary is the run's own display: in the bar too, a cell ending
	// with the run showed it twice.
	if !strings.Contains(end, "interrupted at step 3 of 4") || strings.Contains(end, metrics.RewardMean) {
		t.Errorf("end bar %q: want the interruption and no summary table", end)
	}
	if png, ok := out[1].Bundle["image/png"].(string); !ok || !strings.HasPrefix(png, "iVBORw0KGgo") {
		t.Error("final chart is not a base64 PNG")
	}

	v.Step(step(4, 1, 1)) // after End nothing is published
	v.End(run, nil)
	if out := rec.take(); len(out) != 0 {
		t.Errorf("published after End: %s", summarize(out))
	}
}

// A change held back by the throttle is published when its interval ends,
// without waiting for the next call.
func TestViewFlushesLatestState(t *testing.T) {
	rec := &recorder{}
	v := New(rec.publish, Options{ProgressEvery: 30 * time.Millisecond, ChartEvery: 30 * time.Millisecond})
	v.Begin("run", 3)
	v.Step(step(1, 0.1, 0))
	v.Step(step(2, 0.1, 0))
	v.Phase(3, "rollout")
	v.Phase(3, "train")
	rec.take()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		rec.mu.Lock()
		n := len(rec.out)
		rec.mu.Unlock()
		if n > 0 {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	out := rec.take()
	if len(out) != 1 || !strings.Contains(bundleText(out[0]), "step 3/3 · train") {
		t.Fatalf("trailing flush: %s %v", summarize(out), out)
	}
	v.End(nil, fmt.Errorf("NaN loss"))
	out = rec.take()
	if len(out) != 1 || !strings.Contains(bundleText(out[0]), "stopped at step 2 of 3: NaN loss") {
		t.Fatalf("end with error: %s %v", summarize(out), out)
	}
}

// A phase that reports nothing for long (the warm start) does not freeze
// the bar: its elapsed time is redrawn every TickEvery, until End.
func TestViewTicksWhileQuiet(t *testing.T) {
	rec := &recorder{}
	v := New(rec.publish, Options{ProgressEvery: 5 * time.Millisecond, TickEvery: 40 * time.Millisecond})
	v.Begin("run", 150)
	v.Phase(0, "warm_start")
	time.Sleep(10 * time.Millisecond)
	rec.take()
	// Redrawn until the elapsed time shows a change (0.1 s resolution).
	var ticks []display.Data
	changed := func() bool { return len(ticks) > 1 && bundleText(ticks[0]) != bundleText(ticks[len(ticks)-1]) }
	for deadline := time.Now().Add(5 * time.Second); !changed() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		ticks = append(ticks, rec.take()...)
	}
	if len(ticks) < 2 {
		t.Fatalf("the bar was not redrawn while the warm start ran: %s", summarize(ticks))
	}
	a, b := bundleText(ticks[0]), bundleText(ticks[len(ticks)-1])
	if !ticks[0].Update || !strings.Contains(a, "step 0/150 · warm start · elapsed") || a == b {
		t.Errorf("ticks %q .. %q: want the warm start with a running elapsed time", a, b)
	}
	v.End(nil, context.Canceled)
	rec.take()
	time.Sleep(100 * time.Millisecond)
	if out := rec.take(); len(out) != 0 {
		t.Errorf("ticked after End: %s", summarize(out))
	}
}

// During the warm start's fine-tuning the bar shows its step i/N, loss and
// ETA (from the report's own elapsed time), and drops them when step 1
// begins.
func TestViewShowsWarmStartProgress(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	rec := &recorder{}
	v := New(rec.publish, Options{ProgressEvery: time.Second, ChartEvery: time.Hour, TickEvery: time.Hour, Now: clk.now})
	v.Begin("sokoban", 40)
	clk.advance(2 * time.Second)
	v.Phase(0, "warm_start")
	clk.advance(95 * time.Second)
	v.WarmStart(train.WarmStartProgress{Step: 120, Steps: 500, Loss: 1.2345, Elapsed: 60 * time.Second})
	out := rec.take()
	if len(out) != 3 {
		t.Fatalf("published %s, want the bar at Begin and at the phase, then with the warm start", summarize(out))
	}
	want := "step 0/40 · warm start 120/500 · loss 1.23 · ETA 3m10s · elapsed 1m37s"
	if text := bundleText(out[2]); !strings.Contains(text, want) {
		t.Errorf("bar %q lacks %q", text, want)
	}
	if h := out[2].Bundle["text/html"].(string); !strings.Contains(h, "warm start 120/500 · loss 1.23 · ETA 3m10s") {
		t.Errorf("HTML bar %q lacks the warm start's progress", h)
	}
	clk.advance(2 * time.Second)
	v.Phase(1, "rollout")
	out = rec.take()
	if len(out) != 1 {
		t.Fatalf("phase: %s", summarize(out))
	}
	if text := bundleText(out[0]); strings.Contains(text, "warm start") || !strings.Contains(text, "step 1/40 · rollout") {
		t.Errorf("bar after the warm start %q: want step 1/40 · rollout and no warm start", text)
	}
	v.End(nil, context.Canceled)
}

// The live chart renders fast enough to sit in the training loop.
func BenchmarkChart(b *testing.B) {
	v := New(func(display.Data) {}, Options{})
	v.Begin("bench", 40)
	for i := 1; i <= 40; i++ {
		v.hist.Steps = append(v.hist.Steps, step(i, float64(i)/40, float64(i)/40))
	}
	b.ResetTimer()
	for range b.N {
		v.mu.Lock()
		v.plotLocked()
		v.mu.Unlock()
	}
}
