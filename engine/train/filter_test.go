package train

import (
	"context"
	"testing"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/metrics"
)

// The entropy metric makes the trainer evaluate every trajectory before
// filtering; top-k 0.5 keeps 2 of the 4 groups, those of highest mean
// entropy, so the kept groups' statistic is at least the mean's.
func TestTrainFilterByEntropy(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes = 1, 0
	c.Algo.FilterMetric = algo.FilterEntropy
	c.Algo.FilterStrategy, c.Algo.FilterValue = algo.FilterTopK, 0.5
	tr := run(t, c)
	s := tr.History.Steps[len(tr.History.Steps)-1].Values
	if s[metrics.FilterKeepRatio] != 0.5 {
		t.Errorf("keep ratio %v, want 0.5", s[metrics.FilterKeepRatio])
	}
	mean, chosen := s[metrics.FilterScoreMean], s[metrics.ChosenFilterScoreMean]
	if !(mean > 0 && chosen >= mean) {
		t.Errorf("entropy statistic: mean %v, chosen %v", mean, chosen)
	}
	if _, ok := s[metrics.PolicyLoss]; !ok {
		t.Error("no update after filtering by entropy")
	}
}

// A filter that keeps nothing skips every step; FilterEmptyStop ends the
// run, as finished, after that many in a row (RAGEN's empty_filtered_steps).
func TestTrainEmptyFilterStops(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes = 5, 0
	above := 1e9
	c.Algo.FilterRatio, c.Algo.FilterAbove = 1, &above
	c.FilterEmptyStop = 2
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tr.StepsDone() != 2 {
		t.Errorf("stopped after %d steps, want 2", tr.StepsDone())
	}
	for i, want := range []float64{1, 2} {
		s := tr.History.Steps[i+1].Values
		if s[metrics.EmptyAfterFilter] != 1 || s[metrics.EmptyAfterFilterRun] != want {
			t.Errorf("step %d: empty %v, consecutive %v, want 1, %v", i+1, s[metrics.EmptyAfterFilter], s[metrics.EmptyAfterFilterRun], want)
		}
	}
	last := tr.History.Events[len(tr.History.Events)-1]
	if last.Kind != "early_stop" || last.Message != "the filter kept nothing for 2 consecutive steps (filter_empty_stop 2); the run stops" {
		t.Errorf("last event %+v", last)
	}
}

func TestFilterConfigNamesField(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Algo.FilterStrategy = algo.FilterTopK; c.Algo.FilterValue = 0.5; c.EnvGroups = 1 },
			"env_groups: filtering (algo.filter_strategy top_k) needs at least 2 groups (got 1)"},
		{func(c *Config) { c.FilterEmptyStop = -1 }, "filter_empty_stop: must be ≥ 0 (got -1)"},
		{func(c *Config) { c.Algo.FilterStrategy = algo.FilterMinP }, "algo.filter_value: must be in (0, 1] for filter_strategy min_p (got 0)"},
	} {
		c := Default()
		tc.edit(&c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
	// top_p 1 keeps every group: one group is fine.
	c := Default()
	c.Algo.FilterRatio, c.Algo.FilterStrategy, c.Algo.FilterValue, c.EnvGroups = 1, algo.FilterTopP, 1, 1
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

// A loss mask of answers only trains and reports the share of agent tokens
// its loss covered.
func TestTrainLossMaskAnswer(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes = 1, 0
	c.LossMask = MaskAnswer
	tr := run(t, c)
	s := tr.History.Steps[len(tr.History.Steps)-1].Values
	// The bandit's answers are a few tokens of each response (about 9%).
	if f, ok := s[metrics.LossMaskFrac]; !ok || !(f > 0 && f < 0.5) {
		t.Errorf("%s = %v (present %v), want a fraction in (0, 0.5)", metrics.LossMaskFrac, f, ok)
	}
	if _, ok := s[metrics.PolicyLoss]; !ok {
		t.Error("no actor update on the answer tokens")
	}
}
