//go:build !amd64

package gemm

// useAsm is false: there is no assembly kernel for this architecture.
var useAsm = false

// useWide is false: there are no wide kernels here.
var useWide = false

// hasBF16 is false: there are no VDPBF16PS kernels here.
var hasBF16 = false

// kernelDP is only called when useDP is set, which it never is here.
func kernelDP(h, kp int, a []uint16, lda int, b []uint16, c []float32, ldc int, alpha, beta float32, stream bool) {
	panic("gemm: kernelDP without an assembly kernel")
}

// kernelWide is only called when useWide is set, which it never is here.
func kernelWide(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	panic("gemm: kernelWide without an assembly kernel")
}

// kernelRowsWide is only called when useWide is set, which it never is here.
func kernelRowsWide(h, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32, stream bool) {
	panic("gemm: kernelRowsWide without an assembly kernel")
}

// kernel computes one mr×nr tile: C = alpha·(packed a)·(packed b) + beta·C.
func kernel(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	kernelGo(kc, a, b, c, ldc, alpha, beta)
}

// kernelCols is only called when useAsm is set, which it never is here.
func kernelCols(h, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32, wide bool) {
	panic("gemm: kernelCols without an assembly kernel")
}

// kernelRows is only called when useAsm is set, which it never is here.
func kernelRows(h, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32, stream bool) {
	panic("gemm: kernelRows without an assembly kernel")
}

// kernelRowsBF16 is only called when useAsm is set, which it never is here.
func kernelRowsBF16(h, kc int, a []float32, lda int, b []uint16, c []float32, ldc int, alpha, beta float32, stream bool) {
	panic("gemm: kernelRowsBF16 without an assembly kernel")
}

// kernelRowsWideBF16 is only called when useWide is set, which it never is here.
func kernelRowsWideBF16(h, kc int, a []float32, lda int, b []uint16, c []float32, ldc int, alpha, beta float32, stream bool) {
	panic("gemm: kernelRowsWideBF16 without an assembly kernel")
}

// dotRowsBF16 is only called when useAsm is set, which it never is here.
func dotRowsBF16(k16 int, a []float32, b []uint16, ldb int, out *[4]float32) {
	panic("gemm: dotRowsBF16 without an assembly kernel")
}

// packTrans packs nothing here: the caller's scalar loop does it all.
func packTrans(pan, b []float32, off, ldb, kc int) int { return 0 }

// packRowsAsm packs nothing here: the caller's scalar loop does it all.
func packTransBF16(pan []float32, b []uint16, off, ldb, kc, next int) int { return 0 }

func packRowsAsm(pan, a []float32, off, lda, kc int) int { return 0 }

// packRowAsm does nothing here: the caller's Go loop does the copy.
func packRowAsm(dst, row []float32, panels, stride int) bool { return false }

func widenAsm(dst []float32, src []uint16) int { return 0 }

func packRowBF16Asm(dst []float32, row []uint16, panels, stride int) bool { return false }

// dotRows is only called when useAsm is set, which it never is here.
func dotRows(k16 int, a, b []float32, ldb int, out *[4]float32) {
	panic("gemm: dotRows without an assembly kernel")
}

// packColsAsm does nothing here: the caller's Go loop does the copy.
func packColsAsm(pan, a []float32, off, lda, kc int) bool { return false }

// dotRows8 is only called when useAsm is set, which it never is here.
func dotRows8(n8, k8 int, a, b []float32, ldb int, out []float32) {
	panic("gemm: dotRows8 without an assembly kernel")
}

// combRows is only called when useAsm is set, which it never is here.
func combRows(width, k int, w, b []float32, ldb int, out []float32) {
	panic("gemm: combRows without an assembly kernel")
}

func packTransDP(pan, b []uint16, off, ldb, kc, w, next int) int { return 0 }

func packPairsAsm(pan, b []uint16, ldb, kp int) bool { return false }

func swapPairsAsm(dst, src []uint16) int { return 0 }
