package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// GroupRewards is the reward of every trajectory of one training step,
// grouped as rolled out: the members of a group share one initial state, so
// their spread is the in-group reward std that StarPO-S filters on.
type GroupRewards struct {
	Step   int
	Groups [][]float64 // Groups[g][m]: reward of member m of group g
}

// GroupRewardChart shows the per-group reward distribution at chosen steps,
// one panel per step. Each group is a vertical range from its lowest to its
// highest reward, its members as dots and its mean as a tick, groups sorted
// by mean. Flat groups (every member the same reward: std 0, so zero
// advantage and no gradient under GRPO) are grey; a panel where most groups
// turn grey is a batch that has stopped teaching — the echo trap seen from
// the reward side. The y axis is shared by all panels.
//
//	g := plots.NewGroupRewardChart()
//	g.Add(plots.GroupRewards{Step: 0, Groups: early}, plots.GroupRewards{Step: 150, Groups: late})
//	g.Save("groups.png")
type GroupRewardChart struct {
	Title string // figure title; empty means "per-group rewards"
	Cols  int    // panels per row; 0 means up to 3
	steps []GroupRewards
}

// NewGroupRewardChart returns an empty chart.
func NewGroupRewardChart() *GroupRewardChart { return &GroupRewardChart{} }

// Add adds the rewards of one or more steps; each becomes a panel, in step order.
func (c *GroupRewardChart) Add(steps ...GroupRewards) { c.steps = append(c.steps, steps...) }

var (
	spreadColor = Palette[0]
	flatColor   = color.NRGBA{0x99, 0x99, 0x99, 0xFF}
)

// check reports the first malformed step.
func (c *GroupRewardChart) check() error {
	if len(c.steps) == 0 {
		return fmt.Errorf("no steps to plot (call Add)")
	}
	seen := map[int]bool{}
	for _, s := range c.steps {
		if seen[s.Step] {
			return fmt.Errorf("step %d added twice", s.Step)
		}
		seen[s.Step] = true
		if len(s.Groups) == 0 {
			return fmt.Errorf("step %d: no groups", s.Step)
		}
		for g, rs := range s.Groups {
			if len(rs) == 0 {
				return fmt.Errorf("step %d, group %d: no rewards", s.Step, g)
			}
			for m, r := range rs {
				if math.IsNaN(r) || math.IsInf(r, 0) {
					return fmt.Errorf("step %d, group %d, member %d: reward is %v", s.Step, g, m, r)
				}
			}
		}
	}
	return nil
}

// Figure builds the chart's figure.
func (c *GroupRewardChart) Figure() (*Figure, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("plots: group reward chart: %w", err)
	}
	steps := append([]GroupRewards(nil), c.steps...)
	sort.Slice(steps, func(i, j int) bool { return steps[i].Step < steps[j].Step })
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range steps {
		for _, rs := range s.Groups {
			for _, r := range rs {
				ymin, ymax = math.Min(ymin, r), math.Max(ymax, r)
			}
		}
	}
	if ymin == ymax {
		ymin, ymax = ymin-0.5, ymax+0.5
	}
	pad := 0.05 * (ymax - ymin)
	cols := c.Cols
	if cols <= 0 {
		cols = min(3, len(steps))
	}
	title := c.Title
	if title == "" {
		title = "per-group rewards"
	}
	f := &Figure{
		Title: title,
		Legend: []LegendEntry{
			{Label: "group: min–max, members, mean", Color: spreadColor},
			{Label: "flat group (std 0: no signal)", Color: flatColor},
		},
		Cols:        cols,
		PanelWidth:  3.3 * vg.Inch,
		PanelHeight: 2.6 * vg.Inch,
	}
	summary := "per-group rewards:"
	for i, s := range steps {
		st := newStrips(s.Groups)
		p := newPlot()
		p.Title.Text = fmt.Sprintf("step %d: %d of %d groups flat", s.Step, st.flat, len(st.groups))
		p.Add(st)
		p.Y.Min, p.Y.Max = ymin-pad, ymax+pad
		p.X.Tick.Marker = plot.ConstantTicks(nil)
		if i%cols == 0 {
			p.Y.Label.Text = "reward"
		}
		if i+cols >= len(steps) {
			p.X.Label.Text = "groups, by mean reward"
		}
		f.Panels = append(f.Panels, p)
		summary += fmt.Sprintf("\n  step %d: %d groups, %d flat, mean in-group std %.3g", s.Step, len(st.groups), st.flat, st.meanStd)
	}
	f.Summary = summary
	return f, nil
}

