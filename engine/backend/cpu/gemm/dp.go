package gemm

import "github.com/ragen-go/ragen/engine/parallel"

// Products of two bfloat16 operands with AVX-512 BF16 (decision 53).
//
// VDPBF16PS adds to each float32 lane the products of a pair of bf16
// values: acc += hi(a)·hi(b), then acc += lo(a)·lo(b), each rounded to
// float32 as an FMA rounds (a product of two bf16 values is exact in
// float32). Fed pairs whose high half is the earlier k step, it is the
// float32 kernels' chain of FMAs over k in order, two steps an instruction
// and with nothing to widen: the bits of SgemmBF16's other path, which
// widens the operands and runs the float32 kernels (TestDPMatchesWidened).
// The one difference is the instruction's fixed flushing of subnormals
// (inputs treated as zero, results below 2⁻¹²⁶ in magnitude written as
// zero), which the float32 kernels do not do: a product or partial sum
// that small never arises in a model's products at BF16, whose values
// are activations, weights and gradients many orders of magnitude larger.
//
// The layout: op(B) is packed in DP panels of dpCols columns — per k pair
// step, dpCols dwords, column j's pair at dword j, the earlier k step in
// the high half — and each kc block of A is copied with the two halves of
// every pair swapped (swapA), its rows read in place by the kernels. An
// odd kc ends with a pair whose second step is zero in both operands: the
// chain then adds a zero product, which leaves any partial sum but −0
// unchanged, and a chain started from +0 never holds −0.

const (
	dpCols = 2 * nr // columns of a DP panel: the 12×32 tile's
	// mrDP is the rows of the VDPBF16PS tile: twice mr, in AVX-512's 32
	// registers (24 sums), so that each pair step of a B panel is read once
	// for 12 rows (see dpKernels in internal/asmgen).
	mrDP    = 2 * mr
	ncMaxDP = 4064 // ncMax rounded down to whole DP panels
	// swapMax caps (in bf16 values, 64 MiB) the A that swapAll swaps
	// whole: a training pass's 5,000–10,000 rows of 896 (the LM head's
	// input) fit, a larger A is swapped block by block.
	swapMax = 1 << 25
)

// useDP selects the VDPBF16PS kernels for SgemmBF16 (with useAsm and
// useWide); tests switch it off to compare with the widening path.
var useDP = hasBF16

// dp reports whether the product goes through tileDP: a bf16 A read in
// place (not transposed) by bf16 B, with beta 0 or 1, whose merges into C
// round the same in whole and edge tiles (see microTile).
func (g *problem) dp() bool {
	return useAsm && useWide && useDP && g.a16 != nil && g.b16 != nil && !g.transA && (g.beta == 0 || g.beta == 1)
}

// dpPanelsLen is the bf16 values of the DP panels of a kc×nc block.
func dpPanelsLen(kc, nc int) int { return roundUp(nc, dpCols) * 2 * ((kc + 1) / 2) }

// prepackDP packs all of op(B) into DP panels in ws.dp: the k block at pc
// starts at (pc/kb)·dpPanelsLen(kb, n).
func (g *problem) prepackDP(ws *workspace) {
	kb := kBlock(g.k)
	ws.dp = grow16(ws.dp, dpPanelsLen(kb, g.n)*((g.k+kb-1)/kb))
	dst := ws.dp
	panels := roundUp(g.n, dpCols) / dpCols
	grain := panels
	if dpPanelsLen(g.k, g.n) >= 2*prepackChunk {
		grain = max(1, prepackChunk/(dpCols*g.k))
	}
	parallel.For(panels, grain, func(_, lo, hi int) {
		j0, j1 := lo*dpCols, min(hi*dpCols, g.n)
		for pc := 0; pc < g.k; pc += kb {
			kc := min(kb, g.k-pc)
			off := pc/kb*dpPanelsLen(kb, g.n) + j0*2*((kc+1)/2)
			packDP(dst[off:], g.b16, g.ldb, g.transB, pc, kc, j0, j1-j0, 0)
		}
	})
	g.bDP = dst
}

