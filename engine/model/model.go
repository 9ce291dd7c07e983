package model

import (
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
)

// Model is a decoder-only transformer with its parameters, gradients and
// the workspace of its last Forward, computing on a backend.Backend: the
// CPU by default, any other through Use. It is the one transformer of the
// engine — forward, backward, KV-cache decoding, generation, value head,
// attention maps, bf16 products — written once against the backend's ops.
//
// Params is the host copy of the parameters, laid out by Layout. On the
// CPU it is the very memory the backend computes on; on a device backend
// SyncParams downloads the current values into it and Upload sends it
// back after a change on the host. Not safe for concurrent use; a Decoder
// reads the parameters only and may run while the Model is idle.
type Model struct {
	Config Config
	Layout *Layout // size table shared by Params, Grads and optimizer state
	// Params is every parameter, one allocation (host copy); of a frozen
	// base holding its matrices as bf16 only (WithLoRA), the others,
	// under a layout of their own (Params.Layout; Tensors gives all).
	Params *Buffer
	// Grads is ∂loss/∂Params on the host: on the CPU the backend's own
	// gradients, accumulated by Backward and cleared by ZeroGrad; on a
	// device backend nil until SyncGrads downloads them.
	Grads *Buffer

	b             backend.Backend
	precision     backend.Precision
	params, grads backend.Buffer // Layout.Size floats each, on b
	half          backend.Buffer // BF16: params rounded to bf16; nil at F32
	// w16, for a frozen base whose matrices are all bf16-exact (see
	// freezeBF16), is the bf16 copy of every view of Layout: the block
	// matrices and an untied LM head are read from it at any precision
	// (it is half at BF16), and Params (and params, grads) hold only the
	// other views, laid out by Params.Layout. nil otherwise.
	w16       backend.Buffer
	p, g, h   weights           // views of params, grads and half
	xs        [3]backend.Buffer // BF16: rounded product inputs (see in)
	cos, sin  backend.Buffer    // rotary tables [MaxPositions, head_dim/2]
	ws        workspace
	recompute bool // SetRecompute

	// An adapter model (WithLoRA): the frozen model whose weights it
	// computes with, its adapters' configuration and, per layer and
	// module, the adapter's views (nil where none).
	base *Model
	lora *LoRA
	ad   [][numModules]*adapter

	// panels, of the frozen base of adapters, are its products packed
	// for decoding, kept for every decoder of its adapter models
	// (basePanels); nil until the first.
	panels *products
}

// New builds a model on the CPU backend with parameters initialised
// deterministically from seed (see initParams), or an error naming the
// invalid config field.
func New(c Config, seed uint64) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid model config: %w", err)
	}
	l := NewLayout(c)
	m := &Model{Config: c, Layout: l, Params: NewBuffer(l)}
	initParams(m.Params, c, seed)
	if err := m.Use(cpu.New(), backend.F32); err != nil {
		return nil, err
	}
	return m, nil
}

// Backend is the backend the model computes on.
func (m *Model) Backend() backend.Backend { return m.b }

// Precision is the precision of the model's matrix products.
func (m *Model) Precision() backend.Precision { return m.precision }

