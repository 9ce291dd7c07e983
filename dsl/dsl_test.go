package dsl

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/envs"
)

// Every option of every registered environment has a helper, so a cell
// never needs Option("name", v) for a built-in.
func TestEveryOptionHasAHelper(t *testing.T) {
	helpers := []EnvOption{
		MaxTurns(1), ActionsPerTurn(1), ActionsPerEpisode(1),
		Split("train"), LoReward(1), HiReward(1), HiMiss(0), HiProb(0.5), LoName("a"), HiName("b"),
		SearchDepth(2), MaxSteps(1), MaxResetTries(1), Boxes(1), Size(4), FrozenProb(0.8), Slippery(true),
		SlipSuccess(1), Observation("grid"), MinNums(2), MaxNums(3), MaxNumber(10), MaxTarget(10), Ops("+-"),
		Products(20), CatalogSeed(1), BinaryReward(true),
	}
	helpers = append(helpers, Dim(5, 6)...)
	helpers = append(helpers, Dim(6, 6)...)
	have := map[string]bool{}
	for _, h := range helpers {
		have[h.Name] = true
	}
	for _, name := range envs.Names() {
		spec, _ := envs.Lookup(name)
		for _, o := range spec.Options {
			if !have[o.Name] {
				t.Errorf("%s option %s has no helper in dsl/env.go", name, o.Name)
			}
		}
	}
}

func TestBuiltinConstructors(t *testing.T) {
	s := Sokoban(Dim(6, 6), Boxes(2), MaxTurns(3))
	if got, want := s.String(), "sokoban(boxes=2, max_turns=3)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if s.Options["boxes"] != 2 || s.Options["dim"] != 6 {
		t.Errorf("options %v", s.Options)
	}
	for _, f := range []func(...any) EnvSpec{Bandit, Sokoban, FrozenLake, Countdown, WebShop} {
		if spec := f(); spec.Name == "" || len(spec.Options) == 0 {
			t.Errorf("default spec %+v", spec)
		}
	}
	if _, err := NewEnv("sokoban", Dim(1, 1)); err == nil {
		t.Error("impossible room accepted")
	}
	if _, err := NewEnv("bandit", 3); err == nil || err.Error() != "bandit: option 1: want an environment option such as ragen.MaxTurns(3) (got int)" {
		t.Errorf("non-option: %v", err)
	}
	if _, err := NewEnv("bandit", HiProb(0.1), HiProb(0.2)); err == nil || err.Error() != `bandit: option "hi_prob" given twice` {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := NewEnv("chess"); err == nil || !strings.HasPrefix(err.Error(), `unknown environment "chess" (registered: bandit, `) {
		t.Errorf("unknown env: %v", err)
	}
	if _, err := NewCustom("c", func() Env { return nil }, Boxes(2)); err == nil || !strings.Contains(err.Error(), `unknown option "boxes"`) {
		t.Errorf("custom with a built-in's option: %v", err)
	}
	if _, err := NewCustom("c", func() Env { return nil }, MaxTurns(0)); err == nil || err.Error() != "c option max_turns: must be at least 1 (got 0)" {
		t.Errorf("custom with 0 turns: %v", err)
	}
}

// trajectory is a played episode of two turns: Left (valid, reward 1) and
// an unparsable answer (format penalty −0.1).
func trajectory(success bool) *rollout.Trajectory {
	t := &rollout.Trajectory{Success: success}
	t1 := rollout.Turn{ThinkTokens: 5, AnswerTokens: 2, Tokens: 9, Closed: true}
	t1.Executed, t1.Valid, t1.EnvReward, t1.Reward = []string{"Left"}, 1, 1, 1
	t1.Parsed.FormatOK = true
	t2 := rollout.Turn{ThinkTokens: 3, Tokens: 4}
	t2.Invalid, t2.Penalty, t2.Reward = 1, -0.1, -0.1
	t.Turns = []rollout.Turn{t1, t2}
	return t
}

