package model

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/backend/cpu"
)

// Model is a decoder-only transformer with its parameters, gradients and
// the workspace of its last Forward. Not safe for concurrent use; a Decoder
// reads the parameters only and may run while the Model is idle.
type Model struct {
	Config Config
	Layout *Layout // size table shared by Params, Grads and optimizer state
	Params *Buffer // every parameter, one allocation
	Grads  *Buffer // ∂loss/∂Params, accumulated by Backward; cleared by ZeroGrad

	p, g     weights   // views of Params and Grads
	cos, sin []float32 // rotary tables [MaxPositions, head_dim/2]
	ws       workspace
}

// New builds a model with parameters initialised deterministically from
// seed (see initParams), or an error naming the invalid config field.
func New(c Config, seed uint64) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid model config: %w", err)
	}
	l := NewLayout(c)
	m := &Model{Config: c, Layout: l, Params: NewBuffer(l), Grads: NewBuffer(l)}
	m.p, m.g = carve(m.Params, c), carve(m.Grads, c)
	half := c.HeadDim() / 2
	m.cos = make([]float32, c.MaxPositions*half)
	m.sin = make([]float32, c.MaxPositions*half)
	cpu.RopeTables(m.cos, m.sin, c.MaxPositions, c.HeadDim(), c.RopeTheta)
	initParams(m.Params, c, seed)
	return m, nil
}

// ZeroGrad clears the gradient buffer (Backward accumulates into it).
func (m *Model) ZeroGrad() { m.Grads.Zero() }

// NumParams is the number of parameters (tied weights counted once).
func (m *Model) NumParams() int {
	n := 0
	for _, v := range m.Layout.Views {
		n += v.Size
	}
	return n
}
