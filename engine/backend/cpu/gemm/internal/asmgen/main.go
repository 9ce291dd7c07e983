// Command asmgen writes the assembly of package gemm (kernel_amd64.s and its
// Go declarations kernel_amd64_stub.go) with avo: the AVX2+FMA and AVX-512
// micro-kernels described below, the packing helpers (packTrans8, packRow,
// packCols6, and for bfloat16 operands packRowBF16) and the dot product kernels for A·Bᵀ with very few
// rows (dot4) and for one row against eight (dot8, see Dots), and the
// weighted sums of rows of one row times a matrix (comb64, comb32, see
// Combine). Run it through `go generate` in engine/backend/cpu/gemm.
//
// A kernel computes one MR×NR = 6×16 tile of C (kernelAVX2…) or one 6×32
// tile (kernelAVX512…: two adjacent panels) from kc steps of A and of
// packed B panels (kc steps of 16 floats: row p of the 16 columns):
//
//	acc[i][j] = Σ_p A[i][p]·b[16p+j]           (p = 0 … kc-1, in order)
//	C[i][j]   = alpha·acc[i][j] + beta·C[i][j]  (C not read when beta == 0)
//
// kernelAVX2 reads A from a packed panel (kc steps of 6 floats: column p of
// the 6 rows); kernelAVX2Rows reads the 6 rows of A where they are stored
// (row i at a + i·lda), which saves packing A when it is not transposed,
// and kernelAVX2Rows1 … kernelAVX2Rows5 do the same for the 1–5 rows left
// at the bottom of such an A (a decoding step's 16 rows end in a tile of 4:
// packing it, and computing 6 rows for 4, took a quarter of the product);
// the AVX-512 ones go on to 12 rows (kernelAVX512Rows7 … Rows12).
// kernelAVX2Cols … (and kernelAVX512Cols …) read a transposed A in place:
// the tile's values at a k step are consecutive there, the next step's lda
// on (a weight gradient's dYᵀ, which packing read a line per 6 values of).
// The Pf variants of the in-place kernels also prefetch the next B panel
// (the next pair for kernelAVX512…), for products of so few rows that B
// streams from memory once. All, of
// either width, do the same FMAs in the same order for each element, so
// they give identical bits (see tile for the register plans).
package main

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

const (
	mr     = 6  // rows of the tile
	nr     = 16 // columns of the tile (two YMM registers)
	dpCols = 32 // columns of a DP panel (dpKernels)
	unroll = 4  // k steps per loop iteration
	mrDP   = 12 // rows of the VDPBF16PS tile (dpKernels)
	mrTall = 12 // the most rows of the AVX-512 in-place kernels (rowKernels)
)

func main() {
	ConstraintExpr("amd64")

	TEXT("kernelAVX2", NOSPLIT, "func(kc int, a, b, c *float32, ldc int, alpha, beta float32)")
	Doc(
		"kernelAVX2 computes the 6×16 tile C = alpha·(packed A panel)·(packed B panel) + beta·C",
		"over kc steps; C is read only when beta != 0. ldc is in elements.",
		"Requires AVX2 and FMA.",
	)
	packedKernel(avx2)
	rowKernels(avx2)
	colKernels(avx2)

	TEXT("kernelAVX512", NOSPLIT, "func(kc int, a, b, c *float32, ldc int, alpha, beta float32)")
	Doc(
		"kernelAVX512 computes the 6×32 tile C = alpha·(packed A panel)·(two adjacent packed B",
		"panels) + beta·C over kc steps, each element with the FMAs of kernelAVX2, in the same",
		"order; C is read only when beta != 0. ldc is in elements.",
		"Requires AVX-512F.",
	)
	packedKernel(avx512)
	rowKernels(avx512)
	colKernels(avx512)

	// The same in-place kernels on bfloat16 B panels (SgemmPacked of a
	// PackedB in bf16): each 16-bit value is widened in a register, which
	// is exact, so they give the bits of the float32 kernels on the widened
	// panels.
	rowKernels(avx2h)
	rowKernels(avx512h)
	dpKernels()
	dpPack()
	dpSwap()

	transposePack()
	rowPack()
	widenKernels()
	colPack()
	dotKernel(false)
	dotKernel(true)
	dot8Kernel()
	combineKernels()

	Generate()
}

// tile is a micro-kernel's register plan. Each of the tile's rows has two
// vector accumulators; a k step loads the two matching vectors of B and
// broadcasts one value of A per row into one of two registers, alternating
// so that consecutive broadcasts do not wait on each other.
//
// avx2 is the 6×16 tile of one packed B panel: a row's two YMM registers
// are its columns 0–7 and 8–15. avx512 is the 6×32 tile of two adjacent
// panels (the second kc·16 floats after the first): a row's two ZMM
// registers are the 16 columns of each panel. Either way each element of C
// is one chain of FMAs over k in order, then the same multiply by alpha and
// FMA with beta·C, so the two give the same bits. Tiles of up to 6 rows
// fit the 16 vector registers that VZEROUPPER cleans: 12 accumulators, 2 B
// vectors, 2 broadcasts; at 12 chains per 8 loads the 512-bit one keeps both of an
// Intel core's 512-bit FMA pipes busy (4-cycle latency: 8 in flight).
// The AVX-512 in-place kernels (rowKernels) also come in 7 to 12 rows
// (maxRows), their further sums in Z16–Z27, for the blocks of a few rows
// of a decoding step: a group of 8 rows as one tile where 6 + 2 read the
// panels twice and kept only 4 chains in the second tile.
type tile struct {
	name     string        // kernel name prefix: kernelAVX2, kernelAVX512
	acc      []VecPhysical // 2 per row, maxRows rows
	maxRows  int           // the most rows of the in-place kernels (rowKernels)
	b, bc    [2]VecPhysical
	vecBytes int // bytes per vector register
	panels   int // B panels per tile (1: both vectors from one panel)
	isa      string
	// half: the B panels hold bfloat16 values (2 bytes each), loaded by
	// VPMOVZXWD (zero-extend each to 32 bits) and VPSLLD 16 (move them to
	// the top half): the float32 with the same value, exactly.
	half bool
}

var (
	avx2 = tile{name: "kernelAVX2", acc: []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11}, maxRows: mr,
		b: [2]VecPhysical{Y12, Y13}, bc: [2]VecPhysical{Y14, Y15}, vecBytes: 32, panels: 1, isa: "AVX2 and FMA"}
	avx512 = tile{name: "kernelAVX512", acc: []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27}, maxRows: mrTall,
		b: [2]VecPhysical{Z12, Z13}, bc: [2]VecPhysical{Z14, Z15}, vecBytes: 64, panels: 2, isa: "AVX-512F"}
	avx2h   = halfTile(avx2, "kernelAVX2BF16")
	avx512h = halfTile(avx512, "kernelAVX512BF16")
)

// halfTile is t reading bfloat16 B panels.
func halfTile(t tile, name string) tile {
	t.name, t.half = name, true
	return t
}

// bElem is the bytes of one value of a B panel.
func (t tile) bElem() int {
	if t.half {
		return 2
	}
	return 4
}

// width is the tile's number of columns.
func (t tile) width() int { return t.panels * nr }

