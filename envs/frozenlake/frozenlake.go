package frozenlake

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/ragen-go/ragen/envs"
)

// Name is the registry name.
const Name = "frozenlake"

// The actions, in RAGEN's order, and their moves (row, column).
var (
	Actions = []string{"Left", "Down", "Right", "Up"}
	moves   = [4][2]int{{0, -1}, {1, 0}, {0, 1}, {-1, 0}}
)

// Config sets the map and the ice. The defaults are RAGEN v1's.
type Config struct {
	Size        int     // side of the square map (default 4; at least 2, at most 32)
	P           float64 // probability that a tile is frozen rather than a hole (default 0.8, in (0, 1])
	Slippery    bool    // moves may slip sideways (default true)
	SuccessRate float64 // probability a slippery move goes where intended (default 1/3, in [0, 1])
	// Format of the observation (RAGEN v2's observation_format): "grid"
	// (default; "" means it too), "coord" (positions as (row, column)
	// lists) or "grid_coord" (both).
	Format string

	MaxActionsPerTurn    int // default 5
	MaxActionsPerEpisode int // default 10
	MaxTurns             int // default 5
}

// DefaultConfig returns RAGEN v1's FrozenLake.
func DefaultConfig() Config {
	return Config{Size: 4, P: 0.8, Slippery: true, SuccessRate: 1.0 / 3, Format: "grid",
		MaxActionsPerTurn: 5, MaxActionsPerEpisode: 10, MaxTurns: 5}
}

// Validate reports the first impossible field.
func (c Config) Validate() error {
	switch {
	case c.Size < 2 || c.Size > 32:
		return envs.OptionError(Name, "size", "must be in [2, 32]: a start and a goal need two tiles (got %d)", c.Size)
	case !(c.P > 0 && c.P <= 1):
		return envs.OptionError(Name, "p", "is the probability of a frozen tile, must be in (0, 1] (got %v)", c.P)
	case !(c.SuccessRate >= 0 && c.SuccessRate <= 1):
		return envs.OptionError(Name, "success_rate", "is a probability, must be in [0, 1] (got %v)", c.SuccessRate)
	}
	if err := envs.CheckObservationFormat(Name, c.Format); err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		v    int
	}{{envs.OptMaxActionsPerTurn, c.MaxActionsPerTurn}, {envs.OptMaxActionsPerEpisode, c.MaxActionsPerEpisode}, {envs.OptMaxTurns, c.MaxTurns}} {
		if b.v < 1 {
			return envs.OptionError(Name, b.name, "must be at least 1 (got %d)", b.v)
		}
	}
	return nil
}

// deterministic reports whether moves never slip.
func (c Config) deterministic() bool { return !c.Slippery || c.SuccessRate == 1 }

func init() {
	d := DefaultConfig()
	envs.Register(envs.Spec{
		Name:    Name,
		Summary: "reach the goal on a random frozen-lake grid without falling into a hole; slippery moves",
		Options: append([]envs.Option{
			{Name: "size", Kind: envs.Int, Default: d.Size, Doc: "side of the square map, in [2, 32]"},
			{Name: "p", Kind: envs.Float, Default: d.P, Doc: "probability that a tile is frozen (else a hole), in (0, 1]"},
			{Name: "is_slippery", Kind: envs.Bool, Default: d.Slippery, Doc: "moves may slip to a perpendicular direction"},
			{Name: "success_rate", Kind: envs.Float, Default: d.SuccessRate, Doc: "probability a slippery move goes where intended; 1 is deterministic"},
			envs.ObservationFormatOption("the state as a grid of symbols, as (row, column) lists, or both"),
		}, envs.BudgetOptions(d.MaxActionsPerTurn, d.MaxActionsPerEpisode, d.MaxTurns)...),
		New: func(o envs.Options) (envs.Env, error) {
			return New(Config{Size: o.Int("size"), P: o.Float("p"), Slippery: o.Bool("is_slippery"),
				SuccessRate:          o.Float("success_rate"),
				Format:               o.String(envs.OptObservationFormat),
				MaxActionsPerTurn:    o.Int(envs.OptMaxActionsPerTurn),
				MaxActionsPerEpisode: o.Int(envs.OptMaxActionsPerEpisode),
				MaxTurns:             o.Int(envs.OptMaxTurns)})
		},
	})
}

// Tiles of the map.
const (
	frozen = 'F'
	hole   = 'H'
	goal   = 'G'
)

// Env is one FrozenLake game.
type Env struct {
	cfg      Config
	fixed    []string // a map given by FromMap, kept across resets; nil: draw
	rng      *rand.Rand
	grid     [][]byte // rows of F, H, G (the start is frozen)
	start    [2]int
	pos      [2]int
	finished bool // in a hole or on the goal
}

