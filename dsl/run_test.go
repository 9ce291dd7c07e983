package dsl

import (
	"context"
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
}

func (s *stepCounter) Phase(step int, phase string) { s.phases[phase] = true }
func (s *stepCounter) Event(metrics.Event)          {}
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
