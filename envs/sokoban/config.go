package sokoban

import "github.com/ragen-go/ragen/envs"

// Config sets up a Sokoban environment. The zero value is not valid; start
// from DefaultConfig, which is RAGEN's SimpleSokoban tag.
type Config struct {
	// Rows of the room including its wall border. Default 6.
	Rows int
	// Cols of the room including its wall border. Default 6.
	Cols int
	// Boxes (and targets) in the room. Default 1 (SimpleSokoban; RAGEN's
	// LargerSokoban is 8×8 with 2).
	Boxes int
	// SearchDepth limits the reverse-play search that scatters the boxes:
	// deeper finds starts further from solved. Default 300 (RAGEN's default;
	// LargerSokoban uses 10). At least 2.
	SearchDepth int
	// MaxSteps ends the episode after this many actions, solved or not
	// (gym-sokoban's max_steps). Default 100.
	MaxSteps int
	// MaxActionsPerTurn cuts each answer to this many actions. Default 5.
	MaxActionsPerTurn int
	// MaxActionsPerEpisode is the trajectory's action budget. Default 10.
	MaxActionsPerEpisode int
	// MaxTurns is the number of agent turns per episode. Default 5.
	MaxTurns int
	// MaxResetTries is how many derived seeds Reset tries before giving up
	// when a seed yields no usable level. Default 1000 (RAGEN's).
	MaxResetTries int
	// Format of the observation (RAGEN v2's observation_format): "grid"
	// (default; "" means it too), "coord" (positions as (row, column)
	// lists) or "grid_coord" (both; RAGEN v2's CoordSokoban).
	Format string
}

// DefaultConfig returns RAGEN's SimpleSokoban settings: 6×6, one box.
func DefaultConfig() Config {
	return Config{
		Rows:                 6,
		Cols:                 6,
		Boxes:                1,
		SearchDepth:          300,
		MaxSteps:             100,
		MaxActionsPerTurn:    5,
		MaxActionsPerEpisode: 10,
		MaxTurns:             5,
		MaxResetTries:        1000,
		Format:               "grid",
	}
}

// maxDim bounds the room side: the reverse-play search and the solver grow
// quickly with size, and RAGEN's largest room is 8×8.
const maxDim = 32

// Validate reports the first invalid field, naming it.
func (c Config) Validate() error {
	switch {
	case c.Rows < 3 || c.Rows > maxDim:
		return envs.OptionError(Name, "rows", "must be in [3, %d] (got %d); a room needs a wall border around at least one floor row", maxDim, c.Rows)
	case c.Cols < 3 || c.Cols > maxDim:
		return envs.OptionError(Name, "cols", "must be in [3, %d] (got %d); a room needs a wall border around at least one floor column", maxDim, c.Cols)
	case c.Boxes < 1:
		return envs.OptionError(Name, "boxes", "must be >= 1 (got %d)", c.Boxes)
	case (c.Rows-2)*(c.Cols-2) < c.Boxes+2:
		return envs.OptionError(Name, "boxes", "%d boxes do not fit in a %dx%d room: its %d inner cells must hold the boxes, the player and at least one free cell", c.Boxes, c.Rows, c.Cols, (c.Rows-2)*(c.Cols-2))
	case c.SearchDepth < 2:
		return envs.OptionError(Name, "search_depth", "must be >= 2 (got %d)", c.SearchDepth)
	case c.MaxSteps < 1:
		return envs.OptionError(Name, "max_steps", "must be >= 1 (got %d)", c.MaxSteps)
	case c.MaxActionsPerTurn < 1:
		return envs.OptionError(Name, "max_actions_per_turn", "must be >= 1 (got %d)", c.MaxActionsPerTurn)
	case c.MaxActionsPerEpisode < 1:
		return envs.OptionError(Name, "max_actions_per_episode", "must be >= 1 (got %d)", c.MaxActionsPerEpisode)
	case c.MaxTurns < 1:
		return envs.OptionError(Name, "max_turns", "must be >= 1 (got %d)", c.MaxTurns)
	case c.MaxResetTries < 1:
		return envs.OptionError(Name, "max_reset_tries", "must be >= 1 (got %d)", c.MaxResetTries)
	}
	return envs.CheckObservationFormat(Name, c.Format)
}
