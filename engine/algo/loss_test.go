package algo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Each case with ε_low = 0.2, ε_high = 0.28, c = 3 (ρ = exp(logp − old)):
func TestPPOClipHandComputed(t *testing.T) {
	cases := []struct {
		name           string
		ratio, adv, c  float64
		loss, grad     float64
		high, low, dua bool
	}{
		// inside [0.8, 1.28]: L = −Aρ = −1.1, ∂L/∂logp = −Aρ = −1.1
		{"inside", 1.1, 1, 3, -1.1, -1.1, false, false, false},
		// A > 0, ρ = 1.5 > 1.28: L2 = −1.28 > L1 = −1.5, clipped, no gradient
		{"upper clip", 1.5, 1, 3, -1.28, 0, true, false, false},
		// A > 0, ρ = 0.5 < 0.8: L1 = −0.5 > L2 = −0.8, so the unclipped term (with gradient) wins
		{"A>0 below range", 0.5, 1, 3, -0.5, -0.5, false, false, false},
		// A < 0, ρ = 0.5 < 0.8: L2 = 0.8 > L1 = 0.5, clipped at the lower bound
		{"lower clip", 0.5, -1, 3, 0.8, 0, false, true, false},
		// A < 0, ρ = 1.5: L1 = 1.5 > L2 = 1.28, unclipped; dual bound −A·c = 3 not reached
		{"A<0 above range", 1.5, -1, 3, 1.5, 1.5, false, false, false},
		// A < 0, ρ = 4: Lc = L1 = 4 > −A·c = 3, the dual clip bounds it at 3
		{"dual clip", 4, -1, 3, 3, 0, false, false, true},
		// the same with dual clip off (c = 0): L = 4, ∂L/∂logp = −Aρ = 4
		{"dual clip off", 4, -1, 0, 4, 4, false, false, false},
		// A = 0: no loss, no gradient
		{"zero advantage", 1.7, 0, 3, 0, 0, false, false, false},
	}
	for _, c := range cases {
		tok := PPOClip(math.Log(c.ratio)-0.3, -0.3, c.adv, 0.2, 0.28, c.c)
		near(t, c.name+" loss", tok.Loss, c.loss, 1e-12)
		near(t, c.name+" grad", tok.Grad, c.grad, 1e-12)
		if tok.High != c.high || tok.Low != c.low || tok.Dual != c.dua {
			t.Errorf("%s: flags high=%v low=%v dual=%v, want %v %v %v", c.name, tok.High, tok.Low, tok.Dual, c.high, c.low, c.dua)
		}
	}
	// log-ratio 25 is clamped to 20: the loss uses e^20 and has no gradient.
	tok := PPOClip(25, 0, -1e-3, 0.2, 0.28, 0)
	near(t, "clamped loss", tok.Loss, 1e-3*math.Exp(20), 1e-6)
	near(t, "clamped grad", tok.Grad, 0, 0)
}

// The analytic ∂L/∂logp matches central finite differences at random points
// inside and outside the clip region (points within h of a kink skipped).
func TestPPOClipGradientFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const h = 1e-6
	regions := map[string]int{}
	for trial := 0; trial < 2000; trial++ {
		old := rng.NormFloat64()
		lr := rng.NormFloat64() * 0.8 // ratios from about 0.1 to 10
		adv := rng.NormFloat64()
		logp := old + lr
		f := func(x float64) float64 { return PPOClip(x, old, adv, 0.2, 0.28, 3).Loss }
		tok := PPOClip(logp, old, adv, 0.2, 0.28, 3)
		r := math.Exp(lr)
		kinks := []float64{0.8, 1.28, 3} // ratio kinks: 1−ε_low, 1+ε_high and the dual clip at ρ = c
		skip := false
		for _, k := range kinks {
			if math.Abs(r-k) < 1e-4 {
				skip = true
			}
		}
		if skip {
			continue
		}
		fd := (f(logp+h) - f(logp-h)) / (2 * h)
		if math.Abs(fd-tok.Grad) > 1e-6*(1+math.Abs(fd)) {
			t.Fatalf("ρ=%v A=%v: grad %v, finite difference %v", r, adv, tok.Grad, fd)
		}
		switch {
		case tok.Dual:
			regions["dual"]++
		case tok.High || tok.Low:
			regions["clipped"]++
		default:
			regions["unclipped"]++
		}
	}
	for _, r := range []string{"dual", "clipped", "unclipped"} {
		if regions[r] < 20 {
			t.Errorf("only %d points in region %s", regions[r], r)
		}
	}
}

