// Package envs defines the environment interface the agent plays through
// text, the registry that names environments for the DSL and notebooks, the
// one response parser shared by all of them, and the turn runner that applies
// a parsed answer to an environment. Each environment lives in a subpackage
// (envs/sokoban, envs/frozenlake, ...) and registers itself; import
// envs/all to have them all.
//
// Where things are:
//
//	env.go, expert.go  the Env and Expert interfaces (small, yaegi-friendly)
//	registry.go        Register, New(name, options), Names, Lookup; option kinds and checks
//	parse.go           Parse: <think>…</think><answer>A || B</answer>, linear time, never panics
//	turn.go            RunTurn and Episode: budgets, format penalty, TurnResult
//	prompt.go          every prompt text: Intro, StateBlock, UserMessage (RAGEN's layout, our words)
//	demo.go            Demonstrations: expert episodes as chat messages for the warm start
//
// One episode, as the trainer plays it:
//
//	env, err := envs.New("frozenlake", map[string]any{"size": 4})
//	ep, err := envs.Start(env, seed, envs.DefaultTurnConfig())
//	for !ep.Done {
//		prompt := envs.UserMessage(ep.Desc, ep.Turn+1, lastReward, ep.Observation, ep.ActionsLeft, pc)
//		r, _ := ep.Step(response) // parse, run, penalise
//		lastReward = r.Reward
//	}
//
// The rules follow RAGEN (see research/ragen.md, sections A and B): actions
// are matched case-insensitively, cut to the per-turn maximum before they
// run, dropped beyond the episode's action budget; a turn whose answer does
// not parse, is empty or names an unknown action earns the format penalty
// (−0.1) while its valid actions still run.
package envs
