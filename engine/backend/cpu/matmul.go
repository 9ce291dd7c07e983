package cpu

import (
	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
	"github.com/ragen-go/ragen/engine/backend/cpu/parallel"
)

// MatmulForward is a linear layer as torch stores it:
// out[N,OC] = inp[N,C] · weight[OC,C]ᵀ + bias[OC] (bias may be nil).
func MatmulForward(out, inp, weight, bias []float32, N, C, OC int) {
	gemm.Sgemm(false, true, N, OC, C, 1, inp, C, weight, C, 0, out, OC)
	addBias(out, bias, N, OC)
}

// PackWeight packs a linear layer's weight [OC,C] for MatmulForwardPacked.
func PackWeight(weight []float32, C, OC int) *gemm.PackedB {
	return gemm.PackB(true, C, OC, weight, C)
}

// MatmulForwardPacked is MatmulForward with the weight packed once by
// PackWeight (bit-identical results): for decoding, where the same weights
// multiply a few rows at every step.
func MatmulForwardPacked(out, inp []float32, weight *gemm.PackedB, bias []float32, N, C, OC int) {
	gemm.SgemmPacked(N, 1, inp, C, weight, 0, out, OC)
	addBias(out, bias, N, OC)
}

// addBias adds bias[OC] (nil: nothing) to each of the N rows of out.
func addBias(out, bias []float32, N, OC int) {
	if bias == nil {
		return
	}
	parallel.For(N, grain(OC), func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			AddInPlace(out[n*OC:n*OC+OC], bias)
		}
	})
}

// MatmulBackward accumulates the gradients of MatmulForward:
// dinp += dout·weight, dweight += doutᵀ·inp, dbias += Σₙ dout[n].
// dinp and dbias may be nil to skip them.
func MatmulBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int) {
	if dinp != nil {
		gemm.Sgemm(false, false, N, C, OC, 1, dout, OC, weight, C, 1, dinp, C)
	}
	gemm.Sgemm(true, false, OC, C, N, 1, dout, OC, inp, C, 1, dweight, C)
	if dbias != nil {
		ColumnSum(dbias, dout, N, OC)
	}
}

// ColumnSum accumulates sum[c] += Σₙ x[n,c] for x of N rows of C, each
// column summed in row order (deterministic).
func ColumnSum(sum, x []float32, N, C int) {
	parallel.For(C, max(64, grain(N)), func(_, lo, hi int) {
		dst := sum[lo:hi]
		for n := 0; n < N; n++ {
			AddInPlace(dst, x[n*C+lo:n*C+hi])
		}
	})
}

// ResidualForward is out = a + b elementwise over n floats (out may alias a).
func ResidualForward(out, a, b []float32, n int) {
	parallel.For(n, 1<<15, func(_, lo, hi int) {
		addVectors(out[lo:hi], a[lo:hi], b[lo:hi])
	})
}
