package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// line is one drawn series of a panel, with an optional shaded band.
type line struct {
	color  color.Color
	dashed bool
	faint  bool // the raw data under a smoothed line
	// bandOnly draws the band alone: the line itself is another entry.
	bandOnly bool
	// smoothed marks the EMA of a run whose raw data is the faint line:
	// skipped points are counted on the raw data, not twice.
	smoothed bool
	// points marks each value with a dot: validation, measured every few
	// steps, whose line between measurements is no data.
	points bool
	c      curve
	lo, hi []float64 // band edges at c.x; nil for no band
}

// marker is a collapse-monitor event drawn as a dashed vertical line.
type marker struct {
	step  float64
	label string
	color color.Color
}

// skipped counts the points a panel could not draw, so it can say so
// under its axis instead of silently showing less.
type skipped struct {
	nonFinite   int // NaN or ±Inf values
	nonPositive int // values ≤ 0 on a log axis
	unshared    int // steps that not every seed of a group recorded
	logOff      bool
}

func (s *skipped) add(o skipped) {
	s.nonFinite += o.nonFinite
	s.nonPositive += o.nonPositive
	s.unshared += o.unshared
	s.logOff = s.logOff || o.logOff
}

func (s skipped) notes() []string {
	var n []string
	if s.nonFinite > 0 {
		n = append(n, fmt.Sprintf("%d NaN/Inf skipped", s.nonFinite))
	}
	if s.logOff {
		n = append(n, "linear: no value > 0")
	} else if s.nonPositive > 0 {
		n = append(n, fmt.Sprintf("%d %s ≤ 0 skipped (log)", s.nonPositive, plural(s.nonPositive, "value")))
	}
	if s.unshared > 0 {
		n = append(n, fmt.Sprintf("%d %s not in all seeds skipped", s.unshared, plural(s.unshared, "step")))
	}
	return n
}

// panel is one chart of a figure before it becomes a gonum plot.
type panel struct {
	title  string
	xLabel string // "step" on the bottom row; notes are appended
	yLabel string // what the y axis measures
	logY   bool
	unit   bool // a rate: the y axis always shows 0 and 1
	zeroY  bool // a count: the y axis starts at 0
	lines  []line
	marks  []marker
	skip   skipped
}

// plot turns the panel into a gonum plot: bands under faint raw lines under
// the main lines, event markers on top.
func (p *panel) plot() (*plot.Plot, error) {
	lines, logY := p.lines, p.logY
	if logY {
		var n int
		lines, n = positiveOnly(p.lines)
		p.skip.nonPositive += n
		if lines == nil {
			lines, logY, p.skip.logOff = p.lines, false, true
		}
	}

	pl := newPlot()
	pl.Title.Text = p.title
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	pl.Add(grid)
	for _, l := range lines {
		if l.lo == nil {
			continue
		}
		ring := make(plotter.XYs, 0, 2*len(l.c.x))
		for i, x := range l.c.x {
			ring = append(ring, plotter.XY{X: x, Y: l.hi[i]})
		}
		for i := len(l.c.x) - 1; i >= 0; i-- {
			ring = append(ring, plotter.XY{X: l.c.x[i], Y: l.lo[i]})
		}
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return nil, err
		}
		poly.Color = withAlpha(l.color, 0x40)
		poly.LineStyle.Width = 0
		pl.Add(poly)
	}
	for _, faint := range []bool{true, false} {
		for _, l := range lines {
			if l.faint != faint || l.bandOnly {
				continue
			}
			xys := make(plotter.XYs, len(l.c.x))
			for i := range xys {
				xys[i] = plotter.XY{X: l.c.x[i], Y: l.c.y[i]}
			}
			ln, err := plotter.NewLine(xys)
			if err != nil {
				return nil, err
			}
			ln.Color, ln.Width = l.color, vg.Points(1.6)
			if l.faint {
				ln.Color, ln.Width = withAlpha(l.color, 0x50), vg.Points(0.8)
			}
			if l.dashed {
				ln.Dashes = []vg.Length{vg.Points(5), vg.Points(2.5)}
			}
			pl.Add(ln)
			if l.points {
				dots, err := plotter.NewScatter(xys)
				if err != nil {
					return nil, err
				}
				dots.GlyphStyle = draw.GlyphStyle{Color: l.color, Radius: vg.Points(2.2), Shape: draw.CircleGlyph{}}
				pl.Add(dots)
			}
		}
	}
	if len(p.marks) > 0 {
		pl.Add(markers(p.marks))
	}

	if p.unit {
		pl.Y.Min, pl.Y.Max = math.Min(pl.Y.Min, 0), math.Max(pl.Y.Max, 1)
	}
	if p.zeroY && !logY {
		pl.Y.Min = math.Min(pl.Y.Min, 0)
	}
	if logY {
		if pl.Y.Min == pl.Y.Max { // one value: show the decade around it
			pl.Y.Min, pl.Y.Max = pl.Y.Min/3, pl.Y.Max*3
		}
		pl.Y.Scale, pl.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	}
	if len(p.marks) > 0 {
		// Headroom above the data for the first lane of event labels.
		if logY {
			pl.Y.Max *= math.Pow(pl.Y.Max/pl.Y.Min, markHeadroom)
		} else if pl.Y.Max > pl.Y.Min {
			pl.Y.Max += markHeadroom * (pl.Y.Max - pl.Y.Min)
		}
	}
	pl.X.Label.Text = strings.Join(append(nonEmpty(p.xLabel), p.skip.notes()...), " · ")
	pl.Y.Label.Text = p.yLabel
	return pl, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// positiveOnly keeps the points a log axis can show and counts the others.
