//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/sample"
)

// The ops of backend.Backend. Each checks buffer sizes on the host (a
// device kernel would write out of bounds, not panic), then queues its
// kernels; none waits for the device.

func (b *Backend) Gemm(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, bb backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	if b.err != nil || M == 0 || N == 0 {
		return
	}
	defer b.enter()()
	b.gemm(transA, transB, M, N, K, alpha, b.buf(a).ptr, lda, b.buf(bb).ptr, ldb, beta, b.buf(c).ptr, ldc)
}

func (b *Backend) gemm(transA, transB bool, M, N, K int, alpha float32, a devptr, lda int, bb devptr, ldb int, beta float32, c devptr, ldc int) {
	if b.err != nil {
		return
	}
	if err := b.blas.sgemm(transA, transB, M, N, K, alpha, a, lda, bb, ldb, beta, c, ldc); err != nil {
		b.err = err
	}
}

func (b *Backend) gemmStrided(transA, transB bool, M, N, K int, alpha float32, a devptr, lda, sa int, bb devptr, ldb, sb int, beta float32, c devptr, ldc, sc, count int) {
	if b.err != nil {
		return
	}
	if err := b.blas.sgemmStrided(transA, transB, M, N, K, alpha, a, lda, sa, bb, ldb, sb, beta, c, ldc, sc, count); err != nil {
		b.err = err
	}
}

func (b *Backend) AddBias(out, bias backend.Buffer, N, OC int) {
	if !b.need("add_bias", N*OC, out) || !b.need("add_bias", OC, bias) {
		return
	}
	defer b.enter()()
	b.grid1("add_bias", N*OC, out, bias, N, OC)
}

func (b *Backend) ColumnSum(sum, x backend.Buffer, N, C int) {
	if !b.need("column_sum", C, sum) || !b.need("column_sum", N*C, x) {
		return
	}
	defer b.enter()()
	b.grid1("column_sum", C, sum, x, N, C)
}

func (b *Backend) Add(out, x, y backend.Buffer, n int) {
	if !b.need("add", n, out, x, y) {
		return
	}
	defer b.enter()()
	b.grid1("add", n, out, x, y, n)
}

func (b *Backend) Scale(x backend.Buffer, n int, alpha float32) {
	if !b.need("scale", n, x) {
		return
	}
	defer b.enter()()
	b.grid1("scale", n, x, n, alpha)
}

func (b *Backend) EmbeddingForward(out backend.Buffer, tokens []int, wte backend.Buffer, T, C int) {
	if !b.need("embedding_forward", T*C, out) {
		return
	}
	defer b.enter()()
	if backend.IsBF16(wte) { // a frozen embedding held as bf16
		b.grid1("embedding_forward_bf16", T*C, out, b.upInts(tokens[:T]), b.half(wte), T, C)
		return
	}
	b.grid1("embedding_forward", T*C, out, b.upInts(tokens[:T]), wte, T, C)
}

func (b *Backend) EmbeddingBackward(dwte, dout backend.Buffer, tokens []int, T, C int) {
	if !b.need("embedding_backward", T*C, dout) {
		return
	}
	defer b.enter()()
	b.grid1("embedding_backward", C, dwte, dout, b.upInts(tokens[:T]), T, C)
}

func (b *Backend) RMSNormForward(out, rstd, inp, weight backend.Buffer, N, C int, eps float32) {
	if !b.need("rmsnorm_forward", N*C, out, inp) || !b.need("rmsnorm_forward", N, rstd) || !b.need("rmsnorm_forward", C, weight) {
		return
	}
	defer b.enter()()
	b.rows("rmsnorm_forward", N, out, rstd, inp, weight, N, C, eps)
}

func (b *Backend) RMSNormBackward(dinp, dweight, dout, inp, weight, rstd backend.Buffer, N, C int) {
	if !b.need("rmsnorm_backward", N*C, dinp, dout, inp) || !b.need("rmsnorm_backward", C, dweight, weight) {
		return
	}
	defer b.enter()()
	b.rows("rmsnorm_backward_dx", N, dinp, dout, inp, weight, rstd, N, C)
	b.grid1("rmsnorm_backward_dw", C, dweight, dout, inp, rstd, N, C)
}

