package train

import (
	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
)

// placer moves a model to the run's compute backend and precision:
// everything the warm start, the rollouts, the update and the checkpoints
// do to a model then runs there.
type placer func(m *model.Model) error

// placement opens the run's backend (config field backend, "" for the
// CPU) and returns its placer, which also sets activation recomputation;
// the models of the run share the instance. Config.Validate has already
// checked the settings.
func placement(name, precision string, recompute bool) (placer, backend.Backend, error) {
	if name == "" {
		name = "cpu"
	}
	b, err := backend.Open(name)
	if err != nil {
		return nil, nil, err
	}
	p := backend.Precision(precision)
	return func(m *model.Model) error {
		m.SetRecompute(recompute)
		return m.Use(b, p)
	}, b, nil
}

// newOptimizer is AdamW over n's flat parameters, weight decay on the
// matrices only (the layout marks which views decay).
func newOptimizer(n *model.Model, lr, weightDecay float64, warmup int) (*optim.AdamW, error) {
	cfg := optim.DefaultConfig()
	cfg.LR, cfg.WeightDecay = lr, weightDecay
	if warmup > 0 {
		cfg.Schedule, cfg.WarmupSteps = "warmup", warmup
	}
	return n.NewAdamW(cfg)
}

// criticFrom builds the critic: the policy's architecture with a value
// head instead of the LM head, starting from the policy's weights (RAGEN
// starts its critic from the same checkpoint as the actor). The value head
// starts at zero.
func criticFrom(policy *model.Model, seed int64) (*model.Model, error) {
	c := policy.Config
	c.LMHead, c.ValueHead = false, true
	critic, err := model.New(c, uint64(seed)^0xc1)
	if err != nil {
		return nil, err
	}
	copyShared(critic, policy)
	return critic, nil
}

// clone returns an independent copy of m (the frozen reference policy).
func clone(m *model.Model) (*model.Model, error) {
	c, err := model.New(m.Config, 0)
	if err != nil {
		return nil, err
	}
	copy(c.Params.Data, m.Params.Data)
	return c, nil
}

// copyShared copies every parameter view dst and src share by name and shape.
func copyShared(dst, src *model.Model) {
	for _, v := range dst.Layout.Views {
		w, ok := src.Layout.Lookup(v.Name)
		if !ok || w.Size != v.Size {
			continue
		}
		copy(dst.Params.Data[v.Offset:v.Offset+v.Size], src.Params.Data[w.Offset:w.Offset+w.Size])
	}
}
