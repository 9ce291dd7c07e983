package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/ragen-go/ragen/engine/backend"
	"gorgonia.org/tensor"
)

// View is one named tensor inside a flat buffer: Data[Offset : Offset+Size]
// holds it row-major with the given Shape.
type View struct {
	Name   string // Hugging Face name, e.g. "model.layers.0.self_attn.q_proj.weight"
	Shape  []int  // e.g. [out, in] for a linear weight, as torch stores it
	Offset int    // first element in the flat buffer
	Size   int    // product of Shape
	Decay  bool   // AdamW weight decay applies: matrices yes, norms and biases no
}

// Layout is the size table that carves one flat []float32 into the model's
// named tensors (llm.c style). Parameters, gradients and optimizer moments
// share one Layout, so an element has the same offset in all of them.
type Layout struct {
	Views []View // in storage order
	Size  int    // total floats
	index map[string]int
}

// align is the offset granularity of views, in floats (64 bytes), so every
// tensor starts on a cache line.
const align = 16

// NewLayout builds the size table of c. The config must be valid.
func NewLayout(c Config) *Layout {
	l := &Layout{index: map[string]int{}}
	add := l.add
	d, hd, I := c.HiddenSize, c.HeadDim(), c.IntermediateSize
	q, kv := c.NumHeads*hd, c.NumKVHeads*hd
	add("model.embed_tokens.weight", true, c.VocabSize, d)
	for i := 0; i < c.NumLayers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", false, d)
		add(p+"self_attn.q_proj.weight", true, q, d)
		add(p+"self_attn.k_proj.weight", true, kv, d)
		add(p+"self_attn.v_proj.weight", true, kv, d)
		if c.AttentionBias {
			add(p+"self_attn.q_proj.bias", false, q)
			add(p+"self_attn.k_proj.bias", false, kv)
			add(p+"self_attn.v_proj.bias", false, kv)
		}
		add(p+"self_attn.o_proj.weight", true, d, q)
		add(p+"post_attention_layernorm.weight", false, d)
		add(p+"mlp.gate_proj.weight", true, I, d)
		add(p+"mlp.up_proj.weight", true, I, d)
		add(p+"mlp.down_proj.weight", true, d, I)
	}
	add("model.norm.weight", false, d)
	if c.LMHead && !c.TieWordEmbeddings {
		add("lm_head.weight", true, c.VocabSize, d)
	}
	if c.ValueHead {
		add("value_head.weight", true, 1, d)
		add("value_head.bias", false, 1)
	}
	return l
}

// add appends a view of the given shape.
func (l *Layout) add(name string, decay bool, shape ...int) {
	size := 1
	for _, s := range shape {
		size *= s
	}
	l.index[name] = len(l.Views)
	l.Views = append(l.Views, View{Name: name, Shape: shape, Offset: l.Size, Size: size, Decay: decay})
	l.Size += (size + align - 1) / align * align
}

// Lookup returns the view called name.
func (l *Layout) Lookup(name string) (View, bool) {
	i, ok := l.index[name]
	if !ok {
		return View{}, false
	}
	return l.Views[i], true
}

// Buffer is one flat allocation laid out by a Layout: the parameters, their
// gradients, or an optimizer moment.
type Buffer struct {
	Layout *Layout
	Data   []float32 // Layout.Size floats; the padding between views stays 0
}

// NewBuffer allocates a zeroed buffer for l.
func NewBuffer(l *Layout) *Buffer {
	return &Buffer{Layout: l, Data: make([]float32, l.Size)}
}

// Slice returns the floats of the named view (sharing memory), or nil if
// there is no such view.
func (b *Buffer) Slice(name string) []float32 {
	v, ok := b.Layout.Lookup(name)
	if !ok {
		return nil
	}
	return b.Data[v.Offset : v.Offset+v.Size : v.Offset+v.Size]
}

