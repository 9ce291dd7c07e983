package envs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DefaultFormatPenalty is added to a turn's reward when its answer is
// unparseable, empty, or names an unknown action (RAGEN: −0.1).
const DefaultFormatPenalty = -0.1

// TurnConfig sets how a response is read and scored.
type TurnConfig struct {
	// Think: responses carry <think>…</think> before <answer> (default true).
	Think bool
	// FormatPenalty is added to the turn's reward when the format is broken
	// or an action is unknown (default −0.1; 0 disables it).
	FormatPenalty float64
}

// DefaultTurnConfig returns RAGEN's settings: think mode, penalty −0.1.
func DefaultTurnConfig() TurnConfig {
	return TurnConfig{Think: true, FormatPenalty: DefaultFormatPenalty}
}

// TurnResult records one agent turn.
type TurnResult struct {
	Parsed Parsed // what the parser found in the response
	// Executed are the actions that ran, in order, in the environment's
	// spelling: the valid ones, stopped at Done and at the episode budget.
	Executed []string
	// Dropped counts valid actions that did not run because the episode
	// budget ran out or the episode ended first.
	Dropped int
	// Valid counts executed actions the environment accepted (Info.Valid);
	// Invalid counts unknown action names plus executed actions it refused.
	Valid, Invalid int
	// Effective counts executed actions that changed the state.
	Effective int
	// EnvReward is the sum of the executed actions' rewards; Penalty the
	// format penalty applied (0 or TurnConfig.FormatPenalty); Reward their sum.
	EnvReward, Penalty, Reward float64
	// Done: the episode is over after this turn, because the environment
	// ended it or (Truncated) the action budget, or in an Episode the turn
	// limit, is used up.
	Done, Truncated bool
	// Success: the environment reports the episode solved.
	Success bool
	// Metrics are the numeric facts of the last executed action (RAGEN keeps
	// the last action's info for the turn); nil when nothing ran.
	Metrics map[string]float64
	// Observation is the state after the turn.
	Observation string
	// ActionsLeft is the episode's remaining action budget after the turn.
	ActionsLeft int
}

// FormatBroken reports whether the turn earns the format penalty: the
// response does not parse, its answer has no action, or an action is unknown.
func (p Parsed) FormatBroken() bool {
	return !p.FormatOK || len(p.Valid) == 0 || p.Unknown > 0
}

// RunTurn applies one response to env: parse it with d's action names and
// per-turn maximum, run the valid actions in order until the environment
// reports Done or actionsLeft is used, sum their rewards and add the format
// penalty when FormatBroken (the valid actions still run). d is the
// description read after the episode's Reset. response is the whole
// response: when generation was forced to start with ResponsePrefix, put
// the prefix back in front first.
func RunTurn(env Env, d Description, response string, actionsLeft int, cfg TurnConfig) TurnResult {
	p := Parse(response, cfg.Think, d.Actions, d.MaxActionsPerTurn)
	r := TurnResult{Parsed: p, Invalid: p.Unknown}
	var last Info
	envDone := false
	for i, a := range p.Valid {
		if envDone || actionsLeft <= 0 {
			r.Dropped = len(p.Valid) - i
			break
		}
		s := env.Step(a)
		actionsLeft--
		r.Executed = append(r.Executed, a)
		r.EnvReward += s.Reward
		if s.Info.Valid {
			r.Valid++
		} else {
			r.Invalid++
		}
		if s.Info.Effective {
			r.Effective++
		}
		last = s.Info
		r.Metrics = s.Info.Metrics
		envDone = s.Done
	}
	if p.FormatBroken() {
		r.Penalty = cfg.FormatPenalty
	}
	r.Reward = r.EnvReward + r.Penalty
	r.ActionsLeft = actionsLeft
	r.Observation = env.Render()
	switch {
	case envDone:
		r.Done = true
		r.Success = last.Success
	case actionsLeft <= 0:
		r.Done, r.Truncated = true, true
	}
	return r
}