// packedKernel emits the body of the kernel reading A from a packed panel
// (kc steps of 6 floats: column p of the 6 rows).
func packedKernel(t tile) {
	pa := Load(Param("a"), RSI)
	kernelBody(t, mr, false, func(s, i int) Mem {
		return Mem{Base: pa, Disp: 4 * (mr*s + i)}
	}, func(steps int) {
		ADDQ(U32(4*mr*steps), pa)
	})
}

// rowKernels emits t's kernels reading A in place, for 6 rows (suffix
// Rows) and every other count up to t.maxRows (RowsN: 1–5 for the last
// rows of a product whose row count is not a multiple of 6, and for the
// AVX-512 tile 7–12, see tile); then the same with the next B panels
// prefetched (suffix Pf): the next panel for the AVX2 tile, the next pair
// for the AVX-512 one.
func rowKernels(t tile) {
	for _, pf := range []bool{false, true} {
		for h := t.maxRows; h >= 1; h-- {
			name := t.name + "Rows"
			doc := []string{
				fmt.Sprintf("%s is %s with A read in place: row i of the tile's A at a + i·lda", name, t.name),
				"(lda in elements), k step p at offset p.",
			}
			if t.half {
				doc[0] = fmt.Sprintf("%s is %sRows on bfloat16 B panels (kc steps of 16 bf16 values),", name, strings.Replace(t.name, "BF16", "", 1))
				doc[1] = "each widened to float32 in a register: the same FMAs on the same values."
			}
			if h != mr {
				name = fmt.Sprintf("%sRows%d", t.name, h)
				doc = []string{fmt.Sprintf("%s is %sRows for a tile of %d rows (%d rows of A and of C).", name, t.name, h, h)}
			}
			if pf {
				doc = []string{fmt.Sprintf("%sPf is %s that also prefetches the next B panels (kc·%d values on).", name, name, t.width())}
				name += "Pf"
			}
			sig := "func(kc int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32)"
			if t.half {
				sig = "func(kc int, a *float32, lda int, b *uint16, c *float32, ldc int, alpha, beta float32)"
			}
			TEXT(name, NOSPLIT, sig)
			Doc(append(doc, "Requires "+t.isa+".")...)
			row0 := Load(Param("a"), RSI)
			lda := Load(Param("lda"), R10)
			SHLQ(U8(2), lda) // bytes per row of A
			// Row bases: rows 0, 3, 6 and 9; the rows between by lda·1,
			// lda·2. (RBX and RDX are free until storeTile loads c.)
			bases := []Register{row0, R9, RBX, RDX}[:(h+2)/3]
			for i := 1; i < len(bases); i++ {
				LEAQ(Mem{Base: bases[i-1], Index: lda, Scale: 2}, bases[i])
				ADDQ(lda, bases[i]) // row 3i = row 3(i−1) + 3·lda
			}
			kernelBody(t, h, pf, func(s, i int) Mem {
				m := Mem{Base: bases[i/3], Disp: 4 * s}
				if i%3 > 0 {
					m.Index, m.Scale = lda, uint8(i%3)
				}
				return m
			}, func(steps int) {
				for _, r := range bases {
					ADDQ(U32(4*steps), r)
				}
			})
		}
	}
}

// colKernels emits t's kernels reading a transposed A in place, for 6 rows
// of op(A) (suffix Cols) and the 1–5 left at the bottom (Cols1 … Cols5):
// op(A)[i][p] = a[p·lda + i], so a k step's values for the tile's rows are
// consecutive, and the next step's are lda on. A weight gradient's
// product, dYᵀ·X over thousands of tokens, then needs no packing of dY:
// packing it (packCols6) read a line of its own for every 6 values, again
// for each panel, and cost about two thirds of the arithmetic.
func colKernels(t tile) {
	for h := mr; h >= 1; h-- {
		name := t.name + "Cols"
		doc := []string{
			fmt.Sprintf("%s is %s with a transposed A read in place: the tile's row i at k step p", name, t.name),
			"at a + p·lda + i (lda in elements).",
		}
		if h < mr {
			name = fmt.Sprintf("%sCols%d", t.name, h)
			doc = []string{fmt.Sprintf("%s is %sCols for a tile of %d rows (%d rows of A and of C).", name, t.name, h, h)}
		}
		TEXT(name, NOSPLIT, "func(kc int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32)")
		Doc(append(doc, "Requires "+t.isa+".")...)
		pa := Load(Param("a"), RSI)
		lda := Load(Param("lda"), R10)
		SHLQ(U8(2), lda) // bytes per k step of A
		lda3 := R9
		LEAQ(Mem{Base: lda, Index: lda, Scale: 2}, lda3)
		kernelBody(t, h, false, func(s, i int) Mem {
			m := Mem{Base: pa, Disp: 4 * i}
			switch s {
			case 1, 2:
				m.Index, m.Scale = lda, uint8(s)
			case 3:
				m.Index, m.Scale = lda3, 1
			}
			return m
		}, func(steps int) {
			if steps == 4 {
				LEAQ(Mem{Base: pa, Index: lda, Scale: 4}, pa)
				return
			}
			for range steps {
				ADDQ(lda, pa)
			}
		})
	}
}

// transposePack emits packTrans8, the packing of 8 stored rows of B (B
// transposed: op(B)[p][j] = b[j·ldb + p]) into 8 lanes of a packed panel,
// 8 k steps at a time through an 8×8 register transpose. The scalar loop it
// replaces writes one float per cache line of the panel. It also emits
// packRows6, the same for the 6 stored rows of a panel of A that is not
// transposed, packed when its rows are read in place too badly (see
// crowdedRows): the scalar loop there took 17% of a 1024×1024×1024
// product.
func transposePack() {
	TEXT("packTrans8", NOSPLIT, "func(dst, src *float32, ld, kc8 int)")
	Doc(
		"packTrans8 sets dst[16p + r] = src[r·ld + p] for r < 8 and p < kc8, a multiple of 8",
		"(ld in elements): 8 rows of a transposed B into 8 lanes of a packed 16-wide panel.",
		"Requires AVX.",
	)
	store16 := func(dst Register, t []VecPhysical) {
		for e := 0; e < 8; e++ {
			VMOVUPS(t[e], Mem{Base: dst, Disp: 64 * e})
		}
	}
	transpose8(8, false, store16, 8*64)

	TEXT("packTrans8BF16", NOSPLIT, "func(dst *float32, src *uint16, ld, kc8 int)")
	Doc(
		"packTrans8BF16 is packTrans8 on bfloat16 rows, each value widened to float32:",
		"dst[16p + r] = src[r·ld + p] widened for r < 8 and p < kc8, a multiple of 8.",
		"Requires AVX2.",
	)
	transpose8(8, true, store16, 8*64)

	TEXT("packTrans8BF16Pf", NOSPLIT, "func(dst *float32, src *uint16, ld, kc8 int, next *uint16)")
	Doc(
		"packTrans8BF16Pf is packTrans8BF16 prefetching the same values of the 8 rows at",
		"next (ld apart), as packTrans8DPPf does.",
		"Requires AVX2.",
	)
	transpose8Of(8, true, false, true, "kc8", store16, 8*64)

	TEXT("packRows6", NOSPLIT, "func(dst, src *float32, ld, kc8 int)")
	Doc(
		"packRows6 sets dst[6p + r] = src[r·ld + p] for r < 6 and p < kc8, a multiple of 8",
		"(ld in elements): the 6 rows of a panel of A into a packed 6-wide panel.",
		"Requires AVX.",
	)
	transpose8(mr, false, func(dst Register, t []VecPhysical) {
		// k step e's 6 values are the first 6 lanes of t[e]: each store of
		// 8 lanes is overlapped by the next one, 6 lanes on; the last
		// stores 4 + 2 lanes, so nothing is written past the 8 steps.
		for e := 0; e < 7; e++ {
			VMOVUPS(t[e], Mem{Base: dst, Disp: 4 * mr * e})
		}
		VMOVUPS(t[7].AsX(), Mem{Base: dst, Disp: 4 * mr * 7})
		VEXTRACTF128(U8(1), t[7], t[0].AsX())
		VMOVQ(t[0].AsX(), Mem{Base: dst, Disp: 4*mr*7 + 16})
	}, 8*4*mr)
}