// New returns a game reset with seed 0.
func New(c Config) (*Env, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Format == "" {
		c.Format = "grid"
	}
	e := &Env{cfg: c}
	if _, err := e.Reset(0); err != nil {
		return nil, err
	}
	return e, nil
}

// FromMap returns a game on a fixed map, given as rows of S (start), F
// (frozen), H (hole) and G (goal), gymnasium's notation; c.Size is taken
// from the map. Reset's seed then only seeds the slipping.
func FromMap(c Config, rows ...string) (*Env, error) {
	c.Size = len(rows)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var s, g int
	for _, r := range rows {
		if len(r) != len(rows) {
			return nil, fmt.Errorf("%s: the map must be square (got a row %q in %d rows)", Name, r, len(rows))
		}
		for _, ch := range r {
			switch ch {
			case 'S':
				s++
			case 'G':
				g++
			case 'F', 'H':
			default:
				return nil, fmt.Errorf("%s: unknown tile %q in row %q (want S, F, H or G)", Name, ch, r)
			}
		}
	}
	if s != 1 || g != 1 {
		return nil, fmt.Errorf("%s: the map needs exactly one S and one G (got %d and %d)", Name, s, g)
	}
	if c.Format == "" {
		c.Format = "grid"
	}
	e := &Env{cfg: c, fixed: rows}
	if _, err := e.Reset(0); err != nil {
		return nil, err
	}
	return e, nil
}

// Describe implements envs.Env.
func (e *Env) Describe() envs.Description {
	ins := "You are crossing a frozen lake on a grid. Walk from where you stand to the goal without stepping into a hole; " +
		"falling into a hole ends the game. Moving into the edge of the lake leaves you where you are."
	if !e.cfg.deterministic() {
		ins += " The ice is slippery: a move may carry you sideways, at a right angle to the direction you chose."
	}
	var legend []envs.Symbol
	if e.cfg.Format != "coord" {
		legend = []envs.Symbol{
			{Glyph: "P", Meaning: "you"}, {Glyph: "_", Meaning: "frozen ice"}, {Glyph: "O", Meaning: "hole"},
			{Glyph: "G", Meaning: "goal"}, {Glyph: "X", Meaning: "you in a hole"}, {Glyph: "√", Meaning: "you on the goal"},
		}
	}
	// Every format states the coordinate convention: the expert reasons in
	// (row, column) positions whatever the agent is shown.
	ins += " Positions are (row, column), counted from 0 at the top left; Down adds 1 to the row, Right adds 1 to the column."
	return envs.Description{
		Name:                 Name,
		Instruction:          ins,
		Legend:               legend,
		Actions:              Actions,
		MaxActionsPerTurn:    e.cfg.MaxActionsPerTurn,
		MaxActionsPerEpisode: e.cfg.MaxActionsPerEpisode,
		MaxTurns:             e.cfg.MaxTurns,
	}
}

// maxDraws bounds map redraws; with p ≥ 0.05 on any size a connected map
// comes within a few hundred draws, so running out means p is far too low.
const maxDraws = 100000

// Reset implements envs.Env: a new map from seed (or the fixed map).
func (e *Env) Reset(seed int64) (string, error) {
	e.rng = envs.NewRand(seed)
	e.finished = false
	if e.fixed != nil {
		e.grid = make([][]byte, len(e.fixed))
		for r, row := range e.fixed {
			e.grid[r] = []byte(row)
			for c := range e.grid[r] {
				if e.grid[r][c] == 'S' {
					e.start, e.grid[r][c] = [2]int{r, c}, frozen
				}
			}
		}
		e.pos = e.start
		return e.Render(), nil
	}
	n := e.cfg.Size
	for try := 0; try < maxDraws; try++ {
		g := make([][]byte, n)
		for r := range g {
			g[r] = make([]byte, n)
			for c := range g[r] {
				g[r][c] = hole
				if e.rng.Float64() < e.cfg.P {
					g[r][c] = frozen
				}
			}
		}
		s := [2]int{e.rng.Intn(n), e.rng.Intn(n)}
		t := [2]int{e.rng.Intn(n), e.rng.Intn(n)}
		if s == t {
			continue
		}
		g[s[0]][s[1]], g[t[0]][t[1]] = frozen, goal
		e.grid, e.start, e.pos = g, s, s
		if e.ShortestPath() != nil {
			return e.Render(), nil
		}
	}
	return "", fmt.Errorf("%s: no map with a path from start to goal in %d draws (p = %v is too low)", Name, maxDraws, e.cfg.P)
}

