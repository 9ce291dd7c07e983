package gemm

import (
	"fmt"
	"math"
	"sync"
)

// bfloat16 operands. A bf16 value is the top 16 bits of a float32 (sign,
// the same 8 exponent bits, 7 mantissa bits), so widening one is exact:
// the float32 with those top bits and zeros below. Every path here that
// reads bf16 widens each value and then does what the float32 path does
// with it, in the same order, so a product of bf16 operands gives the bits
// of the float32 product of the widened values (TestBF16MatchesWidened),
// and a model whose weights are bf16-exact computes the same floats from
// bf16 storage, at half the bytes (decision 44). Where the CPU has
// AVX-512 BF16, SgemmBF16 and PackBDP's panels run VDPBF16PS instead, with
// the same bits (dp.go, decision 53).

// bf16 widens one bfloat16 value to float32 (exact).
func bf16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// narrow sets dst[i] to the top 16 bits of src[i]: its bfloat16 value
// when the float is bf16-exact (ExactBF16), a truncation otherwise.
func narrow(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, f := range src {
		dst[i] = uint16(math.Float32bits(f) >> 16)
	}
}

// keep16 copies bf16 values (packing bf16 panels from bf16).
func keep16(dst, src []uint16) { copy(dst, src) }

// widen sets dst[i] to src[i] widened, for i < len(dst): by 16s in
// assembly where there is some (widenAsm), the rest here.
func widen(dst []float32, src []uint16) {
	src = src[:len(dst)]
	done := widenAsm(dst, src)
	for i, h := range src[done:] {
		dst[done+i] = bf16(h)
	}
}

// ExactBF16 reports whether every value of x is a bfloat16 value (its low
// 16 bits are zero): true of weights loaded from bf16 safetensors, and of
// the results of backend.RoundBF16.
func ExactBF16(x []float32) bool {
	for _, v := range x {
		if math.Float32bits(v)&0xffff != 0 {
			return false
		}
	}
	return true
}

// SgemmBF16 is Sgemm with A and B stored as bfloat16 (the bits of each
// value's float32 top half): C = alpha·op(A)·op(B) + beta·C in float32,
// bit for bit Sgemm on the widened operands. Where the CPU has AVX-512
// BF16, a product with A not transposed and beta 0 or 1 runs the
// VDPBF16PS kernels (tileDP, dp.go). Otherwise A (in a transformer's
// products the activations or gradients) is widened a block at a time as
// the product reaches it (widenA), then read in place or packed as a
// float32 A is; B (the weights) is widened as it is packed (packBWiden).
// The few-row A·Bᵀ products (tileDots) widen A's few rows whole first and
// B's rows in dot4BF16's registers.
func SgemmBF16(transA, transB bool, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	checkProblem(transA, transB, m, n, k, len(a), lda, len(b), ldb, c, ldc)
	g := &problem{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta,
		a16: a, b16: b, c: c, lda: lda, ldb: ldb, ldc: ldc}
	if g.trivial() {
		return
	}
	if g.dots() {
		// At most DotMaxRows rows of A, not transposed.
		buf := wideA.Get().(*[]float32)
		defer wideA.Put(buf)
		*buf = grow(*buf, (m-1)*lda+k)
		g.a, g.a16 = *buf, nil
		widen(g.a, a)
	}
	if 2*float64(m)*float64(n)*float64(k) < parMinFlops {
		g.serial()
		return
	}
	g.parallel(parChunkFlops)
}

// SgemmBF16B is Sgemm with only B stored as bfloat16: a float32 A (the
// activations or gradients of a float32 product) by bf16 weights,
// C = alpha·op(A)·op(B) + beta·C, bit for bit Sgemm on the widened B. It
// is SgemmBF16's path with A read as Sgemm reads it: B widened as it is
// packed, or in dot4BF16's registers for the few-row products. A model
// whose frozen weights are bf16-exact computes its float32 products from
// their bf16 copy with it, holding no float32 copy (decision 44).
func SgemmBF16B(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	checkProblem(transA, transB, m, n, k, len(a), lda, len(b), ldb, c, ldc)
	g := &problem{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta,
		a: a, b16: b, c: c, lda: lda, ldb: ldb, ldc: ldc}
	if g.trivial() {
		return
	}
	if 2*float64(m)*float64(n)*float64(k) < parMinFlops {
		g.serial()
		return
	}
	g.parallel(parChunkFlops)
}

// wideA holds the few rows of A that SgemmBF16 widens for tileDots.
var wideA = sync.Pool{New: func() any { return new([]float32) }}

// PackBBF16 is PackBInto for a B stored in bfloat16: op(B) packed once,
// its panels kept in bf16 (half the bytes of PackB's), for SgemmPacked, in
// dst's memory when it holds PanelsLen(k, n) values. It keeps a reference
// to b, which the products of at most DotMaxRows rows read in place.
func PackBBF16(dst []uint16, transB bool, k, n int, b []uint16, ldb int) *PackedB {
	p := newPackedB(transB, k, n, len(b), ldb)
	p.b16 = b
	p.data16 = p.pack16(dst, func(dst []uint16, p0, kc, j0, nc int) {
		packPanels(dst, b, ldb, transB, p0, kc, j0, nc, keep16)
	})
	return p
}

// PackBNarrow is PackBInto with the panels kept in bfloat16: every value
// of the stored B must be bf16-exact (ExactBF16; it panics otherwise), so
// the panels hold the same values in half the bytes and SgemmPacked gives
// the bits of PackB's. The products of at most DotMaxRows rows read the
// float32 b in place, as PackB's do.
func PackBNarrow(dst []uint16, transB bool, k, n int, b []float32, ldb int) *PackedB {
	p := newPackedB(transB, k, n, len(b), ldb)
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	for r := 0; r < br; r++ {
		if !ExactBF16(b[r*ldb : r*ldb+bc]) {
			panic(fmt.Sprintf("gemm: PackBNarrow: row %d of b holds a value that is not a bfloat16", r))
		}
	}
	p.b = b
	p.data16 = p.pack16(dst, func(dst []uint16, p0, kc, j0, nc int) {
		packPanels(dst, b, ldb, transB, p0, kc, j0, nc, narrow)
	})
	return p
}

// pack16 packs all of op(B) into bf16 panels, laid out as prepackB lays
// out float32 ones, block by block with pack, into dst when it holds them.
func (p *PackedB) pack16(dst []uint16, pack func(dst []uint16, p0, kc, j0, nc int)) []uint16 {
	if p.n == 0 || p.k == 0 {
		return nil
	}
	npad := roundUp(p.n, nr)
	data := dst[:0]
	if cap(dst) < npad*p.k {
		data = make([]uint16, npad*p.k)
	}
	data = data[:npad*p.k]
	blockPanels(p.n, p.k, func(off, pc, kc, j0, nc int) { pack(data[off:], pc, kc, j0, nc) })
	return data
}
