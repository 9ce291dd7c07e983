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
// scoring above a threshold, or one of RAGEN v2's strategies selects them
// (Strategy: TopPLinear, TopPSoftmax, TopK, TopKAbs, MinP). The zero
// value keeps the algorithm's own filter (Algo.FilterMetric,
// Algo.FilterRatio, Algo.FilterStrategy ...).
type FilterRule struct {
	// Expr scores a group: a built-in metric of the trainer (std, std_rev,
	// max_mean, range; RAGEN v2's reward_variance, reward, reward_sum,
	// entropy, entropy_variance, length) or an expression over
	// GroupScore; "" = Algo.FilterMetric.
	Expr string
	// Ratio is the fraction of groups kept, in (0, 1]; 0 = Algo.FilterRatio.
	Ratio float64
	// Above, when set, keeps every group scoring above it, however many.
	Above *float64
	// DropZeroStd drops groups whose rewards are all equal first (DAPO).
	DropZeroStd bool

	// Strategy and Value are RAGEN v2's selection (Algo.FilterStrategy,
	// Algo.FilterValue), TopPMode its top-p mode; "" = Algo's.
	Strategy string
	Value    float64
	TopPMode string
	// Eps is linear top-p's ε (nil = Algo.FilterSelectionEps).
	Eps *float64
	// Smallest selects the lowest scores first; ExcludeZero drops the
	// groups scoring 0 first (RAGEN include_zero=False).
	Smallest    bool
	ExcludeZero bool
	// EmptyStop ends the run after that many consecutive steps whose
	// filter kept nothing (0 = never).
	EmptyStop int `train:"filter_empty_stop,manual"`

	prog *vm.Program
	from string // the expression prog was compiled from
}

// FilterOption is a keep rule for Filter: TopP, Above, DropZeroStd, and
// RAGEN v2's TopPLinear, TopPSoftmax, TopK, TopKAbs, MinP, Smallest,
// ExcludeZero, SelectionEps, StopAfterEmpty.
type FilterOption func(*FilterRule)

// TopP keeps the fraction p of the groups with the highest scores
// (StarPO-S's ratio, int(p·groups) of them; RAGEN v2's nucleus "top_p" is
// TopPLinear or TopPSoftmax).
func TopP(p float64) FilterOption { return func(f *FilterRule) { f.Ratio = p } }

// TopPLinear keeps the highest-scoring groups until their summed score
// reaches p of the total, less SelectionEps; nothing if it cannot (RAGEN
// v2's default strategy, 0.9 recommended).
func TopPLinear(p float64) FilterOption {
	return func(f *FilterRule) { f.Strategy, f.Value, f.TopPMode = algo.FilterTopP, p, algo.TopPLinear }
}

// TopPSoftmax keeps the most probable groups under softmax(score) until
// their probability reaches p.
func TopPSoftmax(p float64) FilterOption {
	return func(f *FilterRule) { f.Strategy, f.Value, f.TopPMode = algo.FilterTopP, p, algo.TopPSoftmax }
}

// TopK keeps the int(frac·groups) highest-scoring groups, at least one.
func TopK(frac float64) FilterOption {
	return func(f *FilterRule) { f.Strategy, f.Value = algo.FilterTopK, frac }
}

// TopKAbs keeps the k highest-scoring groups.
func TopKAbs(k int) FilterOption {
	return func(f *FilterRule) { f.Strategy, f.Value = algo.FilterTopKAbs, float64(k) }
}

// MinP keeps the groups scoring at least p times the best score.
func MinP(p float64) FilterOption {
	return func(f *FilterRule) { f.Strategy, f.Value = algo.FilterMinP, p }
}

// Smallest selects the lowest scores first.
func Smallest() FilterOption { return func(f *FilterRule) { f.Smallest = true } }

// ExcludeZero drops the groups whose score is 0 before selecting (RAGEN
// include_zero=False).
func ExcludeZero() FilterOption { return func(f *FilterRule) { f.ExcludeZero = true } }

// SelectionEps sets linear top-p's ε (0.01).
func SelectionEps(eps float64) FilterOption { return func(f *FilterRule) { f.Eps = &eps } }

// StopAfterEmpty ends the run after n consecutive steps whose filter kept
// no group (RAGEN stops after 5).
func StopAfterEmpty(n int) FilterOption { return func(f *FilterRule) { f.EmptyStop = n } }

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
	case algo.FilterStdRev, algo.FilterMaxMean, algo.FilterRange, algo.FilterRewardVariance, algo.FilterReward,
		algo.FilterRewardSum, algo.FilterEntropy, algo.FilterEntropyVariance, algo.FilterLength:
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
	switch {
	case f.Strategy == algo.FilterTopP && f.TopPMode == algo.TopPSoftmax:
		s += fmt.Sprintf(", TopPSoftmax(%g)", f.Value)
	case f.Strategy == algo.FilterTopP:
		s += fmt.Sprintf(", TopPLinear(%g)", f.Value)
	case f.Strategy == algo.FilterTopK:
		s += fmt.Sprintf(", TopK(%g)", f.Value)
	case f.Strategy == algo.FilterTopKAbs:
		s += fmt.Sprintf(", TopKAbs(%g)", f.Value)
	case f.Strategy == algo.FilterMinP:
		s += fmt.Sprintf(", MinP(%g)", f.Value)
	}
	if f.Smallest {
		s += ", Smallest()"
	}
	if f.ExcludeZero {
		s += ", ExcludeZero()"
	}
	if f.Eps != nil {
		s += fmt.Sprintf(", SelectionEps(%g)", *f.Eps)
	}
	if f.EmptyStop != 0 {
		s += fmt.Sprintf(", StopAfterEmpty(%d)", f.EmptyStop)
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
	if f.Strategy != "" {
		if f.Ratio != 0 {
			return fmt.Errorf("Filter: TopP(%g) is StarPO-S's ratio and cannot be combined with the %s strategy", f.Ratio, f.Strategy)
		}
		c.FilterStrategy, c.FilterValue, c.FilterTopPMode = f.Strategy, f.Value, f.TopPMode
	}
	if f.Eps != nil {
		e := *f.Eps
		c.FilterSelectionEps = &e
	}
	c.FilterSmallest = c.FilterSmallest || f.Smallest
	c.FilterExcludeZero = c.FilterExcludeZero || f.ExcludeZero
	return nil
}
