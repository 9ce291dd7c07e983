package optim

import (
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/backend/cpu/parallel"
)

// Config holds AdamW's hyper-parameters and the learning-rate schedule.
// Start from DefaultConfig; Validate names the first bad field.
type Config struct {
	// LR is the peak learning rate (the schedule scales it). Default 3e-4.
	LR float64
	// Beta1 is the decay of the first moment (mean of gradients). Default 0.9.
	Beta1 float64
	// Beta2 is the decay of the second moment (mean of squared gradients).
	// Default 0.999, PyTorch's and veRL's; 0.95 is the usual choice for LLM
	// pre-training, where it reacts faster to loss spikes.
	Beta2 float64
	// Eps is added to the root of the second moment. Default 1e-8.
	Eps float64
	// WeightDecay is the decoupled decay coefficient λ, applied only to
	// groups with Decay set. Default 0.01, PyTorch's AdamW default and
	// veRL's actor setting; GPT-style pre-training uses 0.1.
	WeightDecay float64

	// Schedule is the learning-rate schedule: "constant" (default), "warmup"
	// (linear warm-up, then constant) or "cosine" (linear warm-up, then a
	// cosine decay to MinLRRatio·LR at TotalSteps).
	Schedule string
	// WarmupSteps is the length of the linear warm-up, in updates. Default 0.
	WarmupSteps int
	// TotalSteps is where the cosine schedule reaches its floor, in updates
	// (cosine only). Default 0.
	TotalSteps int
	// MinLRRatio is the cosine floor as a fraction of LR. Default 0.1.
	MinLRRatio float64
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{LR: 3e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01,
		Schedule: "constant", MinLRRatio: 0.1}
}

// Validate reports the first invalid field by its config name.
func (c Config) Validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case bad(c.LR) || c.LR <= 0:
		return fmt.Errorf("lr: must be > 0 (got %v)", c.LR)
	case bad(c.Beta1) || c.Beta1 < 0 || c.Beta1 >= 1:
		return fmt.Errorf("beta1: must be in [0, 1) (got %v)", c.Beta1)
	case bad(c.Beta2) || c.Beta2 < 0 || c.Beta2 >= 1:
		return fmt.Errorf("beta2: must be in [0, 1) (got %v)", c.Beta2)
	case bad(c.Eps) || c.Eps <= 0:
		return fmt.Errorf("eps: must be > 0 (got %v)", c.Eps)
	case bad(c.WeightDecay) || c.WeightDecay < 0:
		return fmt.Errorf("weight_decay: must be >= 0 (got %v)", c.WeightDecay)
	case c.WarmupSteps < 0:
		return fmt.Errorf("warmup_steps: must be >= 0 (got %d)", c.WarmupSteps)
	}
	switch c.Schedule {
	case "constant", "warmup":
	case "cosine":
		if c.TotalSteps <= c.WarmupSteps {
			return fmt.Errorf("total_steps: must be > warmup_steps (%d) for the cosine schedule (got %d)", c.WarmupSteps, c.TotalSteps)
		}
		if bad(c.MinLRRatio) || c.MinLRRatio < 0 || c.MinLRRatio > 1 {
			return fmt.Errorf("min_lr_ratio: must be in [0, 1] (got %v)", c.MinLRRatio)
		}
	default:
		return fmt.Errorf("schedule: unknown schedule %q (want constant, warmup or cosine)", c.Schedule)
	}
	return nil
}

// LRAt returns the learning rate of the update that follows `step` updates
// (step 0 is the first update). Warm-up is linear from LR/WarmupSteps at
// step 0 to LR at step WarmupSteps-1, as nanoGPT does — unlike Hugging
// Face's schedules, the first update does not get a zero rate. Cosine:
//
//	lr = min + (LR - min)·(1 + cos(π·(step - warmup)/(total - warmup)))/2,  min = MinLRRatio·LR
//
// and min from TotalSteps on. "warmup" is "constant" with the warm-up ramp.
func (c Config) LRAt(step int) float64 {
	lr := c.LR
	if c.Schedule != "constant" && step < c.WarmupSteps {
		return lr * float64(step+1) / float64(c.WarmupSteps)
	}
	if c.Schedule != "cosine" {
		return c.LR
	}
	floor := c.MinLRRatio * lr
	progress := min(1, float64(step-c.WarmupSteps)/float64(c.TotalSteps-c.WarmupSteps))
	return floor + (lr-floor)*0.5*(1+math.Cos(math.Pi*progress))
}

// Group is a range [Offset, Offset+Size) of the flat parameter buffer;
// Decay says whether weight decay applies to it (weight matrices and
// embeddings: yes; norms and biases: no).
type Group struct {
	Offset, Size int
	Decay        bool
}

