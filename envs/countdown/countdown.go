package countdown

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/ragen-go/ragen/envs"
)

// Name is the registry name.
const Name = "countdown"

// Rewards, as in RAGEN.
const (
	RewardCorrect = 1.0
	RewardFormat  = 0.1
)

// Bounds that keep the solver exact in int64 and fast (see rat).
const (
	MaxNums   = 5
	MaxNumber = 1000
	MaxTarget = 1000000
)

// Config sets the instances.
type Config struct {
	MinNums   int    // fewest numbers per instance (default 3, at least 2)
	MaxNums   int    // most numbers per instance (default 4, at most 5)
	MaxNumber int    // numbers are drawn from [1, MaxNumber] (default 99, at most 1000)
	MaxTarget int    // targets lie in [1, MaxTarget] (default 100)
	Ops       string // operators a solution may need, a subset of "+-*/" (default "+-")
}

// DefaultConfig returns instances like RAGEN's data: 3 or 4 numbers below
// 100, a target up to 100 reachable with + and −.
func DefaultConfig() Config {
	return Config{MinNums: 3, MaxNums: 4, MaxNumber: 99, MaxTarget: 100, Ops: "+-"}
}

// Validate reports the first impossible field.
func (c Config) Validate() error {
	switch {
	case c.MinNums < 2:
		return envs.OptionError(Name, "min_nums", "must be at least 2 (got %d)", c.MinNums)
	case c.MaxNums > MaxNums:
		return envs.OptionError(Name, "max_nums", "must be at most %d, the solver's limit (got %d)", MaxNums, c.MaxNums)
	case c.MaxNums < c.MinNums:
		return envs.OptionError(Name, "max_nums", "must be at least min_nums = %d (got %d)", c.MinNums, c.MaxNums)
	case c.MaxNumber < 1 || c.MaxNumber > MaxNumber:
		return envs.OptionError(Name, "max_number", "must be in [1, %d] (got %d)", MaxNumber, c.MaxNumber)
	case c.MaxTarget < 1 || c.MaxTarget > MaxTarget:
		return envs.OptionError(Name, "max_target", "must be in [1, %d] (got %d)", MaxTarget, c.MaxTarget)
	case !validOps(c.Ops):
		return envs.OptionError(Name, "ops", `must be a non-empty set of the operators + - * / such as "+-*/" (got %q)`, c.Ops)
	}
	return nil
}

func init() {
	d := DefaultConfig()
	envs.Register(envs.Spec{
		Name:    Name,
		Summary: "combine the given numbers with + - * / into an expression equal to the target; one turn",
		Options: []envs.Option{
			{Name: "min_nums", Kind: envs.Int, Default: d.MinNums, Doc: "fewest numbers per instance, at least 2"},
			{Name: "max_nums", Kind: envs.Int, Default: d.MaxNums, Doc: "most numbers per instance, at most 5"},
			{Name: "max_number", Kind: envs.Int, Default: d.MaxNumber, Doc: "numbers are drawn from [1, max_number], at most 1000"},
			{Name: "max_target", Kind: envs.Int, Default: d.MaxTarget, Doc: "targets lie in [1, max_target], at most 1000000"},
			{Name: "ops", Kind: envs.String, Default: d.Ops, Doc: `operators a solution may need: "+-" as RAGEN's data, "+-*/" for any`},
		},
		New: func(o envs.Options) (envs.Env, error) {
			return New(Config{MinNums: o.Int("min_nums"), MaxNums: o.Int("max_nums"),
				MaxNumber: o.Int("max_number"), MaxTarget: o.Int("max_target"), Ops: o.String("ops")})
		},
	})
}

// Env is one Countdown game.
type Env struct {
	cfg    Config
	nums   []int
	target int
	answer string  // the answer given, "" before the step
	reward float64 // its reward
	done   bool
}

// New returns a game reset with seed 0.
func New(c Config) (*Env, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	e := &Env{cfg: c}
	if _, err := e.Reset(0); err != nil {
		return nil, err
	}
	return e, nil
}

