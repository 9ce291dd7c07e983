package envs

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Kind is the type of an option value.
type Kind int

// The option kinds. Values given for an option are converted to the kind's Go
// type before the constructor sees them: int, float64, bool or string.
const (
	Int Kind = iota
	Float
	Bool
	String
)

func (k Kind) String() string {
	switch k {
	case Int:
		return "int"
	case Float:
		return "float"
	case Bool:
		return "bool"
	case String:
		return "string"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Option documents one option of an environment.
type Option struct {
	Name    string // snake_case, e.g. "max_actions_per_turn"
	Kind    Kind
	Default any    // of the kind's Go type: int, float64, bool or string
	Doc     string // one line: what it sets, its unit, its range
	// Choices, for a string option, lists the allowed values (empty: any).
	Choices []string
}

// Spec is a registered environment: its name, what it is, its options and
// how to build one.
type Spec struct {
	Name    string // as the DSL names it, e.g. "frozenlake"
	Summary string // one line for listings
	Options []Option
	// New builds an instance from the resolved options: every option of
	// Options present, of its kind's Go type. It returns an error saying why
	// when a value is impossible (a size of 1, a probability above 1).
	New func(opts Options) (Env, error)
}

// Options are resolved option values by name, as Spec.New receives them.
// The typed getters return the zero value for a name that is absent or of
// another kind; with options resolved by New that cannot happen.
type Options map[string]any

// Int returns the int option name.
func (o Options) Int(name string) int { v, _ := o[name].(int); return v }

// Float returns the float option name.
func (o Options) Float(name string) float64 { v, _ := o[name].(float64); return v }

// Bool returns the bool option name.
func (o Options) Bool(name string) bool { v, _ := o[name].(bool); return v }

// String returns the string option name.
func (o Options) String(name string) string { v, _ := o[name].(string); return v }

// OptionError is the error for an impossible option value, e.g.
// `frozenlake option size: must be at least 2 (got 1)`.
func OptionError(env, option, format string, args ...any) error {
	return fmt.Errorf("%s option %s: %s", env, option, fmt.Sprintf(format, args...))
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Spec{}
)

// Register adds an environment; subpackages call it from init. A duplicate
// or malformed spec is a programming error and panics at start-up.
func Register(s Spec) {
	if s.Name == "" || s.New == nil {
		panic("envs: Register needs a name and a constructor")
	}
	seen := map[string]bool{}
	for _, o := range s.Options {
		if seen[o.Name] {
			panic(fmt.Sprintf("envs: %s declares option %q twice", s.Name, o.Name))
		}
		seen[o.Name] = true
		if _, err := convert(o, o.Default); err != nil {
			panic(fmt.Sprintf("envs: %s option %s: bad default: %v", s.Name, o.Name, err))
		}
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic(fmt.Sprintf("envs: environment %q registered twice", s.Name))
	}
	registry[s.Name] = s
}

// Names returns the registered environment names, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the spec registered under name.
func Lookup(name string) (Spec, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// New builds the environment registered under name with the given options;
// options not given take their defaults. An unknown name or option, a value
// of the wrong type or an impossible value is an error that says which and
// lists what is valid.
func New(name string, opts map[string]any) (Env, error) {
	spec, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown environment %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	resolved, err := spec.Resolve(opts)
	if err != nil {
		return nil, err
	}
	return spec.New(resolved)
}

// Resolve checks opts against the spec's options and returns them complete,
// with defaults filled in and each value converted to its kind's Go type.
func (s Spec) Resolve(opts map[string]any) (Options, error) {
	byName := make(map[string]Option, len(s.Options))
	for _, o := range s.Options {
		byName[o.Name] = o
	}
	// Report unknown names in sorted order so the message is stable.
	given := make([]string, 0, len(opts))
	for k := range opts {
		given = append(given, k)
	}
	sort.Strings(given)
	out := make(Options, len(s.Options))
	for _, k := range given {
		o, ok := byName[k]
		if !ok {
			return nil, fmt.Errorf("%s: unknown option %q (valid: %s)", s.Name, k, s.optionNames())
		}
		v, err := convert(o, opts[k])
		if err != nil {
			return nil, fmt.Errorf("%s option %s: %v", s.Name, k, err)
		}
		out[k] = v
	}
	for _, o := range s.Options {
		if _, ok := out[o.Name]; !ok {
			out[o.Name] = o.Default
		}
	}
	return out, nil
}

func (s Spec) optionNames() string {
	if len(s.Options) == 0 {
		return "none"
	}
	names := make([]string, len(s.Options))
	for i, o := range s.Options {
		names[i] = o.Name
	}
	return strings.Join(names, ", ")
}

// convert returns v as the Go type of o's kind. JSON and the DSL may give a
// float for an int (3.0) or an int for a float: an integral float64 is
// accepted for an int, any integer for a float.
func convert(o Option, v any) (any, error) {
	got := fmt.Sprintf("%T %v", v, v)
	switch o.Kind {
	case Int:
		switch x := v.(type) {
		case int:
			return x, nil
		case int64:
			if x >= math.MinInt && x <= math.MaxInt {
				return int(x), nil
			}
		case int32:
			return int(x), nil
		case float64:
			if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
				return int(x), nil
			}
			return nil, fmt.Errorf("want an integer, got %v", x)
		}
	case Float:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		case int:
			return float64(x), nil
		case int64:
			return float64(x), nil
		case int32:
			return float64(x), nil
		}
	case Bool:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case String:
		if x, ok := v.(string); ok {
			if len(o.Choices) > 0 && !slices.Contains(o.Choices, x) {
				return nil, fmt.Errorf("want one of %s, got %q", strings.Join(o.Choices, ", "), x)
			}
			return x, nil
		}
	default:
		return nil, fmt.Errorf("unknown kind %v", o.Kind)
	}
	return nil, fmt.Errorf("want %v, got %s", o.Kind, got)
}

// The standard budget options. Environments include them with their own
// defaults through BudgetOptions and read them back with Budget.
const (
	OptMaxActionsPerTurn    = "max_actions_per_turn"
	OptMaxActionsPerEpisode = "max_actions_per_episode"
	OptMaxTurns             = "max_turns"
)

// BudgetOptions returns the three standard budget options with the given
// defaults (RAGEN: 5 per turn, 10 per episode, 5 turns for grid games).
func BudgetOptions(perTurn, perEpisode, turns int) []Option {
	return []Option{
		{Name: OptMaxActionsPerTurn, Kind: Int, Default: perTurn, Doc: "actions kept from one answer; the rest are cut before they run"},
		{Name: OptMaxActionsPerEpisode, Kind: Int, Default: perEpisode, Doc: "actions per episode; the episode ends (truncated) when they are used"},
		{Name: OptMaxTurns, Kind: Int, Default: turns, Doc: "agent turns per episode"},
	}
}

// Budget reads the standard budget options into d, checking that each is at
// least 1.
func Budget(env string, o Options, d *Description) error {
	for _, f := range []struct {
		name string
		dst  *int
	}{
		{OptMaxActionsPerTurn, &d.MaxActionsPerTurn},
		{OptMaxActionsPerEpisode, &d.MaxActionsPerEpisode},
		{OptMaxTurns, &d.MaxTurns},
	} {
		v := o.Int(f.name)
		if v < 1 {
			return OptionError(env, f.name, "must be at least 1 (got %d)", v)
		}
		*f.dst = v
	}
	return nil
}

// ParseOptionValue converts the text form of an option value (from a command
// line, key=value) to the option's kind.
func ParseOptionValue(o Option, text string) (any, error) {
	var v any
	var err error
	switch o.Kind {
	case Int:
		v, err = strconv.Atoi(text)
	case Float:
		v, err = strconv.ParseFloat(text, 64)
	case Bool:
		switch strings.ToLower(text) {
		case "true", "1", "yes", "on":
			v = true
		case "false", "0", "no", "off":
			v = false
		default:
			err = fmt.Errorf("not a bool")
		}
	case String:
		v = text
	}
	if err != nil {
		return nil, fmt.Errorf("option %s: want %v, got %q", o.Name, o.Kind, text)
	}
	return v, nil
}