// Four agent tokens (one observation skipped): inside (A>0), upper clip
// (A>0, ρ=1.5), lower clip (A<0, ρ=0.5), dual clip (A<0, ρ=4).
// veRL: pg_clipfrac = 2/4 (L2 > L1 on either side), pg_clipfrac_lower = 1/4;
// high 1/4, low 1/4; ppo_kl = mean(old − new) = −(ln 1.1 + ln 1.5 + ln 0.5 + ln 4)/4.
func TestPolicyLossStats(t *testing.T) {
	ratios := []float64{1.1, 1.5, 0.5, 4}
	advs := []float64{1, 1, -1, -1}
	logp := [][]float64{{0, 0, 0, 0, 0}}
	old := [][]float64{{0, 0, 0, 0, 0}}
	adv := [][]float64{{0, 0, 0, 0, 0}}
	mask := [][]bool{{true, true, false, true, true}}
	k := 0
	for t2, m := range mask[0] {
		if m {
			logp[0][t2] = math.Log(ratios[k])
			adv[0][t2] = advs[k]
			k++
		} else {
			logp[0][t2], adv[0][t2] = 7, 5 // must be ignored
		}
	}
	pl, err := ComputePolicyLoss(logp, old, adv, mask, 0.2, 0.28, 3)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "pg_clipfrac", pl.PGClipFrac, 0.5, 0)
	near(t, "pg_clipfrac_lower", pl.PGClipFracLower, 0.25, 0)
	near(t, "clipfrac_high", pl.ClipFracHigh, 0.25, 0)
	near(t, "clipfrac_low", pl.ClipFracLow, 0.25, 0)
	near(t, "ppo_kl", pl.PPOKL, -(math.Log(1.1)+math.Log(1.5)+math.Log(0.5)+math.Log(4))/4, 1e-15)
	if pl.Loss[0][2] != 0 || pl.Grad[0][2] != 0 {
		t.Errorf("observation token: loss %v grad %v, want exactly 0", pl.Loss[0][2], pl.Grad[0][2])
	}
	nearSlice(t, "loss", pl.Loss[0], []float64{-1.1, -1.28, 0, 0.8, 3}, 1e-12)

	_, err = ComputePolicyLoss(logp, old, [][]float64{{0, 0, 0, math.NaN(), 0}}, mask, 0.2, 0.28, 3)
	if want := "advantages: NaN at sequence 0, token 3"; err == nil || err.Error() != want {
		t.Errorf("NaN advantage: err = %v, want %q", err, want)
	}
}

// randomActorInputs builds a ragged batch with interleaved masks, ratios
// near 1 (so most tokens are unclipped) and some far out.
func randomActorInputs(rng *rand.Rand) ActorInputs {
	in := ActorInputs{}
	for i := 0; i < 4; i++ {
		T := 2 + rng.IntN(7)
		m := make([]bool, T)
		lp, old, adv, ent, ref := make([]float64, T), make([]float64, T), make([]float64, T), make([]float64, T), make([]float64, T)
		for k := range T {
			m[k] = rng.Float64() < 0.7
			old[k] = -rng.Float64() * 3
			lp[k] = old[k] + rng.NormFloat64()*0.3
			adv[k] = rng.NormFloat64()
			ent[k] = rng.Float64() * 2
			ref[k] = old[k] + rng.NormFloat64()*0.5
		}
		m[0] = true
		in.Mask = append(in.Mask, m)
		in.Logp = append(in.Logp, lp)
		in.OldLogp = append(in.OldLogp, old)
		in.Adv = append(in.Adv, adv)
		in.Entropy = append(in.Entropy, ent)
		in.RefLogp = append(in.RefLogp, ref)
	}
	return in
}

