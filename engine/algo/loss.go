package algo

import (
	"fmt"
	"math"
)

// maxLogRatio bounds log(π/π_old) before exp, as veRL does (±20).
const maxLogRatio = 20

// PPOToken is one token's clipped surrogate loss, its derivative with respect
// to the new log-prob, and which clip bound it.
type PPOToken struct {
	Loss float64 // per-token loss
	Grad float64 // ∂Loss/∂logp
	High bool    // ratio > 1+ε_high with A > 0: the upper clip bound it (no gradient)
	Low  bool    // ratio < 1−ε_low with A < 0: the lower clip bound it (no gradient)
	Dual bool    // A < 0 and the dual clip bound it at −A·c (no gradient)
}

// PPOClip is the PPO clipped objective for one token, with clip-higher and
// dual clip, exactly as veRL's compute_policy_loss_vanilla (which RAGEN uses):
//
//	ρ  = exp(clamp(logp − logp_old, −20, 20))
//	L1 = −A·ρ ;  L2 = −A·clip(ρ, 1−ε_low, 1+ε_high) ;  Lc = max(L1, L2)
//	L  = Lc                 if A ≥ 0 (or c = 0: dual clip off)
//	   = min(−A·c, Lc)      if A < 0                 (Ye et al. 2019)
//
// and its derivative, from ∂ρ/∂logp = ρ (0 where the log-ratio clamp is
// active):
//
//	∂L/∂logp = −A·ρ   when L = L1 (ratio inside the clip range, or outside it on
//	                  the side where L1 is the larger: A > 0 with ρ < 1−ε_low,
//	                  A < 0 with ρ > 1+ε_high — PPO's pessimistic bound)
//	         = 0      when L2 > L1 (clipped: A > 0 with ρ > 1+ε_high, A < 0 with ρ < 1−ε_low)
//	         = 0      when the dual clip is active (A < 0, Lc > −A·c)
//
// High and Low together are veRL's pg_clipfrac (L2 > L1); Dual is its
// pg_clipfrac_lower.
func PPOClip(logp, oldLogp, adv, clipLow, clipHigh, clipC float64) PPOToken {
	lr, dlr := logp-oldLogp, 1.0
	if lr < -maxLogRatio || lr > maxLogRatio {
		lr = math.Max(-maxLogRatio, math.Min(maxLogRatio, lr))
		dlr = 0
	}
	ratio := math.Exp(lr)
	l1 := -adv * ratio
	l2 := -adv * math.Max(1-clipLow, math.Min(1+clipHigh, ratio))
	var tok PPOToken
	if l2 > l1 {
		tok.Loss = l2 // constant in logp
		tok.High = adv > 0
		tok.Low = adv < 0
	} else {
		tok.Loss = l1
		tok.Grad = -adv * ratio * dlr
	}
	if adv < 0 && clipC > 0 {
		if l3 := -adv * clipC; tok.Loss > l3 {
			tok.Loss, tok.Grad, tok.Dual = l3, 0, true
		}
	}
	return tok
}

// PolicyLoss is PPOClip over a batch: the per-token losses and gradients
// (0 off the mask), and the token-means over agent tokens of veRL's
// statistics.
type PolicyLoss struct {
	Loss, Grad      [][]float64 // per token; aggregate with AggWeights
	PGClipFrac      float64     // veRL actor/pg_clipfrac: fraction clipped by either PPO bound (L2 > L1)
	PGClipFracLower float64     // veRL actor/pg_clipfrac_lower: fraction bound by the dual clip (A < 0)
	ClipFracHigh    float64     // fraction with A > 0 and ρ > 1+ε_high (the upper bound)
	ClipFracLow     float64     // fraction with A < 0 and ρ < 1−ε_low (the lower bound)
	PPOKL           float64     // veRL actor/ppo_kl: mean(logp_old − logp), log-ratio clamped to ±20
}

