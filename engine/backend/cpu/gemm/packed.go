package gemm

import "fmt"

// PackedB is op(B) packed once into the micro-kernel's panel order, for
// many products with the same B: a decoding step multiplies the few rows of
// its live sequences by every weight matrix, and packing a 128×352 weight
// costs as much as the product itself at 16 rows. The packed copy does not
// follow later changes to B: pack again after B changes. The panels are
// float32 (PackB) or bfloat16 (PackBBF16, PackBNarrow: half the bytes,
// the same products).
type PackedB struct {
	transB bool
	k, n   int
	// The stored B, for the dot-product path (m ≤ DotMaxRows): b, or b16
	// in bfloat16.
	b   []float32
	b16 []uint16
	ldb int
	// All of op(B), laid out as problem.prepackB does: data, or data16 in
	// bfloat16.
	data   []float32
	data16 []uint16
	// dp, instead, is all of op(B) in DP panels (PackBDP), for products
	// with a bf16 A (SgemmPackedBF16).
	dp []uint16
}

// newPackedB checks the shape of a B of lenB values and returns its
// PackedB, not yet packed.
func newPackedB(transB bool, k, n, lenB, ldb int) *PackedB {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("gemm: negative dimension n=%d k=%d", n, k))
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMatrix("b", lenB, br, bc, ldb)
	return &PackedB{transB: transB, k: k, n: n, ldb: ldb}
}

// PackB packs op(B) (k×n; B stored k×n, or n×k when transB) for
// SgemmPacked. It keeps a reference to b. Bad sizes panic as in Sgemm.
func PackB(transB bool, k, n int, b []float32, ldb int) *PackedB {
	return PackBInto(nil, transB, k, n, b, ldb)
}

// PackBInto is PackB packing into dst's memory when it holds PanelsLen(k,
// n) values, else into new memory: a decoder made for every rollout packs
// its weights where the last one did, instead of touching gigabytes of
// new pages (first touches of fresh memory cost as much as the packing
// itself, and 20× more in some VMs).
func PackBInto(dst []float32, transB bool, k, n int, b []float32, ldb int) *PackedB {
	p := newPackedB(transB, k, n, len(b), ldb)
	p.b = b
	g := &problem{transB: transB, n: n, k: k, b: b, ldb: ldb}
	ws := &workspace{b: dst}
	if n > 0 && k > 0 {
		g.prepackB(ws)
	}
	p.data = ws.b
	return p
}

// PanelsLen is the values of the panels of a packed k×n op(B).
func PanelsLen(k, n int) int { return roundUp(n, nr) * k }

// BF16 reports whether the panels are bfloat16 (DP panels are).
func (p *PackedB) BF16() bool { return p.data16 != nil || p.dp != nil }

// Panels returns the memory of the panels (one of the two is set), for
// PackBInto, PackBBF16 or PackBNarrow to reuse once p is no longer used.
func (p *PackedB) Panels() ([]float32, []uint16) {
	if p.dp != nil {
		return nil, p.dp
	}
	return p.data, p.data16
}

// SgemmPacked is Sgemm with op(B) taken from p: C = alpha·op(A)·op(B) +
// beta·C, A stored m×k (not transposed). It gives bit-identical results to
// Sgemm on the same operands (widened, for bf16 panels): the same kernels,
// or their bf16 twins, see the same panels in the same order. Products too
// small for Sgemm's parallel path are still split over the pool by columns
// when they are large enough to pay for the hand-off (nothing is packed
// per chunk here).
func SgemmPacked(m int, alpha float32, a []float32, lda int, p *PackedB, beta float32, c []float32, ldc int) {
	lenB := len(p.b)
	if p.b16 != nil {
		lenB = len(p.b16)
	}
	checkProblem(false, p.transB, m, p.n, p.k, len(a), lda, lenB, p.ldb, c, ldc)
	g := &problem{transB: p.transB, m: m, n: p.n, k: p.k, alpha: alpha, beta: beta,
		a: a, b: p.b, b16: p.b16, c: c, lda: lda, ldb: p.ldb, ldc: ldc,
		bPacked: p.data, bPacked16: p.data16, bDP: p.dp}
	if g.trivial() {
		return
	}
	flops := 2 * float64(m) * float64(p.n) * float64(p.k)
	if flops < packedParMinFlops {
		g.serial()
		return
	}
	g.parallel(packedChunkFlops)
}

// packedParMinFlops is SgemmPacked's threshold for the parallel path: with
// B already packed a chunk only reads it, so splitting pays from about
// 20 µs of work (the pool's round trip is ~250 ns when its workers spin).
const packedParMinFlops = 1 << 20

// packedChunkFlops is the work per chunk of SgemmPacked's parallel path,
// smaller than Sgemm's: a chunk packs nothing, and a decoding step's
// products (16 rows by a few hundred columns, 2–12 MFLOP) then split into
// several chunks, so a caller whose helper is late — woken from parking,
// or descheduled on a machine shared with other work — takes more of them
// instead of waiting with nothing to do.
const packedChunkFlops = 1 << 20
