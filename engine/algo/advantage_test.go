package algo

import (
	"math"
	"testing"
)

// Six trajectories in two groups, ids interleaved: group 7 has returns
// 1, 0, 0, 1 and group 3 has 2, 2.
var (
	grpoReturns = []float64{1, 2, 0, 2, 0, 1}
	grpoGroups  = []int{7, 3, 7, 3, 7, 7}
)

// Group 7: mean 0.5, Σ(R − mean)² = 4·0.25 = 1.
//
//	unbiased std = sqrt(1/3) = 0.5773502692 → Â = ±0.5/(0.5773502692 + 1e-6)
//	biased   std = sqrt(1/4) = 0.5          → Â = ±0.5/(0.5 + 1e-6)
//
// Group 3: std 0, so Â = 0/(0 + ε) = 0 (no signal from a group that agrees).
func TestGRPOHandComputed(t *testing.T) {
	a, err := GRPO(grpoReturns, grpoGroups, 1e-6, true, true)
	if err != nil {
		t.Fatal(err)
	}
	u := 0.5 / (math.Sqrt(1.0/3) + 1e-6)
	nearSlice(t, "unbiased", a, []float64{u, 0, -u, 0, -u, u}, 1e-12)

	a, _ = GRPO(grpoReturns, grpoGroups, 1e-6, false, true)
	b := 0.5 / (0.5 + 1e-6)
	nearSlice(t, "biased", a, []float64{b, 0, -b, 0, -b, b}, 1e-12)

	// Dr. GRPO: R − mean only.
	a, _ = GRPO(grpoReturns, grpoGroups, 1e-6, true, false)
	nearSlice(t, "dr_grpo", a, []float64{0.5, 0, -0.5, 0, -0.5, 0.5}, 0)
}

// Group 7 (returns 1, 0, 0, 1, sum 2, G = 4): Â_i = R_i − (2 − R_i)/3,
// i.e. 1 − 1/3 = 2/3 and 0 − 2/3 = −2/3 (= G/(G−1)·(R − mean) = 4/3 · ±0.5).
func TestRLOOHandComputed(t *testing.T) {
	a, err := RLOO(grpoReturns, grpoGroups)
	if err != nil {
		t.Fatal(err)
	}
	nearSlice(t, "rloo", a, []float64{2.0 / 3, 0, -2.0 / 3, 0, -2.0 / 3, 2.0 / 3}, 1e-15)
}

func TestGroupEstimatorsRejectSingletonGroups(t *testing.T) {
	want := "group 5 has 1 trajectory: group estimators need at least 2 per group (same initial state)"
	if _, err := GRPO([]float64{1, 2, 3}, []int{4, 5, 4}, 1e-6, true, true); err == nil || err.Error() != want {
		t.Errorf("GRPO: err = %v, want %q", err, want)
	}
	want = "group 5 has 1 trajectory: rloo needs at least 2 per group (same initial state)"
	if _, err := RLOO([]float64{1, 2, 3}, []int{4, 5, 4}); err == nil || err.Error() != want {
		t.Errorf("RLOO: err = %v, want %q", err, want)
	}
}

// Trajectory A: agent, agent, observation, agent with reward 1 at the end;
// B: two agent tokens with reward −1 at the end; both in one group.
func reinforceBatch() []Trajectory {
	return []Trajectory{
		{Group: 1, Mask: []bool{true, true, false, true}, Reward: []float64{0, 0, 0, 1}},
		{Group: 1, Mask: []bool{true, true}, Reward: []float64{0, -1}},
	}
}

// γ = 0.5 over A's agent tokens (the observation is skipped, not a reset):
// G_3 = 1, G_1 = 0 + 0.5·1 = 0.5, G_0 = 0.25; the observation gets 0.
func TestRewardToGo(t *testing.T) {
	nearSlice(t, "G", RewardToGo([]float64{0, 0, 0, 1}, []bool{true, true, false, true}, 0.5), []float64{0.25, 0.5, 0, 1}, 0)
}

