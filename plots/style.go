package plots

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Type sizes in points at display size. A PNG is drawn at DefaultDPI = 2×
// a 96-dpi screen and displayed at half its pixel size (see MIMEMetadata),
// so 10 pt text reads as 13 CSS pixels in a notebook.
const (
	titleSize = 13 // figure title
	headSize  = 11 // panel titles
	textSize  = 10 // ticks, axis labels, legends, event labels: never smaller
)

// sans is Liberation Sans, which gonum/plot embeds: rendering needs no
// system font and is the same on every machine.
func sans(size vg.Length) font.Font {
	return font.From(font.Font{Typeface: "Liberation", Variant: "Sans"}, size)
}

// textStyle is the style of every piece of text that plots draws itself.
func textStyle(size vg.Length, xa draw.XAlignment, ya draw.YAlignment) text.Style {
	return text.Style{
		Color:   inkColor,
		Font:    sans(size),
		XAlign:  xa,
		YAlign:  ya,
		Handler: plot.DefaultTextHandler,
	}
}

// newPlot returns a gonum plot in the house style: sans-serif type, light
// axes, a light grid under the data.
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = sans(headSize)
	p.Title.TextStyle.Color = inkColor
	p.Title.Padding = vg.Points(4)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(textSize)
		a.Label.TextStyle.Color = inkColor
		a.Tick.Label.Font = sans(textSize)
		a.Tick.Label.Color = inkColor
		a.Color = noteColor
		a.Tick.Color = noteColor
		a.Padding = vg.Points(2)
		a.Tick.Marker = niceTicks{}
	}
	return p
}

// logTicks labels a log axis at 1, 2 and 5 × 10^k when it spans at most
// two and a half decades (max/min ≤ 10^2.5) and at powers of ten beyond;
// gonum's LogTicks labels only powers of ten, which leaves a gradient norm
// between 0.3 and 3 with one label.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Floor(math.Log10(min)), math.Ceil(math.Log10(max))
	labelled := map[int]bool{1: true}
	if math.Log10(max/min) <= 2.5 {
		labelled[2], labelled[5] = true, true
	}
	var ticks []plot.Tick
	nLabels := 0
	for e := lo; e <= hi; e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if labelled[m] {
				t.Label = strconv.FormatFloat(v, 'g', 3, 64)
				nLabels++
			}
			ticks = append(ticks, t)
		}
	}
	if nLabels < 2 { // a narrow range: linear ticks read better
		return niceTicks{}.Ticks(min, max)
	}
	return ticks
}

// niceTicks labels an axis at 1, 2 or 5 × 10^k steps, four to seven labels
// per axis, with a minor tick halfway; gonum's default often labels only
// three values (0, 90, 180).
type niceTicks struct{}

func (niceTicks) Ticks(min, max float64) []plot.Tick {
	span := max - min
	if !(span > 0) || math.IsInf(span, 0) {
		return plot.DefaultTicks{}.Ticks(min, max)
	}
	mag := math.Pow(10, math.Floor(math.Log10(span/5)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if span/(m*mag) <= 7 {
			step = m * mag
			break
		}
	}
	decimals := max0(-int(math.Floor(math.Log10(step) + 1e-9)))
	var ticks []plot.Tick
	first := math.Ceil(min/step) * step
	for i := 0; ; i++ {
		v := first + float64(i)*step
		if v > max+step*1e-9 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0 // not "-0"
		}
		label := strconv.FormatFloat(v, 'f', decimals, 64)
		v, _ = strconv.ParseFloat(label, 64) // the tick sits where its label says
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
		if h := v + step/2; h <= max {
			ticks = append(ticks, plot.Tick{Value: h})
		}
	}
	if h := first - step/2; h >= min {
		ticks = append(ticks, plot.Tick{Value: h})
	}
	return ticks
}

func max0(n int) int { return max(n, 0) }