// transpose8 emits the body of a packing of rows stored rows (ld floats
// apart) 8 k steps at a time: 8 floats of each row are loaded (with fewer
// than 8 rows, the last is loaded again for the missing ones), transposed
// in registers so that t[e] holds k step e of every row in lane order, and
// stored by store, which advances nothing; dst then moves step bytes on.
// With half the rows hold bfloat16 values, widened as they are loaded
// (VPMOVZXWD, VPSLLD 16: exact), so the rest is the float32 transpose.
func transpose8(rows int, half bool, store func(dst Register, t []VecPhysical), step int) {
	transpose8Of(rows, half, false, false, "kc8", store, step)
}

// transpose8Of is transpose8, or with pairs the same on rows of bfloat16
// pairs (ld in bf16 values; each pair, 4 bytes, moved as one float would
// be, its halves swapped: see dpPack). With prefetch, each step also
// prefetches the same bytes of the rows at the parameter next (ld apart
// as src's): what the product packs next, which then arrives from memory
// while this block is multiplied (gemm's prefetchAt).
func transpose8Of(rows int, half, pairs, prefetch bool, count string, store func(dst Register, t []VecPhysical), step int) {
	dst := Load(Param("dst"), RDI)
	row0 := Load(Param("src"), RSI)
	ld := Load(Param("ld"), R10)
	kc := Load(Param(count), RCX)
	elem := 4 // bytes per stored value
	if half {
		elem = 2
	}
	if pairs {
		SHLQ(U8(1), ld)
	} else {
		SHLQ(U8(elem/2), ld)
	}
	row3, row6 := R9, R11
	LEAQ(Mem{Base: row0, Index: ld, Scale: 2}, row3)
	ADDQ(ld, row3) // row0 + 3·ld
	if rows > 6 {
		LEAQ(Mem{Base: row3, Index: ld, Scale: 2}, row6)
		ADDQ(ld, row6) // row0 + 6·ld
	}
	rowAt := []Mem{
		{Base: row0}, {Base: row0, Index: ld, Scale: 1}, {Base: row0, Index: ld, Scale: 2},
		{Base: row3}, {Base: row3, Index: ld, Scale: 1}, {Base: row3, Index: ld, Scale: 2},
		{Base: row6}, {Base: row6, Index: ld, Scale: 1},
	}
	var next0, next3, next6 Register = R8, R12, R13
	if prefetch {
		Load(Param("next"), next0)
		LEAQ(Mem{Base: next0, Index: ld, Scale: 2}, next3)
		ADDQ(ld, next3)
		LEAQ(Mem{Base: next3, Index: ld, Scale: 2}, next6)
		ADDQ(ld, next6)
	}
	nextAt := []Mem{
		{Base: next0}, {Base: next0, Index: ld, Scale: 1}, {Base: next0, Index: ld, Scale: 2},
		{Base: next3}, {Base: next3, Index: ld, Scale: 1}, {Base: next3, Index: ld, Scale: 2},
		{Base: next6}, {Base: next6, Index: ld, Scale: 1},
	}
	r := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}
	t := []VecPhysical{Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}

	Label("block")
	CMPQ(kc, U8(8))
	JL(LabelRef("done"))
	if prefetch {
		for i := 0; i < rows; i++ {
			PREFETCHT0(nextAt[i])
		}
	}
	for i := 0; i < rows; i++ {
		if half {
			VPMOVZXWD(rowAt[i], r[i])
			VPSLLD(U8(16), r[i], r[i])
		} else {
			VMOVUPS(rowAt[i], r[i])
		}
		if pairs {
			VPROLD(U8(16), r[i], r[i])
		}
	}
	in := func(i int) VecPhysical { return r[min(i, rows-1)] } // a missing row repeats the last
	// Interleave row pairs: t[2i] = (r[2i][0] r[2i+1][0] r[2i][1] r[2i+1][1] | same for 4,5),
	// t[2i+1] the same for elements 2,3 | 6,7.
	for i := 0; i < 4; i++ {
		VUNPCKLPS(in(2*i+1), in(2*i), t[2*i])
		VUNPCKHPS(in(2*i+1), in(2*i), t[2*i+1])
	}
	// Gather 4 rows per element: r[e] for e = 0…3 holds element e (and e+4 in
	// the upper half) of rows 0–3, r[4+e] of rows 4–7.
	for h := 0; h < 2; h++ {
		lo, hi := t[4*h], t[4*h+2]
		lo1, hi1 := t[4*h+1], t[4*h+3]
		VSHUFPS(U8(0x44), hi, lo, r[4*h+0])
		VSHUFPS(U8(0xEE), hi, lo, r[4*h+1])
		VSHUFPS(U8(0x44), hi1, lo1, r[4*h+2])
		VSHUFPS(U8(0xEE), hi1, lo1, r[4*h+3])
	}
	// Join the 128-bit halves: column e of the 8 rows, stored at k step e.
	for e := 0; e < 4; e++ {
		VPERM2F128(U8(0x20), r[4+e], r[e], t[e])
		VPERM2F128(U8(0x31), r[4+e], r[e], t[4+e])
	}
	store(dst, t)
	ADDQ(U32(8*elem), row0)
	ADDQ(U32(8*elem), row3)
	if rows > 6 {
		ADDQ(U32(8*elem), row6)
	}
	if prefetch {
		ADDQ(U32(8*elem), next0)
		ADDQ(U32(8*elem), next3)
		ADDQ(U32(8*elem), next6)
	}
	ADDQ(U32(step), dst)
	SUBQ(U8(8), kc)
	JMP(LabelRef("block"))

	Label("done")
	VZEROUPPER()
	RET()
}