func TestRewardRecord(t *testing.T) {
	a, b := trajectory(true), trajectory(false)
	b.Turns[0].Reward = 0
	r := Record(a, []*rollout.Trajectory{a, b})
	if r.Reward != 0.9 || r.EnvReward != 1 || r.Penalty != -0.1 || r.ValidActions != 1 || r.InvalidActions != 1 ||
		r.ThinkTokens != 8 || r.AnswerTokens != 2 || r.FormatOK || r.NumTurns != 2 || strings.Join(r.Actions, ",") != "Left" {
		t.Errorf("record %+v", r)
	}
	// Group rewards 0.9 and −0.1: mean 0.4, unbiased std √0.5.
	g := r.Group
	if math.Abs(g.Mean-0.4) > 1e-12 || math.Abs(g.Std-math.Sqrt(0.5)) > 1e-12 || g.Max != 0.9 || g.Min != -0.1 || g.SuccessRate != 0.5 || g.Size != 2 {
		t.Errorf("group %+v", g)
	}
	for src, want := range map[string]float64{
		`success ? 10 : sum(turns, .reward) - 0.1 * invalid_actions`: 10,
		`sum(turns, .reward) - 0.1 * invalid_actions`:                0.8,
		`group.max - group.mean`:                                     0.5,
		`len(actions) + turns[0].think_tokens`:                       6,
		`format_ok ? 1 : turns[1].penalty`:                           -0.1,
	} {
		v, err := Reward(src).Eval(r)
		if err != nil || math.Abs(v-want) > 1e-12 {
			t.Errorf("%s = %v, %v; want %v", src, v, err, want)
		}
	}
}

