package cpu

import (
	"math"

	"github.com/ragen-go/ragen/engine/parallel"
)

// RopeTables fills cos and sin ([maxPos, hd/2]) for rotary embeddings:
// angle(p, j) = p · θ^(−2j/hd). Like Hugging Face, the frequency and the
// angle are rounded to float32 before the cosine, so tables match real
// Llama/Qwen2 checkpoints at long positions too.
func RopeTables(cos, sin []float32, maxPos, hd int, theta float64) {
	half := hd / 2
	for j := 0; j < half; j++ {
		inv := float32(1 / math.Pow(theta, float64(2*j)/float64(hd)))
		for p := 0; p < maxPos; p++ {
			a := float64(float32(p) * inv)
			cos[p*half+j] = float32(math.Cos(a))
			sin[p*half+j] = float32(math.Sin(a))
		}
	}
}

// RopeForward rotates x in place: T rows of nHeads heads of hd, row t at
// position pos[t]. The Hugging Face "rotate_half" convention pairs element
// j with j+hd/2 of each head:
//
//	x₁' = x₁·cos − x₂·sin,   x₂' = x₂·cos + x₁·sin
func RopeForward(x, cos, sin []float32, pos []int, T, nHeads, hd int) {
	rope(x, cos, sin, pos, T, nHeads, hd, 1)
}

// RopeBackward maps a gradient through RopeForward in place; the rotation is
// orthogonal, so this is the rotation by −angle.
func RopeBackward(dx, cos, sin []float32, pos []int, T, nHeads, hd int) {
	rope(dx, cos, sin, pos, T, nHeads, hd, -1)
}

func rope(x, cos, sin []float32, pos []int, T, nHeads, hd int, sign float32) {
	half, C := hd/2, nHeads*hd
	parallel.For(T, grain(C), func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			c := cos[pos[t]*half : pos[t]*half+half]
			s := sin[pos[t]*half : pos[t]*half+half]
			for h := 0; h < nHeads; h++ {
				head := x[t*C+h*hd : t*C+h*hd+hd]
				ropeHead(head, head, c, s, sign)
			}
		}
	})
}

// RopeHead rotates one head of len(src) floats at one position as
// RopeForward does (bit for bit), reading src and writing dst (which may
// be src); cos and sin are the position's rows of the tables. A decoder
// uses it to rotate a new key straight into its cache.
func RopeHead(dst, src, cos, sin []float32) { ropeHead(dst, src, cos, sin, 1) }

func ropeHead(dst, src, c, s []float32, sign float32) {
	half := len(src) / 2
	n8 := vectorLen(half)
	if n8 > 0 {
		vectorRope(dst, src, c, s, half, n8, sign)
	}
	x1, x2 := src[n8:half], src[half+n8:2*half]
	y1, y2 := dst[n8:half], dst[half+n8:2*half]
	c, s = c[n8:half], s[n8:half]
	for j := range x1 {
		a, b, sj := x1[j], x2[j], sign*s[j]
		y1[j] = a*c[j] - b*sj
		y2[j] = b*c[j] + a*sj
	}
}
