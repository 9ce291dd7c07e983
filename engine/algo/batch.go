package algo

import (
	"fmt"
	"math"
)

// Trajectory is one multi-turn conversation as one token sequence: every
// per-token slice has the same length T and index t refers to the token
// being predicted at position t (so Value[t] is the critic at the state
// before token t, and Mask[t] says whether the agent sampled token t).
type Trajectory struct {
	Group   int       // group id: trajectories of one group share an initial state (reset seed)
	Mask    []bool    // T: true on tokens the agent sampled (the loss mask), false on prompt/observation tokens
	Reward  []float64 // T: token-level rewards; non-zero only on agent tokens (see Config.RewardPlacement)
	Value   []float64 // T: critic values V(s_t); needed by gae and bi_level_gae only
	TurnEnd []bool    // T: true at the last agent token of each turn; needed by bi_level_gae only
}

// Return is the scalar trajectory return R = Σ_t r_t (undiscounted), the
// quantity group estimators and the filter rank.
func (t *Trajectory) Return() float64 {
	s := 0.0
	for _, r := range t.Reward {
		s += r
	}
	return s
}

// checkTraj checks the per-token slices of trajectory i: equal lengths,
// finite numbers, rewards only on agent tokens (GAE skips the others, so a
// reward there would be silently lost). needValue and needTurn ask for the
// critic values and the turn-end markers.
func checkTraj(i int, t *Trajectory, needValue, needTurn bool) error {
	T := len(t.Mask)
	if len(t.Reward) != T {
		return fmt.Errorf("trajectory %d: len(Reward) = %d, want len(Mask) = %d", i, len(t.Reward), T)
	}
	if needValue && len(t.Value) != T {
		return fmt.Errorf("trajectory %d: len(Value) = %d, want len(Mask) = %d (the estimator needs critic values)", i, len(t.Value), T)
	}
	if needTurn && len(t.TurnEnd) != T {
		return fmt.Errorf("trajectory %d: len(TurnEnd) = %d, want len(Mask) = %d (bi-level GAE needs turn ends)", i, len(t.TurnEnd), T)
	}
	for k := 0; k < T; k++ {
		if math.IsNaN(t.Reward[k]) || math.IsInf(t.Reward[k], 0) {
			return fmt.Errorf("trajectory %d: reward at token %d is %v", i, k, t.Reward[k])
		}
		if !t.Mask[k] && t.Reward[k] != 0 {
			return fmt.Errorf("trajectory %d: reward %v at token %d, which the agent did not sample (rewards must sit on agent tokens)", i, t.Reward[k], k)
		}
		if needValue && (math.IsNaN(t.Value[k]) || math.IsInf(t.Value[k], 0)) {
			return fmt.Errorf("trajectory %d: value at token %d is %v", i, k, t.Value[k])
		}
		if needTurn && t.TurnEnd[k] && !t.Mask[k] {
			return fmt.Errorf("trajectory %d: turn end at token %d, which the agent did not sample", i, k)
		}
	}
	return nil
}

// masks returns the loss masks of the batch, one slice per trajectory.
func masks(batch []Trajectory) [][]bool {
	m := make([][]bool, len(batch))
	for i := range batch {
		m[i] = batch[i].Mask
	}
	return m
}

// groupIndex maps each trajectory to the index of its group, groups numbered
// in order of first appearance, and lists the members of each group in batch
// order. The map is only looked up, never iterated, so the result depends on
// the batch order alone.
func groupIndex(group []int) (of []int, members [][]int) {
	idx := make(map[int]int)
	of = make([]int, len(group))
	for i, g := range group {
		k, ok := idx[g]
		if !ok {
			k = len(members)
			idx[g] = k
			members = append(members, nil)
		}
		of[i] = k
		members[k] = append(members[k], i)
	}
	return of, members
}

// zeros returns a ragged array shaped like the masks, all zero.
func zeros(mask [][]bool) [][]float64 {
	out := make([][]float64, len(mask))
	for i := range mask {
		out[i] = make([]float64, len(mask[i]))
	}
	return out
}

// clone returns a copy of a ragged array.
func clone(x [][]float64) [][]float64 {
	out := make([][]float64, len(x))
	for i := range x {
		out[i] = append([]float64(nil), x[i]...)
	}
	return out
}

// checkShape checks that x is shaped like mask and finite on agent tokens;
// the error names the tensor and the position.
func checkShape(name string, x [][]float64, mask [][]bool) error {
	if len(x) != len(mask) {
		return fmt.Errorf("%s: %d sequences, want %d", name, len(x), len(mask))
	}
	for i := range mask {
		if len(x[i]) != len(mask[i]) {
			return fmt.Errorf("%s: sequence %d has %d tokens, want %d", name, i, len(x[i]), len(mask[i]))
		}
		for t, m := range mask[i] {
			if m && (math.IsNaN(x[i][t]) || math.IsInf(x[i][t], 0)) {
				return fmt.Errorf("%s: %v at sequence %d, token %d", name, x[i][t], i, t)
			}
		}
	}
	return nil
}

// PlaceRewards builds a trajectory's token-level rewards (Trajectory.Reward)
// from its per-turn rewards (environment reward plus format penalty, one per
// turn, in order) and the turn-end markers (the last agent token of each
// turn), by Config.RewardPlacement:
//
//	last   r_{p_{K−1}} = Σ_k turnRewards[k]   (RAGEN use_turn_scores=False: the trajectory reward on its last agent token)
//	turn   r_{p_k}     = turnRewards[k]       (use_turn_scores=True: turn-level credit)
//
// All other tokens get 0.
func PlaceRewards(placement string, turnEnd []bool, turnRewards []float64) ([]float64, error) {
	var ends []int
	for t, e := range turnEnd {
		if e {
			ends = append(ends, t)
		}
	}
	if len(ends) != len(turnRewards) {
		return nil, fmt.Errorf("%d turn rewards for %d turn ends", len(turnRewards), len(ends))
	}
	r := make([]float64, len(turnEnd))
	switch placement {
	case RewardLast:
		if len(ends) > 0 {
			sum := 0.0
			for _, x := range turnRewards {
				sum += x
			}
			r[ends[len(ends)-1]] = sum
		}
	case RewardTurn:
		for k, t := range ends {
			r[t] = turnRewards[k]
		}
	default:
		return nil, fmt.Errorf("reward_placement: unknown placement %q", placement)
	}
	return r, nil
}
