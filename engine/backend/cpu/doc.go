// Package cpu is the CPU backend (Backend, registered as "cpu"): the
// transformer kernels of this package on host slices (Host buffers are
// plain []float32, so host access costs nothing), the weights of decoding
// packed once (Packer), and a fused decoding attention over a KV cache
// that grows per sequence.
//
// bf16 buffers (HostBF16) hold two bytes a value, and packed weights whose
// values are all bf16 — a bf16 buffer, or float32 weights loaded from a
// bf16 checkpoint — keep bf16 panels: the products widen them in
// registers, exactly, so they compute the float32 numbers from half the
// bytes (decision 44). Freed packed weights lend their memory to the next
// decoder's (recycled).
//
// The kernels are written llm.c style:
// each op is a Forward/Backward pair on flat row-major []float32 buffers with
// the dimensions passed explicitly, in the argument order
// (outputs, saved buffers, inputs, weights, dims). Backward functions
// accumulate (+=) into every gradient they are given, so the caller zeroes
// gradient buffers first and several contributions sum naturally.
//
// Every matrix product goes through package gemm; loops run in parallel
// with parallel.For on fixed chunks. Reductions across rows (weight and bias
// gradients, embedding scatter-add) are split by columns, each column summed
// over rows in row order, so results are bit-identical whatever GOMAXPROCS.
//
// Attention computes only the key blocks a row block can see (attBlock rows
// at a time), which skips most of the masked half, and does not keep the
// probabilities: the backward pass recomputes them block by block, to the
// same floats (an L-token sequence has nH·L² of them per layer). A decoding
// step (one new query per sequence) goes through AttendLast: per group of
// query heads sharing a key/value head, softmax(q·kᵀ)·v streamed from the
// cache in place (dot products of the stored keys, a weighted sum of the
// stored values), so nothing is packed.
//
// Exponentials (softmax, SwiGLU, log-softmax) go through expInPlace, whose
// blocks of 8 run in an AVX2+FMA kernel generated with avo by
// internal/asmgen (`go generate`; a test fails when asm_amd64.s is stale).
// The same generator writes the vector loops that take the long stretches
// of the elementwise kernels (vector.go; RoPE, SwiGLU, RMSNorm, the
// softmax's maximum, shift and scale): the Go compiler does not
// vectorise, and a scalar max(m, x) loop alone took 60% of the softmax.
// They compute each element with the Go loop's own operations in its
// order, never fused, and sums that must run in order (a row's Σ) stay
// chains of scalar additions, four rows' chains interleaved: the results
// are the plain loops' bits (plain_test.go, softmax_test.go), so a
// notebook's numbers do not depend on the machine's vector units.
//
// The kernels are written plainly first. Their oracles are the float64
// twins in kernels_test.go (plain loops, finite differences); an optimised
// rewrite of a kernel keeps the plain version next to it and is tested
// against both.
package cpu

// grain returns the rows per parallel chunk for rows of the given cost (in
// floats touched): chunks of at least ~32k floats, since waking a worker
// costs 20–100 µs on the target machines. It depends on the cost only, never
// on the number of workers.
func grain(rowCost int) int {
	const work = 1 << 15
	if rowCost <= 0 {
		return work
	}
	return max(1, work/rowCost)
}
