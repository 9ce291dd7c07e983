package cpu

import (
	"math"
	"slices"

	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
	"github.com/ragen-go/ragen/engine/parallel"
)

// Causal multi-head attention with grouped-query heads over packed
// sequences. Layouts, with C = nH·hd and KV = nKV·hd:
//
//	q, out  [T, C]   head h in columns h·hd … h·hd+hd
//	k, v    [T, KV]  query head h reads key/value head h / (nH/nKV)
//
// Sequence s occupies rows lens[0]+…+lens[s-1] onwards and attends to
// itself only, so no padding is computed.
//
// The softmax probabilities are not kept between the passes: a sequence of
// L tokens has nH·L² of them per layer, more than all its other
// activations once L passes a few hundred tokens (keeping them was half of
// the 16 GB peak of a Sokoban update of 128 trajectories near the
// 1024-token context).
// AttentionBackward recomputes each block of rows with the forward's own
// products and softmax (probBlock), so the gradients are bit-identical to
// keeping them, for one more q·kᵀ product per block.

// attBlock is a block of rows handled by one pair of products; only the
// keys up to the block's last row are computed, which skips most of the
// masked upper triangle.
const attBlock = 64

// AttendScratch is the number of floats of scratch AttendHead needs for n
// query rows after past cached positions: one block of rows of
// probabilities.
func AttendScratch(n, past int) int {
	return min(n, attBlock) * (past + n)
}

// probBlock writes into p (leading dimension ldp) the attention
// probabilities of n query rows at positions first … first+n−1 against the
// keys at positions 0 … first+n−1:
//
//	p = softmax(q·kᵀ / sqrt(hd)) with row i masked to keys ≤ first+i
//
// Masked entries up to column first+n are 0. The forward and the backward
// pass both call it, so their probabilities are the same floats.
func probBlock(p, q, k []float32, n, first, hd, ldq, ldk, ldp int) {
	cols := first + n
	scale := float32(1 / math.Sqrt(float64(hd)))
	gemm.SgemmSerial(false, true, n, cols, hd, scale, q, ldq, k, ldk, 0, p, ldp)
	softmaxRows(p, n, first, ldp)
}

// AttendHead computes one head of causal attention for n query rows at
// positions past … past+n−1 against keys and values at positions
// 0 … past+n−1 (past > 0 when earlier keys sit in a KV cache):
//
//	out = softmax(q·kᵀ / sqrt(hd)) · v, row i masked to keys ≤ past+i
//
// q has leading dimension ldq, k and v ldkv, out ldo; att is scratch of
// AttendScratch(n, past) floats. It runs on the calling goroutine
// (gemm.SgemmSerial), for use inside a parallel loop.
func AttendHead(out, att, q, k, v []float32, n, past, hd, ldq, ldkv, ldo int) {
	W := past + n
	for r0 := 0; r0 < n; r0 += attBlock {
		r1 := min(r0+attBlock, n)
		probBlock(att, q[r0*ldq:], k, r1-r0, past+r0, hd, ldq, ldkv, W)
		gemm.SgemmSerial(false, false, r1-r0, hd, past+r1, 1, att, W, v, ldkv, 0, out[r0*ldo:], ldo)
	}
}

// AttentionProbs writes into p the L×L attention probabilities of one head
// over one sequence of L tokens (row i: how much position i attends to each
// position ≤ i, zeros above the diagonal), as the forward pass computes
// them; q and k have leading dimensions ldq and ldk. For inspection: the
// passes themselves never hold the whole matrix.
func AttentionProbs(p, q, k []float32, L, hd, ldq, ldk int) {
	for r0 := 0; r0 < L; r0 += attBlock {
		r1 := min(r0+attBlock, L)
		probBlock(p[r0*L:], q[r0*ldq:], k, r1-r0, r0, hd, ldq, ldk, L)
		for i := r0; i < r1; i++ {
			clear(p[i*L+r1 : (i+1)*L])
		}
	}
}

// AttendLast is one decoding step of attention for the group of query heads
// that share one key/value head: each head's single query row (the newest
// position) against all W cached positions, no mask needed:
//
//	p = softmax(q·kᵀ / sqrt(hd)),   out = p·v
//
// q holds the group's heads one after another (group rows of hd floats),
// as does out; k and v are W rows of ld floats. Both products stream the
// cache once, in place: q·kᵀ as dot products of stored rows (gemm.Dots),
// p·v as a weighted sum of stored rows (gemm.Combine); packing the cache
// for Sgemm took 70% of a decoding step. The softmax is left unnormalised
// through p·v — out = (Σ_j e_j·v_j) / Σ_j e_j with e_j = exp((s_j − max
// s)/sqrt(hd)) — so the division touches hd outputs instead of W
// probabilities, and the scale is folded into the exponent. scores is
// scratch of at least W floats. It runs on the calling goroutine.
func AttendLast(out, scores, q, k, v []float32, group, W, hd, ld int) {
	scale := float32(1 / math.Sqrt(float64(hd)))
	e := scores[:W]
	for h := 0; h < group; h++ {
		gemm.Dots(e, q[h*hd:(h+1)*hd], k, hd, ld)
		subMul(e, maxOf(e), scale)
		expInPlace(e)
		sum := sumOf(e)
		o := out[h*hd : (h+1)*hd]
		gemm.Combine(o, e, v, W, ld)
		scaleBy(o, 1/sum)
	}
}

