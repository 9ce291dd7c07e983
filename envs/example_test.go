package envs_test

import (
	"fmt"

	"github.com/ragen-go/ragen/envs"
	"github.com/ragen-go/ragen/envs/frozenlake"
)

func ExampleEpisode() {
	c := frozenlake.DefaultConfig()
	c.Slippery = false
	env, _ := frozenlake.FromMap(c, "SFH", "FFF", "HFG")
	ep, _ := envs.Start(env, 1, envs.DefaultTurnConfig())
	fmt.Println(ep.Observation)
	r, _ := ep.Step("<think>Down, then right, then down to the goal.</think><answer>down || right || Fly || down || right</answer>")
	fmt.Print(r.Summary())
	fmt.Println(ep.Observation)
	// Output:
	// P_O
	// ___
	// O_G
	// parse: actions [down | right | Fly | down | right], 1 unknown
	// ran: [Down | Right | Down | Right]; valid 4, invalid 1, effective 4
	// reward: 0.9 (environment 1, format penalty -0.1); actions left 6; done: success
	// __O
	// ___
	// O_√
}

func ExampleNew() {
	_, err := envs.New("frozenlake", map[string]any{"size": 1})
	fmt.Println(err)
	_, err = envs.New("frozenlake", map[string]any{"slippery": true})
	fmt.Println(err)
	// Output:
	// frozenlake option size: must be in [2, 32]: a start and a goal need two tiles (got 1)
	// frozenlake: unknown option "slippery" (valid: size, p, is_slippery, success_rate, observation_format, max_actions_per_turn, max_actions_per_episode, max_turns)
}
