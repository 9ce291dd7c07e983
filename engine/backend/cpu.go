package backend

import (
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
	"github.com/ragen-go/ragen/engine/backend/cpu/parallel"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/sample"
)

// Host is a Buffer in host memory: the buffers of the "cpu" backend. Any
// []float32 converts to it without a copy.
type Host []float32

// Len is the number of floats.
func (h Host) Len() int { return len(h) }

// CPU is the reference backend: the kernels of engine/backend/cpu on host
// memory. It never fails once a buffer is allocated; it is safe for one
// goroutine at a time.
type CPU struct {
	name     string           // registered name; "" is "cpu"
	samplers []sample.Sampler // one per row of Sample, grown on demand
}

// The CPU is registered twice: as "cpu", and as "cpu-ref" for the
// trainer, which trains "cpu" on model.Model's faster kernels and every
// other backend through this interface — "cpu-ref" runs that device path
// on the CPU, so it can be checked without a GPU.
func init() {
	Register("cpu", func() (Backend, error) { return &CPU{}, nil }, func() error { return nil })
	Register("cpu-ref", func() (Backend, error) { return &CPU{name: "cpu-ref"}, nil }, func() error { return nil })
}

// h returns the slice behind a buffer of this backend.
func h(b Buffer) []float32 {
	if b == nil {
		return nil
	}
	return b.(Host)
}

func (c *CPU) Name() string {
	if c.name == "" {
		return "cpu"
	}
	return c.name
}
func (*CPU) Err() error   { return nil }
func (*CPU) Close() error { return nil }

func (*CPU) Alloc(n int) (Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("backend cpu: alloc of %d floats", n)
	}
	return Host(make([]float32, n)), nil
}

func (*CPU) Free(Buffer) {}

func (*CPU) Slice(b Buffer, off, n int) Buffer {
	if x, ok := b.(HostBF16); ok {
		return x[off : off+n]
	}
	return Host(h(b)[off : off+n])
}

func (*CPU) Upload(dst Buffer, src []float32) error {
	if len(src) > dst.Len() {
		return fmt.Errorf("backend cpu: upload of %d floats into a buffer of %d", len(src), dst.Len())
	}
	copy(h(dst), src)
	return nil
}

func (*CPU) Download(dst []float32, src Buffer) error {
	if len(dst) > src.Len() {
		return fmt.Errorf("backend cpu: download of %d floats from a buffer of %d", len(dst), src.Len())
	}
	copy(dst, h(src))
	return nil
}

func (*CPU) Copy(dst, src Buffer, n int) { copy(h(dst)[:n], h(src)[:n]) }

func (*CPU) Zero(b Buffer) { clear(h(b)) }

func (*CPU) Gemm(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int) {
	gemm.Sgemm(transA, transB, M, N, K, alpha, h(a), lda, h(b), ldb, beta, h(c), ldc)
}

func (*CPU) GemmBF16(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int) {
	gemm.Sgemm(transA, transB, M, N, K, alpha, a.(HostBF16), lda, b.(HostBF16), ldb, beta, h(c), ldc)
}

func (*CPU) AddBias(out, bias Buffer, N, OC int) {
	o, bs := h(out), h(bias)[:OC]
	for n := 0; n < N; n++ {
		row := o[n*OC : n*OC+OC]
		for i, v := range bs {
			row[i] += v
		}
	}
}

func (*CPU) ColumnSum(sum, x Buffer, N, C int) { cpu.ColumnSum(h(sum), h(x), N, C) }
func (*CPU) Add(out, a, b Buffer, n int)       { cpu.ResidualForward(h(out), h(a), h(b), n) }

func (*CPU) Scale(x Buffer, n int, alpha float32) {
	xs := h(x)[:n]
	for i := range xs {
		xs[i] *= alpha
	}
}

func (*CPU) EmbeddingForward(out Buffer, tokens []int, wte Buffer, T, C int) {
	cpu.EmbeddingForward(h(out), tokens, h(wte), T, C)
}

func (*CPU) EmbeddingBackward(dwte, dout Buffer, tokens []int, T, C int) {
	cpu.EmbeddingBackward(h(dwte), h(dout), tokens, T, C)
}

func (*CPU) RMSNormForward(out, rstd, inp, weight Buffer, N, C int, eps float32) {
	cpu.RMSNormForward(h(out), h(rstd), h(inp), h(weight), N, C, eps)
}

func (*CPU) RMSNormBackward(dinp, dweight, dout, inp, weight, rstd Buffer, N, C int) {
	cpu.RMSNormBackward(h(dinp), h(dweight), h(dout), h(inp), h(weight), h(rstd), N, C)
}

func (*CPU) RopeForward(x, cos, sin Buffer, pos []int, T, nHeads, hd int) {
	cpu.RopeForward(h(x), h(cos), h(sin), pos, T, nHeads, hd)
}

func (*CPU) RopeBackward(dx, cos, sin Buffer, pos []int, T, nHeads, hd int) {
	cpu.RopeBackward(h(dx), h(cos), h(sin), pos, T, nHeads, hd)
}

