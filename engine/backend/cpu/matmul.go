package cpu

import "github.com/ragen-go/ragen/engine/parallel"

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
