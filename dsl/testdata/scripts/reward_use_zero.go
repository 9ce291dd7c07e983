// With RewardErrors: UseZero a failing reward (here a float division by
// zero, +Inf) counts the error, uses 0 and the run goes on.
package main

import (
	"fmt"

	"ragen"
)

func main() {
	exp := ragen.Experiment{
		Env:           ragen.Bandit(ragen.Arms("Teacher", "Gambler")),
		Reward:        ragen.Reward(`success ? 1 : env_reward / 0`),
		RewardErrors:  ragen.UseZero,
		Model:         "tiny",
		Groups:        2,
		GroupSize:     2,
		TokensPerTurn: 160,
		Steps:         1,
		WarmStart:     ragen.WarmStart{Steps: 3, Episodes: 8, BatchSize: 4},
		NoValidation:  true,
		VocabSize:     300,
		Algo:          ragen.GRPO(),
	}
	run := exp.Train()
	fmt.Println("errors counted:", run.RewardErrors > 0, run.RewardErrors == len(run.RewardErrorSamples))
	fmt.Println(run.RewardErrorSamples[0])
}

// Output:
// errors counted: true true
// reward expression on trajectory (success=false, turns=1, actions=[], reward=-0.1): result is NaN (0/0?)
