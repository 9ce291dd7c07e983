package algo

import (
	"fmt"
	"math"
	"sort"
)

// ScoreFunc scores a group from its members — their indices in the batch
// and their trajectory returns, in batch order; the filter keeps the
// highest-scoring groups. It overrides Config.FilterMetric when given to
// FilterGroups.
type ScoreFunc func(members []int, returns []float64) float64

// FilterStats describes the groups before and after filtering; the
// in-group statistics are means over groups (RAGEN rollout/in_group_* and
// rollout/chosen_in_group_*), the std unbiased (torch.std).
type FilterStats struct {
	Groups    int     // groups in the batch
	Kept      int     // groups kept
	ZeroStd   int     // groups whose returns are all equal (no learning signal for group estimators)
	KeepRatio float64 // Kept / Groups

	InGroupStd, InGroupMean, InGroupMax float64 // over all groups
	ChosenStd, ChosenMean, ChosenMax    float64 // over kept groups (0 if none)

	// The statistic the filter selects by (the score, before
	// FilterSmallest turns the order around): its mean over all groups and
	// over the kept ones (0 if none), and the groups where it is zero,
	// |s| ≤ 1e-10 (RAGEN rollout/filter_zero_count).
	ScoreMean, ChosenScoreMean float64
	ZeroScore                  int
}

// FilterResult lists what the filter kept.
type FilterResult struct {
	Groups []int  // kept group ids, in order of first appearance in the batch
	Keep   []bool // per trajectory: its group was kept
	Stats  FilterStats
}

// FilterInput is what the filter reads, one entry per trajectory in batch
// order. Entropy and Length are needed only by the metrics that use them.
type FilterInput struct {
	Returns []float64 // trajectory returns
	Group   []int     // group ids
	Entropy []float64 // mean token entropy over the agent tokens (filter_metric entropy, entropy_variance)
	Length  []float64 // agent tokens (filter_metric length)
}

// zeroScore is RAGEN's test for a group statistic of zero (include_zero).
const zeroScore = 1e-10

// FilterGroups is FilterGroupsBy for the metrics of the returns alone.
func FilterGroups(cfg *Config, returns []float64, group []int, score ScoreFunc) (FilterResult, error) {
	return FilterGroupsBy(cfg, FilterInput{Returns: returns, Group: group}, score)
}

