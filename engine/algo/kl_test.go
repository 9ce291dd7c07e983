package algo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// logp = −1, ref = −1.5, δ = 0.5:
//
//	k1 = 0.5                       ∂ = 1
//	k2 = ½·0.25 = 0.125            ∂ = δ = 0.5
//	k3 = e^{−0.5} + 0.5 − 1        ∂ = 1 − e^{−0.5}
//	abs = 0.5                      ∂ = 1
//
// and δ = −0.5 (logp = −1.5, ref = −1): k1 = −0.5, k2 = 0.125 (∂ −0.5),
// k3 = e^{0.5} − 0.5 − 1 (∂ 1 − e^{0.5}), abs = 0.5 (∂ −1).
func TestKLHandComputed(t *testing.T) {
	cases := []struct {
		est, name string
		logp, ref float64
		kl, grad  float64
	}{
		{KLk1, "k1+", -1, -1.5, 0.5, 1},
		{KLk2, "k2+", -1, -1.5, 0.125, 0.5},
		{KLk3, "k3+", -1, -1.5, math.Exp(-0.5) - 0.5, 1 - math.Exp(-0.5)},
		{KLAbs, "abs+", -1, -1.5, 0.5, 1},
		{KLk1, "k1−", -1.5, -1, -0.5, 1},
		{KLk2, "k2−", -1.5, -1, 0.125, -0.5},
		{KLk3, "k3−", -1.5, -1, math.Exp(0.5) - 1.5, 1 - math.Exp(0.5)},
		{KLAbs, "abs−", -1.5, -1, 0.5, -1},
		{KLAbs, "abs0", -1, -1, 0, 0},
		{KLk3, "k3 0", -1, -1, 0, 0},
		// k3 clamped at 10 (veRL low_var_kl): δ = −3 gives e^3 − 4 ≈ 16.1 → 10, no gradient
		{KLk3, "k3 clamp", -4, -1, 10, 0},
		// δ = −2: e² − 3 ≈ 4.389 (below the clamp), ∂ = 1 − e²
		{KLk3, "k3 −2", -3, -1, math.Exp(2) - 3, 1 - math.Exp(2)},
	}
	for _, c := range cases {
		kl, g, err := KL(c.est, c.logp, c.ref)
		if err != nil {
			t.Fatal(err)
		}
		near(t, c.name+" value", kl, c.kl, 1e-14)
		near(t, c.name+" grad", g, c.grad, 1e-14)
	}
	if _, _, err := KL("k9", 0, 0); err == nil || err.Error() != `kl_estimator: unknown estimator "k9"` {
		t.Errorf("unknown estimator: err = %v", err)
	}
}

// Each estimator's derivative matches central differences of its value;
// k3 is non-negative everywhere (it is a divergence estimate per sample).
func TestKLGradientFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const h = 1e-6
	for trial := 0; trial < 500; trial++ {
		ref := -rng.Float64() * 5
		logp := ref + rng.NormFloat64()
		if math.Abs(logp-ref) < 1e-3 {
			continue
		}
		for _, est := range []string{KLk1, KLk2, KLk3, KLAbs} {
			kl, g, _ := KL(est, logp, ref)
			f := func(x float64) float64 { v, _, _ := KL(est, x, ref); return v }
			if est == KLk3 && math.Abs(kl-10) < 1e-3 {
				continue // at the clamp's kink
			}
			fd := (f(logp+h) - f(logp-h)) / (2 * h)
			near(t, est+" FD", g, fd, 1e-6*(1+math.Abs(fd)))
			if est == KLk3 && kl < 0 {
				t.Errorf("k3 = %v < 0 at δ = %v", kl, logp-ref)
			}
		}
	}
}

// β = 0.5, k1 from old vs ref on agent tokens: δ = 0.2 and −0.4, so the
// rewards 0 and 1 become −0.1 and 1.2; the observation token keeps 0; the
// reported mean KL is (0.2 − 0.4)/2 = −0.1. The batch is not modified.
func TestKLRewards(t *testing.T) {
	batch := []Trajectory{{Mask: []bool{true, false, true}, Reward: []float64{0, 0, 1}}}
	old := [][]float64{{-1, -3, -2}}
	ref := [][]float64{{-1.2, -1, -1.6}}
	r, mean, err := KLRewards(batch, old, ref, KLk1, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	nearSlice(t, "rewards", r[0], []float64{-0.1, 0, 1.2}, 1e-12)
	near(t, "mean kl", mean, -0.1, 1e-12)
	nearSlice(t, "batch untouched", batch[0].Reward, []float64{0, 0, 1}, 0)
}