// kernelBody emits the loop and the store of a kernel of tile t with the
// given number of rows (≤ t.maxRows; each row's FMAs are the same whatever the
// number, so a short tile gives the bits of the same rows in a full one).
// aAt(s, i) is the address of A's row i at k step s from the current
// position; advance(n) moves the A position n steps on. With prefetch, each
// k step also prefetches the line of the next B panel (the one kc·nr
// floats on; for a pair, of the next two) at the same place: a decoding
// step multiplies
// its few rows by weights that come from memory, one panel after another,
// and the hardware prefetcher alone left the kernel waiting on them (20%
// faster on weights that do not fit the L3; 5–8% slower on weights that
// do, so the Pf kernels serve only products of few rows, see kernelRows).
func kernelBody(t tile, rows int, prefetch bool, aAt func(s, i int) Mem, advance func(steps int)) {
	kc := Load(Param("kc"), RCX)
	pb := Load(Param("b"), RDI)
	// panel is the bytes from one B panel to the next (kc·nr floats), for
	// a tile of two panels or for the prefetch.
	panel := R11
	bRow := t.bElem() * nr // bytes of one k step of a panel
	if t.panels > 1 || prefetch {
		MOVQ(kc, panel)
		SHLQ(U8(map[int]uint8{32: 5, 64: 6}[bRow]), panel)
	}
	// next holds the offsets of the panels to prefetch from the current
	// ones: the next panel, or for a pair the two after it (2·panel and
	// 3·panel on). A pair's lines go to the L2 only (PREFETCHT2): on the
	// Zen 5 VM a cold 16-row product streamed its weights 20–30% faster
	// than without prefetches, where PREFETCHT0, which holds one of the
	// L1's few outstanding misses per line until it lands, gained 10%.
	var next []Mem
	fetch := PREFETCHT0
	if prefetch {
		next = []Mem{{Base: pb, Index: panel, Scale: 1}}
		if t.panels > 1 {
			fetch = PREFETCHT2
			two, three := R12, R13
			LEAQ(Mem{Base: panel, Index: panel, Scale: 1}, two)
			LEAQ(Mem{Base: two, Index: panel, Scale: 1}, three)
			next = []Mem{{Base: pb, Index: two, Scale: 1}, {Base: pb, Index: three, Scale: 1}}
		}
	}
	// bAt is the address of vector v of B's row at k step s.
	bAt := func(s, v int) Mem {
		if t.panels == 1 {
			return Mem{Base: pb, Disp: bRow*s + t.vecBytes/4*t.bElem()*v}
		}
		m := Mem{Base: pb, Disp: bRow * s}
		if v == 1 {
			m.Index, m.Scale = panel, 1
		}
		return m
	}

	acc := t.acc[:2*rows]
	for _, r := range acc {
		// A VEX-encoded XMM operation zeroes the rest of the register, ZMM
		// included (VXORPS on ZMM itself would need AVX-512DQ); no VEX
		// encoding reaches Z16–Z31.
		switch {
		case t.vecBytes == 32:
			VXORPS(r, r, r)
		case r.PhysicalIndex() < 16:
			x := r.AsX().(VecPhysical)
			VXORPS(x, x, x)
		default:
			VPXORD(r, r, r)
		}
	}

	// step emits one k step at offset s (in k steps) from the current
	// positions.
	step := func(s int) {
		// One prefetch per 64-byte line of each next panel.
		if (bRow*s)%64 == 0 {
			for _, m := range next {
				m.Disp = bRow * s
				fetch(m)
			}
		}
		for v := range t.b {
			if t.half {
				VPMOVZXWD(bAt(s, v), t.b[v])
				VPSLLD(U8(16), t.b[v], t.b[v])
			} else {
				VMOVUPS(bAt(s, v), t.b[v])
			}
		}
		for i := 0; i < rows; i++ {
			bc := t.bc[i%2]
			VBROADCASTSS(aAt(s, i), bc)
			VFMADD231PS(t.b[0], bc, acc[2*i])
			VFMADD231PS(t.b[1], bc, acc[2*i+1])
		}
	}

	Comment("Main loop: unroll k steps at a time.")
	Label("loop4")
	CMPQ(kc, U8(unroll))
	JL(LabelRef("tail"))
	for s := 0; s < unroll; s++ {
		step(s)
	}
	advance(unroll)
	ADDQ(U32(bRow*unroll), pb)
	SUBQ(U8(unroll), kc)
	JMP(LabelRef("loop4"))

	Comment("Remaining k steps one at a time.")
	Label("tail")
	TESTQ(kc, kc)
	JE(LabelRef("store"))
	step(0)
	advance(1)
	ADDQ(U32(bRow), pb)
	DECQ(kc)
	JMP(LabelRef("tail"))

	Label("store")
	storeTile(t, acc, rows)
}

// storeTile emits a kernel's end: C = alpha·acc + beta·C for the tile's
// rows (acc: two vectors per row), C not read when beta == 0.
func storeTile(t tile, acc []VecPhysical, rows int) {
	pc := Load(Param("c"), RDX)
	ldc := Load(Param("ldc"), R8)
	SHLQ(U8(2), ldc) // bytes per row of C
	// The float arguments are broadcast straight from memory: a legacy-SSE
	// MOVSS (what Load emits) into a register whose upper half is dirty
	// costs hundreds of cycles per call, more than a short kc loop.
	VBROADCASTSS(addr("alpha"), t.bc[0])
	for _, r := range acc {
		VMULPS(t.bc[0], r, r)
	}
	VBROADCASTSS(addr("beta"), t.bc[1])
	zero, beta := t.b[0].AsX(), t.bc[1].AsX()
	VXORPS(zero, zero, zero)
	VUCOMISS(zero, beta)
	JNE(LabelRef("withbeta"))
	JP(LabelRef("withbeta")) // NaN beta is not zero: keep IEEE semantics

	Comment("beta == 0: overwrite C without reading it.")
	row := RAX
	MOVQ(pc, row)
	for i := 0; i < rows; i++ {
		VMOVUPS(acc[2*i], Mem{Base: row})
		VMOVUPS(acc[2*i+1], Mem{Base: row, Disp: t.vecBytes})
		if i < rows-1 {
			ADDQ(ldc, row)
		}
	}
	VZEROUPPER()
	RET()

	Label("withbeta")
	Comment("C = alpha·acc + beta·C.")
	MOVQ(pc, row)
	for i := 0; i < rows; i++ {
		VFMADD231PS(Mem{Base: row}, t.bc[1], acc[2*i])
		VFMADD231PS(Mem{Base: row, Disp: t.vecBytes}, t.bc[1], acc[2*i+1])
		VMOVUPS(acc[2*i], Mem{Base: row})
		VMOVUPS(acc[2*i+1], Mem{Base: row, Disp: t.vecBytes})
		if i < rows-1 {
			ADDQ(ldc, row)
		}
	}
	VZEROUPPER()
	RET()
}

// addr is the stack address of a scalar argument.
func addr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// rowPack emits packRow, one k step of packing a B that is not transposed:
// the stored row's consecutive nr-wide pieces go to consecutive panels.
func rowPack() {
	TEXT("packRow", NOSPLIT, "func(dst, src *float32, panels, stride int)")
	Doc(
		"packRow copies src[16q : 16q+16] to dst[q·stride : q·stride+16] for q < panels",
		"(stride in elements): one row of B into its place in each packed panel.",
		"Requires AVX.",
	)
	dst := Load(Param("dst"), RDI)
	src := Load(Param("src"), RSI)
	n := Load(Param("panels"), RCX)
	stride := Load(Param("stride"), RDX)
	SHLQ(U8(2), stride)
	Label("panel")
	TESTQ(n, n)
	JE(LabelRef("done"))
	VMOVUPS(Mem{Base: src}, Y0)
	VMOVUPS(Mem{Base: src, Disp: 32}, Y1)
	VMOVUPS(Y0, Mem{Base: dst})
	VMOVUPS(Y1, Mem{Base: dst, Disp: 32})
	ADDQ(U8(64), src)
	ADDQ(stride, dst)
	DECQ(n)
	JMP(LabelRef("panel"))
	Label("done")
	VZEROUPPER()
	RET()
}