// panelsDP returns the DP panels of the kc×nc block of op(B) at (pc, j0):
// a slice of bDP (j0 then a multiple of dpCols), or packed now into ws.
func (g *problem) panelsDP(ws *workspace, pc, kc, j0, nc int, prefetch bool) []uint16 {
	n := dpPanelsLen(kc, nc)
	if g.bDP != nil {
		kb := kBlock(g.k)
		off := pc/kb*dpPanelsLen(kb, g.n) + j0*2*((kc+1)/2)
		return g.bDP[off : off+n]
	}
	ws.dpB = grow16(ws.dpB, n)
	k := 0
	if prefetch {
		k = g.k
	}
	packDP(ws.dpB, g.b16, g.ldb, g.transB, pc, kc, j0, nc, k)
	return ws.dpB
}

// packDP writes the kc×nc block of op(B) at (p0, j0) (B stored in bf16,
// op(B)[p][j] = b[p·ldb+j], or b[j·ldb+p] when transB) as DP panels into
// dst: panel q holds columns j0+32q …, (kc+1)/2 pair steps of 32 dwords;
// columns past nc and the second step of an odd kc's last pair are zero.
// With k > 0, B's depth, the packing of a transposed B's panel
// prefetches what the product packs next (prefetchAt, packTransDP).
func packDP(dst, b []uint16, ldb int, transB bool, p0, kc, j0, nc, k int) {
	kp := (kc + 1) / 2
	for q := 0; q*dpCols < nc; q++ {
		pan := dst[q*2*dpCols*kp : (q+1)*2*dpCols*kp]
		w := min(dpCols, nc-q*dpCols)
		if transB {
			// Column j is stored row j: read it along k, eight rows at a
			// time through packTrans8DP's transposes.
			next := -1
			if k > 0 {
				next = prefetchAt(j0+q*dpCols, nc, p0, kc, k, ldb)
			}
			done := 0 // columns whose first kp8 pairs are packed
			kp8 := packTransDP(pan, b, (j0+q*dpCols)*ldb+p0, ldb, kc, w, next)
			if kp8 > 0 {
				done = w / 8 * 8
			}
			for c := 0; c < dpCols; c++ {
				if c >= w {
					for s := 0; s < kp; s++ {
						pan[2*(s*dpCols+c)], pan[2*(s*dpCols+c)+1] = 0, 0
					}
					continue
				}
				row := b[(j0+q*dpCols+c)*ldb+p0 : (j0+q*dpCols+c)*ldb+p0+kc]
				from := 0
				if c < done {
					from = kp8
				}
				for s := from; s < kc/2; s++ {
					pan[2*(s*dpCols+c)], pan[2*(s*dpCols+c)+1] = row[2*s+1], row[2*s]
				}
				if kc%2 == 1 {
					pan[2*((kp-1)*dpCols+c)], pan[2*((kp-1)*dpCols+c)+1] = 0, row[kc-1]
				}
			}
			continue
		}
		// Step p is stored row p: interleave two rows at a time.
		from := 0
		if w == dpCols && packPairsAsm(pan, b[(p0)*ldb+j0+q*dpCols:], ldb, kc/2) {
			from = kc / 2
		}
		for s := from; s < kp; s++ {
			hi := b[(p0+2*s)*ldb+j0+q*dpCols:][:w]
			var lo []uint16
			if 2*s+1 < kc {
				lo = b[(p0+2*s+1)*ldb+j0+q*dpCols:][:w]
			}
			out := pan[2*s*dpCols : 2*(s+1)*dpCols]
			for c := range dpCols {
				switch {
				case c >= w:
					out[2*c], out[2*c+1] = 0, 0
				case lo == nil:
					out[2*c], out[2*c+1] = 0, hi[c]
				default:
					out[2*c], out[2*c+1] = lo[c], hi[c]
				}
			}
		}
	}
}

