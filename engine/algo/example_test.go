package algo_test

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/algo"
)

// One StarPO-S step on the algorithm side, with GRPO for brevity: two groups
// of two trajectories (tokens: agent, observation, agent; reward on the last
// agent token), the filter keeps the group whose members disagree, GRPO
// turns returns into advantages, and the actor loss gives the per-token
// gradient the model back-propagates.
func Example() {
	cfg := algo.StarPOS()
	cfg.AdvEstimator = algo.EstGRPO
	cfg.FilterRatio = 0.5
	mask := []bool{true, false, true}
	batch := []algo.Trajectory{
		{Group: 0, Mask: mask, Reward: []float64{0, 0, 1}},
		{Group: 0, Mask: mask, Reward: []float64{0, 0, 1}},
		{Group: 1, Mask: mask, Reward: []float64{0, 0, 1}},
		{Group: 1, Mask: mask, Reward: []float64{0, 0, 0}},
	}
	returns := []float64{batch[0].Return(), batch[1].Return(), batch[2].Return(), batch[3].Return()}
	filt, _ := algo.FilterGroups(&cfg, returns, []int{0, 0, 1, 1}, nil)
	fmt.Println("kept groups:", filt.Groups, "keep ratio:", filt.Stats.KeepRatio)

	var kept []algo.Trajectory
	for i, k := range filt.Keep {
		if k {
			kept = append(kept, batch[i])
		}
	}
	adv, _, _ := algo.Advantages(&cfg, kept)
	fmt.Printf("advantages: %.4f %.4f\n", adv[0], adv[1])

	// On-policy first update: logp = old logp, so ratio 1 and ∂L/∂logp = −A·w.
	logp := [][]float64{{-0.5, 0, -1}, {-0.7, 0, -0.2}}
	out, _ := algo.ComputeActorLoss(&cfg, algo.ActorInputs{
		Mask: [][]bool{mask, mask}, Logp: logp, OldLogp: logp, Adv: adv,
		Entropy: [][]float64{{1, 0, 1}, {1, 0, 1}},
	})
	fmt.Printf("loss %.6f, dL/dlogp %.4f %.4f\n", out.Loss, out.DLogp[0], out.DLogp[1])
	// Output:
	// kept groups: [1] keep ratio: 0.5
	// advantages: [0.7071 0.0000 0.7071] [-0.7071 0.0000 -0.7071]
	// loss -0.001000, dL/dlogp [-0.1768 0.0000 -0.1768] [0.1768 0.0000 0.1768]
}
