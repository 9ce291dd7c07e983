package dsl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/train"
)

// stepCounter is an observer that cancels the run after its first step.
type stepCounter struct {
	steps  int
	phases map[string]bool
	cancel context.CancelFunc
	atWarm bool // cancel when the warm start begins instead
}

func (s *stepCounter) Phase(step int, phase string) {
	s.phases[phase] = true
	if s.atWarm && phase == "warm_start" {
		s.cancel()
	}
}
func (s *stepCounter) Event(metrics.Event) {}

func (s *stepCounter) WarmStart(train.WarmStartProgress) {}
func (s *stepCounter) Step(m metrics.Step) {
	if m.Step > 0 {
		s.steps++
		s.cancel()
	}
}

// Train reports to the kernel's observer and stops when the kernel's
// context is cancelled; the interrupted run is returned, marked, but not
// cached.
func TestTrainHooksObserverAndCancel(t *testing.T) {
	t.Setenv("RAGEN_CACHE", t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &stepCounter{phases: map[string]bool{}, cancel: cancel}
	SetContext(func() context.Context { return ctx })
	SetObserver(func() train.Observer { return obs })
	defer SetContext(nil)
	defer SetObserver(nil)

	exp := Experiment{
		Env: Bandit(), Model: "tiny", Groups: 2, GroupSize: 2, TokensPerTurn: 160, Steps: 5,
		WarmStart: WarmStart{Steps: 2, Episodes: 8, BatchSize: 4}, NoValidation: true, VocabSize: 300,
		Algo: GRPO(),
	}
	run := exp.Train()
	if run == nil || !run.Interrupted || run.Steps() != 1 {
		t.Fatalf("Train after an interrupt: %+v, want the 1 step done, marked interrupted", run)
	}
	if obs.steps != 1 || !obs.phases["warm_start"] || !obs.phases["rollout"] {
		t.Errorf("observer saw %d steps, phases %v", obs.steps, obs.phases)
	}
	runs, _ := filepath.Glob(filepath.Join(os.Getenv("RAGEN_CACHE"), "runs", "*", "run.json"))
	if len(runs) != 0 {
		t.Errorf("interrupted run cached: %v", runs)
	}
	if !strings.Contains(run.Summary().Title, "(interrupted)") {
		t.Errorf("summary title %q does not say interrupted", run.Summary().Title)
	}
}

// tinyExp is an experiment small enough for a unit test.
func tinyExp() Experiment {
	return Experiment{
		Env: Bandit(), Model: "tiny", Groups: 2, GroupSize: 2, TokensPerTurn: 160, Steps: 5,
		WarmStart: WarmStart{Steps: 2, Episodes: 8, BatchSize: 4}, NoValidation: true, VocabSize: 300,
		Algo: GRPO(), Fresh: true,
	}
}

// hookSession sets the kernel's hooks to a cancellable context and obs.
func hookSession(t *testing.T, obs *stepCounter) {
	t.Helper()
	t.Setenv("RAGEN_CACHE", t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	obs.cancel, obs.phases = cancel, map[string]bool{}
	SetContext(func() context.Context { return ctx })
	SetObserver(func() train.Observer { return obs })
	t.Cleanup(func() { SetContext(nil); SetObserver(nil) })
}

// TrainContext with a context of its own still stops at the kernel's
// interrupt: it used to return nil, nil to the cell (stopped by the
// interpreter) and train on in the background. The kernel's cancel reaches
// the run's own context through context.AfterFunc, a goroutine of its own,
// so on a busy machine the next step may reach its update (which is not
// cancelled, decision 46) first: the run stops after step 1 or a step
// later, never running all 5.
func TestTrainContextHearsKernelInterrupt(t *testing.T) {
	obs := &stepCounter{}
	hookSession(t, obs)
	run, err := tinyExp().TrainContext(context.Background())
	if !errors.Is(err, context.Canceled) || run == nil || !run.Interrupted || run.Steps() < 1 || run.Steps() >= 5 {
		t.Fatalf("TrainContext(Background) after a kernel interrupt: %+v, %v; want interrupted after step 1 or 2 of 5", run, err)
	}
}

// An interrupt during the warm start leaves a Run with no steps, which
// shows; so does a nil Run.
func TestTrainInterruptedInWarmStart(t *testing.T) {
	obs := &stepCounter{atWarm: true}
	hookSession(t, obs)
	run := tinyExp().Train()
	if run == nil || !run.Interrupted || run.Steps() != 0 {
		t.Fatalf("Train interrupted in the warm start: %+v, want a run with 0 steps, interrupted", run)
	}
	if txt, _ := run.MIMEBundle()["text/plain"].(string); !strings.Contains(txt, "(interrupted)") {
		t.Errorf("summary %q does not say interrupted", txt)
	}
	var none *Run
	if txt, _ := none.MIMEBundle()["text/plain"].(string); !strings.Contains(txt, "no run") {
		t.Errorf("nil run shows %q", txt)
	}
}

// TestSummaryPrecision: the summary table gives every value three
// significant digits, not %g's shortest form (0.2 0.5125 0.03125).
func TestSummaryPrecision(t *testing.T) {
	r := &Run{Name: "r"}
	for i, v := range []float64{0.2, 0.5125, 0.03125} {
		r.History.Steps = append(r.History.Steps, metrics.Step{Step: i + 1, Values: map[string]float64{
			metrics.RewardMean: v, metrics.ResponseTokens: 40.94 * float64(i+1),
		}})
	}
	want := "r: 3 steps\n" +
		"metric                first    last     min    max\n" +
		"rollout/reward_mean   0.200  0.0312  0.0312  0.512\n" +
		"response/tokens_mean   40.9     123    40.9    123"
	if got := r.Summary().String(); got != want {
		t.Errorf("summary:\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {1, "1.00"}, {-0.0125, "-0.0125"}, {0.9996, "1.00"}, {99.96, "100"},
		{1234.5, "1234"}, {0.001, "0.00100"}, {1.25e-5, "1.25e-05"}, {0.3125, "0.312"},
	} {
		if got := sig3(c.v); got != c.want {
			t.Errorf("sig3(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
