package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"github.com/ragen-go/ragen/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// DefaultDPI is the resolution of PNG output: 2× a 96-dpi screen, so that
// figures stay sharp on high-density displays and when zoomed.
const DefaultDPI = 192

// Figure is a grid of gonum plots under one title and one legend, and the
// unit that renders: every chart builds one (Chart.Figure()), and one can be
// assembled by hand from any *plot.Plot. The legend sits above the panels,
// so it never covers data or event labels.
type Figure struct {
	Title       string
	Legend      []LegendEntry
	Panels      []*plot.Plot // row-major; fewer than a full last row is fine
	Cols        int          // panels per row; 0 means 1
	PanelWidth  vg.Length    // size of one panel at display size; 0 means 4 in
	PanelHeight vg.Length    // 0 means 2.5 in
	DPI         float64      // PNG resolution; 0 means DefaultDPI
	Summary     string       // text/plain form (String); empty means a generic line
}

// LegendEntry is one item of a figure's legend: a line in the run's
// colour, over a shaded swatch when the run is drawn with a band.
type LegendEntry struct {
	Label  string
	Color  color.Color
	Band   bool
	Dashed bool
}

// Add appends panels, gonum-style.
func (f *Figure) Add(panels ...*plot.Plot) { f.Panels = append(f.Panels, panels...) }

const (
	margin    = vg.Length(6)  // around the figure, points
	swatchLen = vg.Length(20) // legend line length
	legendGap = vg.Length(6)  // between the legend and the panels
)

func (f *Figure) cols() int {
	if f.Cols <= 0 {
		return 1
	}
	return min(f.Cols, max(1, len(f.Panels)))
}

func (f *Figure) rows() int { return (len(f.Panels) + f.cols() - 1) / f.cols() }

func (f *Figure) panelSize() (w, h vg.Length) {
	w, h = f.PanelWidth, f.PanelHeight
	if w <= 0 {
		w = 4 * vg.Inch
	}
	if h <= 0 {
		h = 2.5 * vg.Inch
	}
	return w, h
}

// legendRows wraps the legend entries into rows that fit width.
func (f *Figure) legendRows(width vg.Length) [][]LegendEntry {
	sty := textStyle(textSize, draw.XLeft, draw.YCenter)
	var rows [][]LegendEntry
	var used vg.Length
	for _, e := range f.Legend {
		w := swatchLen + 4 + sty.Width(e.Label) + 14
		if len(rows) == 0 || used+w > width-2*margin {
			rows, used = append(rows, nil), 0
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], e)
		used += w
	}
	return rows
}

func legendRowHeight() vg.Length {
	return textStyle(textSize, draw.XLeft, draw.YCenter).Height("Mg") + 4
}

func titleHeight() vg.Length { return textStyle(titleSize, draw.XCenter, draw.YTop).Height("Mg") + 4 }

// Size is the figure's size at display size (points; 72 per inch).
func (f *Figure) Size() (w, h vg.Length) {
	pw, ph := f.panelSize()
	w = vg.Length(f.cols()) * pw
	return w, f.header(w) + vg.Length(f.rows())*ph
}

func (f *Figure) header(w vg.Length) vg.Length {
	h := margin
	if f.Title != "" {
		h += titleHeight()
	}
	if n := len(f.legendRows(w)); n > 0 {
		h += vg.Length(n)*legendRowHeight() + legendGap
	}
	return h
}

