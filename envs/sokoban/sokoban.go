package sokoban

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"

	"github.com/ragen-go/ragen/envs"
)

// Rewards per action, gym-sokoban's values.
const (
	RewardStep        = -0.1 // every action, including the solving one
	RewardBoxOn       = 1.0  // a box was pushed onto a target
	RewardBoxOff      = -1.0 // a box was pushed off a target
	RewardAllOnTarget = 10.0 // the action solved the puzzle
)

// Actions are the action names, in gym-sokoban's order (ids 1–4).
var Actions = []string{"Up", "Down", "Left", "Right"}

// glyphs renders each cell code with RAGEN's symbols; index 6 is the player
// standing on a target.
var glyphs = [7]string{"#", "_", "O", "√", "X", "P", "S"}

const glyphPlayerOnTarget = 6

var legend = []envs.Symbol{
	{Glyph: "#", Meaning: "wall"},
	{Glyph: "_", Meaning: "empty"},
	{Glyph: "O", Meaning: "target"},
	{Glyph: "√", Meaning: "box on target"},
	{Glyph: "X", Meaning: "box"},
	{Glyph: "P", Meaning: "player"},
	{Glyph: "S", Meaning: "player on target"},
}

const instruction = "You are the player in a Sokoban puzzle: push every box onto a target. " +
	"Each action moves you one cell Up, Down, Left or Right. Walking into a box pushes it one cell " +
	"the same way if the cell beyond it is free. You cannot pull a box, push two boxes at once, " +
	"or push a box into a wall. Answer with a sequence of actions, like <answer>Right || Right || Up</answer>."

// Env is one Sokoban game. Create it with New; it is not safe for
// concurrent use.
type Env struct {
	cfg Config

	rows, cols    int
	fixed         []byte // wall, empty or target per cell
	state         []byte // fixed plus boxes and the player
	player        int    // the player's cell
	numBoxes      int
	boxesOnTarget int
	steps         int  // actions taken this episode
	done          bool // solved or out of steps
}

// New returns an environment for cfg, or an error naming the invalid field.
// Call Reset before Step.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Env{cfg: cfg}, nil
}

// Config returns the environment's settings.
func (e *Env) Config() Config { return e.cfg }

// Describe implements envs.Env.
func (e *Env) Describe() envs.Description {
	ins, leg := instruction, legend
	if e.coordinates() {
		// The expert reasons in (row, column) positions on these formats.
		ins += " Positions are (row, column), counted from 0 at the top left; Down adds 1 to the row, Right adds 1 to the column."
	}
	if e.cfg.Format == "coord" {
		leg = nil
	}
	return envs.Description{
		Name:                 "sokoban",
		Instruction:          ins,
		Legend:               leg,
		Actions:              Actions,
		MaxActionsPerTurn:    e.cfg.MaxActionsPerTurn,
		MaxActionsPerEpisode: e.cfg.MaxActionsPerEpisode,
		MaxTurns:             e.cfg.MaxTurns,
	}
}

// Reset generates the level for seed. A seed that yields no usable level
// (too little floor, or boxes that cannot leave their targets) is replaced
// by a seed derived from it, as RAGEN does, up to MaxResetTries times.
func (e *Env) Reset(seed int64) (string, error) {
	s := seed
	for try := 0; try < e.cfg.MaxResetTries; try++ {
		lv, err := generate(rand.New(rand.NewSource(s)), e.cfg.Rows, e.cfg.Cols, e.cfg.Boxes, e.cfg.SearchDepth)
		if err == nil {
			e.load(lv.rows, lv.cols, lv.fixed, lv.state)
			return e.Render(), nil
		}
		if !errors.Is(err, errNoLevel) {
			return "", err
		}
		s = deriveSeed(s)
	}
	return "", fmt.Errorf("sokoban: no usable %dx%d level with %d boxes from seed %d after %d tries; use a larger room or fewer boxes",
		e.cfg.Rows, e.cfg.Cols, e.cfg.Boxes, seed, e.cfg.MaxResetTries)
}