// AdamW is torch.optim.AdamW (amsgrad off) over one flat parameter buffer.
// For each parameter θ with gradient g, at update t = T+1:
//
//	θ ← θ·(1 - lr·λ)                  (groups with Decay only)
//	m ← β1·m + (1-β1)·g
//	v ← β2·v + (1-β2)·g²
//	θ ← θ - lr/(1-β1ᵗ) · m / (√v/√(1-β2ᵗ) + ε)
//
// exactly in PyTorch's order of operations (bias corrections in float64,
// the elementwise work in float32). Parameters outside every group are
// frozen: neither they nor their moments change.
type AdamW struct {
	Config
	Groups []Group
	M, V   []float32 // (N) first and second moments: torch's exp_avg, exp_avg_sq
	T      int       // updates done so far; torch's state["step"]
}

// New returns an AdamW for n parameters with zero moments. Groups must lie
// inside [0, n) and must not overlap.
func New(cfg Config, n int, groups []Group) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("adamw config: %w", err)
	}
	if n < 0 {
		return nil, fmt.Errorf("adamw: parameter count must be >= 0 (got %d)", n)
	}
	gs := append([]Group(nil), groups...)
	for i, g := range gs {
		if g.Offset < 0 || g.Size < 0 || g.Offset+g.Size > n {
			return nil, fmt.Errorf("adamw: group %d [%d, %d) lies outside the %d parameters", i, g.Offset, g.Offset+g.Size, n)
		}
		for j, h := range gs[:i] {
			if g.Offset < h.Offset+h.Size && h.Offset < g.Offset+g.Size {
				return nil, fmt.Errorf("adamw: group %d [%d, %d) overlaps group %d [%d, %d)", i, g.Offset, g.Offset+g.Size, j, h.Offset, h.Offset+h.Size)
			}
		}
	}
	return &AdamW{Config: cfg, Groups: gs, M: make([]float32, n), V: make([]float32, n)}, nil
}

// SetState restores the moments and the update count saved from another
// AdamW over the same parameters, so that training resumes bit-identically.
func (o *AdamW) SetState(t int, m, v []float32) error {
	switch {
	case t < 0:
		return fmt.Errorf("adamw state: step must be >= 0 (got %d)", t)
	case len(m) != len(o.M):
		return fmt.Errorf("adamw state: first moment has %d values, want %d", len(m), len(o.M))
	case len(v) != len(o.V):
		return fmt.Errorf("adamw state: second moment has %d values, want %d", len(v), len(o.V))
	}
	copy(o.M, m)
	copy(o.V, v)
	o.T = t
	return nil
}

// adamGrain is the number of parameters per parallel chunk: large enough
// that waking a worker (20–100 µs here) is worth it.
const adamGrain = 1 << 16

// Step applies one update with the scheduled learning rate LRAt(T) and
// returns that rate. grads is read, not modified (clip it first).
func (o *AdamW) Step(params, grads []float32) (float64, error) {
	if len(params) != len(o.M) || len(grads) != len(o.M) {
		return 0, fmt.Errorf("adamw: got %d parameters and %d gradients, want %d of each", len(params), len(grads), len(o.M))
	}
	lr := o.LRAt(o.T)
	o.T++
	t := float64(o.T)
	// Scalars as torch computes them: Python floats (float64), rounded to
	// float32 where they meet the float32 tensors.
	k := adamwScalars{
		beta1: float32(o.Beta1), oneMinusBeta1: float32(1 - o.Beta1),
		beta2: float32(o.Beta2), oneMinusBeta2: float32(1 - o.Beta2),
		eps:      float32(o.Eps),
		stepSize: float32(lr / (1 - math.Pow(o.Beta1, t))),
		bc2Sqrt:  float32(math.Sqrt(1 - math.Pow(o.Beta2, t))),
	}
	for _, g := range o.Groups {
		k.decay = 1
		if g.Decay {
			k.decay = float32(1 - lr*o.WeightDecay)
		}
		p, gr := params[g.Offset:g.Offset+g.Size], grads[g.Offset:g.Offset+g.Size]
		m, v := o.M[g.Offset:g.Offset+g.Size], o.V[g.Offset:g.Offset+g.Size]
		parallel.For(g.Size, adamGrain, func(_, lo, hi int) {
			adamwKernel(p[lo:hi], m[lo:hi], v[lo:hi], gr[lo:hi], k)
		})
	}
	return lr, nil
}

// adamwScalars are the per-update constants of adamwKernel, in float32.
type adamwScalars struct {
	decay, beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, stepSize, bc2Sqrt float32
}

// adamwKernel updates one chunk (p, m, v, g of the same length) in torch's
// order: decay, moments, then θ -= stepSize · m / (√v/bc2Sqrt + ε).
func adamwKernel(p, m, v, g []float32, k adamwScalars) {
	m, v, g = m[:len(p)], v[:len(p)], g[:len(p)]
	for i := range p {
		gi := g[i]
		m[i] = k.beta1*m[i] + k.oneMinusBeta1*gi
		v[i] = k.beta2*v[i] + k.oneMinusBeta2*gi*gi
		denom := float32(math.Sqrt(float64(v[i])))/k.bc2Sqrt + k.eps
		p[i] = p[i]*k.decay - k.stepSize*(m[i]/denom)
	}
}
