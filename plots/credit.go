package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"github.com/ragen-go/ragen/engine/metrics"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// CreditChart shows credit assignment on one training trajectory: what
// each token the agent sampled was paid and how the estimator spread it.
// The x axis is the agent's tokens of the whole trajectory in order
// (prompts and observations are not trained on, so they are left out);
// dashed lines mark where a turn begins.
//
// The top panel has the critic's value V(s_t) and the return G_t, the
// regression target of the critic, as lines, and the reward r_t as stems
// on the tokens that received one: the sparse environment reward on a
// turn's or the trajectory's last token, and, when the KL penalty is put
// in the reward, a small stem on every token. The bottom panel has the
// advantage A_t, what the policy gradient multiplies each token's
// log-probability by: with GAE, A_t = Σ_k (γλ)^k δ_{t+k} where
// δ_t = r_t + γV(s_{t+1}) − V(s_t), so a reward at the end of a turn
// reaches the tokens before it discounted by γλ per token, and
// G_t = A_t + V(s_t). Without a critic (GRPO and its kin) V is 0, the
// line is left out, and every token of a trajectory shares one advantage.
//
//	s := run.History.SamplesAt(metrics.SplitTrain, 100)[0]
//	plots.NewCreditChart(s).Save("credit.png")
type CreditChart struct {
	Title  string // figure title; empty means "credit assignment · train step N · seed S"
	sample metrics.Sample
}

// NewCreditChart returns the credit chart of a training sample (one with
// Tokens; validation samples have none).
func NewCreditChart(s metrics.Sample) *CreditChart { return &CreditChart{sample: s} }

// The colours of the credit chart. Advantage uses the blue–vermillion pair
// of the palette, which stays a diverging pair under colour blindness:
// blue for a token made more likely, vermillion for one made less likely.
var (
	valueColor  = Palette[6] // black
	returnColor = Palette[3] // reddish purple
	rewardColor = Palette[2] // bluish green
	posAdvColor = Palette[0] // blue
	negAdvColor = Palette[1] // vermillion
)

// check reports the first token that cannot be drawn.
func (c *CreditChart) check() error {
	s := &c.sample
	if len(s.Tokens) == 0 {
		if s.Split == metrics.SplitVal {
			return fmt.Errorf("the sample (val, step %d) has no tokens: only training samples keep them", s.Step)
		}
		return fmt.Errorf("the sample (step %d) has no tokens", s.Step)
	}
	for i, t := range s.Tokens {
		for _, f := range []struct {
			name string
			v    float64
		}{{"reward", t.Reward}, {"value", t.Value}, {"advantage", t.Advantage}, {"return", t.Return}} {
			if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return fmt.Errorf("token %d: %s is %v", i, f.name, f.v)
			}
		}
		if i > 0 && t.Turn < s.Tokens[i-1].Turn {
			return fmt.Errorf("token %d: turn %d after turn %d (tokens must be in trajectory order)", i, t.Turn+1, s.Tokens[i-1].Turn+1)
		}
	}
	return nil
}

