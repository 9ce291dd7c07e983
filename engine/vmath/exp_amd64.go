package vmath

import xcpu "golang.org/x/sys/cpu"

// block is the number of values a step of the vector loop takes: two
// vectors of 4 float64s (AVX2) or of 8 (AVX-512).
var block = 8

// vectorLoop is expAVX2 or expAVX512 where the CPU has it and math.Exp
// takes the FMA sequence; nil otherwise.
var vectorLoop func(x *float64, n int) int

func init() {
	switch {
	case path != viaFMA:
	case xcpu.X86.HasAVX512F:
		block, vectorLoop = 16, expAVX512
	case xcpu.X86.HasAVX2 && xcpu.X86.HasFMA:
		vectorLoop = expAVX2
	}
}
