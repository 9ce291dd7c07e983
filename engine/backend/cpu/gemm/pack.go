package gemm

// Packing copies the blocks of op(A) and op(B) that one macro step needs
// into the order the micro-kernel reads them, so its inner loop walks two
// contiguous streams. The transposes are handled here, by reading the
// stored matrix with the right strides: no caller ever transposes a copy.
// (A float32 A, plain or transposed, is mostly read in place instead: see
// tile.)
//
// Packed A (mc×kc block at row i0, k offset p0): panels of mr rows; panel q
// starts at q·mr·kc and holds, for p = 0 … kc-1, the mr values
// op(A)[i0+q·mr+r][p0+p], r = 0 … mr-1. Rows past the block are zeros.
//
// Packed B (kc×nc block at k offset p0, column j0): panels of nr columns;
// panel q starts at q·nr·kc and holds, for p = 0 … kc-1, the nr values
// op(B)[p0+p][j0+q·nr+j], j = 0 … nr-1. Columns past the block are zeros.

// packA packs the mc×kc block of op(A) at (i0, p0) into the workspace.
func (w *workspace) packA(g *problem, i0, mc, p0, kc int) []float32 {
	w.a = grow(w.a, roundUp(mc, mr)*kc)
	dst := w.a
	a, lda := g.a, g.lda
	for q := 0; q*mr < mc; q++ {
		pan := dst[q*mr*kc : (q+1)*mr*kc]
		h := min(mr, mc-q*mr)
		if h < mr {
			clear(pan)
		}
		row0 := i0 + q*mr
		if g.transA {
			// op(A)[i][p] = a[p·lda + i]: mr consecutive values per p,
			// moved by hand (a copy call per 24 bytes costs more).
			if h == mr && packColsAsm(pan, a, p0*lda+row0, lda, kc) {
				continue
			}
			if h == mr {
				for p := 0; p < kc; p++ {
					d := pan[p*mr : p*mr+mr : p*mr+mr]
					o := (p0+p)*lda + row0
					s := a[o : o+mr : o+mr]
					d[0], d[1], d[2], d[3], d[4], d[5] = s[0], s[1], s[2], s[3], s[4], s[5]
				}
				continue
			}
			for p := 0; p < kc; p++ {
				src := a[(p0+p)*lda+row0 : (p0+p)*lda+row0+h]
				copy(pan[p*mr:p*mr+h], src)
			}
			continue
		}
		// op(A)[i][p] = a[i·lda + p]: one stored row per packed lane, the
		// leading multiple of 8 k steps of a full panel by 8×8 transposes
		// where available.
		done := 0
		if h == mr {
			done = packRowsAsm(pan, a, row0*lda+p0, lda, kc)
		}
		for r := 0; r < h && done < kc; r++ {
			src := a[(row0+r)*lda+p0+done : (row0+r)*lda+p0+kc]
			d := pan[done*mr+r:]
			for p, v := range src {
				d[p*mr] = v
			}
		}
	}
	return dst
}

// widenA widens the stored values of a bfloat16 A (g.a16) that the mc×kc
// block of op(A) at (i0, p0) reads into the workspace, and returns them as
// a float32 matrix and its leading dimension: mc rows of kc (kc rows of mc
// when A is transposed), op(A)'s block at (0, 0). Widening a block that
// the kernels then read from the L2, rather than all of A first, saves
// writing A's float32 copy to memory and reading it back.
func (w *workspace) widenA(g *problem, i0, mc, p0, kc int) ([]float32, int) {
	r0, c0, rows, cols := i0, p0, mc, kc
	if g.transA {
		r0, c0, rows, cols = p0, i0, kc, mc
	}
	w.wa = grow(w.wa, rows*cols)
	for r := 0; r < rows; r++ {
		o := (r0+r)*g.lda + c0
		widen(w.wa[r*cols:(r+1)*cols], g.a16[o:o+cols])
	}
	return w.wa, cols
}

// packB packs the kc×nc block of op(B) at (p0, j0) into the workspace.
func (w *workspace) packB(g *problem, p0, kc, j0, nc int, prefetch bool) []float32 {
	w.b = grow(w.b, roundUp(nc, nr)*kc)
	packB(w.b, g, p0, kc, j0, nc, prefetch)
	return w.b
}

