//go:build cuda

package cuda

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/backend"
)

// Mixed precision (bf16 weights and activations, f32 master weights, f32
// accumulation) is planned as: the flat float32 parameters stay the master
// copy that AdamW updates; after each step ToBF16 refreshes a bf16 copy;
// forward and backward read the bf16 copy through cublasGemmEx
// (CUDA_R_16BF operands, CUBLAS_COMPUTE_32F) and keep bf16 activations,
// with norms, softmaxes and reductions in float32. What exists now is the
// storage type and the two conversion kernels; the GEMM path and the bf16
// variants of the kernels do not (see engine/backend/doc.go).

// BF16 is a device array of bfloat16 values (the top 16 bits of a
// float32: same range, 8 bits of mantissa).
type BF16 struct {
	ptr devptr
	n   int
}

// Len is the number of bf16 values.
func (x *BF16) Len() int { return x.n }

// AllocBF16 returns a zeroed array of n bf16 values.
func (b *Backend) AllocBF16(n int) (*BF16, error) {
	if n < 0 {
		return nil, fmt.Errorf("backend cuda: alloc of %d bf16 values", n)
	}
	defer b.enter()()
	d, err := b.alloc((n+1)/2, 4)
	if err != nil {
		return nil, err
	}
	return &BF16{ptr: d.ptr, n: n}, nil
}

// FreeBF16 releases x.
func (b *Backend) FreeBF16(x *BF16) {
	if x.ptr == 0 {
		return
	}
	defer b.enter()()
	b.sync()
	memFree(x.ptr)
	x.ptr, x.n = 0, 0
}

// ToBF16 rounds n floats of src to bf16 (nearest even) into dst.
func (b *Backend) ToBF16(dst *BF16, src backend.Buffer, n int) {
	if !b.need("f32_to_bf16", n, src) || !b.needBF16("f32_to_bf16", n, dst) {
		return
	}
	defer b.enter()()
	b.grid1("f32_to_bf16", n, dst.ptr, src, n)
}

// FromBF16 widens n bf16 values of src into dst (exact).
func (b *Backend) FromBF16(dst backend.Buffer, src *BF16, n int) {
	if !b.need("bf16_to_f32", n, dst) || !b.needBF16("bf16_to_f32", n, src) {
		return
	}
	defer b.enter()()
	b.grid1("bf16_to_f32", n, dst, src.ptr, n)
}

func (b *Backend) needBF16(op string, n int, x *BF16) bool {
	if x.n < n && b.err == nil {
		b.err = fmt.Errorf("backend cuda: %s: bf16 array holds %d values, needs %d", op, x.n, n)
	}
	return b.err == nil
}