// swapA returns the mc×kc block of A at (i0, p0) with each pair of steps
// swapped (the earlier one in the pair's high half, as the kernels read
// it) and its row length: a view of aDP when the whole A was swapped
// (swapAll), else a copy made now into ws.dpA. A block's rows hold kc
// rounded up to even values, an odd kc's last pair (0, A[i][p0+kc-1]).
func (ws *workspace) swapA(g *problem, i0, mc, p0, kc int) ([]uint16, int) {
	if g.aDP != nil {
		kb := kBlock(g.k)
		ld := g.swappedLen()
		return g.aDP[i0*ld+p0/kb*2*((kb+1)/2):], ld
	}
	ld := 2 * ((kc + 1) / 2)
	ws.dpA = grow16(ws.dpA, mc*ld)
	for i := range mc {
		swapRow(ws.dpA[i*ld:(i+1)*ld], g.a16[(i0+i)*g.lda+p0:(i0+i)*g.lda+p0+kc])
	}
	return ws.dpA, ld
}

// swappedLen is the length of a row of A swapped whole: each k block
// rounded up to even.
func (g *problem) swappedLen() int {
	kb := kBlock(g.k)
	return (g.k + kb - 1) / kb * 2 * ((kb + 1) / 2)
}

// swapAll swaps all of A, block by block as swapA does, into ws.dpAll on
// the pool and points aDP at it: a product of several column blocks or
// chunks (a language model head's) would otherwise swap each block of A
// once for each.
func (g *problem) swapAll(ws *workspace) {
	kb, ld := kBlock(g.k), g.swappedLen()
	ws.dpAll = grow16(ws.dpAll, g.m*ld)
	dst := ws.dpAll
	parallel.For(g.m, max(1, prepackChunk/ld), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			for pc := 0; pc < g.k; pc += kb {
				kc := min(kb, g.k-pc)
				off := i*ld + pc/kb*2*((kb+1)/2)
				swapRow(dst[off:off+2*((kc+1)/2)], g.a16[i*g.lda+pc:i*g.lda+pc+kc])
			}
		}
	})
	g.aDP = dst
}

// swapRow copies the kc values of src into dst (kc rounded up to even)
// with each pair's halves swapped, an odd kc's last pair (0, src[kc-1]).
func swapRow(dst, src []uint16) {
	kc := len(src)
	for s := swapPairsAsm(dst, src); s < kc/2; s++ {
		dst[2*s], dst[2*s+1] = src[2*s+1], src[2*s]
	}
	if kc%2 == 1 {
		dst[kc-1], dst[kc] = 0, src[kc-1]
	}
}

// tileDP is tile for a dp product: the same column blocks, k blocks (kc,
// and so every element's merges into C, as tile's) and row blocks, with
// DP panels and swapped A blocks, and 12×32 tiles (mrDP).
func (g *problem) tileDP(i0, m, j0, n int, ws *workspace) {
	kb := kBlock(g.k)
	step, each := ncMaxDP, g.panelByPanel(m)
	if each {
		step = dpCols
	}
	for jc := 0; jc < n; jc += step {
		nc := min(step, n-jc)
		for pc := 0; pc < g.k; pc += kb {
			kc := min(kb, g.k-pc)
			kp := (kc + 1) / 2
			beta := g.beta
			if pc > 0 {
				beta = 1
			}
			bp := g.panelsDP(ws, pc, kc, j0+jc, nc, each)
			for ic := 0; ic < m; ic += mcMax {
				mc := min(mcMax, m-ic)
				// A few rows use each panel right after it arrives from
				// memory: the kernels prefetch the next (macro's stream),
				// except panel by panel, where there is no next.
				stream := mc <= streamRows && !each
				av, ald := ws.swapA(g, i0+ic, mc, pc, kc)
				for jr := 0; jr < nc; jr += dpCols {
					pan := bp[jr*2*kp : (jr+dpCols)*2*kp]
					w := min(dpCols, nc-jr)
					for ir := 0; ir < mc; ir += mrDP {
						h := min(mrDP, mc-ir)
						off := (i0+ic+ir)*g.ldc + j0 + jc + jr
						if w == dpCols {
							// beta is 0 or 1: the kernel's merge rounds as
							// microTile's edge merge, whatever h.
							kernelDP(h, kp, av[ir*ald:], ald, pan, g.c[off:], g.ldc, g.alpha, beta, stream)
							continue
						}
						edge := ws.edge[:mrDP*dpCols]
						kernelDP(h, kp, av[ir*ald:], ald, pan, edge, dpCols, g.alpha, 0, stream)
						g.mergeEdge(off, edge, dpCols, h, w, beta)
					}
				}
			}
		}
	}
}

