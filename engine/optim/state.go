package optim

import (
	"fmt"
	"strconv"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/checkpoint"
)

// Names of AdamW's state in optimizer.safetensors: the two moment buffers
// as flat tensors of N values and the update count as metadata.
const (
	StateM    = "adamw.exp_avg"
	StateV    = "adamw.exp_avg_sq"
	StateStep = "adamw.step"
)

// StateTensors returns the optimizer state for checkpoint.Checkpoint's
// Optimizer and OptimizerMeta: views of M and V on the CPU (write them
// before the next Step), copies downloaded from a device backend.
func (o *AdamW) StateTensors() ([]checkpoint.Tensor, map[string]string, error) {
	n := o.M.Len()
	host := func(x backend.Buffer) ([]float32, error) {
		if f, ok := backend.HostFloats(x); ok {
			return f, nil
		}
		f := make([]float32, n)
		return f, o.b.Download(f, x)
	}
	m, err := host(o.M)
	if err != nil {
		return nil, nil, fmt.Errorf("adamw state: %w", err)
	}
	v, err := host(o.V)
	if err != nil {
		return nil, nil, fmt.Errorf("adamw state: %w", err)
	}
	return []checkpoint.Tensor{
		{Name: StateM, Shape: []int{n}, Data: m},
		{Name: StateV, Shape: []int{n}, Data: v},
	}, map[string]string{StateStep: strconv.Itoa(o.T)}, nil
}

// LoadState restores the state written by StateTensors (straight into M
// and V on the CPU); resuming then gives bit-identical updates.
func (o *AdamW) LoadState(f *checkpoint.File) error {
	s, ok := f.Metadata()[StateStep]
	if !ok {
		return fmt.Errorf("checkpoint %s: no %q in the metadata (not an AdamW state)", f.Path(), StateStep)
	}
	t, err := strconv.Atoi(s)
	if err != nil || t < 0 {
		return fmt.Errorf("checkpoint %s: %s must be a count >= 0 (got %q)", f.Path(), StateStep, s)
	}
	shape := []int{o.M.Len()}
	for _, name := range []string{StateM, StateV} { // check both before changing either
		if in, ok := f.Info(name); !ok || len(in.Shape) != 1 || in.Shape[0] != shape[0] {
			return f.Load(name, shape, nil) // the error that names the problem
		}
	}
	m, mok := backend.HostFloats(o.M)
	v, vok := backend.HostFloats(o.V)
	if !mok || !vok {
		m, v = make([]float32, shape[0]), make([]float32, shape[0])
	}
	if err := f.Load(StateM, shape, m); err != nil {
		return err
	}
	if err := f.Load(StateV, shape, v); err != nil {
		return err
	}
	if !mok || !vok {
		return o.SetState(t, m, v)
	}
	o.T = t
	return nil
}
