package cpu

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
	"github.com/ragen-go/ragen/engine/parallel"
	"github.com/ragen-go/ragen/engine/sample"
)

// Host is a float32 buffer of the CPU backend: a plain slice, so host
// access costs nothing (backend.HostFloats). Any []float32 converts to it
// without a copy.
type Host []float32

// Len is the number of floats.
func (h Host) Len() int { return len(h) }

// Floats returns the slice itself.
func (h Host) Floats() []float32 { return h }

// HostBF16 is a bf16 buffer of the CPU backend: each value the top 16
// bits of a float32 (backend.RoundBF16's result), two bytes a value. The
// products widen them as they read them (gemm.SgemmBF16, bf16 panels of
// packed weights), which is exact, and products of two bf16 values are
// exact in float32 (8+8 significant bits), so a product is a bf16-input,
// float32-accumulate one with the bits of the float32 product of the
// widened values. A distinct type, so that a float32 buffer passed where
// a bf16 one belongs fails loudly.
type HostBF16 []uint16

// Len is the number of bf16 values.
func (h HostBF16) Len() int { return len(h) }

// BF16 marks a bf16 buffer (backend.IsBF16).
func (HostBF16) BF16() {}

// Backend is the CPU backend: the kernels of this package on host memory.
// It holds no state of its own (scratch lives in pools and in the KV
// caches it makes), so one instance serves every model of the process,
// from any goroutine.
type Backend struct{}

// The default instance, registered as "cpu".
var defaultBackend = &Backend{}

func init() {
	backend.Register("cpu", func() (backend.Backend, error) { return defaultBackend, nil }, func() error { return nil })
}

// New returns the CPU backend.
func New() *Backend { return defaultBackend }

// h returns the slice of a float32 buffer.
func h(b backend.Buffer) []float32 {
	switch x := b.(type) {
	case nil:
		return nil
	case Host:
		return x
	}
	panic(fmt.Sprintf("backend cpu: a %T where a float32 buffer of this backend belongs", b))
}

// bf returns the slice of a bf16 buffer.
func bf(b backend.Buffer) []uint16 {
	if x, ok := b.(HostBF16); ok {
		return x
	}
	panic(fmt.Sprintf("backend cpu: a %T where a bf16 buffer of this backend belongs", b))
}

func (*Backend) Name() string { return "cpu" }
func (*Backend) Err() error   { return nil }
func (*Backend) Close() error { return nil }

func (*Backend) Alloc(n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("backend cpu: alloc of %d floats", n)
	}
	return Host(make([]float32, n)), nil
}

func (*Backend) AllocBF16(n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("backend cpu: alloc of %d bf16 values", n)
	}
	return HostBF16(make([]uint16, n)), nil
}

// Wrap returns x as a buffer of this backend, without a copy.
func (*Backend) Wrap(x []float32) backend.Buffer { return Host(x) }

// Free leaves host memory to the garbage collector, except the panels of
// packed weights, which the next PackLinear reuses (see recycled).
func (*Backend) Free(b backend.Buffer) {
	if p, ok := b.(*packed); ok && p.p != nil {
		recycled.put(p.p)
		p.p = nil
	}
}

func (*Backend) Slice(b backend.Buffer, off, n int) backend.Buffer {
	if x, ok := b.(HostBF16); ok {
		return x[off : off+n : off+n]
	}
	return Host(h(b)[off : off+n : off+n])
}

func (*Backend) Upload(dst backend.Buffer, src []float32) error {
	if len(src) > dst.Len() {
		return fmt.Errorf("backend cpu: upload of %d floats into a buffer of %d", len(src), dst.Len())
	}
	copy(h(dst), src)
	return nil
}

func (*Backend) Download(dst []float32, src backend.Buffer) error {
	if len(dst) > src.Len() {
		return fmt.Errorf("backend cpu: download of %d floats from a buffer of %d", len(dst), src.Len())
	}
	copy(dst, h(src))
	return nil
}

func (*Backend) Copy(dst, src backend.Buffer, n int) { copy(h(dst)[:n], h(src)[:n]) }
func (*Backend) Zero(b backend.Buffer)               { clear(h(b)) }

func (*Backend) Gemm(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, b backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	gemm.Sgemm(transA, transB, M, N, K, alpha, h(a), lda, h(b), ldb, beta, h(c), ldc)
}

