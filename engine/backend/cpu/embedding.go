package cpu

import (
	"math"

	"github.com/ragen-go/ragen/engine/parallel"
)

// EmbeddingForward gathers rows of the token embedding:
// out[t,:] = wte[tokens[t],:] for T tokens, C wide. Token ids must be valid.
func EmbeddingForward(out []float32, tokens []int, wte []float32, T, C int) {
	parallel.For(T, grain(C), func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			copy(out[t*C:t*C+C], wte[tokens[t]*C:tokens[t]*C+C])
		}
	})
}

// EmbeddingForwardBF16 is EmbeddingForward from a table of bf16 values
// (a frozen embedding held as bf16 only), each widened as it is gathered:
// exact, so the rows are those of the float32 table of the same values.
func EmbeddingForwardBF16(out []float32, tokens []int, wte []uint16, T, C int) {
	parallel.For(T, grain(C), func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			row := wte[tokens[t]*C : tokens[t]*C+C]
			for i, x := range row {
				out[t*C+i] = math.Float32frombits(uint32(x) << 16)
			}
		}
	})
}

// EmbeddingBackward scatter-adds dwte[tokens[t],:] += dout[t,:]. Chunks own
// disjoint column ranges and visit tokens in order, so repeated tokens sum
// in the same order whatever the number of workers.
func EmbeddingBackward(dwte, dout []float32, tokens []int, T, C int) {
	parallel.For(C, max(16, grain(T)), func(_, lo, hi int) {
		for t := 0; t < T; t++ {
			dst := dwte[tokens[t]*C+lo : tokens[t]*C+hi]
			for i, v := range dout[t*C+lo : t*C+hi] {
				dst[i] += v
			}
		}
	})
}
