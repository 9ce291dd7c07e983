package gemm

import (
	"fmt"
	"sync"

	"github.com/ragen-go/ragen/engine/parallel"
)

//go:generate go run ./internal/asmgen -out kernel_amd64.s -stubs kernel_amd64_stub.go

// Sgemm computes C = alpha·op(A)·op(B) + beta·C where op(A) is m×k, op(B) is
// k×n and C is m×n. A is stored m×k (k×m when transA), B is stored k×n (n×k
// when transB). beta == 0 overwrites C without reading it (NaNs in C vanish).
// Large products run in parallel on the worker pool; each element of C is
// always summed over k in the same order, so results do not depend on
// GOMAXPROCS.
//
// Dimensions or slices that do not fit (negative sizes, a leading dimension
// smaller than a row, a slice too short) panic with a message naming the
// argument, as an out-of-range index would.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	g := newProblem(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	if g.trivial() {
		return
	}
	if 2*float64(m)*float64(n)*float64(k) < parMinFlops {
		g.serial()
		return
	}
	g.parallel(parChunkFlops)
}

// SgemmSerial is Sgemm on the calling goroutine only, for use inside a
// parallel loop (attention over batch × head).
func SgemmSerial(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	g := newProblem(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	if g.trivial() {
		return
	}
	g.serial()
}

// Tuning constants (see doc.go for how they were chosen).
const (
	mr = 6 // rows of the register tile (micro-kernel)
	// mrTall is the most rows of the AVX-512 kernels that read A in place
	// (kernelRowsWide): 24 sums in AVX-512's 32 registers.
	mrTall = 2 * mr
	nr     = 16 // columns of the register tile: two 8-lane YMM registers

	kcMax = 256  // k-block: a kc×nr B micro-panel (16 KiB) stays in L1
	mcMax = 168  // row block: an mc×kc packed A block (168 KiB) stays in L2
	ncMax = 4080 // column block: a kc×nc packed B block (4 MiB) stays in L3

	// parMinFlops is the size (2·m·n·k) below which Sgemm runs serially:
	// waking a second core costs more than it saves. At 4.2 MFLOP
	// (256×256×32, ~50 µs on one core) two free cores gave 1.2–1.7×; when
	// the other core is busy the parallel path costs about the same as the
	// serial one (the caller takes the chunks nobody else claimed).
	parMinFlops = 3 << 20
	// parChunkFlops is the work per parallel chunk Sgemm aims at, and
	// parMaxChunks caps the number of chunks (each chunk packs its own A
	// panels, and its B panels unless they are shared, so more chunks
	// means more packing).
	parChunkFlops = 4 << 20
	parMaxChunks  = 16
	// prepackMax caps (in floats, 16 MiB) the op(B) that Sgemm packs whole
	// for all its chunks to share; a larger one (a language model head
	// over a big vocabulary) is packed per chunk, so no workspace kept on
	// the free list grows past a few MiB.
	prepackMax = 1 << 22
	// prepackChunk is about the floats each chunk of a parallel prepackB
	// copies (1 MiB).
	prepackChunk = 1 << 18

	// streamRows is the most rows of a row block for which the in-place
	// kernel prefetches the next B panel (the Pf kernels): measured on a
	// decoding step's products (16 rows, 256–704 deep), 20% faster when
	// the weights come from memory, 5–8% slower when they sit in the L3,
	// as a large product's panels do. Such blocks also take the AVX-512
	// tiles of up to mrTall rows (see macro).
	streamRows = 4 * mr

	// DotMaxRows is the most rows of A·Bᵀ computed as dot products of
	// stored rows (tileDots) rather than tiles. Measured on 512×256
	// weights: 1 row 3× faster, 2 rows 1.7× faster, 4 rows 10% slower
	// than packing B for the tile kernel. The dot products sum in another
	// order than the tiles, so a row of such a product does not get the
	// bits of the same row in a larger one (a decoder's shared prompts
	// heed it).
	DotMaxRows = 3
)

// problem is one validated call.
type problem struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	lda, ldb, ldc  int

	// b16, when set (SgemmBF16, a bf16 PackedB), is the stored B in
	// bfloat16 instead of b: the packer widens it, and the few-row
	// products read its rows through dot4BF16. a16, when set (SgemmBF16),
	// is the stored A in bfloat16 instead of a: tile widens it a block at
	// a time (widenA).
	a16, b16 []uint16

	// bPacked, when set, is all of op(B) packed (prepackB): the k block at
	// pc starts at pc·roundUp(n, nr), column panels in order within it.
	// bPacked16 is the same in bfloat16 (a PackedB made by PackBBF16 or
	// PackBNarrow).
	bPacked   []float32
	bPacked16 []uint16
	// bDP, when set, is all of op(B) in DP panels (prepackDP, or a PackedB
	// made by PackBDP), for the VDPBF16PS kernels (dp.go).
	bDP []uint16
	// aDP, when set, is all of A (bf16, not transposed) with its pairs
	// swapped for the VDPBF16PS kernels, rows of swappedLen (swapAll).
	aDP []uint16
}

