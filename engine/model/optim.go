package model

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/optim"
)

// NewAdamW returns AdamW over the model's flat parameters, on its backend,
// with weight decay on the matrices only (see OptimGroups).
func (m *Model) NewAdamW(cfg optim.Config) (*optim.AdamW, error) {
	if m.w16 != nil {
		return nil, fmt.Errorf("optimizer: %w", errFrozen)
	}
	return optim.New(m.b, cfg, m.Layout.Size, m.Layout.OptimGroups())
}

// Step applies one update of o (made by NewAdamW) to the parameters with
// the current gradients, refreshes their bf16 copy at BF16, and returns
// the learning rate it used.
func (m *Model) Step(o *optim.AdamW) (float64, error) {
	lr, err := o.Step(m.params, m.grads)
	if err != nil {
		return lr, err
	}
	m.Refresh()
	return lr, m.b.Err()
}

// ClipGradNorm scales the gradients to an L2 norm of at most maxNorm
// (optim.ClipGradNorm) and returns the norm before clipping.
func (m *Model) ClipGradNorm(maxNorm float64) (float64, error) {
	return optim.ClipGradNorm(m.b, m.grads, maxNorm)
}

// GradNorm returns the L2 norm of the gradients.
func (m *Model) GradNorm() (float64, error) { return optim.GradNorm(m.b, m.grads) }

// OptimGroups are the optimizer groups of a layout: one per view, with
// weight decay where the layout marks it (matrices and embeddings).
func (l *Layout) OptimGroups() []optim.Group {
	groups := make([]optim.Group, len(l.Views))
	for i, v := range l.Views {
		groups[i] = optim.Group{Offset: v.Offset, Size: v.Size, Decay: v.Decay}
	}
	return groups
}
