package train

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/engine/rollout"
)

// gradConfig is tinyConfig with every term of the actor loss on (entropy
// bonus, KL in the loss) and every group kept, so that the report has
// several buckets and three terms.
func gradConfig(t *testing.T) Config {
	c := tinyConfig(t)
	c.Algo.FilterRatio = 1
	c.Algo.EntropyCoef = 0.01
	c.Algo.KLPlacement, c.Algo.KLCoef = algo.KLLoss, 0.05
	// Bandit's groups share the arms' draws, and a tiny warm-started
	// policy mostly pulls one arm: reward the response's length instead,
	// which varies within a group and spreads the groups' std.
	c.Reward = func(tr *rollout.Trajectory, _ []*rollout.Trajectory) (float64, error) {
		n := 0
		for _, a := range tr.Agent {
			if a {
				n++
			}
		}
		return float64(n%7) * float64(tr.Group+1) / 4, nil
	}
	return c
}

// withoutReport drops the report's metrics and the wall clock.
func withoutReport(h metrics.History) []metrics.Step {
	out := deterministic(h)
	for _, s := range out {
		for k := range s.Values {
			if strings.HasPrefix(k, metrics.GradPrefix) {
				delete(s.Values, k)
			}
		}
	}
	return out
}

// The report appears on steps 1, N+1, … and changes no other number of
// the run: every other metric and the final weights are bit-identical.
func TestGradientReportChangesNothingElse(t *testing.T) {
	c := gradConfig(t)
	c.Steps, c.ValEvery = 3, 3
	off := run(t, c)
	c.GradientReportEvery = 2
	on := run(t, c)

	for _, s := range on.History.Steps[1:] {
		_, has := s.Values[metrics.GradBucket(algo.BucketAll, metrics.GradTask)]
		_, timed := s.Values[metrics.TimeGradReport]
		if due := s.Step == 1 || s.Step == 3; has != due || timed != due {
			t.Errorf("step %d: report %v, timing %v, want %v", s.Step, has, timed, due)
		}
		if !has {
			continue
		}
		// Four groups, six buckets asked: four buckets of one group.
		for _, b := range []string{"all", "bucket_1", "bucket_2", "bucket_3", "bucket_4"} {
			for _, term := range []string{metrics.GradTask, metrics.GradEntropy, metrics.GradKL} {
				for _, k := range []string{term, metrics.GradPerSample + term, metrics.GradPerToken + term} {
					if v, ok := s.Values[metrics.GradBucket(b, k)]; !ok || !(v >= 0) || math.IsInf(v, 0) {
						t.Errorf("step %d: %s = %v (%v)", s.Step, metrics.GradBucket(b, k), v, ok)
					}
				}
			}
		}
		if _, ok := s.Values[metrics.GradBucket("bucket_5", metrics.GradTask)]; ok {
			t.Errorf("step %d: a fifth bucket of four groups", s.Step)
		}
		all := func(k string) float64 { return s.Values[metrics.GradBucket(algo.BucketAll, k)] }
		if all(metrics.GradSampleCount) != float64(c.EnvGroups*c.GroupSize) || all(metrics.GradSamplePct) != 1 || all(metrics.GradGroupCount) != 4 {
			t.Errorf("step %d: all has %v samples (%v), %v groups", s.Step, all(metrics.GradSampleCount), all(metrics.GradSamplePct), all(metrics.GradGroupCount))
		}
		var stds []float64
		for k := 1; k <= 4; k++ {
			stds = append(stds, s.Values[metrics.GradBucket("bucket_"+string(rune('0'+k)), metrics.GradStdMean)])
		}
		if !slices.IsSorted(stds) {
			t.Errorf("step %d: bucket std means %v not increasing", s.Step, stds)
		}
		if got, want := all(metrics.GradLossTotal), all(metrics.GradLossPolicy)+all(metrics.GradLossEntropy)+all(metrics.GradLossKL); math.Abs(got-want) > 1e-12 {
			t.Errorf("step %d: loss/total %v, the terms sum to %v", s.Step, got, want)
		}
		t.Logf("step %d: all task %.6g entropy %.6g kl %.6g; by bucket std %v; %.3fs of %.3fs", s.Step,
			all(metrics.GradTask), all(metrics.GradEntropy), all(metrics.GradKL), stds,
			s.Values[metrics.TimeGradReport], s.Values[metrics.TimeStep])
	}

	if !reflect.DeepEqual(deterministic(off.History), withoutReport(on.History)) {
		t.Error("turning the gradient report on changed other metrics")
	}
	if !slices.Equal(policyOf(t, off).Params.Data, policyOf(t, on).Params.Data) {
		t.Error("turning the gradient report on changed the policy")
	}
}