// prepackB packs all of op(B) into ws.b and points g.bPacked at it.
func (g *problem) prepackB(ws *workspace) {
	ws.b = grow(ws.b, roundUp(g.n, nr)*g.k)
	b := ws.b
	blockPanels(g.n, g.k, func(off, pc, kc, j0, nc int) { packB(b[off:], g, pc, kc, j0, nc, false) })
	g.bPacked = b
}

// panelsB returns the packed kc×nc block of op(B) at (pc, j0): a slice of
// bPacked when it is set, else packed now into ws (with prefetch, also
// prefetching what is packed next, see packB); or, in bfloat16, a slice
// of bPacked16.
func (g *problem) panelsB(ws *workspace, pc, kc, j0, nc int, prefetch bool) ([]float32, []uint16) {
	// j0 is a multiple of nr, so its panel starts at (j0/nr)·nr·kc.
	off := pc*roundUp(g.n, nr) + j0*kc
	switch {
	case g.bPacked16 != nil:
		return nil, g.bPacked16[off : off+roundUp(nc, nr)*kc]
	case g.bPacked != nil:
		return g.bPacked[off : off+roundUp(nc, nr)*kc], nil
	}
	return ws.packB(g, pc, kc, j0, nc, prefetch), nil
}

func newProblem(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) *problem {
	checkProblem(transA, transB, m, n, k, len(a), lda, len(b), ldb, c, ldc)
	return &problem{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta,
		a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc}
}

// checkProblem panics unless the operands of a product (A and B given by
// their lengths) hold the matrices the dimensions say.
func checkProblem(transA, transB bool, m, n, k, lenA, lda, lenB, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if m == 0 || n == 0 {
		ar, br = 0, 0 // an empty C reads neither A nor B
	}
	checkMatrix("a", lenA, ar, ac, lda)
	checkMatrix("b", lenB, br, bc, ldb)
	checkMatrix("c", len(c), m, n, ldc)
}

// checkMatrix panics unless a slice of n values holds a rows×cols matrix
// with leading dimension ld. The assembly kernel does no bounds checks, so
// this must hold before any of it runs.
func checkMatrix(name string, n, rows, cols, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("gemm: ld%s = %d < %d (columns of stored %s)", name, ld, max(1, cols), name))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if need := (rows-1)*ld + cols; n < need {
		panic(fmt.Sprintf("gemm: len(%s) = %d < %d for a %d×%d matrix with ld%s = %d", name, n, need, rows, cols, name, ld))
	}
}

// trivial handles the products with nothing to sum (k == 0 or alpha == 0:
// C = beta·C, A and B unread) and reports whether the call is done.
func (g *problem) trivial() bool {
	if g.m == 0 || g.n == 0 {
		return true
	}
	if g.k > 0 && g.alpha != 0 {
		return false
	}
	for i := 0; i < g.m; i++ {
		row := g.c[i*g.ldc : i*g.ldc+g.n]
		if g.beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= g.beta
		}
	}
	return true
}

// colsInPlace lets a transposed A be read in place (the Cols kernels);
// tests switch it off to compare with packing it.
var colsInPlace = true