// A band's lower edge that reaches zero or below is clamped to the smallest
// positive value drawn, so the band stays visible without stretching the
// axis down to a meaningless 1e-300. It returns nil if nothing is left.
func positiveOnly(ls []line) (out []line, dropped int) {
	minPos := math.Inf(1)
	for _, l := range ls {
		for _, y := range l.c.y {
			if y > 0 {
				minPos = math.Min(minPos, y)
			}
		}
	}
	if math.IsInf(minPos, 1) {
		return nil, 0
	}
	for _, l := range ls {
		k := line{color: l.color, dashed: l.dashed, faint: l.faint, bandOnly: l.bandOnly, smoothed: l.smoothed, points: l.points}
		for i, y := range l.c.y {
			if y <= 0 {
				if !l.smoothed && !l.bandOnly {
					dropped++
				}
				continue
			}
			k.c.x = append(k.c.x, l.c.x[i])
			k.c.y = append(k.c.y, y)
			if l.lo != nil {
				k.lo = append(k.lo, math.Max(l.lo[i], minPos))
				k.hi = append(k.hi, math.Max(l.hi[i], minPos))
			}
		}
		if len(k.c.x) > 0 {
			out = append(out, k)
		}
	}
	return out, dropped
}

// markers draws events as dashed vertical lines, each with a short label at
// the top of the data area. Lines of one run closer than mergeDist share a
// label ("1, 2"; stacked one per line when that is what fits); a marker
// without a label is a line alone. A label goes right of its line, or left
// of it near the right edge, never outside the data area; it sits as high
// as it can without overlapping an earlier label, and is left out (the line
// stays) if that would put it below the top labelZone of the panel.
type markers []marker

const (
	mergeDist    = vg.Length(8) // points
	labelZone    = 0.45         // fraction of the data height, from the top, that labels may use
	markHeadroom = 0.15         // fraction of the y range added above the data when events are drawn
)

func (ms markers) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	sty := textStyle(textSize, draw.XLeft, draw.YTop)
	pad := vg.Points(3)
	sorted := append(markers(nil), ms...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].step < sorted[j].step })
	type labelAt struct {
		x     vg.Length
		parts []string
		color color.Color
	}
	var labels []labelAt
	for _, m := range sorted {
		if m.step < plt.X.Min || m.step > plt.X.Max {
			continue
		}
		x := trX(m.step)
		c.StrokeLine2(draw.LineStyle{
			Color:  m.color,
			Width:  vg.Points(1.2),
			Dashes: []vg.Length{vg.Points(4), vg.Points(3)},
		}, x, c.Min.Y, x, c.Max.Y)
		if m.label == "" {
			continue
		}
		if n := len(labels); n > 0 && labels[n-1].color == m.color && x-labels[n-1].x < mergeDist {
			labels[n-1].parts = append(labels[n-1].parts, m.label)
			labels[n-1].x = x
			continue
		}
		labels = append(labels, labelAt{x, []string{m.label}, m.color})
	}

	type rect struct{ x0, x1, y0, y1 vg.Length }
	var placed []rect
	floor := c.Max.Y - labelZone*(c.Max.Y-c.Min.Y)
	for _, m := range labels {
		txt := strings.Join(m.parts, ", ")
		if stacked := strings.Join(m.parts, "\n"); m.x+sty.Width(txt)+2*pad > c.Max.X && m.x+sty.Width(stacked)+2*pad <= c.Max.X {
			txt = stacked
		}
		w, h := sty.Width(txt), sty.Height(txt)
		left := m.x + pad
		if left+w+pad > c.Max.X {
			left = max(m.x-pad-w, c.Min.X+pad)
		}
		// Candidate tops: the top of the panel, then just under each label
		// placed so far; the highest free one wins.
		tops := []vg.Length{c.Max.Y - pad}
		for _, r := range placed {
			tops = append(tops, r.y0-pad)
		}
		sort.Slice(tops, func(i, j int) bool { return tops[i] > tops[j] })
		for _, top := range tops {
			r := rect{left - pad, left + w + pad, top - h - pad, top + pad}
			if r.y0 < floor {
				break
			}
			free := true
			for _, o := range placed {
				if r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1 {
					free = false
					break
				}
			}
			if !free {
				continue
			}
			placed = append(placed, r)
			x0, x1, y0, y1 := left-2, left+w+2, top-h-1, top+1
			c.FillPolygon(color.NRGBA{0xFF, 0xFF, 0xFF, 0xE0}, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
			c.FillText(sty, vg.Point{X: left, Y: top}, txt)
			break
		}
	}
}

// shortKind turns an event kind such as "entropy_drop" into a label.
func shortKind(kind string) string {
	s := strings.ReplaceAll(kind, "_", " ")
	if r := []rune(s); len(r) > 18 {
		s = string(r[:17]) + "…"
	}
	return s
}
