package cpu

import "github.com/ragen-go/ragen/engine/backend/cpu/parallel"

// SwiGLUForward is the gated MLP activation over n elements:
//
//	out = silu(gate) · up,   silu(g) = g · σ(g)
func SwiGLUForward(out, gate, up []float32, n int) {
	parallel.For(n, 1<<14, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			g := gate[i]
			out[i] = g * sigmoid(g) * up[i]
		}
	})
}

// SwiGLUBackward accumulates the gradients of SwiGLUForward:
//
//	dup   += dout · silu(g)
//	dgate += dout · up · σ(g) · (1 + g · (1 − σ(g)))
func SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	parallel.For(n, 1<<14, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			g := gate[i]
			s := sigmoid(g)
			dup[i] += dout[i] * g * s
			dgate[i] += dout[i] * up[i] * s * (1 + g*(1-s))
		}
	})
}

func sigmoid(x float32) float32 { return 1 / (1 + exp32(-x)) }
