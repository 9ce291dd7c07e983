package sokoban

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/ragen-go/ragen/envs"
)

// Demonstrate implements envs.Expert: the solver's next moves (at most one
// turn's worth and what is left of the episode's budget) with reasoning that
// says where the player, the box and its target are and what the moves do.
// With imperfect true it plays random moves or the plan with one move
// swapped, and the reasoning describes those moves instead. The state is
// not changed.
func (e *Env) Demonstrate(rng *rand.Rand, imperfect bool) string {
	if e.state == nil || e.done {
		return "<think>The game is over; there is nothing left to move.</think><answer></answer>"
	}
	n := e.cfg.MaxActionsPerTurn
	if left := e.cfg.MaxActionsPerEpisode - e.steps; left > 0 && left < n {
		n = left
	}
	plan, solvable := e.solve(0)
	if !solvable {
		moves := e.randomMoves(rng, 1+rng.Intn(n))
		return e.respond(pick(rng, stuckOpeners)+" "+e.describeMoves(rng, moves)+".", moves)
	}
	if imperfect {
		var moves []int
		if rng.Intn(2) == 0 || len(plan) == 0 {
			moves = e.randomMoves(rng, 1+rng.Intn(n))
		} else {
			moves = e.swapOne(rng, plan[:min(n, len(plan))])
		}
		if e.coordinates() {
			return e.respond(e.route(rng, plan)+" "+pick(rng, unsureTraceOpeners)+" "+e.trace(moves), moves)
		}
		think := e.situation(rng, plan) + " " + pick(rng, unsureOpeners) + " " + e.describeMoves(rng, moves) + "."
		return e.respond(think, moves)
	}
	moves := plan[:min(n, len(plan))]
	var think string
	if e.coordinates() {
		think = e.route(rng, plan) + " " + e.trace(moves)
	} else {
		think = e.situation(rng, plan) + " " + pick(rng, planOpeners) + " " + e.describeMoves(rng, moves) + "."
	}
	if e.clone().playAll(moves) == e.numBoxes {
		think += " " + pick(rng, solvedClosers)
	} else if len(moves) < len(plan) {
		think += " " + pick(rng, continueClosers)
	}
	return e.respond(think, moves)
}

var (
	planOpeners        = []string{"So I", "My plan is to", "I will", "The way to go is to", "Next I"}
	unsureTraceOpeners = []string{"I am not sure of the best route.", "Let me try something.", "I will explore a little.", "Maybe this works."}
	unsureOpeners      = []string{"I am not sure of the best route, so I", "Let me try something: I", "I will explore a little and", "Maybe this works: I"}
	stuckOpeners       = []string{"A box is stuck where it can no longer reach a target, so the puzzle cannot be solved from here. I", "No sequence of pushes solves this room any more. I just"}
	solvedClosers      = []string{"That puts every box on a target.", "This should solve the puzzle.", "After that all boxes are on targets."}
	continueClosers    = []string{"I will continue from there next turn.", "The rest comes next turn.", "Then I look again."}
)

// respond formats a response in the agent's format.
func (e *Env) respond(think string, moves []int) string {
	names := make([]string, len(moves))
	for i, a := range moves {
		names[i] = Actions[a]
	}
	return "<think>" + think + "</think><answer>" + strings.Join(names, " || ") + "</answer>"
}

// clone copies the episode state (the fixed layer is shared: it never
// changes).
func (e *Env) clone() *Env {
	c := *e
	c.state = append([]byte(nil), e.state...)
	return &c
}

// playAll moves without scoring and returns the boxes on targets after.
func (e *Env) playAll(moves []int) int {
	for _, a := range moves {
		e.move(directions[a])
	}
	return e.boxesOnTarget
}

