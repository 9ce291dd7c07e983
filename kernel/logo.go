package kernel

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
)

// Logo draws the kernel's logo at size×size pixels: a rounded square in
// Go's cyan holding a white ring (an environment) with a white dot on it
// (the agent) — drawn analytically with 4×4 supersampling for smooth edges.
func Logo(size int) ([]byte, error) {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	bg := color.NRGBA{0x00, 0xAD, 0xD8, 0xFF} // Go cyan
	const ss = 4
	s := float64(size)
	inside := func(x, y float64) (inBG, inFG bool) {
		// Rounded square with corner radius 0.2·s.
		r := 0.2 * s
		cx := math.Max(r, math.Min(s-r, x))
		cy := math.Max(r, math.Min(s-r, y))
		inBG = math.Hypot(x-cx, y-cy) <= r
		// Ring around the centre and a dot at its upper right.
		d := math.Hypot(x-s/2, y-s/2)
		ring := d >= 0.22*s && d <= 0.31*s
		a := -math.Pi / 4
		dot := math.Hypot(x-(s/2+0.265*s*math.Cos(a)), y-(s/2+0.265*s*math.Sin(a))) <= 0.11*s
		return inBG, inBG && (ring || dot)
	}
	for py := 0; py < size; py++ {
		for px := 0; px < size; px++ {
			var nBG, nFG int
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					b, f := inside(float64(px)+(float64(sx)+0.5)/ss, float64(py)+(float64(sy)+0.5)/ss)
					if b {
						nBG++
					}
					if f {
						nFG++
					}
				}
			}
			if nBG == 0 {
				continue
			}
			// Blend white over cyan by foreground coverage; alpha is the
			// background's coverage.
			t := float64(nFG) / float64(nBG)
			mix := func(c uint8) uint8 { return uint8(math.Round(float64(c)*(1-t) + 255*t)) }
			img.SetNRGBA(px, py, color.NRGBA{mix(bg.R), mix(bg.G), mix(bg.B), uint8(255 * nBG / (ss * ss))})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
