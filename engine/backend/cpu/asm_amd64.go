package cpu

import xcpu "golang.org/x/sys/cpu"

// useAsm selects the assembly loops (expAVX2 and those of vector.go);
// tests switch it off to check the Go paths.
var useAsm = xcpu.X86.HasAVX2 && xcpu.X86.HasFMA

// expVector applies e^x in place to a leading part of x with the AVX2
// kernel and returns its length (0 where the kernel is unavailable).
func expVector(x []float32) int {
	n8 := len(x) / 8 * 8
	if !useAsm || n8 == 0 {
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
