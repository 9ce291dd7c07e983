package sokoban

import "github.com/ragen-go/ragen/envs"

// Name is the registry name.
const Name = "sokoban"

func init() {
	d := DefaultConfig()
	envs.Register(envs.Spec{
		Name:    Name,
		Summary: "push every box onto a target in a generated walled room (gym-sokoban levels); 6x6 with one box by default",
		Options: append([]envs.Option{
			{Name: "dim", Kind: envs.Int, Default: d.Rows, Doc: "side of a square room including its wall border, in [3, 32]"},
			{Name: "rows", Kind: envs.Int, Default: 0, Doc: "rows of the room including its border (0: dim)"},
			{Name: "cols", Kind: envs.Int, Default: 0, Doc: "columns of the room including its border (0: dim)"},
			{Name: "boxes", Kind: envs.Int, Default: d.Boxes, Doc: "boxes (and targets) in the room, at least 1"},
			{Name: "search_depth", Kind: envs.Int, Default: d.SearchDepth, Doc: "depth limit of the reverse-play search that scatters the boxes, at least 2"},
			{Name: "max_steps", Kind: envs.Int, Default: d.MaxSteps, Doc: "actions after which the environment ends the episode"},
			{Name: "max_reset_tries", Kind: envs.Int, Default: d.MaxResetTries, Doc: "derived seeds tried when a seed yields no usable level"},
			envs.ObservationFormatOption("the room as a grid of symbols, as (row, column) lists of walls, targets, boxes and the player, or both"),
		}, envs.BudgetOptions(d.MaxActionsPerTurn, d.MaxActionsPerEpisode, d.MaxTurns)...),
		New: func(o envs.Options) (envs.Env, error) {
			if dim := o.Int("dim"); dim < 3 || dim > maxDim {
				return nil, envs.OptionError(Name, "dim", "must be in [3, %d] (got %d); a room needs a wall border around at least one floor cell", maxDim, dim)
			}
			c := Config{
				Rows: o.Int("dim"), Cols: o.Int("dim"), Boxes: o.Int("boxes"), SearchDepth: o.Int("search_depth"),
				MaxSteps: o.Int("max_steps"), MaxResetTries: o.Int("max_reset_tries"),
				Format:               o.String(envs.OptObservationFormat),
				MaxActionsPerTurn:    o.Int(envs.OptMaxActionsPerTurn),
				MaxActionsPerEpisode: o.Int(envs.OptMaxActionsPerEpisode),
				MaxTurns:             o.Int(envs.OptMaxTurns),
			}
			if r := o.Int("rows"); r != 0 {
				c.Rows = r
			}
			if k := o.Int("cols"); k != 0 {
				c.Cols = k
			}
			e, err := New(c)
			if err != nil {
				return nil, err // not a typed nil inside the interface
			}
			return e, nil
		},
	})
}