// deriveSeed maps a seed to the next one to try (splitmix64's finaliser):
// deterministic, unlike RAGEN's salted Python string hash.
func deriveSeed(s int64) int64 {
	z := uint64(s) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int64((z ^ (z >> 31)) >> 1)
}

// load starts an episode from a fixed layer and a state.
func (e *Env) load(rows, cols int, fixed, state []byte) {
	e.rows, e.cols = rows, cols
	e.fixed, e.state = fixed, state
	e.boxesOnTarget, e.numBoxes, e.steps, e.done = 0, 0, 0, false
	for i, c := range state {
		switch c {
		case cellPlayer:
			e.player = i
		case cellBoxOnTarget:
			e.boxesOnTarget++
			e.numBoxes++
		case cellBox:
			e.numBoxes++
		}
	}
}

// symbols maps each legend glyph to its state cell and fixed cell.
var symbols = map[rune][2]byte{
	'#': {cellWall, cellWall},
	'_': {cellEmpty, cellEmpty},
	'O': {cellTarget, cellTarget},
	'√': {cellBoxOnTarget, cellTarget},
	'X': {cellBox, cellEmpty},
	'P': {cellPlayer, cellEmpty},
	'S': {cellPlayer, cellTarget},
}

// Load starts an episode from a room drawn with the legend's symbols, one
// line per row (the format Render prints), for hand-made levels and tests.
// The room needs exactly one player, as many targets as boxes (at least
// one), and walls all around its border.
func (e *Env) Load(room string) error {
	lines := strings.Split(strings.TrimRight(room, "\n"), "\n")
	rows, cols := len(lines), len([]rune(lines[0]))
	if rows < 3 || cols < 3 {
		return fmt.Errorf("sokoban: load: a room must be at least 3x3 (got %dx%d)", rows, cols)
	}
	var fixed, state []byte
	players, boxes, targets := 0, 0, 0
	for r, line := range lines {
		cells := []rune(line)
		if len(cells) != cols {
			return fmt.Errorf("sokoban: load: row %d has %d cells, row 1 has %d", r+1, len(cells), cols)
		}
		for c, ch := range cells {
			sym, ok := symbols[ch]
			if !ok {
				return fmt.Errorf("sokoban: load: row %d, column %d: unknown symbol %q", r+1, c+1, ch)
			}
			if (r == 0 || r == rows-1 || c == 0 || c == cols-1) && sym[1] != cellWall {
				return fmt.Errorf("sokoban: load: row %d, column %d: the border must be wall", r+1, c+1)
			}
			switch sym[0] {
			case cellPlayer:
				players++
			case cellBox, cellBoxOnTarget:
				boxes++
			}
			if sym[1] == cellTarget {
				targets++
			}
			state = append(state, sym[0])
			fixed = append(fixed, sym[1])
		}
	}
	if players != 1 {
		return fmt.Errorf("sokoban: load: need exactly one player (got %d)", players)
	}
	if boxes < 1 || boxes != targets {
		return fmt.Errorf("sokoban: load: need as many targets as boxes, at least one (got %d boxes, %d targets)", boxes, targets)
	}
	e.load(rows, cols, fixed, state)
	return nil
}

// coordinates reports whether the observation lists positions.
func (e *Env) coordinates() bool { return e.cfg.Format == "coord" || e.cfg.Format == "grid_coord" }

// Render implements envs.Env, in the configured format.
func (e *Env) Render() string {
	if e.state == nil {
		return ""
	}
	return envs.RenderObservation(e.cfg.Format, e.coords, e.gridText)
}

