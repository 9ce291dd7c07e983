package dsl

import (
	"reflect"
	"strings"

	"github.com/ragen-go/ragen/engine/algo"
)

// Algo is every option of the algorithm: advantage estimator, PPO clipping,
// loss aggregation, KL, entropy bonus, critic clipping and the StarPO-S
// group filter, each documented in engine/algo.Config. Start from a preset
// and change fields:
//
//	a := ragen.GRPO()
//	a.EntropyCoef = 0
type Algo = algo.Config

// StarPOS is StarPO-S (the default): GAE with a critic, clip-higher, no KL,
// the top 25% of groups by in-group reward std.
func StarPOS() Algo { return algo.StarPOS() }

// StarPO is vanilla StarPO as the paper describes it: symmetric clipping,
// KL to the reference in the reward (β 0.001), no filter.
func StarPO() Algo { return algo.StarPO() }

// PPO is StarPO with its critic-based PPO estimator (GAE); the same as
// StarPO, named for comparisons.
func PPO() Algo { return algo.StarPO() }

// GRPO is StarPO with group-normalised advantages, (R − mean_g)/(std_g + ε),
// and no critic.
func GRPO() Algo { return withEstimator(algo.EstGRPO) }

// DrGRPO is GRPO without the std division, R − mean_g.
func DrGRPO() Algo { return withEstimator(algo.EstDrGRPO) }

// RLOO is StarPO with leave-one-out baselines: R − mean of the others.
func RLOO() Algo { return withEstimator(algo.EstRLOO) }

// Reinforce is StarPO with reward-to-go advantages and no critic.
func Reinforce() Algo { return withEstimator(algo.EstReinforce) }

// ReinforcePP is REINFORCE++: reward-to-go whitened over the batch.
func ReinforcePP() Algo { return withEstimator(algo.EstReinforcePP) }

// BiLevelGAE is StarPO with RAGEN's turn-level plus token-level GAE.
func BiLevelGAE() Algo { return withEstimator(algo.EstBiLevelGAE) }

func withEstimator(est string) Algo {
	c := algo.StarPO()
	c.AdvEstimator = est
	return c
}

// algoField maps algo.Config's JSON keys, which its errors name, to the
// Go field names a cell writes.
var algoField = func() map[string]string {
	m := map[string]string{}
	t := reflect.TypeOf(algo.Config{})
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		m[key] = f.Name
	}
	return m
}()
