package backend

import (
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/optim"
)

// AdamWScalars are the per-update constants of the AdamW kernel, computed
// on the host in float64 and rounded to float32 as PyTorch does. For each
// parameter θ with gradient g:
//
//	m ← β1·m + (1−β1)·g,   v ← β2·v + (1−β2)·g²
//	θ ← θ·Decay − StepSize · m / (√v/Bc2Sqrt + ε)
type AdamWScalars struct {
	Decay, Beta1, OneMinusBeta1, Beta2, OneMinusBeta2, Eps, StepSize, Bc2Sqrt float32
}

// NewAdamWScalars returns the constants of update number t (1 for the
// first) at learning rate lr; decay says whether weight decay applies.
// They equal those of optim.AdamW.Step.
func NewAdamWScalars(c optim.Config, t int, lr float64, decay bool) AdamWScalars {
	s := AdamWScalars{
		Decay: 1,
		Beta1: float32(c.Beta1), OneMinusBeta1: float32(1 - c.Beta1),
		Beta2: float32(c.Beta2), OneMinusBeta2: float32(1 - c.Beta2),
		Eps:      float32(c.Eps),
		StepSize: float32(lr / (1 - math.Pow(c.Beta1, float64(t)))),
		Bc2Sqrt:  float32(math.Sqrt(1 - math.Pow(c.Beta2, float64(t)))),
	}
	if decay {
		s.Decay = float32(1 - lr*c.WeightDecay)
	}
	return s
}

// AdamW is optim.AdamW with its moments on a backend: parameters,
// gradients and optimizer state never leave the device.
type AdamW struct {
	optim.Config
	Groups []optim.Group
	M, V   Buffer // first and second moments, one float per parameter
	T      int    // updates done so far
	b      Backend
}

// NewAdamW allocates zero moments for n parameters on b. Groups are
// validated as optim.New does.
func NewAdamW(b Backend, cfg optim.Config, n int, groups []optim.Group) (*AdamW, error) {
	ref, err := optim.New(cfg, n, groups) // validation only
	if err != nil {
		return nil, err
	}
	o := &AdamW{Config: cfg, Groups: ref.Groups, b: b}
	if o.M, err = b.Alloc(n); err != nil {
		return nil, fmt.Errorf("adamw: first moment: %w", err)
	}
	if o.V, err = b.Alloc(n); err != nil {
		b.Free(o.M)
		return nil, fmt.Errorf("adamw: second moment: %w", err)
	}
	return o, nil
}

// Step applies one update with the scheduled rate LRAt(T) and returns it.
// It updates params only: a Transformer at BF16 needs Refresh afterwards.
func (o *AdamW) Step(params, grads Buffer) (float64, error) {
	if params.Len() != o.M.Len() || grads.Len() != o.M.Len() {
		return 0, fmt.Errorf("adamw: got %d parameters and %d gradients, want %d of each", params.Len(), grads.Len(), o.M.Len())
	}
	lr := o.LRAt(o.T)
	o.T++
	for _, g := range o.Groups {
		s := NewAdamWScalars(o.Config, o.T, lr, g.Decay)
		sl := func(x Buffer) Buffer { return o.b.Slice(x, g.Offset, g.Size) }
		o.b.AdamW(sl(params), sl(o.M), sl(o.V), sl(grads), g.Size, s)
	}
	return lr, o.b.Err()
}

// Free releases the moments.
func (o *AdamW) Free() {
	o.b.Free(o.M)
	o.b.Free(o.V)
}

// ClipGradNorm scales g so that its L2 norm is at most maxNorm, as
// optim.ClipGradNorm does, and returns the norm before clipping.
func ClipGradNorm(b Backend, g Buffer, maxNorm float64) (float64, error) {
	norm, err := b.GradNorm(g, g.Len())
	if err != nil || maxNorm <= 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, err
	}
	if coef := maxNorm / (norm + 1e-6); coef < 1 {
		b.Scale(g, g.Len(), float32(coef))
	}
	return norm, b.Err()
}

// RelErr is max|got − want| / max|want| (0 when both are all zeros): the
// error measure of the parity tests, scaled by the largest value so that
// entries near zero do not dominate.
func RelErr(got, want []float32) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d, m float64
	for i := range want {
		d = max(d, math.Abs(float64(got[i])-float64(want[i])))
		m = max(m, math.Abs(float64(want[i])))
	}
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	if m == 0 {
		return d
	}
	return d / m
}
