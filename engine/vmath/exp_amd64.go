package vmath

import xcpu "golang.org/x/sys/cpu"

// vec holds the vector loops this CPU runs, where math.Exp takes the FMA
// sequence.
var vec = chooseVectorLoops()

func chooseVectorLoops() vectorLoops {
	switch {
	case path != viaFMA:
	case xcpu.X86.HasAVX512F:
		return avx512Loops
	case xcpu.X86.HasAVX2 && xcpu.X86.HasFMA:
		return avx2Loops
	}
	return vectorLoops{}
}

var (
	avx512Loops = vectorLoops{16, expAVX512, expShiftedAVX512}
	avx2Loops   = vectorLoops{8, expAVX2, expShiftedAVX2}
)
