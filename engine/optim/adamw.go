package optim

import (
	"fmt"
	"math"

	"github.com/ragen-go/ragen/engine/backend"
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

// AdamW is torch.optim.AdamW (amsgrad off) over one flat parameter buffer
// on a backend: its moments live there too, and each update is the
// backend's AdamW op per group. For each parameter θ with gradient g, at
// update t = T+1:
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
	M, V   backend.Buffer // (N) first and second moments: torch's exp_avg, exp_avg_sq
	T      int            // updates done so far; torch's state["step"]
	b      backend.Backend
}

// New returns an AdamW for n parameters on b with zero moments. Groups
// must lie inside [0, n) and must not overlap.
func New(b backend.Backend, cfg Config, n int, groups []Group) (*AdamW, error) {
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
	o := &AdamW{Config: cfg, Groups: gs, b: b}
	var err error
	if o.M, err = b.Alloc(n); err != nil {
		return nil, fmt.Errorf("adamw: first moment: %w", err)
	}
	if o.V, err = b.Alloc(n); err != nil {
		b.Free(o.M)
		return nil, fmt.Errorf("adamw: second moment: %w", err)
	}
	return o, nil
}

// Free releases the moments.
func (o *AdamW) Free() {
	o.b.Free(o.M)
	o.b.Free(o.V)
}

// SetState restores the moments and the update count saved from another
// AdamW over the same parameters, so that training resumes bit-identically.
func (o *AdamW) SetState(t int, m, v []float32) error {
	switch {
	case t < 0:
		return fmt.Errorf("adamw state: step must be >= 0 (got %d)", t)
	case len(m) != o.M.Len():
		return fmt.Errorf("adamw state: first moment has %d values, want %d", len(m), o.M.Len())
	case len(v) != o.V.Len():
		return fmt.Errorf("adamw state: second moment has %d values, want %d", len(v), o.V.Len())
	}
	if err := o.b.Upload(o.M, m); err != nil {
		return fmt.Errorf("adamw state: %w", err)
	}
	if err := o.b.Upload(o.V, v); err != nil {
		return fmt.Errorf("adamw state: %w", err)
	}
	o.T = t
	return nil
}

// Scalars returns the constants of update number t (1 for the first) at
// learning rate lr, as torch computes them: Python floats (float64),
// rounded to float32 where they meet the float32 tensors; decay says
// whether weight decay applies.
func Scalars(c Config, t int, lr float64, decay bool) backend.AdamWScalars {
	s := backend.AdamWScalars{
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

// Step applies one update with the scheduled learning rate LRAt(T) and
// returns that rate. grads is read, not modified (clip it first).
func (o *AdamW) Step(params, grads backend.Buffer) (float64, error) {
	if params.Len() != o.M.Len() || grads.Len() != o.M.Len() {
		return 0, fmt.Errorf("adamw: got %d parameters and %d gradients, want %d of each", params.Len(), grads.Len(), o.M.Len())
	}
	lr := o.LRAt(o.T)
	o.T++
	for _, g := range o.Groups {
		sl := func(x backend.Buffer) backend.Buffer { return o.b.Slice(x, g.Offset, g.Size) }
		o.b.AdamW(sl(params), sl(o.M), sl(o.V), sl(grads), g.Size, Scalars(o.Config, o.T, lr, g.Decay))
	}
	return lr, o.b.Err()
}
