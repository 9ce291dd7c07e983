package algo

import (
	"math"
	"reflect"
	"testing"
)

// Four groups of two, ids 10, 20, 30, 40, members interleaved in the batch:
//
//	group 10: 0, 1   std √0.5 ≈ 0.7071 (unbiased), mean 0.5, max 1, range 1
//	group 20: 1, 1   std 0 (zero-variance), mean 1, max 1, range 0
//	group 30: 0, 2   std √2 ≈ 1.4142, mean 1, max 2, range 2
//	group 40: 1, 0   std √0.5 (ties with group 10), mean 0.5, max 1, range 1
var (
	filterReturns = []float64{0, 1, 0, 1, 1, 1, 2, 0}
	filterGroups  = []int{10, 20, 30, 40, 10, 20, 30, 40}
)

func filterWith(t *testing.T, ratio float64, metric string, dropZero bool, score ScoreFunc) FilterResult {
	t.Helper()
	cfg := StarPOS()
	cfg.FilterRatio, cfg.FilterMetric, cfg.FilterDropZeroStd = ratio, metric, dropZero
	res, err := FilterGroups(&cfg, filterReturns, filterGroups, score)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestFilterKeepsTopFractionByStd(t *testing.T) {
	cases := []struct {
		name   string
		ratio  float64
		metric string
		drop   bool
		want   []int
	}{
		// k = int(0.5·4) = 2: group 30 (1.41), then the 10/40 tie goes to 10 (first in the batch)
		{"ratio 0.5", 0.5, FilterStd, false, []int{10, 30}},
		{"ratio 0.75", 0.75, FilterStd, false, []int{10, 30, 40}},
		// k = int(0.25·4) = 1
		{"ratio 0.25", 0.25, FilterStd, false, []int{30}},
		// k = int(0.1·4) = 0 → at least one group
		{"ratio 0.1 keeps one", 0.1, FilterStd, false, []int{30}},
		{"ratio 1 keeps all", 1, FilterStd, false, []int{10, 20, 30, 40}},
		// std_rev keeps the lowest std: group 20
		{"std_rev", 0.25, FilterStdRev, false, []int{20}},
		// max − mean: 0.5, 0, 1, 0.5 → 30, then 10 (tie with 40)
		{"max_mean", 0.5, FilterMaxMean, false, []int{10, 30}},
		{"range", 0.25, FilterRange, false, []int{30}},
		// DAPO: drop group 20, keep the other three
		{"drop zero std", 1, FilterStd, true, []int{10, 30, 40}},
		// DAPO then top-k over the 3 remaining: k = int(0.5·3) = 1
		{"drop zero std then top", 0.5, FilterStd, true, []int{30}},
	}
	for _, c := range cases {
		res := filterWith(t, c.ratio, c.metric, c.drop, nil)
		if !reflect.DeepEqual(res.Groups, c.want) {
			t.Errorf("%s: kept %v, want %v", c.name, res.Groups, c.want)
		}
		keep := map[int]bool{}
		for _, g := range c.want {
			keep[g] = true
		}
		for i, g := range filterGroups {
			if res.Keep[i] != keep[g] {
				t.Errorf("%s: trajectory %d (group %d) keep = %v", c.name, i, g, res.Keep[i])
			}
		}
		near(t, c.name+" keep ratio", res.Stats.KeepRatio, float64(len(c.want))/4, 0)
	}
}

func TestFilterStats(t *testing.T) {
	res := filterWith(t, 0.5, FilterStd, false, nil)
	s := res.Stats
	if s.Groups != 4 || s.Kept != 2 || s.ZeroStd != 1 {
		t.Errorf("counts: %+v", s)
	}
	r := math.Sqrt(0.5)
	near(t, "in-group std", s.InGroupStd, (r+0+2*r+r)/4, 1e-15)
	near(t, "in-group mean", s.InGroupMean, (0.5+1+1+0.5)/4, 1e-15)
	near(t, "in-group max", s.InGroupMax, (1+1+2+1)/4.0, 1e-15)
	near(t, "chosen std", s.ChosenStd, (r+2*r)/2, 1e-15)
	near(t, "chosen mean", s.ChosenMean, 0.75, 1e-15)
	near(t, "chosen max", s.ChosenMax, 1.5, 1e-15)
}

// A custom score (the group mean) replaces the metric: means 0.5, 1, 1, 0.5;
// top 1 is the 20/30 tie, won by group 20.
func TestFilterCustomScore(t *testing.T) {
	mean := func(_ []int, xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	res := filterWith(t, 0.25, FilterStd, false, mean)
	if !reflect.DeepEqual(res.Groups, []int{20}) {
		t.Errorf("kept %v, want [20]", res.Groups)
	}
	cfg := StarPOS()
	_, err := FilterGroups(&cfg, filterReturns, filterGroups, func([]int, []float64) float64 { return math.NaN() })
	if err == nil || err.Error() != "group 10: score is NaN" {
		t.Errorf("NaN score: err = %v", err)
	}
}

// All groups zero-variance under DAPO: nothing is kept, and the result says so.
func TestFilterAllZeroStdIsEmpty(t *testing.T) {
	cfg := StarPOS()
	cfg.FilterDropZeroStd = true
	res, err := FilterGroups(&cfg, []float64{1, 1, 0, 0}, []int{1, 1, 2, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Kept != 0 || len(res.Groups) != 0 || res.Stats.KeepRatio != 0 || res.Keep[0] || res.Keep[2] {
		t.Errorf("all zero-std: %+v", res)
	}
}

// k = int(ratio·n) truncates like Python's int(): 0.29·100 = 28.999999999999996 → 28.
func TestFilterRoundsLikeRAGEN(t *testing.T) {
	var returns []float64
	var groups []int
	for g := 0; g < 100; g++ {
		returns = append(returns, 0, float64(g))
		groups = append(groups, g, g)
	}
	cfg := StarPOS()
	cfg.FilterRatio = 0.29
	res, err := FilterGroups(&cfg, returns, groups, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Kept != 28 {
		t.Errorf("kept %d groups, want 28", res.Stats.Kept)
	}
	// The 28 largest spreads are groups 72 … 99.
	if res.Groups[0] != 72 || res.Groups[27] != 99 {
		t.Errorf("kept %v", res.Groups)
	}
}

// A threshold keeps the groups scoring strictly above it, before the ratio:
// by std, above 0.5 keeps 10, 30, 40 (std √0.5, √2, √0.5); with ratio 0.5
// of those three int(1.5) = 1 is kept, the highest: 30.
func TestFilterAbove(t *testing.T) {
	cfg := StarPOS()
	cfg.FilterRatio, cfg.FilterMetric = 1, FilterStd
	above := 0.5
	cfg.FilterAbove = &above
	res, err := FilterGroups(&cfg, filterReturns, filterGroups, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Groups, []int{10, 30, 40}) {
		t.Errorf("above 0.5: kept %v, want [10 30 40]", res.Groups)
	}
	cfg.FilterRatio = 0.5
	if res, err = FilterGroups(&cfg, filterReturns, filterGroups, nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Groups, []int{30}) {
		t.Errorf("above 0.5, ratio 0.5: kept %v, want [30]", res.Groups)
	}
	above = 5 // nothing passes: an empty result, not a forced keep
	if res, err = FilterGroups(&cfg, filterReturns, filterGroups, nil); err != nil {
		t.Fatal(err)
	}
	if res.Stats.Kept != 0 {
		t.Errorf("above 5: kept %v, want none", res.Groups)
	}
	nan := math.NaN()
	cfg.FilterAbove = &nan
	if err := cfg.Validate(); err == nil || err.Error() != "filter_above: must be a number (got NaN)" {
		t.Errorf("NaN threshold: err = %v", err)
	}
}