// Integer and float division by zero, and NaN, are errors at run time.
func TestRewardRuntimeErrors(t *testing.T) {
	r := Record(trajectory(false), nil)
	for src, want := range map[string]string{
		`valid_actions % (num_turns - 2)`: "runtime error: integer divide by zero (1:15)\n | valid_actions % (num_turns - 2)\n | ..............^",
		`valid_actions / (num_turns - 2)`: "result is +Inf (division by zero?)",
		`-env_reward / 0.0`:               "result is -Inf (division by zero?)",
		`(num_turns - 2) / 0`:             "result is NaN (0/0?)",
	} {
		_, err := Reward(src).Eval(r)
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

func TestCompileErrorPosition(t *testing.T) {
	_, err := CompileReward("success\n  ? 10\n  : rewrd")
	e, ok := err.(*ExprError)
	if !ok || e.Line != 3 || e.Column != 5 {
		t.Fatalf("err = %#v", err)
	}
	if _, err := CompileReward("  "); err == nil || err.Error() != "reward expression: empty expression" {
		t.Errorf("empty: %v", err)
	}
}

// The filter's expression sees each group's success rate, in the order the
// trainer's filter visits the groups.
func TestFilterScoresGroups(t *testing.T) {
	f := Filter("success_rate * 10 + mean")
	h := &hooks{spec: &RunSpec{}, run: &Run{}}
	score := h.scorer(&f)
	g0 := []*rollout.Trajectory{trajectory(true), trajectory(true)}
	g1 := []*rollout.Trajectory{trajectory(false), trajectory(true)}
	if s, err := score(g0, []float64{1, 1}); err != nil || s != 11 {
		t.Errorf("group 0 score %v (%v), want 11", s, err)
	}
	if s, err := score(g1, []float64{0, 1}); err != nil || s != 5.5 {
		t.Errorf("group 1 score %v (%v), want 5.5", s, err)
	}
}

func TestSetField(t *testing.T) {
	e := Experiment{Env: Bandit()}
	for _, c := range []struct {
		path string
		v    any
		err  string
	}{
		{"Filter.Ratio", 0.5, ""},
		{"Filter.Ratio", 1, ""},
		{"Filter.Above", 0.1, ""},
		{"GroupSize", 4.0, ""},
		{"Seed", 3, ""},
		{"Algo.AdvEstimator", "grpo", ""},
		{"Model", "tiny", ""},
		{"GroupSize", 2.5, "GroupSize is int: cannot set it to float64 2.5"},
		{"Algo.AdvEstimator", 1, "Algo.AdvEstimator is string: cannot set it to int 1"},
		{"Steps.X", 1, `Steps is int, not a struct: no field "X"`},
		{"Nope", 1, `Experiment has no field "Nope" (fields: ` + fieldNames(reflect.TypeOf(Experiment{})) + ")"},
	} {
		err := setField(&e, c.path, c.v)
		if got := errString(err); got != c.err {
			t.Errorf("%s = %v: err %q, want %q", c.path, c.v, got, c.err)
		}
	}
	if e.Filter.Ratio != 1 || *e.Filter.Above != 0.1 || e.GroupSize != 4 || e.Seed != 3 || e.Algo.AdvEstimator != "grpo" || e.Model != "tiny" {
		t.Errorf("after sets: %+v", e)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The cache key covers the reward and filter sources and the custom
// environment's label, and nothing that does not change the result.
func TestCacheKey(t *testing.T) {
	key := func(e Experiment) string {
		t.Helper()
		s, err := e.Spec()
		if err != nil {
			t.Fatal(err)
		}
		return s.Key
	}
	base := Experiment{Env: Bandit(), Reward: Reward("reward")}
	k := key(base)
	same := base
	same.Name, same.Fresh = "renamed", true
	if key(same) != k {
		t.Error("name or Fresh changed the key")
	}
	for name, e := range map[string]Experiment{
		"reward":  {Env: Bandit(), Reward: Reward("reward + 1")},
		"filter":  {Env: Bandit(), Reward: Reward("reward"), Filter: Filter("mean")},
		"policy":  {Env: Bandit(), Reward: Reward("reward"), RewardErrors: UseZero},
		"env opt": {Env: Bandit(HiProb(0.3)), Reward: Reward("reward")},
		"seed":    {Env: Bandit(), Reward: Reward("reward"), Seed: 2},
		"custom":  {Env: Custom("coin", func() Env { return nil }), Reward: Reward("reward")},
	} {
		if key(e) == k {
			t.Errorf("%s did not change the key", name)
		}
	}
	// A swept expression is compiled again, not run with the old program.
	e := base
	if err := setField(&e, "Reward.Source", "reward * 2"); err != nil {
		t.Fatal(err)
	}
	if err := e.compile(); err != nil {
		t.Fatal(err)
	}
	if v, _ := e.Reward.Eval(&Trajectory{Reward: 3}); v != 6 {
		t.Errorf("swept reward gives %v, want 6", v)
	}
}

func TestTable(t *testing.T) {
	tb := &Table{Title: "t", Columns: []string{"metric", "value"}, Rows: [][]string{{"a<b", "1"}, {"long name", "22.5"}}}
	want := "t\nmetric     value\na<b            1\nlong name   22.5"
	if got := tb.String(); got != want {
		t.Errorf("String:\n%s\nwant\n%s", got, want)
	}
	if h := tb.HTML(); !strings.Contains(h, "<td style=\"text-align:left\">a&lt;b</td>") {
		t.Errorf("HTML not escaped: %s", h)
	}
}

func TestDisplayHook(t *testing.T) {
	var got []map[string]any
	SetDisplay(func(b map[string]any, id string) { got = append(got, b) })
	defer SetDisplay(nil)
	Display(&Table{Columns: []string{"x"}})
	Markdown("# hi")
	Display(42)
	if len(got) != 3 || got[0]["text/html"] == nil || got[1]["text/markdown"] != "# hi" || got[2]["text/plain"] != "42" {
		t.Errorf("published %v", got)
	}
}

// A threshold filter keeps every group above it (ratio 1 unless given);
// built-in metric names select the trainer's own metric, with no program.
func TestFilterApply(t *testing.T) {
	e := Experiment{Env: Bandit(), Filter: Filter("mean", Above(0.2))}
	cfg, err := e.Config()
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Algo; a.FilterAbove == nil || *a.FilterAbove != 0.2 || a.FilterRatio != 1 {
		t.Errorf("above: ratio %v, above %v", a.FilterRatio, a.FilterAbove)
	}
	e.Filter = Filter("std_rev", TopP(0.5), DropZeroStd())
	if cfg, err = e.Config(); err != nil {
		t.Fatal(err)
	}
	if a := cfg.Algo; a.FilterMetric != "std_rev" || a.FilterRatio != 0.5 || !a.FilterDropZeroStd || e.Filter.prog != nil {
		t.Errorf("built-in: %+v", a)
	}
	if got := e.Filter.String(); got != `Filter("std_rev", TopP(0.5), DropZeroStd())` {
		t.Errorf("String() = %s", got)
	}
}

// Model: Pretrained(dir) and Checkpoint(dir) start from a loaded model,
// without a warm start unless asked; the run cache key follows the files.
func TestLoadedModels(t *testing.T) {
	dir := t.TempDir()
	src := "../engine/hf/testdata/qwen2_untied_f32"
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := Experiment{Env: Bandit(), Model: Pretrained(dir)}
	c, err := e.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.Pretrained != dir || c.Init != "" || c.WarmStart.Steps != 0 {
		t.Fatalf("Pretrained: config pretrained %q init %q warm start %d", c.Pretrained, c.Init, c.WarmStart.Steps)
	}
	e.WarmStart.Steps = 5
	if c, _ := e.Config(); c.WarmStart.Steps != 5 {
		t.Fatalf("an explicit WarmStart.Steps gave %d", c.WarmStart.Steps)
	}
	key := func(e Experiment) string {
		t.Helper()
		s, err := e.Spec()
		if err != nil {
			t.Fatal(err)
		}
		return s.Key
	}
	k1 := key(e)
	if key(e) != k1 {
		t.Fatal("the cache key is not stable")
	}
	cfgPath := filepath.Join(dir, "config.json")
	data, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, append(data, ' '), 0o644)
	if key(e) == k1 {
		t.Fatal("editing config.json did not change the cache key")
	}
	later := time.Now().Add(time.Hour)
	k2 := key(e)
	os.Chtimes(filepath.Join(dir, "model.safetensors"), later, later)
	if key(e) == k2 {
		t.Fatal("rewriting the weights did not change the cache key")
	}

	if _, err := (Experiment{Env: Bandit(), Model: Checkpoint(t.TempDir())}).Config(); err == nil || !strings.HasPrefix(err.Error(), "Model: ") || !strings.Contains(err.Error(), "is no checkpoint") {
		t.Errorf("a checkpoint directory without a model: %v", err)
	}
	if _, err := (Experiment{Env: Bandit(), Model: Pretrained("")}).Config(); err == nil || !strings.HasPrefix(err.Error(), "Model: pretrained: ") {
		t.Errorf("an empty directory: %v", err)
	}
	c, err = Experiment{Env: Bandit(), Model: "tiny"}.Config()
	if err != nil || c.Model != "tiny" || c.Pretrained != "" || c.WarmStart.Steps == 0 {
		t.Errorf("a preset: %+v, %v", c, err)
	}
}

func TestMonitorReuseAndWarmupFields(t *testing.T) {
	e := Experiment{Env: Bandit(), Monitor: "rewind", ReuseRollouts: 2, LRWarmup: 10}
	c, err := e.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.Monitor.Action != "rewind" || c.ReuseRollouts != 2 || c.LRWarmup != 10 {
		t.Errorf("monitor action %q, reuse %d, lr warm-up %d; want rewind, 2, 10", c.Monitor.Action, c.ReuseRollouts, c.LRWarmup)
	}
	bad := Experiment{Env: Bandit(), LRWarmup: -1}
	if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "LRWarmup:") {
		t.Errorf("LRWarmup -1: error %v, want one naming the LRWarmup field", err)
	}
	e.Monitor = "panic"
	if err := e.Validate(); err == nil || !strings.HasPrefix(err.Error(), "Monitor:") {
		t.Errorf("Monitor \"panic\": error %v, want one naming the Monitor field", err)
	}
}

// LoRA reaches the trainer with its defaults (alpha 2·rank, all linear
// layers), a bad one names the Experiment's field, and off leaves the
// configuration, hence the run's cache key, as before.
func TestLoRAField(t *testing.T) {
	e := Experiment{Env: Bandit(), LoRA: LoRA{Rank: 8}}
	c, err := e.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.LoRA == nil || c.LoRA.Rank != 8 || c.LoRA.Alpha != 16 || !slices.Equal(c.LoRA.Targets, []string{"all-linear"}) {
		t.Fatalf("LoRA{Rank: 8}: %+v", c.LoRA)
	}
	if off, _ := (Experiment{Env: Bandit()}).Config(); off.LoRA != nil {
		t.Fatalf("no LoRA: %+v", off.LoRA)
	}
	for _, tc := range []struct {
		l    LoRA
		want string
	}{{LoRA{Rank: -1}, "LoRA.Rank:"}, {LoRA{Rank: 4, Targets: []string{"qproj"}}, "LoRA.Targets:"}} {
		bad := Experiment{Env: Bandit(), LoRA: tc.l}
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error starting %q", tc.l, err, tc.want)
		}
	}
}