// Use moves the model to backend b with its matrix products at precision
// p, keeping its parameters (the host copy is brought up to date from the
// old backend first) and dropping its gradients and workspace:
//
//   - F32: every product reads float32 inputs (the default);
//   - BF16: every product (Backend.GemmBF16, or a Packer's product of bf16
//     weights) reads its two inputs rounded to bfloat16, to nearest with
//     ties to even, and accumulates and writes float32. Weights come from
//     a bf16 copy of the float32 master parameters, made here and by
//     Refresh; activations and gradients are rounded as they enter a
//     product (the layer's input in forward and for the weight gradient,
//     the output gradient for both backward products). Activations are
//     stored in float32 between ops, and every other op — embedding,
//     RMSNorm, RoPE, attention (its q·kᵀ and p·v included), SwiGLU,
//     log-softmax, AdamW, the gradient norm — reads and writes float32 as
//     at F32 (decision 20).
//
// The same model at the same precision computes the same floats on every
// backend up to the order of sums; on the CPU, F32 is the engine's fast
// path and BF16 its bf16 twin.
func (m *Model) Use(b backend.Backend, p backend.Precision) error {
	p, err := backend.ParsePrecision(string(p))
	if err != nil {
		return err
	}
	if b == nil {
		return errors.New("model: no backend")
	}
	if m.base != nil && (m.base.b != b || m.base.precision != p) {
		return fmt.Errorf("model: adapters compute with their base, which is on %s at %s: move the base (Use), then make its adapters", m.base.b.Name(), m.base.precision)
	}
	if m.b != nil {
		if err := m.SyncParams(); err != nil {
			return err
		}
	}
	// A frozen base's bf16 weights (w16) stay, or move to b.
	w16 := m.w16
	if w16 != nil && m.b != nil && m.b != b {
		if w16, err = moveBF16(b, m.b, w16); err != nil {
			return fmt.Errorf("backend %s: the frozen base's bf16 weights: %w", b.Name(), err)
		}
	} else if w16 != nil {
		m.w16, m.half = nil, nil // kept: not for release to free
	}
	m.release()
	m.w16 = w16
	m.b, m.precision = b, backend.F32
	fail := func(err error) error {
		m.release()
		m.b = nil
		return fmt.Errorf("backend %s: %w", b.Name(), err)
	}
	if hm, ok := b.(backend.HostMemory); ok {
		m.Grads = NewBuffer(m.Params.Layout)
		m.params, m.grads = hm.Wrap(m.Params.Data), hm.Wrap(m.Grads.Data)
	} else {
		m.Grads = nil
		if m.params, err = b.Alloc(m.Params.Layout.Size); err != nil {
			return fail(fmt.Errorf("parameters: %w", err))
		}
		if m.grads, err = b.Alloc(m.Params.Layout.Size); err != nil {
			return fail(fmt.Errorf("gradients: %w", err))
		}
		if err := b.Upload(m.params, m.Params.Data); err != nil {
			return fail(fmt.Errorf("parameters: %w", err))
		}
	}
	var bp, bh *weights
	if m.base != nil {
		bp, bh = &m.base.p, &m.base.h
	}
	if m.w16 != nil {
		m.p, m.g = m.carveSplit(m.params, m.w16), m.carveSplit(m.grads, nil)
	} else {
		m.p, m.g = m.carve(m.params, bp), m.carve(m.grads, nil)
	}
	c := m.Config
	half := c.HeadDim() / 2
	cos, sin := make([]float32, c.MaxPositions*half), make([]float32, c.MaxPositions*half)
	cpu.RopeTables(cos, sin, c.MaxPositions, c.HeadDim(), c.RopeTheta)
	if m.cos, err = m.upload(cos); err == nil {
		m.sin, err = m.upload(sin)
	}
	if err != nil {
		return fail(fmt.Errorf("rotary tables: %w", err))
	}
	if p == backend.BF16 && m.w16 != nil {
		m.half, m.h, m.precision = m.w16, m.carve(m.w16, nil), p
	} else if p == backend.BF16 {
		if m.half, err = b.AllocBF16(m.Layout.Size); err != nil {
			return fail(fmt.Errorf("bf16 copy of the parameters: %w", err))
		}
		m.h = m.carve(m.half, bh)
		m.precision = p
		m.Refresh()
	}
	m.carveAdapters()
	return b.Err()
}

// Refresh rounds the parameters into their bf16 copy at BF16 (a no-op at
// F32) and drops the panels a frozen base keeps for its adapters'
// decoders (basePanels), which are made again from the new weights. The
// optimizer step (Step) and Upload call it; anything else that changes
// the parameters on the backend must too, or the products go on reading
// the old weights.
func (m *Model) Refresh() {
	m.dropPanels()
	if m.half != nil && m.w16 == nil { // a frozen base's bf16 weights never change
		m.b.ToBF16(m.half, m.params, m.Layout.Size)
	}
}

// SyncParams brings Params up to date with the backend's parameters (a
// no-op on the CPU, where they are the same memory).
func (m *Model) SyncParams() error {
	if _, ok := backend.HostFloats(m.params); ok || m.params == nil {
		return nil
	}
	if err := m.b.Download(m.Params.Data, m.params); err != nil {
		return fmt.Errorf("backend %s: parameters: %w", m.b.Name(), err)
	}
	return nil
}

// SyncGrads brings Grads up to date with the backend's gradients,
// allocating it on a device backend's first call.
func (m *Model) SyncGrads() error {
	if _, ok := backend.HostFloats(m.grads); ok {
		return nil
	}
	if m.Grads == nil {
		m.Grads = NewBuffer(m.Layout)
	}
	if err := m.b.Download(m.Grads.Data, m.grads); err != nil {
		return fmt.Errorf("backend %s: gradients: %w", m.b.Name(), err)
	}
	return nil
}