// Instance returns the numbers and the target.
func (e *Env) Instance() (nums []int, target int) { return slices.Clone(e.nums), e.target }

// Describe implements envs.Env.
func (e *Env) Describe() envs.Description {
	return envs.Description{
		Name: Name,
		Instruction: "You are playing Countdown. Combine the given numbers into an arithmetic expression that equals the target. " +
			"Use every number exactly once; you may use + - * / and parentheses. " +
			"Answer with the expression alone, without \"=\" and the result, for example <answer>(7 - 2) * 3</answer>.",
		MaxActionsPerTurn:    1,
		MaxActionsPerEpisode: 1,
		MaxTurns:             1,
	}
}

// maxDraws bounds redraws of the numbers when no target is reachable
// (rare: only tiny max_target or max_number make it happen).
const maxDraws = 1000

// Reset implements envs.Env: draw numbers and a reachable target.
func (e *Env) Reset(seed int64) (string, error) {
	rng := envs.NewRand(seed)
	e.answer, e.reward, e.done = "", 0, false
	for try := 0; try < maxDraws; try++ {
		k := e.cfg.MinNums + rng.Intn(e.cfg.MaxNums-e.cfg.MinNums+1)
		nums := make([]int, k)
		for i := range nums {
			nums[i] = 1 + rng.Intn(e.cfg.MaxNumber)
		}
		targets := Reachable(nums, e.cfg.Ops, e.cfg.MaxTarget)
		if len(targets) == 0 {
			continue
		}
		e.nums, e.target = nums, targets[rng.Intn(len(targets))]
		return e.Render(), nil
	}
	return "", fmt.Errorf("%s: no reachable target in [1, %d] in %d draws of numbers up to %d with %q",
		Name, e.cfg.MaxTarget, maxDraws, e.cfg.MaxNumber, e.cfg.Ops)
}

// Score returns the reward of answer for numbers nums and target, and
// whether the answer parses as an expression.
func Score(answer string, nums []int, target int) (reward float64, parses bool) {
	if !slices.Equal(sortedInts(digitRuns(answer)), sortedInts(nums)) {
		_, _, err := Eval(answer)
		return 0, err == nil
	}
	v, _, err := Eval(answer)
	if err != nil {
		return RewardFormat, false
	}
	if v.Cmp(new(big.Rat).SetInt64(int64(target))) == 0 {
		return RewardCorrect, true
	}
	return RewardFormat, true
}

// Step implements envs.Env: the action is the answer's expression.
func (e *Env) Step(action string) envs.StepResult {
	if e.done {
		return envs.StepResult{Observation: e.Render(), Done: true}
	}
	r, parses := Score(action, e.nums, e.target)
	e.answer, e.reward, e.done = action, r, true
	return envs.StepResult{Observation: e.Render(), Reward: r, Done: true,
		Info: envs.Info{Success: r == RewardCorrect, Valid: parses, Effective: r > 0}}
}

// Render implements envs.Env.
func (e *Env) Render() string {
	s := fmt.Sprintf("Target: %d\nNumbers: %s", e.target, joinInts(e.nums))
	if e.done {
		verdict := "uses other numbers than the given ones"
		switch e.reward {
		case RewardCorrect:
			verdict = "is correct"
		case RewardFormat:
			verdict = "uses the right numbers but does not equal the target"
		}
		s += fmt.Sprintf("\nYour answer %s %s: reward %s.", strconv.Quote(oneLine(e.answer)), verdict, envs.FormatReward(e.reward))
	}
	return s
}

// digitRuns returns the integers written in s (each maximal run of ASCII
// digits), as RAGEN's \d+ finds them; runs too long for an int count as -1.
func digitRuns(s string) []int {
	var out []int
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[i:j])
		if err != nil {
			n = -1
		}
		out = append(out, n)
		i = j
	}
	return out
}

func sortedInts(x []int) []int {
	y := slices.Clone(x)
	slices.Sort(y)
	return y
}

func joinInts(x []int) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}

// oneLine shortens an answer for the rendered state.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}