// coords lists the positions, RAGEN v2's lines in its order (targets, boxes,
// boxes on target, player or player on target; empty lists left out), after
// the board and its inner walls. RAGEN leaves the walls out although its
// prompt says they are listed; without them a coordinate-only agent cannot
// see the room, so they are listed here. The border is always wall and is
// stated once instead.
func (e *Env) coords() string {
	var walls, targets, boxes, placed []string
	for i, c := range e.state {
		r, k := i/e.cols, i%e.cols
		pos := fmt.Sprintf("(%d, %d)", r, k)
		switch {
		case c == cellWall && r > 0 && r < e.rows-1 && k > 0 && k < e.cols-1:
			walls = append(walls, pos)
		case c == cellTarget:
			targets = append(targets, pos)
		case c == cellBox:
			boxes = append(boxes, pos)
		case c == cellBoxOnTarget:
			placed = append(placed, pos)
		}
	}
	lines := []string{fmt.Sprintf("Board: %d rows x %d columns, walled all around", e.rows, e.cols)}
	for _, l := range []struct {
		name string
		pos  []string
	}{{"Walls", walls}, {"Targets", targets}, {"Boxes", boxes}, {"Boxes on target", placed}} {
		if len(l.pos) > 0 {
			lines = append(lines, l.name+": "+strings.Join(l.pos, ", "))
		}
	}
	player := "Player"
	if e.fixed[e.player] == cellTarget {
		player = "Player on target"
	}
	p := e.rc(e.player)
	lines = append(lines, fmt.Sprintf("%s: (%d, %d)", player, p[0], p[1]))
	return strings.Join(lines, "\n")
}

// gridText draws the room, one line per row, no trailing newline.
func (e *Env) gridText() string {
	var b strings.Builder
	for r := 0; r < e.rows; r++ {
		if r > 0 {
			b.WriteByte('\n')
		}
		for c := 0; c < e.cols; c++ {
			i := r*e.cols + c
			g := int(e.state[i])
			if g == int(cellPlayer) && e.fixed[i] == cellTarget {
				g = glyphPlayerOnTarget
			}
			b.WriteString(glyphs[g])
		}
	}
	return b.String()
}

// actionIndex returns the index of name in Actions (case-insensitively), or -1.
func actionIndex(name string) int {
	name = strings.TrimSpace(name)
	for i, a := range Actions {
		if strings.EqualFold(a, name) {
			return i
		}
	}
	return -1
}

// Step implements envs.Env: one move or push. An unknown action name, or
// any action after the episode ended, is invalid and changes nothing.
func (e *Env) Step(action string) envs.StepResult {
	a := actionIndex(action)
	if a < 0 || e.done || e.state == nil {
		return envs.StepResult{Observation: e.Render(), Done: e.done}
	}
	before := e.boxesOnTarget
	moved := e.move(directions[a])
	e.steps++
	reward := RewardStep
	switch {
	case e.boxesOnTarget > before:
		reward += RewardBoxOn
	case e.boxesOnTarget < before:
		reward += RewardBoxOff
	}
	solved := e.boxesOnTarget == e.numBoxes
	if solved {
		reward += RewardAllOnTarget
	}
	e.done = solved || e.steps >= e.cfg.MaxSteps
	return envs.StepResult{
		Observation: e.Render(),
		Reward:      reward,
		Done:        e.done,
		Info: envs.Info{
			Success:   solved,
			Valid:     true,
			Effective: moved,
			Metrics:   map[string]float64{"boxes_on_target": float64(e.boxesOnTarget)},
		},
	}
}

// move applies one action in direction d with gym-sokoban's rules: push the
// box ahead if the cell beyond it is free, else walk if the cell ahead is
// free, else stay. It reports whether the player moved.
func (e *Env) move(d [2]int) bool {
	step := d[0]*e.cols + d[1]
	ahead := e.player + step
	switch e.state[ahead] {
	case cellEmpty, cellTarget:
	case cellBox, cellBoxOnTarget:
		beyond := ahead + step
		if e.state[beyond] != cellEmpty && e.state[beyond] != cellTarget {
			return false
		}
		if e.state[ahead] == cellBoxOnTarget {
			e.boxesOnTarget--
		}
		if e.fixed[beyond] == cellTarget {
			e.state[beyond] = cellBoxOnTarget
			e.boxesOnTarget++
		} else {
			e.state[beyond] = cellBox
		}
	default:
		return false
	}
	e.state[e.player] = e.fixed[e.player]
	e.state[ahead] = cellPlayer
	e.player = ahead
	return true
}
