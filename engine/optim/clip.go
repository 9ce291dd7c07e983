package optim

import (
	"math"

	"github.com/ragen-go/ragen/engine/backend/cpu/parallel"
)

// normGrain is the number of values per chunk of the norm reduction. It
// fixes the summation order, so it must not depend on the machine.
const normGrain = 1 << 15

// GradNorm returns the L2 norm √Σg² of the whole gradient buffer, summed in
// float64 per fixed chunk and the chunk partials added in chunk order:
// bit-identical whatever GOMAXPROCS.
func GradNorm(grads []float32) float64 {
	partial := make([]float64, parallel.Chunks(len(grads), normGrain))
	parallel.For(len(grads), normGrain, func(c, lo, hi int) {
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
	return math.Sqrt(s)
}

// ClipGradNorm scales grads in place so that their global L2 norm is at
// most maxNorm, as torch.nn.utils.clip_grad_norm_ does (coefficient
// maxNorm/(norm + 1e-6), applied only when below 1), and returns the norm
// before clipping. maxNorm ≤ 0 only measures. A NaN or infinite norm is
// returned as is and the gradients are left alone: the caller stops
// training on it.
func ClipGradNorm(grads []float32, maxNorm float64) float64 {
	norm := GradNorm(grads)
	if maxNorm <= 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm
	}
	coef := maxNorm / (norm + 1e-6)
	if coef >= 1 {
		return norm
	}
	c := float32(coef)
	parallel.For(len(grads), adamGrain, func(_, lo, hi int) {
		for i := range grads[lo:hi] {
			grads[lo+i] *= c
		}
	})
	return norm
}
