package cpu

import xcpu "golang.org/x/sys/cpu"

// useExpAsm selects expAVX2; tests switch it off to check the scalar path.
var useExpAsm = xcpu.X86.HasAVX2 && xcpu.X86.HasFMA

// expVector applies e^x in place to a leading part of x with the AVX2
// kernel and returns its length (0 where the kernel is unavailable).
func expVector(x []float32) int {
	n8 := len(x) / 8 * 8
	if !useExpAsm || n8 == 0 {
		return 0
	}
	return expAVX2(&x[0], n8)
}
