package plots

import (
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/metrics"
)

// curve is one series ready to draw: x is the training step.
type curve struct {
	x, y []float64
}

// metricCurve reads metric from h in step order. Non-finite values (a NaN
// loss, an overflowing norm) cannot be drawn: they are left out and counted
// in dropped so that the panel can say so. Steps must increase strictly —
// a history that goes back in time is a bug upstream, not something to
// paper over.
func metricCurve(h *metrics.History, metric string) (c curve, dropped int, err error) {
	steps, values := h.Series(metric)
	for i, s := range steps {
		if i > 0 && s <= steps[i-1] {
			return curve{}, 0, fmt.Errorf("run %q, %s: step %d follows step %d (steps must increase)", h.Name, metric, s, steps[i-1])
		}
		v := values[i]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			dropped++
			continue
		}
		c.x = append(c.x, float64(s))
		c.y = append(c.y, v)
	}
	return c, dropped, nil
}

// EMA returns the exponential moving average of ys with decay beta in [0, 1),
// bias-corrected as in Adam and TensorBoard:
//
//	s₀ = 0,  s_t = β·s_{t-1} + (1-β)·y_t,  ŝ_t = s_t / (1 - β^t)   (t = 1…n)
//
// Without the correction the curve would start near zero and climb for about
// 1/(1-β) points; with it ŝ₁ = y₁ and every ŝ_t is a weighted mean of the
// points so far. beta = 0 returns a copy of ys. The average runs over points,
// not steps: a metric logged every 10 steps is smoothed over 10× more steps.
func EMA(ys []float64, beta float64) []float64 {
	out := make([]float64, len(ys))
	s, corr := 0.0, 1.0
	for i, y := range ys {
		s = beta*s + (1-beta)*y
		corr *= beta
		out[i] = s / (1 - corr)
	}
	return out
}

// checkSmoothing validates an EMA decay given by a user.
func checkSmoothing(beta float64) error {
	if !(beta >= 0 && beta < 1) {
		return fmt.Errorf("smoothing: must be in [0, 1) (got %v)", beta)
	}
	return nil
}

// Band chooses how the seeds of a group spread around their mean line.
type Band int

const (
	BandMinMax Band = iota // the lowest to the highest seed at each step
	BandStd                // mean ± sample standard deviation over seeds
	BandNone               // the mean line alone
)

func (b Band) String() string {
	switch b {
	case BandMinMax:
		return "min–max"
	case BandStd:
		return "±1 std"
	case BandNone:
		return "none"
	}
	return fmt.Sprintf("Band(%d)", int(b))
}

func (b Band) check() error {
	if b < BandMinMax || b > BandNone {
		return fmt.Errorf("band: unknown Band(%d) (want BandMinMax, BandStd or BandNone)", int(b))
	}
	return nil
}

// aggregate aligns the curves of several seeds on the steps that all of
// them recorded and returns the mean at each such step with the band around
// it (lo = hi = mean for BandNone). Steps that only some seeds reached are
// dropped: a mean over a changing set of seeds jumps where a seed stops,
// which would read as a change in training. dropped counts those steps.
func aggregate(seeds []curve, band Band) (mean curve, lo, hi []float64, dropped int) {
	count := map[float64]int{}
	for _, c := range seeds {
		for _, x := range c.x {
			count[x]++
		}
	}
	// Walk the first seed's steps: they are in order, and a step shared by
	// all seeds is among them.
	idx := make([]int, len(seeds)) // cursor into each seed's steps
	vals := make([]float64, len(seeds))
	for _, x := range seeds[0].x {
		if count[x] != len(seeds) {
			continue
		}
		for k, c := range seeds {
			for c.x[idx[k]] < x {
				idx[k]++
			}
			vals[k] = c.y[idx[k]]
		}
		m, l, h := spread(vals, band)
		mean.x = append(mean.x, x)
		mean.y = append(mean.y, m)
		lo = append(lo, l)
		hi = append(hi, h)
	}
	steps := len(count)
	return mean, lo, hi, steps - len(mean.x)
}

// spread returns the mean of vs and the band around it.
func spread(vs []float64, band Band) (mean, lo, hi float64) {
	n := float64(len(vs))
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		mean += v
		lo = math.Min(lo, v)
		hi = math.Max(hi, v)
	}
	mean /= n
	switch band {
	case BandStd:
		var ss float64
		for _, v := range vs {
			ss += (v - mean) * (v - mean)
		}
		sd := 0.0
		if len(vs) > 1 {
			sd = math.Sqrt(ss / (n - 1))
		}
		return mean, mean - sd, mean + sd
	case BandNone:
		return mean, mean, mean
	}
	return mean, lo, hi
}
