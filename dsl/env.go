package dsl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ragen-go/ragen/envs"
	_ "github.com/ragen-go/ragen/envs/all" // every built-in environment, by name
)

// Env is what an environment defined in a cell implements: the environment
// itself and its expert, whose demonstrations the warm start learns the
// response format (and the vocabulary) from. One interface, not two: yaegi
// hands an interpreted value to compiled code through a single wrapper, so
// the trainer sees exactly the methods of the interface it was passed as.
type Env interface {
	envs.Env
	envs.Expert
}

// EnvSpec names an environment and its options. Build one with a
// constructor (Bandit, Sokoban, FrozenLake, Countdown, WebShop), NewEnv or
// Custom.
type EnvSpec struct {
	// Name of a registered environment, or the label of a custom one.
	Name string
	// Options of a registered environment, resolved (defaults filled in);
	// of a custom one, the budget options given (max_turns, ...).
	Options map[string]any

	custom func() Env
}

// EnvOption is one environment option by its registered snake_case name.
type EnvOption struct {
	Name  string
	Value any
}

// Option is any registered option by its name, for options without a
// helper: Option("hi_prob", 0.3).
func Option(name string, value any) EnvOption { return EnvOption{name, value} }

// The budget options every environment takes, a custom one included.
func MaxTurns(n int) EnvOption          { return EnvOption{envs.OptMaxTurns, n} }
func ActionsPerTurn(n int) EnvOption    { return EnvOption{envs.OptMaxActionsPerTurn, n} }
func ActionsPerEpisode(n int) EnvOption { return EnvOption{envs.OptMaxActionsPerEpisode, n} }

// Bandit: Split ("train" | "test" name pairs), arm rewards and names.
func Split(s string) EnvOption            { return EnvOption{"split", s} }
func LoReward(r float64) EnvOption        { return EnvOption{"lo_reward", r} }
func HiReward(r float64) EnvOption        { return EnvOption{"hi_reward", r} }
func HiMiss(r float64) EnvOption          { return EnvOption{"hi_miss", r} }
func HiProb(p float64) EnvOption          { return EnvOption{"hi_prob", p} }
func Arms(lo, hi string) []EnvOption      { return []EnvOption{{"lo_name", lo}, {"hi_name", hi}} }
func LoName(name string) EnvOption        { return EnvOption{"lo_name", name} }
func HiName(name string) EnvOption        { return EnvOption{"hi_name", name} }
func SearchDepth(d int) EnvOption         { return EnvOption{"search_depth", d} }
func MaxSteps(n int) EnvOption            { return EnvOption{"max_steps", n} }
func MaxResetTries(n int) EnvOption       { return EnvOption{"max_reset_tries", n} }
func Boxes(n int) EnvOption               { return EnvOption{"boxes", n} }
func Size(n int) EnvOption                { return EnvOption{"size", n} }
func FrozenProb(p float64) EnvOption      { return EnvOption{"p", p} }
func Slippery(on bool) EnvOption          { return EnvOption{"is_slippery", on} }
func SlipSuccess(p float64) EnvOption     { return EnvOption{"success_rate", p} }
func Observation(format string) EnvOption { return EnvOption{"observation_format", format} }
func MinNums(n int) EnvOption             { return EnvOption{"min_nums", n} }
func MaxNums(n int) EnvOption             { return EnvOption{"max_nums", n} }
func MaxNumber(n int) EnvOption           { return EnvOption{"max_number", n} }
func MaxTarget(n int) EnvOption           { return EnvOption{"max_target", n} }
func Ops(ops string) EnvOption            { return EnvOption{"ops", ops} }
func Products(n int) EnvOption            { return EnvOption{"products", n} }
func CatalogSeed(seed int) EnvOption      { return EnvOption{"catalog_seed", seed} }
func BinaryReward(on bool) EnvOption      { return EnvOption{"binary_reward", on} }

// Dim sets a Sokoban room's rows and columns, wall border included.
func Dim(rows, cols int) []EnvOption {
	if rows == cols {
		return []EnvOption{{"dim", rows}}
	}
	return []EnvOption{{"rows", rows}, {"cols", cols}}
}

// Bandit is the two-armed bandit (one turn, one action).
func Bandit(opts ...any) EnvSpec { return mustEnv("bandit", opts) }

// Sokoban is the box-pushing puzzle.
func Sokoban(opts ...any) EnvSpec { return mustEnv("sokoban", opts) }

// FrozenLake is the grid walk between holes.
func FrozenLake(opts ...any) EnvSpec { return mustEnv("frozenlake", opts) }

// Countdown is the arithmetic puzzle: reach the target with the numbers.
func Countdown(opts ...any) EnvSpec { return mustEnv("countdown", opts) }

// WebShop is the shopping task on a generated catalogue.
func WebShop(opts ...any) EnvSpec { return mustEnv("webshop", opts) }