// widenKernels emits packRowBF16, packRow on a bfloat16 row: VPMOVZXWD
// zero-extends each value to 32 bits, VPSLLD 16 moves it to the top half —
// the float32 with the same value, exactly. With a stride of 16 it widens a
// run of values in place (widenAsm). SgemmBF16 widens its A and packs its B
// with it; as Go loops they cost a bf16 product 10–30% of the float32 one.
func widenKernels() {
	TEXT("packRowBF16", NOSPLIT, "func(dst *float32, src *uint16, panels, stride int)")
	Doc(
		"packRowBF16 is packRow on a bfloat16 row: src[16q : 16q+16] widened to float32 into",
		"dst[q·stride : q·stride+16] for q < panels (stride in elements).",
		"Requires AVX2.",
	)
	dst := Load(Param("dst"), RDI)
	src := Load(Param("src"), RSI)
	n := Load(Param("panels"), RCX)
	stride := Load(Param("stride"), RDX)
	SHLQ(U8(2), stride)
	Label("panel16")
	TESTQ(n, n)
	JE(LabelRef("packed16"))
	VPMOVZXWD(Mem{Base: src}, Y0)
	VPMOVZXWD(Mem{Base: src, Disp: 16}, Y1)
	VPSLLD(U8(16), Y0, Y0)
	VPSLLD(U8(16), Y1, Y1)
	VMOVUPS(Y0, Mem{Base: dst})
	VMOVUPS(Y1, Mem{Base: dst, Disp: 32})
	ADDQ(U8(32), src)
	ADDQ(stride, dst)
	DECQ(n)
	JMP(LabelRef("panel16"))
	Label("packed16")
	VZEROUPPER()
	RET()
}

// colPack emits packCols6, the packing of one full panel of a transposed A
// (op(A)[i][p] = a[p·lda + i]): 6 consecutive floats of each of kc stored
// rows. The Go loop it replaces spent 10% of a training step here, when
// the weight gradients dW = dYᵀ·X and attention's dK, dV packed their A;
// since the Cols kernels it packs only a transposed A whose rows crowd the
// L2 (lda a multiple of 1024).
func colPack() {
	TEXT("packCols6", NOSPLIT, "func(dst, src *float32, lda, kc int)")
	Doc(
		"packCols6 sets dst[6p + i] = src[p·lda + i] for i < 6 and p < kc (lda in elements).",
		"Requires AVX.",
	)
	dst := Load(Param("dst"), RDI)
	src := Load(Param("src"), RSI)
	lda := Load(Param("lda"), RDX)
	n := Load(Param("kc"), RCX)
	SHLQ(U8(2), lda)
	Label("step")
	TESTQ(n, n)
	JE(LabelRef("end"))
	VMOVUPS(Mem{Base: src}, X0)
	VMOVQ(Mem{Base: src, Disp: 16}, X1)
	VMOVUPS(X0, Mem{Base: dst})
	VMOVQ(X1, Mem{Base: dst, Disp: 16})
	ADDQ(lda, src)
	ADDQ(U8(24), dst)
	DECQ(n)
	JMP(LabelRef("step"))
	Label("end")
	RET()
}

// dotKernel emits dot4, four dot products of one row of A with four rows
// of B, both read in place: C = A·Bᵀ for the few rows of a decoding step,
// where packing B would cost more than the arithmetic. With half it emits
// dot4BF16, the same on rows of B stored as bfloat16, each value widened
// in a register (exact): the same FMAs on the same values, so the bits of
// dot4 on the widened rows.
func dotKernel(half bool) {
	if half {
		TEXT("dot4BF16", NOSPLIT, "func(k16 int, a *float32, b *uint16, ldb int, out *float32)")
		Doc(
			"dot4BF16 is dot4 with the rows of B in bfloat16, widened to float32 in registers",
			"(ldb in elements).",
			"Requires AVX2 and FMA.",
		)
	} else {
		TEXT("dot4", NOSPLIT, "func(k16 int, a, b *float32, ldb int, out *float32)")
		Doc(
			"dot4 sets out[r] = Σ_{p<k16} a[p]·b[r·ldb + p] for r < 4 (k16 a multiple of 16,",
			"ldb in elements), summing 16 interleaved partial sums per row, then those in a fixed tree.",
			"Requires AVX2 and FMA.",
		)
	}
	// out is a caller's stack array: without this the compiler moves it
	// to the heap, an allocation per call in the decoding loop.
	Pragma("noescape")
	elem := 4
	if half {
		elem = 2
	}
	k := Load(Param("k16"), RCX)
	pa := Load(Param("a"), RSI)
	row0 := Load(Param("b"), RDI)
	ld := Load(Param("ldb"), R10)
	SHLQ(U8(map[int]uint8{4: 2, 2: 1}[elem]), ld)
	row3 := R9
	LEAQ(Mem{Base: row0, Index: ld, Scale: 2}, row3)
	ADDQ(ld, row3)
	rows := []Mem{{Base: row0}, {Base: row0, Index: ld, Scale: 1}, {Base: row0, Index: ld, Scale: 2}, {Base: row3}}
	acc := [4][2]VecPhysical{{Y0, Y1}, {Y2, Y3}, {Y4, Y5}, {Y6, Y7}}
	for _, r := range acc {
		VXORPS(r[0], r[0], r[0])
		VXORPS(r[1], r[1], r[1])
	}
	Label("loop")
	TESTQ(k, k)
	JE(LabelRef("reduce"))
	VMOVUPS(Mem{Base: pa}, Y8)
	VMOVUPS(Mem{Base: pa, Disp: 32}, Y9)
	wide := []VecPhysical{Y10, Y11, Y12, Y13}
	for r, m := range rows {
		if !half {
			VFMADD231PS(m, Y8, acc[r][0])
			m.Disp = 32
			VFMADD231PS(m, Y9, acc[r][1])
			continue
		}
		w0, w1 := wide[(2*r)%4], wide[(2*r+1)%4]
		VPMOVZXWD(m, w0)
		m.Disp = 16
		VPMOVZXWD(m, w1)
		VPSLLD(U8(16), w0, w0)
		VPSLLD(U8(16), w1, w1)
		VFMADD231PS(w0, Y8, acc[r][0])
		VFMADD231PS(w1, Y9, acc[r][1])
	}
	ADDQ(U8(64), pa)
	ADDQ(U8(16*elem), row0)
	ADDQ(U8(16*elem), row3)
	SUBQ(U8(16), k)
	JMP(LabelRef("loop"))

	Label("reduce")
	for _, r := range acc {
		VADDPS(r[1], r[0], r[0])
	}
	// Y0 = (s0+s0' pairs…, s1 pairs…): horizontal adds in a fixed tree.
	VHADDPS(Y2, Y0, Y0) // rows 0,1 pairwise
	VHADDPS(Y6, Y4, Y4) // rows 2,3 pairwise
	VHADDPS(Y4, Y0, Y0) // lanes: r0 r1 r2 r3 | r0 r1 r2 r3 (low, high halves)
	VEXTRACTF128(U8(1), Y0, X1)
	VADDPS(X1, X0, X0)
	out := Load(Param("out"), RAX)
	VMOVUPS(X0, Mem{Base: out})
	VZEROUPPER()
	RET()
}

