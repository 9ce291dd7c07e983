package plots

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ragen-go/ragen/engine/metrics"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// GradientTerms are the actor loss's terms a gradient report measures, in
// the order they are drawn.
var GradientTerms = []string{metrics.GradTask, metrics.GradEntropy, metrics.GradKL}

// GradientBucket is one bucket of a gradient report (train.Config.GradientReportEvery).
type GradientBucket struct {
	Name                    string // "all", "bucket_1" (lowest reward std), …
	Samples, Groups         int
	StdMean, StdMin, StdMax float64 // in-group reward std of its groups
	// By term (GradientTerms; a term off in the loss is absent): the
	// gradient norm, per trajectory and per loss token; the loss terms'
	// values by their names (metrics.GradLossPolicy, …, GradLossTotal).
	Norm, PerSample, PerToken, Loss map[string]float64
}

// GradientReport is one step's gradient analysis, read back from its
// metrics.
type GradientReport struct {
	Run     string
	Step    int
	All     *GradientBucket  // the whole batch; nil if absent
	Buckets []GradientBucket // bucket_1, bucket_2, … by increasing std
}

// GradientReportAt reads the gradient analysis of step from h; step < 0
// takes the last step that has one. ok is false when there is none.
func GradientReportAt(h *metrics.History, step int) (r GradientReport, ok bool) {
	for i := len(h.Steps) - 1; i >= 0; i-- {
		s := h.Steps[i]
		if step >= 0 && s.Step != step {
			continue
		}
		if r, ok = gradientReport(s); ok {
			r.Run = h.Name
			return r, true
		}
		if step >= 0 {
			break
		}
	}
	return GradientReport{}, false
}

// gradientReport collects the grad_norm/<bucket>/… metrics of one step.
func gradientReport(s metrics.Step) (GradientReport, bool) {
	byName := map[string]*GradientBucket{}
	bucket := func(name string) *GradientBucket {
		b := byName[name]
		if b == nil {
			b = &GradientBucket{Name: name, Norm: map[string]float64{}, PerSample: map[string]float64{},
				PerToken: map[string]float64{}, Loss: map[string]float64{}}
			byName[name] = b
		}
		return b
	}
	for k, v := range s.Values {
		rest, ok := strings.CutPrefix(k, metrics.GradPrefix)
		if !ok {
			continue
		}
		name, field, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		b := bucket(name)
		switch {
		case field == metrics.GradSampleCount:
			b.Samples = int(v)
		case field == metrics.GradGroupCount:
			b.Groups = int(v)
		case field == metrics.GradStdMean:
			b.StdMean = v
		case field == metrics.GradStdMin:
			b.StdMin = v
		case field == metrics.GradStdMax:
			b.StdMax = v
		case strings.HasPrefix(field, metrics.GradPerSample):
			b.PerSample[strings.TrimPrefix(field, metrics.GradPerSample)] = v
		case strings.HasPrefix(field, metrics.GradPerToken):
			b.PerToken[strings.TrimPrefix(field, metrics.GradPerToken)] = v
		case field == metrics.GradLossPolicy, field == metrics.GradLossEntropy, field == metrics.GradLossKL, field == metrics.GradLossTotal:
			b.Loss[field] = v
		default:
			b.Norm[field] = v
		}
	}
	if len(byName) == 0 {
		return GradientReport{}, false
	}
	r := GradientReport{Step: s.Step, All: byName["all"]}
	for name, b := range byName {
		if name != "all" {
			r.Buckets = append(r.Buckets, *b)
		}
	}
	// bucket_10 after bucket_9: by the number.
	num := func(name string) int { n, _ := strconv.Atoi(strings.TrimPrefix(name, "bucket_")); return n }
	sort.Slice(r.Buckets, func(i, j int) bool { return num(r.Buckets[i].Name) < num(r.Buckets[j].Name) })
	return r, true
}

// GradientChart draws a gradient report: the norm of each term's gradient
// (task, entropy, KL) against the reward-std bucket, in three panels —
// the norm, per trajectory and per loss token — on a log axis. RAGEN-2's
// reading: the task gradient shrinks with the reward std (a group whose
// members score alike has little advantage to follow) while the
// regularisers' do not, so in low-std buckets they dominate the update.
//
//	c := plots.NewGradientChart(report)
//	c.Save("gradients.png")
type GradientChart struct {
	Title  string // figure title; empty means "gradient norm by reward-std bucket, step N"
	Report GradientReport
}