// ComputePolicyLoss evaluates PPOClip on every agent token of a batch.
// logp, oldLogp and adv are shaped like mask.
func ComputePolicyLoss(logp, oldLogp, adv [][]float64, mask [][]bool, clipLow, clipHigh, clipC float64) (PolicyLoss, error) {
	for _, a := range []struct {
		name string
		x    [][]float64
	}{{"logp", logp}, {"old_logp", oldLogp}, {"advantages", adv}} {
		if err := checkShape(a.name, a.x, mask); err != nil {
			return PolicyLoss{}, err
		}
	}
	out := PolicyLoss{Loss: zeros(mask), Grad: zeros(mask)}
	n, high, low, dual, kl := 0, 0, 0, 0, 0.0
	for i := range mask {
		for t, m := range mask[i] {
			if !m {
				continue
			}
			tok := PPOClip(logp[i][t], oldLogp[i][t], adv[i][t], clipLow, clipHigh, clipC)
			out.Loss[i][t], out.Grad[i][t] = tok.Loss, tok.Grad
			n++
			high += b2i(tok.High)
			low += b2i(tok.Low)
			dual += b2i(tok.Dual)
			kl -= math.Max(-maxLogRatio, math.Min(maxLogRatio, logp[i][t]-oldLogp[i][t]))
		}
	}
	if n > 0 {
		f := 1 / float64(n)
		out.PGClipFrac = float64(high+low) * f
		out.PGClipFracLower = float64(dual) * f
		out.ClipFracHigh = float64(high) * f
		out.ClipFracLow = float64(low) * f
		out.PPOKL = kl * f
	}
	return out, nil
}

// ActorInputs are the per-token arrays of one optimizer step's minibatch,
// each shaped like Mask.
type ActorInputs struct {
	Mask    [][]bool
	Logp    [][]float64 // log π_θ(token) under the policy being trained
	OldLogp [][]float64 // log π_old(token) at rollout time
	Adv     [][]float64 // advantages (Advantages)
	Entropy [][]float64 // per-token entropy of π_θ; required when entropy_coef > 0, else may be nil
	RefLogp [][]float64 // log π_ref(token); required when kl_placement = loss and kl_coef > 0, else may be nil
}

// ActorLoss is the actor's scalar loss, its derivatives for the model to
// back-propagate, and the statistics to log.
type ActorLoss struct {
	Loss     float64     // PG + KL − entropy bonus
	DLogp    [][]float64 // ∂Loss/∂logp per token (0 off the mask): DLogpPG + DLogpKL
	DEntropy [][]float64 // ∂Loss/∂H per token (nil when Entropy was nil): the entropy term's alone
	// The parts of DLogp: the PPO term's, and the KL term's (nil unless
	// kl_placement = loss); DLogpPG is DLogp itself without a KL term.
	// RAGEN's gradient analysis back-propagates each term alone.
	DLogpPG, DLogpKL [][]float64

	PGLoss  float64 // agg(PPO loss)
	Entropy float64 // agg(H) (0 when Entropy was nil)
	KLRef   float64 // agg(k(logp, ref)) (0 when RefLogp was nil)
	PolicyLoss
}

// ComputeActorLoss assembles the actor objective of StarPO(-S) (veRL
// dp_actor.update_policy):
//
//	L = agg(L_PPO) − c_H·agg(H) + β·agg(k(logp, logp_ref))   [KL term only for kl_placement = loss]
//	∂L/∂logp_t = w_t·(∂L_PPO,t/∂logp_t + β·∂k_t/∂logp_t)
//	∂L/∂H_t    = −c_H·w_t
//
// with w = AggWeights(cfg.LossAgg, Mask, cfg.LossScaleLen) (one aggregation
// for every term, as veRL). The KL to the reference is reported whenever
// RefLogp is given.
func ComputeActorLoss(cfg *Config, in ActorInputs) (ActorLoss, error) {
	w, err := AggWeights(cfg.LossAgg, in.Mask, cfg.LossScaleLen)
	if err != nil {
		return ActorLoss{}, err
	}
	pl, err := ComputePolicyLoss(in.Logp, in.OldLogp, in.Adv, in.Mask, cfg.ClipLow, cfg.ClipHigh, cfg.ClipC)
	if err != nil {
		return ActorLoss{}, err
	}
	out := ActorLoss{PolicyLoss: pl, DLogp: zeros(in.Mask)}
	out.PGLoss = Aggregate(pl.Loss, w)
	for i := range w {
		for t, wt := range w[i] {
			out.DLogp[i][t] = wt * pl.Grad[i][t]
		}
	}
	out.Loss = out.PGLoss
	out.DLogpPG = out.DLogp

	if cfg.EntropyCoef > 0 && in.Entropy == nil {
		return ActorLoss{}, fmt.Errorf("entropy: required when entropy_coef > 0 (%v)", cfg.EntropyCoef)
	}
	if in.Entropy != nil {
		if err := checkShape("entropy", in.Entropy, in.Mask); err != nil {
			return ActorLoss{}, err
		}
		out.Entropy = Aggregate(in.Entropy, w)
		out.Loss -= cfg.EntropyCoef * out.Entropy
		out.DEntropy = zeros(in.Mask)
		for i := range w {
			for t, wt := range w[i] {
				out.DEntropy[i][t] = -cfg.EntropyCoef * wt
			}
		}
	}

	klLoss := cfg.KLPlacement == KLLoss && cfg.KLCoef > 0
	if klLoss && in.RefLogp == nil {
		return ActorLoss{}, fmt.Errorf("ref_logp: required when kl_placement = loss and kl_coef > 0 (%v)", cfg.KLCoef)
	}
	if in.RefLogp != nil {
		if err := checkShape("ref_logp", in.RefLogp, in.Mask); err != nil {
			return ActorLoss{}, err
		}
		if klLoss {
			out.DLogpPG, out.DLogpKL = clone(out.DLogp), zeros(in.Mask)
		}
		for i := range w {
			for t, wt := range w[i] {
				if wt == 0 {
					continue
				}
				k, g, err := KL(cfg.KLEstimator, in.Logp[i][t], in.RefLogp[i][t])
				if err != nil {
					return ActorLoss{}, err
				}
				out.KLRef += wt * k
				if klLoss {
					out.DLogpKL[i][t] = wt * cfg.KLCoef * g
					out.DLogp[i][t] += out.DLogpKL[i][t]
				}
			}
		}
		if klLoss {
			out.Loss += cfg.KLCoef * out.KLRef
		}
	}
	return out, nil
}