// Tensor returns the named view as a gorgonia tensor sharing the buffer's
// memory: writes through either are seen by both.
func (b *Buffer) Tensor(name string) (*tensor.Dense, error) {
	v, ok := b.Layout.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("no tensor %q (have %s)", name, b.Layout.similar(name))
	}
	return tensor.New(tensor.WithShape(v.Shape...), tensor.WithBacking(b.Slice(name))), nil
}

// Zero sets every element to 0.
func (b *Buffer) Zero() { clear(b.Data) }

// similar lists up to 5 view names sharing the longest prefix with name, for
// error messages.
func (l *Layout) similar(name string) string {
	type cand struct {
		name   string
		common int
	}
	cs := make([]cand, len(l.Views))
	for i, v := range l.Views {
		n := 0
		for n < len(v.Name) && n < len(name) && v.Name[n] == name[n] {
			n++
		}
		cs[i] = cand{v.Name, n}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].common > cs[j].common })
	var names []string
	for i := 0; i < len(cs) && i < 5; i++ {
		names = append(names, cs[i].name)
	}
	return strings.Join(names, ", ")
}

// layerWeights are one transformer block's views of a backend buffer.
type layerWeights struct {
	inNorm     backend.Buffer // [d]
	q, k, v    backend.Buffer // [nH·hd, d], [nKV·hd, d], [nKV·hd, d]
	qb, kb, vb backend.Buffer // biases, nil without attention_bias
	o          backend.Buffer // [d, nH·hd]
	postNorm   backend.Buffer // [d]
	gate, up   backend.Buffer // [I, d]
	down       backend.Buffer // [d, I]
	// qkv and gateUp are q|k|v ([nH·hd + 2·nKV·hd, d]) and gate|up ([2·I,
	// d]) as one view where the Layout stores them back to back (their
	// sizes are multiples of its alignment), nil otherwise: the decoder's
	// fused products read them without a concatenated copy.
	qkv, gateUp backend.Buffer
}

// module returns the weight of module mod.
func (w *layerWeights) module(mod module) backend.Buffer {
	return [numModules]backend.Buffer{w.q, w.k, w.v, w.o, w.gate, w.up, w.down}[mod]
}

// weights are the model's tensors inside a backend buffer laid out by the
// Layout (parameters, gradients, or the bf16 copy).
type weights struct {
	embed  backend.Buffer // [V, d]
	layers []layerWeights
	norm   backend.Buffer // [d]
	lmHead backend.Buffer // [V, d]; aliases embed when tied; nil without LM head
	valueW backend.Buffer // [d]; nil without value head
	valueB backend.Buffer // [1]
}

// carve returns the views of buf, a backend buffer of Layout.Size values.
// An adapter model's base weights are its base's (base: the base's views
// of the same kind; nil for gradients, which the frozen base has none
// of); its own buffer holds the adapters and the value head.
func (m *Model) carve(buf backend.Buffer, base *weights) weights {
	c := m.Config
	if m.base != nil {
		w := weights{layers: make([]layerWeights, c.NumLayers)}
		if base != nil {
			w = *base
		}
		if !c.LMHead {
			w.lmHead = nil
		}
		w.valueW, w.valueB = nil, nil
		if buf == nil {
			return w
		}
		for _, name := range []string{"value_head.weight", "value_head.bias"} {
			if v, ok := m.Layout.Lookup(name); ok {
				x := m.b.Slice(buf, v.Offset, v.Size)
				if name == "value_head.weight" {
					w.valueW = x
				} else {
					w.valueB = x
				}
			}
		}
		return w
	}
	return m.carveFrom(func(name string) (backend.Buffer, View, bool) {
		v, ok := m.Layout.Lookup(name)
		return buf, v, ok
	})
}

