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
}

// FilterResult lists what the filter kept.
type FilterResult struct {
	Groups []int  // kept group ids, in order of first appearance in the batch
	Keep   []bool // per trajectory: its group was kept
	Stats  FilterStats
}

// FilterGroups is the StarPO-S rollout filter (RAGEN v1
// agent_trainer._filter_rollout; paper Eq. 7: keep the prompts whose
// rollouts disagree most, U(s_0) = Std_τ[R(τ)]):
//
//  1. If cfg.FilterDropZeroStd, drop every group whose returns are all equal
//     (DAPO dynamic sampling: such a group has zero advantage under GRPO).
//  2. If cfg.FilterAbove is set, drop every group scoring at or below it.
//  3. If cfg.FilterRatio < 1, score the remaining n groups (score, or else
//     cfg.FilterMetric: std, std_rev = −std, max_mean = max − mean,
//     range = max − min) and keep the top k = int(ratio · n) — Python's
//     int() truncation, as RAGEN — but at least one group. Ties go to the
//     group that appears first in the batch (torch.topk's order is
//     unspecified; ours is stable and deterministic).
//
// A ratio of 1 keeps every group (after steps 1 and 2). When they drop every
// group the result is empty (Stats.Kept = 0): the trainer must resample or
// skip the step; nothing is kept silently.
func FilterGroups(cfg *Config, returns []float64, group []int, score ScoreFunc) (FilterResult, error) {
	if len(group) != len(returns) {
		return FilterResult{}, fmt.Errorf("len(group) = %d, want len(returns) = %d", len(group), len(returns))
	}
	for i, r := range returns {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return FilterResult{}, fmt.Errorf("return of trajectory %d is %v", i, r)
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
		case cfg.FilterMetric == FilterStd:
			s.score = s.std
		case cfg.FilterMetric == FilterStdRev:
			s.score = -s.std
		case cfg.FilterMetric == FilterMaxMean:
			s.score = s.max - s.mean
		case cfg.FilterMetric == FilterRange:
			s.score = s.max - s.min
		default:
			return FilterResult{}, fmt.Errorf("filter_metric: unknown metric %q", cfg.FilterMetric)
		}
		if math.IsNaN(s.score) {
			return FilterResult{}, fmt.Errorf("group %d: score is NaN", group[mem[0]])
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
		sort.Ints(kept) // back to order of first appearance
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