// The total actor loss (PPO + entropy + KL loss, every aggregation mode and
// KL estimator) has the per-token derivatives ComputeActorLoss reports,
// checked by central differences on every agent token; observation tokens
// get exactly 0.
func TestActorLossGradientFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const h = 1e-6
	for _, agg := range []string{AggTokenMean, AggSeqMeanTokenSum, AggSeqMeanTokenMean, AggSeqMeanTokenSumNrm} {
		for _, est := range []string{KLk1, KLk2, KLk3, KLAbs} {
			cfg := StarPOS()
			cfg.LossAgg, cfg.KLEstimator = agg, est
			cfg.KLPlacement, cfg.KLCoef = KLLoss, 0.1
			cfg.EntropyCoef = 0.01
			in := randomActorInputs(rng)
			out, err := ComputeActorLoss(&cfg, in)
			if err != nil {
				t.Fatal(err)
			}
			name := agg + "/" + est
			for i := range in.Mask {
				for k, m := range in.Mask[i] {
					if !m {
						if out.DLogp[i][k] != 0 || out.DEntropy[i][k] != 0 {
							t.Errorf("%s: observation token (%d,%d) has gradient", name, i, k)
						}
						continue
					}
					f := func(x float64) float64 {
						save := in.Logp[i][k]
						in.Logp[i][k] = x
						o, _ := ComputeActorLoss(&cfg, in)
						in.Logp[i][k] = save
						return o.Loss
					}
					x := in.Logp[i][k]
					fd := (f(x+h) - f(x-h)) / (2 * h)
					near(t, fmt.Sprintf("%s dL/dlogp(%d,%d)", name, i, k), out.DLogp[i][k], fd, 1e-6)
					g := func(x float64) float64 {
						save := in.Entropy[i][k]
						in.Entropy[i][k] = x
						o, _ := ComputeActorLoss(&cfg, in)
						in.Entropy[i][k] = save
						return o.Loss
					}
					x = in.Entropy[i][k]
					fd = (g(x+h) - g(x-h)) / (2 * h)
					near(t, fmt.Sprintf("%s dL/dH(%d,%d)", name, i, k), out.DEntropy[i][k], fd, 1e-7)
				}
			}
		}
	}
}

// L = agg(PPO) − c_H·agg(H) + β·agg(KL) on one token-mean example:
// two agent tokens, ρ = 1 (PPO loss −A), A = 1 and −0.5, H = 0.4 and 0.6,
// δ = logp − ref = 0.2 and −0.2 with k2 = 0.02 each.
//
//	agg(PPO) = (−1 + 0.5)/2 = −0.25 ;  agg(H) = 0.5 ;  agg(k2) = 0.02
//	L = −0.25 − 0.01·0.5 + 0.1·0.02 = −0.253
func TestActorLossHandComputed(t *testing.T) {
	cfg := StarPOS()
	cfg.EntropyCoef, cfg.KLPlacement, cfg.KLEstimator, cfg.KLCoef = 0.01, KLLoss, KLk2, 0.1
	in := ActorInputs{
		Mask:    [][]bool{{true, false, true}},
		Logp:    [][]float64{{-1, -5, -2}},
		OldLogp: [][]float64{{-1, -5, -2}},
		Adv:     [][]float64{{1, 0, -0.5}},
		Entropy: [][]float64{{0.4, 3, 0.6}},
		RefLogp: [][]float64{{-1.2, -5, -1.8}},
	}
	out, err := ComputeActorLoss(&cfg, in)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "loss", out.Loss, -0.253, 1e-12)
	near(t, "pg", out.PGLoss, -0.25, 1e-12)
	near(t, "entropy", out.Entropy, 0.5, 1e-12)
	near(t, "kl", out.KLRef, 0.02, 1e-12)
	// ∂L/∂logp = ½·(−Aρ + β·δ): ½·(−1 + 0.02) = −0.49 and ½·(0.5 − 0.02) = 0.24
	nearSlice(t, "dlogp", out.DLogp[0], []float64{-0.49, 0, 0.24}, 1e-12)
	nearSlice(t, "dH", out.DEntropy[0], []float64{-0.005, 0, -0.005}, 1e-15)
	// The parts: ½·(−Aρ) and ½·β·δ, δ = logp − ref = (0.2, −0.2).
	nearSlice(t, "dlogp pg", out.DLogpPG[0], []float64{-0.5, 0, 0.25}, 1e-12)
	nearSlice(t, "dlogp kl", out.DLogpKL[0], []float64{0.01, 0, -0.01}, 1e-12)

	// KL placement none: the KL is reported but does not enter the loss.
	cfg.KLPlacement = KLNone
	out, _ = ComputeActorLoss(&cfg, in)
	near(t, "loss without KL", out.Loss, -0.255, 1e-12)
	near(t, "kl still reported", out.KLRef, 0.02, 1e-12)
	if out.DLogpKL != nil || &out.DLogpPG[0][0] != &out.DLogp[0][0] {
		t.Error("without a KL term DLogpPG is DLogp and DLogpKL nil")
	}

	cfg.KLPlacement = KLLoss
	in.RefLogp = nil
	if _, err := ComputeActorLoss(&cfg, in); err == nil || err.Error() != "ref_logp: required when kl_placement = loss and kl_coef > 0 (0.1)" {
		t.Errorf("missing ref: err = %v", err)
	}
	in.Entropy = nil
	if _, err := ComputeActorLoss(&cfg, in); err == nil || err.Error() != "entropy: required when entropy_coef > 0 (0.01)" {
		t.Errorf("missing entropy: err = %v", err)
	}
}

