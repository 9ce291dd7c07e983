package dsl

import (
	"math"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
)

// sampleRun has validation samples at steps 0 and 10 (two seeds each, the
// same at both steps) and training samples at steps 1 and 10.
func sampleRun() *Run {
	val := func(step int, seed int64, resp string, success bool) metrics.Sample {
		return metrics.Sample{Step: step, Split: metrics.SplitVal, Seed: seed, Reward: 0.5, Success: success,
			Text: "<|im_start|>user\ngrid<|im_end|>",
			Turns: []metrics.SampleTurn{
				{Response: resp, Actions: []string{"Up", "Left"}, Reward: -0.1},
				{Response: "<think>done</think><answer>Down</answer>", Reward: 1},
			}}
	}
	train := func(step int) metrics.Sample {
		return metrics.Sample{Step: step, Split: metrics.SplitTrain, Seed: 7, Reward: 1, Success: true,
			Turns: []metrics.SampleTurn{{Response: "a<b", Actions: []string{"Up"}}, {Response: "c", Reward: 1}},
			Tokens: []metrics.SampleToken{
				{Text: "a<b", Turn: 0, Value: 0.25, Advantage: 0.5, Return: 0.75},
				{Text: "\n", Turn: 0, Value: 0.5, Advantage: -0.25, Return: 0.25},
				{Text: "</answer>", Turn: 1, Reward: 1, Value: 0.5, Advantage: 0.5, Return: 1},
			}}
	}
	r := &Run{Name: "r"}
	r.History.Samples = []metrics.Sample{
		val(0, 101, "<think>x</think><answer>Up</answer>", false), val(0, 102, "<think>y</think>", false),
		train(1),
		val(10, 101, "<think>z</think><answer>Up</answer>", true), val(10, 102, "<think>w</think>", true),
		train(10),
	}
	return r
}

func TestRunSamples(t *testing.T) {
	r := sampleRun()
	seeds := func(ss []metrics.Sample) []int64 {
		var out []int64
		for _, s := range ss {
			out = append(out, s.Seed)
		}
		return out
	}
	if got := r.Samples("val", 0); len(got) != 2 || got[0].Step != 0 || seeds(got)[1] != 102 {
		t.Errorf("val at 0: %+v", got)
	}
	if got := r.Samples("val", -1); len(got) != 2 || got[0].Step != 10 {
		t.Errorf("last val: %+v", got)
	}
	if got := r.Samples("train", -1); len(got) != 1 || got[0].Step != 10 || got[0].Split != "train" {
		t.Errorf("last train: %+v", got)
	}
	if got := r.Samples("train", 5); got != nil {
		t.Errorf("a step without samples gives %v", got)
	}
	if got := (&Run{}).Samples("val", -1); got != nil {
		t.Errorf("a run without samples gives %v", got)
	}
	defer func() {
		err, _ := recover().(error)
		if err == nil || err.Error() != `Samples: unknown split "validation" (want "val" or "train")` {
			t.Errorf("unknown split: recovered %v", err)
		}
	}()
	r.Samples("validation", 0)
}

func TestShowSamples(t *testing.T) {
	r := sampleRun()
	v := ShowSamples(append(r.Samples("val", 0), r.Samples("val", -1)...)...)
	b := v.MIMEBundle()
	h := b["text/html"].(string)
	if strings.Contains(h, "<think>") || strings.Contains(h, "<|im_start|>") {
		t.Errorf("HTML not escaped:\n%s", h)
	}
	for _, want := range []string{
		"&lt;think&gt;x&lt;/think&gt;&lt;answer&gt;Up&lt;/answer&gt;",
		"&lt;think&gt;z&lt;/think&gt;",
		"turn 1 · reward -0.1 · actions: Up, Left",
		"turn 2 · reward 1 · no action ran",
		">val · step 0</th>", ">val · step 10</th>",
		"val · step 10 · seed 102 · reward 0.5",
		"&lt;|im_start|&gt;user",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q:\n%s", want, h)
		}
	}
	// Side by side: two columns, and each row has seed 101, then 102.
	if n := strings.Count(h, "<th "); n != 2 {
		t.Errorf("%d columns, want 2", n)
	}
	if n := strings.Count(h, "<tr>"); n != 3 {
		t.Errorf("%d rows (with the header), want 3", n)
	}
	if i, j := strings.Index(h, "step 10 · seed 101"), strings.Index(h, "step 0 · seed 102"); i < 0 || j < 0 || i > j {
		t.Errorf("row 1 should hold seed 101 of both steps before row 2")
	}

	txt := b["text/plain"].(string)
	for _, want := range []string{
		"val · step 0 · seed 101 · reward 0.5 · failure\n  turn 1 · reward -0.1 · actions: Up, Left\n    <think>x</think><answer>Up</answer>\n  turn 2",
		"val · step 10 · seed 102 · reward 0.5 · success",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
	if got := ShowSamples().String(); !strings.HasPrefix(got, "no samples") {
		t.Errorf("empty view: %q", got)
	}
}