// Step implements envs.Env: one move, which may slip.
func (e *Env) Step(action string) envs.StepResult {
	a := -1
	for i, name := range Actions {
		if action == name {
			a = i
		}
	}
	if a < 0 || e.finished {
		return envs.StepResult{Observation: e.Render(), Done: e.finished}
	}
	dir := a
	if !e.cfg.deterministic() {
		// gymnasium: [a−1, a, a+1] (mod 4) with probabilities
		// [(1−s)/2, s, (1−s)/2]; a±1 are the perpendicular directions.
		u := e.rng.Float64()
		fail := (1 - e.cfg.SuccessRate) / 2
		switch {
		case u < fail:
			dir = (a + 3) % 4
		case u < fail+e.cfg.SuccessRate:
		default:
			dir = (a + 1) % 4
		}
	}
	before := e.pos
	r, c := e.pos[0]+moves[dir][0], e.pos[1]+moves[dir][1]
	if r >= 0 && r < len(e.grid) && c >= 0 && c < len(e.grid) {
		e.pos = [2]int{r, c}
	}
	info := envs.Info{Valid: true, Effective: e.pos != before}
	var reward float64
	switch e.grid[e.pos[0]][e.pos[1]] {
	case goal:
		reward, info.Success, e.finished = 1, true, true
	case hole:
		e.finished = true
	}
	return envs.StepResult{Observation: e.Render(), Reward: reward, Done: e.finished, Info: info}
}

// Render implements envs.Env, in the configured format.
func (e *Env) Render() string {
	return envs.RenderObservation(e.cfg.Format, e.coords, e.gridText)
}

// coords lists the positions: board size, start, goal, player and holes.
func (e *Env) coords() string {
	n := len(e.grid)
	var holes []string
	for r, row := range e.grid {
		for c, t := range row {
			if t == hole {
				holes = append(holes, fmt.Sprintf("(%d, %d)", r, c))
			}
		}
	}
	player := "Player"
	switch e.grid[e.pos[0]][e.pos[1]] {
	case goal:
		player = "Player on the goal"
	case hole:
		player = "Player in a hole"
	}
	g := e.goalAt()
	h := "none"
	if len(holes) > 0 {
		h = strings.Join(holes, ", ")
	}
	return fmt.Sprintf("Board: %d rows x %d columns\nStart: (%d, %d)\nGoal: (%d, %d)\n%s: (%d, %d)\nHoles: %s",
		n, n, e.start[0], e.start[1], g[0], g[1], player, e.pos[0], e.pos[1], h)
}

// gridText draws one line per row with the symbols of the legend.
func (e *Env) gridText() string {
	var b strings.Builder
	for r, row := range e.grid {
		if r > 0 {
			b.WriteByte('\n')
		}
		for c, t := range row {
			here := e.pos == [2]int{r, c}
			switch {
			case here && t == hole:
				b.WriteString("X")
			case here && t == goal:
				b.WriteString("√")
			case here:
				b.WriteString("P")
			case t == hole:
				b.WriteString("O")
			case t == goal:
				b.WriteString("G")
			default:
				b.WriteString("_")
			}
		}
	}
	return b.String()
}

// Position returns the player's (row, column), from the top left.
func (e *Env) Position() (row, col int) { return e.pos[0], e.pos[1] }

// Map returns the map in gymnasium's notation (S, F, H, G).
func (e *Env) Map() []string {
	rows := make([]string, len(e.grid))
	for r, row := range e.grid {
		b := []byte(string(row))
		if r == e.start[0] {
			b[e.start[1]] = 'S'
		}
		rows[r] = string(b)
	}
	return rows
}

// ShortestPath returns a shortest sequence of actions from the player to
// the goal over frozen tiles, as if moves never slipped (breadth-first
// search, neighbours tried in action order so the path is deterministic);
// nil when there is none or the game is over.
func (e *Env) ShortestPath() []string {
	n := len(e.grid)
	if e.grid[e.pos[0]][e.pos[1]] != frozen {
		return nil
	}
	prev := make([]int, n*n) // the action that reached a tile, −1 unvisited
	for i := range prev {
		prev[i] = -1
	}
	from := e.pos[0]*n + e.pos[1]
	prev[from] = 4
	queue := []int{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		r, c := cur/n, cur%n
		if e.grid[r][c] == goal {
			var path []string
			for cur != from {
				a := prev[cur]
				path = append(path, Actions[a])
				r, c = r-moves[a][0], c-moves[a][1]
				cur = r*n + c
			}
			for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
				path[i], path[j] = path[j], path[i]
			}
			return path
		}
		for a, m := range moves {
			nr, nc := r+m[0], c+m[1]
			if nr < 0 || nr >= n || nc < 0 || nc >= n || prev[nr*n+nc] >= 0 || e.grid[nr][nc] == hole {
				continue
			}
			prev[nr*n+nc] = a
			queue = append(queue, nr*n+nc)
		}
	}
	return nil
}

// goalAt returns the goal's (row, column).
func (e *Env) goalAt() [2]int {
	for r, row := range e.grid {
		for c, t := range row {
			if t == goal {
				return [2]int{r, c}
			}
		}
	}
	return [2]int{-1, -1}
}