// ValueLoss is the critic's loss, its derivative and statistics.
type ValueLoss struct {
	Loss     float64     // ½·agg(max((V − R)², (V_clip − R)²))
	DValue   [][]float64 // ∂Loss/∂V per token (0 off the mask)
	ClipFrac float64     // veRL critic/vf_clipfrac: token fraction where the clipped term is larger
}

// ComputeValueLoss is veRL's clipped value loss (compute_value_loss,
// critic.cliprange_value ε_v = 0.5), aggregated like the actor loss:
//
//	V_clip = clip(V, V_old − ε_v, V_old + ε_v)
//	l_t    = ½·max((V − R)², (V_clip − R)²)
//	∂l/∂V  = V − R   when (V − R)² ≥ (V_clip − R)²
//	       = 0       otherwise (then V lies outside V_old ± ε_v, where V_clip is constant)
//
// value_clip = 0 turns clipping off: l = ½(V − R)².
func ComputeValueLoss(cfg *Config, values, oldValues, returns [][]float64, mask [][]bool) (ValueLoss, error) {
	for _, a := range []struct {
		name string
		x    [][]float64
	}{{"values", values}, {"old_values", oldValues}, {"returns", returns}} {
		if err := checkShape(a.name, a.x, mask); err != nil {
			return ValueLoss{}, err
		}
	}
	w, err := AggWeights(cfg.LossAgg, mask, cfg.LossScaleLen)
	if err != nil {
		return ValueLoss{}, err
	}
	out := ValueLoss{DValue: zeros(mask)}
	n, clipped := 0, 0
	for i := range mask {
		for t, m := range mask[i] {
			if !m {
				continue
			}
			v, r := values[i][t], returns[i][t]
			l1 := (v - r) * (v - r)
			l, g := l1, v-r
			if cfg.ValueClip > 0 {
				vo := oldValues[i][t]
				vc := math.Max(vo-cfg.ValueClip, math.Min(vo+cfg.ValueClip, v))
				if l2 := (vc - r) * (vc - r); l2 > l1 {
					l, g = l2, 0
					clipped++
				}
			}
			n++
			out.Loss += w[i][t] * 0.5 * l
			out.DValue[i][t] = w[i][t] * g
		}
	}
	out.ClipFrac = float64(clipped) / float64(n)
	return out, nil
}

// ExplainedVariance is veRL's critic/vf_explained_var over agent tokens:
//
//	1 − Var(R − V) / (Var(R) + 1e-5)      (unbiased variances)
//
// 1 is a perfect critic, 0 one no better than a constant. With fewer than
// two agent tokens it is 0.
func ExplainedVariance(values, returns [][]float64, mask [][]bool) float64 {
	var r, d []float64
	for i := range mask {
		for t, m := range mask[i] {
			if m {
				r = append(r, returns[i][t])
				d = append(d, returns[i][t]-values[i][t])
			}
		}
	}
	if len(r) < 2 {
		return 0
	}
	_, sr := meanStd(r, true)
	_, sd := meanStd(d, true)
	return 1 - sd*sd/(sr*sr+1e-5)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