// Each term's norm is the gradient norm of a loss that has only that
// term: the task term's is the whole loss's with no entropy bonus and no
// KL; the entropy's and the KL's are the whole loss's with zero advantages
// (no PPO gradient) and only that regulariser on. And the three
// gradients add up to the whole loss's.
func TestGradientReportTermNorms(t *testing.T) {
	c := gradConfig(t)
	c.MicroBatchTokens = 400 // several micro-batches: the re-forward path
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	trajs, err := tr.play(ctx, tr.trainTasks(1), 1)
	if err != nil {
		t.Fatal(err)
	}
	rewards, err := tr.rewards(trajs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.prepare(1, trajs, rewards, evaluated{})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	if err := tr.gradientReport(1, b, m); err != nil {
		t.Fatal(err)
	}

	group := make([]int, len(b.trajs))
	for i, traj := range b.trajs {
		group[i] = traj.Group
	}
	buckets, err := algo.RewardStdBuckets(b.rewards, group, algo.DefaultBuckets, "")
	if err != nil {
		t.Fatal(err)
	}
	// wholeNorm is the norm of the whole loss's gradient on sub under
	// algorithm settings a.
	wholeNorm := func(sub *batch, a algo.Config) float64 {
		saved := tr.cfg.Algo
		defer func() { tr.cfg.Algo = saved }()
		tr.cfg.Algo = a
		var norm float64
		_, ok, err := tr.actorGrads(1, sub, 0, len(sub.trajs), tr.cfg.MicroBatchTokens, []lossTerm{wholeLoss}, func(int) error {
			var err error
			norm, err = tr.policy.GradNorm()
			return err
		})
		if err != nil || !ok {
			t.Fatal(err, ok)
		}
		return norm
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-5*max(want, 1e-6) {
			t.Errorf("%s: report %v, alone %v", what, got, want)
		}
	}
	for _, bk := range buckets {
		sub := b.subset(bk.Members)
		name := func(s string) string { return metrics.GradBucket(bk.Name, s) }

		task := c.Algo
		task.EntropyCoef, task.KLCoef = 0, 0
		near(name("task"), m[name(metrics.GradTask)], wholeNorm(sub, task))

		flat := *sub
		flat.adv = make([][]float64, len(sub.adv))
		for i, row := range sub.adv {
			flat.adv[i] = make([]float64, len(row))
		}
		ent := c.Algo
		ent.KLCoef = 0
		near(name("entropy"), m[name(metrics.GradEntropy)], wholeNorm(&flat, ent))
		kl := c.Algo
		kl.EntropyCoef = 0
		near(name("kl"), m[name(metrics.GradKL)], wholeNorm(&flat, kl))
	}

	// Linearity: the terms' gradients sum to the whole loss's.
	sub := b.subset(buckets[len(buckets)-1].Members)
	var parts [][]float32
	terms := []lossTerm{wholeLoss}
	for _, g := range tr.gradTerms() {
		terms = append(terms, g.grad)
	}
	if _, _, err := tr.actorGrads(1, sub, 0, len(sub.trajs), 0, terms, func(int) error {
		if err := tr.policy.SyncGrads(); err != nil {
			return err
		}
		parts = append(parts, slices.Clone(tr.policy.Grads.Data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var diff, size float64
	for i, w := range parts[0] {
		s := float64(parts[1][i]) + float64(parts[2][i]) + float64(parts[3][i])
		diff = max(diff, math.Abs(s-float64(w)))
		size = max(size, math.Abs(float64(w)))
	}
	if diff > 1e-5*size {
		t.Errorf("task + entropy + kl differs from the whole gradient by %g (largest entry %g)", diff, size)
	}
}

// Under data parallelism the report is the same bits on one rank and on
// two, on every rank, and within float error of the single process's.
func TestGradientReportDataParallel(t *testing.T) {
	c := gradConfig(t)
	c.Steps, c.ValEpisodes = 1, 0
	c.GradientReportEvery = 1
	single := run(t, c)
	one := runRanks(t, c, 1)
	two := runRanks(t, c, 2)
	report := func(tr *Trainer) map[string]float64 {
		out := map[string]float64{}
		for k, v := range tr.History.Steps[len(tr.History.Steps)-1].Values {
			if strings.HasPrefix(k, metrics.GradPrefix) {
				out[k] = v
			}
		}
		return out
	}
	want := report(one[0])
	if len(want) == 0 {
		t.Fatal("no report")
	}
	for r, tr := range two {
		if got := report(tr); !reflect.DeepEqual(got, want) {
			t.Errorf("rank %d of 2: report differs from 1 rank's", r)
		}
	}
	for k, v := range report(single) {
		if w := want[k]; math.Abs(v-w) > 1e-4*max(math.Abs(w), 1e-6) {
			t.Errorf("%s: single process %v, data-parallel %v", k, v, w)
		}
	}
}
