package dsl

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/ragen-go/ragen/engine/rollout"
)

// Trajectory is the record a reward expression reads, by the names in its
// expr tags:
//
//	reward           the default reward: env_reward + penalty
//	env_reward       sum of the executed actions' rewards
//	penalty          sum of the format penalties (≤ 0)
//	success          the environment reports the episode solved
//	turns            list of Turn records (below)
//	num_turns        len(turns)
//	actions          every executed action, in order (list of strings)
//	valid_actions    executed actions the environment accepted
//	invalid_actions  unknown action names plus refused actions
//	think_tokens     tokens inside <think> over all turns
//	answer_tokens    tokens inside <answer> over all turns
//	format_ok        every turn's response had the required tags
//	group            statistics of the trajectory's group (below)
//
// Integers are int; expr-lang's arithmetic mixes them with floats freely.
type Trajectory struct {
	Reward         float64  `expr:"reward"`
	EnvReward      float64  `expr:"env_reward"`
	Penalty        float64  `expr:"penalty"`
	Success        bool     `expr:"success"`
	Turns          []Turn   `expr:"turns"`
	NumTurns       int      `expr:"num_turns"`
	Actions        []string `expr:"actions"`
	ValidActions   int      `expr:"valid_actions"`
	InvalidActions int      `expr:"invalid_actions"`
	ThinkTokens    int      `expr:"think_tokens"`
	AnswerTokens   int      `expr:"answer_tokens"`
	FormatOK       bool     `expr:"format_ok"`
	Group          Group    `expr:"group"`
}

// Turn is one turn of a Trajectory record (turns[i].reward, ...).
type Turn struct {
	Reward       float64  `expr:"reward"`     // env_reward + penalty
	EnvReward    float64  `expr:"env_reward"` // the executed actions' rewards
	Penalty      float64  `expr:"penalty"`    // the format penalty, 0 or negative
	Actions      []string `expr:"actions"`    // executed actions
	Valid        int      `expr:"valid"`
	Invalid      int      `expr:"invalid"`
	Effective    int      `expr:"effective"` // actions that changed the state
	Tokens       int      `expr:"tokens"`    // sampled tokens
	ThinkTokens  int      `expr:"think_tokens"`
	AnswerTokens int      `expr:"answer_tokens"`
	FormatOK     bool     `expr:"format_ok"`
	Closed       bool     `expr:"closed"` // ended with </answer>, not cut by the token limit
	Success      bool     `expr:"success"`
	Answer       string   `expr:"answer"`
}

// Group holds statistics of the default rewards (reward) of a trajectory's
// group, itself included: group.mean, group.std (unbiased), group.max,
// group.min, group.success_rate, group.size.
type Group struct {
	Mean        float64 `expr:"mean"`
	Std         float64 `expr:"std"`
	Max         float64 `expr:"max"`
	Min         float64 `expr:"min"`
	SuccessRate float64 `expr:"success_rate"`
	Size        int     `expr:"size"`
}

// RewardExpr is a compiled reward expression. The zero value means the
// default reward (the sum of turn rewards, format penalties included).
type RewardExpr struct {
	// Source is the expression as written.
	Source string
	prog   *vm.Program
	from   string // the source prog was compiled from
}

// Reward compiles a reward expression over a Trajectory record, e.g.
// `success ? 10 : sum(turns, .reward) - 0.1 * invalid_actions`. The result
// must be a number. It panics with the compile error (see CompileReward).
func Reward(src string) RewardExpr {
	r, err := CompileReward(src)
	if err != nil {
		panic(err)
	}
	return r
}

// CompileReward compiles a reward expression. An unknown name, a wrong type
// or a non-numeric result is an *ExprError showing the line, the column and
// a caret under it.
func CompileReward(src string) (RewardExpr, error) {
	prog, err := compileNumeric("reward", src, Trajectory{})
	if err != nil {
		return RewardExpr{}, err
	}
	return RewardExpr{Source: src, prog: prog, from: src}, nil
}

// compile compiles Source unless prog is its program already (a
// RewardExpr whose Source was set by Sweep is compiled again).
func (r *RewardExpr) compile() error {
	if r.Source == "" || (r.prog != nil && r.from == r.Source) {
		return nil
	}
	c, err := CompileReward(r.Source)
	if err != nil {
		return err
	}
	*r = c
	return nil
}

// IsZero reports whether no expression is set.
func (r RewardExpr) IsZero() bool { return r.Source == "" }

// Eval computes the reward of a record.
func (r RewardExpr) Eval(t *Trajectory) (float64, error) {
	if r.prog == nil {
		return t.Reward, nil
	}
	return runNumeric(r.prog, t)
}

// ExprError is a reward or filter expression that does not compile: the
// expression's kind ("reward", "filter"), the position (1-based line and
// column in the expression) and expr-lang's message with the source line
// and a caret.
type ExprError struct {
	Kind         string
	Line, Column int
	Err          error
}