// packB packs the kc×nc block of op(B) at (p0, j0) into dst. With
// prefetch, the packing of a transposed bf16 B prefetches what the product
// packs next (prefetchAt; a product packing B panel by panel,
// problem.panelByPanel).
func packB(dst []float32, g *problem, p0, kc, j0, nc int, prefetch bool) {
	if g.b16 != nil {
		packBWiden(dst, g, p0, kc, j0, nc, prefetch)
		return
	}
	b, ldb := g.b, g.ldb
	full := nc / nr * nr
	if !g.transB {
		// op(B)[p][j] = b[p·ldb + j]. Row by row: each stored row is read
		// once, front to back, and its nr-wide pieces go to their panels.
		// (Panel by panel would read nr values from each of kc rows ldb
		// apart: a cache and TLB miss per 64 bytes when ldb is large.)
		for p := 0; p < kc; p++ {
			row := b[(p0+p)*ldb+j0 : (p0+p)*ldb+j0+nc]
			if packRowAsm(dst[p*nr:], row, full/nr, nr*kc) {
				continue
			}
			for q := 0; q < full; q += nr {
				*(*[nr]float32)(dst[q*kc+p*nr:]) = *(*[nr]float32)(row[q:])
			}
		}
	} else {
		// op(B)[p][j] = b[j·ldb + p]: one stored row per packed lane, the
		// leading multiple of 8 k steps by 8×8 transposes where available.
		for q := 0; q < full; q += nr {
			pan := dst[q*kc : q*kc+nr*kc]
			done := packTrans(pan, b, (j0+q)*ldb+p0, ldb, kc)
			for j := 0; j < nr && done < kc; j++ {
				src := b[(j0+q+j)*ldb+p0+done : (j0+q+j)*ldb+p0+kc]
				d := pan[done*nr+j:]
				for p, v := range src {
					d[p*nr] = v
				}
			}
		}
	}
	if full == nc {
		return
	}
	// The last, partial panel: zero it, then fill its columns.
	pan := dst[full*kc : full*kc+nr*kc]
	clear(pan)
	for j := 0; j < nc-full; j++ {
		for p := 0; p < kc; p++ {
			if g.transB {
				pan[p*nr+j] = b[(j0+full+j)*ldb+p0+p]
			} else {
				pan[p*nr+j] = b[(p0+p)*ldb+j0+full+j]
			}
		}
	}
}

// prefetchAt is the offset in a transposed B (stored rows ldb apart, k
// deep) from which the packing of the kc steps at p0 of the stored rows
// from j — a panel, packed panel by panel (problem.panelByPanel) —
// prefetches what the product packs next: the same rows' next k block, or
// after the last one the first block of the rows nc on, the next panel's.
// The weights then come from memory while this block is multiplied.
func prefetchAt(j, nc, p0, kc, k, ldb int) int {
	if p0+kc < k {
		return j*ldb + p0 + kc
	}
	return (j + nc) * ldb
}

// packBWiden is packB for a B stored in bfloat16 (SgemmBF16): the same
// float32 panels, each value widened as it is packed, by the bf16 twins of
// packB's assembly helpers (packRowBF16, packTrans8BF16).
func packBWiden(dst []float32, g *problem, p0, kc, j0, nc int, prefetch bool) {
	b, ldb := g.b16, g.ldb
	full := nc / nr * nr
	if !g.transB {
		for p := 0; p < kc; p++ {
			row := b[(p0+p)*ldb+j0 : (p0+p)*ldb+j0+nc]
			if packRowBF16Asm(dst[p*nr:], row, full/nr, nr*kc) {
				continue
			}
			for q := 0; q < full; q += nr {
				widen(dst[q*kc+p*nr:q*kc+p*nr+nr], row[q:])
			}
		}
	} else {
		// op(B)[p][j] = b[j·ldb + p]: as packB's float32 rows, widened as
		// the 8×8 transposes load them.
		for q := 0; q < full; q += nr {
			pan := dst[q*kc : q*kc+nr*kc]
			next := -1
			if prefetch {
				next = prefetchAt(j0+q, nc, p0, kc, g.k, ldb)
			}
			done := packTransBF16(pan, b, (j0+q)*ldb+p0, ldb, kc, next)
			for j := 0; j < nr && done < kc; j++ {
				d := pan[done*nr+j:]
				for p, h := range b[(j0+q+j)*ldb+p0+done : (j0+q+j)*ldb+p0+kc] {
					d[p*nr] = bf16(h)
				}
			}
		}
	}
	if full < nc {
		// The last, partial panel (packPanels zeroes its missing columns).
		packPanels(dst[full*kc:], b, ldb, g.transB, p0, kc, j0+full, nc-full, widen)
	}
}

// packPanels packs the kc×nc block of op(B) at (p0, j0) of a B stored as
// S into panels of D laid out as packB's, converting the values with
// convert (dst[i] = src[i] converted, for i < len(dst)): the packing of
// bfloat16 panels (from bf16 or bf16-exact float32 weights), and the last,
// partial panel of float32 ones from bf16 weights (packBWiden). A transposed B's stored row (a lane of the panel) is
// converted whole into tmp, then scattered, so convert runs once per row,
// not once per value.
func packPanels[S, D float32 | uint16](dst []D, b []S, ldb int, transB bool, p0, kc, j0, nc int, convert func(dst []D, src []S)) {
	var tmp [kcMax]D
	for q := 0; q*nr < nc; q++ {
		pan := dst[q*nr*kc : (q+1)*nr*kc]
		w := min(nr, nc-q*nr)
		if w < nr {
			clear(pan)
		}
		j1 := j0 + q*nr
		if transB {
			// op(B)[p][j] = b[j·ldb + p]: each stored row is a lane.
			for j := 0; j < w; j++ {
				row := tmp[:kc]
				convert(row, b[(j1+j)*ldb+p0:(j1+j)*ldb+p0+kc])
				for p, v := range row {
					pan[p*nr+j] = v
				}
			}
			continue
		}
		// op(B)[p][j] = b[p·ldb + j]: a piece of each stored row per k step.
		for p := 0; p < kc; p++ {
			convert(pan[p*nr:p*nr+w], b[(p0+p)*ldb+j1:(p0+p)*ldb+j1+w])
		}
	}
}