// parallel computes C on the worker pool, one chunk of the partition grid
// (chunks of about chunkFlops) per loop index.
func (g *problem) parallel(chunkFlops int) {
	rowStep, colStep := partition(g.m, g.n, g.k, chunkFlops)
	dp := g.dp()
	if dp {
		colStep = roundUp(colStep, dpCols) // chunks of whole DP panels
		rowStep = roundUp(rowStep, mrDP)   // and of whole DP tiles of rows
	}
	rows := (g.m + rowStep - 1) / rowStep
	cols := (g.n + colStep - 1) / colStep
	if g.bPacked == nil && g.bPacked16 == nil && g.bDP == nil && rows > 1 {
		// Several row chunks need the same B panels: pack all of op(B)
		// once (k·n copies, small next to 2·m·n·k flops) instead of once
		// per chunk.
		shared := getWorkspace()
		defer putWorkspace(shared)
		switch {
		case dp && dpPanelsLen(g.k, g.n) <= prepackMax:
			g.prepackDP(shared)
		case !dp && roundUp(g.n, nr)*g.k <= prepackMax:
			g.prepackB(shared)
		}
	}
	if dp && (cols > 1 || g.panelByPanel(g.m)) && g.m*g.swappedLen() <= swapMax {
		// Several column chunks, or panels, need the same A blocks
		// swapped: swap it once.
		shared := getWorkspace()
		defer putWorkspace(shared)
		g.swapAll(shared)
	}
	parallel.For(rows*cols, 1, func(chunk, _, _ int) {
		i0, j0 := (chunk/cols)*rowStep, (chunk%cols)*colStep
		ws := getWorkspace()
		g.tile(i0, min(rowStep, g.m-i0), j0, min(colStep, g.n-j0), ws)
		putWorkspace(ws)
	})
}

func (g *problem) serial() {
	ws := getWorkspace()
	if g.dp() && (g.n > ncMaxDP || g.panelByPanel(g.m)) && g.m*g.swappedLen() <= swapMax {
		g.swapAll(ws) // for every column block
	}
	g.tile(0, g.m, 0, g.n, ws)
	putWorkspace(ws)
}

// panelByPanel reports whether a tile of m rows may pack B a panel at a
// time, multiplying each as soon as it is packed while the next one's
// weights are prefetched: a decoding step's product, x·Wᵀ with at most
// streamRows rows of x by weights W read where they are stored, not
// packed beforehand (decision 59). The packing then reads each weight
// once from memory, and the panel is still in L1 when the kernels read
// it. Every element sees the same k blocks in the same order as in a
// block of many panels, so the bits are the same. (tile also needs A in
// place; tileDP swaps all of A first, see parallel and serial.)
func (g *problem) panelByPanel(m int) bool {
	return m <= streamRows && !g.transA && g.transB && g.bPacked == nil && g.bPacked16 == nil && g.bDP == nil
}

// partition splits C into a fixed grid of chunks of about chunkFlops for the
// worker pool: row and column steps that are multiples of the register
// tile, chosen from the shape only. Splitting the longer side first keeps
// chunks near square, which keeps the packing each chunk repeats small next
// to its arithmetic.
func partition(m, n, k, chunkFlops int) (rowStep, colStep int) {
	target := int(2 * float64(m) * float64(n) * float64(k) / float64(chunkFlops))
	target = min(max(target, 2), parMaxChunks)
	rm, rn := 1, 1
	for rm*rn < target {
		// Every piece keeps at least one full tile; the grid stays within
		// parMaxChunks.
		canM := m/(rm+1) >= mr && (rm+1)*rn <= parMaxChunks
		canN := n/(rn+1) >= nr && rm*(rn+1) <= parMaxChunks
		if canM && (!canN || m*rn >= n*rm) {
			rm++
		} else if canN {
			rn++
		} else {
			break
		}
	}
	return roundUp((m+rm-1)/rm, mr), roundUp((n+rn-1)/rn, nr)
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }

