package dsl

import (
	"testing"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/rollout"
	"github.com/ragen-go/ragen/engine/train"
)

// RAGEN v2's strategies and metrics set the algorithm's fields; the
// default Filter leaves them zero, so a StarPO-S experiment's
// configuration (and run cache key) is what it was.
func TestFilterV2Apply(t *testing.T) {
	e := Experiment{Env: Bandit(), Filter: Filter("reward_variance", TopPLinear(0.9), ExcludeZero(), SelectionEps(0.02), StopAfterEmpty(5))}
	cfg, err := e.Config()
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Algo
	if a.FilterMetric != algo.FilterRewardVariance || a.FilterStrategy != algo.FilterTopP || a.FilterValue != 0.9 ||
		a.FilterTopPMode != algo.TopPLinear || !a.FilterExcludeZero || a.FilterSelectionEps == nil || *a.FilterSelectionEps != 0.02 ||
		cfg.FilterEmptyStop != 5 || e.Filter.prog != nil {
		t.Errorf("top-p linear: %+v, empty stop %d", a, cfg.FilterEmptyStop)
	}
	if got := e.Filter.String(); got != `Filter("reward_variance", TopPLinear(0.9), ExcludeZero(), SelectionEps(0.02), StopAfterEmpty(5))` {
		t.Errorf("String() = %s", got)
	}
	for _, c := range []struct {
		f        FilterRule
		strategy string
		value    float64
		mode     string
		str      string
	}{
		{Filter("entropy", TopPSoftmax(0.8), Smallest()), algo.FilterTopP, 0.8, algo.TopPSoftmax, `Filter("entropy", TopPSoftmax(0.8), Smallest())`},
		{Filter("length", TopK(0.25)), algo.FilterTopK, 0.25, "", `Filter("length", TopK(0.25))`},
		{Filter("std", TopKAbs(3)), algo.FilterTopKAbs, 3, "", `Filter("std", TopKAbs(3))`},
		{Filter("entropy_variance", MinP(0.5)), algo.FilterMinP, 0.5, "", `Filter("entropy_variance", MinP(0.5))`},
	} {
		e.Filter = c.f
		cfg, err := e.Config()
		if err != nil {
			t.Fatalf("%s: %v", c.str, err)
		}
		if a := cfg.Algo; a.FilterStrategy != c.strategy || a.FilterValue != c.value || a.FilterTopPMode != c.mode {
			t.Errorf("%s: %+v", c.str, a)
		}
		if got := c.f.String(); got != c.str {
			t.Errorf("String() = %s, want %s", got, c.str)
		}
	}

	e.Filter = Filter("std", TopP(0.5), TopK(0.5))
	if _, err := e.Config(); err == nil || err.Error() != "Filter: TopP(0.5) is StarPO-S's ratio and cannot be combined with the top_k strategy" {
		t.Errorf("TopP with TopK: err = %v", err)
	}
	e.Filter = Filter("std", MinP(2))
	if _, err := e.Config(); err == nil || err.Error() != "Filter (Algo.FilterValue): must be in (0, 1] for filter_strategy min_p (got 2)" {
		t.Errorf("MinP(2): err = %v", err)
	}

	def, err := Experiment{Env: Bandit()}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if a := def.Algo; a.FilterStrategy != "" || a.FilterValue != 0 || a.FilterSelectionEps != nil || a.FilterExcludeZero || def.FilterEmptyStop != 0 || def.LossMask != "" {
		t.Errorf("default experiment: %+v", a)
	}
}

// LossMask takes the named rules as they are and compiles anything else as
// a boolean expression over the token.
func TestLossMaskExpr(t *testing.T) {
	e := Experiment{Env: Bandit(), LossMask: "answer"}
	cfg, err := e.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LossMask != train.MaskAnswer || cfg.LossMaskFunc != nil {
		t.Errorf("named rule: %q, func %v", cfg.LossMask, cfg.LossMaskFunc != nil)
	}
	e.LossMask = `span == "answer" || turn == turns && pos < tokens - 1`
	if cfg, err = e.Config(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tok  train.MaskToken
		want bool
	}{
		{train.MaskToken{Turn: 1, Turns: 2, Span: rollout.SpanAnswer, Pos: 3, Len: 5}, true},
		{train.MaskToken{Turn: 1, Turns: 2, Span: rollout.SpanThink, Pos: 0, Len: 5}, false},
		{train.MaskToken{Turn: 2, Turns: 2, Span: rollout.SpanThink, Pos: 0, Len: 5}, true},
		{train.MaskToken{Turn: 2, Turns: 2, Span: rollout.SpanFormat, Pos: 4, Len: 5}, false},
	} {
		if got, err := cfg.LossMaskFunc(c.tok); err != nil || got != c.want {
			t.Errorf("%+v: %v, %v; want %v", c.tok, got, err, c.want)
		}
	}
	e.LossMask = "turn + 1"
	if _, err := e.Config(); err == nil || err.Error() != "LossMask: loss mask expression: expected bool, but got int (1:1)\n | turn + 1\n | ^" {
		t.Errorf("non-bool: err = %q", err)
	}
}