func TestShowCredit(t *testing.T) {
	s := sampleRun().Samples("train", -1)[0]
	v := ShowCredit(s)
	b := v.MIMEBundle()
	want := `credit assignment · train step 10 · seed 7 · reward 1 (success) · 3 agent tokens
#  turn        token  reward  value  advantage  return
0     1        "a<b"       0   0.25        0.5    0.75
1     1         "\n"       0    0.5      -0.25    0.25
2     2  "</answer>"       1    0.5        0.5       1`
	if got := b["text/plain"].(string); got != want {
		t.Errorf("text:\n%s\nwant\n%s", got, want)
	}
	h := b["text/html"].(string)
	if strings.Contains(h, "a<b") || strings.Contains(h, "</answer>") {
		t.Errorf("HTML not escaped:\n%s", h)
	}
	for _, want := range []string{
		// Token 0: the largest advantage, deep blue; its numbers on hover.
		`<span style="background:#2687be;color:#fff" title="token 0 · turn 1 · &#34;a&lt;b&#34;` + "\nreward 0\nvalue 0.25\nadvantage 0.5\nreturn 0.75\">a&lt;b</span>",
		// Token 1: half the scale, light vermillion, dark text; a newline
		// shows as ↵ before the break.
		`<span style="background:#edbb93;color:#222"`, "↵\n</span>",
		"turn 1 · reward 0 · actions: Up", "turn 2 · reward 1 · no action ran",
		`title="reward of token 2">r 1</span>`,
		"-0.5</span>", "+0.5</span>",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q:\n%s", want, h)
		}
	}
	if n := strings.Count(h, "border-top:1px dashed"); n != 1 {
		t.Errorf("%d turn boundaries, want 1", n)
	}

	val := ShowCredit(sampleRun().Samples("val", 0)[0])
	if got := val.String(); got != `val step 0 has no tokens: only training samples keep them (run.Samples("train", step))` {
		t.Errorf("val sample: %q", got)
	}
}

func TestAdvColor(t *testing.T) {
	for _, tc := range []struct {
		a, m   float64
		bg, fg string
	}{
		{0, 1, "#ffffff", "#222"},
		{1, 1, "#2687be", "#fff"},
		{2, 1, "#2687be", "#fff"}, // clamped
		{-1, 1, "#db7626", "#fff"},
		{0.25, 1, "#c9e1ef", "#222"},
		{0, 0, "#ffffff", "#222"},
	} {
		bg, fg := advColor(tc.a, tc.m)
		if bg != tc.bg || fg != tc.fg {
			t.Errorf("advColor(%g, %g) = %s, %s; want %s, %s", tc.a, tc.m, bg, fg, tc.bg, tc.fg)
		}
	}
}

func TestSeriesFirstLastMax(t *testing.T) {
	s := Series{Values: []float64{0.3, 0.9, 0.5}}
	if s.First() != 0.3 || s.Last() != 0.5 || s.Max() != 0.9 {
		t.Errorf("First, Last, Max = %v, %v, %v; want 0.3, 0.5, 0.9", s.First(), s.Last(), s.Max())
	}
	var empty Series
	if !math.IsNaN(empty.First()) || !math.IsNaN(empty.Max()) {
		t.Errorf("an empty series gives %v, %v; want NaN", empty.First(), empty.Max())
	}
}