// blockPanels lays out an n-column, k-deep B as the kernels read it: panels
// of nr columns, depth blocks of kBlock(k); pack writes block pc (kc deep)
// of the panels from column j0 (nc columns) at offset pc·npad + j0·kc. A
// large B is packed on the pool, by ranges of panels (the other core would
// otherwise wait through it: 5% of a 1024×1024×1024 product).
func blockPanels(n, k int, pack func(off, pc, kc, j0, nc int)) {
	npad := roundUp(n, nr)
	kb := kBlock(k)
	panels := npad / nr
	grain := panels
	if npad*k >= 2*prepackChunk {
		grain = max(1, prepackChunk/(nr*k))
	}
	parallel.For(panels, grain, func(_, lo, hi int) {
		j0, j1 := lo*nr, min(hi*nr, n)
		for pc := 0; pc < k; pc += kb {
			kc := min(kb, k-pc)
			pack(pc*npad+j0*kc, pc, kc, j0, j1-j0)
		}
	})
}

// kBlock is the k-block length: k split into equal blocks of at most kcMax,
// so a k just above kcMax does not leave a tiny, slow last block.
func kBlock(k int) int {
	nb := (k + kcMax - 1) / kcMax
	return (k + nb - 1) / nb
}

// tile computes the m×n block of C at (i0, j0) in full, over all of k, on
// the calling goroutine. The loop nest is the BLIS one: column blocks of B
// (nc), k blocks (kc) with B packed once per block, row blocks of A (mc)
// packed once per block, then the register tiles. Every element of C sees
// the same k blocks in the same order whatever tile it falls in, and tile
// boundaries are multiples of mr and nr, so results do not depend on how C
// was split between goroutines.
//
// When A is not transposed and the assembly kernel is in use, A is read
// where it is stored (kernelRows), a last partial panel of rows included:
// packing A would cost about as much as the arithmetic when n is small
// (attention's A·V, n = head size) or m is (a decoding step). A
// transposed A is read in place as well (kernelCols).
func (g *problem) tile(i0, m, j0, n int, ws *workspace) {
	if g.dots() {
		g.tileDots(i0, m, j0, n)
		return
	}
	if g.dp() {
		g.tileDP(i0, m, j0, n, ws)
		return
	}
	kb := kBlock(g.k)
	rows := useAsm && !g.transA && !crowdedMr[g.lda%1024]
	if g.a16 != nil {
		rows = useAsm && !g.transA && !crowdedMr[kb%1024] // widenA's rows are kc apart
	}
	// A transposed A is read in place too (the Cols kernels: a k step's
	// values for a tile's rows are consecutive), a bf16 one as its widened
	// blocks (mc values a row). Packing it, a weight gradient's dYᵀ over
	// thousands of tokens, read a line per 6 values, again for the next
	// 6-row panel of A: dW products ran 10–30% slower (decision 61). Not
	// when the stored rows are a multiple of 4 KiB apart (lda a multiple
	// of 1024): the k steps' lines then crowd a sixteenth of the L2's
	// sets, and packing was faster (TN 1024³: 197–220 GFLOP/s in place,
	// 260–298 packed).
	cols := useAsm && colsInPlace && g.transA && (g.a16 != nil || g.lda%1024 != 0)
	// Panel by panel only with A read in place, once for all panels (a
	// packed or widened A block would be made again for each).
	step, each := ncMax, g.panelByPanel(m) && rows && g.a16 == nil
	if each {
		step = 2 * nr // a pair of panels, for the wide kernels
	}
	for jc := 0; jc < n; jc += step {
		nc := min(step, n-jc)
		for pc := 0; pc < g.k; pc += kb {
			kc := min(kb, g.k-pc)
			beta := g.beta
			if pc > 0 {
				beta = 1 // later k blocks accumulate onto the first
			}
			bp, bp16 := g.panelsB(ws, pc, kc, j0+jc, nc, each)
			if bp16 != nil && (!rows || m > streamRows) {
				// Only the in-place kernels read bf16 panels, and widening
				// in registers pays only while the panels stream from
				// memory for a few tiles (a decoding step): for the other
				// kernels, and for many rows (a prefill), where a panel
				// serves many tiles from the caches, widen the block once
				// (exact, so the same products).
				ws.wide = grow(ws.wide, len(bp16))
				widen(ws.wide, bp16)
				bp, bp16 = ws.wide, nil
			}
			for ic := 0; ic < m; ic += mcMax {
				mc := min(mcMax, m-ic)
				// The block's A: rows in place from (i0+ic, pc) with
				// rows, transposed in place from a[pc·lda + i0+ic] with
				// cols, else packed (ap).
				var av, ap []float32
				ald := g.lda
				switch {
				case g.a16 != nil:
					// The stored block widened whole (it fits the L2),
					// then read as a float32 A whose block is at (0, 0).
					blk, ld := ws.widenA(g, i0+ic, mc, pc, kc)
					av, ald = blk, ld
					if !rows && !cols {
						ap = ws.packA(&problem{transA: g.transA, a: blk, lda: ld}, 0, mc, 0, kc)
					}
				case rows:
					av = g.a[(i0+ic)*g.lda+pc:]
				case cols:
					av = g.a[pc*g.lda+i0+ic:] // op(A)[i][p] = a[p·lda + i]
				default:
					ap = ws.packA(g, i0+ic, mc, pc, kc)
				}
				// Panel by panel, the packed panel is all there is: no next
				// one for the kernels to prefetch.
				g.macro(ws, ap, av, ald, bp, bp16, i0+ic, mc, j0+jc, nc, kc, beta, rows, cols, mc <= streamRows && !each)
			}
		}
	}
}

