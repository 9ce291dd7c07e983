package cpu

import (
	"math"

	"github.com/ragen-go/ragen/engine/parallel"
)

// RMSNormForward normalises each row of inp (N rows of C) and scales it by
// weight; rstd (N) is saved for RMSNormBackward.
//
//	y = x · rstd · w,   rstd = 1 / sqrt(mean(x²) + eps)
//
// Each row's Σx² is a chain of additions in order; four rows' chains run
// side by side (rowDots) so that they overlap.
func RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	parallel.For(N, grain(C), func(_, lo, hi int) {
		for n := lo; n < hi; n += 4 {
			g := min(4, hi-n)
			var rows [4][]float32
			for r := range g {
				rows[r] = inp[(n+r)*C : (n+r)*C+C]
			}
			ss := rowDots(rows[:g], rows[:g], nil)
			for r, x := range rows[:g] {
				rs := float32(1 / math.Sqrt(float64(ss[r]/float32(C)+eps)))
				rstd[n+r] = rs
				rmsScale(out[(n+r)*C:(n+r)*C+C], x, weight, rs)
			}
		}
	})
}

// rmsScale sets y[i] = x[i]·r·w[i].
func rmsScale(y, x, w []float32, r float32) {
	x, w = x[:len(y)], w[:len(y)]
	for i := vectorPart(len(y), func(n8 int) { vectorRMSScale(y, x, w, n8, r) }); i < len(y); i++ {
		y[i] = x[i] * r * w[i]
	}
}

// RMSNormBackward accumulates the gradients of RMSNormForward:
//
//	dx_i += rstd · (w_i·dy_i − x_i · rstd² · mean_j(w_j·dy_j·x_j))
//	dw_i += Σₙ dy[n,i] · x[n,i] · rstd[n]
func RMSNormBackward(dinp, dweight, dout, inp, weight, rstd []float32, N, C int) {
	parallel.For(N, grain(C), func(_, lo, hi int) {
		for n := lo; n < hi; n += 4 {
			g := min(4, hi-n)
			var xs, dys [4][]float32
			for r := range g {
				xs[r], dys[r] = inp[(n+r)*C:(n+r)*C+C], dout[(n+r)*C:(n+r)*C+C]
			}
			dots := rowDots(dys[:g], xs[:g], weight)
			for r := range g {
				rs := rstd[n+r]
				k := rs * rs * dots[r] / float32(C)
				rmsBack(dinp[(n+r)*C:(n+r)*C+C], xs[r], weight, dys[r], rs, k)
			}
		}
	})
	parallel.For(C, max(16, grain(N)), func(_, lo, hi int) {
		dw := dweight[lo:hi]
		for n := 0; n < N; n++ {
			r := rstd[n]
			x, dy := inp[n*C+lo:n*C+hi], dout[n*C+lo:n*C+hi]
			for i := vectorPart(len(dw), func(n8 int) { vectorRMSWeight(dw, dy, x, n8, r) }); i < len(dw); i++ {
				dw[i] += dy[i] * x[i] * r
			}
		}
	})
}

// rmsBack sets dx[i] += r·(w[i]·dy[i] − x[i]·k).
func rmsBack(dx, x, w, dy []float32, r, k float32) {
	x, w, dy = x[:len(dx)], w[:len(dx)], dy[:len(dx)]
	for i := vectorPart(len(dx), func(n8 int) { vectorRMSBack(dx, x, w, dy, n8, r, k) }); i < len(dx); i++ {
		dx[i] += r * (w[i]*dy[i] - x[i]*k)
	}
}

// rowDots returns, for up to four rows of equal length, Σ_i a[r][i]·b[r][i]
// — or Σ_i w[i]·a[r][i]·b[r][i] with a weight w — each summed in order of i
// from 0 as a chain of additions, the four chains side by side so that
// they overlap.
func rowDots(a, b [][]float32, w []float32) [4]float32 {
	var s [4]float32
	n := len(a[0])
	if len(a) == 4 && w == nil {
		a0, a1, a2, a3 := a[0][:n], a[1][:n], a[2][:n], a[3][:n]
		b0, b1, b2, b3 := b[0][:n], b[1][:n], b[2][:n], b[3][:n]
		var s0, s1, s2, s3 float32
		for i := range a0 {
			s0 += a0[i] * b0[i]
			s1 += a1[i] * b1[i]
			s2 += a2[i] * b2[i]
			s3 += a3[i] * b3[i]
		}
		return [4]float32{s0, s1, s2, s3}
	}
	if len(a) == 4 {
		w = w[:n]
		a0, a1, a2, a3 := a[0][:n], a[1][:n], a[2][:n], a[3][:n]
		b0, b1, b2, b3 := b[0][:n], b[1][:n], b[2][:n], b[3][:n]
		var s0, s1, s2, s3 float32
		for i, wi := range w {
			s0 += wi * a0[i] * b0[i]
			s1 += wi * a1[i] * b1[i]
			s2 += wi * a2[i] * b2[i]
			s3 += wi * a3[i] * b3[i]
		}
		return [4]float32{s0, s1, s2, s3}
	}
	for r := range a {
		ar, br := a[r][:n], b[r][:n]
		for i := range ar {
			if w == nil {
				s[r] += ar[i] * br[i]
			} else {
				s[r] += w[i] * ar[i] * br[i]
			}
		}
	}
	return s
}