// REINFORCE++ with γ = 1: token returns 1, 1, 1 (A) and −1, −1 (B); over the
// five agent tokens μ = 0.2, Σ(x − μ)² = 3·0.64 + 2·1.44 = 4.8, σ² = 4.8/4 = 1.2:
// A's tokens get 0.8/sqrt(1.2 + 1e-8), B's −1.2/sqrt(1.2 + 1e-8).
// REINFORCE++-baseline: group mean 0 gives the same R − mean = ±1 per token,
// so the same whitened numbers.
func TestReinforcePP(t *testing.T) {
	s := math.Sqrt(1.2 + 1e-8)
	want := [][]float64{{0.8 / s, 0.8 / s, 0, 0.8 / s}, {-1.2 / s, -1.2 / s}}
	for _, est := range []string{EstReinforcePP, EstReinforcePPBaseline} {
		cfg := StarPOS()
		cfg.AdvEstimator = est
		adv, ret, err := Advantages(&cfg, reinforceBatch())
		if err != nil {
			t.Fatal(err)
		}
		if ret != nil {
			t.Errorf("%s: returns %v, want nil (no critic)", est, ret)
		}
		for i := range want {
			nearSlice(t, est, adv[i], want[i], 1e-12)
		}
	}
}

// Plain REINFORCE: A = G_t (here R: 1 for A, −1 for B). With the batch-mean
// baseline b = mean(1, −1) = 0 nothing changes, so use B's reward 0.5:
// b = (1 + 0.5)/2 = 0.75, A's tokens get 0.25 and B's −0.25.
func TestReinforce(t *testing.T) {
	cfg := StarPOS()
	cfg.AdvEstimator = EstReinforce
	adv, _, err := Advantages(&cfg, reinforceBatch())
	if err != nil {
		t.Fatal(err)
	}
	nearSlice(t, "A", adv[0], []float64{1, 1, 0, 1}, 0)
	nearSlice(t, "B", adv[1], []float64{-1, -1}, 0)

	cfg.BaselineMean = true
	b := reinforceBatch()
	b[1].Reward[1] = 0.5
	adv, _, err = Advantages(&cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	nearSlice(t, "A", adv[0], []float64{0.25, 0.25, 0, 0.25}, 0)
	nearSlice(t, "B", adv[1], []float64{-0.25, -0.25}, 0)
}

// Every estimator gives exactly 0 on every token the agent did not sample,
// and group estimators give the same value to all of a trajectory's agent
// tokens.
func TestAdvantagesZeroOffMask(t *testing.T) {
	batch := []Trajectory{
		{Group: 0, Mask: []bool{false, true, true, false, true}, Reward: []float64{0, 0, 0.3, 0, 1},
			Value: []float64{0.1, 0.2, 0.3, 0.4, 0.5}, TurnEnd: []bool{false, false, true, false, true}},
		{Group: 0, Mask: []bool{false, true, false, true}, Reward: []float64{0, 0.2, 0, -1},
			Value: []float64{0.3, 0.1, 0.2, 0.7}, TurnEnd: []bool{false, true, false, true}},
		{Group: 1, Mask: []bool{true, true, false}, Reward: []float64{0, 2, 0},
			Value: []float64{0.3, 0.2, 0.1}, TurnEnd: []bool{false, true, false}},
		{Group: 1, Mask: []bool{false, true}, Reward: []float64{0, 0.5},
			Value: []float64{0.3, 0.2}, TurnEnd: []bool{false, true}},
	}
	for _, est := range []string{EstGAE, EstBiLevelGAE, EstGRPO, EstDrGRPO, EstRLOO, EstReinforce, EstReinforcePP, EstReinforcePPBaseline} {
		cfg := StarPOS()
		cfg.AdvEstimator = est
		cfg.Gamma, cfg.Lam = 0.9, 0.95
		adv, ret, err := Advantages(&cfg, batch)
		if err != nil {
			t.Fatalf("%s: %v", est, err)
		}
		for i, tr := range batch {
			first := math.NaN()
			for k, m := range tr.Mask {
				if !m {
					if adv[i][k] != 0 || (ret != nil && ret[i][k] != 0) {
						t.Errorf("%s: trajectory %d token %d (observation): adv %v, want exactly 0", est, i, k, adv[i][k])
					}
					continue
				}
				if adv[i][k] == 0 {
					t.Errorf("%s: trajectory %d token %d (agent): adv 0", est, i, k)
				}
				if est == EstGRPO || est == EstDrGRPO || est == EstRLOO || est == EstReinforcePPBaseline {
					if math.IsNaN(first) {
						first = adv[i][k]
					} else if adv[i][k] != first {
						t.Errorf("%s: trajectory %d: agent tokens differ (%v vs %v)", est, i, adv[i][k], first)
					}
				}
			}
		}
	}
}

func TestAdvantagesRejectBadInput(t *testing.T) {
	cfg := StarPOS()
	bad := []Trajectory{{Mask: []bool{true, false}, Reward: []float64{0, 1}, Value: []float64{0, 0}}}
	want := "trajectory 0: reward 1 at token 1, which the agent did not sample (rewards must sit on agent tokens)"
	if _, _, err := Advantages(&cfg, bad); err == nil || err.Error() != want {
		t.Errorf("reward off the mask: err = %v, want %q", err, want)
	}
	noValue := []Trajectory{{Mask: []bool{true}, Reward: []float64{1}}}
	want = "trajectory 0: len(Value) = 0, want len(Mask) = 1 (the estimator needs critic values)"
	if _, _, err := Advantages(&cfg, noValue); err == nil || err.Error() != want {
		t.Errorf("missing values: err = %v, want %q", err, want)
	}
	nan := []Trajectory{{Mask: []bool{true, true}, Reward: []float64{0, math.NaN()}, Value: []float64{0, 0}}}
	want = "trajectory 0: reward at token 1 is NaN"
	if _, _, err := Advantages(&cfg, nan); err == nil || err.Error() != want {
		t.Errorf("NaN reward: err = %v, want %q", err, want)
	}
	cfg.AdvEstimator = EstGRPO
	single := []Trajectory{{Group: 9, Mask: []bool{true}, Reward: []float64{1}}}
	if _, _, err := Advantages(&cfg, single); err == nil {
		t.Error("GRPO on a singleton group: no error")
	}
}

// GAE through Advantages without whitening returns GAE's numbers, and with
// whitening the critic targets (returns) stay unwhitened.
func TestAdvantagesGAEReturnsUnwhitened(t *testing.T) {
	batch := []Trajectory{{Mask: []bool{true, true, true}, Reward: []float64{0, 0, 1}, Value: []float64{0.5, 0.6, 0.7}}}
	cfg := StarPOS()
	cfg.Gamma, cfg.Lam = 0.9, 0.8
	cfg.NormAdv = false
	adv, ret, err := Advantages(&cfg, batch)
	if err != nil {
		t.Fatal(err)
	}
	nearSlice(t, "adv", adv[0], []float64{0.21712, 0.246, 0.3}, 1e-12)
	cfg.NormAdv = true
	adv, ret2, err := Advantages(&cfg, batch)
	if err != nil {
		t.Fatal(err)
	}
	nearSlice(t, "returns", ret2[0], ret[0], 0)
	mean := (adv[0][0] + adv[0][1] + adv[0][2]) / 3
	near(t, "whitened mean", mean, 0, 1e-12)
}

// Turns end at tokens 1 and 4 with rewards −0.1 (format penalty) and 1:
// "last" puts their sum 0.9 on token 4, "turn" each on its own end.
func TestPlaceRewards(t *testing.T) {
	ends := []bool{false, true, false, false, true, false}
	r, err := PlaceRewards(RewardLast, ends, []float64{-0.1, 1})
	if err != nil {
		t.Fatal(err)
	}
	nearSlice(t, "last", r, []float64{0, 0, 0, 0, 0.9, 0}, 1e-15)
	r, _ = PlaceRewards(RewardTurn, ends, []float64{-0.1, 1})
	nearSlice(t, "turn", r, []float64{0, -0.1, 0, 0, 1, 0}, 0)
	if _, err := PlaceRewards(RewardTurn, ends, []float64{1}); err == nil || err.Error() != "1 turn rewards for 2 turn ends" {
		t.Errorf("count mismatch: err = %v", err)
	}
}
