package sokoban

import (
	"errors"
	"math/rand"
	"slices"
)

// Cell codes of a room, as gym-sokoban numbers them. A room's fixed layer
// holds only wall, empty and target; its state layer adds boxes and the
// player (a player on a target is still player; Render shows it as S).
const (
	cellWall        byte = 0
	cellEmpty       byte = 1
	cellTarget      byte = 2
	cellBoxOnTarget byte = 3
	cellBox         byte = 4
	cellPlayer      byte = 5
)

// Generation constants from gym-sokoban (room_utils.generate_room) and
// RAGEN's add_random_player_movement.
const (
	pChangeDirection = 0.35   // chance the carving walk turns at each step
	topologyTries    = 4      // topologies tried before a level counts as failed
	maxExplored      = 300000 // cap on reverse-play states, as gym-sokoban
	walkStepsMax     = 3      // random player steps after reverse play, at most
	walkContinue     = 0.5    // chance of one more random step
)

// directions are the unit moves Up, Down, Left, Right as (drow, dcol), in
// the order of the actions.
var directions = [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}

// walkDirections is the order gym-sokoban samples the carving walk from.
var walkDirections = [4][2]int{{1, 0}, {0, 1}, {-1, 0}, {0, -1}}

// masks are the five 3×3 stamps of floor the carving walk applies, centred
// on its position: a horizontal bar, a vertical bar, two L shapes and a 2×2
// block.
var masks = [5][3][3]byte{
	{{0, 0, 0}, {1, 1, 1}, {0, 0, 0}},
	{{0, 1, 0}, {0, 1, 0}, {0, 1, 0}},
	{{0, 0, 0}, {1, 1, 0}, {0, 1, 0}},
	{{0, 0, 0}, {1, 1, 0}, {1, 1, 0}},
	{{0, 0, 0}, {0, 1, 1}, {0, 1, 0}},
}

// errNoLevel marks a generation attempt that found no usable level (too
// little floor, or reverse play could not move a box off its target); the
// caller retries with a derived seed.
var errNoLevel = errors.New("no usable level from this seed")

// level is one generated room: the fixed layer and the start state, each
// rows×cols cells in row-major order.
type level struct {
	rows, cols int
	fixed      []byte
	state      []byte
}

// generate builds one level with gym-sokoban's algorithm from rng. It
// returns errNoLevel when this draw yields nothing usable.
func generate(rng *rand.Rand, rows, cols, boxes, searchDepth int) (level, error) {
	numSteps := int(1.7 * float64(rows+cols))
	var fixed, state []byte
	var displacement int
	for t := 0; t < topologyTries; t++ {
		room := topology(rng, rows, cols, numSteps)
		if err := placeBoxesAndPlayer(rng, room, boxes); err != nil {
			return level{}, err
		}
		fixed = make([]byte, len(room))
		state = make([]byte, len(room))
		for i, c := range room {
			fixed[i], state[i] = c, c
			switch c {
			case cellPlayer:
				fixed[i] = cellEmpty
			case cellTarget:
				state[i] = revUnmoved // every box starts on its target
			}
		}
		rp := reversePlay{cols: cols, fixed: fixed, explored: map[string]struct{}{}}
		state, displacement = rp.run(state, searchDepth)
		for i, c := range state {
			if c == revMoved || c == revUnmoved {
				state[i] = cellBox // the best state has every target uncovered
			}
		}
		if displacement > 0 {
			break
		}
	}
	if displacement == 0 {
		return level{}, errNoLevel
	}
	moveProbability := 0.5
	if displacement == 1 {
		moveProbability = 0.8
	}
	randomPlayerWalk(rng, state, fixed, cols, moveProbability)
	return level{rows: rows, cols: cols, fixed: fixed, state: state}, nil
}

// topology carves a room: a random walk from a random position, stamping a
// random mask at each step, then walls all around the border.
func topology(rng *rand.Rand, rows, cols, numSteps int) []byte {
	room := make([]byte, rows*cols)
	dir := walkDirections[rng.Intn(4)]
	// The start may lie on the far border (as in gym-sokoban); the first
	// step clamps it inside.
	r, c := 1+rng.Intn(rows-1), 1+rng.Intn(cols-1)
	for s := 0; s < numSteps; s++ {
		if rng.Float64() < pChangeDirection {
			dir = walkDirections[rng.Intn(4)]
		}
		r = min(max(r+dir[0], 1), rows-2)
		c = min(max(c+dir[1], 1), cols-2)
		m := &masks[rng.Intn(len(masks))]
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				if m[i][j] != 0 {
					room[(r-1+i)*cols+c-1+j] = cellEmpty
				}
			}
		}
	}
	for i := 0; i < rows; i++ {
		room[i*cols] = cellWall
		room[i*cols+cols-1] = cellWall
	}
	for j := 0; j < cols; j++ {
		room[j] = cellWall
		room[(rows-1)*cols+j] = cellWall
	}
	return room
}

// placeBoxesAndPlayer puts the player on a random floor cell, then each box
// target on a random remaining floor cell (the boxes start on them).
func placeBoxesAndPlayer(rng *rand.Rand, room []byte, boxes int) error {
	floor := floorCells(room)
	if len(floor) <= boxes+1 {
		return errNoLevel
	}
	room[floor[rng.Intn(len(floor))]] = cellPlayer
	for b := 0; b < boxes; b++ {
		floor = floorCells(room)
		room[floor[rng.Intn(len(floor))]] = cellTarget
	}
	return nil
}

