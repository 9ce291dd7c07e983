package model

import "github.com/ragen-go/ragen/engine/optim"

// NewAdamW returns AdamW over the model's flat parameters with weight decay
// on the matrices only (the layout marks which views decay).
func (m *Model) NewAdamW(cfg optim.Config) (*optim.AdamW, error) {
	groups := make([]optim.Group, len(m.Layout.Views))
	for i, v := range m.Layout.Views {
		groups[i] = optim.Group{Offset: v.Offset, Size: v.Size, Decay: v.Decay}
	}
	return optim.New(cfg, m.Layout.Size, groups)
}
