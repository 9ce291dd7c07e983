package algo

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// The batch of filter_test.go (groups 10, 20, 30, 40; std √0.5, 0, √2,
// √0.5; Σ std = 2√2 ≈ 2.8284), with per-trajectory entropies and lengths:
//
//	entropy 1, 2, 0.5, 3, 3, 2, 0.5, 1  → group 10: (1, 3) mean 2, std √2
//	                                       group 20: (2, 2) mean 2, std 0
//	                                       group 30: (0.5, 0.5) mean 0.5, std 0
//	                                       group 40: (3, 1) mean 2, std √2
//	length  4, 6, 8, 2, 6, 6, 8, 10     → means 5, 6, 8, 6
var (
	filterEntropy = []float64{1, 2, 0.5, 3, 3, 2, 0.5, 1}
	filterLength  = []float64{4, 6, 8, 2, 6, 6, 8, 10}
)

type filterCase struct {
	name string
	set  func(c *Config)
	want []int
}

func runFilterCases(t *testing.T, cases []filterCase) {
	t.Helper()
	for _, c := range cases {
		cfg := StarPOS()
		c.set(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		res, err := FilterGroupsBy(&cfg, FilterInput{Returns: filterReturns, Group: filterGroups, Entropy: filterEntropy, Length: filterLength}, nil)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if len(res.Groups) == 0 && len(c.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(res.Groups, c.want) {
			t.Errorf("%s: kept %v, want %v", c.name, res.Groups, c.want)
		}
	}
}

func strategy(s string, v float64) func(c *Config) {
	return func(c *Config) { c.FilterStrategy, c.FilterValue = s, v }
}

func eps(x float64) *float64 { return &x }

// Top-p linear (RAGEN v2's default): walk the stds from the highest until
// the running sum reaches value·2.8284 − 0.01.
func TestFilterTopPLinear(t *testing.T) {
	runFilterCases(t, []filterCase{
		// threshold 0.5·2.8284 − 0.01 = 1.4042: group 30 (1.4142) reaches it
		{"0.5", strategy(FilterTopP, 0.5), []int{30}},
		// threshold 1.6871: 1.4142 is short, + group 10 → 2.1213
		{"0.6", strategy(FilterTopP, 0.6), []int{10, 30}},
		// threshold 2.7901: 30, 10, 40 → 2.8284; group 20 (0) is not needed
		{"0.99", strategy(FilterTopP, 0.99), []int{10, 30, 40}},
		// eps 0.5: threshold 1.6971 − 0.5 = 1.1971, reached by group 30 alone
		{"0.6 eps 0.5", func(c *Config) { strategy(FilterTopP, 0.6)(c); c.FilterSelectionEps = eps(0.5) }, []int{30}},
		// value 1 keeps every group, zero-std included
		{"1 keeps all", strategy(FilterTopP, 1), []int{10, 20, 30, 40}},
		// smallest: ascending, group 20 (std 0) comes first and stops the
		// walk at 0 < threshold 1.4042: the threshold is never reached, so
		// nothing is kept (RAGEN's empty_after_filter)
		{"smallest never reaches", func(c *Config) { strategy(FilterTopP, 0.5)(c); c.FilterSmallest = true }, nil},
		// without zero-std groups: 10 (0.7071), 40 (1.4142 ≥ 1.4042)
		{"smallest exclude zero", func(c *Config) {
			strategy(FilterTopP, 0.5)(c)
			c.FilterSmallest, c.FilterExcludeZero = true, true
		}, []int{10, 40}},
		// exclude zero, largest: the same three as 0.99 with 20 gone first
		{"exclude zero 1", func(c *Config) { strategy(FilterTopP, 1)(c); c.FilterExcludeZero = true }, []int{10, 30, 40}},
	})

	// Every group zero-variance: Σ = 0, threshold −0.01 is met before the
	// first group, so none is kept.
	cfg := StarPOS()
	strategy(FilterTopP, 0.9)(&cfg)
	res, err := FilterGroups(&cfg, []float64{1, 1, 0, 0}, []int{1, 1, 2, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Kept != 0 || res.Stats.ZeroScore != 2 {
		t.Errorf("all zero std: kept %v, zero-score groups %d, want none and 2", res.Groups, res.Stats.ZeroScore)
	}
}

// Top-p softmax: p = softmax(std) = 0.22118 (10), 0.10906 (20),
// 0.44858 (30), 0.22118 (40); sorted 30, 10, 40, 20 with cumulative sums
// 0.44858, 0.66976, 0.89094, 1. k = 1 + #{cumulative < value}.
func TestFilterTopPSoftmax(t *testing.T) {
	soft := func(v float64) func(c *Config) {
		return func(c *Config) { strategy(FilterTopP, v)(c); c.FilterTopPMode = TopPSoftmax }
	}
	runFilterCases(t, []filterCase{
		{"0.4", soft(0.4), []int{30}},
		{"0.5", soft(0.5), []int{10, 30}},
		{"0.85", soft(0.85), []int{10, 30, 40}},
		{"0.9", soft(0.9), []int{10, 20, 30, 40}},
		// smallest: softmax(−std) puts 0.44858 on group 20, then 10 and 40
		{"smallest 0.5", func(c *Config) { soft(0.5)(c); c.FilterSmallest = true }, []int{10, 20}},
	})
}

// Top-k takes its k from all groups (RAGEN), the ratio filter from the
// candidates left: with the zero-std group dropped they differ.
func TestFilterTopK(t *testing.T) {
	runFilterCases(t, []filterCase{
		{"0.5", strategy(FilterTopK, 0.5), []int{10, 30}},
		{"0.1 keeps one", strategy(FilterTopK, 0.1), []int{30}},
		// int(0.5·4) = 2 of the three candidates, against the ratio
		// filter's int(0.5·3) = 1
		{"drop zero std", func(c *Config) { strategy(FilterTopK, 0.5)(c); c.FilterDropZeroStd = true }, []int{10, 30}},
		{"ratio, drop zero std", func(c *Config) { c.FilterRatio = 0.5; c.FilterDropZeroStd = true }, []int{30}},
		// int(1·4) = 4, but only 3 candidates
		{"exclude zero 1", func(c *Config) { strategy(FilterTopK, 1)(c); c.FilterExcludeZero = true }, []int{10, 30, 40}},
		{"smallest 0.25", func(c *Config) { strategy(FilterTopK, 0.25)(c); c.FilterSmallest = true }, []int{20}},
		{"abs 3", strategy(FilterTopKAbs, 3), []int{10, 30, 40}},
		{"abs 1.9", strategy(FilterTopKAbs, 1.9), []int{30}},
		{"abs 9", strategy(FilterTopKAbs, 9), []int{10, 20, 30, 40}},
	})
}

// Min-p keeps s ≥ max·value − 1e-10 (max √2), or with smallest
// s ≤ min/(value + 1e-10) + 1e-10.
func TestFilterMinP(t *testing.T) {
	runFilterCases(t, []filterCase{
		// √2·0.5 = √0.5 (up to rounding, which the 1e-10 margin absorbs): 10 and 40 pass
		{"0.5", strategy(FilterMinP, 0.5), []int{10, 30, 40}},
		{"0.6", strategy(FilterMinP, 0.6), []int{30}},
		// min 0: only group 20 is ≤ 1e-10
		{"smallest 0.5", func(c *Config) { strategy(FilterMinP, 0.5)(c); c.FilterSmallest = true }, []int{20}},
		// min √0.5 without group 20: √0.5/(0.5 + 1e-10) + 1e-10 is
		// √2 − 1.8e-10, just below group 30's √2
		{"smallest exclude zero 0.5", func(c *Config) {
			strategy(FilterMinP, 0.5)(c)
			c.FilterSmallest, c.FilterExcludeZero = true, true
		}, []int{10, 40}},
	})
}

// Each metric's statistic, selected by top-k (ties to the first group).
func TestFilterMetrics(t *testing.T) {
	metric := func(m, s string, v float64, smallest bool) func(c *Config) {
		return func(c *Config) {
			strategy(s, v)(c)
			c.FilterMetric, c.FilterSmallest = m, smallest
		}
	}
	runFilterCases(t, []filterCase{
		// reward_variance is the std: 30 first
		{"reward_variance", metric(FilterRewardVariance, FilterTopK, 0.25, false), []int{30}},
		// reward: means 0.5, 1, 1, 0.5 — the 20/30 tie goes to 20
		{"reward", metric(FilterReward, FilterTopK, 0.25, false), []int{20}},
		{"reward smallest", metric(FilterReward, FilterTopK, 0.5, true), []int{10, 40}},
		// reward_sum: 1, 2, 2, 1; min-p 0.75 keeps sums ≥ 1.5
		{"reward_sum", metric(FilterRewardSum, FilterMinP, 0.75, false), []int{20, 30}},
		// entropy: means 2, 2, 0.5, 2
		{"entropy", metric(FilterEntropy, FilterTopK, 0.25, false), []int{10}},
		{"entropy smallest", metric(FilterEntropy, FilterTopK, 0.25, true), []int{30}},
		// entropy_variance: stds √2, 0, 0, √2
		{"entropy_variance", metric(FilterEntropyVariance, FilterTopK, 0.5, false), []int{10, 40}},
		// top-p linear over √2, √2: threshold 0.5·2√2 − 0.01 is reached by group 10
		{"entropy_variance top_p", metric(FilterEntropyVariance, FilterTopP, 0.5, false), []int{10}},
		// length: means 5, 6, 8, 6
		{"length", metric(FilterLength, FilterTopK, 0.25, false), []int{30}},
		{"length 0.75", metric(FilterLength, FilterTopK, 0.75, false), []int{20, 30, 40}},
		// the ratio strategy ranks by any metric too
		{"length ratio", func(c *Config) { c.FilterMetric, c.FilterRatio = FilterLength, 0.5 }, []int{20, 30}},
	})

	// The statistic's means and zero count: entropy_variance √2, 0, 0, √2.
	cfg := StarPOS()
	metric(FilterEntropyVariance, FilterTopK, 0.5, false)(&cfg)
	res, err := FilterGroupsBy(&cfg, FilterInput{Returns: filterReturns, Group: filterGroups, Entropy: filterEntropy}, nil)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "score mean", res.Stats.ScoreMean, math.Sqrt2/2, 1e-15)
	near(t, "chosen score mean", res.Stats.ChosenScoreMean, math.Sqrt2, 1e-15)
	if res.Stats.ZeroScore != 2 {
		t.Errorf("zero-score groups %d, want 2", res.Stats.ZeroScore)
	}

	// A metric without its inputs is an error, not a silent zero.
	if _, err := FilterGroups(&cfg, filterReturns, filterGroups, nil); err == nil ||
		err.Error() != "filter_metric entropy_variance: needs the entropy of each of the 8 trajectories (got 0)" {
		t.Errorf("no entropies: err = %v", err)
	}
	cfg.FilterMetric = FilterLength
	if _, err := FilterGroups(&cfg, filterReturns, filterGroups, nil); err == nil ||
		err.Error() != "filter_metric length: needs the length of each of the 8 trajectories (got 0)" {
		t.Errorf("no lengths: err = %v", err)
	}
}

func TestFilterConfigErrors(t *testing.T) {
	cases := []struct {
		set  func(c *Config)
		want string
	}{
		{func(c *Config) { c.FilterStrategy = "top_q" },
			`filter_strategy: must be one of ["" "ratio" "top_p" "top_k" "top_k_abs" "min_p"] (got "top_q")`},
		{strategy(FilterTopP, 0), "filter_value: must be in (0, 1] for filter_strategy top_p (got 0)"},
		{strategy(FilterMinP, 1.5), "filter_value: must be in (0, 1] for filter_strategy min_p (got 1.5)"},
		{strategy(FilterTopKAbs, 0.5), "filter_value: must be a finite number ≥ 1 for filter_strategy top_k_abs (got 0.5)"},
		{func(c *Config) { c.FilterValue = 0.9 },
			"filter_value: set only with filter_strategy top_p, top_k, top_k_abs or min_p; the ratio strategy reads filter_ratio (got 0.9)"},
		{func(c *Config) { strategy(FilterTopK, 0.5)(c); c.FilterTopPMode = TopPSoftmax },
			`filter_top_p_mode: set only with filter_strategy top_p (got "softmax" with "top_k")`},
		{func(c *Config) { strategy(FilterTopP, 0.5)(c); c.FilterTopPMode = "cubic" },
			`filter_top_p_mode: must be one of ["" "linear" "softmax"] (got "cubic")`},
		{func(c *Config) { strategy(FilterTopP, 0.5)(c); c.FilterSelectionEps = eps(-1) },
			"filter_selection_eps: must be a finite number ≥ 0 (got -1)"},
		{func(c *Config) { c.FilterMetric = "variance" },
			`filter_metric: must be one of ["std" "std_rev" "max_mean" "range" "reward_variance" "reward" "reward_sum" "entropy" "entropy_variance" "length"] (got "variance")`},
	}
	for _, c := range cases {
		cfg := StarPOS()
		c.set(&cfg)
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("err = %v\nwant %s", err, c.want)
		}
	}
}

// The default configuration ("" strategy) selects exactly what the StarPO-S
// filter did before RAGEN v2's strategies existed: filterGroupsV1 is that
// code, kept as the oracle, run on random batches over every old setting.
func TestFilterDefaultIsV1(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		G, n := 1+rng.IntN(12), 1+rng.IntN(5)
		var returns []float64
		var groups []int
		for i := 0; i < G*n; i++ {
			returns = append(returns, float64(rng.IntN(4))*0.5) // ties and zero-std groups
			groups = append(groups, rng.IntN(G)*7)
		}
		cfg := StarPOS()
		cfg.FilterRatio = []float64{0.25, 0.5, 0.29, 1, 0.1}[rng.IntN(5)]
		cfg.FilterMetric = []string{FilterStd, FilterStdRev, FilterMaxMean, FilterRange}[rng.IntN(4)]
		cfg.FilterDropZeroStd = rng.IntN(2) == 0
		if rng.IntN(3) == 0 {
			a := rng.Float64()
			cfg.FilterAbove = &a
		}
		got, err := FilterGroups(&cfg, returns, groups, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := filterGroupsV1(&cfg, returns, groups)
		if err != nil {
			t.Fatal(err)
		}
		got.Stats.ScoreMean, got.Stats.ChosenScoreMean, got.Stats.ZeroScore = 0, 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d (%+v): got %+v, want %+v", trial, cfg, got, want)
		}
		cfg.FilterStrategy = FilterRatioTop // the explicit name is the same
		if got2, _ := FilterGroups(&cfg, returns, groups, nil); !reflect.DeepEqual(got2.Keep, want.Keep) {
			t.Fatalf("trial %d: strategy ratio differs from \"\"", trial)
		}
	}
}

// filterGroupsV1 is FilterGroups as it was before the v2 strategies (commit
// 99d0116), the default path's oracle.
func filterGroupsV1(cfg *Config, returns []float64, group []int) (FilterResult, error) {
	of, members := groupIndex(group)
	G := len(members)
	type groupStat struct{ mean, std, max, min, score float64 }
	st := make([]groupStat, G)
	var res FilterResult
	res.Stats.Groups = G
	var cand []int
	for g, mem := range members {
		xs := gather(returns, mem)
		s := &st[g]
		s.mean, s.std = meanStd(xs, true)
		s.max, s.min = xs[0], xs[0]
		for _, x := range xs[1:] {
			s.max = math.Max(s.max, x)
			s.min = math.Min(s.min, x)
		}
		res.Stats.InGroupStd += s.std
		res.Stats.InGroupMean += s.mean
		res.Stats.InGroupMax += s.max
		zero := s.max == s.min
		if zero {
			res.Stats.ZeroStd++
		}
		switch cfg.FilterMetric {
		case FilterStd:
			s.score = s.std
		case FilterStdRev:
			s.score = -s.std
		case FilterMaxMean:
			s.score = s.max - s.mean
		case FilterRange:
			s.score = s.max - s.min
		}
		if !(zero && cfg.FilterDropZeroStd) && (cfg.FilterAbove == nil || s.score > *cfg.FilterAbove) {
			cand = append(cand, g)
		}
	}
	if G > 0 {
		res.Stats.InGroupStd /= float64(G)
		res.Stats.InGroupMean /= float64(G)
		res.Stats.InGroupMax /= float64(G)
	}
	kept := cand
	if cfg.FilterRatio < 1 && len(cand) > 0 {
		k := max(1, int(cfg.FilterRatio*float64(len(cand))))
		ranked := append([]int(nil), cand...)
		sort.SliceStable(ranked, func(a, b int) bool { return st[ranked[a]].score > st[ranked[b]].score })
		kept = ranked[:k]
		sort.Ints(kept)
	}
	keepGroup := make([]bool, G)
	for _, g := range kept {
		keepGroup[g] = true
		res.Groups = append(res.Groups, group[members[g][0]])
		res.Stats.ChosenStd += st[g].std
		res.Stats.ChosenMean += st[g].mean
		res.Stats.ChosenMax += st[g].max
	}
	res.Stats.Kept = len(kept)
	if len(kept) > 0 {
		res.Stats.ChosenStd /= float64(len(kept))
		res.Stats.ChosenMean /= float64(len(kept))
		res.Stats.ChosenMax /= float64(len(kept))
	}
	if G > 0 {
		res.Stats.KeepRatio = float64(len(kept)) / float64(G)
	}
	res.Keep = make([]bool, len(returns))
	for i := range returns {
		res.Keep[i] = keepGroup[of[i]]
	}
	return res, nil
}
