package train

import (
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/rollout"
)

// TestDistinctRateCountsFirstResponses: four rollouts, two of which wrote
// the same first answer (later turns do not count), give 3/4.
func TestDistinctRateCountsFirstResponses(t *testing.T) {
	traj := func(group int, responses ...string) *rollout.Trajectory {
		tr := &rollout.Trajectory{Group: group}
		for _, r := range responses {
			tr.Turns = append(tr.Turns, rollout.Turn{Response: r})
		}
		return tr
	}
	trajs := []*rollout.Trajectory{
		traj(0, "<answer>Up</answer>", "x"),
		traj(0, "<answer>Up</answer>", "y"),
		traj(1, "<answer>Down</answer>"),
		traj(1, "<answer>Left</answer>", "<answer>Up</answer>"),
	}
	m := map[string]float64{}
	rolloutMetrics(m, trajs, []float64{0, 0, 1, 0})
	if got := m[metrics.DistinctRate]; got != 0.75 {
		t.Errorf("distinct rate %v, want 0.75", got)
	}
}
