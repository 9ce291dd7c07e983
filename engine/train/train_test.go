package train

import (
	"context"
	"errors"
	"fmt"
	"github.com/ragen-go/ragen/engine/algo"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
	_ "github.com/ragen-go/ragen/envs/all"
)

// tinyConfig is a bandit run small enough for a unit test.
func tinyConfig(t *testing.T) Config {
	c := Default()
	c.Model = "tiny"
	c.ContextLength = 512
	c.EnvGroups, c.GroupSize = 4, 4
	c.Steps = 2
	c.ValEpisodes, c.ValEvery = 8, 1
	c.WarmStart = WarmStart{Steps: 10, Episodes: 32, Imperfect: 0.3, LR: 3e-3, BatchSize: 4, CacheDir: t.TempDir()}
	return c
}

func run(t *testing.T, c Config) *Trainer {
	t.Helper()
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tr
}

// deterministic drops the wall-clock metrics, which differ run to run.
func deterministic(h metrics.History) []metrics.Step {
	var out []metrics.Step
	for _, s := range h.Steps {
		v := map[string]float64{}
		for k, x := range s.Values {
			if !strings.HasPrefix(k, "timing_s/") && !strings.HasPrefix(k, "perf/") {
				v[k] = x
			}
		}
		out = append(out, metrics.Step{Step: s.Step, Values: v})
	}
	return out
}

func TestTrainReportsEveryMetric(t *testing.T) {
	tr := run(t, tinyConfig(t))
	last := tr.History.Steps[len(tr.History.Steps)-1]
	for _, name := range []string{
		metrics.RewardMean, metrics.RewardStd, metrics.InGroupStd, metrics.SuccessRate, metrics.ValSuccessRate,
		metrics.FormatValidRate, metrics.TurnsMean, metrics.ResponseTokens, metrics.ThinkTokens, metrics.AnswerTokens, metrics.DistinctRate,
		metrics.Entropy, metrics.GradNorm, metrics.PolicyLoss, metrics.ClipFrac, metrics.ApproxKL,
		metrics.ValueLoss, metrics.ExplainedVar, metrics.CriticGradNorm, metrics.FilterKeepRatio,
		metrics.TimeRollout, metrics.TimeTrain, metrics.TokensPerSec,
	} {
		v, ok := last.Values[name]
		if !ok {
			t.Errorf("step %d has no %s", last.Step, name)
		} else if math.IsNaN(v) {
			t.Errorf("%s is NaN", name)
		}
	}
	for _, name := range []string{metrics.TimeRolloutCPU, metrics.TimeTrainCPU} {
		if sec, ok := last.Values[name]; runtime.GOOS == "linux" && (!ok || !(sec > 0)) {
			t.Errorf("%s = %v (present %v), want the CPU seconds of the phase", name, sec, ok)
		}
	}
	if gb, ok := last.Values[metrics.PeakRSS]; runtime.GOOS == "linux" && (!ok || gb <= 0 || gb > 1e3) {
		t.Errorf("%s = %v (present %v), want the process's peak memory in GB", metrics.PeakRSS, gb, ok)
	}
	if got := last.Values[metrics.FilterKeepRatio]; got != 0.25 {
		t.Errorf("StarPO-S keeps int(0.25 × 4) = 1 of 4 groups; keep ratio %v", got)
	}
}

func TestTrainDeterministic(t *testing.T) {
	c := tinyConfig(t)
	a := run(t, c)
	prev := runtime.GOMAXPROCS(1)
	b := run(t, c)
	runtime.GOMAXPROCS(prev)
	if !reflect.DeepEqual(deterministic(a.History), deterministic(b.History)) {
		t.Fatalf("same seed, different metrics (GOMAXPROCS %d vs 1):\n%v\n%v", prev, deterministic(a.History), deterministic(b.History))
	}
}

func TestResumeMatchesUninterrupted(t *testing.T) {
	c := tinyConfig(t)
	c.Steps = 3
	c.ValEpisodes = 0
	c.Algo.FilterRatio = 1
	checkResumeMatches(t, c, run(t, c))
}

