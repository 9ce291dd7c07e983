package frozenlake

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/ragen-go/ragen/envs"
)

// slipperyStride is how many moves of its plan the expert commits to on
// slippery ice before it looks again: a slip makes the rest of a plan wrong,
// and two moves per turn still spend RAGEN's 10 actions in its 5 turns.
const slipperyStride = 2

// Demonstrate implements envs.Expert. The expert re-plans every turn: it
// takes the shortest path over frozen tiles from where it stands (all of it
// up to the per-turn limit on firm ice, two moves on slippery ice) and
// explains it by where the goal lies and whether holes force a detour.
// Imperfect demonstrations either take the right moves in a shuffled order
// or wander a few random steps, with reasoning that fits what they do.
func (e *Env) Demonstrate(rng *rand.Rand, imperfect bool) string {
	path := e.ShortestPath()
	if path == nil { // in a hole or on the goal: nothing sensible to do
		a := Actions[rng.Intn(len(Actions))]
		return "<think>The game is already over; any move will do.</think><answer>" + a + "</answer>"
	}
	g := e.goalAt()
	where := relative(g[0]-e.pos[0], g[1]-e.pos[1])
	var think string
	var acts []string
	switch {
	case imperfect && rng.Intn(2) == 0:
		acts = append([]string(nil), path...)
		rng.Shuffle(len(acts), func(i, j int) { acts[i], acts[j] = acts[j], acts[i] })
		acts = e.cut(acts)
		think = fmt.Sprintf(pick(rng, hastyReasons), where, join(acts))
	case imperfect:
		acts = make([]string, 1+rng.Intn(3))
		for i := range acts {
			acts[i] = Actions[rng.Intn(len(Actions))]
		}
		acts = e.cut(acts)
		think = fmt.Sprintf(pick(rng, wanderReasons), join(acts))
	case e.traces():
		var steps []string
		path, steps = e.tracedPath()
		acts = e.cut(path)
		think = e.explainTrace(rng, steps[:len(acts)], acts, len(path))
	default:
		acts = e.cut(path)
		detour := len(path) > abs(g[0]-e.pos[0])+abs(g[1]-e.pos[1])
		think = e.explain(rng, where, detour, acts, len(path))
	}
	return "<think>" + think + "</think><answer>" + strings.Join(acts, " "+envs.ActionSeparator+" ") + "</answer>"
}

// cut keeps the moves one answer may carry: the per-turn limit, and the
// slippery stride.
func (e *Env) cut(acts []string) []string {
	n := e.cfg.MaxActionsPerTurn
	if !e.cfg.deterministic() && n > slipperyStride {
		n = slipperyStride
	}
	if len(acts) > n {
		acts = acts[:n]
	}
	return acts
}