// Episode plays one episode turn by turn: it keeps the budgets, the turn
// count and the history. The trainer, the play command and the tests all go
// through it, so the rules live in one place.
type Episode struct {
	Env    Env
	Desc   Description // read after Reset
	Config TurnConfig
	Seed   int64

	Observation string // the current state
	Turn        int    // turns played so far
	ActionsLeft int    // remaining action budget
	Done        bool   // no more turns: ended, out of actions or of turns
	Success     bool   // the environment reports the episode solved
	Turns       []TurnResult
}

// Start resets env with seed and returns the episode at turn 0.
func Start(env Env, seed int64, cfg TurnConfig) (*Episode, error) {
	obs, err := env.Reset(seed)
	if err != nil {
		return nil, err
	}
	d := env.Describe()
	return &Episode{Env: env, Desc: d, Config: cfg, Seed: seed, Observation: obs, ActionsLeft: d.MaxActionsPerEpisode}, nil
}

// Step plays one turn with the agent's response. Reaching Desc.MaxTurns
// ends the episode, truncated, as the action budget does.
func (e *Episode) Step(response string) (TurnResult, error) {
	if e.Done {
		return TurnResult{}, fmt.Errorf("episode is over after %d turns", e.Turn)
	}
	r := RunTurn(e.Env, e.Desc, response, e.ActionsLeft, e.Config)
	e.Turn++
	e.ActionsLeft = r.ActionsLeft
	e.Observation = r.Observation
	if !r.Done && e.Desc.MaxTurns > 0 && e.Turn >= e.Desc.MaxTurns {
		r.Done, r.Truncated = true, true
	}
	e.Done, e.Success = r.Done, r.Success
	e.Turns = append(e.Turns, r)
	return r, nil
}

// Return is the episode's total reward: the sum of its turn rewards,
// format penalties included.
func (e *Episode) Return() float64 {
	var s float64
	for _, r := range e.Turns {
		s += r.Reward
	}
	return s
}

// Summary describes the turn in a few lines for people: the transcript
// golden files and the play command print it.
func (r TurnResult) Summary() string {
	var b strings.Builder
	p := r.Parsed
	if !p.FormatOK {
		b.WriteString("parse: format broken (no <think>…</think><answer>…</answer>)\n")
	} else {
		fmt.Fprintf(&b, "parse: actions [%s]", strings.Join(p.Actions, " | "))
		if p.Unknown > 0 {
			fmt.Fprintf(&b, ", %d unknown", p.Unknown)
		}
		if p.Cut > 0 {
			fmt.Fprintf(&b, ", %d cut by the per-turn limit", p.Cut)
		}
		if len(p.Actions) == 0 {
			b.WriteString(", empty answer")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "ran: [%s]", strings.Join(r.Executed, " | "))
	if r.Dropped > 0 {
		fmt.Fprintf(&b, ", %d dropped", r.Dropped)
	}
	fmt.Fprintf(&b, "; valid %d, invalid %d, effective %d\n", r.Valid, r.Invalid, r.Effective)
	fmt.Fprintf(&b, "reward: %s", FormatReward(r.Reward))
	if r.Penalty != 0 {
		fmt.Fprintf(&b, " (environment %s, format penalty %s)", FormatReward(r.EnvReward), FormatReward(r.Penalty))
	}
	fmt.Fprintf(&b, "; actions left %d", r.ActionsLeft)
	switch {
	case r.Done && r.Success:
		b.WriteString("; done: success")
	case r.Truncated:
		b.WriteString("; done: out of budget")
	case r.Done:
		b.WriteString("; done: failed")
	}
	b.WriteString("\n")
	if len(r.Metrics) > 0 {
		keys := make([]string, 0, len(r.Metrics))
		for k := range r.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("metrics:")
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%s", k, strconv.FormatFloat(r.Metrics[k], 'g', 6, 64))
		}
		b.WriteString("\n")
	}
	return b.String()
}