// checkResumeMatches trains c for one step with a checkpoint, resumes from
// it up to c.Steps and fails unless the metrics equal those of whole, the
// same run uninterrupted.
func checkResumeMatches(t *testing.T, c Config, whole *Trainer) {
	t.Helper()
	steps := c.Steps
	c.RunDir = t.TempDir()
	c.CheckpointEvery, c.Steps = 1, 1
	run(t, c).Close()
	ckpt := filepath.Join(c.RunDir, "checkpoints", "step-000001")
	// Resuming where nothing is left to train is refused, the run untouched.
	done, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := done.Resume(ckpt); err == nil || !strings.Contains(err.Error(), "nothing is left to train") {
		t.Errorf("resuming a 1-step run at step 1: error %v, want one saying nothing is left to train", err)
	}
	done.Close()
	c.Steps = steps
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Resume(ckpt); err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(deterministic(whole.History), deterministic(tr.History)) {
		t.Fatalf("resumed run differs:\n%v\n%v", deterministic(whole.History), deterministic(tr.History))
	}
}

// TestLRWarmupRamps checks the warm-up on the actor's rate, update by
// update (two minibatches a step: step k reports the mean rate of updates
// 2k−1 and 2k, counted from 1), and that a run resumed inside the ramp
// continues it.
func TestLRWarmupRamps(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes, c.LRWarmup = 3, 0, 8
	c.Algo.FilterRatio = 1
	whole := run(t, c)
	for _, s := range whole.History.Steps[1:] { // Steps[0] is the run's start
		k := float64(s.Step)
		want := c.ActorLR * ((2*k-1)/8 + 2*k/8) / 2
		if got := s.Values[metrics.LearningRate]; math.Abs(got-want) > 1e-12 {
			t.Errorf("step %d: actor lr %v, want %v", s.Step, got, want)
		}
	}
	checkResumeMatches(t, c, whole)
}

func TestNaNRewardStops(t *testing.T) {
	c := tinyConfig(t)
	c.Reward = func(*rollout.Trajectory, []*rollout.Trajectory) (float64, error) { return math.NaN(), nil }
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "step 1") || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("want an error naming step 1 and NaN, got %v", err)
	}
}

