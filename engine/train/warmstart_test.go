package train

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/envs"
)

// TestWarmStartKeyResolvesOptions: spelling out a default option does not
// change the warm start's cache key; changing a value does.
func TestWarmStartKeyResolvesOptions(t *testing.T) {
	key := func(opts map[string]any) string {
		c := Default()
		c.Env, c.EnvOptions = "frozenlake", opts
		k, err := warmStartKey(&c)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	implicit := key(map[string]any{"is_slippery": false})
	if explicit := key(map[string]any{"is_slippery": false, "size": 4}); explicit != implicit {
		t.Errorf("size 4 spelled out changed the key: %s vs %s", explicit, implicit)
	}
	if other := key(map[string]any{"is_slippery": false, "size": 5}); other == implicit {
		t.Error("size 5 gave the key of size 4")
	}
}

// TestWarmStartKeyStable pins the key of the default configuration: a
// change to it silently invalidates every cached warm start and the
// committed notebooks' numbers, so it must come with a new
// WarmStartVersion and re-run notebooks. LearnContext, off by default,
// leaves the key as it was before the option existed, and on changes it.
func TestWarmStartKeyStable(t *testing.T) {
	c := Default()
	k, err := warmStartKey(&c)
	if err != nil {
		t.Fatal(err)
	}
	const want = "e1d70c21e237528d9bdca82f"
	if k != want {
		t.Errorf("default warm-start key %s, want %s", k, want)
	}
	c.WarmStart.LearnContext = true
	if k2, _ := warmStartKey(&c); k2 == k {
		t.Error("LearnContext did not change the key")
	}
}

// TestWarmStartLearnContext: with LearnContext the warm start also learns
// the context (here the bandit's prompt), so the context's tokens end up
// far more likely than after a warm start on the responses alone, and the
// responses are learned about as well.
func TestWarmStartLearnContext(t *testing.T) {
	nll := func(learnContext bool) (ctx, agent float64) {
		c := tinyConfig(t)
		c.WarmStart.Steps, c.WarmStart.LearnContext = 100, learnContext
		place, _, err := placement("cpu", "f32", false)
		if err != nil {
			t.Fatal(err)
		}
		newEnv := func() (envs.Env, error) { return envs.New(c.Env, c.EnvOptions) }
		tok, policy, err := warmStart(context.Background(), &c, newEnv, place, nopObserver{})
		if err != nil {
			t.Fatal(err)
		}
		defer policy.Free()
		env, _ := newEnv()
		demos, err := envs.Demonstrations(env, envs.DemoConfig{Episodes: 4, Seed: 1 << 40, Turn: envs.TurnConfig{Think: c.Think}, Prompt: envs.PromptConfig{Think: c.Think}})
		if err != nil {
			t.Fatal(err)
		}
		chat, err := rollout.NewChat(tok, nil, c.Think)
		if err != nil {
			t.Fatal(err)
		}
		var nc, na int
		for _, d := range demos {
			tr, err := rollout.FromDemo(d, chat, c.MaxTokensPerTurn)
			if err != nil {
				t.Fatal(err)
			}
			out, err := policy.Forward(tr.Tokens, []int{len(tr.Tokens)}, model.Want{LM: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(tr.Tokens); i++ {
				if tr.Agent[i] {
					agent -= float64(out.LogProb[i])
					na++
				} else {
					ctx -= float64(out.LogProb[i])
					nc++
				}
			}
		}
		return ctx / float64(nc), agent / float64(na)
	}
	ctxOff, agentOff := nll(false)
	ctxOn, agentOn := nll(true)
	t.Logf("context tokens: %.3f nats without LearnContext, %.3f with; agent tokens %.3f, %.3f", ctxOff, ctxOn, agentOff, agentOn)
	if !(ctxOn < ctxOff/2) {
		t.Errorf("LearnContext left the context at %.3f nats a token (%.3f without): it did not learn the context", ctxOn, ctxOff)
	}
	if !(agentOn < 1.3*agentOff) {
		t.Errorf("agent tokens at %.3f nats a token with LearnContext, %.3f without: learning the context crowded out the responses", agentOn, agentOff)
	}
}

// TestWarmStartDirIsAnInit: a run started with Init at another run's
// WarmStartDir starts from the same policy (the same validation before any
// update), and has no warm start of its own.
func TestWarmStartDirIsAnInit(t *testing.T) {
	c := tinyConfig(t)
	c.Steps = 1
	first := run(t, c)
	dir, err := WarmStartDir(&c)
	if err != nil {
		t.Fatal(err)
	}
	c.Init, c.WarmStart.Steps = dir, 0
	if d, err := WarmStartDir(&c); d != "" || err != nil {
		t.Errorf("WarmStartDir of a run with Init = %q, %v; want none", d, err)
	}
	second := run(t, c)
	a, b := first.History.Steps[0].Values, second.History.Steps[0].Values
	for _, name := range []string{metrics.ValSuccessRate, metrics.ValRewardMean} {
		if a[name] != b[name] {
			t.Errorf("step 0 %s: %v from the warm start, %v from Init at its directory", name, a[name], b[name])
		}
	}
}

// TestFitContextCutsAfterLastFittingTurn: a demonstration longer than the
// context keeps its turns that fit, ending on a response's last token, as a
// rollout that runs out of context does; one whose first response does not
// fit is an error naming context_length.
func TestFitContextCutsAfterLastFittingTurn(t *testing.T) {
	// prompt 3, response 2 (ends at 4), observation 2, response 3 (ends at 9), observation 1, response 2 (ends at 12)
	agent := []bool{false, false, false, true, true, false, false, true, true, true, false, true, true}
	demo := func() *rollout.Trajectory {
		d := &rollout.Trajectory{Agent: agent, TurnEnd: make([]bool, len(agent))}
		for i := range agent {
			d.Tokens = append(d.Tokens, 100+i)
		}
		for _, e := range []int{4, 9, 12} {
			d.TurnEnd[e] = true
		}
		return d
	}
	for _, c := range []struct{ limit, want int }{{13, 13}, {100, 13}, {12, 10}, {10, 10}, {9, 5}, {5, 5}} {
		d := demo()
		if err := fitContext(d, c.limit); err != nil {
			t.Fatalf("limit %d: %v", c.limit, err)
		}
		if len(d.Tokens) != c.want || len(d.Agent) != c.want || len(d.TurnEnd) != c.want || !d.TurnEnd[c.want-1] {
			t.Errorf("limit %d: kept %d tokens, want %d ending a turn", c.limit, len(d.Tokens), c.want)
		}
		if d.ContextFull != (c.want < 13) {
			t.Errorf("limit %d: ContextFull %v", c.limit, d.ContextFull)
		}
	}
	if err := fitContext(demo(), 4); err == nil || !strings.Contains(err.Error(), "context of 4 tokens") {
		t.Errorf("first turn too long: %v", err)
	}
}

// progressRecorder records the warm start's progress reports.
type progressRecorder struct {
	nopObserver
	phases   []string
	progress []WarmStartProgress
}

func (r *progressRecorder) Phase(step int, phase string)  { r.phases = append(r.phases, phase) }
func (r *progressRecorder) WarmStart(p WarmStartProgress) { r.progress = append(r.progress, p) }

// TestWarmStartReportsProgress: the warm start's fine-tuning reports each
// step, 1..N of N with its finite loss and a growing elapsed time, after
// the warm_start phase began and before the first rollout; the reports
// change no number of the run; a cached warm start reports none.
func TestWarmStartReportsProgress(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.WarmStart.Steps = 1, 6
	rec := &progressRecorder{}
	tr, err := New(context.Background(), c, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if len(rec.progress) != c.WarmStart.Steps {
		t.Fatalf("%d progress reports, want one per warm-start step (%d): %+v", len(rec.progress), c.WarmStart.Steps, rec.progress)
	}
	for i, p := range rec.progress {
		if p.Step != i+1 || p.Steps != c.WarmStart.Steps {
			t.Errorf("report %d: step %d/%d, want %d/%d", i, p.Step, p.Steps, i+1, c.WarmStart.Steps)
		}
		if !(p.Loss > 0) || math.IsInf(p.Loss, 0) {
			t.Errorf("report %d: loss %v, want a positive finite cross-entropy", i, p.Loss)
		}
		if i > 0 && p.Elapsed < rec.progress[i-1].Elapsed {
			t.Errorf("report %d: elapsed %v went back from %v", i, p.Elapsed, rec.progress[i-1].Elapsed)
		}
	}
	if last := rec.progress[len(rec.progress)-1]; last.ETA() != 0 {
		t.Errorf("ETA after the last step = %v, want 0", last.ETA())
	}
	if len(rec.phases) < 2 || rec.phases[0] != "warm_start" {
		t.Errorf("phases %v: want warm_start first", rec.phases)
	}

	// The same run without an observer, its own cache: the same numbers.
	c2 := c
	c2.WarmStart.CacheDir = t.TempDir()
	quiet := run(t, c2)
	defer quiet.Close()
	if a, b := deterministic(tr.History), deterministic(quiet.History); !reflect.DeepEqual(a, b) {
		t.Errorf("observing the warm start changed the run:\nobserved %v\nquiet    %v", a, b)
	}

	// The first run's cache: nothing to fine-tune, nothing reported.
	again := &progressRecorder{}
	tr2, err := New(context.Background(), c, again)
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if len(again.progress) != 0 {
		t.Errorf("a cached warm start reported %d steps", len(again.progress))
	}
}

// TestWarmStartProgressETA: the ETA extrapolates the time per step.
func TestWarmStartProgressETA(t *testing.T) {
	for _, c := range []struct {
		p    WarmStartProgress
		want time.Duration
	}{
		{WarmStartProgress{Step: 10, Steps: 100, Elapsed: 20 * time.Second}, 180 * time.Second},
		{WarmStartProgress{Step: 100, Steps: 100, Elapsed: 200 * time.Second}, 0},
		{WarmStartProgress{Step: 0, Steps: 100}, 0},
	} {
		if got := c.p.ETA(); got != c.want {
			t.Errorf("%+v: ETA %v, want %v", c.p, got, c.want)
		}
	}
}

// TestWarmStartSeed: WarmStart.Seed S gives the warm start of a run with
// seed S, whatever the run's own seed; unset, the run's seed decides.
func TestWarmStartSeed(t *testing.T) {
	key := func(seed, wsSeed int64) string {
		c := Default()
		c.Seed, c.WarmStart.Seed = seed, wsSeed
		k, err := warmStartKey(&c)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if key(7, 2) != key(2, 0) {
		t.Error("WarmStart.Seed 2 in a seed-7 run is not seed 2's warm start")
	}
	if key(7, 2) != key(3, 2) {
		t.Error("two runs with WarmStart.Seed 2 do not share their warm start")
	}
	if key(7, 0) == key(2, 0) {
		t.Error("runs of seeds 7 and 2 share a warm start without WarmStart.Seed")
	}
}