func (b *Backend) RopeForward(x, cos, sin backend.Buffer, pos []int, T, nHeads, hd int) {
	b.rope(x, cos, sin, pos, T, nHeads, hd, 1)
}

func (b *Backend) RopeBackward(dx, cos, sin backend.Buffer, pos []int, T, nHeads, hd int) {
	b.rope(dx, cos, sin, pos, T, nHeads, hd, -1)
}

func (b *Backend) rope(x, cos, sin backend.Buffer, pos []int, T, nHeads, hd int, sign float32) {
	maxPos := 0
	for _, p := range pos[:T] {
		maxPos = max(maxPos, p+1)
	}
	if !b.need("rope", T*nHeads*hd, x) || !b.need("rope", maxPos*hd/2, cos, sin) {
		return
	}
	defer b.enter()()
	b.grid1("rope", T*nHeads*hd/2, x, cos, sin, b.upInts(pos[:T]), T, nHeads, hd, sign)
}

// AttentionForward, per sequence s of length L and key/value head g, with
// the group's query heads as one strided batch (the shared K and V have
// stride 0):
//
//	S_h = q_h·k_gᵀ/√hd  (L×L, cuBLAS)   P_h = causal softmax(S_h)   out_h = P_h·v_g
func (b *Backend) AttentionForward(out, att, q, k, v backend.Buffer, lens []int, nH, nKV, hd int) {
	T := sum(lens)
	C, KV, group := nH*hd, nKV*hd, nH/nKV
	if !b.need("attention_forward", T*C, out, q) || !b.need("attention_forward", T*KV, k, v) || !b.need("attention_forward", backend.AttentionSize(lens, nH), att) {
		return
	}
	defer b.enter()()
	scl := float32(1 / math.Sqrt(float64(hd)))
	O, A, Q, K, V := b.buf(out).ptr, b.buf(att).ptr, b.buf(q).ptr, b.buf(k).ptr, b.buf(v).ptr
	row, ao := 0, 0
	for _, L := range lens {
		for g := 0; g < nKV; g++ {
			h0 := g * group
			b.gemmStrided(false, true, L, L, hd, scl,
				fp(Q, row*C+h0*hd), C, hd, fp(K, row*KV+g*hd), KV, 0,
				0, fp(A, ao+h0*L*L), L, L*L, group)
		}
		b.rows("softmax_causal", nH*L, fp(A, ao), L, nH*L)
		for g := 0; g < nKV; g++ {
			h0 := g * group
			b.gemmStrided(false, false, L, hd, L, 1,
				fp(A, ao+h0*L*L), L, L*L, fp(V, row*KV+g*hd), KV, 0,
				0, fp(O, row*C+h0*hd), C, hd, group)
		}
		row += L
		ao += nH * L * L
	}
}

// AttentionBackward: dP_h = dout_h·v_gᵀ and dq_h += dS_h·k_g batched over
// a group's heads (distinct outputs); dv_g += P_hᵀ·dout_h and
// dk_g += dS_hᵀ·q_h one head after another (they share dv_g, dk_g), so
// the sums run in a fixed order. dS = P ⊙ (dP − rowsum(P ⊙ dP))/√hd.
func (b *Backend) AttentionBackward(dq, dk, dv, datt, dout, att, q, k, v backend.Buffer, lens []int, nH, nKV, hd int) {
	T := sum(lens)
	C, KV, group := nH*hd, nKV*hd, nH/nKV
	size := backend.AttentionSize(lens, nH)
	if !b.need("attention_backward", T*C, dq, dout, q) || !b.need("attention_backward", T*KV, dk, dv, k, v) || !b.need("attention_backward", size, att, datt) {
		return
	}
	defer b.enter()()
	scl := float32(1 / math.Sqrt(float64(hd)))
	dQ, dK, dV, dP, dO := b.buf(dq).ptr, b.buf(dk).ptr, b.buf(dv).ptr, b.buf(datt).ptr, b.buf(dout).ptr
	P, Q, K, V := b.buf(att).ptr, b.buf(q).ptr, b.buf(k).ptr, b.buf(v).ptr
	row, ao := 0, 0
	for _, L := range lens {
		for g := 0; g < nKV; g++ {
			h0 := g * group
			b.gemmStrided(false, true, L, L, hd, 1,
				fp(dO, row*C+h0*hd), C, hd, fp(V, row*KV+g*hd), KV, 0,
				0, fp(dP, ao+h0*L*L), L, L*L, group)
			for h := h0; h < h0+group; h++ {
				b.gemm(true, false, L, hd, L, 1, fp(P, ao+h*L*L), L, fp(dO, row*C+h*hd), C, 1, fp(dV, row*KV+g*hd), KV)
			}
		}
		b.rows("softmax_causal_backward", nH*L, fp(dP, ao), fp(P, ao), L, nH*L, scl)
		for g := 0; g < nKV; g++ {
			h0 := g * group
			b.gemmStrided(false, false, L, hd, L, 1,
				fp(dP, ao+h0*L*L), L, L*L, fp(K, row*KV+g*hd), KV, 0,
				1, fp(dQ, row*C+h0*hd), C, hd, group)
			for h := h0; h < h0+group; h++ {
				b.gemm(true, false, L, hd, L, 1, fp(dP, ao+h*L*L), L, fp(Q, row*C+h*hd), C, 1, fp(dK, row*KV+g*hd), KV)
			}
		}
		row += L
		ao += nH * L * L
	}
}

