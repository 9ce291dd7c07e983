package cpu

import (
	"math"

	"github.com/ragen-go/ragen/engine/backend/cpu/parallel"
)

// RMSNormForward normalises each row of inp (N rows of C) and scales it by
// weight; rstd (N) is saved for RMSNormBackward.
//
//	y = x · rstd · w,   rstd = 1 / sqrt(mean(x²) + eps)
func RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	parallel.For(N, grain(C), func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			x := inp[n*C : n*C+C]
			var ss float32
			for _, v := range x {
				ss += v * v
			}
			r := float32(1 / math.Sqrt(float64(ss/float32(C)+eps)))
			rstd[n] = r
			y := out[n*C : n*C+C]
			for i, v := range x {
				y[i] = v * r * weight[i]
			}
		}
	})
}

// RMSNormBackward accumulates the gradients of RMSNormForward:
//
//	dx_i += rstd · (w_i·dy_i − x_i · rstd² · mean_j(w_j·dy_j·x_j))
//	dw_i += Σₙ dy[n,i] · x[n,i] · rstd[n]
func RMSNormBackward(dinp, dweight, dout, inp, weight, rstd []float32, N, C int) {
	parallel.For(N, grain(C), func(_, lo, hi int) {
		for n := lo; n < hi; n++ {
			x, dy, dx := inp[n*C:n*C+C], dout[n*C:n*C+C], dinp[n*C:n*C+C]
			r := rstd[n]
			var dot float32
			for i, v := range x {
				dot += weight[i] * dy[i] * v
			}
			k := r * r * dot / float32(C)
			for i, v := range x {
				dx[i] += r * (weight[i]*dy[i] - v*k)
			}
		}
	})
	parallel.For(C, max(16, grain(N)), func(_, lo, hi int) {
		for n := 0; n < N; n++ {
			r := rstd[n]
			x, dy := inp[n*C+lo:n*C+hi], dout[n*C+lo:n*C+hi]
			dw := dweight[lo:hi]
			for i, v := range x {
				dw[i] += dy[i] * v * r
			}
		}
	})
}
