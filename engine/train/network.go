package train

import (
	"fmt"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/rollout"
)

// network is one of the trainer's models — the policy, the critic, the
// frozen reference — on its compute path: everything the warm start, the
// rollouts, the update and the checkpoints do to a model goes through it.
// Two implementations:
//
//   - hostNet, backend "cpu": model.Model itself, the CPU fast path (its
//     fused kernels, and a decoder with packed weights);
//   - deviceNet, any other backend ("cuda"; "cpu-ref", the reference
//     implementation of engine/backend on the CPU, which checks this path
//     without a GPU): backend.Transformer, backend.AdamW and
//     backend.Decoder, with parameters, gradients, activations, optimizer
//     state and KV caches on the backend. The host keeps a copy of the
//     parameters, refreshed only when asked for (Host).
type network interface {
	Config() model.Config
	// Forward, Backward and ZeroGrad are model.Model's.
	Forward(tokens, lens []int, want model.Want) (*model.Output, error)
	Backward(g model.Grad) error
	ZeroGrad()
	// ClipGradNorm scales the gradients to an L2 norm of at most maxNorm
	// and returns the norm before (optim.ClipGradNorm).
	ClipGradNorm(maxNorm float64) (float64, error)
	// NewOptimizer returns AdamW over the parameters, weight decay on the
	// matrices (model.Layout.OptimGroups).
	NewOptimizer(cfg optim.Config) (optimizer, error)
	// Decoder returns an empty decoder over the current parameters with
	// room for seqs sequences, for one rollout.
	Decoder(seqs int) (rollout.Decoder, error)
	// Host returns the network as a host model with the current
	// parameters: the model itself, or the host copy, downloaded.
	Host() (*model.Model, error)
	// Upload makes the network use the host model's parameters again,
	// after they were changed in place (Resume, a rewind).
	Upload() error
	// Free releases what the network holds on its backend.
	Free()
}

// optimizer is AdamW bound to one network's parameters and gradients.
type optimizer interface {
	// Step applies one update and returns the learning rate it used.
	Step() (float64, error)
	// StateTensors and LoadState save and restore the state in
	// optim.AdamW's checkpoint format, whatever the path.
	StateTensors() ([]checkpoint.Tensor, map[string]string, error)
	LoadState(f *checkpoint.File) error
	// Free releases the state held on a backend.
	Free()
}

// wrapper makes the network of a host model on the run's compute path.
type wrapper func(m *model.Model) (network, error)

// networks returns the wrapper of the run's backend, and the backend
// instance the networks share (nil for "cpu", the host path), with the
// products of device networks at precision. Config.Validate has already
// checked both.
func networks(name, precision string) (wrapper, backend.Backend, error) {
	if name == "" || name == "cpu" {
		return func(m *model.Model) (network, error) { return hostNet{m}, nil }, nil, nil
	}
	b, err := backend.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return func(m *model.Model) (network, error) {
		n, err := newDeviceNet(b, m, backend.Precision(precision))
		if err != nil {
			return nil, err // not a nil *deviceNet in a non-nil network
		}
		return n, nil
	}, b, nil
}

// hostNet is the CPU fast path: model.Model.
type hostNet struct{ m *model.Model }

func (n hostNet) Config() model.Config { return n.m.Config }
func (n hostNet) Forward(tokens, lens []int, want model.Want) (*model.Output, error) {
	return n.m.Forward(tokens, lens, want)
}
func (n hostNet) Backward(g model.Grad) error { return n.m.Backward(g) }
func (n hostNet) ZeroGrad()                   { n.m.ZeroGrad() }
func (n hostNet) ClipGradNorm(maxNorm float64) (float64, error) {
	return optim.ClipGradNorm(n.m.Grads.Data, maxNorm), nil
}
func (n hostNet) NewOptimizer(cfg optim.Config) (optimizer, error) {
	o, err := n.m.NewAdamW(cfg)
	if err != nil {
		return nil, err
	}
	return hostOpt{o, n.m}, nil
}

// Decoder is a new model.Decoder: it packs the current weights.
func (n hostNet) Decoder(int) (rollout.Decoder, error) {
	d, err := n.m.NewDecoder()
	if err != nil {
		return nil, err
	}
	return d, nil
}
func (n hostNet) Host() (*model.Model, error) { return n.m, nil }
func (n hostNet) Upload() error               { return nil }
func (n hostNet) Free()                       {}

type hostOpt struct {
	o *optim.AdamW
	m *model.Model
}

func (o hostOpt) Step() (float64, error) { return o.o.Step(o.m.Params.Data, o.m.Grads.Data) }
func (o hostOpt) StateTensors() ([]checkpoint.Tensor, map[string]string, error) {
	t, meta := o.o.StateTensors()
	return t, meta, nil
}
func (o hostOpt) LoadState(f *checkpoint.File) error { return o.o.LoadState(f) }
func (o hostOpt) Free()                              {}

// deviceNet is a network on a backend.
type deviceNet struct {
	b    backend.Backend
	host *model.Model // parameters as of the last Host or Upload
	tr   *backend.Transformer
	dec  *backend.Decoder // kept across rollouts: it reads the current parameters
}