// UploadGrads makes the backend use Grads again after they were changed
// on the host (a data-parallel run's summed gradient); a no-op on the CPU,
// where they are the backend's own memory.
func (m *Model) UploadGrads() error {
	if _, ok := backend.HostFloats(m.grads); ok {
		return nil
	}
	if err := m.b.Upload(m.grads, m.Grads.Data); err != nil {
		return fmt.Errorf("backend %s: gradients: %w", m.b.Name(), err)
	}
	return nil
}

// Upload makes the backend use Params again after they were changed on
// the host (a checkpoint loaded into them, a rewind), and refreshes the
// bf16 copy.
func (m *Model) Upload() error {
	if _, ok := backend.HostFloats(m.params); !ok {
		if err := m.b.Upload(m.params, m.Params.Data); err != nil {
			return fmt.Errorf("backend %s: parameters: %w", m.b.Name(), err)
		}
	}
	m.Refresh()
	return m.b.Err()
}

// Free releases what the model holds on a device backend; the model is
// unusable afterwards. On a backend that computes on host memory (the
// CPU) it does nothing: the garbage collector frees the model with its
// last reference.
func (m *Model) Free() {
	if _, ok := m.b.(backend.HostMemory); ok || m.b == nil {
		return
	}
	m.release()
	m.b = nil
}

// release frees every backend buffer of the model and forgets them.
func (m *Model) release() {
	if m.b == nil {
		return
	}
	m.dropPanels()
	half := m.half
	if m.w16 != nil {
		half = m.w16 // m.half is m.w16 or nil
	}
	bufs := append([]backend.Buffer{half, m.xs[0], m.xs[1], m.xs[2], m.cos, m.sin}, m.ws.buffers()...)
	for _, l := range m.ad {
		for _, ad := range l {
			if ad != nil {
				bufs = append(bufs, ad.t, ad.bt)
			}
		}
	}
	if _, ok := backend.HostFloats(m.params); !ok {
		bufs = append(bufs, m.params, m.grads)
	}
	for _, x := range bufs {
		if x != nil {
			m.b.Free(x)
		}
	}
	m.params, m.grads, m.half, m.w16, m.xs, m.cos, m.sin = nil, nil, nil, nil, [3]backend.Buffer{}, nil, nil
	m.p, m.g, m.h, m.ad = weights{}, weights{}, weights{}, nil
	m.ws = workspace{}
}

// dropPanels frees the packed products a frozen base keeps for its
// adapters' decoders (basePanels): its weights changed, or it is released.
func (m *Model) dropPanels() {
	m.panels.free(m.b)
	m.panels = nil
}

// moveBF16 returns a new bf16 buffer on to with the values of x, a bf16
// buffer of from: a chunk at a time widened on from, through host memory,
// and rounded back on to, both exact.
func moveBF16(to, from backend.Backend, x backend.Buffer) (backend.Buffer, error) {
	const chunk = 1 << 20
	n := x.Len()
	host := make([]float32, min(chunk, n))
	y, err := to.AllocBF16(n)
	if err != nil {
		return nil, err
	}
	src, err := from.Alloc(len(host))
	if err != nil {
		to.Free(y)
		return nil, err
	}
	defer from.Free(src)
	dst, err := to.Alloc(len(host))
	if err != nil {
		to.Free(y)
		return nil, err
	}
	defer to.Free(dst)
	for off := 0; off < n; off += chunk {
		k := min(chunk, n-off)
		from.FromBF16(src, from.Slice(x, off, k), k)
		if err := from.Download(host[:k], src); err != nil {
			to.Free(y)
			return nil, err
		}
		if err := to.Upload(dst, host[:k]); err != nil {
			to.Free(y)
			return nil, err
		}
		to.ToBF16(to.Slice(y, off, k), dst, k)
	}
	if err := to.Err(); err != nil {
		to.Free(y)
		return nil, err
	}
	return y, nil
}

func (m *Model) upload(x []float32) (backend.Buffer, error) {
	buf, err := m.b.Alloc(len(x))
	if err != nil {
		return nil, err
	}
	return buf, m.b.Upload(buf, x)
}

// ZeroGrad clears the gradients (Backward accumulates into them).
func (m *Model) ZeroGrad() { m.b.Zero(m.grads) }

// NumParams is the number of parameters (tied weights counted once).
func (m *Model) NumParams() int {
	n := 0
	for _, v := range m.Layout.Views {
		n += v.Size
	}
	return n
}
