package envs_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/envs"
	"github.com/ragen-go/ragen/envs/envtest"
)

// line is a test environment: walk on positions 0..5 from 2; reaching 5
// pays 1 and ends the episode, every move costs 0.01.
type line struct {
	pos   int
	steps int
	d     envs.Description
}

func newLine(perTurn, perEpisode, turns int) *line {
	return &line{d: envs.Description{
		Name:                 "line",
		Instruction:          "Walk right to the end of the line.",
		Legend:               []envs.Symbol{{Glyph: "P", Meaning: "you"}, {Glyph: ".", Meaning: "floor"}},
		Actions:              []string{"Left", "Right"},
		MaxActionsPerTurn:    perTurn,
		MaxActionsPerEpisode: perEpisode,
		MaxTurns:             turns,
	}}
}

func (l *line) Describe() envs.Description { return l.d }
func (l *line) Reset(seed int64) (string, error) {
	l.pos, l.steps = 2, 0
	return l.Render(), nil
}
func (l *line) Render() string {
	b := []byte("......")
	b[l.pos] = 'P'
	return string(b)
}
func (l *line) Step(a string) envs.StepResult {
	before := l.pos
	switch a {
	case "Left":
		l.pos = max(0, l.pos-1)
	case "Right":
		l.pos++
	default:
		return envs.StepResult{Observation: l.Render()}
	}
	l.steps++
	r := -0.01
	done := l.pos == 5
	if done {
		r += 1
	}
	return envs.StepResult{Observation: l.Render(), Reward: r, Done: done,
		Info: envs.Info{Valid: true, Effective: l.pos != before, Success: done,
			Metrics: map[string]float64{"position": float64(l.pos)}}}
}

func init() {
	envs.Register(envs.Spec{
		Name:    "test-line",
		Summary: "a line walk for the tests",
		Options: append([]envs.Option{
			{Name: "rate", Kind: envs.Float, Default: 0.5, Doc: "a probability"},
			{Name: "mode", Kind: envs.String, Default: "a", Choices: []string{"a", "b"}, Doc: "a mode"},
			{Name: "fast", Kind: envs.Bool, Default: false, Doc: "a switch"},
		}, envs.BudgetOptions(5, 10, 5)...),
		New: func(o envs.Options) (envs.Env, error) {
			if r := o.Float("rate"); r < 0 || r > 1 {
				return nil, envs.OptionError("test-line", "rate", "is a probability, must be in [0, 1] (got %v)", r)
			}
			l := newLine(0, 0, 0)
			if err := envs.Budget("test-line", o, &l.d); err != nil {
				return nil, err
			}
			return l, nil
		},
	})
}

func TestRegistry(t *testing.T) {
	e, err := envs.New("test-line", map[string]any{"max_actions_per_turn": 3.0, "rate": 1})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.Describe(); d.MaxActionsPerTurn != 3 || d.MaxActionsPerEpisode != 10 || d.MaxTurns != 5 {
		t.Errorf("budget from options: %+v", d)
	}
	if _, ok := envs.Lookup("test-line"); !ok {
		t.Error("Lookup misses test-line")
	}
	found := false
	for _, n := range envs.Names() {
		found = found || n == "test-line"
	}
	if !found {
		t.Error("Names misses test-line")
	}
	for _, c := range []struct {
		name string
		opts map[string]any
		want string
	}{
		{"no-such", nil, `unknown environment "no-such" (registered: `},
		{"test-line", map[string]any{"speed": 1}, `test-line: unknown option "speed" (valid: rate, mode, fast, max_actions_per_turn, max_actions_per_episode, max_turns)`},
		{"test-line", map[string]any{"rate": "high"}, "test-line option rate: want float, got string high"},
		{"test-line", map[string]any{"max_turns": 2.5}, "test-line option max_turns: want an integer, got 2.5"},
		{"test-line", map[string]any{"fast": 1}, "test-line option fast: want bool, got int 1"},
		{"test-line", map[string]any{"mode": "c"}, `test-line option mode: want one of a, b, got "c"`},
		{"test-line", map[string]any{"rate": 1.5}, "test-line option rate: is a probability, must be in [0, 1] (got 1.5)"},
		{"test-line", map[string]any{"max_actions_per_episode": 0}, "test-line option max_actions_per_episode: must be at least 1 (got 0)"},
	} {
		_, err := envs.New(c.name, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%q, %v): error %v, want %q", c.name, c.opts, err, c.want)
		}
	}
}

