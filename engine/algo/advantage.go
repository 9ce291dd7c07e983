package algo

import (
	"fmt"
	"math"
)

// Advantages computes the per-token advantages of a batch with the
// estimator cfg.AdvEstimator, and the critic's regression targets
// (returns, R_t = A_t + V_t before whitening) for gae and bi_level_gae
// (nil otherwise). Both are shaped like the masks; every token the agent did
// not sample gets exactly 0.
//
//	gae                    GAE per trajectory, then Whiten if cfg.NormAdv
//	bi_level_gae           BiLevelGAE per trajectory, then Whiten if cfg.NormAdv
//	grpo, dr_grpo, rloo    a scalar per trajectory from its group, broadcast to its agent tokens
//	reinforce              RewardToGo, minus the batch-mean return if cfg.BaselineMean
//	reinforce_pp           RewardToGo, then Whiten (veRL reinforce_plus_plus)
//	reinforce_pp_baseline  R − mean_g broadcast, then Whiten (veRL reinforce_plus_plus_baseline)
func Advantages(cfg *Config, batch []Trajectory) (adv, ret [][]float64, err error) {
	if len(batch) == 0 {
		return nil, nil, fmt.Errorf("advantages: empty batch")
	}
	est := cfg.AdvEstimator
	critic := est == EstGAE || est == EstBiLevelGAE
	for i := range batch {
		if err := checkTraj(i, &batch[i], critic, est == EstBiLevelGAE); err != nil {
			return nil, nil, err
		}
	}
	mask := masks(batch)
	returns := make([]float64, len(batch))
	group := make([]int, len(batch))
	for i := range batch {
		returns[i] = batch[i].Return()
		group[i] = batch[i].Group
	}
	switch est {
	case EstGAE, EstBiLevelGAE:
		adv = make([][]float64, len(batch))
		ret = make([][]float64, len(batch))
		for i := range batch {
			t := &batch[i]
			if est == EstGAE {
				adv[i], ret[i] = GAE(t.Reward, t.Value, t.Mask, cfg.Gamma, cfg.Lam)
				continue
			}
			adv[i], ret[i], err = BiLevelGAE(t.Reward, t.Value, t.Mask, t.TurnEnd, cfg.Gamma, cfg.Lam, cfg.HighLevelGamma)
			if err != nil {
				return nil, nil, fmt.Errorf("trajectory %d: %w", i, err)
			}
		}
		if cfg.NormAdv {
			if err := Whiten(adv, mask); err != nil {
				return nil, nil, err
			}
		}
		return adv, ret, nil
	case EstGRPO, EstDrGRPO:
		a, err := GRPO(returns, group, cfg.AdvEps, cfg.StdUnbiased, est == EstGRPO)
		if err != nil {
			return nil, nil, err
		}
		return Broadcast(a, mask), nil, nil
	case EstRLOO:
		a, err := RLOO(returns, group)
		if err != nil {
			return nil, nil, err
		}
		return Broadcast(a, mask), nil, nil
	case EstReinforce, EstReinforcePP:
		adv = make([][]float64, len(batch))
		for i := range batch {
			adv[i] = RewardToGo(batch[i].Reward, batch[i].Mask, cfg.Gamma)
		}
		if est == EstReinforcePP {
			return adv, nil, Whiten(adv, mask)
		}
		if cfg.BaselineMean {
			b := 0.0
			for i := range batch {
				b += firstAgent(adv[i], mask[i])
			}
			b /= float64(len(batch))
			for i := range adv {
				for t, m := range mask[i] {
					if m {
						adv[i][t] -= b
					}
				}
			}
		}
		return adv, nil, nil
	case EstReinforcePPBaseline:
		a, err := GRPO(returns, group, 0, cfg.StdUnbiased, false)
		if err != nil {
			return nil, nil, err
		}
		adv = Broadcast(a, mask)
		return adv, nil, Whiten(adv, mask)
	}
	return nil, nil, fmt.Errorf("adv_estimator: unknown estimator %q", est)
}

// firstAgent is x at the first agent token (0 if there is none): for a
// reward-to-go, the discounted return of the whole trajectory.
func firstAgent(x []float64, mask []bool) float64 {
	for t, m := range mask {
		if m {
			return x[t]
		}
	}
	return 0
}