func grow16(buf []uint16, n int) []uint16 {
	if cap(buf) < n {
		return make([]uint16, n)
	}
	return buf[:n]
}

// HasDP reports whether products of two bf16 operands run on the
// VDPBF16PS kernels here (SgemmBF16, and PackBDP's panels).
func HasDP() bool { return useAsm && useWide && useDP }

// DPPanelsLen is the values of PackBDP's panels of a k×n op(B).
func DPPanelsLen(k, n int) int {
	kb := kBlock(k)
	return dpPanelsLen(kb, n) * ((k + kb - 1) / kb)
}

// PackBDP is PackBBF16 for products whose A is bf16 too
// (SgemmPackedBF16): op(B) packed once into DP panels, in dst's memory
// when it holds DPPanelsLen(k, n) values. It keeps a reference to b,
// which the products of at most DotMaxRows rows read in place, and which
// SgemmPacked (a float32 A) packs from as it goes. Without HasDP the
// panels are PackBBF16's.
func PackBDP(dst []uint16, transB bool, k, n int, b []uint16, ldb int) *PackedB {
	if !HasDP() {
		return PackBBF16(dst, transB, k, n, b, ldb)
	}
	p := newPackedB(transB, k, n, len(b), ldb)
	p.b16 = b
	if n == 0 || k == 0 {
		return p
	}
	g := &problem{transB: transB, n: n, k: k, b16: b, ldb: ldb}
	ws := &workspace{dp: dst[:0]}
	g.prepackDP(ws)
	p.dp = g.bDP
	return p
}

// DP reports whether p's panels are DP panels (PackBDP).
func (p *PackedB) DP() bool { return p.dp != nil }

// SgemmPackedBF16 is SgemmPacked with A stored as bfloat16: bit for bit
// SgemmPacked on the widened A (and so Sgemm on the widened operands).
// With DP panels (PackBDP) it runs the VDPBF16PS kernels on A in place;
// on other panels, and for the products of at most DotMaxRows rows,
// which go through dot products as Sgemm's do, it widens A first.
func SgemmPackedBF16(m int, alpha float32, a []uint16, lda int, p *PackedB, beta float32, c []float32, ldc int) {
	checkProblem(false, p.transB, m, p.n, p.k, len(a), lda, max(len(p.b), len(p.b16)), p.ldb, c, ldc)
	g := &problem{transB: p.transB, m: m, n: p.n, k: p.k, alpha: alpha, beta: beta,
		a16: a, b16: p.b16, c: c, lda: lda, ldb: p.ldb, ldc: ldc, bDP: p.dp}
	if !p.DP() || g.dots() || !g.dp() {
		buf := wideA.Get().(*[]float32)
		defer wideA.Put(buf)
		n := 0
		if m > 0 && p.k > 0 {
			n = (m-1)*lda + p.k
		}
		*buf = grow(*buf, n)
		widen(*buf, a[:n])
		SgemmPacked(m, alpha, *buf, max(lda, 1), p, beta, c, ldc)
		return
	}
	if g.trivial() {
		return
	}
	if 2*float64(m)*float64(p.n)*float64(p.k) < packedParMinFlops {
		g.serial()
		return
	}
	g.parallel(packedChunkFlops)
}