func (*Backend) GemmBF16(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, b backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	gemm.SgemmBF16(transA, transB, M, N, K, alpha, bf(a), lda, bf(b), ldb, beta, h(c), ldc)
}

func (*Backend) GemmBF16B(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, b backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	gemm.SgemmBF16B(transA, transB, M, N, K, alpha, h(a), lda, bf(b), ldb, beta, h(c), ldc)
}

func (*Backend) FromBF16(dst, src backend.Buffer, n int) { widenRows(h(dst)[:n], bf(src)[:n]) }

// roundGrain is the values per parallel chunk of ToBF16.
const roundGrain = 1 << 16

func (*Backend) ToBF16(dst, src backend.Buffer, n int) {
	d, s := bf(dst)[:n], h(src)[:n]
	parallel.For(n, roundGrain, func(_, lo, hi int) {
		// By 16s in assembly where there is some, the rest here.
		if n16 := vectorLen(hi-lo) / 16 * 16; n16 > 0 {
			vectorToBF16(d[lo:hi], s[lo:hi], n16)
			lo += n16
		}
		for i := lo; i < hi; i++ {
			d[i] = uint16(math.Float32bits(backend.RoundBF16(s[i])) >> 16)
		}
	})
}

func (*Backend) AddBias(out, bias backend.Buffer, N, OC int) { addBias(h(out), h(bias), N, OC) }
func (*Backend) ColumnSum(sum, x backend.Buffer, N, C int)   { ColumnSum(h(sum), h(x), N, C) }
func (*Backend) Add(out, a, b backend.Buffer, n int)         { ResidualForward(h(out), h(a), h(b), n) }

// elemGrain is the values per parallel chunk of the elementwise updates
// (Scale, AdamW): large enough that waking a worker is worth it.
const elemGrain = 1 << 16

func (*Backend) Scale(x backend.Buffer, n int, alpha float32) {
	xs := h(x)[:n]
	parallel.For(n, elemGrain, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			xs[i] *= alpha
		}
	})
}

func (*Backend) EmbeddingForward(out backend.Buffer, tokens []int, wte backend.Buffer, T, C int) {
	if w, ok := wte.(HostBF16); ok {
		EmbeddingForwardBF16(h(out), tokens, w, T, C)
		return
	}
	EmbeddingForward(h(out), tokens, h(wte), T, C)
}

func (*Backend) EmbeddingBackward(dwte, dout backend.Buffer, tokens []int, T, C int) {
	EmbeddingBackward(h(dwte), h(dout), tokens, T, C)
}

func (*Backend) RMSNormForward(out, rstd, inp, weight backend.Buffer, N, C int, eps float32) {
	RMSNormForward(h(out), h(rstd), h(inp), h(weight), N, C, eps)
}

func (*Backend) RMSNormBackward(dinp, dweight, dout, inp, weight, rstd backend.Buffer, N, C int) {
	RMSNormBackward(h(dinp), h(dweight), h(dout), h(inp), h(weight), h(rstd), N, C)
}

func (*Backend) RopeForward(x, cos, sin backend.Buffer, pos []int, T, nHeads, hd int) {
	RopeForward(h(x), h(cos), h(sin), pos, T, nHeads, hd)
}

func (*Backend) RopeBackward(dx, cos, sin backend.Buffer, pos []int, T, nHeads, hd int) {
	RopeBackward(h(dx), h(cos), h(sin), pos, T, nHeads, hd)
}

// AttentionStore is 0: the backward pass recomputes the probabilities
// block by block (decision 27).
func (*Backend) AttentionStore([]int, int) int { return 0 }

func (*Backend) AttentionForward(out, _, q, k, v backend.Buffer, lens []int, nH, nKV, hd int) {
	AttentionForward(h(out), h(q), h(k), h(v), lens, nH, nKV, hd)
}

// Concurrent: every operation may run from several goroutines at once
// on disjoint outputs (backend.Concurrent).
func (*Backend) Concurrent() {}

// PrefixAlign is attBlock: AttendHead's row blocks start at its
// multiples.
func (*Backend) PrefixAlign() int { return attBlock }

func (*Backend) AttentionForwardPrefixed(out, q, k, v backend.Buffer, lens, past, keyRows []int, nH, nKV, hd int) {
	AttentionForwardPrefixed(h(out), h(q), h(k), h(v), lens, past, keyRows, nH, nKV, hd)
}

