// An environment defined in the script itself, trained exactly like a
// built-in one: the trainer calls the interpreted methods through yaegi's
// wrapper of ragen.Env.
package main

import (
	"fmt"
	"math/rand"

	"github.com/ragen-go/ragen/envs"
	"ragen"
)

// Coin pays 1 for Heads and 0 for Tails, in one turn.
type Coin struct {
	state string
	steps *int
}

func (c *Coin) Describe() envs.Description {
	return envs.Description{
		Name:                 "coin",
		Instruction:          "Call the coin: Heads or Tails. Heads pays 1.",
		Actions:              []string{"Heads", "Tails"},
		MaxActionsPerTurn:    1,
		MaxActionsPerEpisode: 1,
		MaxTurns:             1,
	}
}

func (c *Coin) Reset(seed int64) (string, error) {
	c.state = "The coin is in the air."
	return c.state, nil
}

func (c *Coin) Step(action string) envs.StepResult {
	*c.steps++
	r := 0.0
	if action == "Heads" {
		r = 1
	}
	c.state = "The coin landed: " + action
	return envs.StepResult{Observation: c.state, Reward: r, Done: true,
		Info: envs.Info{Success: r > 0, Valid: true, Effective: true}}
}

func (c *Coin) Render() string { return c.state }

func (c *Coin) Demonstrate(rng *rand.Rand, imperfect bool) string {
	call := "Heads"
	if imperfect && rng.Intn(2) == 0 {
		call = "Tails"
	}
	return "<think>Heads pays.</think><answer>" + call + "</answer>"
}

func main() {
	steps := 0
	exp := ragen.Experiment{
		Env:           ragen.Custom("coin", func() ragen.Env { return &Coin{steps: &steps} }),
		Model:         "tiny",
		Groups:        2,
		GroupSize:     2,
		TokensPerTurn: 16,
		Steps:         2,
		WarmStart:     ragen.WarmStart{Steps: 3, Episodes: 8, BatchSize: 4},
		NoValidation:  true,
		VocabSize:     300,
		Algo:          ragen.GRPO(),
	}
	run := exp.Train()
	fmt.Println("steps:", run.Steps(), "cached:", run.Cached)
	fmt.Println("interpreted Step calls reached:", steps > 0)
	fmt.Println("success rate recorded:", run.Metric("env/success_rate").Len())
	_, png := run.Dashboard().MIMEBundle()["image/png"]
	fmt.Println("dashboard has a PNG:", png, "checkpoints:", len(run.Checkpoints()))
	again := exp.Train()
	fmt.Println("second run cached:", again.Cached, "same key:", again.Key == run.Key)
}

// Output:
// steps: 2 cached: false
// interpreted Step calls reached: true
// success rate recorded: 2
// dashboard has a PNG: true checkpoints: 1
// second run cached: true same key: true
