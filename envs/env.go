package envs

// Env is one environment instance: a game the agent plays through text.
//
// The interface is small and free of generics on purpose: a notebook user
// implements it in interpreted Go (yaegi) to define an environment in a cell.
// An Env need not be safe for concurrent use; the trainer creates one
// instance per trajectory.
//
// One turn of the agent may carry several actions ("Up || Up || Left"); the
// shared turn runner (RunTurn) parses the response, maps the action names and
// calls Step once per action, in order, stopping when Step reports Done.
type Env interface {
	// Describe returns the text and limits the prompt is built from. It may
	// change only at Reset (Bandit draws its arm names there), so callers
	// read it after each Reset.
	Describe() Description

	// Reset starts a new episode. The same seed gives the same initial state.
	// It returns the first observation (the rendered state).
	Reset(seed int64) (observation string, err error)

	// Step applies one action: for environments with a fixed action set
	// (Description.Actions non-empty) it is one of those names, spelled
	// exactly as listed; for language environments (Countdown, WebShop) it is
	// the raw answer text.
	Step(action string) StepResult

	// Render returns the current state as text, as the agent sees it.
	Render() string
}

// Description is what the prompt says about an environment.
type Description struct {
	// Name of the environment, e.g. "sokoban".
	Name string
	// Instruction explains the task and rules in a few sentences.
	Instruction string
	// Legend gives the meaning of each symbol of the rendered state, in
	// order (for grid games); empty otherwise.
	Legend []Symbol
	// Actions lists the action names for environments with a fixed action
	// set, matched case-insensitively to what the agent answers. Empty for
	// language environments, which receive the answer text as one action.
	Actions []string
	// MaxActionsPerTurn cuts each answer to this many actions (RAGEN: 5).
	MaxActionsPerTurn int
	// MaxActionsPerEpisode ends the episode (truncated) when this many
	// actions have run (RAGEN: 10 for Sokoban and FrozenLake).
	MaxActionsPerEpisode int
	// MaxTurns is the default number of agent turns per episode.
	MaxTurns int
}

// Symbol is one entry of a grid legend: "#" means "wall".
type Symbol struct {
	Glyph   string
	Meaning string
}

// StepResult is what one action did.
type StepResult struct {
	Observation string  // the state after the action, rendered
	Reward      float64 // reward of this action alone
	Done        bool    // the episode is over (solved, failed, or out of moves)
	Info        Info
}

// Info is the environment's record of one action.
type Info struct {
	// Success: the episode is solved (set on the action that solves it).
	Success bool
	// Valid: the action is legal here (a known name, a well-formed query).
	Valid bool
	// Effective: the action changed the state.
	Effective bool
	// Metrics holds any other numeric facts worth logging per action
	// (e.g. WebShop "reward", "success_find"); keys are stable names.
	Metrics map[string]float64
}
