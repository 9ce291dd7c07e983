package envs

import "slices"

// OptObservationFormat is RAGEN v2's observation_format for the grid games
// (FrozenLake, Sokoban): the state as a grid of symbols ("grid", the
// default), as (row, column) lists ("coord"), or both ("grid_coord").
const OptObservationFormat = "observation_format"

// ObservationFormats are the values OptObservationFormat takes.
var ObservationFormats = []string{"grid", "coord", "grid_coord"}

// ObservationFormatOption declares OptObservationFormat with the default
// "grid"; doc says what the lists hold in this game.
func ObservationFormatOption(doc string) Option {
	return Option{Name: OptObservationFormat, Kind: String, Default: "grid", Choices: ObservationFormats, Doc: doc}
}

// CheckObservationFormat reports a format that is not one of
// ObservationFormats ("" stands for "grid").
func CheckObservationFormat(env, format string) error {
	if format != "" && !slices.Contains(ObservationFormats, format) {
		return OptionError(env, OptObservationFormat, `must be "grid", "coord" or "grid_coord" (got %q)`, format)
	}
	return nil
}

// RenderObservation lays out a state in format: the grid, the coordinate
// lists, or both under headings.
func RenderObservation(format string, coords, grid func() string) string {
	switch format {
	case "coord":
		return coords()
	case "grid_coord":
		return "Positions:\n" + coords() + "\nGrid:\n" + grid()
	}
	return grid()
}