func mustEnv(name string, opts []any) EnvSpec {
	s, err := NewEnv(name, opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// NewEnv is the environment registered under name with options, each an
// EnvOption or a []EnvOption (as Dim returns). An unknown environment, an
// unknown option or a value of the wrong type is an error naming it.
func NewEnv(name string, opts ...any) (EnvSpec, error) {
	spec, ok := envs.Lookup(name)
	if !ok {
		return EnvSpec{}, fmt.Errorf("unknown environment %q (registered: %s)", name, strings.Join(envs.Names(), ", "))
	}
	given, err := optionMap(name, opts)
	if err != nil {
		return EnvSpec{}, err
	}
	resolved, err := spec.Resolve(given)
	if err != nil {
		return EnvSpec{}, err
	}
	// Build one now so that an impossible value (a room of side 1) fails
	// where the environment is declared, not when training starts.
	if _, err := spec.New(resolved); err != nil {
		return EnvSpec{}, err
	}
	return EnvSpec{Name: name, Options: resolved}, nil
}

func optionMap(name string, opts []any) (map[string]any, error) {
	given := map[string]any{}
	add := func(o EnvOption) error {
		if _, dup := given[o.Name]; dup {
			return fmt.Errorf("%s: option %q given twice", name, o.Name)
		}
		given[o.Name] = o.Value
		return nil
	}
	for i, o := range opts {
		var err error
		switch o := o.(type) {
		case EnvOption:
			err = add(o)
		case []EnvOption:
			for _, x := range o {
				if err = add(x); err != nil {
					break
				}
			}
		default:
			err = fmt.Errorf("%s: option %d: want an environment option such as ragen.MaxTurns(3) (got %T)", name, i+1, o)
		}
		if err != nil {
			return nil, err
		}
	}
	return given, nil
}

// budget is the spec of a custom environment's options: the three budget
// options, with 0 meaning "as the environment describes itself".
var budget = envs.Spec{Name: "custom", Options: []envs.Option{
	{Name: envs.OptMaxActionsPerTurn, Kind: envs.Int, Default: 0},
	{Name: envs.OptMaxActionsPerEpisode, Kind: envs.Int, Default: 0},
	{Name: envs.OptMaxTurns, Kind: envs.Int, Default: 0},
}}

// Custom is an environment defined in the cell: newEnv builds one instance
// (the trainer makes one per trajectory). The label names it in runs, plots
// and the cache: change the label when you change the environment's code,
// or set Experiment.Fresh, since the cache cannot see inside newEnv.
// Options are the budget options (MaxTurns, ActionsPerTurn,
// ActionsPerEpisode); they override what the environment's Describe says.
func Custom(label string, newEnv func() Env, opts ...EnvOption) EnvSpec {
	s, err := NewCustom(label, newEnv, opts...)
	if err != nil {
		panic(err)
	}
	return s
}

// NewCustom is Custom returning its error.
func NewCustom(label string, newEnv func() Env, opts ...EnvOption) (EnvSpec, error) {
	if label == "" {
		return EnvSpec{}, fmt.Errorf("custom environment: needs a label")
	}
	if newEnv == nil {
		return EnvSpec{}, fmt.Errorf("custom environment %q: newEnv is nil", label)
	}
	given, err := optionMap(label, []any{opts})
	if err != nil {
		return EnvSpec{}, err
	}
	b := budget
	b.Name = label
	resolved, err := b.Resolve(given)
	if err != nil {
		return EnvSpec{}, err
	}
	for k := range given {
		if resolved.Int(k) < 1 {
			return EnvSpec{}, envs.OptionError(label, k, "must be at least 1 (got %d)", resolved.Int(k))
		}
	}
	return EnvSpec{Name: label, Options: given, custom: newEnv}, nil
}

// IsCustom reports whether the environment was defined in a cell.
func (s EnvSpec) IsCustom() bool { return s.custom != nil }

// String is "sokoban(boxes=1, dim=6)" with the options that differ from
// their defaults.
func (s EnvSpec) String() string {
	if s.Name == "" {
		return "<no environment>"
	}
	defaults := map[string]any{}
	if spec, ok := envs.Lookup(s.Name); ok && !s.IsCustom() {
		for _, o := range spec.Options {
			defaults[o.Name] = o.Default
		}
	}
	var parts []string
	for k, v := range s.Options {
		if d, ok := defaults[k]; !ok || d != v {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	sort.Strings(parts)
	return s.Name + "(" + strings.Join(parts, ", ") + ")"
}

// withMaxTurns returns the spec with max_turns set (Experiment.MaxTurns).
func (s EnvSpec) withMaxTurns(n int) EnvSpec {
	opts := make(map[string]any, len(s.Options)+1)
	for k, v := range s.Options {
		opts[k] = v
	}
	opts[envs.OptMaxTurns] = n
	s.Options = opts
	return s
}

// factory returns the constructor of a custom environment.
func (s EnvSpec) factory() func() (envs.Env, error) {
	o := envs.Options(s.Options)
	limits := budgetOverride{o.Int(envs.OptMaxActionsPerTurn), o.Int(envs.OptMaxActionsPerEpisode), o.Int(envs.OptMaxTurns)}
	return func() (envs.Env, error) {
		e := s.custom()
		if e == nil {
			return nil, fmt.Errorf("custom environment %q: newEnv returned nil", s.Name)
		}
		if limits == (budgetOverride{}) {
			return e, nil
		}
		return budgeted{e, limits}, nil
	}
}

// budgetOverride holds the budget options given to a custom environment;
// 0 keeps what its Describe says.
type budgetOverride struct{ perTurn, perEpisode, turns int }

// budgeted is a custom environment with its budget overridden.
type budgeted struct {
	Env
	b budgetOverride
}

func (e budgeted) Describe() envs.Description {
	d := e.Env.Describe()
	for _, f := range []struct {
		v   int
		dst *int
	}{
		{e.b.perTurn, &d.MaxActionsPerTurn}, {e.b.perEpisode, &d.MaxActionsPerEpisode}, {e.b.turns, &d.MaxTurns},
	} {
		if f.v > 0 {
			*f.dst = f.v
		}
	}
	return d
}
