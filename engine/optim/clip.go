package optim

import (
	"math"

	"github.com/ragen-go/ragen/engine/backend"
)

// GradNorm returns the L2 norm √Σg² of the whole gradient buffer, summed in
// float64 in a fixed order by the backend (on the CPU: per fixed chunk,
// the chunk partials added in chunk order): bit-identical whatever
// GOMAXPROCS.
func GradNorm(b backend.Backend, grads backend.Buffer) (float64, error) {
	return b.GradNorm(grads, grads.Len())
}

// ClipGradNorm scales grads in place so that their global L2 norm is at
// most maxNorm, as torch.nn.utils.clip_grad_norm_ does (coefficient
// maxNorm/(norm + 1e-6), applied only when below 1), and returns the norm
// before clipping. maxNorm ≤ 0 only measures. A NaN or infinite norm is
// returned as is and the gradients are left alone: the caller stops
// training on it.
func ClipGradNorm(b backend.Backend, grads backend.Buffer, maxNorm float64) (float64, error) {
	norm, err := GradNorm(b, grads)
	if err != nil || maxNorm <= 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, err
	}
	if coef := maxNorm / (norm + 1e-6); coef < 1 {
		b.Scale(grads, grads.Len(), float32(coef))
	}
	return norm, b.Err()
}