// carveSplit returns the views of a frozen base that holds its matrices
// as bf16 only (freezeBF16): those of Params.Layout from buf (its
// parameters or gradients), the frozen matrices from frozen (w16; nil for
// gradients, which they have none of).
func (m *Model) carveSplit(buf, frozen backend.Buffer) weights {
	return m.carveFrom(func(name string) (backend.Buffer, View, bool) {
		if v, ok := m.Params.Layout.Lookup(name); ok {
			return buf, v, true
		}
		v, ok := m.Layout.Lookup(name)
		return frozen, v, ok && frozen != nil
	})
}

// carveFrom returns the views of a model without adapters, at giving the
// buffer and the view of each named tensor (false: none).
func (m *Model) carveFrom(at func(name string) (backend.Buffer, View, bool)) weights {
	c := m.Config
	s := func(name string) backend.Buffer {
		buf, v, ok := at(name)
		if !ok {
			return nil
		}
		return m.b.Slice(buf, v.Offset, v.Size)
	}
	w := weights{embed: s("model.embed_tokens.weight"), norm: s("model.norm.weight"),
		valueW: s("value_head.weight"), valueB: s("value_head.bias")}
	// span is the view from the first named tensor to the end of the last
	// when they are stored back to back, nil otherwise.
	// (A span's tensors are all frozen matrices or all not.)
	span := func(names ...string) backend.Buffer {
		buf, first, ok := at(names[0])
		if !ok {
			return nil
		}
		end := first.Offset
		for _, name := range names {
			_, v, ok := at(name)
			if !ok || v.Offset != end {
				return nil
			}
			end += v.Size
		}
		return m.b.Slice(buf, first.Offset, end-first.Offset)
	}
	for i := 0; i < c.NumLayers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		w.layers = append(w.layers, layerWeights{
			qkv:    span(p+"self_attn.q_proj.weight", p+"self_attn.k_proj.weight", p+"self_attn.v_proj.weight"),
			gateUp: span(p+"mlp.gate_proj.weight", p+"mlp.up_proj.weight"),
			inNorm: s(p + "input_layernorm.weight"),
			q:      s(p + "self_attn.q_proj.weight"), k: s(p + "self_attn.k_proj.weight"), v: s(p + "self_attn.v_proj.weight"),
			qb: s(p + "self_attn.q_proj.bias"), kb: s(p + "self_attn.k_proj.bias"), vb: s(p + "self_attn.v_proj.bias"),
			o:        s(p + "self_attn.o_proj.weight"),
			postNorm: s(p + "post_attention_layernorm.weight"),
			gate:     s(p + "mlp.gate_proj.weight"), up: s(p + "mlp.up_proj.weight"), down: s(p + "mlp.down_proj.weight"),
		})
	}
	if c.LMHead {
		w.lmHead = s("lm_head.weight")
		if c.TieWordEmbeddings {
			w.lmHead = w.embed
		}
	}
	return w
}

// initParams fills p deterministically from seed: weights ~ N(0, 0.02²),
// with the projections that write into the residual stream (o_proj,
// down_proj) scaled by 1/sqrt(2·layers) as in GPT-2, so the residual
// variance does not grow with depth; norms 1; biases 0; the value head 0, so
// a fresh critic predicts 0 everywhere.
func initParams(p *Buffer, c Config, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	resid := 0.02 / math.Sqrt(2*float64(c.NumLayers))
	for _, v := range p.Layout.Views {
		x := p.Data[v.Offset : v.Offset+v.Size]
		switch {
		case strings.HasSuffix(v.Name, "norm.weight"):
			for i := range x {
				x[i] = 1
			}
		case strings.HasSuffix(v.Name, ".bias"), strings.HasPrefix(v.Name, "value_head."):
			clear(x)
		default:
			std := 0.02
			if strings.HasSuffix(v.Name, "o_proj.weight") || strings.HasSuffix(v.Name, "down_proj.weight") {
				std = resid
			}
			for i := range x {
				x[i] = float32(rng.NormFloat64() * std)
			}
		}
	}
}
