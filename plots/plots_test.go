package plots_test

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
	"github.com/ragen-go/ragen/plots"
)

// run builds a history from per-step values of one metric.
func run(name, metric string, values ...float64) *metrics.History {
	h := &metrics.History{Name: name}
	for s, v := range values {
		h.Steps = append(h.Steps, metrics.Step{Step: s, Values: map[string]float64{metric: v}})
	}
	return h
}

func TestErrorsNameTheProblem(t *testing.T) {
	ok := run("a", metrics.Entropy, 1, 2, 3)
	backwards := &metrics.History{Name: "b", Steps: []metrics.Step{
		{Step: 5, Values: map[string]float64{metrics.Entropy: 1}},
		{Step: 3, Values: map[string]float64{metrics.Entropy: 1}},
	}}
	cases := []struct {
		name  string
		chart interface{ PNG() ([]byte, error) }
		want  string
	}{
		{"no metric", plots.NewLineChart(""), "plots: line chart: Metric is empty"},
		{"no runs", plots.NewLineChart(metrics.Entropy), "plots: line chart of actor/entropy: no runs to plot (call Add or AddSeeds)"},
		{"smoothing", func() *plots.LineChart {
			c := plots.NewLineChart(metrics.Entropy)
			c.Smoothing = 1
			c.Add(ok)
			return c
		}(), "plots: line chart of actor/entropy: smoothing: must be in [0, 1) (got 1)"},
		{"band", func() *plots.LineChart {
			c := plots.NewLineChart(metrics.Entropy)
			c.Band = 7
			c.Add(ok)
			return c
		}(), "plots: line chart of actor/entropy: band: unknown Band(7) (want BandMinMax, BandStd or BandNone)"},
		{"nil run", func() *plots.LineChart {
			c := plots.NewLineChart(metrics.Entropy)
			c.Add(ok, nil)
			return c
		}(), "plots: line chart of actor/entropy: run 2 is nil"},
		{"absent metric", func() *plots.LineChart {
			c := plots.NewLineChart(metrics.GradNorm)
			c.Add(ok)
			return c
		}(), "plots: line chart of actor/grad_norm: no run recorded it"},
		{"steps backwards", func() *plots.LineChart {
			c := plots.NewLineChart(metrics.Entropy)
			c.Add(backwards)
			return c
		}(), `plots: line chart of actor/entropy: run "b", actor/entropy: step 3 follows step 5 (steps must increase)`},
		{"seed lacks metric", func() *plots.LineChart {
			c := plots.NewLineChart(metrics.Entropy)
			c.AddSeeds("g", ok, run("c", metrics.GradNorm, 1))
			return c
		}(), `plots: line chart of actor/entropy: seed group "g": actor/entropy is recorded by 1 of 2 seeds`},
		{"seeds share no step", func() *plots.LineChart {
			c := plots.NewLineChart(metrics.Entropy)
			late := &metrics.History{Steps: []metrics.Step{{Step: 10, Values: map[string]float64{metrics.Entropy: 1}}}}
			c.AddSeeds("g", ok, late)
			return c
		}(), `plots: line chart of actor/entropy: seed group "g": its seeds share no step of actor/entropy`},
		{"empty seed group", func() *plots.Dashboard {
			d := plots.NewDashboard()
			d.AddSeeds("g")
			return d
		}(), `plots: dashboard: seed group "g" has no runs`},
		{"dashboard without its metrics", func() *plots.Dashboard {
			d := plots.NewDashboard()
			d.Add(run("x", "custom/metric", 1))
			return d
		}(), "plots: dashboard: no run recorded any dashboard metric (reward, success, entropy, ...)"},
		{"reasoning without think tokens", func() *plots.ReasoningChart {
			r := plots.NewReasoningChart()
			r.Add(ok)
			return r
		}(), "plots: reasoning chart: no run recorded response/think_tokens_mean"},
		{"no group steps", plots.NewGroupRewardChart(), "plots: group reward chart: no steps to plot (call Add)"},
		{"empty group", func() *plots.GroupRewardChart {
			g := plots.NewGroupRewardChart()
			g.Add(plots.GroupRewards{Step: 4, Groups: [][]float64{{1}, {}}})
			return g
		}(), "plots: group reward chart: step 4, group 1: no rewards"},
		{"NaN reward", func() *plots.GroupRewardChart {
			g := plots.NewGroupRewardChart()
			g.Add(plots.GroupRewards{Step: 4, Groups: [][]float64{{1, math.NaN()}}})
			return g
		}(), "plots: group reward chart: step 4, group 0, member 1: reward is NaN"},
		{"duplicate step", func() *plots.GroupRewardChart {
			g := plots.NewGroupRewardChart()
			g.Add(plots.GroupRewards{Step: 4, Groups: [][]float64{{1}}}, plots.GroupRewards{Step: 4, Groups: [][]float64{{0}}})
			return g
		}(), "plots: group reward chart: step 4 added twice"},
		{"credit without tokens", plots.NewCreditChart(metrics.Sample{Step: 10, Split: metrics.SplitVal}),
			"plots: credit chart: the sample (val, step 10) has no tokens: only training samples keep them"},
		{"credit NaN", plots.NewCreditChart(metrics.Sample{Split: metrics.SplitTrain, Tokens: []metrics.SampleToken{
			{Advantage: 1}, {Advantage: 1, Value: math.NaN()}}}),
			"plots: credit chart: token 1: value is NaN"},
		{"credit turns backwards", plots.NewCreditChart(metrics.Sample{Split: metrics.SplitTrain, Tokens: []metrics.SampleToken{
			{Turn: 1}, {Turn: 0}}}),
			"plots: credit chart: token 1: turn 1 after turn 2 (tokens must be in trajectory order)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.chart.PNG()
			if err == nil || err.Error() != tc.want {
				t.Errorf("got error %v\nwant        %s", err, tc.want)
			}
		})
	}
}