func (e *ExprError) Error() string { return fmt.Sprintf("%s expression: %v", e.Kind, e.Err) }
func (e *ExprError) Unwrap() error { return e.Err }

// ExprPosition is the error's line and column within the expression's
// source. The kernel uses it to point at the column in the cell, under the
// string literal that holds the expression.
func (e *ExprError) ExprPosition() (line, column int) { return e.Line, e.Column }

func compileNumeric(kind, src string, env any) (*vm.Program, error) {
	return compileAs(kind, src, env, expr.AsFloat64())
}

// compileAs compiles an expression over env whose result must be of the
// type as asks for (expr.AsFloat64, expr.AsBool).
func compileAs(kind, src string, env any, as expr.Option) (*vm.Program, error) {
	if strings.TrimSpace(src) == "" {
		// Position 1:1, like every other error, for the kernel's caret.
		return nil, &ExprError{Kind: kind, Line: 1, Column: 1, Err: errors.New("empty expression")}
	}
	prog, err := expr.Compile(src, expr.Env(env), as)
	if err != nil {
		e := &ExprError{Kind: kind, Err: err}
		var fe *file.Error
		if errors.As(err, &fe) {
			// expr-lang names the Go types of the records; a cell knows
			// them as the records of the expression.
			fe.Message = recordNames.Replace(fe.Message)
		}
		if fe == nil || fe.Snippet == "" {
			// A wrong result type has no position: show the whole
			// expression with the caret at its start.
			fe = (&file.Error{Location: file.Location{From: 0, To: len(src)}, Message: err.Error()}).Bind(file.NewSource(src))
			e.Err = fe
		}
		e.Line, e.Column = fe.Line, fe.Column+1
		return nil, e
	}
	return prog, nil
}

var recordNames = strings.NewReplacer(
	"dsl.Trajectory", "trajectory", "dsl.Turn", "turn", "dsl.GroupScore", "group", "dsl.Group", "group", "dsl.MaskToken", "token")

// runNumeric runs a program and insists on a finite number: expr-lang
// divides integers as floats, so x/0 gives ±Inf or NaN rather than an
// error; both are reported as errors here.
func runNumeric(prog *vm.Program, env any) (v float64, err error) {
	out, err := expr.Run(prog, env)
	if err != nil {
		return 0, err
	}
	v, ok := out.(float64)
	if !ok {
		return 0, fmt.Errorf("result is %T %v, not a number", out, out)
	}
	switch {
	case math.IsNaN(v):
		return 0, errors.New("result is NaN (0/0?)")
	case math.IsInf(v, 0):
		return 0, fmt.Errorf("result is %v (division by zero?)", v)
	}
	return v, nil
}

// Record builds the expression record of a trajectory and its group.
func Record(t *rollout.Trajectory, group []*rollout.Trajectory) *Trajectory {
	r := &Trajectory{Success: t.Success, NumTurns: len(t.Turns), FormatOK: true}
	r.Turns = make([]Turn, len(t.Turns))
	for i, tu := range t.Turns {
		r.Turns[i] = Turn{
			Reward: tu.Reward, EnvReward: tu.EnvReward, Penalty: tu.Penalty,
			Actions: tu.Executed, Valid: tu.Valid, Invalid: tu.Invalid, Effective: tu.Effective,
			Tokens: tu.Tokens, ThinkTokens: tu.ThinkTokens, AnswerTokens: tu.AnswerTokens,
			FormatOK: tu.Parsed.FormatOK, Closed: tu.Closed, Success: tu.Success, Answer: tu.Parsed.Answer,
		}
		r.Reward += tu.Reward
		r.EnvReward += tu.EnvReward
		r.Penalty += tu.Penalty
		r.Actions = append(r.Actions, tu.Executed...)
		r.ValidActions += tu.Valid
		r.InvalidActions += tu.Invalid
		r.ThinkTokens += tu.ThinkTokens
		r.AnswerTokens += tu.AnswerTokens
		r.FormatOK = r.FormatOK && tu.Parsed.FormatOK
	}
	if r.Actions == nil {
		r.Actions = []string{}
	}
	rewards := make([]float64, len(group))
	succ := 0
	for i, g := range group {
		rewards[i] = g.Reward()
		if g.Success {
			succ++
		}
	}
	r.Group = groupStats(rewards)
	if len(group) > 0 {
		r.Group.SuccessRate = float64(succ) / float64(len(group))
	}
	return r
}

// groupStats are the statistics of a group's rewards; the std is unbiased
// (n − 1), as the trainer's filter and torch.std, and 0 for one member.
func groupStats(xs []float64) Group {
	g := Group{Size: len(xs)}
	if len(xs) == 0 {
		return g
	}
	g.Max, g.Min = xs[0], xs[0]
	for _, x := range xs {
		g.Mean += x
		g.Max = math.Max(g.Max, x)
		g.Min = math.Min(g.Min, x)
	}
	g.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - g.Mean) * (x - g.Mean)
		}
		g.Std = math.Sqrt(ss / float64(len(xs)-1))
	}
	return g
}