// floorCells lists the empty cells of room in row-major order.
func floorCells(room []byte) []int {
	var cells []int
	for i, c := range room {
		if c == cellEmpty {
			cells = append(cells, i)
		}
	}
	return cells
}

// During reverse play boxes carry gym-sokoban's generation codes: a box
// still on the target it was placed on is revUnmoved, a box pulled at least
// once is revMoved. The distinction is part of a state's identity, as in
// gym-sokoban's explored-state hash.
const (
	revMoved   = cellBoxOnTarget
	revUnmoved = cellBox
)

// reversePlay is gym-sokoban's depth-first search over pulls that picks a
// start state: from the solved room the player walks, and a step away from
// an adjacent box pulls the box along. A state scores box swaps × total box
// displacement (Manhattan distance of each box from its own target), or 0
// while any target is covered (by a box or the player); the first state
// reaching the highest score wins.
type reversePlay struct {
	cols     int
	fixed    []byte
	targets  []int // box k started on targets[k]
	explored map[string]struct{}

	bestScore        int
	bestState        []byte
	bestDisplacement int
}

// run searches from the solved state with the depth limit and returns the
// best state and its total box displacement.
func (rp *reversePlay) run(state []byte, depth int) ([]byte, int) {
	player := -1
	for i, c := range rp.fixed {
		if c == cellTarget {
			rp.targets = append(rp.targets, i)
		}
		if state[i] == cellPlayer {
			player = i
		}
	}
	rp.bestScore = -1
	rp.bestState = state
	pos := append([]int(nil), rp.targets...)
	rp.dfs(state, pos, player, 0, -1, depth)
	return rp.bestState, rp.bestDisplacement
}

// dfs visits state (box k at pos[k], the player at player) reached after
// swaps changes of pulled box, the last pulled box being lastPull (-1 for
// none), with ttl levels of depth left. States seen before are skipped
// whatever their path, exactly as gym-sokoban's explored-state set does.
func (rp *reversePlay) dfs(state []byte, pos []int, player, swaps, lastPull, ttl int) {
	ttl--
	if ttl <= 0 || len(rp.explored) >= maxExplored {
		return
	}
	key := string(state)
	if _, seen := rp.explored[key]; seen {
		return
	}
	rp.explored[key] = struct{}{}
	disp := rp.displacement(pos)
	score := swaps * disp
	for _, t := range rp.targets {
		if state[t] != cellTarget {
			score = 0 // a target is covered
			break
		}
	}
	if score > rp.bestScore {
		rp.bestScore = score
		rp.bestState = append([]byte(nil), state...)
		rp.bestDisplacement = disp
	}
	for _, d := range directions {
		next := append([]byte(nil), state...)
		nextPos := append([]int(nil), pos...)
		nextPlayer, pulled := rp.pull(next, nextPos, player, d)
		nextSwaps, nextLast := swaps, lastPull
		if pulled >= 0 {
			nextLast = pulled
		}
		if nextLast != lastPull {
			nextSwaps++
		}
		rp.dfs(next, nextPos, nextPlayer, nextSwaps, nextLast, ttl)
	}
}

// pull moves the player one cell in direction d if that cell is free, and
// drags along a box standing right behind the player. It updates state and
// pos in place and returns the player's new cell and the index of the
// pulled box (-1 if none).
func (rp *reversePlay) pull(state []byte, pos []int, player int, d [2]int) (int, int) {
	r, c := player/rp.cols, player%rp.cols
	next := (r+d[0])*rp.cols + c + d[1]
	if state[next] != cellEmpty && state[next] != cellTarget {
		return player, -1
	}
	state[player] = rp.fixed[player]
	state[next] = cellPlayer
	behind := (r-d[0])*rp.cols + c - d[1]
	if state[behind] != revMoved && state[behind] != revUnmoved {
		return next, -1
	}
	state[player] = revMoved
	state[behind] = rp.fixed[behind]
	for k, p := range pos {
		if p == behind {
			pos[k] = player
			return next, k
		}
	}
	return next, -1
}

// displacement is the total Manhattan distance of the boxes from their
// targets (gym-sokoban's box_displacement_score).
func (rp *reversePlay) displacement(pos []int) int {
	d := 0
	for k, t := range rp.targets {
		d += abs(pos[k]/rp.cols-t/rp.cols) + abs(pos[k]%rp.cols-t%rp.cols)
	}
	return d
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// randomPlayerWalk is RAGEN's add_random_player_movement: with probability
// moveProbability the player takes 1 to walkStepsMax random steps onto free
// cells it has not visited, continuing after each with probability
// walkContinue.
func randomPlayerWalk(rng *rand.Rand, state, fixed []byte, cols int, moveProbability float64) {
	if rng.Float64() > moveProbability {
		return
	}
	player := -1
	for i, c := range state {
		if c == cellPlayer {
			player = i
		}
	}
	visited := []int{player}
	for steps := 0; steps < walkStepsMax; {
		var options []int
		for _, d := range directions {
			next := player + d[0]*cols + d[1]
			if (state[next] == cellEmpty || state[next] == cellTarget) && !slices.Contains(visited, next) {
				options = append(options, next)
			}
		}
		if len(options) == 0 {
			return
		}
		next := options[rng.Intn(len(options))]
		state[player] = fixed[player]
		state[next] = cellPlayer
		player = next
		visited = append(visited, next)
		steps++
		if steps >= walkStepsMax || rng.Float64() > walkContinue {
			return
		}
	}
}
