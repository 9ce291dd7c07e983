package plots

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/ragen-go/ragen/engine/metrics"
	"gonum.org/v1/plot/vg"
)

// Dashboard is the overview of one or more runs: a grid of the panels that
// show an echo trap coming (RAGEN §4; the paper's App. B.3 signals), each
// run in the same colour on every panel and its collapse-monitor events on
// every panel. Panels whose metrics no run recorded are left out, so a
// critic-free run has no empty critic box.
//
//	d := plots.NewDashboard()
//	d.Smoothing = 0.6
//	d.Add(run)
//	d.Save("run.png")
type Dashboard struct {
	Title     string  // figure title; empty means none
	Smoothing float64 // EMA decay β in [0, 1) for every panel (see EMA). Default 0
	Band      Band    // spread of seed groups. Default BandMinMax
	Cols      int     // panels per row. Default 3
	runs      runSet
}

// dashPanel is one panel of the dashboard: its metrics (the first drawn
// solid, the second dashed) and how to draw them.
type dashPanel struct {
	title   string
	yLabel  string // the unit of the y axis
	solid   string
	dashed  string // optional second metric
	dashTag string // how the title names the dashed one
	logY    bool
	unit    bool   // a rate in [0, 1]
	zeroY   bool   // a count: the axis starts at 0
	stdBand string // metric whose value is a ± band around a single run's line
}

// dashPanels is the dashboard's layout, in reading order.
var dashPanels = []dashPanel{
	{title: "reward mean", yLabel: "reward", solid: metrics.RewardMean, stdBand: metrics.InGroupStd},
	{title: "in-group reward std", yLabel: "reward std", solid: metrics.InGroupStd},
	{title: "success rate", yLabel: "success rate", solid: metrics.SuccessRate, dashed: metrics.ValSuccessRate, dashTag: "val", unit: true},
	{title: "entropy", yLabel: "entropy", solid: metrics.Entropy},
	{title: "gradient norm (log)", yLabel: "gradient norm", solid: metrics.GradNorm, logY: true},
	{title: "response tokens", yLabel: "tokens", solid: metrics.ResponseTokens, dashed: metrics.ThinkTokens, dashTag: "think/turn", zeroY: true},
	{title: "KL to rollout policy", yLabel: "KL", solid: metrics.ApproxKL, dashed: metrics.RefKL, dashTag: "to ref"},
	{title: "clip fraction", yLabel: "clipped fraction", solid: metrics.ClipFrac, dashed: metrics.ClipFracLower, dashTag: "low side"},
	{title: "filter keep ratio", yLabel: "kept fraction", solid: metrics.FilterKeepRatio, unit: true},
	// RAGEN-2's template collapse: on the steps that compute it (train.Config.CollapseEvery).
	{title: "MI of prompt and reasoning", yLabel: "nats per token", solid: metrics.CollapseMI},
}

// NewDashboard returns an empty dashboard.
func NewDashboard() *Dashboard { return &Dashboard{Cols: 3} }

// Add adds runs, each in the next palette colour.
func (d *Dashboard) Add(runs ...*metrics.History) { d.runs.add(runs) }

// AddSeeds adds runs that differ only in seed, drawn as their mean with a
// band on every panel.
func (d *Dashboard) AddSeeds(label string, seeds ...*metrics.History) {
	d.runs.addSeeds(label, seeds)
}