// dot8Kernel emits dot8, dot products of one row of A with groups of eight
// rows of B read in place: a decoding step's q·kᵀ over the cached keys, or
// p·v over the channels of the transposed values. One accumulator per row
// (eight independent FMA chains), reduced together by one tree of
// horizontal adds, so short rows (a head dimension of 32) pay one reduction
// per eight outputs; the loop over groups runs here, so a call covers a
// whole cache. Each step also prefetches four lines of what follows the
// group's first row by 8·ldb, which is the next group when the rows are
// contiguous (a cache's keys): caches stream from memory, in blocks too
// short for the hardware prefetcher to get ahead.
func dot8Kernel() {
	TEXT("dot8", NOSPLIT, "func(n8, k8 int, a, b *float32, ldb int, out *float32)")
	Doc(
		"dot8 sets out[r] = Σ_{p<k8} a[p]·b[r·ldb + p] for r < 8·n8 (k8 a multiple of 8,",
		"ldb in elements), summing 8 interleaved partial sums per row, then those in a fixed tree.",
		"Requires AVX2 and FMA.",
	)
	Pragma("noescape")
	groups := Load(Param("n8"), RDX)
	k8 := Load(Param("k8"), R8)
	a0 := Load(Param("a"), R12)
	row0 := Load(Param("b"), RDI)
	ld := Load(Param("ldb"), R10)
	out := Load(Param("out"), RAX)
	SHLQ(U8(2), ld)
	k, pa, base, row3, row5, pf := RCX, RSI, RBX, R9, R11, R13
	rows := []Mem{
		{Base: row0}, {Base: row0, Index: ld, Scale: 1}, {Base: row0, Index: ld, Scale: 2},
		{Base: row3}, {Base: row3, Index: ld, Scale: 1},
		{Base: row5}, {Base: row5, Index: ld, Scale: 1}, {Base: row5, Index: ld, Scale: 2},
	}
	acc := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}

	Label("group8")
	TESTQ(groups, groups)
	JE(LabelRef("done8"))
	MOVQ(a0, pa)
	MOVQ(k8, k)
	MOVQ(row0, base)
	LEAQ(Mem{Base: row0, Index: ld, Scale: 2}, row3)
	ADDQ(ld, row3) // row3 = row0 + 3·ldb
	LEAQ(Mem{Base: row3, Index: ld, Scale: 2}, row5)
	LEAQ(Mem{Base: row0, Index: ld, Scale: 8}, pf)
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	Label("loop8")
	TESTQ(k, k)
	JE(LabelRef("reduce8"))
	VMOVUPS(Mem{Base: pa}, Y8)
	for r, m := range rows {
		VFMADD231PS(m, Y8, acc[r])
	}
	for l := 0; l < 4; l++ {
		PREFETCHT0(Mem{Base: pf, Disp: 64 * l})
	}
	ADDQ(U32(256), pf)
	ADDQ(U8(32), pa)
	ADDQ(U8(32), row0)
	ADDQ(U8(32), row3)
	ADDQ(U8(32), row5)
	SUBQ(U8(8), k)
	JMP(LabelRef("loop8"))

	Label("reduce8")
	VHADDPS(Y1, Y0, Y0)              // rows 0,1 pairwise
	VHADDPS(Y3, Y2, Y2)              // rows 2,3
	VHADDPS(Y5, Y4, Y4)              // rows 4,5
	VHADDPS(Y7, Y6, Y6)              // rows 6,7
	VHADDPS(Y2, Y0, Y0)              // r0 r1 r2 r3 | r0 r1 r2 r3 (low, high halves)
	VHADDPS(Y6, Y4, Y4)              // r4 r5 r6 r7 | r4 r5 r6 r7
	VPERM2F128(U8(0x20), Y4, Y0, Y1) // low halves: r0 … r7
	VPERM2F128(U8(0x31), Y4, Y0, Y2) // high halves: r0 … r7
	VADDPS(Y2, Y1, Y1)
	VMOVUPS(Y1, Mem{Base: out})
	ADDQ(U8(32), out)
	LEAQ(Mem{Base: base, Index: ld, Scale: 8}, row0) // the next group's first row
	DECQ(groups)
	JMP(LabelRef("group8"))

	Label("done8")
	VZEROUPPER()
	RET()
}

// combineKernels emits comb64 and comb32, one row of A times a matrix B
// read in place, for 64 or 32 columns of B: a decoding step's p·v over the
// cached values (W rows of a head's hd channels, stored one position after
// another). The output columns stay in registers over all of k, so B is
// read once, row by row, as one contiguous stream when ldb is the width.
// comb64 has one accumulator per 8 columns (eight independent FMA chains,
// enough for Zen 3's two 4-cycle FMA pipes); comb32 keeps eight chains by
// summing even and odd k steps apart and adding the two at the end. Each
// iteration prefetches the 256 bytes 8·ldb on, the rows eight steps ahead
// when they are contiguous, as in dot8.
func combineKernels() {
	TEXT("comb64", NOSPLIT, "func(k int, w, b *float32, ldb int, out *float32)")
	Doc(
		"comb64 sets out[c] = Σ_{p<k} w[p]·b[p·ldb + c] for c < 64 (ldb in elements), summed in",
		"order of p.",
		"Requires AVX2 and FMA.",
	)
	Pragma("noescape")
	k := Load(Param("k"), RCX)
	pw := Load(Param("w"), RSI)
	pb := Load(Param("b"), RDI)
	ld := Load(Param("ldb"), R10)
	SHLQ(U8(2), ld)
	acc := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	Label("loop64")
	TESTQ(k, k)
	JE(LabelRef("store64"))
	VBROADCASTSS(Mem{Base: pw}, Y8)
	for i, r := range acc {
		VFMADD231PS(Mem{Base: pb, Disp: 32 * i}, Y8, r)
	}
	for l := 0; l < 4; l++ {
		PREFETCHT0(Mem{Base: pb, Index: ld, Scale: 8, Disp: 64 * l})
	}
	ADDQ(U8(4), pw)
	ADDQ(ld, pb)
	DECQ(k)
	JMP(LabelRef("loop64"))
	Label("store64")
	out := Load(Param("out"), RAX)
	for i, r := range acc {
		VMOVUPS(r, Mem{Base: out, Disp: 32 * i})
	}
	VZEROUPPER()
	RET()

	TEXT("comb32", NOSPLIT, "func(k int, w, b *float32, ldb int, out *float32)")
	Doc(
		"comb32 sets out[c] = Σ_{p<k} w[p]·b[p·ldb + c] for c < 32 (ldb in elements): the sum",
		"over even p plus the sum over odd p, each in order of p.",
		"Requires AVX2 and FMA.",
	)
	Pragma("noescape")
	k = Load(Param("k"), RCX)
	pw = Load(Param("w"), RSI)
	pb = Load(Param("b"), RDI)
	ld = Load(Param("ldb"), R10)
	SHLQ(U8(2), ld)
	even, odd := acc[:4], acc[4:]
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	Label("loop32")
	CMPQ(k, U8(2))
	JL(LabelRef("tail32"))
	VBROADCASTSS(Mem{Base: pw}, Y8)
	VBROADCASTSS(Mem{Base: pw, Disp: 4}, Y9)
	for i, r := range even {
		VFMADD231PS(Mem{Base: pb, Disp: 32 * i}, Y8, r)
	}
	for i, r := range odd {
		VFMADD231PS(Mem{Base: pb, Index: ld, Scale: 1, Disp: 32 * i}, Y9, r)
	}
	for l := 0; l < 4; l++ {
		PREFETCHT0(Mem{Base: pb, Index: ld, Scale: 8, Disp: 64 * l})
	}
	ADDQ(U8(8), pw)
	LEAQ(Mem{Base: pb, Index: ld, Scale: 2}, pb)
	SUBQ(U8(2), k)
	JMP(LabelRef("loop32"))
	Label("tail32")
	TESTQ(k, k)
	JE(LabelRef("store32"))
	VBROADCASTSS(Mem{Base: pw}, Y8)
	for i, r := range even {
		VFMADD231PS(Mem{Base: pb, Disp: 32 * i}, Y8, r)
	}
	Label("store32")
	out = Load(Param("out"), RAX)
	for i := range even {
		VADDPS(odd[i], even[i], even[i])
		VMOVUPS(even[i], Mem{Base: out, Disp: 32 * i})
	}
	VZEROUPPER()
	RET()
}

