package plots

import (
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/metrics"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// ReasoningChart shows reasoning-length decay: think tokens per turn
// against step, one line per run or environment. RAGEN reports that
// reasoning shrinks under RL unless the reward asks for it; the legend
// gives each line's change, the mean of its last 10% of points against the
// mean of its first 10%, so a shrinking habit reads as a number.
//
//	r := plots.NewReasoningChart()
//	r.Add(sokoban, frozenLake, bandit)
//	r.Save("think.png")
type ReasoningChart struct {
	Title     string  // figure title; empty means "reasoning length"
	Smoothing float64 // EMA decay β in [0, 1) (see EMA). Default 0
	Band      Band    // spread of seed groups. Default BandMinMax
	runs      runSet
}

// NewReasoningChart returns an empty reasoning-length chart.
func NewReasoningChart() *ReasoningChart { return &ReasoningChart{} }

// Add adds runs, one line each; name them by environment or preset.
func (r *ReasoningChart) Add(runs ...*metrics.History) { r.runs.add(runs) }

// AddSeeds adds runs that differ only in seed, drawn as their mean with a band.
func (r *ReasoningChart) AddSeeds(label string, seeds ...*metrics.History) {
	r.runs.addSeeds(label, seeds)
}

// Figure builds the chart's figure.
func (r *ReasoningChart) Figure() (*Figure, error) {
	wrap := func(err error) error { return fmt.Errorf("plots: reasoning chart: %w", err) }
	for _, err := range []error{checkSmoothing(r.Smoothing), r.Band.check(), r.runs.check()} {
		if err != nil {
			return nil, wrap(err)
		}
	}
	p := panel{
		title:  "think tokens per turn",
		zeroY:  true,
		xLabel: "step · change: last 10% of points vs first 10%",
		yLabel: "tokens",
	}
	shown := map[int]bool{}
	change := map[int]string{}
	for i := range r.runs {
		ls, skip, err := r.runs.trace(i, metrics.ThinkTokens, r.Smoothing, r.Band, false)
		if err != nil {
			return nil, wrap(err)
		}
		p.skip.add(skip)
		if len(ls) == 0 {
			continue
		}
		shown[i] = true
		// ls[0] is the raw curve of a run (smoothed or not) or a group's mean.
		change[i] = relativeChange(ls[0].c.y)
		p.lines = append(p.lines, ls...)
		p.marks = append(p.marks, r.runs.events(i)...)
	}
	if len(p.lines) == 0 {
		return nil, wrap(fmt.Errorf("no run recorded %s", metrics.ThinkTokens))
	}
	pl, err := p.plot()
	if err != nil {
		return nil, wrap(err)
	}
	title := r.Title
	if title == "" {
		title = "reasoning length"
	}
	return &Figure{
		Title:       title,
		Legend:      r.runs.legend(title, r.Band, shown, func(i int) string { return change[i] }),
		Panels:      []*plot.Plot{pl},
		PanelWidth:  6.5 * vg.Inch,
		PanelHeight: 3.5 * vg.Inch,
		Summary:     r.runs.summary("reasoning length", []string{metrics.ThinkTokens}),
	}, nil
}

// relativeChange formats the change from the mean of the first tenth of ys
// to the mean of the last tenth (at least one point each), e.g. " (−62%)";
// empty when the start is zero.
func relativeChange(ys []float64) string {
	k := max(1, len(ys)/10)
	var first, last float64
	for i := range k {
		first += ys[i]
		last += ys[len(ys)-k+i]
	}
	if first == 0 {
		return ""
	}
	pct := math.Round(100 * (last - first) / math.Abs(first))
	switch {
	case pct < 0:
		return fmt.Sprintf(" (−%.0f%%)", -pct) // U+2212, the minus sign
	case pct > 0:
		return fmt.Sprintf(" (+%.0f%%)", pct)
	}
	return " (±0%)"
}

// PNG renders the chart as a PNG at DefaultDPI.
func (r *ReasoningChart) PNG() ([]byte, error) { return pngOf(r.Figure()) }

// SVG renders the chart as SVG.
func (r *ReasoningChart) SVG() ([]byte, error) { return svgOf(r.Figure()) }

// Save writes the chart to path; the extension (.png, .svg) picks the format.
func (r *ReasoningChart) Save(path string) error {
	f, err := r.Figure()
	if err != nil {
		return err
	}
	return f.Save(path)
}

// MIMEBundle displays the chart in a notebook (see Figure.MIMEBundle).
func (r *ReasoningChart) MIMEBundle() map[string]any { return bundleOf(r.Figure()) }

// MIMEMetadata gives the display size (see Figure.MIMEMetadata).
func (r *ReasoningChart) MIMEMetadata() map[string]any { return metadataOf(r.Figure()) }

// String is the chart's text/plain form.
func (r *ReasoningChart) String() string { return stringOf(r.Figure()) }
