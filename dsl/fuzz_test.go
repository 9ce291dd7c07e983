package dsl

import (
	"errors"
	"math"
	"testing"
)

// FuzzExpressions: any source either compiles or is an *ExprError with a
// position inside the expression; what compiles runs on a record without
// panicking and returns a finite number or an error. Both kinds: reward
// (over a trajectory) and filter (over a group).
func FuzzExpressions(f *testing.F) {
	for _, src := range []string{
		"reward", "success ? 1 : 0", "reward - 0.1 * num_turns", "len(actions) > 3 ? -1 : env_reward",
		"sum(map(turns, .reward))", "turns[0].reward", "1/0", "in_group_std", "max_mean", "std / (mean + 1)",
		"success_rate * range", "reward +", "unknown_name", `"text"`, "rewards[size]",
	} {
		f.Add(src)
	}
	traj := &Trajectory{Reward: 0.5, EnvReward: 1, Penalty: -0.5, NumTurns: 2, Actions: []string{"Up", "Left"},
		Turns: []Turn{{Reward: 1, Actions: []string{"Up"}}, {Reward: -0.5, Penalty: -0.5}}}
	f.Fuzz(func(t *testing.T, src string) {
		check := func(kind string, err error) bool {
			if err == nil {
				return true
			}
			var ee *ExprError
			if !errors.As(err, &ee) || ee.Kind != kind || ee.Line < 1 || ee.Column < 1 {
				t.Fatalf("%s %q: error %v (%T) is not an ExprError with a position", kind, src, err, err)
			}
			return false
		}
		if r, err := CompileReward(src); check("reward", err) {
			if v, err := r.Eval(traj); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
				t.Fatalf("reward %q = %v without an error", src, v)
			}
		}
		if fr, err := CompileFilter(src); check("filter", err) && fr.prog != nil {
			if v, err := fr.score([]float64{0, 1, 1}, 2.0/3); err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
				t.Fatalf("filter %q = %v without an error", src, v)
			}
		}
	})
}
