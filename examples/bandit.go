//go:build ragen

// Bandit with a custom reward: run it with
//
//	ragen script examples/bandit.go
//
// It trains the tiny policy for a few steps on the two-armed bandit, with a
// reward expression that pays a success well and charges for long thinking,
// keeps the half of the groups whose rewards disagree most, and prints the
// run's summary. A second run loads the result from the cache at once
// ($RAGEN_CACHE, else the user cache directory).
package main

import (
	"fmt"

	"ragen"
)

func main() {
	exp := ragen.Experiment{
		Env:           ragen.Bandit(ragen.Arms("Teacher", "Gambler")),
		Reward:        ragen.Reward(`(success ? 1 : env_reward) - 0.001 * think_tokens`),
		Filter:        ragen.Filter(`in_group_std`, ragen.TopP(0.5)),
		Algo:          ragen.GRPO(),
		Model:         "tiny",
		Groups:        4,
		GroupSize:     4,
		TokensPerTurn: 160,
		Steps:         5,
		Seed:          1,
		WarmStart:     ragen.WarmStart{Steps: 100, Episodes: 64, BatchSize: 8},
		ValEpisodes:   16,
		ValEvery:      5,
	}
	run := exp.Train()
	ragen.Display(run.Summary())
	fmt.Println("reward per step:", run.Metric("rollout/reward_mean"))
	fmt.Println("run directory:", run.Dir)
}
