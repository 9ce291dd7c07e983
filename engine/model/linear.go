package model

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/backend"
)

// mat returns the weights the products read: views of the parameters at
// F32, of their bf16 copy at BF16. Biases and norm weights always come
// from the float32 parameters (m.p).
func (m *Model) mat() *weights {
	if m.half != nil {
		return &m.h
	}
	return &m.p
}

// growHalf makes the bf16 scratch slots hold n[i] values, at BF16.
func (m *Model) growHalf(n ...int) error {
	if m.half == nil {
		return nil
	}
	for i, k := range n {
		if k == 0 || m.xs[i] != nil && m.xs[i].Len() >= k {
			continue
		}
		if m.xs[i] != nil {
			m.b.Free(m.xs[i])
			m.xs[i] = nil
		}
		var err error
		if m.xs[i], err = m.b.AllocBF16(k); err != nil {
			return fmt.Errorf("bf16 scratch: %w", err)
		}
	}
	return nil
}

// in returns x (n floats) as an input of a product: x itself at F32, and
// at BF16 x rounded into scratch slot 0 (activations), 1 (output
// gradients) or 2 (an adapter's rank-r intermediates), valid until the
// next in with that slot. An input shared by
// several products (the layer input of q, k and v) is rounded once.
func (m *Model) in(slot int, x backend.Buffer, n int) backend.Buffer {
	if m.half == nil {
		return x
	}
	m.b.ToBF16(m.xs[slot], x, n)
	return m.xs[slot]
}

// gemm is Backend.Gemm at F32 and Backend.GemmBF16 at BF16; a and b come
// from in and mat. At F32 a b held as bf16 only (a frozen base's matrix,
// freezeBF16) runs GemmBF16B: the bits of Gemm on its float32 values.
func (m *Model) gemm(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, b backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	switch {
	case m.half != nil:
		m.b.GemmBF16(transA, transB, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc)
	case backend.IsBF16(b):
		m.b.GemmBF16B(transA, transB, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc)
	default:
		m.b.Gemm(transA, transB, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// linear is a linear layer as torch stores it: out[N,OC] = x[N,C] ·
// weight[OC,C]ᵀ + bias[OC] (bias may be nil), with x from in and weight
// from mat.
func (m *Model) linear(out, x, weight, bias backend.Buffer, N, C, OC int) {
	m.gemm(false, true, N, OC, C, 1, x, C, weight, C, 0, out, OC)
	if bias != nil {
		m.b.AddBias(out, bias, N, OC)
	}
}

// How linearBackward writes dinp: the beta of its product.
const (
	setGrad float32 = 0 // dinp = dout·weight
	addGrad float32 = 1 // dinp += dout·weight
)

// linearBackward computes dinp = beta·dinp + dout·weight (beta setGrad or
// addGrad) and accumulates dweight += doutᵀ·x and dbias += Σₙ dout[n]
// (dinp, dweight and dbias may be nil: not needed, or frozen), with x (the
// layer's input) from in and weight from mat; dout is float32, rounded
// here for the products. With linear these are the three layouts of Gemm
// the engine uses (NT, NN, TN). ad is the layer's adapter (nil: none),
// whose gradients and part of dinp are added. Setting dinp gives the
// values of adding into zeros without writing the zeros first (+0 + s =
// s); only a sum that underflows to zero (or that VDPBF16PS flushes below
// 2⁻¹²⁶) may now keep a −0 where adding made it +0, and every later use
// of these buffers adds or multiplies it into sums, where ±0 give the same
// result.
func (m *Model) linearBackward(dinp, dweight, dbias, dout, x, weight backend.Buffer, ad *adapter, N, C, OC int, beta float32) {
	g := m.in(1, dout, N*OC)
	if dinp != nil {
		m.gemm(false, false, N, C, OC, 1, g, OC, weight, C, beta, dinp, C)
	}
	if dweight != nil {
		m.gemm(true, false, OC, C, N, 1, g, OC, x, C, 1, dweight, C)
	}
	if dbias != nil {
		m.b.ColumnSum(dbias, dout, N, OC)
	}
	m.adaptBackward(ad, dinp, g, x, N)
}

// adapterAt returns layer l's adapter of module mod, nil when it has none.
func (m *Model) adapterAt(l int, mod module) *adapter {
	if m.ad == nil {
		return nil
	}
	return m.ad[l][mod]
}

// rank is the adapters' rank, 0 without adapters.
func (m *Model) rank() int {
	if m.lora == nil {
		return 0
	}
	return m.lora.Rank
}
