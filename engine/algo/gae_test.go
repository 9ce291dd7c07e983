package algo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// near fails the test when got and want differ by more than tol.
func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol || math.IsNaN(got) {
		t.Errorf("%s = %.12g, want %.12g (±%g)", name, got, want, tol)
	}
}

func nearSlice(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", name, len(got), len(want))
	}
	for i := range want {
		near(t, fmt.Sprintf("%s[%d]", name, i), got[i], want[i], tol)
	}
}

// Three agent tokens, reward 1 on the last, γ = 0.9, λ = 0.8 (γλ = 0.72):
//
//	t=2: δ = 1 + 0.9·0   − 0.7 = 0.3    A = 0.3
//	t=1: δ = 0 + 0.9·0.7 − 0.6 = 0.03   A = 0.03 + 0.72·0.3   = 0.246
//	t=0: δ = 0 + 0.9·0.6 − 0.5 = 0.04   A = 0.04 + 0.72·0.246 = 0.21712
//	returns A + V = 0.71712, 0.846, 1.0
func TestGAEHandComputed(t *testing.T) {
	adv, ret := GAE([]float64{0, 0, 1}, []float64{0.5, 0.6, 0.7}, []bool{true, true, true}, 0.9, 0.8)
	nearSlice(t, "adv", adv, []float64{0.21712, 0.246, 0.3}, 1e-12)
	nearSlice(t, "ret", ret, []float64{0.71712, 0.846, 1.0}, 1e-12)
}

// The same three agent tokens with observation tokens between them (whose
// critic values, 9, must not enter): GAE carries V_next and A_next across
// them, so the agent tokens get the same numbers as above and the
// observation tokens get exactly 0.
func TestGAESkipsObservationTokens(t *testing.T) {
	mask := []bool{true, false, false, true, false, true}
	reward := []float64{0, 0, 0, 0, 0, 1}
	value := []float64{0.5, 9, 9, 0.6, 9, 0.7}
	adv, ret := GAE(reward, value, mask, 0.9, 0.8)
	nearSlice(t, "adv", adv, []float64{0.21712, 0, 0, 0.246, 0, 0.3}, 1e-12)
	nearSlice(t, "ret", ret, []float64{0.71712, 0, 0, 0.846, 0, 1.0}, 1e-12)
	for k, m := range mask {
		if !m && (adv[k] != 0 || ret[k] != 0) {
			t.Errorf("observation token %d: adv %v ret %v, want exactly 0", k, adv[k], ret[k])
		}
	}
	// Trailing observation tokens (the next prompt) change nothing either.
	adv2, _ := GAE(append(reward, 0, 0), append(value, 5, 5), append(mask, false, false), 0.9, 0.8)
	nearSlice(t, "adv with trailing observation", adv2[:6], adv, 0)
}

// The backward recursion and the direct sum over discounted TD errors agree
// on random trajectories with interleaved agent and observation tokens.
func TestGAERecursionMatchesDirectSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		T := 1 + rng.IntN(40)
		mask := make([]bool, T)
		reward := make([]float64, T)
		value := make([]float64, T)
		for k := range T {
			mask[k] = rng.Float64() < 0.6
			value[k] = rng.NormFloat64()
			if mask[k] {
				reward[k] = rng.NormFloat64()
			}
		}
		gamma, lam := rng.Float64(), rng.Float64()
		if trial%4 == 0 {
			gamma, lam = 1, 1
		}
		a1, r1 := GAE(reward, value, mask, gamma, lam)
		a2, r2 := GAEDirect(reward, value, mask, gamma, lam)
		for k := range T {
			if math.Abs(a1[k]-a2[k]) > 1e-10 || math.Abs(r1[k]-r2[k]) > 1e-10 {
				t.Fatalf("trial %d token %d: recursion (%v, %v) vs direct (%v, %v)", trial, k, a1[k], r1[k], a2[k], r2[k])
			}
		}
	}
}