func (b *Backend) appendKV(kc, vc, k, v backend.Buffer, slots, lens []int, KV, maxLen int) {
	R := len(lens)
	if !b.slots("append_kv", slots, lens, maxLen) || !b.need("append_kv", (slices.Max(slots)+1)*maxLen*KV, kc, vc) || !b.need("append_kv", R*KV, k, v) {
		return
	}
	defer b.enter()()
	ints := b.upInts(append(slices.Clone(slots), lens...)) // one upload: upInts reuses its buffer
	b.grid1("append_kv", R*KV, kc, vc, k, v, ints, ints.add(R), R, KV, maxLen)
}

// AttendCached runs attend_cached, one block per (row, head).
func (b *Backend) attendCached(out, att, q, kc, vc backend.Buffer, slots, lens []int, nH, nKV, hd, maxLen int) {
	R := len(lens)
	if !b.slots("attend_cached", slots, lens, maxLen) || !b.need("attend_cached", R*nH*hd, out, q) ||
		!b.need("attend_cached", (slices.Max(slots)+1)*maxLen*nKV*hd, kc, vc) || !b.need("attend_cached", R*nH*maxLen, att) {
		return
	}
	defer b.enter()()
	scl := float32(1 / math.Sqrt(float64(hd)))
	ints := b.upInts(append(slices.Clone(slots), lens...))
	b.launch("attend_cached", R*nH, block, out, att, q, kc, vc, ints, ints.add(R), nH, nKV, hd, maxLen, scl)
}

// slots checks the rows of a KV-cache op on the host: one slot per row,
// lengths in [1, maxLen] (a kernel would write out of bounds).
func (b *Backend) slots(op string, slots, lens []int, maxLen int) bool {
	if b.err != nil {
		return false
	}
	if len(slots) != len(lens) || len(lens) == 0 {
		b.err = fmt.Errorf("backend cuda: %s: %d slots for %d rows", op, len(slots), len(lens))
		return false
	}
	for r, L := range lens {
		if L < 1 || L > maxLen || slots[r] < 0 {
			b.err = fmt.Errorf("backend cuda: %s: row %d: slot %d, length %d outside [1, %d]", op, r, slots[r], L, maxLen)
			return false
		}
	}
	return true
}

func (b *Backend) SwiGLUForward(out, gate, up backend.Buffer, n int) {
	if !b.need("swiglu_forward", n, out, gate, up) {
		return
	}
	defer b.enter()()
	b.grid1("swiglu_forward", n, out, gate, up, n)
}

func (b *Backend) SwiGLUBackward(dgate, dup, dout, gate, up backend.Buffer, n int) {
	if !b.need("swiglu_backward", n, dgate, dup, dout, gate, up) {
		return
	}
	defer b.enter()()
	b.grid1("swiglu_backward", n, dgate, dup, dout, gate, up, n)
}

