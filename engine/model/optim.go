package model

import "github.com/ragen-go/ragen/engine/optim"

// NewAdamW returns AdamW over the model's flat parameters with weight decay
// on the matrices only (see OptimGroups).
func (m *Model) NewAdamW(cfg optim.Config) (*optim.AdamW, error) {
	return optim.New(cfg, m.Layout.Size, m.Layout.OptimGroups())
}

// OptimGroups are the optimizer groups of a layout: one per view, with
// weight decay where the layout marks it (matrices and embeddings).
func (l *Layout) OptimGroups() []optim.Group {
	groups := make([]optim.Group, len(l.Views))
	for i, v := range l.Views {
		groups[i] = optim.Group{Offset: v.Offset, Size: v.Size, Decay: v.Decay}
	}
	return groups
}