// Figure builds the chart's figure: two panels, one above the other, on
// the same token axis.
func (c *CreditChart) Figure() (*Figure, error) {
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("plots: credit chart: %w", err)
	}
	toks := c.sample.Tokens
	n := len(toks)
	hasCritic := false
	var value, ret, adv plotter.XYs
	var turns markers
	var rewarded int
	for i, t := range toks {
		x := float64(i)
		hasCritic = hasCritic || t.Value != 0
		value = append(value, plotter.XY{X: x, Y: t.Value})
		ret = append(ret, plotter.XY{X: x, Y: t.Return})
		adv = append(adv, plotter.XY{X: x, Y: t.Advantage})
		if t.Reward != 0 {
			rewarded++
		}
		if i > 0 && t.Turn != toks[i-1].Turn {
			turns = append(turns, marker{step: x - 0.5, label: fmt.Sprintf("turn %d", t.Turn+1), color: noteColor})
		}
	}

	top := newPlot()
	top.Title.Text = "value V(s_t), return G_t and reward r_t"
	if !hasCritic {
		top.Title.Text = "return G_t and reward r_t (no critic: V = 0)"
	}
	addGrid(top)
	var series []plot.Plotter
	if hasCritic {
		series = append(series, lineOf(value, valueColor))
	}
	series = append(series, lineOf(ret, returnColor), stems(toks))
	top.Add(series...)
	// Room above the data for the turn labels, as event labels get.
	if len(turns) > 0 && top.Y.Max > top.Y.Min {
		top.Y.Max += markHeadroom * (top.Y.Max - top.Y.Min)
	}
	if len(turns) > 0 {
		top.Add(turns)
	}

	bottom := newPlot()
	bottom.Title.Text = "advantage A_t"
	addGrid(bottom)
	bottom.Add(bars(adv))
	if len(turns) > 0 {
		unlabelled := make(markers, len(turns))
		for i, m := range turns {
			unlabelled[i] = marker{step: m.step, color: m.color}
		}
		bottom.Add(unlabelled)
	}
	bottom.X.Label.Text = "agent token (whole trajectory, in order)"
	top.Y.Label.Text, bottom.Y.Label.Text = "reward", "advantage"
	for _, p := range []*plot.Plot{top, bottom} {
		p.X.Min, p.X.Max = -0.5, float64(n)-0.5
		p.X.Tick.Marker = tokenTicks{}
		if p.Y.Min == p.Y.Max { // all zero: a flat line in the middle
			p.Y.Min, p.Y.Max = p.Y.Min-1, p.Y.Max+1
		}
	}

	var legend []LegendEntry
	if hasCritic {
		legend = append(legend, LegendEntry{Label: "value V(s_t)", Color: valueColor})
	}
	legend = append(legend,
		LegendEntry{Label: "return G_t", Color: returnColor},
		LegendEntry{Label: "reward r_t", Color: rewardColor},
		LegendEntry{Label: "advantage > 0", Color: posAdvColor, Band: true},
		LegendEntry{Label: "advantage < 0", Color: negAdvColor, Band: true},
	)
	title := c.Title
	if title == "" {
		title = "credit assignment · " + c.describe()
	}
	return &Figure{
		Title:       title,
		Legend:      legend,
		Panels:      []*plot.Plot{top, bottom},
		PanelWidth:  7 * vg.Inch,
		PanelHeight: 2.4 * vg.Inch,
		Summary:     c.summary(hasCritic, rewarded),
	}, nil
}

// describe names the sample: "train step 10 · seed 7 · reward 1 (success)".
func (c *CreditChart) describe() string {
	s := &c.sample
	outcome := "failure"
	if s.Success {
		outcome = "success"
	}
	split := s.Split
	if split == "" {
		split = "sample"
	}
	return fmt.Sprintf("%s step %d · seed %d · reward %.3g (%s)", split, s.Step, s.Seed, s.Reward, outcome)
}

// summary is the text/plain form: what the chart shows, in numbers.
func (c *CreditChart) summary(hasCritic bool, rewarded int) string {
	toks := c.sample.Tokens
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	pos := 0
	for _, t := range toks {
		lo, hi, sum = math.Min(lo, t.Advantage), math.Max(hi, t.Advantage), sum+t.Advantage
		if t.Advantage > 0 {
			pos++
		}
	}
	var b strings.Builder
	turns := toks[len(toks)-1].Turn + 1
	fmt.Fprintf(&b, "credit chart of %s: %d agent %s in %d %s, %d with a reward",
		c.describe(), len(toks), plural(len(toks), "token"), turns, plural(turns, "turn"), rewarded)
	if !hasCritic {
		b.WriteString(", no critic")
	}
	fmt.Fprintf(&b, "\n  advantage: min %.3g, max %.3g, mean %.3g; %d of %d tokens > 0", lo, hi, sum/float64(len(toks)), pos, len(toks))
	fmt.Fprintf(&b, "\n  return: first %.3g, last %.3g", toks[0].Return, toks[len(toks)-1].Return)
	return b.String()
}

func addGrid(p *plot.Plot) {
	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = gridColor, gridColor
	p.Add(grid)
}

// lineOf is a solid line in the house width.
func lineOf(xys plotter.XYs, col color.Color) *plotter.Line {
	return &plotter.Line{XYs: xys, LineStyle: draw.LineStyle{Color: col, Width: vg.Points(1.6)}}
}