func TestParseOptionValue(t *testing.T) {
	for _, c := range []struct {
		kind envs.Kind
		text string
		want any
	}{
		{envs.Int, "12", 12}, {envs.Float, "0.25", 0.25}, {envs.Float, "3", 3.0},
		{envs.Bool, "false", false}, {envs.Bool, "yes", true}, {envs.String, "x y", "x y"},
	} {
		got, err := envs.ParseOptionValue(envs.Option{Name: "o", Kind: c.kind}, c.text)
		if err != nil || got != c.want {
			t.Errorf("%v %q: %v, %v; want %v", c.kind, c.text, got, err, c.want)
		}
	}
	for _, c := range []struct {
		kind envs.Kind
		text string
	}{{envs.Int, "1.5"}, {envs.Int, "x"}, {envs.Float, "0.5x"}, {envs.Bool, "maybe"}} {
		if _, err := envs.ParseOptionValue(envs.Option{Name: "o", Kind: c.kind}, c.text); err == nil {
			t.Errorf("%v %q: no error", c.kind, c.text)
		}
	}
}

func TestParse(t *testing.T) {
	acts := []string{"Left", "Right"}
	for _, c := range []struct {
		in      string
		think   bool
		max     int
		ok      bool
		thought string
		answer  string
		valid   string
		unknown int
		cut     int
	}{
		{"<think>go right</think><answer>Right || Right</answer>", true, 5, true, "go right", "Right || Right", "Right Right", 0, 0},
		{"<THINK> a </Think>\n <ANSWER> right||LEFT|| ||</answer>", true, 5, true, "a", "right||LEFT|| ||", "Right Left", 0, 0},
		{"<think>x</think><answer>Right || Up || Left</answer>", true, 5, true, "x", "Right || Up || Left", "Right Left", 1, 0},
		{"<think>x</think><answer>Right || Right || Left</answer>", true, 2, true, "x", "Right || Right || Left", "Right Right", 0, 1},
		{"<think>x</think><answer></answer>", true, 5, true, "x", "", "", 0, 0},
		{"<think>x</think> then <answer>Right</answer>", true, 5, false, "", "", "", 0, 0},
		{"<think>x</think><answer>Right", true, 5, false, "", "", "", 0, 0},
		{"<answer>Right</answer>", true, 5, false, "", "", "", 0, 0},
		{"<answer>Right</answer>", false, 5, true, "", "Right", "Right", 0, 0},
		{"Right", true, 5, false, "", "", "", 0, 0},
		// RAGEN's lazy regex: a </think> not followed by <answer> is part of the thought.
		{"<think>a</think>b</think><answer>Left</answer>trailing", true, 5, true, "ab", "Left", "Left", 0, 0},
		// Special tokens inside are removed.
		{"<think><think>a<|im_end|></think><answer><answer>Left</answer>", true, 5, true, "a", "Left", "Left", 0, 0},
	} {
		p := envs.Parse(c.in, c.think, acts, c.max)
		if p.FormatOK != c.ok || p.Think != c.thought || p.Answer != c.answer ||
			strings.Join(p.Valid, " ") != c.valid || p.Unknown != c.unknown || p.Cut != c.cut {
			t.Errorf("Parse(%q) = %+v", c.in, p)
		}
	}
	// A language environment takes every action as written.
	p := envs.Parse("<think>t</think><answer> 2 + 3 </answer>", true, nil, 1)
	if !p.FormatOK || len(p.Valid) != 1 || p.Valid[0] != "2 + 3" {
		t.Errorf("language answer: %+v", p)
	}
	if got := p.Canonical("raw", true); got != "<think>t</think><answer>2 + 3</answer>" {
		t.Errorf("canonical: %q", got)
	}
	bad := envs.Parse("oops", true, nil, 1)
	if got := bad.Canonical("oops", true); got != "oops" {
		t.Errorf("canonical of a broken response: %q", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"<think>go</think><answer>Left || Right</answer>",
		"<think><think><think>",
		"<answer>||||</answer>",
		"<think></think></think><answer><answer></answer></answer>",
		"<THINK>é</THINK><ANSWER>RIGHT</ANSWER>",
		"<think>\xff</think>\n<answer>\xfe</answer>",
	} {
		f.Add(s, true, 5)
	}
	f.Add("<answer>left</answer>", false, 0)
	f.Fuzz(func(t *testing.T, s string, think bool, max int) {
		p := envs.Parse(s, think, []string{"Left", "Right"}, max)
		if !p.FormatOK && (len(p.Actions) > 0 || p.Think != "" || p.Answer != "") {
			t.Fatalf("broken format but parts found: %+v", p)
		}
		if max > 0 && len(p.Actions) > max {
			t.Fatalf("%d actions kept, max %d", len(p.Actions), max)
		}
		if len(p.Valid)+p.Unknown != len(p.Actions) {
			t.Fatalf("valid %d + unknown %d != actions %d", len(p.Valid), p.Unknown, len(p.Actions))
		}
		for _, a := range p.Actions {
			if a == "" || a != strings.TrimSpace(a) || strings.Contains(a, envs.ActionSeparator) {
				t.Fatalf("bad action %q", a)
			}
		}
		for _, v := range p.Valid {
			if v != "Left" && v != "Right" {
				t.Fatalf("valid action %q not in the environment's spelling", v)
			}
		}
	})
}

func TestTurn(t *testing.T) {
	cfg := envs.DefaultTurnConfig()
	run := func(resp string, left int) (*line, envs.TurnResult) {
		l := newLine(3, 10, 5)
		l.Reset(0)
		return l, envs.RunTurn(l, l.Describe(), resp, left, cfg)
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

	_, r := run("<think>t</think><answer>Right || Left</answer>", 10)
	if strings.Join(r.Executed, " ") != "Right Left" || !near(r.Reward, -0.02) || r.Penalty != 0 || r.Done || r.ActionsLeft != 8 {
		t.Errorf("plain turn: %+v", r)
	}
	// An unknown action: penalty, the valid ones still run.
	_, r = run("<think>t</think><answer>Right || Jump || Right</answer>", 10)
	if len(r.Executed) != 2 || r.Invalid != 1 || !near(r.Penalty, -0.1) || !near(r.Reward, -0.12) {
		t.Errorf("unknown action: %+v", r)
	}
	// A broken format runs nothing and pays the penalty.
	l, r := run("Right || Right", 10)
	if len(r.Executed) != 0 || !near(r.Reward, -0.1) || l.steps != 0 || r.ActionsLeft != 10 {
		t.Errorf("broken format: %+v", r)
	}
	// An empty answer is penalised too.
	_, r = run("<think>t</think><answer> </answer>", 10)
	if !near(r.Reward, -0.1) {
		t.Errorf("empty answer: %+v", r)
	}
	// Cut to the per-turn maximum (3) without penalty.
	_, r = run("<think>t</think><answer>Left || Left || Left || Left</answer>", 10)
	if len(r.Executed) != 3 || r.Parsed.Cut != 1 || r.Penalty != 0 {
		t.Errorf("cut: %+v", r)
	}
	// The episode budget drops the rest and truncates.
	_, r = run("<think>t</think><answer>Left || Left || Left</answer>", 2)
	if len(r.Executed) != 2 || r.Dropped != 1 || !r.Done || !r.Truncated || r.Success || r.Penalty != 0 {
		t.Errorf("budget: %+v", r)
	}
	// The environment ending the episode stops the turn.
	_, r = run("<think>t</think><answer>Right || Right || Right</answer>", 10)
	if len(r.Executed) != 3 || !r.Done || r.Truncated || !r.Success || r.Metrics["position"] != 5 {
		t.Errorf("goal: %+v", r)
	}
	_, r = run("<think>t</think><answer>Right || Right || Right || Left</answer>", 10)
	if r.Parsed.Cut != 1 || r.Dropped != 0 {
		t.Errorf("goal with a cut action: %+v", r)
	}
	// A configurable penalty.
	cfg.FormatPenalty = -1
	_, r = run("nonsense", 10)
	if r.Reward != -1 {
		t.Errorf("penalty -1: %+v", r)
	}
}

func TestEpisode(t *testing.T) {
	l := newLine(2, 10, 3)
	ep, err := envs.Start(l, 1, envs.DefaultTurnConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := ep.Step("<think>t</think><answer>Left</answer>"); err != nil {
			t.Fatal(err)
		}
	}
	if !ep.Done || ep.Success || ep.Turn != 3 || !ep.Turns[2].Truncated || ep.ActionsLeft != 7 {
		t.Errorf("max turns: %+v", ep)
	}
	if _, err := ep.Step("<think>t</think><answer>Left</answer>"); err == nil {
		t.Error("a turn after the end is not an error")
	}
	if got := ep.Return(); got > -0.0299 || got < -0.0301 {
		t.Errorf("return %v, want -0.03", got)
	}
}

func TestPromptGolden(t *testing.T) {
	l := newLine(3, 10, 5)
	tr, err := envtest.Transcript(l, 0, envtest.Scripted(
		"<think>right twice</think><answer>Right || Right</answer>",
		"<think>oops</think><answer>Jump || Right</answer>",
	))
	if err != nil {
		t.Fatal(err)
	}
	c := envs.PromptConfig{Think: false, MaxResponseWords: 50}
	tr += "=== no-think variant, turn 2\n" + envs.UserMessage(l.Describe(), 2, -0.3, "P.....", 1, c)
	envtest.Golden(t, "prompt.golden", tr)
}

func TestFormatReward(t *testing.T) {
	for r, want := range map[float64]string{0.1 + 0.2: "0.3", -0.1: "-0.1", 1: "1", -0.00001: "0", 0.12345: "0.1235"} {
		if got := envs.FormatReward(r); got != want {
			t.Errorf("FormatReward(%v) = %q, want %q", r, got, want)
		}
	}
}

func ExampleParse() {
	p := envs.Parse("<think>The goal is right.</think><answer>right || Right || Fly</answer>",
		true, []string{"Left", "Right"}, 5)
	fmt.Println(p.FormatOK, p.Valid, p.Unknown)
	// Output: true [Right Right] 1
}

// Demonstrate makes line an Expert: Right, or Left when imperfect.
func (l *line) Demonstrate(rng *rand.Rand, imperfect bool) string {
	if imperfect {
		return "<think>maybe left</think><answer>Left</answer>"
	}
	return "<think>the end is to the right</think><answer>Right || Right</answer>"
}

func TestDemonstrations(t *testing.T) {
	cfg := envs.DemoConfig{Episodes: 3, Seed: 10, Turn: envs.DefaultTurnConfig(), Prompt: envs.DefaultPromptConfig()}
	demos, err := envs.Demonstrations(newLine(2, 10, 5), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(demos) != 3 || demos[2].Seed != 12 {
		t.Fatalf("demos: %+v", demos)
	}
	for _, d := range demos {
		// Right Right, then Right: two turns.
		roles := ""
		for _, m := range d.Messages {
			roles += m.Role[:1]
		}
		if roles != "suaua" || !d.Success || d.Messages[3].Content[:8] != "Reward: " {
			t.Errorf("demo %+v", d)
		}
	}
	cfg.ImperfectRate = 1
	cfg.Turn.Think = false
	demos, _ = envs.Demonstrations(newLine(2, 10, 5), cfg)
	if d := demos[0]; d.Success || d.Messages[2].Content != "<answer>Left</answer>" {
		t.Errorf("imperfect no-think demo: %+v", d)
	}
	cfg.ImperfectRate = 0.5
	a, _ := envs.Demonstrations(newLine(2, 10, 5), cfg)
	b, _ := envs.Demonstrations(newLine(2, 10, 5), cfg)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("demonstrations differ between two runs")
	}
	cfg.ImperfectRate = 2
	if _, err := envs.Demonstrations(newLine(2, 10, 5), cfg); err == nil || !strings.Contains(err.Error(), "imperfect_rate must be in [0, 1] (got 2)") {
		t.Errorf("bad rate: %v", err)
	}
}

func TestNewRand(t *testing.T) {
	// SplitMix64's published first output for seed 0.
	if got := envs.NewRand(0).Uint64(); got != 0xE220A8397B1DCDAF {
		t.Errorf("first output %#x, want 0xe220a8397b1dcdaf", got)
	}
	a, b := envs.NewRand(42), envs.NewRand(42)
	var counts [10]int
	for i := 0; i < 100000; i++ {
		x := a.Intn(10)
		if x != b.Intn(10) {
			t.Fatal("same seed, different streams")
		}
		counts[x]++
	}
	for d, c := range counts {
		if c < 9500 || c > 10500 { // 10000 ± 5.3 standard deviations
			t.Errorf("digit %d drawn %d times of 100000", d, c)
		}
	}
}
