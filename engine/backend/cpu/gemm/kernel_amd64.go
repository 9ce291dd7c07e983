package gemm

import "golang.org/x/sys/cpu"

// useAsm selects the AVX2+FMA micro-kernel; tests switch it off to run the
// portable one.
var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useWide selects, with useAsm, the AVX-512 kernels of tiles two panels
// wide (kernelWide, kernelRowsWide), which give the bits of the AVX2 ones;
// tests switch it off to compare the two.
var useWide = cpu.X86.HasAVX512F

// hasBF16: the CPU has AVX-512 BF16's VDPBF16PS (see dp.go).
var hasBF16 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16

// kernelDP computes the tile of h ≤ mrDP rows and dpCols columns C =
// alpha·A·B + beta·C from kp pair steps of a swapped bf16 A read in place
// (row i at a[i·lda:]) and one DP panel b (see dp.go). With stream it
// prefetches the next panel (the Pf kernels: see streamRows). It needs
// useDP.
func kernelDP(h, kp int, a []uint16, lda int, b []uint16, c []float32, ldc int, alpha, beta float32, stream bool) {
	_ = a[(h-1)*lda+2*kp-1] // the assembly does no bounds checks
	_ = b[2*dpCols*kp-1]
	_ = c[(h-1)*ldc+dpCols-1]
	if stream {
		dpRowKernelsPf[h](kp, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
		return
	}
	dpRowKernels[h](kp, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
}

// dpRowKernels[h] is the VDPBF16PS kernel for h rows.
var dpRowKernels = [mrDP + 1]func(kp int, a *uint16, lda int, b *uint16, c *float32, ldc int, alpha, beta float32){
	1: kernelDPRows1, 2: kernelDPRows2, 3: kernelDPRows3, 4: kernelDPRows4, 5: kernelDPRows5, 6: kernelDPRows,
	7: kernelDPRows7, 8: kernelDPRows8, 9: kernelDPRows9, 10: kernelDPRows10, 11: kernelDPRows11, 12: kernelDPRows12,
}

// dpRowKernelsPf[h] is dpRowKernels[h] with the next panel prefetched.
var dpRowKernelsPf = [mrDP + 1]func(kp int, a *uint16, lda int, b *uint16, c *float32, ldc int, alpha, beta float32){
	1: kernelDPRowsPf1, 2: kernelDPRowsPf2, 3: kernelDPRowsPf3, 4: kernelDPRowsPf4, 5: kernelDPRowsPf5, 6: kernelDPRowsPf6,
	7: kernelDPRowsPf7, 8: kernelDPRowsPf8, 9: kernelDPRowsPf9, 10: kernelDPRowsPf10, 11: kernelDPRowsPf11, 12: kernelDPRowsPf12,
}

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

// kernelRows is kernel for a tile of h ≤ mr rows with A read in place: a
// starts at the tile's A element (row 0, k step 0), row i at a[i·lda:], kc
// steps each; c receives h rows. With stream the kernel prefetches the next
// B panel as it goes (see problem.macro).
func kernelRows(h, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32, stream bool) {
	_ = a[(h-1)*lda+kc-1] // the assembly does no bounds checks
	_ = b[nr*kc-1]
	_ = c[(h-1)*ldc+nr-1]
	k := rowKernels[h]
	if stream {
		k = streamKernels[h]
	}
	k(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
}

// kernelCols is kernelRows for a transposed A read in place: row i of the
// tile at k step p is a[p·lda + i], h ≤ mr rows (the Cols kernels); with
// wide, two panels of B (2·nr columns).
func kernelCols(h, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32, wide bool) {
	span := nr
	if wide {
		span = 2 * nr
	}
	_ = a[(kc-1)*lda+h-1] // the assembly does no bounds checks
	_ = b[span*kc-1]
	_ = c[(h-1)*ldc+span-1]
	k := colKernels[h]
	if wide {
		k = wideColKernels[h]
	}
	k(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
}

// colKernels[h] and wideColKernels[h] are the kernels for h rows of a
// transposed A read in place, one and two panels wide.
var (
	colKernels = [mr + 1]rowKernel{
		1: kernelAVX2Cols1, 2: kernelAVX2Cols2, 3: kernelAVX2Cols3, 4: kernelAVX2Cols4, 5: kernelAVX2Cols5, 6: kernelAVX2Cols,
	}
	wideColKernels = [mr + 1]rowKernel{
		1: kernelAVX512Cols1, 2: kernelAVX512Cols2, 3: kernelAVX512Cols3, 4: kernelAVX512Cols4, 5: kernelAVX512Cols5, 6: kernelAVX512Cols,
	}
)

// kernelWide is kernel for a tile of mr×2nr: b holds two adjacent packed
// panels (2·nr·kc floats), c receives 2·nr columns. It needs useWide.
func kernelWide(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	_ = a[mr*kc-1] // the assembly does no bounds checks
	_ = b[2*nr*kc-1]
	_ = c[(mr-1)*ldc+2*nr-1]
	kernelAVX512(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
}

// kernelRowsWide is kernelRows for a tile of h×2nr, h ≤ mrTall (see
// kernelWide); with stream it prefetches the next pair of panels.
func kernelRowsWide(h, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32, stream bool) {
	_ = a[(h-1)*lda+kc-1] // the assembly does no bounds checks
	_ = b[2*nr*kc-1]
	_ = c[(h-1)*ldc+2*nr-1]
	k := wideRowKernels[h]
	if stream {
		k = wideStreamKernels[h]
	}
	k(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
}

// kernelRowsBF16 is kernelRows on a bfloat16 B panel (nr·kc values).
func kernelRowsBF16(h, kc int, a []float32, lda int, b []uint16, c []float32, ldc int, alpha, beta float32, stream bool) {
	_ = a[(h-1)*lda+kc-1] // the assembly does no bounds checks
	_ = b[nr*kc-1]
	_ = c[(h-1)*ldc+nr-1]
	k := rowKernelsBF16[h]
	if stream {
		k = streamKernelsBF16[h]
	}
	k(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
}

// kernelRowsWideBF16 is kernelRowsWide on two bfloat16 B panels.
func kernelRowsWideBF16(h, kc int, a []float32, lda int, b []uint16, c []float32, ldc int, alpha, beta float32, stream bool) {
	_ = a[(h-1)*lda+kc-1] // the assembly does no bounds checks
	_ = b[2*nr*kc-1]
	_ = c[(h-1)*ldc+2*nr-1]
	k := wideRowKernelsBF16[h]
	if stream {
		k = wideStreamKernelsBF16[h]
	}
	k(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
}

type rowKernelBF16 func(kc int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32)

// The in-place kernels on bf16 panels, as rowKernels, streamKernels,
// wideRowKernels and wideStreamKernels.
var (
	rowKernelsBF16 = [mr + 1]rowKernelBF16{
		1: kernelAVX2BF16Rows1, 2: kernelAVX2BF16Rows2, 3: kernelAVX2BF16Rows3, 4: kernelAVX2BF16Rows4, 5: kernelAVX2BF16Rows5, 6: kernelAVX2BF16Rows,
	}
	streamKernelsBF16 = [mr + 1]rowKernelBF16{
		1: kernelAVX2BF16Rows1Pf, 2: kernelAVX2BF16Rows2Pf, 3: kernelAVX2BF16Rows3Pf, 4: kernelAVX2BF16Rows4Pf, 5: kernelAVX2BF16Rows5Pf, 6: kernelAVX2BF16RowsPf,
	}
	wideRowKernelsBF16 = [mrTall + 1]rowKernelBF16{
		1: kernelAVX512BF16Rows1, 2: kernelAVX512BF16Rows2, 3: kernelAVX512BF16Rows3, 4: kernelAVX512BF16Rows4, 5: kernelAVX512BF16Rows5, 6: kernelAVX512BF16Rows, 7: kernelAVX512BF16Rows7, 8: kernelAVX512BF16Rows8, 9: kernelAVX512BF16Rows9, 10: kernelAVX512BF16Rows10, 11: kernelAVX512BF16Rows11, 12: kernelAVX512BF16Rows12,
	}
	wideStreamKernelsBF16 = [mrTall + 1]rowKernelBF16{
		1: kernelAVX512BF16Rows1Pf, 2: kernelAVX512BF16Rows2Pf, 3: kernelAVX512BF16Rows3Pf, 4: kernelAVX512BF16Rows4Pf, 5: kernelAVX512BF16Rows5Pf, 6: kernelAVX512BF16RowsPf, 7: kernelAVX512BF16Rows7Pf, 8: kernelAVX512BF16Rows8Pf, 9: kernelAVX512BF16Rows9Pf, 10: kernelAVX512BF16Rows10Pf, 11: kernelAVX512BF16Rows11Pf, 12: kernelAVX512BF16Rows12Pf,
	}
)

type rowKernel func(kc int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32)

// rowKernels[h] and streamKernels[h] are the in-place kernels for h rows,
// without and with the prefetch of the next B panel; wideRowKernels[h] and
// wideStreamKernels[h] the same two panels wide (the prefetch: the next
// pair).
var (
	rowKernels = [mr + 1]rowKernel{
		1: kernelAVX2Rows1, 2: kernelAVX2Rows2, 3: kernelAVX2Rows3, 4: kernelAVX2Rows4, 5: kernelAVX2Rows5, 6: kernelAVX2Rows,
	}
	streamKernels = [mr + 1]rowKernel{
		1: kernelAVX2Rows1Pf, 2: kernelAVX2Rows2Pf, 3: kernelAVX2Rows3Pf, 4: kernelAVX2Rows4Pf, 5: kernelAVX2Rows5Pf, 6: kernelAVX2RowsPf,
	}
	wideRowKernels = [mrTall + 1]rowKernel{
		1: kernelAVX512Rows1, 2: kernelAVX512Rows2, 3: kernelAVX512Rows3, 4: kernelAVX512Rows4, 5: kernelAVX512Rows5, 6: kernelAVX512Rows, 7: kernelAVX512Rows7, 8: kernelAVX512Rows8, 9: kernelAVX512Rows9, 10: kernelAVX512Rows10, 11: kernelAVX512Rows11, 12: kernelAVX512Rows12,
	}
	wideStreamKernels = [mrTall + 1]rowKernel{
		1: kernelAVX512Rows1Pf, 2: kernelAVX512Rows2Pf, 3: kernelAVX512Rows3Pf, 4: kernelAVX512Rows4Pf, 5: kernelAVX512Rows5Pf, 6: kernelAVX512RowsPf, 7: kernelAVX512Rows7Pf, 8: kernelAVX512Rows8Pf, 9: kernelAVX512Rows9Pf, 10: kernelAVX512Rows10Pf, 11: kernelAVX512Rows11Pf, 12: kernelAVX512Rows12Pf,
	}
)

// packTrans packs the k steps [0, kc8) of a full nr-wide panel of a
// transposed B (lane j is the stored row at b[off+j·ldb:]), kc8 being kc
// rounded down to a multiple of 8, and returns kc8; the caller packs the
// rest.
func packTrans(pan, b []float32, off, ldb, kc int) int {
	kc8 := kc / 8 * 8
	if !useAsm || kc8 == 0 {
		return 0
	}
	_ = b[off+(nr-1)*ldb+kc8-1] // the assembly does no bounds checks
	_ = pan[nr*kc8-1]
	packTrans8(&pan[0], &b[off], ldb, kc8)
	packTrans8(&pan[8], &b[off+8*ldb], ldb, kc8)
	return kc8
}

// packTransBF16 is packTrans on a bfloat16 B, each value widened. With
// next ≥ 0 it also prefetches as many values of the rows at b[next+j·ldb:]
// for column j, where they lie in b (packTrans8BF16Pf; prefetchAt says
// where).
func packTransBF16(pan []float32, b []uint16, off, ldb, kc, next int) int {
	kc8 := kc / 8 * 8
	if !useAsm || kc8 == 0 {
		return 0
	}
	_ = b[off+(nr-1)*ldb+kc8-1] // the assembly does no bounds checks
	_ = pan[nr*kc8-1]
	for h := 0; h < nr; h += 8 {
		if n := next + h*ldb; next >= 0 && n < len(b) {
			packTrans8BF16Pf(&pan[h], &b[off+h*ldb], ldb, kc8, &b[n])
			continue
		}
		packTrans8BF16(&pan[h], &b[off+h*ldb], ldb, kc8)
	}
	return kc8
}

// packRowsAsm packs the k steps [0, kc8) of a full mr-row panel of an A
// that is not transposed (row i at a[off+i·lda:]), kc8 being kc rounded
// down to a multiple of 8, and returns kc8; the caller packs the rest.
func packRowsAsm(pan, a []float32, off, lda, kc int) int {
	kc8 := kc / 8 * 8
	if !useAsm || kc8 == 0 {
		return 0
	}
	_ = a[off+(mr-1)*lda+kc8-1] // the assembly does no bounds checks
	_ = pan[mr*kc8-1]
	packRows6(&pan[0], &a[off], lda, kc8)
	return kc8
}

// packRowAsm copies row[nr·q:][:nr] to dst[q·stride:] for q < panels with
// the assembly loop and reports whether it did.
func packRowAsm(dst, row []float32, panels, stride int) bool {
	if !useAsm || panels == 0 {
		return false
	}
	_ = row[panels*nr-1] // the assembly does no bounds checks
	_ = dst[(panels-1)*stride+nr-1]
	packRow(&dst[0], &row[0], panels, stride)
	return true
}

// dotRows sets out[r] = Σ_{p<k16} a[p]·b[r·ldb+p] for r < 4 with the
// assembly dot4 (k16 a multiple of 16).
func dotRows(k16 int, a, b []float32, ldb int, out *[4]float32) {
	_ = a[k16-1] // the assembly does no bounds checks
	_ = b[3*ldb+k16-1]
	dot4(k16, &a[0], &b[0], ldb, &out[0])
}

// dotRowsBF16 is dotRows with the rows of B in bfloat16 (dot4BF16).
func dotRowsBF16(k16 int, a []float32, b []uint16, ldb int, out *[4]float32) {
	_ = a[k16-1] // the assembly does no bounds checks
	_ = b[3*ldb+k16-1]
	dot4BF16(k16, &a[0], &b[0], ldb, &out[0])
}

// packColsAsm packs a full mr-row panel of a transposed A (kc stored rows
// of lda, 6 values from each, starting at a[off]) with the assembly loop
// and reports whether it did.
func packColsAsm(pan, a []float32, off, lda, kc int) bool {
	if !useAsm || kc == 0 {
		return false
	}
	_ = a[off+(kc-1)*lda+mr-1] // the assembly does no bounds checks
	_ = pan[mr*kc-1]
	packCols6(&pan[0], &a[off], lda, kc)
	return true
}

// dotRows8 sets out[r] = Σ_{p<k8} a[p]·b[r·ldb+p] for r < 8·n8 with the
// assembly dot8 (k8 a multiple of 8).
func dotRows8(n8, k8 int, a, b []float32, ldb int, out []float32) {
	_ = a[k8-1] // the assembly does no bounds checks
	_ = b[(8*n8-1)*ldb+k8-1]
	_ = out[8*n8-1]
	dot8(n8, k8, &a[0], &b[0], ldb, &out[0])
}

// combRows sets out[c] = Σ_{p<k} w[p]·b[p·ldb+c] for c < width (64 or 32)
// with the assembly comb64 or comb32.
func combRows(width, k int, w, b []float32, ldb int, out []float32) {
	_ = w[k-1] // the assembly does no bounds checks
	_ = b[(k-1)*ldb+width-1]
	_ = out[width-1]
	if width == 64 {
		comb64(k, &w[0], &b[0], ldb, &out[0])
		return
	}
	comb32(k, &w[0], &b[0], ldb, &out[0])
}

// widenAsm widens the leading multiple of 16 values of dst from src
// (len(src) ≥ len(dst)) with the assembly packRowBF16 (panels of 16 back
// to back) and returns how many it did; the caller widens the rest.
func widenAsm(dst []float32, src []uint16) int {
	n16 := len(dst) / 16 * 16
	if !useAsm || n16 == 0 {
		return 0
	}
	_ = src[n16-1] // the assembly does no bounds checks
	packRowBF16(&dst[0], &src[0], n16/16, 16)
	return n16
}

// packRowBF16Asm is packRowAsm on a bfloat16 row, widened as it is copied.
func packRowBF16Asm(dst []float32, row []uint16, panels, stride int) bool {
	if !useAsm || panels == 0 {
		return false
	}
	_ = row[panels*nr-1] // the assembly does no bounds checks
	_ = dst[(panels-1)*stride+nr-1]
	packRowBF16(&dst[0], &row[0], panels, stride)
	return true
}

// packTransDP packs the first kp8 pairs — kc/2 rounded down to a multiple
// of 8 — of the first w/8·8 columns of a DP panel (pan) of a transposed
// bf16 B, column c being the stored row at b[off+c·ldb:], with the
// assembly packTrans8DP, and returns kp8 (0 when it packed nothing); the
// caller packs the rest. With next ≥ 0 it also prefetches as many pairs
// of the rows at b[next+c·ldb:] for column c, where they lie in b
// (packTrans8DPPf; prefetchAt says where).
func packTransDP(pan, b []uint16, off, ldb, kc, w, next int) int {
	kp8 := kc / 2 / 8 * 8
	if !useAsm || !useWide || kp8 == 0 || w < 8 {
		return 0
	}
	for c := 0; c+8 <= w; c += 8 {
		_ = b[off+(c+7)*ldb+2*kp8-1] // the assembly does no bounds checks
		_ = pan[2*(dpCols*(kp8-1)+c+7)+1]
		if n := next + c*ldb; next >= 0 && n < len(b) {
			packTrans8DPPf(&pan[2*c], &b[off+c*ldb], ldb, kp8, &b[n])
			continue
		}
		packTrans8DP(&pan[2*c], &b[off+c*ldb], ldb, kp8)
	}
	return kp8
}

// packPairsAsm packs kp pairs of a full DP panel (pan) of a bf16 B that is
// not transposed, step 2s being the stored row at b[2s·ldb:], with the
// assembly packPairsDP, and reports whether it did.
func packPairsAsm(pan, b []uint16, ldb, kp int) bool {
	if !useAsm || kp == 0 {
		return false
	}
	_ = b[(2*kp-1)*ldb+dpCols-1] // the assembly does no bounds checks
	_ = pan[2*dpCols*kp-1]
	packPairsDP(&pan[0], &b[0], ldb, kp)
	return true
}

// swapPairsAsm swaps the halves of the first pairs of src into dst, 16
// pairs a step, with the assembly swapPairs, and returns how many pairs it
// did; the caller swaps the rest.
func swapPairsAsm(dst, src []uint16) int {
	n32 := min(len(src), len(dst)) / 32
	if !useAsm || !useWide || n32 == 0 {
		return 0
	}
	swapPairs(&dst[0], &src[0], n32)
	return 16 * n32
}