func (b *Backend) LogSoftmaxForward(lse, logprob, entropy, logits backend.Buffer, targets []int, N, V int) {
	if !b.need("logsoftmax_forward", N, lse, logprob, entropy) || !b.need("logsoftmax_forward", N*V, logits) {
		return
	}
	defer b.enter()()
	b.rows("logsoftmax_forward", N, lse, logprob, entropy, logits, b.upInts(targets[:N]), N, V)
}

func (b *Backend) LogSoftmaxBackward(dlogits, logits, lse, entropy backend.Buffer, targets []int, dlogprob, dentropy backend.Buffer, N, V int) {
	if !b.need("logsoftmax_backward", N, lse, entropy, dlogprob, dentropy) || !b.need("logsoftmax_backward", N*V, dlogits, logits) {
		return
	}
	defer b.enter()()
	b.launch("logsoftmax_backward", N*((V+block-1)/block), block, dlogits, logits, lse, entropy, b.upInts(targets[:N]), dlogprob, dentropy, N, V)
}

func (b *Backend) AdamW(params, m, v, grads backend.Buffer, n int, s backend.AdamWScalars) {
	if !b.need("adamw", n, params, m, v, grads) {
		return
	}
	defer b.enter()()
	b.grid1("adamw", n, params, m, v, grads, n, s.Decay, s.Beta1, s.OneMinusBeta1, s.Beta2, s.OneMinusBeta2, s.Eps, s.StepSize, s.Bc2Sqrt)
}

// normChunk is the floats per block of the first norm pass; fixed, so the
// summation order does not depend on the device.
const normChunk = 1 << 15

// GradNorm is two passes: per-chunk float64 sums of g², then one block
// adds the partials; the tree shapes are fixed, so the result is the same
// on every run (not bit-equal to the CPU's sequential sums).
func (b *Backend) GradNorm(g backend.Buffer, n int) (float64, error) {
	if !b.need("grad_norm", n, g) {
		return 0, b.err
	}
	defer b.enter()()
	chunks := max(1, (n+normChunk-1)/normChunk)
	b.scratch = b.grow(b.scratch, 2*(chunks+1)) // float64 words
	if b.err != nil {
		return 0, b.err
	}
	part := b.scratch.ptr + 8
	b.launch("sumsq_partial", chunks, block, part, g, n, normChunk)
	b.launch("sum_final", 1, block, b.scratch.ptr, part, chunks)
	var s float64
	b.download(unsafe.Pointer(&s), b.scratch.ptr, 8)
	return math.Sqrt(s), b.err
}

// Sample runs sample_rows, one block per row, with each row's uniform
// drawn on the host from its stream (one draw per row, as the CPU does).
func (b *Backend) Sample(logits backend.Buffer, rows, V int, o sample.Options, rngs []*sample.RNG) ([]int, error) {
	if err := backend.CheckSample(logits, rows, V, o, rngs); err != nil {
		return nil, err
	}
	if rows == 0 || b.err != nil {
		return []int{}, b.err
	}
	defer b.enter()()
	u := make([]float64, rows)
	for r, rng := range rngs {
		if rng != nil { // greedy decoding may have no stream, as in sample.Sampler
			u[r] = rng.Float64()
		}
	}
	// scratch words: u (2/row), tokens (1/row, padded to even), x (V/row), p (2V/row)
	ub, tb := 0, 2*rows
	xb := tb + rows + rows%2
	pb := xb + rows*V + (rows*V)%2
	b.scratch = b.grow(b.scratch, pb+2*rows*V)
	if b.err != nil {
		return nil, b.err
	}
	base := b.scratch.ptr
	if err := memcpyHtoD(base.add(ub), unsafe.Pointer(&u[0]), 8*rows, b.stream); err != nil {
		b.err = fmt.Errorf("backend cuda: %w", err)
		return nil, b.err
	}
	topk := o.TopK
	if topk >= V {
		topk = 0
	}
	b.launch("sample_rows", rows, block, base.add(tb), logits, base.add(ub),
		base.add(xb), base.add(pb), V, o.Temperature, topk, o.TopP)
	toks := make([]int32, rows)
	b.download(unsafe.Pointer(&toks[0]), base.add(tb), 4*rows)
	out := make([]int, rows)
	for i, t := range toks {
		out[i] = int(t)
	}
	return out, b.err
}

// fp is the device address of float number i from p.
func fp(p devptr, i int) devptr { return p.add(i) }

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
