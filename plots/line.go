package plots

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/metrics"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// LineChart draws one metric against the training step for any number of
// runs (a sweep, presets) and seed groups, with a shared legend and the
// runs' collapse-monitor events as labelled dashed lines.
//
//	c := plots.NewLineChart(metrics.Entropy)
//	c.Smoothing = 0.6
//	c.Add(baseline, clipHigher)
//	c.AddSeeds("StarPO-S", s0, s1, s2)
//	c.Save("entropy.png")
type LineChart struct {
	Metric    string  // the metric name (engine/metrics); required
	Title     string  // figure title; empty means the metric name
	Smoothing float64 // EMA decay β in [0, 1) (see EMA); 0 draws the raw data. Default 0
	LogY      bool    // log-scale y axis; values ≤ 0 are skipped and counted under the axis
	Band      Band    // spread of a seed group around its mean. Default BandMinMax
	runs      runSet
}

// NewLineChart returns an empty chart of metric.
func NewLineChart(metric string) *LineChart { return &LineChart{Metric: metric} }

// Add adds runs, each drawn as its own line in the next palette colour.
func (c *LineChart) Add(runs ...*metrics.History) { c.runs.add(runs) }

// AddSeeds adds runs that differ only in seed, drawn as one mean line with
// a band (see Band) over the steps that all of them recorded.
func (c *LineChart) AddSeeds(label string, seeds ...*metrics.History) {
	c.runs.addSeeds(label, seeds)
}

// Figure builds the chart's figure; its panel is a gonum *plot.Plot that
// can be adjusted before rendering.
func (c *LineChart) Figure() (*Figure, error) {
	if c.Metric == "" {
		return nil, fmt.Errorf("plots: line chart: Metric is empty")
	}
	wrap := func(err error) error { return fmt.Errorf("plots: line chart of %s: %w", c.Metric, err) }
	for _, err := range []error{checkSmoothing(c.Smoothing), c.Band.check(), c.runs.check()} {
		if err != nil {
			return nil, wrap(err)
		}
	}
	p := panel{xLabel: "step", yLabel: c.Metric, logY: c.LogY}
	shown := map[int]bool{}
	for i := range c.runs {
		ls, skip, err := c.runs.trace(i, c.Metric, c.Smoothing, c.Band, false)
		if err != nil {
			return nil, wrap(err)
		}
		p.skip.add(skip)
		if len(ls) > 0 {
			shown[i] = true
			p.lines = append(p.lines, ls...)
			p.marks = append(p.marks, c.runs.events(i)...)
		}
	}
	if len(p.lines) == 0 {
		return nil, wrap(fmt.Errorf("no run recorded it"))
	}
	pl, err := p.plot()
	if err != nil {
		return nil, wrap(err)
	}
	title := c.Title
	if title == "" {
		title = c.Metric
	}
	return &Figure{
		Title:       title,
		Legend:      c.runs.legend(title, c.Band, shown, nil),
		Panels:      []*plot.Plot{pl},
		PanelWidth:  6.5 * vg.Inch,
		PanelHeight: 3.5 * vg.Inch,
		Summary:     c.runs.summary("line chart", []string{c.Metric}),
	}, nil
}

// PNG renders the chart as a PNG at DefaultDPI.
func (c *LineChart) PNG() ([]byte, error) { return pngOf(c.Figure()) }

// SVG renders the chart as SVG.
func (c *LineChart) SVG() ([]byte, error) { return svgOf(c.Figure()) }

// Save writes the chart to path; the extension (.png, .svg) picks the format.
func (c *LineChart) Save(path string) error {
	f, err := c.Figure()
	if err != nil {
		return err
	}
	return f.Save(path)
}

// MIMEBundle displays the chart in a notebook (see Figure.MIMEBundle).
func (c *LineChart) MIMEBundle() map[string]any { return bundleOf(c.Figure()) }

// MIMEMetadata gives the display size (see Figure.MIMEMetadata).
func (c *LineChart) MIMEMetadata() map[string]any { return metadataOf(c.Figure()) }

// String is the chart's text/plain form.
func (c *LineChart) String() string { return stringOf(c.Figure()) }
