package train

import (
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