func (*Backend) AttentionBackward(dq, dk, dv, _, dout, _, q, k, v backend.Buffer, lens []int, nH, nKV, hd int) {
	AttentionBackward(h(dq), h(dk), h(dv), h(dout), h(q), h(k), h(v), lens, nH, nKV, hd)
}

func (*Backend) AttentionProbs(p, q, k backend.Buffer, L, hd, ldq, ldk int) {
	AttentionProbs(h(p), h(q), h(k), L, hd, ldq, ldk)
}

func (*Backend) SwiGLUForward(out, gate, up backend.Buffer, n int) {
	SwiGLUForward(h(out), h(gate), h(up), n)
}

func (*Backend) SwiGLURows(out, gateUp backend.Buffer, N, I int) { SwiGLURows(h(out), h(gateUp), N, I) }

func (*Backend) SwiGLUBackward(dgate, dup, dout, gate, up backend.Buffer, n int) {
	SwiGLUBackward(h(dgate), h(dup), h(dout), h(gate), h(up), n)
}

func (*Backend) LogSoftmaxForward(lse, logprob, entropy, logits backend.Buffer, targets []int, N, V int) {
	LogSoftmaxForward(h(lse), h(logprob), h(entropy), h(logits), targets, N, V)
}

func (*Backend) LogSoftmaxBackward(dlogits, logits, lse, entropy backend.Buffer, targets []int, dlogprob, dentropy backend.Buffer, N, V int) {
	LogSoftmaxBackward(h(dlogits), h(logits), h(lse), h(entropy), targets, h(dlogprob), h(dentropy), N, V)
}

// AdamW updates in PyTorch's order of operations: decay, moments, then
// θ -= stepSize · m / (√v/bc2Sqrt + ε), elementwise in float32.
func (*Backend) AdamW(params, m, v, grads backend.Buffer, n int, s backend.AdamWScalars) {
	p, mm, vv, g := h(params)[:n], h(m)[:n], h(v)[:n], h(grads)[:n]
	parallel.For(n, elemGrain, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			gi := g[i]
			mm[i] = s.Beta1*mm[i] + s.OneMinusBeta1*gi
			vv[i] = s.Beta2*vv[i] + s.OneMinusBeta2*gi*gi
			denom := float32(math.Sqrt(float64(vv[i])))/s.Bc2Sqrt + s.Eps
			p[i] = p[i]*s.Decay - s.StepSize*(mm[i]/denom)
		}
	})
}

// normGrain is the number of values per chunk of the norm reduction. It
// fixes the summation order, so it must not depend on the machine.
const normGrain = 1 << 15

// GradNorm sums g² in float64 per fixed chunk and adds the chunk partials
// in chunk order: bit-identical whatever GOMAXPROCS.
func (*Backend) GradNorm(g backend.Buffer, n int) (float64, error) {
	grads := h(g)[:n]
	partial := make([]float64, parallel.Chunks(n, normGrain))
	parallel.For(n, normGrain, func(c, lo, hi int) {
		var s float64
		for _, g := range grads[lo:hi] {
			s += float64(g) * float64(g)
		}
		partial[c] = s
	})
	var s float64
	for _, p := range partial {
		s += p
	}
	return math.Sqrt(s), nil
}

// sampleGrain is about the logits per chunk of Sample's parallel rows (a
// row costs ~3 ns per vocabulary entry at temperature 1 without top-k or
// top-p, decision 47: 2048 entries, ~6 µs).
const sampleGrain = 2048

// samplers holds sample.Sampler scratch between calls.
var samplers = sync.Pool{New: func() any { return new(sample.Sampler) }}

// Sample draws the rows in parallel, each with its own RNG: a row's token
// depends on its logits and its RNG alone. Rows that share an RNG would
// draw from it in row order, so they are sampled serially.
func (*Backend) Sample(logits backend.Buffer, rows, V int, o sample.Options, rngs []*sample.RNG) ([]int, error) {
	if err := backend.CheckSample(logits, rows, V, o, rngs); err != nil {
		return nil, err
	}
	grain := max(1, sampleGrain/V)
	if sharedRNG(rngs) {
		grain = max(rows, 1)
	}
	x := h(logits)
	out := make([]int, rows)
	parallel.For(rows, grain, func(_, lo, hi int) {
		s := samplers.Get().(*sample.Sampler)
		defer samplers.Put(s)
		for r := lo; r < hi; r++ {
			out[r] = s.Sample(x[r*V:(r+1)*V], o, rngs[r])
		}
	})
	return out, nil
}