// newDeviceNet uploads m's parameters to b, with products at precision
// p; m becomes the host copy.
func newDeviceNet(b backend.Backend, m *model.Model, p backend.Precision) (*deviceNet, error) {
	tr, err := backend.NewTransformer(b, m.Config, m.Params.Data)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", b.Name(), err)
	}
	if err := tr.SetPrecision(p); err != nil {
		tr.Free()
		return nil, fmt.Errorf("backend %s: %w", b.Name(), err)
	}
	return &deviceNet{b: b, host: m, tr: tr}, nil
}

func (n *deviceNet) Config() model.Config { return n.host.Config }
func (n *deviceNet) Forward(tokens, lens []int, want model.Want) (*model.Output, error) {
	return n.tr.Forward(tokens, lens, want)
}
func (n *deviceNet) Backward(g model.Grad) error { return n.tr.Backward(g) }
func (n *deviceNet) ZeroGrad()                   { n.tr.ZeroGrad() }
func (n *deviceNet) ClipGradNorm(maxNorm float64) (float64, error) {
	return backend.ClipGradNorm(n.b, n.tr.Grads, maxNorm)
}
func (n *deviceNet) NewOptimizer(cfg optim.Config) (optimizer, error) {
	o, err := backend.NewAdamW(n.b, cfg, n.tr.Layout.Size, n.tr.Layout.OptimGroups())
	if err != nil {
		return nil, err
	}
	return &deviceOpt{o, n}, nil
}

// Decoder returns the network's decoder, emptied, or a new one when it has
// fewer than seqs slots. Its caches grow on the device as sequences do, up
// to max_position_embeddings.
func (n *deviceNet) Decoder(seqs int) (rollout.Decoder, error) {
	if n.dec != nil && n.dec.S >= seqs {
		for _, id := range n.dec.IDs() { // left by a rollout that failed
			n.dec.Remove(id)
		}
		return n.dec, nil
	}
	if n.dec != nil {
		seqs = max(seqs, n.dec.S)
		n.dec.Free()
		n.dec = nil
	}
	d, err := n.tr.NewDecoder(seqs, n.host.Config.MaxPositions)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", n.b.Name(), err)
	}
	n.dec = d
	return d, nil
}

func (n *deviceNet) Host() (*model.Model, error) {
	if err := n.b.Download(n.host.Params.Data, n.tr.Params); err != nil {
		return nil, fmt.Errorf("backend %s: parameters: %w", n.b.Name(), err)
	}
	return n.host, nil
}

func (n *deviceNet) Upload() error {
	if err := n.b.Upload(n.tr.Params, n.host.Params.Data); err != nil {
		return fmt.Errorf("backend %s: parameters: %w", n.b.Name(), err)
	}
	n.tr.Refresh() // the bf16 copy, at bf16
	return n.b.Err()
}

func (n *deviceNet) Free() {
	if n.dec != nil {
		n.dec.Free()
		n.dec = nil
	}
	n.tr.Free()
}

// deviceOpt is backend.AdamW on a deviceNet; its state crosses to the
// host only for checkpoints, in optim.AdamW's format.
type deviceOpt struct {
	o *backend.AdamW
	n *deviceNet
}

// Step updates the float32 parameters and then, at bf16, their bf16 copy.
func (o *deviceOpt) Step() (float64, error) {
	lr, err := o.o.Step(o.n.tr.Params, o.n.tr.Grads)
	if err != nil {
		return lr, err
	}
	o.n.tr.Refresh()
	return lr, o.n.b.Err()
}

func (o *deviceOpt) Free() { o.o.Free() }

func (o *deviceOpt) StateTensors() ([]checkpoint.Tensor, map[string]string, error) {
	h := optim.AdamW{M: make([]float32, o.o.M.Len()), V: make([]float32, o.o.V.Len()), T: o.o.T}
	if err := o.n.b.Download(h.M, o.o.M); err != nil {
		return nil, nil, fmt.Errorf("backend %s: optimizer state: %w", o.n.b.Name(), err)
	}
	if err := o.n.b.Download(h.V, o.o.V); err != nil {
		return nil, nil, fmt.Errorf("backend %s: optimizer state: %w", o.n.b.Name(), err)
	}
	t, meta := h.StateTensors()
	return t, meta, nil
}

func (o *deviceOpt) LoadState(f *checkpoint.File) error {
	h := optim.AdamW{M: make([]float32, o.o.M.Len()), V: make([]float32, o.o.V.Len())}
	if err := h.LoadState(f); err != nil {
		return err
	}
	if err := o.n.b.Upload(o.o.M, h.M); err != nil {
		return fmt.Errorf("backend %s: optimizer state: %w", o.n.b.Name(), err)
	}
	if err := o.n.b.Upload(o.o.V, h.V); err != nil {
		return fmt.Errorf("backend %s: optimizer state: %w", o.n.b.Name(), err)
	}
	o.o.T = h.T
	return nil
}