// situation describes the box the plan pushes first, its destination and
// the player, e.g. "The box is one row above the target. I am below it."
func (e *Env) situation(rng *rand.Rand, plan []int) string {
	from, to := e.firstBoxRoute(plan)
	if from < 0 {
		return pick(rng, []string{"Every box is on a target.", "All boxes are already placed."})
	}
	box, target, me := e.rc(from), e.rc(to), e.rc(e.player)
	var s string
	switch rng.Intn(3) {
	case 0:
		s = fmt.Sprintf("The box is %s the target.", relation(box, target))
	case 1:
		s = fmt.Sprintf("The target is %s the box.", relation(target, box))
	default:
		s = fmt.Sprintf("The box sits at row %d, column %d and its target at row %d, column %d, so the box is %s it.",
			box[0], box[1], target[0], target[1], relation(box, target))
	}
	if e.numBoxes > 1 {
		s = strings.Replace(s, "The box", pick(rng, []string{"The box I should move next", "One box"}), 1)
	}
	switch rng.Intn(2) {
	case 0:
		s += fmt.Sprintf(" I am %s the box.", relation(me, box))
	default:
		s += fmt.Sprintf(" The player stands %s the box.", relation(me, box))
	}
	return s
}

// route is the situation on coordinate observations: the box the plan
// pushes first, where the plan takes it, and the cell the player pushes it
// from, each written with the coordinates it follows from, e.g. "Box (2, 2),
// target (3, 2): the target is one row below the box. I push it Down from
// (1, 2)."
func (e *Env) route(rng *rand.Rand, plan []int) string {
	from, to := e.firstBoxRoute(plan)
	if from < 0 {
		return pick(rng, []string{"Every box is on a target.", "All boxes are already placed."})
	}
	box, target := e.rc(from), e.rc(to)
	s := fmt.Sprintf(pick(rng, []string{"Box (%d, %d), target (%d, %d): ", "The box is at (%d, %d) and its target at (%d, %d): "}),
		box[0], box[1], target[0], target[1])
	s += fmt.Sprintf("the target is %s the box.", relation(target, box))
	if push, dir := e.firstPush(plan); push >= 0 {
		p := e.rc(push)
		s += fmt.Sprintf(" I push it %s from (%d, %d).", Actions[dir], p[0], p[1])
	}
	return s
}

// firstPush returns the cell the player stands on before the plan's first
// push and the push's direction (-1, -1 if the plan pushes nothing).
func (e *Env) firstPush(plan []int) (cell, dir int) {
	c := e.clone()
	for _, a := range plan {
		d := directions[a]
		ahead := c.state[c.player+d[0]*c.cols+d[1]]
		if ahead == cellBox || ahead == cellBoxOnTarget {
			return c.player, a
		}
		c.move(d)
	}
	return -1, -1
}

// trace walks moves one at a time from the player's cell, writing the cell
// each reaches and where a push sends the box: "Me (3, 1). Up to (2, 1).
// Right to (2, 2), the box to (2, 3). Left is blocked." Every position
// follows from the one written just before it and a single move.
func (e *Env) trace(moves []int) string {
	c := e.clone()
	p := c.rc(c.player)
	parts := []string{fmt.Sprintf("Me (%d, %d).", p[0], p[1])}
	for _, a := range moves {
		d := directions[a]
		ahead := c.player + d[0]*c.cols + d[1]
		pushing := c.state[ahead] == cellBox || c.state[ahead] == cellBoxOnTarget
		if !c.move(d) {
			parts = append(parts, Actions[a]+" is blocked.")
			continue
		}
		p := c.rc(c.player)
		step := fmt.Sprintf("%s to (%d, %d)", Actions[a], p[0], p[1])
		if pushing {
			b := c.rc(ahead + d[0]*c.cols + d[1])
			step += fmt.Sprintf(", the box to (%d, %d)", b[0], b[1])
		}
		parts = append(parts, step+".")
	}
	return strings.Join(parts, " ")
}

// firstBoxRoute follows the plan and returns the cell of the first box it
// pushes and the cell that box ends on when the plan is done (-1, -1 if
// the plan pushes nothing).
func (e *Env) firstBoxRoute(plan []int) (from, to int) {
	c := e.clone()
	from, to = -1, -1
	for _, a := range plan {
		d := directions[a]
		ahead := c.player + d[0]*c.cols + d[1]
		pushing := c.state[ahead] == cellBox || c.state[ahead] == cellBoxOnTarget
		if c.move(d) && pushing {
			if from < 0 {
				from, to = ahead, ahead
			}
			if ahead == to {
				to = ahead + d[0]*c.cols + d[1]
			}
		}
	}
	return from, to
}