// dpKernels emits kernelDPRows1 … kernelDPRows12 (the 6-row one is
// kernelDPRows): the 12×32 tile (and the 1–11 rows at the bottom) of a
// product of bfloat16 A and B
// with AVX-512 BF16's VDPBF16PS, which multiplies pairs of bf16 values and
// adds the two products to a float32 accumulator, each with its own
// rounding, the high halves of the pair first (the Intel SDM's order;
// verified on the machines we run). Fed pairs whose high half is the
// earlier k step (A swapped as it is copied, B packed so: see dp.go), it
// computes each element's chain of FMAs over k in order, that is the bits
// of the float32 kernels on the widened values, at 32 products an
// instruction instead of 16 and with no widening.
//
// A is read in place, row i of the tile at a + i·lda (lda in bf16 values),
// k pair s at byte offset 4s; B is one 32-column DP panel, kp pair steps of
// 32 dwords (column j's pair at dword j). The tile's two accumulators per
// row are columns 0–15 and 16–31: Z0–Z11 for rows 0–5, Z16–Z27 for rows
// 6–11 (AVX-512's upper registers), B in Z12–Z13, A's pairs broadcast into
// Z14–Z15. Twelve rows read each pair step of B once for 24 instructions,
// where six read it twice: a decoding step's 16 rows stream its weights
// from memory once at full rate and once from L1, not once and twice.
// The store is storeTile's. The Pf kernels (kernelDPRowsPf1 …) also
// prefetch the next DP panel (kp·128 bytes on), two lines a pair step, as
// the float32 Pf kernels do (see kernelBody): for products of few rows,
// whose weights stream from memory once.
func dpKernels() {
	acc := avx512.acc // Z0–Z11, then Z16–Z27
	t := tile{name: "kernelDP", acc: acc, b: avx512.b, bc: avx512.bc, vecBytes: 64, panels: 2, isa: "AVX-512F and AVX512_BF16"}
	for _, prefetch := range []bool{false, true} {
		for h := mrDP; h >= 1; h-- {
			dpKernel(t, h, prefetch)
		}
	}
}

// dpKernel emits the DP kernel of h rows (see dpKernels), with the next
// panel's prefetches if prefetch.
func dpKernel(t tile, h int, prefetch bool) {
	{
		name := fmt.Sprintf("kernelDPRows%d", h)
		doc := []string{fmt.Sprintf("%s is kernelDPRows for a tile of %d rows (%d rows of A and of C).", name, h, h)}
		if h == mr {
			name = "kernelDPRows"
			doc = []string{
				"kernelDPRows computes the 6×32 tile C = alpha·A·B + beta·C over kp pair steps of",
				"bfloat16 A (in place, pairs swapped) and one DP panel of B (see dpKernels).",
			}
		}
		if prefetch {
			doc = []string{fmt.Sprintf("kernelDPRowsPf%d is %s that also prefetches the next DP panel (kp·128 bytes on).", h, name)}
			name = fmt.Sprintf("kernelDPRowsPf%d", h)
		}
		TEXT(name, NOSPLIT, "func(kp int, a *uint16, lda int, b *uint16, c *float32, ldc int, alpha, beta float32)")
		Doc(append(doc, "Requires "+t.isa+".")...)
		row0 := Load(Param("a"), RSI)
		lda := Load(Param("lda"), R10)
		SHLQ(U8(1), lda) // bytes per row of A
		// Row bases: rows 0, 3, 6 and 9; the rows between by lda·1, lda·2.
		bases := []Register{row0, R9, R11, R12}[:(h+2)/3]
		for i := 1; i < len(bases); i++ {
			LEAQ(Mem{Base: bases[i-1], Index: lda, Scale: 2}, bases[i])
			ADDQ(lda, bases[i]) // row 3i = row 3(i−1) + 3·lda
		}
		aAt := func(s, i int) Mem {
			m := Mem{Base: bases[i/3], Disp: 4 * s}
			if i%3 > 0 {
				m.Index, m.Scale = lda, uint8(i%3)
			}
			return m
		}
		kp := Load(Param("kp"), RCX)
		pb := Load(Param("b"), RDI)
		const bRow = 128 // bytes of one pair step of a panel: 32 dwords
		panel := R13     // bytes from one panel to the next, for the prefetch
		if prefetch {
			MOVQ(kp, panel)
			SHLQ(U8(7), panel)
		}
		acc := t.acc[:2*h]
		for _, r := range acc {
			if r.PhysicalIndex() < 16 {
				x := r.AsX().(VecPhysical)
				VXORPS(x, x, x)
			} else {
				VPXORD(r, r, r) // no VEX encoding reaches Z16–Z31
			}
		}
		step := func(s int) {
			if prefetch {
				PREFETCHT0(Mem{Base: pb, Index: panel, Scale: 1, Disp: bRow * s})
				PREFETCHT0(Mem{Base: pb, Index: panel, Scale: 1, Disp: bRow*s + 64})
			}
			VMOVUPS(Mem{Base: pb, Disp: bRow * s}, t.b[0])
			VMOVUPS(Mem{Base: pb, Disp: bRow*s + 64}, t.b[1])
			for i := 0; i < h; i++ {
				bc := t.bc[i%2]
				VPBROADCASTD(aAt(s, i), bc)
				vdpbf16ps(acc[2*i], bc, t.b[0])
				vdpbf16ps(acc[2*i+1], bc, t.b[1])
			}
		}
		Comment("Main loop: unroll pair steps at a time.")
		Label("loop4")
		CMPQ(kp, U8(unroll))
		JL(LabelRef("tail"))
		for s := 0; s < unroll; s++ {
			step(s)
		}
		for _, r := range bases {
			ADDQ(U32(4*unroll), r)
		}
		ADDQ(U32(bRow*unroll), pb)
		SUBQ(U8(unroll), kp)
		JMP(LabelRef("loop4"))

		Comment("Remaining pair steps one at a time.")
		Label("tail")
		TESTQ(kp, kp)
		JE(LabelRef("store"))
		step(0)
		for _, r := range bases {
			ADDQ(U8(4), r)
		}
		ADDQ(U32(bRow), pb)
		DECQ(kp)
		JMP(LabelRef("tail"))

		Label("store")
		storeTile(t, acc, h)
	}
}