func TestSaveChoosesFormatByExtension(t *testing.T) {
	c := plots.NewLineChart(metrics.Entropy)
	c.Add(run("a", metrics.Entropy, 3, 2, 1))
	dir := t.TempDir()
	if err := c.Save(filepath.Join(dir, "e.PNG")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "e.PNG"))
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Errorf("e.PNG is not a PNG: %v", err)
	}
	if err := c.Save(filepath.Join(dir, "e.svg")); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(filepath.Join(dir, "e.svg"))
	if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("actor/entropy")) {
		t.Errorf("e.svg is not an SVG of the chart: %.80q", data)
	}
	want := "plots: cannot save " + filepath.Join(dir, "e.jpg") + ": extension must be .png or .svg"
	if err := c.Save(filepath.Join(dir, "e.jpg")); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("dir holds %d files, want 2 (no temporary left behind)", len(entries))
	}
}

func TestRenderingIsDeterministic(t *testing.T) {
	d := plots.NewDashboard()
	d.Smoothing = 0.5
	d.Add(synthRun("a", 1, 60))
	d.AddSeeds("b", synthRun("", 2, 0), synthRun("", 3, 0))
	first, err := d.PNG()
	if err != nil {
		t.Fatal(err)
	}
	second, _ := d.PNG()
	if !bytes.Equal(first, second) {
		t.Error("two renders of one dashboard differ")
	}
}

func TestDisplayContract(t *testing.T) {
	c := plots.NewLineChart(metrics.Entropy)
	c.Add(run("a", metrics.Entropy, 3, 2, 1))
	b := c.MIMEBundle()
	img, ok := b["image/png"].([]byte)
	if !ok || !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Fatalf("image/png is %T, want PNG bytes", b["image/png"])
	}
	if txt, _ := b["text/plain"].(string); txt != "line chart of a: actor/entropy" {
		t.Errorf("text/plain = %q", txt)
	}
	// The PNG is drawn at 2× and displayed at its design size.
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	meta := c.MIMEMetadata()["image/png"].(map[string]any)
	if w := meta["width"].(int); w*2 != cfg.Width && w*2 != cfg.Width+1 && w*2 != cfg.Width-1 {
		t.Errorf("display width %d px for a %d px image, want half", w, cfg.Width)
	}

	bad := plots.NewLineChart(metrics.Entropy)
	b = bad.MIMEBundle()
	if _, has := b["image/png"]; has || !strings.Contains(b["text/plain"].(string), "no runs to plot") {
		t.Errorf("a failing chart displays %v, want its error as text", b)
	}
}

func TestDashboardOmitsAbsentPanels(t *testing.T) {
	h := &metrics.History{Name: "critic-free"}
	for s := range 5 {
		h.Steps = append(h.Steps, metrics.Step{Step: s, Values: map[string]float64{
			metrics.RewardMean: 0.1 * float64(s),
			metrics.Entropy:    1 - 0.1*float64(s),
			metrics.GradNorm:   1,
		}})
	}
	d := plots.NewDashboard()
	d.Add(h)
	f, err := d.Figure()
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, p := range f.Panels {
		titles = append(titles, p.Title.Text)
	}
	want := "reward mean|entropy|gradient norm (log)"
	if got := strings.Join(titles, "|"); got != want {
		t.Errorf("panels %q, want %q", got, want)
	}
	// Only the bottom row (here: all three panels, one row) names the axis.
	for _, p := range f.Panels {
		if p.X.Label.Text != "step" {
			t.Errorf("panel %q: x label %q", p.Title.Text, p.X.Label.Text)
		}
	}
}

// The template-collapse panel shows a metric computed on some steps only.
func TestDashboardCollapsePanel(t *testing.T) {
	h := &metrics.History{Name: "collapse"}
	for s := 1; s <= 10; s++ {
		v := map[string]float64{metrics.RewardMean: 0.1 * float64(s)}
		if s == 1 || s%5 == 0 {
			v[metrics.CollapseMI] = 0.2 / float64(s)
		}
		h.Steps = append(h.Steps, metrics.Step{Step: s, Values: v})
	}
	d := plots.NewDashboard()
	d.Add(h)
	f, err := d.Figure()
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, p := range f.Panels {
		titles = append(titles, p.Title.Text)
	}
	if got, want := strings.Join(titles, "|"), "reward mean|MI of prompt and reasoning"; got != want {
		t.Errorf("panels %q, want %q", got, want)
	}
	if _, err := d.PNG(); err != nil {
		t.Fatal(err)
	}
}

