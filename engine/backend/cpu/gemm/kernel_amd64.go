package gemm

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2+FMA micro-kernel; tests switch it off to run the
// portable one.
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernel computes one mr×nr tile: C = alpha·(packed a)·(packed b) + beta·C.
// c starts at the tile's top-left element; the caller guarantees the tile
// lies inside c (mr rows of ldc, the last one at least nr long).
func kernel(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	if useAsm {
		_ = c[(mr-1)*ldc+nr-1] // the assembly does no bounds checks
		kernelAVX2(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
		return
	}
	kernelGo(kc, a, b, c, ldc, alpha, beta)
}
