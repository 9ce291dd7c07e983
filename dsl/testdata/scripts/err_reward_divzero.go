// A run-time error of the reward expression (integer modulo by zero) stops
// the run by default and names the trajectory.
package main

import "ragen"

func main() {
	exp := ragen.Experiment{
		Env:           ragen.Bandit(ragen.Arms("Teacher", "Gambler")),
		Reward:        ragen.Reward(`valid_actions % (num_turns - 1)`),
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
	exp.Train()
}

// Error:
// step 1: reward of trajectory 0 (group 0, seed 3609398981243200987): reward expression on trajectory (success=false, turns=1, actions=[], reward=-0.1): runtime error: integer divide by zero (1:15)
//  | valid_actions % (num_turns - 1)
//  | ..............^
