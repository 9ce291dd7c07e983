package dsl

import (
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
)

// A run's gradient report reads back the step's grad_norm/… metrics into
// a table, lowest std first and the whole batch last, and shows its chart
// above the table.
func TestGradientReportTable(t *testing.T) {
	r := &Run{Name: "r"}
	v := map[string]float64{}
	set := func(b, k string, x float64) { v[metrics.GradBucket(b, k)] = x }
	for _, b := range []struct {
		name       string
		groups, n  float64
		std, task  float64
		ent, token float64
	}{{"bucket_2", 2, 8, 0.5, 0.25, 0.01, 100}, {"bucket_1", 2, 8, 0, 0.0125, 0.01, 100}, {"all", 4, 16, 0.25, 0.2, 0.01, 200}} {
		set(b.name, metrics.GradGroupCount, b.groups)
		set(b.name, metrics.GradSampleCount, b.n)
		set(b.name, metrics.GradStdMean, b.std)
		set(b.name, metrics.GradTask, b.task)
		set(b.name, metrics.GradEntropy, b.ent)
		set(b.name, metrics.GradPerToken+metrics.GradTask, b.task/b.token)
		set(b.name, metrics.GradPerToken+metrics.GradEntropy, b.ent/b.token)
	}
	r.History.Steps = []metrics.Step{{Step: 1, Values: v}, {Step: 2, Values: map[string]float64{metrics.RewardMean: 1}}}

	g := r.GradientReport()
	want := "r: gradient norms by reward-std bucket, step 1\n" +
		"bucket    groups  trajectories  reward std    task  entropy  per_token/task  per_token/entropy\n" +
		"bucket_1       2             8           0  0.0125   0.0100        1.25e-04           1.00e-04\n" +
		"bucket_2       2             8       0.500   0.250   0.0100         0.00250           1.00e-04\n" +
		"all            4            16       0.250   0.200   0.0100         0.00100           5.00e-05"
	if got := g.String(); got != want {
		t.Errorf("table:\n%s\nwant\n%s", got, want)
	}
	html, _ := g.MIMEBundle()["text/html"].(string)
	if !strings.HasPrefix(html, `<img style="max-width:100%" src="data:image/png;base64,`) || !strings.Contains(html, "<table>") {
		t.Errorf("bundle: %.120s", html)
	}

	for _, c := range []struct {
		g    *GradientReport
		want string
	}{
		{r.GradientReport(2), "no gradient report at step 2 of r (GradientReportEvery N reports steps 1, N+1, 2N+1, …)"},
		{(&Run{Name: "q"}).GradientReport(), "no gradient report in q: set GradientReportEvery (it runs on step 1 and every N steps after)"},
		{(*Run)(nil).GradientReport(), "no run (nil *Run)"},
	} {
		if c.g.Missing != c.want || !strings.HasPrefix(c.g.String(), c.want) {
			t.Errorf("missing: %q, shows %q; want %q", c.g.Missing, c.g.String(), c.want)
		}
	}
}

func TestGradientReportFields(t *testing.T) {
	e := Experiment{Env: Bandit(), GradientReportEvery: 10, GradientReportBuckets: 4}
	c, err := e.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.GradientReportEvery != 10 || c.GradientReportBuckets != 4 {
		t.Errorf("config: every %d buckets %d", c.GradientReportEvery, c.GradientReportBuckets)
	}
	e.GradientReportEvery = -1
	if _, err := e.Config(); err == nil || !strings.Contains(err.Error(), "GradientReportEvery") {
		t.Errorf("negative: %v", err)
	}
}