// NewGradientChart returns the chart of a report.
func NewGradientChart(r GradientReport) *GradientChart { return &GradientChart{Report: r} }

// Figure builds the chart's figure.
func (c *GradientChart) Figure() (*Figure, error) {
	r := c.Report
	if len(r.Buckets) == 0 {
		return nil, fmt.Errorf("plots: gradient chart: the report of step %d has no buckets", r.Step)
	}
	title := c.Title
	if title == "" {
		title = fmt.Sprintf("gradient norm by reward-std bucket, step %d", r.Step)
		if r.Run != "" {
			title = r.Run + ": " + title
		}
	}
	var terms []string
	for _, term := range GradientTerms {
		if _, ok := r.Buckets[0].Norm[term]; ok {
			terms = append(terms, term)
		}
	}
	f := &Figure{Title: title, Cols: 3, PanelWidth: 3.2 * vg.Inch, PanelHeight: 2.6 * vg.Inch}
	for i, term := range terms {
		f.Legend = append(f.Legend, LegendEntry{Label: term, Color: colorAt(i)})
	}
	ticks := make([]plot.Tick, len(r.Buckets))
	for k, b := range r.Buckets {
		ticks[k] = plot.Tick{Value: float64(k + 1), Label: fmt.Sprintf("%d\n%.3g", k+1, b.StdMean)}
	}
	panels := []struct {
		title string
		of    func(b *GradientBucket) map[string]float64
	}{
		{"norm", func(b *GradientBucket) map[string]float64 { return b.Norm }},
		{"per trajectory", func(b *GradientBucket) map[string]float64 { return b.PerSample }},
		{"per token", func(b *GradientBucket) map[string]float64 { return b.PerToken }},
	}
	summary := fmt.Sprintf("gradient norms by reward-std bucket, step %d:", r.Step)
	for k := range r.Buckets {
		b := &r.Buckets[k]
		summary += fmt.Sprintf("\n  %s (std %.3g, %d groups):", b.Name, b.StdMean, b.Groups)
		for _, term := range terms {
			summary += fmt.Sprintf(" %s %.3g", term, b.Norm[term])
		}
	}
	for pi, pn := range panels {
		p := newPlot()
		p.Title.Text = pn.title
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = 0.5, float64(len(r.Buckets))+0.5
		p.X.Label.Text = "bucket, mean reward std"
		if pi == 0 {
			p.Y.Label.Text = "gradient L2 norm"
		}
		addGrid(p)
		positive := true
		lo, hi := math.Inf(1), math.Inf(-1)
		for ti, term := range terms {
			var xy plotter.XYs
			for k := range r.Buckets {
				v, ok := pn.of(&r.Buckets[k])[term]
				if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				xy = append(xy, plotter.XY{X: float64(k + 1), Y: v})
				positive = positive && v > 0
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			if len(xy) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(xy)
			if err != nil {
				return nil, fmt.Errorf("plots: gradient chart: %w", err)
			}
			l.Color, l.Width = colorAt(ti), vg.Points(1.5)
			s.Color, s.Shape, s.Radius = colorAt(ti), draw.CircleGlyph{}, vg.Points(2.5)
			p.Add(l, s)
		}
		if positive && hi > lo {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = logTicks{}
			p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
		}
		f.Panels = append(f.Panels, p)
	}
	f.Summary = summary
	return f, nil
}

// PNG renders the chart.
func (c *GradientChart) PNG() ([]byte, error) { return pngOf(c.Figure()) }

// SVG renders the chart as SVG.
func (c *GradientChart) SVG() ([]byte, error) { return svgOf(c.Figure()) }

// Save writes the chart to path (.png or .svg), atomically.
func (c *GradientChart) Save(path string) error {
	f, err := c.Figure()
	if err != nil {
		return err
	}
	return f.Save(path)
}

// MIMEBundle displays the chart in a notebook.
func (c *GradientChart) MIMEBundle() map[string]any { return bundleOf(c.Figure()) }

// MIMEMetadata gives the chart's display size.
func (c *GradientChart) MIMEMetadata() map[string]any { return metadataOf(c.Figure()) }

// String is the chart's text summary.
func (c *GradientChart) String() string { return stringOf(c.Figure()) }
