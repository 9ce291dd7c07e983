//go:build cuda

package cuda

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/backend"
)

// Mixed precision (backend.BF16, see Transformer.SetPrecision): the float32
// parameters stay the master copy that AdamW updates, f32_to_bf16 rounds
// them into a bf16 copy after each step, activations and gradients are
// rounded by the same kernel as they enter a product, and GemmBF16 runs
// cublasGemmEx on the bf16 operands with float32 accumulation and output.

// bf16buf is device memory of bfloat16 values (the top 16 bits of a
// float32: same range, 8 significant bits): AllocBF16's, or a Slice of one.
type bf16buf struct {
	ptr   devptr
	n     int  // bf16 values
	owner bool // made by AllocBF16, freed by Free
}

// Len is the number of bf16 values.
func (x *bf16buf) Len() int { return x.n }

// BF16 marks a bf16 buffer (backend.IsBF16).
func (*bf16buf) BF16() {}

// addBF16 returns the address of bf16 value number i from p.
func (p devptr) addBF16(i int) devptr { return p + devptr(2*i) }

// AllocBF16 returns a zeroed array of n bf16 values.
func (b *Backend) AllocBF16(n int) (backend.Buffer, error) {
	if n < 0 {
		return nil, fmt.Errorf("backend cuda: alloc of %d bf16 values", n)
	}
	defer b.enter()()
	d, err := b.alloc((n+1)/2, 4)
	if err != nil {
		return nil, err
	}
	return &bf16buf{ptr: d.ptr, n: n, owner: true}, nil
}

// half returns the bf16 device array behind a backend.Buffer.
func (b *Backend) half(x backend.Buffer) *bf16buf {
	d, ok := x.(*bf16buf)
	if !ok && b.err == nil {
		b.err = fmt.Errorf("backend cuda: got a %T buffer where a bf16 one (AllocBF16) belongs", x)
	}
	if !ok {
		return &bf16buf{}
	}
	return d
}

// ToBF16 rounds n floats of src to bf16 (nearest even) into dst.
func (b *Backend) ToBF16(dst, src backend.Buffer, n int) {
	if !b.need("f32_to_bf16", n, src, dst) {
		return
	}
	defer b.enter()()
	b.grid1("f32_to_bf16", n, b.half(dst), b.buf(src), n)
}

// FromBF16 widens n bf16 values of src into the float32 buffer dst
// (exact); the parity tests read bf16 arrays back with it.
func (b *Backend) FromBF16(dst, src backend.Buffer, n int) {
	if !b.need("bf16_to_f32", n, dst, src) {
		return
	}
	defer b.enter()()
	b.grid1("bf16_to_f32", n, b.buf(dst), b.half(src), n)
}

// GemmBF16 is Gemm with bf16 a and b: cublasGemmEx with CUDA_R_16BF
// inputs, a CUDA_R_32F output and CUBLAS_COMPUTE_32F (float32
// accumulation, on tensor cores where the device has them).
func (b *Backend) GemmBF16(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, bb backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	if b.err != nil || M == 0 || N == 0 {
		return
	}
	A, B, C := b.half(a), b.half(bb), b.buf(c)
	if b.err != nil {
		return
	}
	defer b.enter()()
	if err := b.blas.gemmBF16(transA, transB, M, N, K, alpha, A.ptr, lda, B.ptr, ldb, beta, C.ptr, ldc); err != nil {
		b.err = err
	}
}

// GemmBF16B is Gemm with a float32 a and a bf16 bb: cuBLAS's GemmEx takes
// no float32 A with a bf16 B, so bb is widened (exact) into a scratch
// buffer per product and the float32 Gemm runs on it — the bits of Gemm
// on the widened values, at the cost of one pass over the weights.
func (b *Backend) GemmBF16B(transA, transB bool, M, N, K int, alpha float32, a backend.Buffer, lda int, bb backend.Buffer, ldb int, beta float32, c backend.Buffer, ldc int) {
	if b.err != nil || M == 0 || N == 0 {
		return
	}
	B := b.half(bb)
	defer b.enter()()
	b.wide = b.grow(b.wide, B.n)
	if b.err != nil {
		return
	}
	b.grid1("bf16_to_f32", B.n, b.wide, B, B.n)
	b.gemm(transA, transB, M, N, K, alpha, b.buf(a).ptr, lda, b.wide.ptr, ldb, beta, b.buf(c).ptr, ldc)
}