func TestLogScaleNeverPanics(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		note   string
	}{
		{[]float64{0, 0, 0}, "step · linear: no value > 0"},
		{[]float64{-1, 2, 0, 4}, "step · 2 values ≤ 0 skipped (log)"},
		{[]float64{5}, "step"},
		{[]float64{math.NaN(), 3, math.Inf(-1), 3}, "step · 2 NaN/Inf skipped"},
	} {
		c := plots.NewLineChart(metrics.GradNorm)
		c.LogY = true
		c.Smoothing = 0.5
		c.Add(run("a", metrics.GradNorm, tc.values...))
		f, err := c.Figure()
		if err != nil {
			t.Fatalf("%v: %v", tc.values, err)
		}
		if got := f.Panels[0].X.Label.Text; got != tc.note {
			t.Errorf("%v: note %q, want %q", tc.values, got, tc.note)
		}
		if _, err := f.PNG(); err != nil {
			t.Errorf("%v: %v", tc.values, err)
		}
	}
}

func TestColoursFollowRunOrder(t *testing.T) {
	a, b := synthRun("a", 1, 0), synthRun("b", 2, 0)
	d := plots.NewDashboard()
	d.Add(a, b)
	c := plots.NewLineChart(metrics.Entropy)
	c.Add(a, b)
	fd, _ := d.Figure()
	fc, _ := c.Figure()
	for i := range 2 {
		if fd.Legend[i].Color != plots.Palette[i] || fc.Legend[i].Color != plots.Palette[i] {
			t.Errorf("run %d: colours %v and %v, want %v", i, fd.Legend[i].Color, fc.Legend[i].Color, plots.Palette[i])
		}
	}
}

// A critic-free sample (GRPO: V = 0, one advantage for the trajectory)
// leaves the value line out and says so; turn boundaries are marked where
// the turn changes, and a long trajectory still renders.
func TestCreditChartWithoutCritic(t *testing.T) {
	var s metrics.Sample
	s.Split, s.Step = metrics.SplitTrain, 3
	for i := range 400 {
		tok := metrics.SampleToken{Turn: i / 150, Advantage: -0.7, Return: 0.2}
		if i == 399 {
			tok.Reward = 0.2
		}
		s.Tokens = append(s.Tokens, tok)
	}
	f, err := plots.NewCreditChart(s).Figure()
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Panels[0].Title.Text; got != "return G_t and reward r_t (no critic: V = 0)" {
		t.Errorf("top panel title %q", got)
	}
	var labels []string
	for _, e := range f.Legend {
		labels = append(labels, e.Label)
	}
	if got := strings.Join(labels, "|"); got != "return G_t|reward r_t|advantage > 0|advantage < 0" {
		t.Errorf("legend %q", got)
	}
	if _, err := f.PNG(); err != nil {
		t.Fatal(err)
	}
	if svg, err := f.SVG(); err != nil || !bytes.Contains(svg, []byte("turn 3")) {
		t.Errorf("SVG: %v, or no turn label", err)
	}
	want := "credit chart of train step 3 · seed 0 · reward 0 (failure): 400 agent tokens in 3 turns, 1 with a reward, no critic"
	if got := plots.NewCreditChart(s).String(); !strings.HasPrefix(got, want+"\n") {
		t.Errorf("summary %q, want it to start with %q", got, want)
	}
}

// TestAxesAndLegend: every panel labels its y axis; a single run named
// like the title gets no legend entry (it would repeat the title).
func TestAxesAndLegend(t *testing.T) {
	h := synthRun("bandit", 1, 0)
	d := plots.NewDashboard()
	d.Title = "bandit"
	d.Smoothing = 0.6
	d.Add(h)
	f, err := d.Figure()
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range f.Panels {
		if p.Y.Label.Text == "" {
			t.Errorf("dashboard panel %d (%s) has no y label", i, p.Title.Text)
		}
	}
	for _, e := range f.Legend {
		if e.Label == d.Title {
			t.Errorf("legend repeats the title %q: %+v", d.Title, f.Legend)
		}
	}
	d.Title = "another title"
	if f, err = d.Figure(); err != nil || len(f.Legend) == 0 || f.Legend[0].Label != "bandit" {
		t.Errorf("a run named unlike the title has no legend entry: %v %+v", err, f.Legend)
	}

	c := plots.NewLineChart(metrics.Entropy)
	c.Add(h)
	if f, err = c.Figure(); err != nil || f.Panels[0].Y.Label.Text != metrics.Entropy {
		t.Errorf("line chart: %v, y label %q, want %s", err, f.Panels[0].Y.Label.Text, metrics.Entropy)
	}
}