// rc returns a cell's (row, column).
func (e *Env) rc(cell int) [2]int { return [2]int{cell / e.cols, cell % e.cols} }

// relation says where cell a is relative to cell b: "two rows above and
// one column left of", "one row below", "on".
func relation(a, b [2]int) string {
	dr, dc := a[0]-b[0], a[1]-b[1]
	var parts []string
	if dr != 0 {
		unit, dir := "row", "above"
		if dr > 0 {
			dir = "below"
		}
		if abs(dr) > 1 {
			unit = "rows"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", envs.NumberWord(abs(dr)), unit, dir))
	}
	if dc != 0 {
		unit, dir := "column", "left of"
		if dc > 0 {
			dir = "right of"
		}
		if abs(dc) > 1 {
			unit = "columns"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", envs.NumberWord(abs(dc)), unit, dir))
	}
	if len(parts) == 0 {
		return "on"
	}
	return strings.Join(parts, " and ")
}

// describeMoves turns moves into prose by runs of equal moves, each a walk
// or a push (found by playing them on a copy): "move down twice, then push
// the box right once".
func (e *Env) describeMoves(rng *rand.Rand, moves []int) string {
	c := e.clone()
	type run struct {
		dir, count int
		push, stay bool
	}
	var runs []run
	for _, a := range moves {
		d := directions[a]
		ahead := c.state[c.player+d[0]*c.cols+d[1]]
		pushing := ahead == cellBox || ahead == cellBoxOnTarget
		moved := c.move(d)
		r := run{dir: a, count: 1, push: moved && pushing, stay: !moved}
		if k := len(runs) - 1; k >= 0 && runs[k].dir == r.dir && runs[k].push == r.push && runs[k].stay == r.stay {
			runs[k].count++
			continue
		}
		runs = append(runs, r)
	}
	verbs := [][2]string{{"move", "push the box"}, {"walk", "push it"}, {"step", "push the box"}}[rng.Intn(3)]
	parts := make([]string, len(runs))
	for i, r := range runs {
		dir := strings.ToLower(Actions[r.dir])
		switch {
		case r.stay && r.count == 1:
			parts[i] = fmt.Sprintf("try %s, which is blocked", dir)
		case r.stay:
			parts[i] = fmt.Sprintf("try %s %s, which stays blocked", dir, times(r.count))
		case r.push:
			parts[i] = fmt.Sprintf("%s %s %s", verbs[1], dir, times(r.count))
		default:
			parts[i] = fmt.Sprintf("%s %s %s", verbs[0], dir, times(r.count))
		}
	}
	switch len(parts) {
	case 1:
		return parts[0]
	case 2:
		return parts[0] + pick(rng, []string{", then ", " and then ", " and "}) + parts[1]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + ", then " + parts[len(parts)-1]
}

// randomMoves draws k moves, preferring ones that move the player.
func (e *Env) randomMoves(rng *rand.Rand, k int) []int {
	c := e.clone()
	moves := make([]int, 0, k)
	for len(moves) < k {
		var options []int
		for a, d := range directions {
			ahead := c.player + d[0]*c.cols + d[1]
			if c.state[ahead] != cellWall {
				options = append(options, a)
			}
		}
		a := rng.Intn(len(directions))
		if len(options) > 0 {
			a = options[rng.Intn(len(options))]
		}
		c.move(directions[a])
		moves = append(moves, a)
	}
	return moves
}

// swapOne returns moves with one of them replaced by a different direction.
func (e *Env) swapOne(rng *rand.Rand, moves []int) []int {
	out := append([]int(nil), moves...)
	i := rng.Intn(len(out))
	out[i] = (out[i] + 1 + rng.Intn(len(directions)-1)) % len(directions)
	return out
}

// times spells a repeat count: "once", "twice", "three times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return envs.NumberWord(n) + " times"
}

// pick returns a random element of options.
func pick(rng *rand.Rand, options []string) string { return options[rng.Intn(len(options))] }