func TestCancelKeepsHistory(t *testing.T) {
	c := tinyConfig(t)
	c.Steps = 5
	ctx, cancel := context.WithCancel(context.Background())
	tr, err := New(ctx, c, stepHook(func(s metrics.Step) {
		if s.Step == 1 {
			cancel()
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if tr.StepsDone() != 1 || len(tr.History.Steps) != 2 {
		t.Fatalf("after cancelling at step 1: %d steps done, %d recorded", tr.StepsDone(), len(tr.History.Steps))
	}
}

// TestInterruptSavesCheckpoint cancels a run during the rollouts of step 2
// (it stops with step 1 done) and during the update of step 2 (the step
// runs to its end): each time Run saves a checkpoint of the last step done,
// without -checkpoint-every, and a run resumed from it gives the metrics
// of the uninterrupted run.
func TestInterruptSavesCheckpoint(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes = 3, 0
	c.Algo.FilterRatio = 1
	whole := run(t, c)
	for _, tc := range []struct {
		phase string
		done  int
	}{{"rollout", 1}, {"train", 2}} {
		c := c
		c.RunDir = t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		tr, err := New(ctx, c, phaseHook(func(step int, phase string) {
			if step == 2 && phase == tc.phase {
				cancel()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled in %s: err %v, want context.Canceled", tc.phase, err)
		}
		tr.Close()
		if tr.StepsDone() != tc.done {
			t.Fatalf("cancelled in step 2's %s: %d steps done, want %d", tc.phase, tr.StepsDone(), tc.done)
		}
		ckpt := filepath.Join(c.RunDir, "checkpoints", fmt.Sprintf("step-%06d", tc.done))
		resumed, err := New(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := resumed.Resume(ckpt); err != nil {
			t.Fatalf("cancelled in %s: %v", tc.phase, err)
		}
		if err := resumed.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		resumed.Close()
		if !reflect.DeepEqual(deterministic(whole.History), deterministic(resumed.History)) {
			t.Errorf("cancelled in %s, resumed at step %d: metrics differ:\n%v\n%v", tc.phase, tc.done,
				deterministic(whole.History), deterministic(resumed.History))
		}
	}
}

type phaseHook func(step int, phase string)

func (h phaseHook) Phase(step int, phase string) { h(step, phase) }
func (phaseHook) Step(metrics.Step)              {}
func (phaseHook) Event(metrics.Event)            {}
func (phaseHook) WarmStart(WarmStartProgress)    {}

func TestConfigValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.GroupSize = 0 }, "group_size: must be > 0 (got 0)"},
		{func(c *Config) { c.Env = "chess" }, `env: unknown environment "chess"`},
		{func(c *Config) { c.Model = "huge" }, `model: must be one of tiny, small, base (got "huge")`},
		{func(c *Config) { c.Algo.ClipLow = 2 }, "algo.clip_low: must be in (0, 1) (got 2)"},
		{func(c *Config) { c.Algo.AdvEstimator = "grpo"; c.GroupSize = 1 }, "group_size: the grpo estimator normalises within groups"},
		{func(c *Config) { c.LRWarmup = -1 }, "lr_warmup_steps: must be ≥ 0 optimizer updates (got -1)"},
		{func(c *Config) { c.CollapseEvery = -5 }, "collapse_every: must be ≥ 0 (got -5)"},
		{func(c *Config) { c.Monitor.Action = "panic" }, `monitor.action: must be one of warn, stop, rewind (got "panic")`},
		{func(c *Config) { c.Backend = "cuda" }, "backend cuda: this binary was built without CUDA support; rebuild with: go build -tags cuda"},
		{func(c *Config) { c.Backend = "tpu" }, `backend "tpu": unknown (valid: cpu, cuda)`},
	} {
		c := Default()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
}

type stepHook func(metrics.Step)

func (stepHook) Phase(int, string)     {}
func (h stepHook) Step(s metrics.Step) { h(s) }
func (stepHook) Event(metrics.Event)   {}

func (stepHook) WarmStart(WarmStartProgress) {}

// TestSamplesShowCreditAssignment checks the samples a run keeps: the
// first validation episodes at every validation, and training trajectories
// whose per-token numbers are the update's. StarPO-S is GAE with γ = λ = 1
// and the reward on the last token, so every agent token's return is the
// trajectory's reward and the token rewards sum to it.
func TestSamplesShowCreditAssignment(t *testing.T) {
	tr := run(t, tinyConfig(t))
	h := &tr.History
	for step := 0; step <= 2; step++ {
		if got := len(h.SamplesAt(metrics.SplitVal, step)); got != valSamples {
			t.Errorf("step %d: %d validation samples, want %d", step, got, valSamples)
		}
	}
	val0, val2 := h.SamplesAt(metrics.SplitVal, 0), h.SamplesAt(metrics.SplitVal, 2)
	if val0[0].Seed != val2[0].Seed {
		t.Errorf("validation samples changed seed: %d then %d", val0[0].Seed, val2[0].Seed)
	}
	for step := 1; step <= 2; step++ {
		ss := h.SamplesAt(metrics.SplitTrain, step)
		if len(ss) != 1 {
			t.Fatalf("step %d: %d training samples, want 1", step, len(ss))
		}
		s := ss[0]
		if len(s.Turns) == 0 || len(s.Tokens) == 0 || !strings.Contains(s.Text, s.Turns[0].Response) {
			t.Fatalf("step %d: sample without turns, tokens or its response in the text: %+v", step, s)
		}
		var sum float64
		var texts strings.Builder
		for _, tok := range s.Tokens {
			sum += tok.Reward
			texts.WriteString(tok.Text)
			if tok.Return != s.Reward {
				t.Fatalf("step %d: token return %v, want the trajectory reward %v", step, tok.Return, s.Reward)
			}
		}
		if math.Abs(sum-s.Reward) > 1e-12 {
			t.Errorf("step %d: token rewards sum to %v, want %v", step, sum, s.Reward)
		}
		if !strings.Contains(texts.String(), s.Turns[0].Response) {
			t.Errorf("step %d: agent tokens %q do not spell the response %q", step, texts.String(), s.Turns[0].Response)
		}
	}
}

// Micro-batches accumulate the gradient of the whole minibatch: a run
// whose updates are split into passes of at most 60 tokens (every
// trajectory alone, or a few together) trains as the unsplit run does, up
// to the order of the sums — the same metrics to 1e-4 and the same
// policy to 1e-4 relative.
func TestMicroBatchesMatchWholeMinibatch(t *testing.T) {
	c := tinyConfig(t)
	c.Algo.AdvEstimator = algo.EstGAE // the critic's update too
	c.Steps, c.ValEpisodes = 2, 0
	c.Algo.FilterRatio = 1
	whole := run(t, c)
	defer whole.Close()
	c.MicroBatchTokens = 60
	split := run(t, c)
	defer split.Close()
	if n := len(microBatches(whole.reused.trajs, split.cfg.MicroBatchTokens)); n < 3 {
		t.Fatalf("a step's batch splits into %d micro-batches; the test wants several", n)
	}
	w, s := deterministic(whole.History), deterministic(split.History)
	for i := range w {
		for k, v := range w[i].Values {
			if d := math.Abs(s[i].Values[k] - v); d > 1e-4*max(1, math.Abs(v)) {
				t.Errorf("step %d: %s = %v split, %v whole", w[i].Step, k, s[i].Values[k], v)
			}
		}
	}
	a, b := policyOf(t, whole).Params.Data, policyOf(t, split).Params.Data
	var worst, big float64
	for i := range a {
		worst, big = max(worst, math.Abs(float64(a[i]-b[i]))), max(big, math.Abs(float64(a[i])))
	}
	if worst/big > 1e-4 {
		t.Fatalf("policies differ: relative %g", worst/big)
	}
	if reflect.DeepEqual(a, b) {
		t.Log("bit-identical (the sums happened to round alike)")
	}
}

// Activation recomputation changes memory, not numbers: the same run
// with Recompute gives bit-identical metrics and weights.
func TestRecomputeSameRun(t *testing.T) {
	c := tinyConfig(t)
	c.Algo.AdvEstimator = algo.EstGAE
	c.Steps, c.ValEpisodes = 2, 0
	plain := run(t, c)
	defer plain.Close()
	c.Recompute = true
	c.WarmStart.CacheDir = t.TempDir() // fine-tune with recomputation too
	re := run(t, c)
	defer re.Close()
	if !re.policy.Recompute() {
		t.Fatal("the policy does not recompute")
	}
	if !reflect.DeepEqual(deterministic(plain.History), deterministic(re.History)) {
		t.Fatalf("metrics differ:\n%v\n%v", deterministic(plain.History), deterministic(re.History))
	}
	if !slices.Equal(policyOf(t, plain).Params.Data, policyOf(t, re).Params.Data) {
		t.Fatal("the trained policies differ")
	}
}

// The passes that only evaluate (old and reference log-probabilities,
// values) are cut at MicroBatchTokens too, to bound their memory: a
// trajectory's log-probabilities and entropies are the same bits in a pass
// of its own as in one with the whole batch.
func TestEvaluatePassesSameBits(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes = 1, 0
	tr := run(t, c)
	defer tr.Close()
	trajs := tr.reused.trajs
	if n := len(forwardChunks(trajs, 60)); n < 3 {
		t.Fatalf("the batch makes %d passes of 60 tokens; the test wants several", n)
	}
	want := model.Want{LM: true}
	lw, ew, _, err := evaluate(policyOf(t, tr), trajs, want, maxForwardTokens)
	if err != nil {
		t.Fatal(err)
	}
	ls, es, _, err := evaluate(policyOf(t, tr), trajs, want, 60)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lw, ls) || !reflect.DeepEqual(ew, es) {
		t.Fatal("log-probabilities or entropies differ between one pass and passes of 60 tokens")
	}
	tr.cfg.MicroBatchTokens = 60
	if got := tr.passLimit(maxForwardTokens); got != 60 {
		t.Errorf("passLimit = %d with MicroBatchTokens 60", got)
	}
}
