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
		_ = a[mr*kc-1] // the assembly does no bounds checks
		_ = b[nr*kc-1]
		_ = c[(mr-1)*ldc+nr-1]
		kernelAVX2(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
		return
	}
	kernelGo(kc, a, b, c, ldc, alpha, beta)
}

// kernelRows is kernel with A read in place: a starts at the tile's A
// element (row 0, k step 0), row i at a[i·lda:], kc steps each.
func kernelRows(kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32) {
	_ = a[(mr-1)*lda+kc-1] // the assembly does no bounds checks
	_ = b[nr*kc-1]
	_ = c[(mr-1)*ldc+nr-1]
	kernelAVX2Rows(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
}
