package plots_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/plots"
)

// A metric against step for two runs, smoothed, with the collapse
// monitor's events of the first run marked where they happened.
func ExampleLineChart() {
	baseline := synthRun("StarPO (PPO)", 1, 60) // collapses at step 60
	starpoS := synthRun("StarPO-S", 2, 0)

	c := plots.NewLineChart(metrics.Entropy)
	c.Title = "rollout entropy"
	c.Smoothing = 0.8 // EMA decay; the raw data stays visible, faint
	c.Add(baseline, starpoS)
	if err := c.Save(filepath.Join(os.TempDir(), "line.png")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(c)
	// Output:
	// line chart of StarPO (PPO), StarPO-S: actor/entropy; 2 events:
	//   step 62 entropy_drop (StarPO (PPO)): entropy fell 60% in 10 steps
	//   step 64 grad_norm_spike (StarPO (PPO)): grad norm 20× its median
}

// Presets compared over three seeds each: the mean of the seeds as a line,
// ±1 standard deviation as a band, on the steps all seeds recorded.
func ExampleLineChart_seeds() {
	c := plots.NewLineChart(metrics.RewardMean)
	c.Title = "reward mean, 3 seeds per preset"
	c.Smoothing = 0.7
	c.Band = plots.BandStd
	c.AddSeeds("StarPO", synthRun("", 11, 55), synthRun("", 12, 70), synthRun("", 13, 90))
	c.AddSeeds("StarPO-S", synthRun("", 21, 0), synthRun("", 22, 0), synthRun("", 23, 150))
	if err := c.Save(filepath.Join(os.TempDir(), "seeds.png")); err != nil {
		fmt.Println(err)
	}
	f, _ := c.Figure()
	for _, e := range f.Legend {
		fmt.Println(e.Label)
	}
	// Output:
	// StarPO (3 seeds, ±1 std)
	// StarPO-S (3 seeds, ±1 std)
}

// A log-scale axis: values ≤ 0 (here the gradient norm before the first
// update) cannot be drawn and are counted under the axis instead.
func ExampleLineChart_logScale() {
	c := plots.NewLineChart(metrics.GradNorm)
	c.Title = "gradient norm"
	c.LogY = true
	c.Add(synthRun("StarPO (PPO)", 1, 60), synthRun("StarPO-S", 2, 0))
	if err := c.Save(filepath.Join(os.TempDir(), "log.png")); err != nil {
		fmt.Println(err)
	}
	f, _ := c.Figure()
	fmt.Println(f.Panels[0].X.Label.Text)
	// Output:
	// step · 2 values ≤ 0 skipped (log)
}

// The dashboard of two runs: the panels a run recorded, the same colour
// for a run on every panel, and numbered event markers explained in the
// legend.
func ExampleDashboard() {
	d := plots.NewDashboard()
	d.Title = "Sokoban: StarPO vs StarPO-S"
	d.Smoothing = 0.6
	d.Add(synthRun("StarPO (PPO)", 1, 60), synthRun("StarPO-S", 2, 0))
	if err := d.Save(filepath.Join(os.TempDir(), "dashboard.png")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(d)
	// Output:
	// dashboard of StarPO (PPO), StarPO-S: reward mean, in-group reward std, success rate, entropy, gradient norm (log), response tokens, KL to rollout policy, clip fraction, filter keep ratio; 2 events:
	//   step 62 entropy_drop (StarPO (PPO)): entropy fell 60% in 10 steps
	//   step 64 grad_norm_spike (StarPO (PPO)): grad norm 20× its median
}

// Reasoning length per environment, with each line's change in the legend.
func ExampleReasoningChart() {
	r := plots.NewReasoningChart()
	r.Smoothing = 0.5
	r.Add(
		synthThink("sokoban", 1, 45, 12, 50),
		synthThink("frozenlake", 2, 38, 25, 80),
		synthThink("bandit", 3, 30, 0, 0),
	)
	if err := r.Save(filepath.Join(os.TempDir(), "reasoning.png")); err != nil {
		fmt.Println(err)
	}
	f, _ := r.Figure()
	for _, e := range f.Legend {
		fmt.Println(e.Label)
	}
	// Output:
	// sokoban (−67%)
	// frozenlake (−29%)
	// bandit (−1%)
}

// Per-group rewards at three steps: flat groups (grey) take over as the
// run collapses.
func ExampleGroupRewardChart() {
	g := plots.NewGroupRewardChart()
	g.Add(
		plots.GroupRewards{Step: 0, Groups: synthGroups(1, 0.1)},
		plots.GroupRewards{Step: 60, Groups: synthGroups(2, 0.4)},
		plots.GroupRewards{Step: 150, Groups: synthGroups(3, 0.85)},
	)
	if err := g.Save(filepath.Join(os.TempDir(), "groups.png")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(g)
	// Output:
	// per-group rewards:
	//   step 0: 16 groups, 3 flat, mean in-group std 0.344
	//   step 60: 16 groups, 10 flat, mean in-group std 0.154
	//   step 150: 16 groups, 14 flat, mean in-group std 0.0524
}

// Credit assignment on one training trajectory: the critic's values and
// the returns above, the advantage of every agent token below, turns
// marked. The format penalty at the end of turn 1 and the success at the
// end of turn 3 reach back over the tokens before them, fading by λ per
// token.
func ExampleCreditChart() {
	c := plots.NewCreditChart(synthCredit(1))
	if err := c.Save(filepath.Join(os.TempDir(), "credit.png")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(c)
	// Output:
	// credit chart of train step 40 · seed 1234 · reward 0.9 (success): 86 agent tokens in 3 turns, 2 with a reward
	//   advantage: min -0.0483, max 0.301, mean 0.107; 77 of 86 tokens > 0
	//   return: first 0.45, last 1
}

// Charts compose: take the panels of two charts (gonum *plot.Plot values,
// adjustable before rendering) into one figure side by side.
func ExampleFigure() {
	runs := []*metrics.History{synthRun("StarPO (PPO)", 1, 60), synthRun("StarPO-S", 2, 0)}
	entropy := plots.NewLineChart(metrics.Entropy)
	entropy.Smoothing = 0.8
	entropy.Add(runs...)
	think := plots.NewLineChart(metrics.ThinkTokens)
	think.Smoothing = 0.8
	think.Add(runs...)

	e, err := entropy.Figure()
	if err != nil {
		fmt.Println(err)
		return
	}
	k, err := think.Figure()
	if err != nil {
		fmt.Println(err)
		return
	}
	e.Panels[0].Title.Text = "entropy"
	k.Panels[0].Title.Text = "think tokens per turn"
	f := &plots.Figure{
		Title:       "the echo trap: entropy and reasoning collapse together",
		Legend:      e.Legend, // same runs, same order: same colours
		Cols:        2,
		PanelWidth:  e.PanelWidth / 2,
		PanelHeight: e.PanelHeight * 0.8,
	}
	f.Add(e.Panels[0], k.Panels[0])
	if err := f.Save(filepath.Join(os.TempDir(), "figure.png")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(f.MIMEMetadata())
	// Output:
	// map[image/png:map[height:330 width:624]]
}

// EMA with bias correction: the first value is kept, and a constant series
// stays constant instead of climbing from zero.
func ExampleEMA() {
	fmt.Printf("%.4f\n", plots.EMA([]float64{1, 2, 3}, 0.5))
	fmt.Printf("%.4f\n", plots.EMA([]float64{5, 5, 5}, 0.9))
	// Output:
	// [1.0000 1.6667 2.4286]
	// [5.0000 5.0000 5.0000]
}

// A gradient report (train.Config.GradientReportEvery) read back from a
// run's metrics and drawn: the task gradient grows with the groups' reward
// std while the entropy and KL terms' stay flat, so in the low-std buckets
// the regularisers weigh as much as the task.
func ExampleGradientChart() {
	h := &metrics.History{Name: "sokoban"}
	v := map[string]float64{}
	for k, std := range []float64{0, 0.2, 0.5, 1.1} {
		b := fmt.Sprintf("bucket_%d", k+1)
		n, tokens := 16.0, 16*40.0
		norm := map[string]float64{metrics.GradTask: 0.02 + 0.8*std, metrics.GradEntropy: 0.03, metrics.GradKL: 0.05 + 0.01*float64(k)}
		v[metrics.GradBucket(b, metrics.GradSampleCount)] = n
		v[metrics.GradBucket(b, metrics.GradGroupCount)] = 2
		v[metrics.GradBucket(b, metrics.GradStdMean)] = std
		for term, x := range norm {
			v[metrics.GradBucket(b, term)] = x
			v[metrics.GradBucket(b, metrics.GradPerSample+term)] = x / n
			v[metrics.GradBucket(b, metrics.GradPerToken+term)] = x / tokens
		}
	}
	v[metrics.GradBucket("all", metrics.GradTask)] = 0.7
	h.Steps = append(h.Steps, metrics.Step{Step: 1, Values: map[string]float64{metrics.RewardMean: 0.1}},
		metrics.Step{Step: 11, Values: v})

	r, ok := plots.GradientReportAt(h, -1) // the last step with a report
	if !ok {
		fmt.Println("no report")
		return
	}
	c := plots.NewGradientChart(r)
	if err := c.Save(filepath.Join(os.TempDir(), "gradient.png")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(c)
	// Output:
	// gradient norms by reward-std bucket, step 11:
	//   bucket_1 (std 0, 2 groups): task 0.02 entropy 0.03 kl 0.05
	//   bucket_2 (std 0.2, 2 groups): task 0.18 entropy 0.03 kl 0.06
	//   bucket_3 (std 0.5, 2 groups): task 0.42 entropy 0.03 kl 0.07
	//   bucket_4 (std 1.1, 2 groups): task 0.9 entropy 0.03 kl 0.08
}
