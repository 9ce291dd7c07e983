// Package sokoban is the Sokoban puzzle as RAGEN plays it (which is
// gym-sokoban's game): the agent is the player on a walled grid and must push
// every box onto a target, one cell Up, Down, Left or Right per action.
//
// Levels are generated the way gym-sokoban generates them, so that they are
// solvable by construction:
//
//  1. a random walk of int(1.7·(rows+cols)) steps carves floor out of a
//     wall-filled room, stamping one of five fixed 3×3 masks at each step
//     (the direction changes with probability 0.35); the border stays wall;
//  2. the player and the boxes are dropped on random floor cells, each box
//     on its own target (the solved state);
//  3. reverse play: a depth-first search (depth limit SearchDepth, at most
//     300,000 states) in which the player walks and pulls boxes, scoring each
//     state by box swaps × total box displacement (0 while any target is
//     covered); the best-scoring state is the start. A pull sequence played
//     backwards is a push solution, so the start is solvable. A level whose
//     best score is 0 is thrown away (four topologies per attempt, then a new
//     seed derived from the old one);
//  4. RAGEN's addition: the player then walks 1–3 random steps (with
//     probability 0.8 when the box displacement is 1, else 0.5), so it does
//     not always start next to a box.
//
// Rewards per action follow gym-sokoban: −0.1 for every step (including the
// solving one and moves into a wall), +1 when a box lands on a target, −1
// when one leaves a target, +10 when all boxes are on targets; so the solving
// push earns −0.1 + 1 + 10 = 10.9. The episode ends when solved or after
// MaxSteps actions.
//
// Solve finds a shortest action sequence by breadth-first search over
// (player, boxes) states; the Expert demonstrations replay its first moves
// with reasoning that names where the player, the box and the target are.
package sokoban
