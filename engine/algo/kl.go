package algo

import (
	"fmt"
	"math"
)

// KL returns a per-token estimate of KL(π ‖ π_ref) from the log-probs of a
// sampled token under the policy (logp) and the reference (ref), and its
// derivative with respect to logp (Schulman, "Approximating KL divergence",
// 2020; veRL kl_penalty). With δ = logp − ref:
//
//	k1   δ                    ∂/∂logp = 1                     (veRL "kl"; unbiased, can be < 0)
//	k2   ½·δ²                 ∂/∂logp = δ                     (veRL "mse")
//	k3   e^{−δ} + δ − 1       ∂/∂logp = 1 − e^{−δ}            (veRL "low_var_kl"; ≥ 0, low variance)
//	abs  |δ|                  ∂/∂logp = sign(δ) (0 at δ = 0)   (veRL "abs")
//
// k3 is computed as veRL does: x = clamp(ref − logp, −20, 20), k = e^x − x − 1,
// clamped to at most 10; the derivative is 0 where either clamp is active.
func KL(est string, logp, ref float64) (kl, grad float64, err error) {
	d := logp - ref
	switch est {
	case KLk1:
		return d, 1, nil
	case KLk2:
		return 0.5 * d * d, d, nil
	case KLk3:
		x := -d
		dx := -1.0 // ∂x/∂logp
		if x < -20 || x > 20 {
			x = math.Max(-20, math.Min(20, x))
			dx = 0
		}
		k := math.Exp(x) - x - 1
		if k > 10 {
			return 10, 0, nil
		}
		return k, (math.Exp(x) - 1) * dx, nil
	case KLAbs:
		switch {
		case d > 0:
			return d, 1, nil
		case d < 0:
			return -d, -1, nil
		}
		return 0, 0, nil
	}
	return 0, 0, fmt.Errorf("kl_estimator: unknown estimator %q", est)
}

// KLRewards returns the batch's token rewards with the KL penalty of
// kl_placement=reward (veRL apply_kl_penalty, use_kl_in_reward):
//
//	r_t ← r_t − β · k(logp_old_t, logp_ref_t)     on agent tokens
//
// computed from the rollout policy's log-probs (no gradient flows through a
// reward), and the token-mean of k over agent tokens (veRL
// actor/reward_kl_penalty). The batch is not modified.
func KLRewards(batch []Trajectory, oldLogp, refLogp [][]float64, est string, coef float64) (rewards [][]float64, meanKL float64, err error) {
	if err := checkShape("old_logp", oldLogp, masks(batch)); err != nil {
		return nil, 0, err
	}
	if err := checkShape("ref_logp", refLogp, masks(batch)); err != nil {
		return nil, 0, err
	}
	rewards = make([][]float64, len(batch))
	n := 0
	for i := range batch {
		tr := &batch[i]
		if len(tr.Reward) != len(tr.Mask) {
			return nil, 0, fmt.Errorf("trajectory %d: len(Reward) = %d, want len(Mask) = %d", i, len(tr.Reward), len(tr.Mask))
		}
		rewards[i] = append([]float64(nil), tr.Reward...)
		for t, m := range tr.Mask {
			if !m {
				continue
			}
			k, _, err := KL(est, oldLogp[i][t], refLogp[i][t])
			if err != nil {
				return nil, 0, err
			}
			rewards[i][t] -= coef * k
			meanKL += k
			n++
		}
	}
	if n > 0 {
		meanKL /= float64(n)
	}
	return rewards, meanKL, nil
}
