package algo

import (
	"fmt"
	"math"
)

// GAE computes generalised advantage estimates and returns for one
// trajectory with the backward recursion of veRL's
// compute_gae_advantage_return (algorithm.gamma, algorithm.lam; RAGEN
// defaults γ = λ = 1), skipping the tokens the agent did not sample:
//
//	for t = T−1 … 0, agent tokens only (m_t = 1):
//	  δ_t    = r_t + γ·V_next − V_t
//	  A_t    = δ_t + γλ·A_next
//	  V_next ← V_t ;  A_next ← A_t
//	returns R_t = A_t + V_t
//
// V_next and A_next start at 0 (the episode ends after the last token) and
// carry unchanged across observation tokens: the agent's next decision after
// an observation is the next agent token, so the discount counts agent
// tokens, not positions. This is veRL#7278's fix (veRL ≥ 0.6); the older
// recursion over every position would bootstrap from V at observation
// tokens, which the critic is never trained on. Non-agent tokens get A = R = 0.
// Rewards must sit on agent tokens (a reward on a skipped token is lost;
// Advantages rejects it).
func GAE(reward, value []float64, mask []bool, gamma, lam float64) (adv, ret []float64) {
	T := len(mask)
	adv = make([]float64, T)
	ret = make([]float64, T)
	nextV, nextA := 0.0, 0.0
	for t := T - 1; t >= 0; t-- {
		if !mask[t] {
			continue
		}
		delta := reward[t] + gamma*nextV - value[t]
		nextA = delta + gamma*lam*nextA
		nextV = value[t]
		adv[t] = nextA
		ret[t] = nextA + value[t]
	}
	return adv, ret
}

// GAEDirect is GAE written as the direct sum over discounted TD errors, the
// textbook definition (Schulman et al. 2016, eq. 16), on the subsequence of
// agent tokens t_0 < t_1 < … < t_{n−1}:
//
//	δ_k = r_{t_k} + γ·V_{t_{k+1}} − V_{t_k}      (V_{t_n} = 0)
//	A_{t_k} = Σ_{j ≥ k} (γλ)^{j−k} · δ_j
//
// It costs O(n²) and is GAE's test oracle: the two must agree.
func GAEDirect(reward, value []float64, mask []bool, gamma, lam float64) (adv, ret []float64) {
	T := len(mask)
	adv = make([]float64, T)
	ret = make([]float64, T)
	var idx []int
	for t := 0; t < T; t++ {
		if mask[t] {
			idx = append(idx, t)
		}
	}
	n := len(idx)
	delta := make([]float64, n)
	for k, t := range idx {
		next := 0.0
		if k+1 < n {
			next = value[idx[k+1]]
		}
		delta[k] = reward[t] + gamma*next - value[t]
	}
	for k, t := range idx {
		s, c := 0.0, 1.0
		for j := k; j < n; j++ {
			s += c * delta[j]
			c *= gamma * lam
		}
		adv[t] = s
		ret[t] = s + value[t]
	}
	return adv, ret
}

// BiLevelGAE is RAGEN's bi-level GAE (compute_bi_level_gae_advantage_return,
// algorithm.bi_level_gae; also VAGEN's): a turn-level GAE over the turn ends
// with the turn discount γ_H (high_level_gamma, 0.95), then a token-level GAE
// inside each turn with γ and λ, seeded by the turn-level return.
//
// Turn level, over the turn-end tokens p_0 < … < p_{K−1}:
//
//	δ_k = r_{p_k} + γ_H·V_{p_{k+1}} − V_{p_k}      (V_{p_K} = 0)
//	Â_k = δ_k + γ_H·λ·Â_{k+1}
//
// Token level, agent tokens only, backward; at a turn end the recursion
// restarts with A_{p_k} = Â_k (RAGEN replaces the reward there by Â_k + V
// and bootstraps from 0, which gives the same); inside a turn
//
//	A_t = r_t + γ·V_next − V_t + γλ·A_next     (next = the next agent token)
//
// so credit reaches a turn's tokens from its own end, discounted per turn by
// γ_H across turns. Returns R_t = A_t + V_t; non-agent tokens get 0.
//
// Difference from RAGEN: turn ends are explicit (Trajectory.TurnEnd) where
// RAGEN takes every non-zero reward position, so a turn with reward 0 is
// still a turn here. A non-zero reward inside a turn (KL in the reward, say)
// enters that turn's token-level GAE only. The last agent token must be a
// turn end.
func BiLevelGAE(reward, value []float64, mask, turnEnd []bool, gamma, lam, highGamma float64) (adv, ret []float64, err error) {
	T := len(mask)
	var ends []int
	last := -1
	for t := 0; t < T; t++ {
		if turnEnd[t] {
			if !mask[t] {
				return nil, nil, fmt.Errorf("turn end at token %d, which the agent did not sample", t)
			}
			ends = append(ends, t)
		}
		if mask[t] {
			last = t
		}
	}
	if last >= 0 && !turnEnd[last] {
		return nil, nil, fmt.Errorf("the last agent token (%d) is not a turn end", last)
	}
	// Turn level.
	turnAdv := make([]float64, len(ends))
	next := 0.0
	for k := len(ends) - 1; k >= 0; k-- {
		nextV := 0.0
		if k+1 < len(ends) {
			nextV = value[ends[k+1]]
		}
		delta := reward[ends[k]] + highGamma*nextV - value[ends[k]]
		next = delta + highGamma*lam*next
		turnAdv[k] = next
	}
	// Token level.
	adv = make([]float64, T)
	ret = make([]float64, T)
	k := len(ends) - 1
	nextV, nextA := 0.0, 0.0
	for t := T - 1; t >= 0; t-- {
		if !mask[t] {
			continue
		}
		if turnEnd[t] {
			nextA = turnAdv[k]
			k--
		} else {
			nextA = reward[t] + gamma*nextV - value[t] + gamma*lam*nextA
		}
		nextV = value[t]
		adv[t] = nextA
		ret[t] = nextA + value[t]
	}
	return adv, ret, nil
}

// whitenEps is veRL masked_whiten's ε in (x − mean)/sqrt(var + ε).
const whitenEps = 1e-8

// Whiten normalises x to zero mean and unit variance over the agent tokens
// of the whole batch, in place, like veRL's masked_whiten:
//
//	μ = Σ m·x / Σ m ;  σ² = Σ m·(x − μ)² / (Σ m − 1)   (unbiased)
//	x ← (x − μ) / sqrt(σ² + 1e-8)   on agent tokens, 0 elsewhere
//
// It needs at least two agent tokens. Sums run in batch then token order.
func Whiten(x [][]float64, mask [][]bool) error {
	n, sum := 0, 0.0
	for i := range x {
		for t, m := range mask[i] {
			if m {
				n++
				sum += x[i][t]
			}
		}
	}
	if n < 2 {
		return fmt.Errorf("whitening needs at least 2 agent tokens in the batch (got %d)", n)
	}
	mean := sum / float64(n)
	ss := 0.0
	for i := range x {
		for t, m := range mask[i] {
			if m {
				d := x[i][t] - mean
				ss += d * d
			}
		}
	}
	inv := 1 / math.Sqrt(ss/float64(n-1)+whitenEps)
	for i := range x {
		for t, m := range mask[i] {
			if m {
				x[i][t] = (x[i][t] - mean) * inv
			} else {
				x[i][t] = 0
			}
		}
	}
	return nil
}