// strips draws the groups of one step; it implements plot.Plotter and
// plot.DataRanger with group g at x = g+1.
type strips struct {
	groups  []groupStats // sorted by mean, then by spread
	flat    int
	meanStd float64
}

type groupStats struct {
	rewards      []float64
	lo, hi, mean float64
	std          float64 // population std, as the filter computes it
}

func newStrips(groups [][]float64) strips {
	var st strips
	for _, rs := range groups {
		g := groupStats{rewards: rs, lo: math.Inf(1), hi: math.Inf(-1)}
		for _, r := range rs {
			g.mean += r
			g.lo, g.hi = math.Min(g.lo, r), math.Max(g.hi, r)
		}
		g.mean /= float64(len(rs))
		for _, r := range rs {
			g.std += (r - g.mean) * (r - g.mean)
		}
		g.std = math.Sqrt(g.std / float64(len(rs)))
		if g.lo == g.hi {
			st.flat++
		}
		st.meanStd += g.std / float64(len(groups))
		st.groups = append(st.groups, g)
	}
	sort.SliceStable(st.groups, func(i, j int) bool {
		a, b := st.groups[i], st.groups[j]
		if a.mean != b.mean {
			return a.mean < b.mean
		}
		return a.hi-a.lo < b.hi-b.lo
	})
	return st
}

func (st strips) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, g := range st.groups {
		ymin, ymax = math.Min(ymin, g.lo), math.Max(ymax, g.hi)
	}
	return 0.5, float64(len(st.groups)) + 0.5, ymin, ymax
}

func (st strips) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	slot := trX(2) - trX(1) // width of one group
	for i, g := range st.groups {
		col := spreadColor
		if g.lo == g.hi {
			col = flatColor
		}
		x := trX(float64(i + 1))
		c.StrokeLine2(draw.LineStyle{Color: withAlpha(col, 0x90), Width: vg.Points(2)}, x, trY(g.lo), x, trY(g.hi))
		// Members spread sideways in a fixed order so equal rewards stay
		// countable: reward 0 and 1 are common.
		n := len(g.rewards)
		dx := min(vg.Points(3), 0.7*slot/vg.Length(max(n, 1)))
		for m, r := range g.rewards {
			off := (vg.Length(m) - vg.Length(n-1)/2) * dx
			c.DrawGlyph(draw.GlyphStyle{Color: col, Radius: vg.Points(1.6), Shape: draw.CircleGlyph{}},
				vg.Point{X: x + off, Y: trY(r)})
		}
		half := min(0.4*slot, vg.Points(7))
		tick := draw.LineStyle{Color: inkColor, Width: vg.Points(1.4)}
		if g.lo == g.hi { // the members are the mean: keep the group grey
			tick.Color, tick.Width = flatColor, vg.Points(2.5)
		}
		c.StrokeLine2(tick, x-half, trY(g.mean), x+half, trY(g.mean))
	}
}

// PNG renders the chart as a PNG at DefaultDPI.
func (c *GroupRewardChart) PNG() ([]byte, error) { return pngOf(c.Figure()) }

// SVG renders the chart as SVG.
func (c *GroupRewardChart) SVG() ([]byte, error) { return svgOf(c.Figure()) }

// Save writes the chart to path; the extension (.png, .svg) picks the format.
func (c *GroupRewardChart) Save(path string) error {
	f, err := c.Figure()
	if err != nil {
		return err
	}
	return f.Save(path)
}

// MIMEBundle displays the chart in a notebook (see Figure.MIMEBundle).
func (c *GroupRewardChart) MIMEBundle() map[string]any { return bundleOf(c.Figure()) }

// MIMEMetadata gives the display size (see Figure.MIMEMetadata).
func (c *GroupRewardChart) MIMEMetadata() map[string]any { return metadataOf(c.Figure()) }

// String is the chart's text/plain form.
func (c *GroupRewardChart) String() string { return stringOf(c.Figure()) }
