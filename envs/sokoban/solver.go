package sokoban

import "slices"

// DefaultSolverNodes is the solver's default state limit: far more than any
// 6×6 or 8×8 generated level needs, small enough to return in well under a
// second on a level it cannot solve.
const DefaultSolverNodes = 1_000_000

// Solve returns a shortest action sequence (names from Actions) that puts
// every box on a target from the current state, found by breadth-first
// search over (player cell, set of box cells) states. It explores at most
// maxNodes states (DefaultSolverNodes if maxNodes <= 0) and reports ok false
// when no solution exists within that limit. An already solved state gives
// an empty sequence.
func (e *Env) Solve(maxNodes int) (actions []string, ok bool) {
	if e.state == nil {
		return nil, false
	}
	ids, ok := e.solve(maxNodes)
	if !ok {
		return nil, false
	}
	actions = make([]string, len(ids))
	for i, a := range ids {
		actions[i] = Actions[a]
	}
	return actions, true
}

// solveNode is one explored state: its key and how it was reached.
type solveNode struct {
	key    string
	parent int32 // index of the previous node, -1 for the start
	action int8  // action taken from the parent
}

// solve is Solve on action indices.
func (e *Env) solve(maxNodes int) ([]int, bool) {
	if maxNodes <= 0 {
		maxNodes = DefaultSolverNodes
	}
	var boxes []int
	for i, c := range e.state {
		if c == cellBox || c == cellBoxOnTarget {
			boxes = append(boxes, i)
		}
	}
	start := stateKey(e.player, boxes)
	nodes := []solveNode{{key: start, parent: -1}}
	seen := map[string]struct{}{start: {}}
	occupied := make([]bool, len(e.state)) // box cells of the node being expanded
	player := 0
	for head := 0; head < len(nodes); head++ {
		player, boxes = decodeKey(nodes[head].key, boxes[:0])
		solved := true
		for _, b := range boxes {
			occupied[b] = true
			solved = solved && e.fixed[b] == cellTarget
		}
		if solved {
			return path(nodes, head), true
		}
		for a, d := range directions {
			step := d[0]*e.cols + d[1]
			ahead := player + step
			if e.fixed[ahead] == cellWall {
				continue
			}
			next := boxes
			if occupied[ahead] {
				beyond := ahead + step
				if e.fixed[beyond] == cellWall || occupied[beyond] {
					continue
				}
				next = slices.Clone(boxes)
				next[slices.Index(next, ahead)] = beyond
				slices.Sort(next)
			}
			key := stateKey(ahead, next)
			if _, dup := seen[key]; dup {
				continue
			}
			if len(nodes) >= maxNodes {
				return nil, false
			}
			seen[key] = struct{}{}
			nodes = append(nodes, solveNode{key: key, parent: int32(head), action: int8(a)})
		}
		for _, b := range boxes {
			occupied[b] = false
		}
	}
	return nil, false
}

// stateKey packs a player cell and sorted box cells into a map key, two
// bytes per cell (rooms are at most 32×32 = 1024 cells).
func stateKey(player int, boxes []int) string {
	k := make([]byte, 0, 2+2*len(boxes))
	k = append(k, byte(player), byte(player>>8))
	for _, b := range boxes {
		k = append(k, byte(b), byte(b>>8))
	}
	return string(k)
}

// decodeKey unpacks a key into the player cell and the box cells (appended
// to boxes).
func decodeKey(k string, boxes []int) (int, []int) {
	player := int(k[0]) | int(k[1])<<8
	for i := 2; i < len(k); i += 2 {
		boxes = append(boxes, int(k[i])|int(k[i+1])<<8)
	}
	return player, boxes
}

// path follows parents back from node i to the start and returns the
// actions in playing order.
func path(nodes []solveNode, i int) []int {
	var actions []int
	for ; nodes[i].parent >= 0; i = int(nodes[i].parent) {
		actions = append(actions, int(nodes[i].action))
	}
	slices.Reverse(actions)
	return actions
}
