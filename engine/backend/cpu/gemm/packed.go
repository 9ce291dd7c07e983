package gemm

import "fmt"

// PackedB is op(B) packed once into the micro-kernel's panel order, for
// many products with the same B: a decoding step multiplies the few rows of
// its live sequences by every weight matrix, and packing a 128×352 weight
// costs as much as the product itself at 16 rows. The packed copy does not
// follow later changes to B: pack again after B changes.
type PackedB struct {
	transB bool
	k, n   int
	b      []float32 // the stored B, for the dot-product path (m ≤ dotMaxRows)
	ldb    int
	data   []float32 // all of op(B), laid out as problem.prepackB does
}

// PackB packs op(B) (k×n; B stored k×n, or n×k when transB) for
// SgemmPacked. It keeps a reference to b. Bad sizes panic as in Sgemm.
func PackB(transB bool, k, n int, b []float32, ldb int) *PackedB {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("gemm: negative dimension n=%d k=%d", n, k))
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMatrix("b", b, br, bc, ldb)
	g := &problem{transB: transB, n: n, k: k, b: b, ldb: ldb}
	ws := &workspace{}
	if n > 0 && k > 0 {
		g.prepackB(ws)
	}
	return &PackedB{transB: transB, k: k, n: n, b: b, ldb: ldb, data: ws.b}
}

// SgemmPacked is Sgemm with op(B) taken from p: C = alpha·op(A)·op(B) +
// beta·C, A stored m×k (not transposed). It gives bit-identical results to
// Sgemm on the same operands: the same kernels see the same panels in the
// same order. Products too small for Sgemm's parallel path are still split
// over the pool by columns when they are large enough to pay for the
// hand-off (nothing is packed per chunk here).
func SgemmPacked(m int, alpha float32, a []float32, lda int, p *PackedB, beta float32, c []float32, ldc int) {
	g := newProblem(false, p.transB, m, p.n, p.k, alpha, a, lda, p.b, p.ldb, beta, c, ldc)
	if g.trivial() {
		return
	}
	g.bPacked = p.data
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
