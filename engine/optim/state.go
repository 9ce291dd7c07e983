package optim

import (
	"fmt"
	"strconv"

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
// Optimizer and OptimizerMeta. The tensors are views of M and V: write
// them before the next Step.
func (o *AdamW) StateTensors() ([]checkpoint.Tensor, map[string]string) {
	n := len(o.M)
	return []checkpoint.Tensor{
		{Name: StateM, Shape: []int{n}, Data: o.M},
		{Name: StateV, Shape: []int{n}, Data: o.V},
	}, map[string]string{StateStep: strconv.Itoa(o.T)}
}

// LoadState restores the state written by StateTensors, reading the moments
// straight into M and V; resuming then gives bit-identical updates.
func (o *AdamW) LoadState(f *checkpoint.File) error {
	s, ok := f.Metadata()[StateStep]
	if !ok {
		return fmt.Errorf("checkpoint %s: no %q in the metadata (not an AdamW state)", f.Path(), StateStep)
	}
	t, err := strconv.Atoi(s)
	if err != nil || t < 0 {
		return fmt.Errorf("checkpoint %s: %s must be a count >= 0 (got %q)", f.Path(), StateStep, s)
	}
	shape := []int{len(o.M)}
	for _, name := range []string{StateM, StateV} { // check both before changing either
		if in, ok := f.Info(name); !ok || len(in.Shape) != 1 || in.Shape[0] != shape[0] {
			return f.Load(name, shape, nil) // the error that names the problem
		}
	}
	if err := f.Load(StateM, shape, o.M); err != nil {
		return err
	}
	if err := f.Load(StateV, shape, o.V); err != nil {
		return err
	}
	o.T = t
	return nil
}
