// Package frozenlake is RAGEN's FrozenLake: walk over a frozen lake on a
// grid from the start to the goal without falling into a hole.
//
// Each Reset draws a new map as RAGEN (after gymnasium) does: every tile is
// frozen with probability p, else a hole; start and goal are two different
// random tiles; the map is redrawn until a 4-neighbour path over frozen
// tiles joins them (checked by breadth-first search). On slippery ice a
// move goes the intended way with probability success_rate and to each of
// the two perpendicular directions with probability (1−success_rate)/2
// (gymnasium ≥ 1.0; RAGEN v1 keeps gymnasium's default 1/3, v2's main runs
// use 1, deterministic). A move into the border stays in place. Reaching the
// goal pays 1 and ends the episode; falling into a hole ends it with 0.
//
// The state is drawn as a grid of symbols (P you, _ ice, O hole, G goal,
// X you in a hole, √ you on the goal) or, with observation_format, as
// (row, column) lists as in RAGEN v2. The expert takes the shortest path
// over frozen tiles, re-planned every turn.
package frozenlake