// sharedRNG reports whether two rows use the same RNG.
func sharedRNG(rngs []*sample.RNG) bool {
	seen := make(map[*sample.RNG]bool, len(rngs))
	for _, r := range rngs {
		if r == nil {
			continue
		}
		if seen[r] {
			return true
		}
		seen[r] = true
	}
	return false
}

// packed is a Packer's buffer: weights packed for the matrix kernel.
type packed struct {
	p       *gemm.PackedB
	in, out int
}

func (p *packed) Len() int { return p.in * p.out }

// PackLinear packs each group's weights as one matrix of Σouts outputs
// (torch layout [out, in]: stacking the rows stacks the outputs), one
// parallel task per group. A decoding step multiplies only a few rows by
// each weight, so packing them at every step would cost as much as the
// products; a fused group (q|k|v, gate|up) multiplies each input row once
// instead of two or three times, and every output is summed exactly as in
// its own product, since the kernel sums each column alone.
//
// The panels are bf16 — half the bytes a decoding step reads — when the
// weights are bf16 buffers, and when they are float32 buffers whose
// every value is bf16-exact (a model loaded from bf16 safetensors, a
// frozen base, a reference policy): the products are the same floats
// either way (gemm.PackBNarrow, decision 44). A group of one weight is
// packed from it in place; a fused group of several is packed from their
// concatenation, which the products of at most three rows read. The
// panels go into the memory of freed ones of the same size when there is
// some (recycled).
func (*Backend) PackLinear(groups []backend.LinearGroup) ([]backend.Buffer, error) {
	out := make([]backend.Buffer, len(groups))
	for i, g := range groups {
		if len(g.Weights) != len(g.Outs) || len(g.Weights) == 0 {
			return nil, fmt.Errorf("backend cpu: pack group %d: %d weights for %d output sizes", i, len(g.Weights), len(g.Outs))
		}
		_, half := g.Weights[0].(HostBF16)
		for j, w := range g.Weights {
			if _, ok := w.(HostBF16); ok != half {
				return nil, fmt.Errorf("backend cpu: pack group %d: weight %d is %s, weight 0 is not", i, j, map[bool]string{true: "bf16", false: "float32"}[ok])
			}
			if w.Len() != g.Outs[j]*g.In {
				return nil, fmt.Errorf("backend cpu: pack group %d: weight %d holds %d values, want %d × %d", i, j, w.Len(), g.Outs[j], g.In)
			}
		}
	}
	// Each group takes its panels' memory from the recycled ones first.
	type job struct {
		g     backend.LinearGroup
		half  bool // bf16 panels
		f32   []float32
		bf16  []uint16
		exact bool
	}
	jobs := make([]job, len(groups))
	for i, g := range groups {
		_, bf16 := g.Weights[0].(HostBF16)
		jobs[i] = job{g: g, half: bf16, exact: bf16}
	}
	parallel.For(len(groups), 1, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			if !jobs[i].half {
				jobs[i].exact = exactAll(jobs[i].g.Weights)
			}
		}
	})
	for i := range jobs {
		j := &jobs[i]
		n := gemm.PanelsLen(j.g.In, sum(j.g.Outs))
		if j.half && j.g.BF16Inputs && gemm.HasDP() {
			n = gemm.DPPanelsLen(j.g.In, sum(j.g.Outs))
		}
		if j.exact {
			j.bf16 = recycled.takeBF16(n)
		} else {
			j.f32 = recycled.takeF32(n)
		}
	}
	recycled.drop()
	parallel.For(len(groups), 1, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			j := jobs[i]
			p := &packed{in: j.g.In, out: sum(j.g.Outs)}
			switch {
			case j.half && j.g.BF16Inputs:
				p.p = gemm.PackBDP(j.bf16, true, p.in, p.out, concat(j.g.Weights, bf), p.in)
			case j.half:
				p.p = gemm.PackBBF16(j.bf16, true, p.in, p.out, concat(j.g.Weights, bf), p.in)
			case j.exact:
				p.p = gemm.PackBNarrow(j.bf16, true, p.in, p.out, concat(j.g.Weights, h), p.in)
			default:
				p.p = gemm.PackBInto(j.f32, true, p.in, p.out, concat(j.g.Weights, h), p.in)
			}
			out[i] = p
		}
	})
	return out, nil
}

