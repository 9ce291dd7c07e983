package algo

import (
	"fmt"
	"slices"
	"sort"
)

// Bucket modes of RewardStdBuckets (RAGEN gradient_analysis_bucket_mode).
const (
	BucketQuantile = "quantile" // equal numbers of groups, by rank of their reward std
	BucketFixedRV  = "fixed_rv" // fixed std intervals [0,1) [1,2) … [4,5) [5,∞)
)

// BucketAll is the bucket of the whole batch, reported next to the others.
const BucketAll = "all"

// DefaultBuckets is RAGEN's gradient_analysis_num_buckets.
const DefaultBuckets = 6

// fixedRVEdges are RAGEN's fixed_rv lower edges: bucket k holds the groups
// with edges[k−1] ≤ std < edges[k], the last one std ≥ 5.
var fixedRVEdges = []float64{0, 1, 2, 3, 4, 5}

// Bucket is a set of whole groups of a batch, chosen by their in-group
// reward std.
type Bucket struct {
	Name    string    // "all", "bucket_1" (lowest std), …, "bucket_N" (highest)
	Members []int     // the groups' trajectories: indices into the batch, in batch order
	Groups  []int     // group ids, by increasing std (quantile) or increasing id (fixed_rv, all)
	Std     []float64 // each group's in-group reward std, aligned with Groups
}

// StdMean is the mean of the groups' reward std (RAGEN bucket_reward_std_mean).
func (b Bucket) StdMean() float64 {
	var s float64
	for _, v := range b.Std {
		s += v
	}
	return s / float64(len(b.Std))
}

// RewardStdBuckets splits a batch into buckets of groups by the unbiased
// std of the returns within each group (the StarPO-S filter's statistic,
// FilterStats.InGroupStd), as RAGEN's RolloutFilter.split_into_buckets:
//
//	all        every group;
//	quantile   the G groups sorted by std (ties: lower id first), cut into
//	           n = min(count, G) runs of ⌊G/n⌋ groups, the remainder going
//	           to the last bucket; bucket_1 has the lowest std;
//	fixed_rv   bucket_k holds 0 ≤ std < 1, …, 4 ≤ std < 5, std ≥ 5 for
//	           k = 1…6 (count is ignored; RAGEN's edges, made for its
//	           rewards of up to about 10).
//
// Empty buckets are left out, as RAGEN skips them; "all" comes first.
// mode "" is quantile.
func RewardStdBuckets(returns []float64, group []int, count int, mode string) ([]Bucket, error) {
	if len(returns) != len(group) {
		return nil, fmt.Errorf("buckets: %d returns for %d group ids", len(returns), len(group))
	}
	if mode == "" {
		mode = BucketQuantile
	}
	if mode != BucketQuantile && mode != BucketFixedRV {
		return nil, fmt.Errorf("gradient_report_bucket_mode: must be %s or %s (got %q)", BucketQuantile, BucketFixedRV, mode)
	}
	if mode == BucketQuantile && count <= 0 {
		return nil, fmt.Errorf("gradient_report_buckets: must be > 0 (got %d)", count)
	}
	if len(returns) == 0 {
		return nil, nil
	}
	// Groups by increasing id, as RAGEN's torch.unique(sorted=True).
	_, members := groupIndex(group)
	slices.SortFunc(members, func(a, b []int) int { return group[a[0]] - group[b[0]] })
	std := make([]float64, len(members))
	for g, mem := range members {
		_, std[g] = meanStd(gather(returns, mem), true)
	}
	bucket := func(name string, gs []int) Bucket {
		b := Bucket{Name: name}
		for _, g := range gs {
			b.Groups = append(b.Groups, group[members[g][0]])
			b.Std = append(b.Std, std[g])
			b.Members = append(b.Members, members[g]...)
		}
		slices.Sort(b.Members)
		return b
	}
	G := len(members)
	all := make([]int, G)
	for g := range all {
		all[g] = g
	}
	out := []Bucket{bucket(BucketAll, all)}
	name := func(k int) string { return fmt.Sprintf("bucket_%d", k+1) }
	if mode == BucketFixedRV {
		for k, lo := range fixedRVEdges {
			var gs []int
			for g, s := range std {
				if s >= lo && (k+1 == len(fixedRVEdges) || s < fixedRVEdges[k+1]) {
					gs = append(gs, g)
				}
			}
			if len(gs) > 0 {
				out = append(out, bucket(name(k), gs))
			}
		}
		return out, nil
	}
	order := slices.Clone(all)
	sort.SliceStable(order, func(a, b int) bool { return std[order[a]] < std[order[b]] })
	n := min(count, G)
	per := G / n
	for k, start := 0, 0; k < n; k++ {
		size := per
		if k == n-1 {
			size += G % n
		}
		out = append(out, bucket(name(k), order[start:start+size]))
		start += size
	}
	return out, nil
}