// dots reports whether the product is A·Bᵀ with at most DotMaxRows rows:
// a decoding step (x·Wᵀ for one or a few sequences). Packing W would then
// cost more than the arithmetic, so tileDots computes dot products of
// stored rows instead. The choice depends on the shape only.
func (g *problem) dots() bool {
	return useAsm && !g.transA && g.transB && g.m <= DotMaxRows
}

// tileDots computes the m×n block of C at (i0, j0) as dot products of rows
// of A with rows of B (op(B) = Bᵀ), four rows of B at a time so each row of
// A is read once per four outputs. j0 is a multiple of nr, so the groups of
// four, and the scalar remainder past the last whole group, fall on the
// same columns whatever the block. Rows of B stored in bf16 are widened
// in dot4BF16's registers: the same sums of the same values.
func (g *problem) tileDots(i0, m, j0, n int) {
	k16 := g.k / 16 * 16
	for j := j0; j < j0+n; j += 4 {
		w := min(4, j0+n-j)
		for i := i0; i < i0+m; i++ {
			arow := g.a[i*g.lda : i*g.lda+g.k]
			var s [4]float32
			from := 0 // the k steps dot4 did
			if w == 4 && k16 > 0 {
				if g.b16 != nil {
					dotRowsBF16(k16, arow, g.b16[j*g.ldb:], g.ldb, &s)
				} else {
					dotRows(k16, arow, g.b[j*g.ldb:], g.ldb, &s)
				}
				from = k16
			}
			crow := g.c[i*g.ldc+j : i*g.ldc+j+w]
			for r := range crow {
				if g.b16 != nil {
					brow := g.b16[(j+r)*g.ldb : (j+r)*g.ldb+g.k]
					for p := from; p < g.k; p++ {
						s[r] += arow[p] * bf16(brow[p])
					}
				} else {
					brow := g.b[(j+r)*g.ldb : (j+r)*g.ldb+g.k]
					for p := from; p < g.k; p++ {
						s[r] += arow[p] * brow[p]
					}
				}
				if g.beta == 0 {
					crow[r] = g.alpha * s[r]
				} else {
					crow[r] = g.alpha*s[r] + g.beta*crow[r]
				}
			}
		}
	}
}

// crowdedRows reports whether more than three of a tile's n rows of A, lda
// floats apart, fall into the same set of a 4 KiB-periodic L1 (Zen 3: 64
// sets of 64-byte lines, 8 ways). Read in place, such rows (lda a multiple
// of 1024, say) evict each other and the B panel; packing A is then cheaper
// (n = mr), or tiles of mr rows (n = mrTall, see macro).
func crowdedRows(lda, n int) bool {
	const period, line = 4096, 64
	for i := 0; i < n; i++ {
		same := 0
		for j := 0; j < n; j++ {
			d := ((j - i) * lda * 4) % period
			if d < 0 {
				d += period
			}
			if d < line || d > period-line {
				same++
			}
		}
		if same > 3 {
			return true
		}
	}
	return false
}