// exactAll reports whether every value of the float32 buffers is
// bf16-exact.
func exactAll(bufs []backend.Buffer) bool {
	for _, b := range bufs {
		if !gemm.ExactBF16(h(b)) {
			return false
		}
	}
	return true
}

func sum(x []int) int {
	s := 0
	for _, v := range x {
		s += v
	}
	return s
}

// recycled holds the panel memory of the packed weights that Free
// released, by length, until the next PackLinear takes what it needs of
// it and drops the rest: a rollout makes a decoder, and packs every
// weight, at each training step, and first touches of fresh memory cost
// more than the packing (on this project's VMs ~10 s per GB: pages
// faulted in one by one), while the panels of the last decoder, of the
// same sizes, sit unused. Keeping only one decoder's worth, only until
// the next packing, bounds what it holds.
var recycled recycler

type recycler struct {
	sync.Mutex
	f32  map[int][][]float32
	bf16 map[int][][]uint16
}

// put keeps p's panels for reuse; p must not be used afterwards.
func (r *recycler) put(p *gemm.PackedB) {
	r.Lock()
	defer r.Unlock()
	d, d16 := p.Panels()
	switch {
	case d != nil:
		if r.f32 == nil {
			r.f32 = map[int][][]float32{}
		}
		r.f32[len(d)] = append(r.f32[len(d)], d)
	case d16 != nil:
		if r.bf16 == nil {
			r.bf16 = map[int][][]uint16{}
		}
		r.bf16[len(d16)] = append(r.bf16[len(d16)], d16)
	}
}

// takeF32 returns kept panels of n float32s, or nil.
func (r *recycler) takeF32(n int) []float32 {
	r.Lock()
	defer r.Unlock()
	return take(r.f32, n)
}

// takeBF16 returns kept panels of n bf16 values, or nil.
func (r *recycler) takeBF16(n int) []uint16 {
	r.Lock()
	defer r.Unlock()
	return take(r.bf16, n)
}

func take[T any](m map[int][][]T, n int) []T {
	l := m[n]
	if len(l) == 0 {
		return nil
	}
	x := l[len(l)-1]
	m[n] = l[:len(l)-1]
	return x
}

// drop forgets what is kept (the garbage collector frees it).
func (r *recycler) drop() {
	r.Lock()
	defer r.Unlock()
	r.f32, r.bf16 = nil, nil
}

// concat returns the values of bufs one after another: the one buffer's
// own slice, or a new one (a fused group whose weights are not one view
// in the layout).
func concat[T float32 | uint16](bufs []backend.Buffer, get func(backend.Buffer) []T) []T {
	if len(bufs) == 1 {
		return get(bufs[0])
	}
	parts := make([][]T, len(bufs))
	for j, x := range bufs {
		parts[j] = get(x)
	}
	return slices.Concat(parts...)
}

// PackedLinear multiplies x, float32 or bf16, by the packed weights: a
// bf16 x by VDPBF16PS panels (packed for BF16Inputs where the CPU has
// them) in place, otherwise widened here (the rows of A are read in place
// as float32).
func (*Backend) PackedLinear(out, x, w backend.Buffer, N int) {
	p := w.(*packed)
	if x16, ok := x.(HostBF16); ok && p.p.DP() {
		gemm.SgemmPackedBF16(N, 1, x16[:N*p.in], p.in, p.p, 0, h(out), p.out)
		return
	}
	if x16, ok := x.(HostBF16); ok {
		n := N * p.in
		buf := widened.Get().(*[]float32)
		if cap(*buf) < n {
			*buf = make([]float32, n)
		}
		a := (*buf)[:n]
		widenRows(a, x16[:n])
		gemm.SgemmPacked(N, 1, a, p.in, p.p, 0, h(out), p.out)
		widened.Put(buf)
		return
	}
	gemm.SgemmPacked(N, 1, h(x), p.in, p.p, 0, h(out), p.out)
}

// widened holds PackedLinear's scratch for widened inputs.
var widened = sync.Pool{New: func() any { return new([]float32) }}

// widenRows sets dst[i] to the float32 value of the bf16 src[i] (exact).
func widenRows(dst []float32, src []uint16) {
	parallel.For(len(dst), roundGrain, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = math.Float32frombits(uint32(src[i]) << 16)
		}
	})
}