// Figure builds the dashboard's figure.
func (d *Dashboard) Figure() (*Figure, error) {
	wrap := func(err error) error { return fmt.Errorf("plots: dashboard: %w", err) }
	for _, err := range []error{checkSmoothing(d.Smoothing), d.Band.check(), d.runs.check()} {
		if err != nil {
			return nil, wrap(err)
		}
	}
	// Nine panels repeating "entropy drop" would bury the data: markers
	// carry a number, and the legend says what each number is.
	var marks []marker
	for i := range d.runs {
		marks = append(marks, d.runs.events(i)...)
	}
	sort.SliceStable(marks, func(a, b int) bool { return marks[a].step < marks[b].step })
	var key []LegendEntry
	for k := range marks {
		key = append(key, LegendEntry{
			Label:  fmt.Sprintf("%d: %s at step %d", k+1, marks[k].label, int(marks[k].step)),
			Color:  marks[k].color,
			Dashed: true,
		})
		marks[k].label = strconv.Itoa(k + 1)
	}
	var panels []*panel
	var titles []string
	shown := map[int]bool{}
	for _, spec := range dashPanels {
		p := &panel{title: spec.title, yLabel: spec.yLabel, logY: spec.logY, unit: spec.unit, zeroY: spec.zeroY, marks: marks}
		banded, dashedShown := false, false
		for k, metric := range []string{spec.solid, spec.dashed} {
			if metric == "" {
				continue
			}
			// A dashed second metric gets no seed band: two bands on one
			// panel (train and validation success) would hide each other.
			band := d.Band
			if k == 1 {
				band = BandNone
			}
			for i := range d.runs {
				ls, skip, err := d.runs.trace(i, metric, d.Smoothing, band, k == 1)
				if err != nil {
					return nil, wrap(err)
				}
				p.skip.add(skip)
				if len(ls) == 0 {
					continue
				}
				shown[i] = true
				dashedShown = dashedShown || k == 1
				if spec.stdBand != "" && !d.runs[i].group {
					band, err := d.stdBand(i, ls[len(ls)-1].c, spec.stdBand)
					if err != nil {
						return nil, wrap(err)
					}
					if band != nil {
						ls = append([]line{*band}, ls...)
						banded = true
					}
				}
				p.lines = append(p.lines, ls...)
			}
		}
		if len(p.lines) == 0 {
			continue
		}
		if banded {
			p.title += " ± in-group std"
		}
		if dashedShown {
			p.title += " (" + spec.dashTag + " dashed)"
			if isValidation(spec.dashed) {
				p.title = spec.title + " (" + spec.dashTag + ": dashed, dots)"
			}
		}
		panels = append(panels, p)
		titles = append(titles, spec.title)
	}
	if len(panels) == 0 {
		return nil, wrap(fmt.Errorf("no run recorded any dashboard metric (reward, success, entropy, ...)"))
	}
	cols := d.Cols
	if cols <= 0 {
		cols = 3
	}
	f := &Figure{
		Title:       d.Title,
		Legend:      append(d.runs.legend(d.Title, d.Band, shown, nil), key...),
		Cols:        cols,
		PanelWidth:  3.3 * vg.Inch,
		PanelHeight: 2.3 * vg.Inch,
		Summary:     d.runs.summary("dashboard", titles),
	}
	for i, p := range panels {
		if i+cols >= len(panels) { // nothing below it: label the step axis
			p.xLabel = "step"
		}
		pl, err := p.plot()
		if err != nil {
			return nil, wrap(err)
		}
		f.Panels = append(f.Panels, pl)
	}
	return f, nil
}

// stdBand returns the band mean ± std for run i around its drawn line m,
// with std read from metric and smoothed like the line, at the steps where
// both were recorded; nil if the run did not record metric.
func (d *Dashboard) stdBand(i int, m curve, metric string) (*line, error) {
	sd, _, err := metricCurve(d.runs[i].runs[0], metric)
	if err != nil || len(sd.x) == 0 {
		return nil, err
	}
	sd.y = EMA(sd.y, d.Smoothing)
	at := make(map[float64]float64, len(sd.x))
	for k, x := range sd.x {
		at[x] = sd.y[k]
	}
	b := line{color: colorAt(i), bandOnly: true}
	for k, x := range m.x {
		s, ok := at[x]
		if !ok {
			continue
		}
		b.c.x = append(b.c.x, x)
		b.c.y = append(b.c.y, m.y[k])
		b.lo = append(b.lo, m.y[k]-s)
		b.hi = append(b.hi, m.y[k]+s)
	}
	if len(b.c.x) == 0 {
		return nil, nil
	}
	return &b, nil
}

// PNG renders the dashboard as a PNG at DefaultDPI.
func (d *Dashboard) PNG() ([]byte, error) { return pngOf(d.Figure()) }

// SVG renders the dashboard as SVG.
func (d *Dashboard) SVG() ([]byte, error) { return svgOf(d.Figure()) }

// Save writes the dashboard to path; the extension (.png, .svg) picks the format.
func (d *Dashboard) Save(path string) error {
	f, err := d.Figure()
	if err != nil {
		return err
	}
	return f.Save(path)
}

// MIMEBundle displays the dashboard in a notebook (see Figure.MIMEBundle).
func (d *Dashboard) MIMEBundle() map[string]any { return bundleOf(d.Figure()) }

// MIMEMetadata gives the display size (see Figure.MIMEMetadata).
func (d *Dashboard) MIMEMetadata() map[string]any { return metadataOf(d.Figure()) }

// String is the dashboard's text/plain form.
func (d *Dashboard) String() string { return stringOf(d.Figure()) }
