package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The plain loops below are the kernels as first written, one element at a
// time. The vector rewrites must give their bits exactly (a notebook's
// numbers do not change with the machine's vector units), with and without
// the assembly, for sizes with and without a tail past the last 8.

func rmsNormForwardPlain(out, rstd, inp, weight []float32, N, C int, eps float32) {
	for n := 0; n < N; n++ {
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
}

func rmsNormBackwardPlain(dinp, dweight, dout, inp, weight, rstd []float32, N, C int) {
	for n := 0; n < N; n++ {
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
	for i := 0; i < C; i++ {
		for n := 0; n < N; n++ {
			dweight[i] += dout[n*C+i] * inp[n*C+i] * rstd[n]
		}
	}
}

func swigluPlain(out, gate, up []float32) {
	e := make([]float32, len(out))
	for b := 0; b < len(out); b += expBlock {
		m := min(expBlock, len(out)-b)
		for j := 0; j < m; j++ {
			e[b+j] = -gate[b+j]
		}
		expInPlace(e[b : b+m])
		for j := 0; j < m; j++ {
			out[b+j] = gate[b+j] / (1 + e[b+j]) * up[b+j]
		}
	}
}

func swigluBackwardPlain(dgate, dup, dout, gate, up []float32) {
	e := make([]float32, len(gate))
	for b := 0; b < len(gate); b += expBlock {
		m := min(expBlock, len(gate)-b)
		for j := 0; j < m; j++ {
			e[b+j] = -gate[b+j]
		}
		expInPlace(e[b : b+m])
		for j := 0; j < m; j++ {
			i := b + j
			g, s := gate[i], 1/(1+e[i])
			dup[i] += dout[i] * g * s
			dgate[i] += dout[i] * up[i] * s * (1 + g*(1-s))
		}
	}
}

func ropeHeadPlain(dst, src, c, s []float32, sign float32) {
	half := len(src) / 2
	for j := 0; j < half; j++ {
		a, b, sj := src[j], src[half+j], sign*s[j]
		dst[j] = a*c[j] - b*sj
		dst[half+j] = b*c[j] + a*sj
	}
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, plain loop %v", what, i, got[i], want[i])
		}
	}
}

func TestLayerKernelsMatchPlain(t *testing.T) {
	saved := useAsm
	defer func() { useAsm = saved }()
	for _, asm := range []bool{saved, false} {
		useAsm = asm
		r := rand.New(rand.NewPCG(21, 22))
		for _, C := range []int{5, 8, 32, 37, 128, 256, 300} {
			const N = 11 // groups of four rows and a rest
			x, w, dy := randn(r, N*C, 2), randn(r, C, 1), randn(r, N*C, 1)
			y0, y1 := make([]float32, N*C), make([]float32, N*C)
			s0, s1 := make([]float32, N), make([]float32, N)
			RMSNormForward(y1, s1, x, w, N, C, 1e-6)
			rmsNormForwardPlain(y0, s0, x, w, N, C, 1e-6)
			sameBits(t, "RMSNorm y", y1, y0)
			sameBits(t, "RMSNorm rstd", s1, s0)
			dx0, dx1 := randn(r, N*C, 1), make([]float32, N*C)
			copy(dx1, dx0)
			dw0, dw1 := randn(r, C, 1), make([]float32, C)
			copy(dw1, dw0)
			RMSNormBackward(dx1, dw1, dy, x, w, s0, N, C)
			rmsNormBackwardPlain(dx0, dw0, dy, x, w, s0, N, C)
			sameBits(t, "RMSNorm dx", dx1, dx0)
			sameBits(t, "RMSNorm dw", dw1, dw0)
		}
		for _, n := range []int{3, 8, 29, 256, 300, 700} {
			gate, up, dout := randn(r, n, 3), randn(r, n, 1), randn(r, n, 1)
			gate[n/2] = 95 // e^−g leaves the vector exp's range
			o0, o1 := make([]float32, n), make([]float32, n)
			swigluPlain(o0, gate, up)
			SwiGLUForward(o1, gate, up, n)
			sameBits(t, "SwiGLU out", o1, o0)
			dg0, du0 := randn(r, n, 1), randn(r, n, 1)
			dg1, du1 := append([]float32(nil), dg0...), append([]float32(nil), du0...)
			swigluBackwardPlain(dg0, du0, dout, gate, up)
			SwiGLUBackward(dg1, du1, dout, gate, up, n)
			sameBits(t, "SwiGLU dgate", dg1, dg0)
			sameBits(t, "SwiGLU dup", du1, du0)
		}
		for _, hd := range []int{4, 16, 32, 64, 80} {
			src, c, s := randn(r, hd, 1), randn(r, hd/2, 1), randn(r, hd/2, 1)
			for _, sign := range []float32{1, -1} {
				d0, d1 := make([]float32, hd), make([]float32, hd)
				ropeHeadPlain(d0, src, c, s, sign)
				ropeHead(d1, src, c, s, sign)
				sameBits(t, "rope", d1, d0)
				in := append([]float32(nil), src...) // in place, as the decoder rotates
				ropeHead(in, in, c, s, sign)
				sameBits(t, "rope in place", in, d0)
			}
		}
	}
}