// Draw draws the figure on c.
func (f *Figure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	w := c.Max.X - c.Min.X
	y := c.Max.Y - margin
	if f.Title != "" {
		c.FillText(textStyle(titleSize, draw.XCenter, draw.YTop), vg.Point{X: c.Min.X + w/2, Y: y}, f.Title)
		y -= titleHeight()
	}
	sty := textStyle(textSize, draw.XLeft, draw.YCenter)
	for _, row := range f.legendRows(w) {
		var rowW vg.Length
		for _, e := range row {
			rowW += swatchLen + 4 + sty.Width(e.Label) + 14
		}
		x := c.Min.X + (w-rowW)/2
		mid := y - legendRowHeight()/2
		for _, e := range row {
			if e.Band {
				c.FillPolygon(withAlpha(e.Color, 0x40), []vg.Point{
					{X: x, Y: mid - 5}, {X: x + swatchLen, Y: mid - 5},
					{X: x + swatchLen, Y: mid + 5}, {X: x, Y: mid + 5},
				})
			}
			ls := draw.LineStyle{Color: e.Color, Width: vg.Points(2)}
			if e.Dashed {
				ls.Dashes = []vg.Length{vg.Points(5), vg.Points(2.5)}
			}
			c.StrokeLine2(ls, x, mid, x+swatchLen, mid)
			c.FillText(sty, vg.Point{X: x + swatchLen + 4, Y: mid}, e.Label)
			x += swatchLen + 4 + sty.Width(e.Label) + 14
		}
		y -= legendRowHeight()
	}
	if len(f.Legend) > 0 {
		y -= legendGap
	}
	if len(f.Panels) == 0 {
		return
	}
	area := c
	area.Max.Y = y
	cols, rows := f.cols(), f.rows()
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for k := range cols {
			if i := r*cols + k; i < len(f.Panels) {
				grid[r][k] = f.Panels[i]
			}
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 14, PadY: 10, PadTop: 2, PadBottom: margin, PadLeft: margin, PadRight: 2 * margin}
	canvases := plot.Align(grid, tiles, area)
	for r := range grid {
		for k, p := range grid[r] {
			if p != nil {
				p.Draw(canvases[r][k])
			}
		}
	}
}

// render draws the figure on a canvas of the given format, turning a panic
// inside gonum/plot (which panics on some degenerate inputs) into an error.
func (f *Figure) render(format string) (out []byte, err error) {
	if len(f.Panels) == 0 {
		return nil, fmt.Errorf("plots: figure %q has no panels", f.Title)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("plots: cannot render figure %q: %v", f.Title, r)
		}
	}()
	w, h := f.Size()
	var cw vg.CanvasWriterTo
	switch format {
	case "png":
		dpi := f.DPI
		if dpi <= 0 {
			dpi = DefaultDPI
		}
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(int(dpi)))}
	case "svg":
		cw = vgsvg.New(w, h)
	default:
		return nil, fmt.Errorf("plots: unknown format %q (want png or svg)", format)
	}
	f.Draw(draw.New(cw))
	var buf bytes.Buffer
	if _, err := cw.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plots: cannot encode %s: %w", format, err)
	}
	return buf.Bytes(), nil
}

// PNG renders the figure as a PNG image at f.DPI.
func (f *Figure) PNG() ([]byte, error) { return f.render("png") }

// SVG renders the figure as an SVG document. Text refers to the Liberation
// Sans font by name (fonts are not embedded), so viewers without it
// substitute a similar sans-serif.
func (f *Figure) SVG() ([]byte, error) { return f.render("svg") }

// Save writes the figure to path as PNG or SVG, chosen by the extension.
// The file is written to a temporary name and renamed, so a reader never
// sees half an image.
func (f *Figure) Save(path string) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if format != "png" && format != "svg" {
		return fmt.Errorf("plots: cannot save %s: extension must be .png or .svg", path)
	}
	data, err := f.render(format)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	return nil
}

// String is the figure's text/plain form: what a terminal or a headless
// notebook run shows instead of the image.
func (f *Figure) String() string {
	if f.Summary != "" {
		return f.Summary
	}
	return fmt.Sprintf("figure %q: %d panels", f.Title, len(f.Panels))
}

// MIMEBundle implements the kernel's display contract: a PNG and its
// text/plain summary. The PNG is raw bytes; the kernel base64-encodes it
// (encoding/json does so for []byte). If rendering fails the bundle holds
// only the error as text/plain, so a cell shows why instead of nothing.
func (f *Figure) MIMEBundle() map[string]any {
	img, err := f.PNG()
	if err != nil {
		return map[string]any{"text/plain": err.Error()}
	}
	return map[string]any{"image/png": img, "text/plain": f.String()}
}

// MIMEMetadata gives the display size of the PNG in CSS pixels (96 per inch)
// — half its pixel size at DefaultDPI — so a notebook shows it sharp at the
// size its text was designed for.
func (f *Figure) MIMEMetadata() map[string]any {
	w, h := f.Size()
	px := func(l vg.Length) int { return int(math.Round(l.Points() * 96 / 72)) }
	return map[string]any{"image/png": map[string]any{"width": px(w), "height": px(h)}}
}