// RewardToGo is the discounted return from each agent token on,
//
//	G_t = r_t + γ·G_next      (next = the next agent token; G after the last is 0)
//
// skipping non-agent tokens instead of resetting there (veRL's
// reinforce_plus_plus resets G at m_t = 0, which cuts the return at every
// observation: veRL#7278). Non-agent tokens get 0. With γ = 1 and the
// reward on the last token, G_t = R on every agent token.
func RewardToGo(reward []float64, mask []bool, gamma float64) []float64 {
	g := make([]float64, len(mask))
	next := 0.0
	for t := len(mask) - 1; t >= 0; t-- {
		if mask[t] {
			next = reward[t] + gamma*next
			g[t] = next
		}
	}
	return g
}

// GRPO returns one advantage per trajectory, normalised within its group
// (trajectories sharing an initial state), as veRL's
// compute_grpo_outcome_advantage:
//
//	Â_i = (R_i − mean_g R) / (std_g R + ε)    normStd (grpo; ε = adv_eps, 1e-6)
//	Â_i =  R_i − mean_g R                     !normStd (dr_grpo; veRL norm_adv_by_std_in_grpo=False)
//
// Dividing by std makes every group's advantages the same size whatever its
// spread: a group that differs only by small shaped rewards (Sokoban's −0.1 an
// action among games that all fail) pushes as hard as one split between
// winning and losing. dr_grpo keeps the rewards' scale (docs/decisions.md 26).
//
// std is Bessel-corrected (÷ (G−1), torch.std, veRL/TRL) when unbiased, else
// the population std (÷ G, ART). Groups must be real: a group of one
// trajectory is an error (veRL silently uses mean 0, std 1 there, which turns
// GRPO into REINFORCE without a baseline — RAGEN v1's quirk).
func GRPO(returns []float64, group []int, eps float64, unbiased, normStd bool) ([]float64, error) {
	if len(group) != len(returns) {
		return nil, fmt.Errorf("len(group) = %d, want len(returns) = %d", len(group), len(returns))
	}
	_, members := groupIndex(group)
	adv := make([]float64, len(returns))
	for _, mem := range members {
		if len(mem) < 2 {
			return nil, fmt.Errorf("group %d has 1 trajectory: group estimators need at least 2 per group (same initial state)", group[mem[0]])
		}
		xs := gather(returns, mem)
		mean, std := meanStd(xs, unbiased)
		for _, i := range mem {
			adv[i] = returns[i] - mean
			if normStd {
				adv[i] /= std + eps
			}
		}
	}
	return adv, nil
}

// RLOO returns the leave-one-out advantage of each trajectory (Kool et al.
// 2019; veRL rloo, TRL RLOOTrainer, OpenRLHF rloo):
//
//	Â_i = R_i − 1/(G−1) · Σ_{j≠i} R_j   =   G/(G−1) · (R_i − mean_g R)
//
// computed in the first form. Groups need at least 2 trajectories.
func RLOO(returns []float64, group []int) ([]float64, error) {
	if len(group) != len(returns) {
		return nil, fmt.Errorf("len(group) = %d, want len(returns) = %d", len(group), len(returns))
	}
	_, members := groupIndex(group)
	adv := make([]float64, len(returns))
	for _, mem := range members {
		G := len(mem)
		if G < 2 {
			return nil, fmt.Errorf("group %d has 1 trajectory: rloo needs at least 2 per group (same initial state)", group[mem[0]])
		}
		sum := 0.0
		for _, i := range mem {
			sum += returns[i]
		}
		for _, i := range mem {
			adv[i] = returns[i] - (sum-returns[i])/float64(G-1)
		}
	}
	return adv, nil
}

// Broadcast gives every agent token of trajectory i the scalar a[i] and every
// other token 0: how outcome estimators (GRPO, RLOO, …) credit a trajectory.
func Broadcast(a []float64, mask [][]bool) [][]float64 {
	out := zeros(mask)
	for i := range mask {
		for t, m := range mask[i] {
			if m {
				out[i][t] = a[i]
			}
		}
	}
	return out
}

// gather returns xs[idx[0]], xs[idx[1]], ….
func gather(xs []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for k, i := range idx {
		out[k] = xs[i]
	}
	return out
}

// meanStd returns the mean and the std of xs (two passes, in order); the
// std divides by n−1 when unbiased (0 for a single value), else by n.
func meanStd(xs []float64, unbiased bool) (mean, std float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	ss := 0.0
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	div := float64(n)
	if unbiased {
		if n < 2 {
			return mean, 0
		}
		div = float64(n - 1)
	}
	return mean, math.Sqrt(ss / div)
}