// AttentionForward leaves att unused: AttentionBackward recomputes the
// probabilities, as on the model's own CPU path.
func (*CPU) AttentionForward(out, _, q, k, v Buffer, lens []int, nH, nKV, hd int) {
	cpu.AttentionForward(h(out), h(q), h(k), h(v), lens, nH, nKV, hd)
}

func (*CPU) AttentionBackward(dq, dk, dv, _, dout, _, q, k, v Buffer, lens []int, nH, nKV, hd int) {
	cpu.AttentionBackward(h(dq), h(dk), h(dv), h(dout), h(q), h(k), h(v), lens, nH, nKV, hd)
}

func (*CPU) AppendKV(kc, vc, k, v Buffer, slots, lens []int, KV, maxLen int) {
	for r, L := range lens {
		dst := (slots[r]*maxLen + L - 1) * KV
		copy(h(kc)[dst:dst+KV], h(k)[r*KV:r*KV+KV])
		copy(h(vc)[dst:dst+KV], h(v)[r*KV:r*KV+KV])
	}
}

func (*CPU) AttendCached(out, att, q, kc, vc Buffer, slots, lens []int, nH, nKV, hd, maxLen int) {
	C, KV := nH*hd, nKV*hd
	parallel.For(len(lens)*nH, 1, func(_, lo, hi int) {
		for task := lo; task < hi; task++ {
			r, hh := task/nH, task%nH
			L, g := lens[r], hh/(nH/nKV)
			kv := slots[r]*maxLen*KV + g*hd
			cpu.AttendHead(h(out)[r*C+hh*hd:], h(att)[task*maxLen:], h(q)[r*C+hh*hd:], h(kc)[kv:], h(vc)[kv:], 1, L-1, hd, C, KV, C)
		}
	})
}

func (*CPU) SwiGLUForward(out, gate, up Buffer, n int) {
	cpu.SwiGLUForward(h(out), h(gate), h(up), n)
}

func (*CPU) SwiGLUBackward(dgate, dup, dout, gate, up Buffer, n int) {
	cpu.SwiGLUBackward(h(dgate), h(dup), h(dout), h(gate), h(up), n)
}

func (*CPU) LogSoftmaxForward(lse, logprob, entropy, logits Buffer, targets []int, N, V int) {
	cpu.LogSoftmaxForward(h(lse), h(logprob), h(entropy), h(logits), targets, N, V)
}

func (*CPU) LogSoftmaxBackward(dlogits, logits, lse, entropy Buffer, targets []int, dlogprob, dentropy Buffer, N, V int) {
	cpu.LogSoftmaxBackward(h(dlogits), h(logits), h(lse), h(entropy), targets, h(dlogprob), h(dentropy), N, V)
}

// adamGrain is the parameters per parallel chunk of AdamW, as in optim.
const adamGrain = 1 << 16

// AdamW is the loop of optim.AdamW.Step, in the same float32 order.
func (*CPU) AdamW(params, m, v, grads Buffer, n int, s AdamWScalars) {
	p, mm, vv, g := h(params)[:n], h(m)[:n], h(v)[:n], h(grads)[:n]
	parallel.For(n, adamGrain, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			gi := g[i]
			mm[i] = s.Beta1*mm[i] + s.OneMinusBeta1*gi
			vv[i] = s.Beta2*vv[i] + s.OneMinusBeta2*gi*gi
			denom := float32(math.Sqrt(float64(vv[i])))/s.Bc2Sqrt + s.Eps
			p[i] = p[i]*s.Decay - s.StepSize*(mm[i]/denom)
		}
	})
}

func (*CPU) GradNorm(g Buffer, n int) (float64, error) { return optim.GradNorm(h(g)[:n]), nil }

func (c *CPU) Sample(logits Buffer, rows, V int, o sample.Options, rngs []*sample.RNG) ([]int, error) {
	if err := CheckSample(logits, rows, V, o, rngs); err != nil {
		return nil, err
	}
	for len(c.samplers) < rows {
		c.samplers = append(c.samplers, sample.Sampler{})
	}
	x := h(logits)
	out := make([]int, rows)
	parallel.For(rows, 1, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			out[r] = c.samplers[r].Sample(x[r*V:r*V+V], o, rngs[r])
		}
	})
	return out, nil
}

// CheckSample validates the arguments of Sample; every backend starts
// with it.
func CheckSample(logits Buffer, rows, V int, o sample.Options, rngs []*sample.RNG) error {
	switch {
	case V <= 0 || rows < 0:
		return fmt.Errorf("sample: bad shape %d rows × %d tokens", rows, V)
	case logits.Len() < rows*V:
		return fmt.Errorf("sample: %d rows × %d tokens but the logits hold %d floats", rows, V, logits.Len())
	case len(rngs) != rows:
		return fmt.Errorf("sample: %d random streams for %d rows", len(rngs), rows)
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	return nil
}
