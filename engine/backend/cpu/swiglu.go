package cpu

import "github.com/ragen-go/ragen/engine/parallel"

// SwiGLUForward is the gated MLP activation over n elements:
//
//	out = silu(gate) · up,   silu(g) = g · σ(g)
func SwiGLUForward(out, gate, up []float32, n int) {
	parallel.For(n, 1<<14, func(_, lo, hi int) {
		swiglu(out[lo:hi], gate[lo:hi], up[lo:hi])
	})
}

// SwiGLURows is SwiGLUForward over N rows whose gate and up halves sit side
// by side, as a fused gate/up projection writes them: row n of gateUp is
// [gate (I floats) | up (I floats)], row n of out is I floats. Chunks hold
// about as many elements as SwiGLUForward's.
func SwiGLURows(out, gateUp []float32, N, I int) {
	parallel.For(N, max(1, (1<<14)/I), func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			swiglu(out[n*I:(n+1)*I], gateUp[2*n*I:(2*n+1)*I], gateUp[(2*n+1)*I:(2*n+2)*I])
		}
	})
}

// swiglu is out = silu(gate)·up elementwise over len(out) floats.
func swiglu(out, gate, up []float32) {
	var e [expBlock]float32 // e^−g
	for b := 0; b < len(out); b += expBlock {
		m := min(expBlock, len(out)-b)
		negate(e[:m], gate[b:b+m])
		expInPlace(e[:m])
		for j := vectorPart(m, func(n8 int) { vectorSwiGLU(out[b:], gate[b:], up[b:], e[:], n8) }); j < m; j++ {
			out[b+j] = gate[b+j] / (1 + e[j]) * up[b+j]
		}
	}
}

// negate sets dst[i] = −src[i] over len(dst) floats.
func negate(dst, src []float32) {
	for j := vectorPart(len(dst), func(n8 int) { vectorNeg(dst, src, n8) }); j < len(dst); j++ {
		dst[j] = -src[j]
	}
}

// SwiGLUBackward accumulates the gradients of SwiGLUForward:
//
//	dup   += dout · silu(g)
//	dgate += dout · up · σ(g) · (1 + g · (1 − σ(g)))
func SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	parallel.For(n, 1<<14, func(_, lo, hi int) {
		var e [expBlock]float32 // e^−g
		for b := lo; b < hi; b += expBlock {
			m := min(expBlock, hi-b)
			negate(e[:m], gate[b:b+m])
			expInPlace(e[:m])
			vec := func(n8 int) { vectorSwiGLUBack(dgate[b:], dup[b:], dout[b:], gate[b:], up[b:], e[:], n8) }
			for j := vectorPart(m, vec); j < m; j++ {
				i := b + j
				g, s := gate[i], 1/(1+e[j])
				dup[i] += dout[i] * g * s
				dgate[i] += dout[i] * up[i] * s * (1 + g*(1-s))
			}
		}
	})
}
