// An option the environment does not have fails where it is declared.
package main

import "ragen"

func main() {
	_ = ragen.Sokoban(ragen.Dim(6, 6), ragen.Size(4))
}

// Error:
// sokoban: unknown option "size" (valid: dim, rows, cols, boxes, search_depth, max_steps, max_reset_tries, observation_format, max_actions_per_turn, max_actions_per_episode, max_turns)