// crowdedMr and crowdedTall hold crowdedRows(lda, mr) and crowdedRows(lda,
// mrTall) by lda mod 1024, the answer's period. tile asks once a call and
// macro once a block, and a decoding step's few-row products run many
// small blocks: computed each time, the loops' 144 remainders took 1.8 of
// the 277 CPU seconds of two Qwen2.5-0.5B LoRA steps.
var crowdedMr, crowdedTall = crowdedTable(mr), crowdedTable(mrTall)

func crowdedTable(n int) (t [1024]bool) {
	for lda := range t {
		t[lda] = crowdedRows(lda, n)
	}
	return t
}

// macro runs the micro-kernel over the mc×nc block of C at (i0, j0) from
// the packed panels (k block at pc of length kc). B micro-panels are the
// outer loop so each (kc×nr, 16 KiB) stays in L1 while the A block streams
// from L2. With useWide, two full panels at a time go to the kernels of
// tiles 2·nr wide (the pair, 32 KiB at kc = 256, still fits an L1 of
// 48 KiB), which give each element the bits of the nr-wide kernels.
//
// The panels are bp, or with rows bp16 in bfloat16 (read by the in-place
// kernels' bf16 twins). A is ap packed, or with rows av in place (the
// block's first row at av, the next ald on), or with cols av transposed in
// place (row i at k step p at av[p·ald + i]).
//
// With stream (set for at most streamRows rows of B panels packed
// beforehand) each B panel serves a few tiles only, right after it
// arrives from memory, and the kernels prefetch the next.
func (g *problem) macro(ws *workspace, ap, av []float32, ald int, bp []float32, bp16 []uint16, i0, mc, j0, nc, kc int, beta float32, rows, cols, stream bool) {
	// The block's tiling for pairs of panels, the same for every pair.
	tall := rows && mc <= streamRows && (beta == 0 || beta == 1) && !crowdedTall[ald%1024]
	for jr := 0; jr < nc; {
		span := nr
		if useAsm && useWide && jr+2*nr <= nc {
			span = 2 * nr
		}
		if tall && span > nr {
			// A block of a few rows (a decoding step's) goes to the
			// AVX-512 in-place kernels of up to mrTall rows, in tiles as
			// even as the rows allow: 16 rows as 8 + 8, where 6 + 6 + 4
			// read each pair of panels three times, and the 8 rows of a
			// group of sequences (model's Decoder) as 8, where 6 + 2 left
			// the 2-row tile's 4 FMA chains waiting on their latency.
			// (Taller tiles made a training step 3–5% slower.) Not for
			// other betas: a row of a whole mr-row tile gets the kernel's
			// merge, one of a partial tile microTile's (see there), and
			// this tiling would change which rows are which. Nor for rows
			// that would crowd one set of the L1 (lda of 512 floats: 6 of
			// 12 rows).
			tiles := (mc + mrTall - 1) / mrTall
			for t := 0; t < tiles; t++ {
				ir, end := t*mc/tiles, (t+1)*mc/tiles
				g.microTile(ws, ap, av, ald, bp, bp16, i0, ir, end-ir, j0, jr, min(span, nc-jr), span, kc, beta, rows, false, stream)
			}
		} else {
			for ir := 0; ir < mc; ir += mr {
				g.microTile(ws, ap, av, ald, bp, bp16, i0, ir, min(mr, mc-ir), j0, jr, min(span, nc-jr), span, kc, beta, rows, cols, stream)
			}
		}
		jr += span
	}
}

