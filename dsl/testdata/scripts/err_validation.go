// Validation names the Experiment's own field.
package main

import (
	"fmt"

	"ragen"
)

func main() {
	exp := ragen.Experiment{Env: ragen.Bandit(), GroupSize: -2}
	fmt.Println(exp.Validate())
	exp = ragen.Experiment{Env: ragen.Bandit(), Model: "huge"}
	fmt.Println(exp.Validate())
	a := ragen.StarPOS()
	a.ClipLow = 1.5
	exp = ragen.Experiment{Env: ragen.Bandit(), Algo: a}
	fmt.Println(exp.Validate())
	exp = ragen.Experiment{Env: ragen.Bandit(), Filter: ragen.Filter("std", ragen.TopP(2))}
	fmt.Println(exp.Validate())
	exp = ragen.Experiment{Env: ragen.Bandit(), Groups: 1}
	fmt.Println(exp.Validate())
	exp = ragen.Experiment{Env: ragen.Bandit(), RewardErrors: "ignore"}
	fmt.Println(exp.Validate())
	exp = ragen.Experiment{}
	fmt.Println(exp.Validate())
	exp = ragen.Experiment{Env: ragen.Bandit(), MaxTurns: 3}
	fmt.Println(exp.Validate())
	exp.Steps = -1
	exp.Train()
}

// Error:
// GroupSize: must be > 0 (got -2)
// Model: must be one of tiny, small, base (got "huge")
// Algo.ClipLow: must be in (0, 1) (got 1.5)
// Filter.Ratio: must be in (0, 1] (got 2)
// Groups: filtering (Algo.FilterRatio 0.25) needs at least 2 groups (got 1)
// RewardErrors: must be ragen.FailRun or ragen.UseZero (got "ignore")
// Env: required: ragen.Bandit(), ragen.Sokoban(...), ragen.Custom(...), ...
// <nil>
// Steps: must be > 0 (got -1)
