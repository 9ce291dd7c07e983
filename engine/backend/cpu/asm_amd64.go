package cpu

import xcpu "golang.org/x/sys/cpu"

// useAsm selects the assembly loops (expAVX2 and those of vector.go);
// tests switch it off to check the Go paths.
var useAsm = xcpu.X86.HasAVX2 && xcpu.X86.HasFMA

// expVector applies e^x in place to a leading part of x with the AVX2
// kernel and returns its length (0 where the kernel is unavailable).
func expVector(x []float32) int {
	n8 := vectorLen(len(x))
	if n8 == 0 {
		return 0
	}
	return expAVX2(&x[0], n8)
}

// vectorLen is the length of the leading part of n floats the assembly
// loops take: n rounded down to a multiple of 8 (0 without them).
func vectorLen(n int) int {
	if !useAsm {
		return 0
	}
	return n / 8 * 8
}

// The assembly loops over x[:n8], n8 = vectorLen(len(x)) > 0; the
// assembly does no bounds checks.

func vectorMax(x []float32, n8 int) float32 {
	_ = x[n8-1]
	return maxAVX2(&x[0], n8)
}

func vectorSub(x []float32, n8 int, c float32) {
	_ = x[n8-1]
	subAVX2(&x[0], n8, c)
}

func vectorMul(x []float32, n8 int, c float32) {
	_ = x[n8-1]
	mulAVX2(&x[0], n8, c)
}

func vectorSubMul(x []float32, n8 int, c, d float32) {
	_ = x[n8-1]
	subMulAVX2(&x[0], n8, c, d)
}

func vectorAdd(z, x, y []float32, n8 int) {
	_, _, _ = z[n8-1], x[n8-1], y[n8-1]
	addAVX2(&z[0], &x[0], &y[0], n8)
}

func vectorRope(dst, src, cos, sin []float32, half, n8 int, sign float32) {
	_, _ = dst[half+n8-1], src[half+n8-1]
	_, _ = cos[n8-1], sin[n8-1]
	ropeAVX2(&dst[0], &src[0], &cos[0], &sin[0], half, n8, sign)
}

func vectorNeg(dst, src []float32, n8 int) {
	_, _ = dst[n8-1], src[n8-1]
	negAVX2(&dst[0], &src[0], n8)
}

func vectorSwiGLU(out, gate, up, e []float32, n8 int) {
	_, _, _, _ = out[n8-1], gate[n8-1], up[n8-1], e[n8-1]
	swigluAVX2(&out[0], &gate[0], &up[0], &e[0], n8)
}

func vectorSwiGLUBack(dgate, dup, dout, gate, up, e []float32, n8 int) {
	_, _, _ = dgate[n8-1], dup[n8-1], dout[n8-1]
	_, _, _ = gate[n8-1], up[n8-1], e[n8-1]
	swigluBackAVX2(&dgate[0], &dup[0], &dout[0], &gate[0], &up[0], &e[0], n8)
}

func vectorRMSScale(y, x, w []float32, n8 int, r float32) {
	_, _, _ = y[n8-1], x[n8-1], w[n8-1]
	rmsScaleAVX2(&y[0], &x[0], &w[0], n8, r)
}

func vectorRMSBack(dx, x, w, dy []float32, n8 int, r, k float32) {
	_, _, _, _ = dx[n8-1], x[n8-1], w[n8-1], dy[n8-1]
	rmsBackAVX2(&dx[0], &x[0], &w[0], &dy[0], n8, r, k)
}

func vectorRMSWeight(dw, dy, x []float32, n8 int, r float32) {
	_, _, _ = dw[n8-1], dy[n8-1], x[n8-1]
	rmsWeightAVX2(&dw[0], &dy[0], &x[0], n8, r)
}

// vectorToBF16 sets dst[i] to the bfloat16 bits of backend.RoundBF16(src[i])
// for i < n16 (a positive multiple of 16).
func vectorToBF16(dst []uint16, src []float32, n16 int) {
	_, _ = dst[n16-1], src[n16-1]
	roundBF16AVX2(&dst[0], &src[0], n16)
}
