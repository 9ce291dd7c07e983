package dsl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
// context is cancelled; the interrupted run is returned but not cached.
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
	defer func() {
		err, _ := recover().(error)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Train panicked with %v, want context.Canceled", err)
		}
		if obs.steps != 1 || !obs.phases["warm_start"] || !obs.phases["rollout"] {
			t.Errorf("observer saw %d steps, phases %v", obs.steps, obs.phases)
		}
		runs, _ := filepath.Glob(filepath.Join(os.Getenv("RAGEN_CACHE"), "runs", "*", "run.json"))
		if len(runs) != 0 {
			t.Errorf("interrupted run cached: %v", runs)
		}
	}()
	exp.Train()
	t.Error("Train returned after its context was cancelled")
}
