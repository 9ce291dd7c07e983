package train

import (
	"math"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
)

// feed runs the monitor over values of one metric and returns the kinds
// of the events fired, with their steps.
func feed(name string, values ...float64) map[string]int {
	m := NewMonitor(DefaultMonitor())
	fired := map[string]int{}
	for i, v := range values {
		for _, e := range m.Observe(metrics.Step{Step: i + 1, Values: map[string]float64{name: v}}) {
			if _, seen := fired[e.Kind]; !seen {
				fired[e.Kind] = e.Step
			}
		}
	}
	return fired
}

func TestMonitorEntropyCollapse(t *testing.T) {
	// Entropy steady at 2 for 10 steps, then falls to 0.3: the EMA
	// (α 0.7) passes below 0.4 × 2 = 0.8 on the 4th low step (2 → 1.49 →
	// 1.13 → 0.88 → 0.71).
	v := []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0.3, 0.3, 0.3, 0.3, 0.3}
	if got := feed(metrics.Entropy, v...); got["entropy_collapse"] != 14 {
		t.Fatalf("entropy_collapse at %v, want step 14", got)
	}
	if got := feed(metrics.Entropy, 2, 2, 2, 2, 2, 2, 2, 1.9, 1.8, 1.9); len(got) != 0 {
		t.Fatalf("steady entropy fired %v", got)
	}
}

func TestMonitorGradSpike(t *testing.T) {
	got := feed(metrics.GradNorm, 1, 1.1, 0.9, 1, 1.2, 1, 0.8, 9, 1)
	if got["grad_norm_spike"] != 8 {
		t.Fatalf("grad_norm_spike at %v, want step 8", got)
	}
}

func TestMonitorRewardDropAndStd(t *testing.T) {
	up := []float64{0, 0.2, 0.4, 0.6, 0.8, 1, 1, 1, 0, 0, 0, 0}
	if got := feed(metrics.RewardMean, up...); got["reward_drop"] == 0 {
		t.Fatalf("no reward_drop after a peak of 1 and a fall to 0: %v", got)
	}
	std := []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.1, 0.05, 0, 0, 0}
	if got := feed(metrics.InGroupStd, std...); got["reward_std_collapse"] == 0 {
		t.Fatalf("no reward_std_collapse: %v", got)
	}
}

func TestMonitorOscillation(t *testing.T) {
	got := feed(metrics.Entropy, 2, 2, 2, 2, 2, 2.5, 1.5, 2.5, 1.5, 2.5, 1.5)
	if got["entropy_oscillation"] == 0 {
		t.Fatalf("no entropy_oscillation: %v", got)
	}
}

func TestMonitorRewardNoiseDoesNotFire(t *testing.T) {
	noisy := []float64{0.009, 0.078, 0.002, 0.044, 0.027, 0.008, 0.006, 0.002, 0.034, -0.014, -0.02, 0.006}
	if got := feed(metrics.RewardMean, noisy...); got["reward_drop"] != 0 {
		t.Fatalf("reward noise fired reward_drop at step %d", got["reward_drop"])
	}
}

// Template collapse: the MI falls while the entropy holds fires; the same
// fall with the entropy collapsing too is entropy collapse, not template
// collapse; a step without the MI (not due) changes nothing.
func TestMonitorTemplateCollapse(t *testing.T) {
	run := func(entropy []float64, mi []float64) map[string]int {
		m := NewMonitor(DefaultMonitor())
		fired := map[string]int{}
		for i := range entropy {
			v := map[string]float64{metrics.Entropy: entropy[i]}
			if !math.IsNaN(mi[i]) {
				v[metrics.CollapseMI] = mi[i]
			}
			for _, e := range m.Observe(metrics.Step{Step: i + 1, Values: v}) {
				if _, seen := fired[e.Kind]; !seen {
					fired[e.Kind] = e.Step
				}
			}
		}
		return fired
	}
	n := math.NaN()
	steady := []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}
	// MI 0.2 for 6 steps, then 0.02: the EMA (α 0.7) passes below 0.1 on
	// the 3rd low step (0.2 → 0.146 → 0.108 → 0.082).
	mi := []float64{0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02}
	if got := run(steady, mi); got["template_collapse"] != 9 {
		t.Errorf("template_collapse at %v, want step 9", got)
	}
	// Computed every other step: the EMA runs over the computations.
	sparse := []float64{0.2, n, 0.2, n, 0.2, n, 0.02, n, 0.02, n, 0.02, n}
	if got := run(steady, sparse); got["template_collapse"] != 11 {
		t.Errorf("every other step: template_collapse at %v, want step 11", got)
	}
	falling := []float64{2, 2, 2, 2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2} // entropy_collapse at step 8
	if got := run(falling, mi); got["template_collapse"] != 0 || got["entropy_collapse"] == 0 {
		t.Errorf("entropy falling too: %v, want entropy_collapse alone", got)
	}
	if got := run(steady, []float64{0.0005, 0.0005, 0.0005, 0.0005, 0.0005, 0.0005, 0, 0, 0, 0, 0, 0}); len(got) != 0 {
		t.Errorf("MI that was never above the floor fired %v", got)
	}
}