// sumOf returns Σ x as four interleaved partial sums added at the end (in
// an order that depends on len(x) only): one chain would wait on each
// addition.
func sumOf(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0, s1, s2, s3 = s0+x[i], s1+x[i+1], s2+x[i+2], s3+x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// softmaxRows replaces each of the n rows of p (leading dimension ldp,
// cols = first+n columns) by its softmax over its first first+i+1 entries
// (row i), and zeroes the rest of the row:
//
//	p_j = e_j / Σ e,   e_j = exp(x_j − max x)
//
// The maximum, the subtraction, the exponentials and the division by the
// sum (a multiplication by its reciprocal) run on whole rows in vector
// loops. Each sum runs in order of j, a chain of dependent additions;
// four rows' chains are interleaved so that they overlap. The floats are
// those of the plain row-by-row loop (softmaxRowPlain in the tests).
func softmaxRows(p []float32, n, first, ldp int) {
	cols := first + n
	for i := 0; i < n; i++ {
		row := p[i*ldp : i*ldp+cols]
		x := row[:first+i+1]
		subScalar(x, maxOf(x))
		expInPlace(x)
		clear(row[len(x):])
	}
	for i := 0; i < n; i += 4 {
		g := min(4, n-i)
		var rows [4][]float32
		for r := range g {
			rows[r] = p[(i+r)*ldp : (i+r)*ldp+first+i+r+1]
		}
		sums := sumRows(rows[:g])
		for r := range g {
			scaleBy(rows[r], 1/sums[r])
		}
	}
}

// sumRows returns Σ_j rows[r][j] for up to four rows whose lengths grow by
// one from each row to the next, each summed in order of j from 0. The
// chains run side by side over the first row's length, then each row adds
// the entries past it.
func sumRows(rows [][]float32) [4]float32 {
	var s [4]float32
	n := len(rows[0])
	if len(rows) == 4 {
		r0, r1, r2, r3 := rows[0][:n], rows[1][:n], rows[2][:n], rows[3][:n]
		var s0, s1, s2, s3 float32
		for j := range r0 {
			s0 += r0[j]
			s1 += r1[j]
			s2 += r2[j]
			s3 += r3[j]
		}
		s = [4]float32{s0, s1, s2, s3}
	} else {
		for r, row := range rows {
			for _, v := range row[:n] {
				s[r] += v
			}
		}
	}
	for r, row := range rows {
		for _, v := range row[n:] {
			s[r] += v
		}
	}
	return s
}

// AttentionForward runs AttendHead for every (sequence, head) pair in
// parallel.
func AttentionForward(out, q, k, v []float32, lens []int, nH, nKV, hd int) {
	C, KV := nH*hd, nKV*hd
	offs, size := offsets(lens), AttendScratch(slices.Max(lens), 0)
	parallel.For(len(lens)*nH, 1, func(_, lo, hi int) {
		for task := lo; task < hi; task++ {
			s, h := task/nH, task%nH
			o, L, g := offs[s], lens[s], h/(nH/nKV)
			att := getScratch(size)
			AttendHead(out[o*C+h*hd:], att, q[o*C+h*hd:], k[o*KV+g*hd:], v[o*KV+g*hd:], L, 0, hd, C, KV, C)
			putScratch(att)
		}
	})
}

// AttentionForwardPrefixed is AttentionForward for sequences whose first
// keys and values are rows of the batch that other sequences computed
// (backend.PrefixAttention): sequence s's lens[s] rows are positions
// past[s] … past[s]+lens[s]−1, and its keys and values at positions
// 0 … past[s]+lens[s]−1 are the rows keyRows[o : o+past[s]+lens[s]] of
// k and v, o = Σ_{s'<s} past[s']+lens[s']. A sequence with past > 0 has
// its keys and values gathered once into scratch, which its heads read;
// with past a multiple of attBlock its row blocks fall where AttendHead
// puts them in the whole sequence, so every float is the one
// AttentionForward computes there.
func AttentionForwardPrefixed(out, q, k, v []float32, lens, past, keyRows []int, nH, nKV, hd int) {
	C, KV := nH*hd, nKV*hd
	offs, keyOffs, gathered := offsets(lens), make([]int, len(lens)), make([]int, len(lens))
	width, o, n := 0, 0, 0
	for s, L := range lens {
		keyOffs[s], o = o, o+past[s]+L
		width = max(width, past[s]+L)
		if past[s] > 0 {
			gathered[s], n = n, n+(past[s]+L)*KV
		}
	}
	// Each prefixed sequence's keys then values, W rows of KV floats each.
	kg, vg := make([]float32, n), make([]float32, n)
	parallel.For(len(lens), 1, func(_, lo, hi int) {
		for s := lo; s < hi; s++ {
			if past[s] == 0 {
				continue
			}
			for j, row := range keyRows[keyOffs[s] : keyOffs[s]+past[s]+lens[s]] {
				copy(kg[gathered[s]+j*KV:gathered[s]+(j+1)*KV], k[row*KV:])
				copy(vg[gathered[s]+j*KV:gathered[s]+(j+1)*KV], v[row*KV:])
			}
		}
	})
	size := AttendScratch(width, 0)
	parallel.For(len(lens)*nH, 1, func(_, lo, hi int) {
		for task := lo; task < hi; task++ {
			s, h := task/nH, task%nH
			r, L, P, g := offs[s], lens[s], past[s], h/(nH/nKV)
			ks, vs := k[r*KV+g*hd:], v[r*KV+g*hd:]
			if P > 0 {
				ks, vs = kg[gathered[s]+g*hd:], vg[gathered[s]+g*hd:]
			}
			att := getScratch(size)
			AttendHead(out[r*C+h*hd:], att, q[r*C+h*hd:], ks, vs, L, P, hd, C, KV, C)
			putScratch(att)
		}
	})
}

// AttentionBackward accumulates dq, dk, dv from dout, recomputing the
// probabilities P block by block (probBlock). Work is split by (sequence,
// key/value head), the query heads of a group done in order, so the sums
// into dk and dv do not depend on the number of workers:
//
//	dP = dout·vᵀ           dv += Pᵀ·dout
//	dS = P ⊙ (dP − rowsum(P ⊙ dP)) / sqrt(hd)
//	dq += dS·k             dk += dSᵀ·q
func AttentionBackward(dq, dk, dv, dout, q, k, v []float32, lens []int, nH, nKV, hd int) {
	C, KV := nH*hd, nKV*hd
	group := nH / nKV
	scale := float32(1 / math.Sqrt(float64(hd)))
	offs, size := offsets(lens), AttendScratch(slices.Max(lens), 0)
	parallel.For(len(lens)*nKV, 1, func(_, lo, hi int) {
		for task := lo; task < hi; task++ {
			s, g := task/nKV, task%nKV
			o, L := offs[s], lens[s]
			// One block of rows of P and one of dP, leading dimension L.
			scratch := getScratch(2 * size)
			Pb, dPb := scratch[:size], scratch[size:]
			kg, vg := k[o*KV+g*hd:], v[o*KV+g*hd:]
			dkg, dvg := dk[o*KV+g*hd:], dv[o*KV+g*hd:]
			for h := g * group; h < (g+1)*group; h++ {
				dO, qh, dqh := dout[o*C+h*hd:], q[o*C+h*hd:], dq[o*C+h*hd:]
				// Row blocks as in AttendHead: rows r0…r1−1 see keys < r1 only.
				for r0 := 0; r0 < L; r0 += attBlock {
					r1 := min(r0+attBlock, L)
					n := r1 - r0
					probBlock(Pb, qh[r0*C:], kg, n, r0, hd, C, KV, L)
					gemm.SgemmSerial(false, true, n, r1, hd, 1, dO[r0*C:], C, vg, KV, 0, dPb, L)
					gemm.SgemmSerial(true, false, r1, hd, n, 1, Pb, L, dO[r0*C:], C, 1, dvg, KV)
					for i := 0; i < n; i++ {
						p, d := Pb[i*L:i*L+r0+i+1], dPb[i*L:i*L+r1]
						var dot float32
						for j, pj := range p {
							dot += pj * d[j]
						}
						for j, pj := range p {
							d[j] = pj * (d[j] - dot) * scale
						}
						clear(d[r0+i+1:])
					}
					gemm.SgemmSerial(false, false, n, hd, r1, 1, dPb, L, kg, KV, 1, dqh[r0*C:], C)
					gemm.SgemmSerial(true, false, r1, hd, n, 1, dPb, L, qh[r0*C:], C, 1, dkg, KV)
				}
			}
			putScratch(scratch)
		}
	})
}

// offsets returns each sequence's first row.
func offsets(lens []int) []int {
	rows := make([]int, len(lens))
	r := 0
	for s, L := range lens {
		rows[s] = r
		r += L
	}
	return rows
}

// scratches is a free list of attention scratch, one buffer per running
// task, kept like gemm's packing workspaces (not in a sync.Pool, which the
// garbage collector empties). Its capacity bounds what stays allocated
// between calls.
var scratches = make(chan []float32, 16)

// getScratch returns n floats of scratch; contents are unspecified. The
// callers ask for the same size for every task of a call, so the buffers on
// the list fit the next call too unless its longest sequence is longer.
func getScratch(n int) []float32 {
	select {
	case b := <-scratches:
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	return make([]float32, n)
}

func putScratch(b []float32) {
	select {
	case scratches <- b:
	default:
	}
}
