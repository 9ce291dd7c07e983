package plots

import "image/color"

// Palette is the Okabe–Ito palette (Okabe & Ito 2008, "Color Universal
// Design"), ordered for lines on white: the eight colours stay distinct
// under the common forms of colour blindness. Yellow comes last because it
// is the hardest to see on white. Runs take colours in the order they are
// added to a chart, so a run keeps its colour on every panel of a chart, and
// on every chart that adds the same runs in the same order.
var Palette = []color.Color{
	color.NRGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.NRGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.NRGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.NRGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.NRGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.NRGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.NRGBA{0x00, 0x00, 0x00, 0xFF}, // black
	color.NRGBA{0xF0, 0xE4, 0x42, 0xFF}, // yellow
}

// colorAt is the colour of the i-th run of a chart; past eight runs the
// palette repeats (the legend still tells them apart by order).
func colorAt(i int) color.Color { return Palette[i%len(Palette)] }

// withAlpha returns c with opacity a (0–255), for bands and faint raw lines.
func withAlpha(c color.Color, a uint8) color.Color {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	n.A = a
	return n
}

var (
	inkColor  = color.NRGBA{0x22, 0x22, 0x22, 0xFF} // text
	gridColor = color.NRGBA{0xE4, 0xE4, 0xE4, 0xFF} // background grid
	noteColor = color.NRGBA{0x66, 0x66, 0x66, 0xFF} // notes under a panel
)