// explain reasons in the order a small model can follow, one easy step at
// a time: copy the two positions from the state (counted from 0, as the
// coordinate observation gives them), take their difference, then name
// the moves. Reasoning that jumps straight to "the goal lies two rows up"
// asks the model to find two positions and subtract them in one token;
// warm-started policies that learned from such text never learned to read
// the map.
//
// When the observation shows coordinates, the difference is taken one axis
// at a time from the two digits just written ("Row 3 to 1: two up."), so
// each word follows from the two tokens before it. Phrasing it as one
// relation ("one row up and two columns to the left") asks for both
// differences at once: a warm start that copied the positions correctly
// still named the wrong relation in most games (decision 22). The grid
// format, whose observation shows no coordinates, keeps the one-relation
// wording.
func (e *Env) explain(rng *rand.Rand, where string, detour bool, acts []string, pathLen int) string {
	g := e.goalAt()
	var b strings.Builder
	if e.cfg.Format == "coord" || e.cfg.Format == "grid_coord" {
		fmt.Fprintf(&b, pick(rng, []string{"I am at (%d, %d) and the goal is at (%d, %d).", "Me (%d, %d), goal (%d, %d)."}),
			e.pos[0], e.pos[1], g[0], g[1])
		fmt.Fprintf(&b, " Row %d to %d: %s. Column %d to %d: %s.",
			e.pos[0], g[0], axisMove(g[0]-e.pos[0], "up", "down", "same row"),
			e.pos[1], g[1], axisMove(g[1]-e.pos[1], "left", "right", "same column"))
	} else {
		fmt.Fprintf(&b, pick(rng, []string{
			"I am at (%d, %d) and the goal is at (%d, %d), so the goal is %s.",
			"Me (%d, %d), goal (%d, %d): the goal is %s.",
		}), e.pos[0], e.pos[1], g[0], g[1], where)
	}
	if detour {
		b.WriteString(pick(rng, []string{
			" Holes block the direct way, so I go around them.",
			" The straight route runs into a hole; I take a detour over the ice.",
		}))
	} else {
		b.WriteString(pick(rng, []string{
			" The direct way is clear of holes.",
			" No hole is in the way.",
		}))
	}
	switch {
	case len(acts) < pathLen && !e.cfg.deterministic():
		fmt.Fprintf(&b, " The ice is slippery, so I make only the next %s and look again: %s.", moveCount(len(acts)), join(acts))
	case len(acts) < pathLen:
		fmt.Fprintf(&b, " The path takes %d moves; I start with %s.", pathLen, join(acts))
	default:
		fmt.Fprintf(&b, pick(rng, []string{" I go %s.", " So: %s.", " My moves: %s."}), join(acts))
	}
	return b.String()
}

// traces reports whether the expert walks its path in words: on firm ice
// with coordinates, where every position it passes can be written down.
func (e *Env) traces() bool {
	return e.cfg.deterministic() && (e.cfg.Format == "coord" || e.cfg.Format == "grid_coord")
}

// explainTrace is the expert's reasoning on firm ice with coordinates: the
// two positions and the per-axis differences (as explain), then the path
// one move at a time with the tile each move reaches, and the moves it
// turned down because they land in a hole. Each step is local: add one to
// a coordinate just written, then look that position up in the Holes line
// (decision 23). steps[i] narrates acts[i].
func (e *Env) explainTrace(rng *rand.Rand, steps, acts []string, pathLen int) string {
	g := e.goalAt()
	var b strings.Builder
	fmt.Fprintf(&b, pick(rng, []string{"I am at (%d, %d) and the goal is at (%d, %d).", "Me (%d, %d), goal (%d, %d)."}),
		e.pos[0], e.pos[1], g[0], g[1])
	fmt.Fprintf(&b, " Row %d to %d: %s. Column %d to %d: %s.",
		e.pos[0], g[0], axisMove(g[0]-e.pos[0], "up", "down", "same row"),
		e.pos[1], g[1], axisMove(g[1]-e.pos[1], "left", "right", "same column"))
	for _, s := range steps {
		b.WriteString(" " + s)
	}
	if len(acts) < pathLen {
		fmt.Fprintf(&b, " That is %s of %d; I go %s.", envs.NumberWord(len(acts)), pathLen, join(acts))
	} else {
		fmt.Fprintf(&b, pick(rng, []string{" I go %s.", " So: %s.", " My moves: %s."}), join(acts))
	}
	return b.String()
}

