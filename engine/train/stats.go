package train

import (
	"fmt"
	"math"
	"slices"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/rollout"
)

// rolloutMetrics summarises every trajectory of a step, before filtering:
// rewards, success, format and action validity, turns and lengths.
func rolloutMetrics(m map[string]float64, trajs []*rollout.Trajectory, rewards []float64) {
	n := float64(len(trajs))
	var succ, turns, actions, valid, invalid, formatOK, tokens, think, answer, closed float64
	groupSucc := map[int]bool{}
	var groupIDs []int
	firstResponses := map[string]bool{}
	for _, tr := range trajs {
		if len(tr.Turns) > 0 {
			firstResponses[tr.Turns[0].Response] = true
		}
		if _, seen := groupSucc[tr.Group]; !seen {
			groupIDs = append(groupIDs, tr.Group)
			groupSucc[tr.Group] = false
		}
		if tr.Success {
			succ++
			groupSucc[tr.Group] = true
		}
		a, v, inv, ok := tr.Counts()
		actions += float64(a)
		valid += float64(v)
		invalid += float64(inv)
		formatOK += float64(ok)
		turns += float64(len(tr.Turns))
		for _, t := range tr.Turns {
			tokens += float64(t.Tokens)
			think += float64(t.ThinkTokens)
			answer += float64(t.AnswerTokens)
			if t.Closed {
				closed++
			}
		}
	}
	var pass float64
	for _, g := range groupIDs {
		if groupSucc[g] {
			pass++
		}
	}
	mean, std := meanStd(rewards)
	m[metrics.RewardMean] = mean
	m[metrics.RewardStd] = std
	m[metrics.SuccessRate] = succ / n
	m[metrics.PassAtGroup] = pass / float64(len(groupIDs))
	m[metrics.TurnsMean] = turns / n
	m[metrics.ActionsMean] = actions / n
	m[metrics.ResponseTokens] = tokens / n
	m[metrics.DistinctRate] = float64(len(firstResponses)) / n
	if turns > 0 {
		m[metrics.FormatValidRate] = formatOK / turns
		m[metrics.TurnTokens] = tokens / turns
		m[metrics.ThinkTokens] = think / turns
		m[metrics.AnswerTokens] = answer / turns
		m[metrics.ClosedRate] = closed / turns
	}
	if valid+invalid > 0 {
		m[metrics.InvalidActionRate] = invalid / (valid + invalid)
	}
}

// filterMetrics records the group statistics the filter computed; those
// of the statistic it selected by only with RAGEN v2's settings, so a
// StarPO-S run reports what it always did.
func filterMetrics(m map[string]float64, c *algo.Config, s algo.FilterStats) {
	if c.FilterStrategy != "" || c.FilterExcludeZero || c.FilterSmallest ||
		!slices.Contains([]string{algo.FilterStd, algo.FilterStdRev, algo.FilterMaxMean, algo.FilterRange}, c.FilterMetric) {
		m[metrics.FilterScoreMean] = s.ScoreMean
		m[metrics.ChosenFilterScoreMean] = s.ChosenScoreMean
		m[metrics.FilterZeroCount] = float64(s.ZeroScore)
	}
	m[metrics.InGroupStd] = s.InGroupStd
	m[metrics.InGroupMean] = s.InGroupMean
	m[metrics.InGroupMax] = s.InGroupMax
	m[metrics.ChosenInGroupStd] = s.ChosenStd
	m[metrics.FilterKeepRatio] = s.KeepRatio
	if s.Groups > 0 {
		m[metrics.ZeroStdGroups] = float64(s.ZeroStd) / float64(s.Groups)
	}
}

func meanStd(x []float64) (mean, std float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		std += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(std / float64(len(x)))
}

// maskedMean is the mean of x over the tokens where mask is true.
func maskedMean(x [][]float64, mask [][]bool) float64 {
	var s, n float64
	for i := range x {
		for j, on := range mask[i] {
			if on {
				s += x[i][j]
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return s / n
}

// accumulator averages per-minibatch statistics over a step's updates.
type accumulator struct {
	names []string
	sum   map[string]float64
	count map[string]float64
}

func (a *accumulator) add(name string, v float64) {
	if a.sum == nil {
		a.sum, a.count = map[string]float64{}, map[string]float64{}
	}
	if _, ok := a.sum[name]; !ok {
		a.names = append(a.names, name)
	}
	a.sum[name] += v
	a.count[name]++
}

func (a *accumulator) into(m map[string]float64) {
	for _, n := range a.names {
		m[n] = a.sum[n] / a.count[n]
	}
}

// finite returns an error naming the step and the quantity when v is NaN
// or infinite: training stops there, and the last good checkpoint stays.
func finite(step int, what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("step %d: %s is %v: training stopped; the last good checkpoint is kept (lower the learning rate or check the reward)", step, what, v)
	}
	return nil
}