// stems draws each nonzero reward as a stem from 0, token i at x = i, with
// a dot at its end when it is at least a twentieth of the largest: the
// environment's rewards stand out, and a KL penalty in the reward, which
// touches every token, stays a thin fringe along zero.
type stems []metrics.SampleToken

func (s stems) DataRange() (xmin, xmax, ymin, ymax float64) {
	for _, t := range s {
		ymin, ymax = math.Min(ymin, t.Reward), math.Max(ymax, t.Reward)
	}
	return 0, float64(len(s) - 1), ymin, ymax
}

func (s stems) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	line := draw.LineStyle{Color: rewardColor, Width: min(vg.Points(1.2), 0.6*(trX(1)-trX(0)))}
	dot := draw.GlyphStyle{Color: rewardColor, Radius: vg.Points(2.2), Shape: draw.CircleGlyph{}}
	largest := 0.0
	for _, t := range s {
		largest = math.Max(largest, math.Abs(t.Reward))
	}
	for i, t := range s {
		if t.Reward == 0 {
			continue
		}
		x := trX(float64(i))
		c.StrokeLine2(line, x, trY(0), x, trY(t.Reward))
		if math.Abs(t.Reward) >= largest/20 {
			c.DrawGlyph(dot, vg.Point{X: x, Y: trY(t.Reward)})
		}
	}
}

// bars draws the advantage of token i as a bar from 0 at x = i, blue above
// zero and vermillion below, with the zero line across the panel.
type bars plotter.XYs

func (b bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	for _, p := range b {
		ymin, ymax = math.Min(ymin, p.Y), math.Max(ymax, p.Y)
	}
	return -0.5, float64(len(b)) - 0.5, ymin, ymax
}

func (b bars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	// A bar fills 80% of its token's slot; on a trajectory of hundreds of
	// tokens, where gaps would only shimmer, the whole slot.
	slot := trX(1) - trX(0)
	half := 0.4 * slot
	if slot < vg.Points(3) {
		half = slot / 2
	}
	y0 := trY(0)
	for _, p := range b {
		if p.Y == 0 {
			continue
		}
		col := posAdvColor
		if p.Y < 0 {
			col = negAdvColor
		}
		x, y := trX(p.X), trY(p.Y)
		c.FillPolygon(withAlpha(col, 0xC0), []vg.Point{{X: x - half, Y: y0}, {X: x + half, Y: y0}, {X: x + half, Y: y}, {X: x - half, Y: y}})
	}
	c.StrokeLine2(draw.LineStyle{Color: inkColor, Width: vg.Points(0.8)}, c.Min.X, y0, c.Max.X, y0)
}

// tokenTicks labels a token axis at whole tokens: nice steps of at least
// one token.
type tokenTicks struct{}

func (tokenTicks) Ticks(min, max float64) []plot.Tick {
	ticks := niceTicks{}.Ticks(min, max)
	for _, t := range ticks {
		if t.Label != "" && t.Value != math.Trunc(t.Value) {
			ticks = nil
			for v := math.Ceil(min); v <= max; v++ {
				if v == 0 {
					v = 0 // not "-0"
				}
				ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprint(v)})
			}
			return ticks
		}
	}
	// Minor ticks halfway between labels of odd steps fall between tokens.
	var whole []plot.Tick
	for _, t := range ticks {
		if t.Value == math.Trunc(t.Value) {
			whole = append(whole, t)
		}
	}
	return whole
}

// PNG renders the chart as a PNG at DefaultDPI.
func (c *CreditChart) PNG() ([]byte, error) { return pngOf(c.Figure()) }

// SVG renders the chart as SVG.
func (c *CreditChart) SVG() ([]byte, error) { return svgOf(c.Figure()) }

// Save writes the chart to path; the extension (.png, .svg) picks the format.
func (c *CreditChart) Save(path string) error {
	f, err := c.Figure()
	if err != nil {
		return err
	}
	return f.Save(path)
}

// MIMEBundle displays the chart in a notebook (see Figure.MIMEBundle).
func (c *CreditChart) MIMEBundle() map[string]any { return bundleOf(c.Figure()) }

// MIMEMetadata gives the display size (see Figure.MIMEMetadata).
func (c *CreditChart) MIMEMetadata() map[string]any { return metadataOf(c.Figure()) }

// String is the chart's text/plain form.
func (c *CreditChart) String() string { return stringOf(c.Figure()) }
