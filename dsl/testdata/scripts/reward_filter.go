// A reward expression and a filter expression on a built-in environment;
// the reward reaches the metrics, the filter keeps half of the groups.
package main

import (
	"fmt"

	"ragen"
)

func main() {
	exp := ragen.Experiment{
		Env:           ragen.Bandit(ragen.Arms("Teacher", "Gambler")),
		Reward:        ragen.Reward(`success ? 100 : 100 + sum(turns, .reward) - 0.1 * invalid_actions`),
		Filter:        ragen.Filter(`in_group_std + success_rate`, ragen.TopP(0.5)),
		Model:         "tiny",
		Groups:        4,
		GroupSize:     2,
		TokensPerTurn: 160,
		Steps:         2,
		WarmStart:     ragen.WarmStart{Steps: 3, Episodes: 8, BatchSize: 4},
		NoValidation:  true,
		VocabSize:     300,
		Algo:          ragen.GRPO(),
	}
	run := exp.Train()
	kept := run.Metric("rollout/filter_kept_ratio")
	fmt.Println("kept ratio:", kept.Values)
	reward := run.Metric("rollout/reward_mean")
	ok := true
	for _, v := range reward.Values {
		// The expression, not the bandit's pay (a few points), sets the reward.
		ok = ok && v > 95 && v <= 100
	}
	fmt.Println("reward points:", reward.Len(), "in range:", ok)
	fmt.Println("reward errors:", run.RewardErrors)
	fmt.Println(run.Summary().Columns)
}

// Output:
// kept ratio: [0.5 0.5]
// reward points: 2 in range: true
// reward errors: 0
// [metric first last min max]
