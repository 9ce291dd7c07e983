package vmath

import xcpu "golang.org/x/sys/cpu"

// vectorKernels are the vector loops this CPU runs.
func vectorKernels() []kernel {
	var ks []kernel
	if path != viaFMA {
		return nil
	}
	if xcpu.X86.HasAVX512F {
		ks = append(ks, kernel{"avx512", avx512Loops})
	}
	if xcpu.X86.HasAVX2 && xcpu.X86.HasFMA {
		ks = append(ks, kernel{"avx2", avx2Loops})
	}
	return ks
}

// expectedPath is the sequence math.Exp takes on amd64: the FMA one with
// AVX and FMA (math's own test), unless the child process of TestSequences
// turned FMA off.
func expectedPath(fmaOff bool) int {
	if xcpu.X86.HasAVX && xcpu.X86.HasFMA && !fmaOff {
		return viaFMA
	}
	return viaPlain
}