// vdpbf16ps emits VDPBF16PS dst, src2, src3 on ZMM registers (dst +=
// src2·src3 by pairs, see dpKernels), which the Go assembler does not
// know, as its bytes: EVEX.512.F3.0F38.W0 52 /r.
func vdpbf16ps(dst, src2, src3 VecPhysical) {
	d, v, r := int(dst.PhysicalIndex()), int(src2.PhysicalIndex()), int(src3.PhysicalIndex())
	inv := func(x, bit int) byte { return byte(^(x >> bit) & 1) }
	code := []byte{
		0x62,
		inv(d, 3)<<7 | inv(r, 4)<<6 | inv(r, 3)<<5 | inv(d, 4)<<4 | 0x2, // R X B R' 0 0 mm=0F38
		byte(^v&0xf)<<3 | 1<<2 | 0x2,                                    // W=0 vvvv 1 pp=F3
		0x40 | inv(v, 4)<<3,                                             // z=0 L'L=512 b=0 V' aaa=0
		0x52,
		0xc0 | byte(d&7)<<3 | byte(r&7), // ModRM: register operands
	}
	Comment(fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", r, v, d))
	for _, c := range code {
		Instruction(&ir.Instruction{Opcode: "BYTE", Operands: []Op{U8(c)}})
	}
}

// dpPack emits the packers of DP panels (see dpKernels): packTrans8DP for
// a transposed B (x·Wᵀ: W's rows are the panel's columns, read along k)
// through transpose8's 8×8 transposes of pairs, and packPairsDP for a B
// that is not transposed, interleaving two stored rows (the pair's two k
// steps) a full panel at a time. Both swap each pair's halves, the earlier
// k step going high.
func dpPack() {
	TEXT("packTrans8DP", NOSPLIT, "func(dst, src *uint16, ld, kp8 int)")
	Doc(
		"packTrans8DP sets dword 32s + r of dst to the pair (src[r·ld + 2s], src[r·ld + 2s + 1]),",
		"halves swapped, for r < 8 and s < kp8, a multiple of 8 (ld in bf16 values): 8 rows",
		"of a transposed bf16 B into 8 columns of a DP panel.",
		"Requires AVX-512F (VL).",
	)
	storeDP := func(dst Register, t []VecPhysical) {
		for e := 0; e < 8; e++ {
			VMOVUPS(t[e], Mem{Base: dst, Disp: 4 * dpCols * e})
		}
	}
	transpose8Of(8, false, true, false, "kp8", storeDP, 8*4*dpCols)

	TEXT("packTrans8DPPf", NOSPLIT, "func(dst, src *uint16, ld, kp8 int, next *uint16)")
	Doc(
		"packTrans8DPPf is packTrans8DP prefetching the same pairs of the 8 rows at next",
		"(ld apart): a product of few rows packs each panel as it multiplies, and what it",
		"packs next (the same rows' next k block, or the next panel's) then comes from memory",
		"while this block is multiplied.",
		"Requires AVX-512F (VL).",
	)
	transpose8Of(8, false, true, true, "kp8", storeDP, 8*4*dpCols)

	TEXT("packPairsDP", NOSPLIT, "func(dst, src *uint16, ld, kp int)")
	Doc(
		"packPairsDP sets dword 32s + j of dst to (src[(2s+1)·ld + j], src[2s·ld + j]) (the low half",
		"first) for j < 32 and s < kp (ld in bf16 values): a full DP panel of a bf16 B that is",
		"not transposed, row 2s of the block being k step 2s.",
		"Requires AVX2.",
	)
	dst := Load(Param("dst"), RDI)
	even := Load(Param("src"), RSI)
	ld := Load(Param("ld"), R10)
	kp := Load(Param("kp"), RCX)
	SHLQ(U8(1), ld) // bytes per row
	odd := R9
	LEAQ(Mem{Base: even, Index: ld, Scale: 1}, odd)
	Label("pair")
	TESTQ(kp, kp)
	JE(LabelRef("paired"))
	for h := 0; h < 2; h++ { // columns 16h … 16h+15
		hi, lo := Y0, Y1
		VMOVDQU(Mem{Base: even, Disp: 32 * h}, hi)
		VMOVDQU(Mem{Base: odd, Disp: 32 * h}, lo)
		// Within each 128-bit lane: columns 0–3 (4–7) of the lane as
		// (lo, hi) word pairs; then the lanes joined in column order.
		VPUNPCKLWD(hi, lo, Y2)
		VPUNPCKHWD(hi, lo, Y3)
		VPERM2I128(U8(0x20), Y3, Y2, Y4)
		VPERM2I128(U8(0x31), Y3, Y2, Y5)
		VMOVDQU(Y4, Mem{Base: dst, Disp: 64 * h})
		VMOVDQU(Y5, Mem{Base: dst, Disp: 64*h + 32})
	}
	LEAQ(Mem{Base: even, Index: ld, Scale: 2}, even)
	LEAQ(Mem{Base: odd, Index: ld, Scale: 2}, odd)
	ADDQ(U32(4*dpCols), dst)
	DECQ(kp)
	JMP(LabelRef("pair"))
	Label("paired")
	VZEROUPPER()
	RET()
}

// dpSwap emits swapPairs, the copy of a row of bf16 A with each pair's
// halves swapped (swapA), 32 values a step.
func dpSwap() {
	TEXT("swapPairs", NOSPLIT, "func(dst, src *uint16, n32 int)")
	Doc(
		"swapPairs sets dst[2i], dst[2i+1] = src[2i+1], src[2i] for i < 16·n32.",
		"Requires AVX-512F.",
	)
	dst := Load(Param("dst"), RDI)
	src := Load(Param("src"), RSI)
	n := Load(Param("n32"), RCX)
	Label("swap")
	TESTQ(n, n)
	JE(LabelRef("swapped"))
	VMOVDQU32(Mem{Base: src}, Z0)
	VPROLD(U8(16), Z0, Z0)
	VMOVDQU32(Z0, Mem{Base: dst})
	ADDQ(U8(64), src)
	ADDQ(U8(64), dst)
	DECQ(n)
	JMP(LabelRef("swap"))
	Label("swapped")
	VZEROUPPER()
	RET()
}