// microTile computes the tile of h ≤ mr rows (≤ mrTall with rows and span
// 2·nr, see macro) at row ir and w ≤ span columns at column jr of the block
// at (i0, j0) with the kernel span columns wide (nr, or 2·nr with useWide).
// With rows or cols, A is read in place from av (ap unused), h rows by a
// kernel of that many rows. A tile that is not
// whole is computed into the workspace's scratch tile and the part inside
// merged back, as alpha·acc + beta·C rounded twice (the kernels' own
// merge is one FMA): the same bits whichever width computed it.
func (g *problem) microTile(ws *workspace, ap, av []float32, ald int, bp []float32, bp16 []uint16, i0, ir, h, j0, jr, w, span, kc int, beta float32, rows, cols, stream bool) {
	var bpan []float32
	var bpan16 []uint16
	if bp16 != nil {
		bpan16 = bp16[jr*kc : jr*kc+span*kc]
	} else {
		bpan = bp[jr*kc : jr*kc+span*kc]
	}
	// run computes the tile into c (ldc, beta).
	run := func(c []float32, ldc int, beta float32) {
		switch {
		case bpan16 != nil && span > nr:
			kernelRowsWideBF16(h, kc, av[ir*ald:], ald, bpan16, c, ldc, g.alpha, beta, stream)
		case bpan16 != nil:
			kernelRowsBF16(h, kc, av[ir*ald:], ald, bpan16, c, ldc, g.alpha, beta, stream)
		case rows && span > nr:
			kernelRowsWide(h, kc, av[ir*ald:], ald, bpan, c, ldc, g.alpha, beta, stream)
		case rows:
			kernelRows(h, kc, av[ir*ald:], ald, bpan, c, ldc, g.alpha, beta, stream)
		case cols:
			kernelCols(h, kc, av[ir:], ald, bpan, c, ldc, g.alpha, beta, span > nr)
		case span > nr:
			kernelWide(kc, ap[ir*kc:ir*kc+mr*kc], bpan, c, ldc, g.alpha, beta)
		default:
			kernel(kc, ap[ir*kc:ir*kc+mr*kc], bpan, c, ldc, g.alpha, beta)
		}
	}
	off := (i0+ir)*g.ldc + j0 + jr
	// A kernel reading h ≠ mr rows of A in place writes h rows of C: it may
	// write them itself when its FMA merge rounds as the one below, that is
	// for beta 0 (a copy) and 1 (round(C + alpha·acc) either way).
	if w == span && (h == mr || (rows || cols) && (beta == 0 || beta == 1)) {
		run(g.c[off:], g.ldc, beta)
		return
	}
	edge := ws.edge[:max(h, mr)*span]
	run(edge, span, 0)
	g.mergeEdge(off, edge, span, h, w, beta)
}

// mergeEdge merges the h×w corner of a tile computed into edge (alpha·acc,
// rows span apart) into C at off: C = edge + beta·C, rounded twice (C
// overwritten at beta 0).
func (g *problem) mergeEdge(off int, edge []float32, span, h, w int, beta float32) {
	for i := 0; i < h; i++ {
		dst := g.c[off+i*g.ldc : off+i*g.ldc+w]
		src := edge[i*span : i*span+w]
		if beta == 0 {
			copy(dst, src)
			continue
		}
		for j := range dst {
			dst[j] = src[j] + beta*dst[j]
		}
	}
}

// workspace holds one goroutine's packing buffers. They are kept on a free
// list (not a sync.Pool, which the garbage collector empties) so a training
// loop reuses the same few megabytes instead of reallocating them after
// every collection.
type workspace struct {
	a, b  []float32
	wa    []float32                           // a block of a bf16 A widened (widenA)
	wide  []float32                           // bf16 panels widened (see tile)
	dp    []uint16                            // all of op(B) in DP panels (prepackDP)
	dpA   []uint16                            // a block of A, pairs swapped (swapA)
	dpAll []uint16                            // all of A, pairs swapped (swapAll)
	dpB   []uint16                            // a block of op(B) in DP panels (panelsDP)
	edge  [max(mrDP, mrTall) * 2 * nr]float32 // one tile, nr or 2·nr wide (up to mrDP or mrTall rows)
}

// workspaces is the free list. It keeps at most maxFree workspaces between
// calls (more concurrent calls still work; their extra workspaces are
// dropped when they finish). A mutex, not a channel: a decoding step takes
// and returns a workspace per chunk of each of its products, and a
// channel's lock cost 3% of it.
var workspaces struct {
	sync.Mutex
	free []*workspace
}

const maxFree = 16

func getWorkspace() *workspace {
	workspaces.Lock()
	defer workspaces.Unlock()
	if n := len(workspaces.free); n > 0 {
		w := workspaces.free[n-1]
		workspaces.free = workspaces.free[:n-1]
		return w
	}
	return new(workspace)
}

func putWorkspace(w *workspace) {
	workspaces.Lock()
	defer workspaces.Unlock()
	if len(workspaces.free) < maxFree {
		workspaces.free = append(workspaces.free, w)
	}
}

func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}
