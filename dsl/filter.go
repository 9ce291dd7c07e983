package dsl

import (
	"fmt"
	"math"

	"github.com/expr-lang/expr/vm"

	"github.com/ragen-go/ragen/engine/algo"
)

// GroupScore is the record a filter expression reads: statistics of one
// group's rewards (the experiment's reward, the reward expression if set).
//
//	in_group_std, std  unbiased std of the rewards (StarPO-S's metric)
//	mean, max, min     of the rewards
//	range              max − min
//	max_mean           max − mean
//	success_rate       fraction of members that succeeded
//	size               members
//	rewards            the members' rewards (a list, for sum(), filter() ...)
type GroupScore struct {
	InGroupStd  float64   `expr:"in_group_std"`
	Std         float64   `expr:"std"`
	Mean        float64   `expr:"mean"`
	Max         float64   `expr:"max"`
	Min         float64   `expr:"min"`
	Range       float64   `expr:"range"`
	MaxMean     float64   `expr:"max_mean"`
	SuccessRate float64   `expr:"success_rate"`
	Size        int       `expr:"size"`
	Rewards     []float64 `expr:"rewards"`
}

// FilterRule selects the groups the update learns from (StarPO-S): each
// group is scored and either the top Ratio of groups is kept or those
// scoring above a threshold. The zero value keeps the algorithm's own
// filter (Algo.FilterMetric and Algo.FilterRatio).
type FilterRule struct {
	// Expr scores a group: a built-in metric of the trainer (std, std_rev,
	// max_mean, range) or an expression over GroupScore; "" = Algo.FilterMetric.
	Expr string
	// Ratio is the fraction of groups kept, in (0, 1]; 0 = Algo.FilterRatio.
	Ratio float64
	// Above, when set, keeps every group scoring above it, however many.
	Above *float64
	// DropZeroStd drops groups whose rewards are all equal first (DAPO).
	DropZeroStd bool

	prog *vm.Program
	from string // the expression prog was compiled from
}

// FilterOption is a keep rule for Filter: TopP, Above, DropZeroStd.
type FilterOption func(*FilterRule)

// TopP keeps the fraction p of the groups with the highest scores.
func TopP(p float64) FilterOption { return func(f *FilterRule) { f.Ratio = p } }

// Above keeps the groups scoring above x.
func Above(x float64) FilterOption { return func(f *FilterRule) { f.Above = &x } }

// DropZeroStd drops groups whose rewards are all equal before ranking.
func DropZeroStd() FilterOption { return func(f *FilterRule) { f.DropZeroStd = true } }

// Filter is a group filter: a score (a built-in metric name or an
// expression over GroupScore) and keep rules. It panics with the compile
// error (see CompileFilter).
func Filter(score string, opts ...FilterOption) FilterRule {
	f, err := CompileFilter(score, opts...)
	if err != nil {
		panic(err)
	}
	return f
}

// CompileFilter is Filter returning its error.
func CompileFilter(score string, opts ...FilterOption) (FilterRule, error) {
	f := FilterRule{Expr: score}
	for _, o := range opts {
		o(&f)
	}
	if err := f.compile(); err != nil {
		return FilterRule{}, err
	}
	return f, nil
}

// builtinMetric maps a score name to the trainer's own filter metric.
func builtinMetric(score string) (string, bool) {
	switch score {
	case algo.FilterStd, "in_group_std":
		return algo.FilterStd, true
	case algo.FilterStdRev, algo.FilterMaxMean, algo.FilterRange:
		return score, true
	}
	return "", false
}

// compile compiles Expr unless it is empty, a built-in metric, or prog's
// source already (an Expr set by Sweep is compiled again).
func (f *FilterRule) compile() error {
	if _, ok := builtinMetric(f.Expr); ok || f.Expr == "" {
		f.prog, f.from = nil, ""
		return nil
	}
	if f.prog != nil && f.from == f.Expr {
		return nil
	}
	prog, err := compileNumeric("filter", f.Expr, GroupScore{})
	if err != nil {
		return err
	}
	f.prog, f.from = prog, f.Expr
	return nil
}

// score evaluates the rule's expression on one group.
func (f *FilterRule) score(rewards []float64, successRate float64) (float64, error) {
	g := groupStats(rewards)
	rec := &GroupScore{
		InGroupStd: g.Std, Std: g.Std, Mean: g.Mean, Max: g.Max, Min: g.Min,
		Range: g.Max - g.Min, MaxMean: g.Max - g.Mean, SuccessRate: successRate,
		Size: g.Size, Rewards: rewards,
	}
	return runNumeric(f.prog, rec)
}

// String is the rule as Filter would be called.
func (f FilterRule) String() string {
	s := fmt.Sprintf("%q", f.Expr)
	if f.Ratio > 0 {
		s += fmt.Sprintf(", TopP(%g)", f.Ratio)
	}
	if f.Above != nil {
		s += fmt.Sprintf(", Above(%g)", *f.Above)
	}
	if f.DropZeroStd {
		s += ", DropZeroStd()"
	}
	return "Filter(" + s + ")"
}

// apply sets the algorithm's filter fields; the expression, if any, is
// scored by the trainer's GroupScore hook (see scorer).
func (f *FilterRule) apply(c *algo.Config) error {
	if m, ok := builtinMetric(f.Expr); ok {
		c.FilterMetric = m
	}
	if f.Ratio != 0 {
		if !(f.Ratio > 0 && f.Ratio <= 1) {
			return fmt.Errorf("Filter.Ratio: must be in (0, 1] (got %v)", f.Ratio)
		}
		c.FilterRatio = f.Ratio
	}
	if f.Above != nil {
		if math.IsNaN(*f.Above) {
			return fmt.Errorf("Filter.Above: must be a number (got NaN)")
		}
		a := *f.Above
		c.FilterAbove = &a
		if f.Ratio == 0 {
			c.FilterRatio = 1 // a threshold alone keeps however many pass
		}
	}
	c.FilterDropZeroStd = c.FilterDropZeroStd || f.DropZeroStd
	return nil
}