// RAGEN's own example (core_algos.py __main__): rewards 1 at tokens 4 and 9
// (the two turn ends), V = 0.1 … 1.0, γ = λ = 1, γ_H = 0.95.
//
// Turn level:  turn 1 (p=9): δ = 1 + 0         − 1.0 = 0     Â = 0
//
//	turn 0 (p=4): δ = 1 + 0.95·1.0 − 0.5 = 1.45  Â = 1.45 + 0.95·1·0 = 1.45
//
// Token level: A_9 = 0; A_8 = 0 + V_9 − V_8 + A_9 = 0.1; A_7 = 0.2; A_6 = 0.3;
// A_5 = 0.4; A_4 = 1.45; A_3 = V_4 − V_3 + 1.45 = 1.55; 1.65; 1.75; A_0 = 1.85.
func TestBiLevelGAEHandComputed(t *testing.T) {
	reward := []float64{0, 0, 0, 0, 1, 0, 0, 0, 0, 1}
	value := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}
	mask := make([]bool, 10)
	for k := range mask {
		mask[k] = true
	}
	turnEnd := make([]bool, 10)
	turnEnd[4], turnEnd[9] = true, true
	adv, ret, err := BiLevelGAE(reward, value, mask, turnEnd, 1, 1, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1.85, 1.75, 1.65, 1.55, 1.45, 0.4, 0.3, 0.2, 0.1, 0}
	nearSlice(t, "adv", adv, want, 1e-12)
	for k := range want {
		near(t, fmt.Sprintf("ret[%d]", k), ret[k], want[k]+value[k], 1e-12)
	}
}

// Bi-level GAE with observation tokens between turns and γ, λ < 1: turn 0
// is tokens 0–1, an observation (2–3), turn 1 is tokens 4–5. γ = 0.9, λ = 0.5,
// γ_H = 0.8, turn rewards 0.5 (at 1) and 1 (at 5), V = 0.2, 0.4, 9, 9, 0.6, 0.3.
//
//	turn 1: δ = 1   + 0         − 0.3 = 0.7                 Â_1 = 0.7
//	turn 0: δ = 0.5 + 0.8·0.3   − 0.4 = 0.34                Â_0 = 0.34 + 0.8·0.5·0.7 = 0.62
//	A_5 = 0.7;  A_4 = 0 + 0.9·0.3 − 0.6 + 0.45·0.7 = −0.015
//	A_1 = 0.62; A_0 = 0 + 0.9·0.4 − 0.2 + 0.45·0.62 = 0.439
func TestBiLevelGAEWithObservations(t *testing.T) {
	mask := []bool{true, true, false, false, true, true}
	turnEnd := []bool{false, true, false, false, false, true}
	reward := []float64{0, 0.5, 0, 0, 0, 1}
	value := []float64{0.2, 0.4, 9, 9, 0.6, 0.3}
	adv, _, err := BiLevelGAE(reward, value, mask, turnEnd, 0.9, 0.5, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	nearSlice(t, "adv", adv, []float64{0.439, 0.62, 0, 0, -0.015, 0.7}, 1e-12)

	// With one turn, bi-level GAE is plain GAE.
	one := []bool{false, false, false, false, false, true}
	r := []float64{0, 0, 0, 0, 0, 1.5}
	a1, r1, err := BiLevelGAE(r, value, mask, one, 0.9, 0.5, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	a2, r2 := GAE(r, value, mask, 0.9, 0.5)
	nearSlice(t, "one-turn bi-level vs GAE adv", a1, a2, 1e-12)
	nearSlice(t, "one-turn bi-level vs GAE ret", r1, r2, 1e-12)

	if _, _, err := BiLevelGAE(reward, value, mask, []bool{false, true, false, false, false, false}, 1, 1, 1); err == nil ||
		err.Error() != "the last agent token (5) is not a turn end" {
		t.Errorf("missing final turn end: err = %v", err)
	}
	if _, _, err := BiLevelGAE(reward, value, mask, []bool{false, true, true, false, false, true}, 1, 1, 1); err == nil ||
		err.Error() != "turn end at token 2, which the agent did not sample" {
		t.Errorf("turn end on an observation: err = %v", err)
	}
}

// x = 1, 2, 3 on agent tokens and 100 on an observation token: μ = 2,
// σ² = (1 + 0 + 1)/(3 − 1) = 1, so x ← (x − 2)/sqrt(1 + 1e-8); the
// observation token becomes 0 and does not enter μ or σ.
func TestWhiten(t *testing.T) {
	x := [][]float64{{1, 100, 2}, {3}}
	mask := [][]bool{{true, false, true}, {true}}
	if err := Whiten(x, mask); err != nil {
		t.Fatal(err)
	}
	s := 1 / math.Sqrt(1+1e-8)
	nearSlice(t, "x0", x[0], []float64{-s, 0, 0}, 1e-15)
	nearSlice(t, "x1", x[1], []float64{s}, 1e-15)
	if err := Whiten([][]float64{{1, 2}}, [][]bool{{true, false}}); err == nil ||
		err.Error() != "whitening needs at least 2 agent tokens in the batch (got 1)" {
		t.Errorf("one token: err = %v", err)
	}
}