// FilterGroupsBy is the StarPO-S rollout filter (RAGEN v1
// agent_trainer._filter_rollout; paper Eq. 7: keep the prompts whose
// rollouts disagree most, U(s_0) = Std_τ[R(τ)]) and RAGEN v2's SNR-aware
// filter (ragen/trainer/rollout_filter.py). Whole groups are kept or
// dropped:
//
//  1. Each group gets a statistic s: score if given, else cfg.FilterMetric
//     (std or reward_variance = unbiased std of the returns, std_rev = −std,
//     max_mean = max − mean, range = max − min, reward = mean, reward_sum,
//     entropy = the mean and entropy_variance = the unbiased std of the
//     members' mean token entropies, length = the mean agent tokens).
//  2. Candidates: every group, less those whose returns are all equal if
//     cfg.FilterDropZeroStd (DAPO dynamic sampling), those scoring at or
//     below cfg.FilterAbove if set, and those with |s| ≤ 1e-10 if
//     cfg.FilterExcludeZero (RAGEN include_zero=False).
//  3. The strategy selects among the candidates (see selectGroups), the
//     highest s first, or the lowest with cfg.FilterSmallest.
//
// When nothing is selected the result is empty (Stats.Kept = 0): the
// trainer skips the step (RAGEN empty_after_filter); nothing is kept
// silently.
func FilterGroupsBy(cfg *Config, in FilterInput, score ScoreFunc) (FilterResult, error) {
	returns, group := in.Returns, in.Group
	if len(group) != len(returns) {
		return FilterResult{}, fmt.Errorf("len(group) = %d, want len(returns) = %d", len(group), len(returns))
	}
	for i, r := range returns {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return FilterResult{}, fmt.Errorf("return of trajectory %d is %v", i, r)
		}
	}
	if score == nil {
		switch cfg.FilterMetric {
		case FilterEntropy, FilterEntropyVariance:
			if len(in.Entropy) != len(returns) {
				return FilterResult{}, fmt.Errorf("filter_metric %s: needs the entropy of each of the %d trajectories (got %d)", cfg.FilterMetric, len(returns), len(in.Entropy))
			}
		case FilterLength:
			if len(in.Length) != len(returns) {
				return FilterResult{}, fmt.Errorf("filter_metric %s: needs the length of each of the %d trajectories (got %d)", cfg.FilterMetric, len(returns), len(in.Length))
			}
		}
	}
	of, members := groupIndex(group)
	G := len(members)
	type groupStat struct{ mean, std, max, min, score float64 }
	st := make([]groupStat, G)
	var res FilterResult
	res.Stats.Groups = G
	var cand []int // candidate group indices, in order of first appearance
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
		switch {
		case score != nil:
			s.score = score(mem, xs)
		case cfg.FilterMetric == FilterStd, cfg.FilterMetric == FilterRewardVariance:
			s.score = s.std
		case cfg.FilterMetric == FilterStdRev:
			s.score = -s.std
		case cfg.FilterMetric == FilterMaxMean:
			s.score = s.max - s.mean
		case cfg.FilterMetric == FilterRange:
			s.score = s.max - s.min
		case cfg.FilterMetric == FilterReward:
			s.score = s.mean
		case cfg.FilterMetric == FilterRewardSum:
			for _, x := range xs {
				s.score += x
			}
		case cfg.FilterMetric == FilterEntropy:
			s.score, _ = meanStd(gather(in.Entropy, mem), true)
		case cfg.FilterMetric == FilterEntropyVariance:
			_, s.score = meanStd(gather(in.Entropy, mem), true)
		case cfg.FilterMetric == FilterLength:
			s.score, _ = meanStd(gather(in.Length, mem), true)
		default:
			return FilterResult{}, fmt.Errorf("filter_metric: unknown metric %q", cfg.FilterMetric)
		}
		if math.IsNaN(s.score) {
			return FilterResult{}, fmt.Errorf("group %d: score is NaN", group[mem[0]])
		}
		res.Stats.ScoreMean += s.score
		zeroS := math.Abs(s.score) <= zeroScore
		if zeroS {
			res.Stats.ZeroScore++
		}
		if !(zero && cfg.FilterDropZeroStd) && (cfg.FilterAbove == nil || s.score > *cfg.FilterAbove) &&
			!(zeroS && cfg.FilterExcludeZero) {
			cand = append(cand, g)
		}
	}
	if G > 0 {
		res.Stats.InGroupStd /= float64(G)
		res.Stats.InGroupMean /= float64(G)
		res.Stats.InGroupMax /= float64(G)
		res.Stats.ScoreMean /= float64(G)
	}

	scores := make([]float64, len(cand))
	for k, g := range cand {
		scores[k] = st[g].score
	}
	sel, err := selectGroups(cfg, scores, G)
	if err != nil {
		return FilterResult{}, err
	}
	kept := make([]int, len(sel))
	for k, c := range sel {
		kept[k] = cand[c]
	}
	sort.Ints(kept) // back to order of first appearance

	keepGroup := make([]bool, G)
	for _, g := range kept {
		keepGroup[g] = true
		res.Groups = append(res.Groups, group[members[g][0]])
		res.Stats.ChosenStd += st[g].std
		res.Stats.ChosenMean += st[g].mean
		res.Stats.ChosenMax += st[g].max
		res.Stats.ChosenScoreMean += st[g].score
	}
	res.Stats.Kept = len(kept)
	if len(kept) > 0 {
		res.Stats.ChosenStd /= float64(len(kept))
		res.Stats.ChosenMean /= float64(len(kept))
		res.Stats.ChosenMax /= float64(len(kept))
		res.Stats.ChosenScoreMean /= float64(len(kept))
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

// selectGroups applies cfg.FilterStrategy to the candidates' scores (in
// order of first appearance; groups is the number of groups before any
// was dropped) and returns the chosen candidates' positions in scores.
// "Highest first" reads "lowest first" with cfg.FilterSmallest; ties go
// to the candidate that appears first in the batch (torch.sort and
// torch.topk leave their order unspecified; ours is stable).
//
//	ratio      (StarPO-S, RAGEN v1) k = max(1, int(filter_ratio · candidates))
//	           highest; filter_ratio 1 keeps all.
//	top_k      k = min(candidates, max(1, int(filter_value · groups))) highest —
//	           of all groups, as RAGEN.
//	top_k_abs  k = min(candidates, max(1, int(filter_value))) highest.
//	top_p      filter_value ≥ 1 keeps all. linear: walk the scores from the
//	           highest, adding each to a running sum c, until c ≥ value·Σs − eps
//	           (eps = filter_selection_eps); a score ≤ 0 stops the walk. If c
//	           never reaches the threshold nothing is kept. softmax:
//	           p = softmax(s) (of −s with filter_smallest), sorted descending;
//	           keep the first k = 1 + #{i : P_i < value}, P the cumulative sums
//	           (torch.searchsorted, left).
//	min_p      keep s ≥ max·value − 1e-10; with filter_smallest
//	           s ≤ min/(value + 1e-10) + 1e-10.
func selectGroups(cfg *Config, scores []float64, groups int) ([]int, error) {
	n := len(scores)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if n == 0 {
		return nil, nil
	}
	// ranked: candidates from the best, stable.
	ranked := func(key []float64) []int {
		r := append([]int(nil), all...)
		if cfg.FilterSmallest {
			sort.SliceStable(r, func(a, b int) bool { return key[r[a]] < key[r[b]] })
		} else {
			sort.SliceStable(r, func(a, b int) bool { return key[r[a]] > key[r[b]] })
		}
		return r
	}
	v := cfg.FilterValue
	switch cfg.FilterStrategy {
	case "", FilterRatioTop:
		if cfg.FilterRatio >= 1 {
			return all, nil
		}
		k := max(1, int(cfg.FilterRatio*float64(n)))
		return ranked(scores)[:k], nil
	case FilterTopK:
		k := min(n, max(1, int(v*float64(groups))))
		return ranked(scores)[:k], nil
	case FilterTopKAbs:
		k := min(n, max(1, int(v)))
		return ranked(scores)[:k], nil
	case FilterTopP:
		if v >= 1 {
			return all, nil
		}
		switch cfg.FilterTopPMode {
		case "", TopPLinear:
			r := ranked(scores)
			total := 0.0
			for _, s := range scores {
				total += s
			}
			threshold := v*total - cfg.selectionEps()
			c, k := 0.0, 0
			for _, i := range r {
				if c >= threshold || scores[i] <= 0 {
					break
				}
				c += scores[i]
				k++
			}
			if c >= threshold {
				return r[:k], nil
			}
			return nil, nil
		case TopPSoftmax:
			logits := make([]float64, n)
			hi := math.Inf(-1)
			for i, s := range scores {
				if cfg.FilterSmallest {
					s = -s
				}
				logits[i] = s
				hi = math.Max(hi, s)
			}
			p := make([]float64, n)
			z := 0.0
			for i, l := range logits {
				p[i] = math.Exp(l - hi)
				z += p[i]
			}
			for i := range p {
				p[i] /= z
			}
			// Sorted by probability, descending: the order of the logits.
			r := append([]int(nil), all...)
			sort.SliceStable(r, func(a, b int) bool { return p[r[a]] > p[r[b]] })
			k, c := 0, 0.0
			for _, i := range r {
				c += p[i]
				k++
				if c >= v {
					break
				}
			}
			return r[:k], nil
		default:
			return nil, fmt.Errorf("filter_top_p_mode: unknown mode %q", cfg.FilterTopPMode)
		}
	case FilterMinP:
		var out []int
		lo, hi := scores[0], scores[0]
		for _, s := range scores {
			lo, hi = math.Min(lo, s), math.Max(hi, s)
		}
		for i, s := range scores {
			if cfg.FilterSmallest && s <= lo/(v+zeroScore)+zeroScore ||
				!cfg.FilterSmallest && s >= hi*v-zeroScore {
				out = append(out, i)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("filter_strategy: unknown strategy %q", cfg.FilterStrategy)
}