// tracedPath returns a shortest path to the goal over frozen tiles chosen
// by a rule a model can follow from the words it has written: from each
// tile, move along the row difference first, else the column difference,
// taking the first such move that lands on frozen ice still on a shortest
// path; when neither does (the holes force a detour), take the first move in
// action order that stays on a shortest path. steps narrates each move
// ("Up to (1, 1).", preceded by "Right to (2, 3) is a hole." for a
// preferred move that falls in). nil when no path exists.
func (e *Env) tracedPath() (path, steps []string) {
	n := len(e.grid)
	dist := e.distances()
	at := e.pos
	if dist[at[0]*n+at[1]] < 0 {
		return nil, nil
	}
	g := e.goalAt()
	for at != g {
		d := dist[at[0]*n+at[1]]
		var prefer []int // action indexes toward the goal: row first
		if g[0] < at[0] {
			prefer = append(prefer, 3)
		} else if g[0] > at[0] {
			prefer = append(prefer, 1)
		}
		if g[1] < at[1] {
			prefer = append(prefer, 0)
		} else if g[1] > at[1] {
			prefer = append(prefer, 2)
		}
		var note strings.Builder
		next := -1
		for _, a := range prefer {
			r, c := at[0]+moves[a][0], at[1]+moves[a][1]
			if e.grid[r][c] == hole {
				fmt.Fprintf(&note, "%s to (%d, %d) is a hole. ", Actions[a], r, c)
				continue
			}
			if dist[r*n+c] == d-1 {
				next = a
				break
			}
		}
		for a := 0; next < 0 && a < len(moves); a++ {
			r, c := at[0]+moves[a][0], at[1]+moves[a][1]
			if r >= 0 && r < n && c >= 0 && c < n && dist[r*n+c] == d-1 {
				next = a
			}
		}
		at = [2]int{at[0] + moves[next][0], at[1] + moves[next][1]}
		path = append(path, Actions[next])
		steps = append(steps, fmt.Sprintf("%s%s to (%d, %d).", note.String(), Actions[next], at[0], at[1]))
	}
	return path, steps
}

// distances returns each tile's number of moves to the goal over frozen
// tiles (row-major), −1 where the goal cannot be reached or on a hole.
func (e *Env) distances() []int {
	n := len(e.grid)
	dist := make([]int, n*n)
	for i := range dist {
		dist[i] = -1
	}
	g := e.goalAt()
	dist[g[0]*n+g[1]] = 0
	queue := []int{g[0]*n + g[1]}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		r, c := cur/n, cur%n
		for _, m := range moves {
			nr, nc := r+m[0], c+m[1]
			if nr < 0 || nr >= n || nc < 0 || nc >= n || dist[nr*n+nc] >= 0 || e.grid[nr][nc] == hole {
				continue
			}
			dist[nr*n+nc] = dist[cur] + 1
			queue = append(queue, nr*n+nc)
		}
	}
	return dist
}

var hastyReasons = []string{
	"The goal is %s. I just need those moves in some order: %s.",
	"The goal lies %s, so I head there: %s.",
}

var wanderReasons = []string{
	"I am not sure where the holes are. Let me try %s and see.",
	"Hard to say which way is safe. I will explore: %s.",
	"Let me move a little and look again: %s.",
}

func pick(rng *rand.Rand, list []string) string { return list[rng.Intn(len(list))] }

func join(acts []string) string { return strings.Join(acts, ", ") }

// relative says where a tile dr rows down and dc columns right lies:
// "two rows down and one column to the right".
func relative(dr, dc int) string {
	var parts []string
	if dr != 0 {
		dir := "down"
		if dr < 0 {
			dir = "up"
		}
		parts = append(parts, fmt.Sprintf("%s %s", count(abs(dr), "row", "rows"), dir))
	}
	if dc != 0 {
		dir := "to the right"
		if dc < 0 {
			dir = "to the left"
		}
		parts = append(parts, fmt.Sprintf("%s %s", count(abs(dc), "column", "columns"), dir))
	}
	switch {
	case dr == 0:
		return parts[0] + ", in my row"
	case dc == 0:
		return parts[0] + ", in my column"
	}
	return parts[0] + " and " + parts[1]
}

// axisMove names a difference d along one axis: "two up" for d = −2 with
// less "up", "same row" for 0.
func axisMove(d int, less, more, same string) string {
	switch {
	case d < 0:
		return envs.NumberWord(-d) + " " + less
	case d > 0:
		return envs.NumberWord(d) + " " + more
	}
	return same
}

func count(n int, one, many string) string {
	w := envs.NumberWord(n)
	if n == 1 {
		return w + " " + one
	}
	return w + " " + many
}

func moveCount(n int) string { return count(n, "move", "moves") }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
