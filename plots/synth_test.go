package plots_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ragen-go/ragen/engine/metrics"
)

// synthRun is a deterministic, realistic-looking training history of 200
// steps. With collapseAt > 0 the run falls into an echo trap there: entropy
// and reasoning length collapse, the gradient norm spikes, reward and
// in-group reward std decay, and the collapse monitor reports two events.
// Without it the run keeps improving. seed changes the noise only.
func synthRun(name string, seed uint64, collapseAt int) *metrics.History {
	rng := rand.New(rand.NewPCG(seed, 0x9E3779B97F4A7C15))
	noise := func(scale float64) float64 { return scale * rng.NormFloat64() }
	h := &metrics.History{Name: name}
	const steps = 200
	for s := 0; s < steps; s++ {
		t := float64(s)
		learn := 1 / (1 + math.Exp(-(t-40)/15)) // 0 → 1 around step 40
		after := 0.0                            // 0 before the collapse, → 1 after it
		if collapseAt > 0 && s >= collapseAt {
			after = 1 - math.Exp(-(t-float64(collapseAt))/12)
		}
		reward := 0.1 + 0.65*learn - 0.45*after*learn
		std := 0.18 + 0.2*(1-learn) - 0.32*after
		entropy := 1.25 - 0.25*learn - 0.85*after
		grad := 0.9 + 0.3*learn + 3*after
		if collapseAt > 0 && s >= collapseAt && s < collapseAt+6 {
			grad += 25 * math.Exp(-float64(s-collapseAt)/2)
		}
		think := 42 - 6*learn - 30*after
		v := map[string]float64{
			metrics.RewardMean:      clamp(reward+noise(0.04), 0, 1),
			metrics.InGroupStd:      math.Max(0.01, std+noise(0.02)),
			metrics.SuccessRate:     clamp(reward-0.05+noise(0.04), 0, 1),
			metrics.Entropy:         math.Max(0.05, entropy+noise(0.03)),
			metrics.GradNorm:        grad * math.Exp(noise(0.15)),
			metrics.ThinkTokens:     math.Max(2, think+noise(2)),
			metrics.ResponseTokens:  math.Max(20, 4*think+60+noise(6)),
			metrics.ApproxKL:        math.Abs(0.002 + 0.004*after + noise(0.0008)),
			metrics.ClipFrac:        math.Abs(0.02 + 0.03*after + noise(0.004)),
			metrics.ClipFracLower:   math.Abs(0.008 + noise(0.002)),
			metrics.FilterKeepRatio: clamp(0.5+0.25*after+noise(0.03), 0, 1),
		}
		if s == 0 {
			v[metrics.GradNorm] = 0 // no update before the first step
		}
		if s%10 == 0 {
			v[metrics.ValSuccessRate] = clamp(reward-0.08+noise(0.03), 0, 1)
		}
		h.Steps = append(h.Steps, metrics.Step{Step: s, Values: v})
	}
	if collapseAt > 0 {
		h.Events = append(h.Events,
			metrics.Event{Step: collapseAt + 2, Kind: "entropy_drop", Message: "entropy fell 60% in 10 steps"},
			metrics.Event{Step: collapseAt + 4, Kind: "grad_norm_spike", Message: fmt.Sprintf("grad norm %.0f× its median", 20.0)},
		)
	}
	return h
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// synthThink is a run that records only think tokens per turn, decaying
// from start towards floor with time constant tau steps (tau 0: flat).
func synthThink(name string, seed uint64, start, floor, tau float64) *metrics.History {
	rng := rand.New(rand.NewPCG(seed, 7))
	h := &metrics.History{Name: name}
	for s := 0; s < 200; s++ {
		v := start
		if tau > 0 {
			v = floor + (start-floor)*math.Exp(-float64(s)/tau)
		}
		h.Steps = append(h.Steps, metrics.Step{Step: s, Values: map[string]float64{
			metrics.ThinkTokens: math.Max(1, v+1.5*rng.NormFloat64()),
		}})
	}
	return h
}

// synthGroups is one step's rollout: 16 groups of 8. A member succeeds
// (reward 1) with its group's probability and loses 0.1 for a malformed
// answer 15% of the time. A fraction flat of the groups has collapsed:
// every member gives the same answer, hence the same reward.
func synthGroups(seed uint64, flat float64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 11))
	groups := make([][]float64, 16)
	for g := range groups {
		p := 0.1 + 0.8*rng.Float64()
		collapsed := rng.Float64() < flat
		first := 0.0
		for m := 0; m < 8; m++ {
			r := 0.0
			if rng.Float64() < p {
				r = 1
			}
			if rng.Float64() < 0.15 {
				r -= 0.1
			}
			if collapsed {
				if m == 0 {
					first = math.Round(r)
				}
				r = first
			}
			groups[g] = append(groups[g], r)
		}
	}
	return groups
}

// synthCredit is one training sample of three turns with a critic:
// rewards on the last token of each turn (a format penalty, nothing, then
// success), values that drift up with noise, and advantages and returns
// computed from them by GAE (γ = 1, λ = 0.95) as the trainer does.
func synthCredit(seed uint64) metrics.Sample {
	rng := rand.New(rand.NewPCG(seed, 13))
	s := metrics.Sample{Step: 40, Split: metrics.SplitTrain, Seed: 1234, Reward: 0.9, Success: true}
	words := []string{"I", " push", " the", " box", " right", ",", " then", " up", "."}
	for turn, k := range []int{34, 22, 30} {
		reward := []float64{-0.1, 0, 1}[turn]
		s.Turns = append(s.Turns, metrics.SampleTurn{Response: "…", Actions: []string{"Right"}, Reward: reward})
		for i := range k {
			t := metrics.SampleToken{Text: words[i%len(words)], Turn: turn}
			if i == k-1 {
				t.Reward = reward
			}
			s.Tokens = append(s.Tokens, t)
		}
	}
	n := len(s.Tokens)
	for i := range s.Tokens {
		s.Tokens[i].Value = 0.35 + 0.45*float64(i)/float64(n) + 0.06*rng.NormFloat64()
	}
	const lambda = 0.95
	next, adv := 0.0, 0.0 // V(s_n) = 0: the episode is over
	for i := n - 1; i >= 0; i-- {
		t := &s.Tokens[i]
		adv = t.Reward + next - t.Value + lambda*adv
		t.Advantage, t.Return = adv, adv+t.Value
		next = t.Value
	}
	return s
}