// ε_v = 0.5, token-mean over three agent tokens (one observation skipped):
//
//	V=1, V_old=0.8, R=2:  V_clip = 1 (inside);  l = ½·1 = 0.5;  ∂/∂V = V − R = −1
//	V=2, V_old=0.8, R=0:  V_clip = 1.3; (V−R)² = 4 > 1.69;  l = 2;  ∂/∂V = 2
//	V=0, V_old=0.8, R=−1: V_clip = 0.3; (V_clip−R)² = 1.69 > 1;  l = 0.845;  ∂/∂V = 0 (clipped)
//	loss = (0.5 + 2 + 0.845)/3 = 1.115;  grads ÷ 3;  vf_clipfrac = 1/3
func TestValueLossHandComputed(t *testing.T) {
	cfg := StarPOS()
	mask := [][]bool{{true, false, true, true}}
	v := [][]float64{{1, 9, 2, 0}}
	vo := [][]float64{{0.8, 9, 0.8, 0.8}}
	r := [][]float64{{2, 9, 0, -1}}
	out, err := ComputeValueLoss(&cfg, v, vo, r, mask)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "loss", out.Loss, 1.115, 1e-12)
	nearSlice(t, "dV", out.DValue[0], []float64{-1.0 / 3, 0, 2.0 / 3, 0}, 1e-15)
	near(t, "clipfrac", out.ClipFrac, 1.0/3, 0)

	// value_clip 0: l = ½(V−R)², (0.5 + 2 + 0.5)/3 = 1.
	cfg.ValueClip = 0
	out, _ = ComputeValueLoss(&cfg, v, vo, r, mask)
	near(t, "unclipped loss", out.Loss, 1, 1e-12)

	// Finite differences at random points (clip on).
	cfg.ValueClip = 0.5
	rng := rand.New(rand.NewPCG(7, 8))
	const h = 1e-6
	for trial := 0; trial < 500; trial++ {
		v := [][]float64{{rng.NormFloat64()}}
		vo := [][]float64{{rng.NormFloat64()}}
		r := [][]float64{{rng.NormFloat64()}}
		m := [][]bool{{true}}
		if math.Abs(math.Abs(v[0][0]-vo[0][0])-0.5) < 1e-4 {
			continue
		}
		out, _ := ComputeValueLoss(&cfg, v, vo, r, m)
		f := func(x float64) float64 {
			o, _ := ComputeValueLoss(&cfg, [][]float64{{x}}, vo, r, m)
			return o.Loss
		}
		fd := (f(v[0][0]+h) - f(v[0][0]-h)) / (2 * h)
		near(t, "value FD", out.DValue[0][0], fd, 1e-6)
	}
}

// R = 1, 2, 3: a perfect critic explains all of it (1); a constant 2
// leaves Var(R − V) = Var(R) = 1, so 1 − 1/(1 + 1e-5).
func TestExplainedVariance(t *testing.T) {
	mask := [][]bool{{true, true, false, true}}
	r := [][]float64{{1, 2, 50, 3}}
	near(t, "perfect", ExplainedVariance([][]float64{{1, 2, -7, 3}}, r, mask), 1-0/(1+1e-5), 1e-15)
	near(t, "constant", ExplainedVariance([][]float64{{2, 2, 2, 2}}, r, mask), 1-1/(1+1e-5), 1e-12)
}
