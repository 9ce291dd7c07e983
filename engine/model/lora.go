package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
)

// LoRA configures low-rank adapters on a frozen base model (Hu et al.
// 2021, as PEFT implements them): each targeted linear layer y = x·Wᵀ + b
// becomes
//
//	y = x·Wᵀ + b + (α/r)·(x·Aᵀ)·Bᵀ,   A [r, in], B [out, r],
//
// and only A and B train. A starts uniform in ±1/√in (PEFT's
// kaiming_uniform with a = √5), B at zero, so a fresh adapter computes
// the base's outputs exactly. JSON names are PEFT's adapter_config.json.
type LoRA struct {
	// Rank r of each adapter.
	Rank int `json:"r" flag:"rank" help:"train adapters of this rank on the frozen policy instead of all its weights (0: full fine-tuning); the critic gets its own adapters on the same base, the base is the KL reference"`
	// Alpha scales the adapters' output by Alpha/Rank.
	Alpha float64 `json:"lora_alpha" flag:"alpha" help:"scaling numerator: adapters add (alpha/rank)·x·Aᵀ·Bᵀ (0: 2 × rank)"`
	// Targets names the adapted linear layers: q_proj, k_proj, v_proj,
	// o_proj, gate_proj, up_proj, down_proj, or "all-linear" for all
	// seven.
	Targets []string `json:"target_modules" flag:"targets" help:"comma-separated modules the adapters target: q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj or all-linear (default all-linear)"`
}

// module is a linear layer of a block that an adapter can target.
type module int

const (
	modQ module = iota
	modK
	modV
	modO
	modGate
	modUp
	modDown
	numModules
)

// moduleNames are the modules' Hugging Face names within a block.
var moduleNames = [numModules]string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}

// shortName is a module's target name ("q_proj").
func (mod module) shortName() string {
	n := moduleNames[mod]
	return n[strings.IndexByte(n, '.')+1:]
}

// dims returns a module's input and output widths.
func (mod module) dims(c Config) (in, out int) {
	d, C, KV, I := c.HiddenSize, c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim(), c.IntermediateSize
	switch mod {
	case modQ:
		return d, C
	case modK, modV:
		return d, KV
	case modO:
		return C, d
	case modGate, modUp:
		return d, I
	}
	return I, d
}

// modules returns the targeted modules in block order.
func (l LoRA) modules() []module {
	var mods []module
	for mod := range numModules {
		if slices.Contains(l.Targets, "all-linear") || slices.Contains(l.Targets, mod.shortName()) {
			mods = append(mods, mod)
		}
	}
	return mods
}

// Validate reports the first invalid field, named as in adapter_config.json.
func (l LoRA) Validate() error {
	if l.Rank < 1 {
		return fmt.Errorf("r: must be ≥ 1 (got %d)", l.Rank)
	}
	if !(l.Alpha > 0) || math.IsInf(l.Alpha, 0) {
		return fmt.Errorf("lora_alpha: must be a finite number > 0 (got %g)", l.Alpha)
	}
	if len(l.Targets) == 0 {
		return errors.New("target_modules: empty (name some of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, or all-linear)")
	}
	for _, t := range l.Targets {
		ok := t == "all-linear"
		for mod := range numModules {
			ok = ok || t == mod.shortName()
		}
		if !ok {
			return fmt.Errorf("target_modules: unknown %q (valid: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, all-linear)", t)
		}
	}
	return nil
}

// WithDefaults fills what a setting may leave out: Alpha 0 becomes
// 2 × Rank and no Targets "all-linear". ragen train and the DSL apply it
// before the config is validated and hashed.
func (l LoRA) WithDefaults() LoRA {
	if l.Alpha == 0 {
		l.Alpha = 2 * float64(l.Rank)
	}
	if len(l.Targets) == 0 {
		l.Targets = []string{"all-linear"}
	}
	return l
}

// Scale is Alpha/Rank, the factor of the adapters' output.
func (l LoRA) Scale() float32 { return float32(l.Alpha / float64(l.Rank)) }

// adapterName is the name of a LoRA tensor (which is "lora_A" or "lora_B")
// of module mod in layer i: PEFT's name without its "base_model.model."
// prefix.
func adapterName(i int, mod module, which string) string {
	return fmt.Sprintf("model.layers.%d.%s.%s.weight", i, moduleNames[mod], which)
}

// newLoRALayout is the layout of an adapter model's own parameters: per
// layer, each targeted module's A then B, then the value head when c has
// one.
func newLoRALayout(c Config, l LoRA) *Layout {
	lay := &Layout{index: map[string]int{}}
	for i := range c.NumLayers {
		for _, mod := range l.modules() {
			in, out := mod.dims(c)
			lay.add(adapterName(i, mod, "lora_A"), true, l.Rank, in)
			lay.add(adapterName(i, mod, "lora_B"), true, out, l.Rank)
		}
	}
	if c.ValueHead {
		lay.add("value_head.weight", true, 1, c.HiddenSize)
		lay.add("value_head.bias", false, 1)
	}
	return lay
}

// adapter is one targeted module's views: A and B in the parameters, their
// bf16 copies, their gradients, and the saved x·Aᵀ of the last Forward.
type adapter struct {
	a, b, ha, hb, da, db backend.Buffer
	t                    backend.Buffer // [T, r]
	bt                   backend.Buffer // t with a prefixed batch's rows (batchActs), for Backward
	in, out              int
}

// WithLoRA returns a model that computes with m's weights, frozen, plus
// fresh adapters of l (random from seed) as its only trainable parameters
// (with a value head instead of the LM head when valueHead is set: a
// critic on the policy's base). It shares m's memory — m itself stays the
// model without adapters, the reference policy at no cost — and lives on
// m's backend at m's precision. Move m first, then make its adapters:
// moving m afterwards (Use) leaves them reading memory m no longer uses.
// When every matrix of m is bf16-exact (a model loaded from bf16
// safetensors), m keeps them as bf16 only from here on (freezeBF16): half
// the bytes, the same numbers.
func (m *Model) WithLoRA(l LoRA, valueHead bool, seed uint64) (*Model, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if m.base != nil {
		return nil, errors.New("lora: the model already has adapters (make them on its base)")
	}
	if !m.Config.LMHead {
		return nil, errors.New("lora: the base has no LM head (adapters go on a policy's base)")
	}
	if err := m.freezeBF16(); err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	c := m.Config
	if valueHead {
		c.LMHead, c.ValueHead = false, true
	}
	lay := newLoRALayout(c, l)
	a := &Model{Config: c, Layout: lay, Params: NewBuffer(lay), base: m, lora: &l}
	rng := rand.New(rand.NewPCG(seed, 0x10a))
	for _, v := range lay.Views {
		if strings.HasSuffix(v.Name, "lora_A.weight") {
			bound := 1 / math.Sqrt(float64(v.Shape[1]))
			x := a.Params.Data[v.Offset : v.Offset+v.Size]
			for i := range x {
				x[i] = float32((2*rng.Float64() - 1) * bound)
			}
		}
	}
	if err := a.Use(m.b, m.precision); err != nil {
		return nil, err
	}
	return a, nil
}

// keepFrozenF32, set by a test, keeps a frozen base's float32 matrices
// (the path before freezeBF16, to compare with).
var keepFrozenF32 = false

// frozenView reports whether the view called name is a matrix a frozen
// base holds as bf16 only when every such matrix is bf16-exact: a block's
// projections and an untied LM head. The embedding (and a head tied to
// it) goes with them when it is bf16-exact too (frozenEmbed); norms and
// biases, a few KB, stay float32.
func frozenView(v View) bool {
	return v.Decay && v.Name != embedName && !strings.HasPrefix(v.Name, "value_head.")
}

// embedName is the token embedding's view.
const embedName = "model.embed_tokens.weight"

// frozenSplit returns the layout of the views a frozen base keeps as
// float32 in Params: every view of l but the frozen matrices, and but the
// embedding when embed16 (it is bf16 too).
func frozenSplit(l *Layout, embed16 bool) *Layout {
	rest := &Layout{index: map[string]int{}}
	for _, v := range l.Views {
		if !frozenView(v) && !(embed16 && v.Name == embedName) {
			rest.add(v.Name, v.Decay, v.Shape...)
		}
	}
	return rest
}

// freezeBF16 makes m, about to become a frozen base, hold its matrices
// (frozenView) as bf16 only when every one of them is bf16-exact (a model
// loaded from bf16 safetensors and not trained since), and its embedding
// too when it is: one bf16 copy of the Layout (w16, also the bf16 weights
// at BF16), and Params holding the other views only. Widening a bf16
// value is exact and the products and the embedding's row gather read it
// widened (GemmBF16B, EmbeddingForward; decision 44), so every number
// stays the same; the float32 matrices' memory is freed (Qwen2.5-0.5B: 2
// bytes a frozen parameter). A base with any other value keeps its
// float32 Params. (NewFrozen makes the same model without the float32
// copy, straight from a bf16 checkpoint.)
func (m *Model) freezeBF16() error {
	if m.w16 != nil || keepFrozenF32 || m.base != nil {
		return nil
	}
	if err := m.SyncParams(); err != nil {
		return err
	}
	for _, v := range m.Layout.Views {
		if frozenView(v) && !gemm.ExactBF16(m.Params.Data[v.Offset:v.Offset+v.Size]) {
			return nil
		}
	}
	embed16 := gemm.ExactBF16(m.Params.Slice(embedName))
	b, p := m.b, m.precision
	// Both copies of the weights are held for a moment: drop the
	// gradients first (a frozen base gets none; Layout.Size floats, which
	// the runtime may have zeroed, so resident) and return what the
	// collector can free (a load's buffers), so the peak is the two copies.
	if _, ok := backend.HostFloats(m.grads); !ok && m.grads != nil {
		b.Free(m.grads)
	}
	m.Grads, m.grads, m.g = nil, nil, weights{}
	debug.FreeOSMemory()
	w16, err := b.AllocBF16(m.Layout.Size)
	if err != nil {
		return fmt.Errorf("bf16 copy of the frozen base: %w", err)
	}
	b.ToBF16(w16, m.params, m.Layout.Size) // exact on the frozen views
	if err := b.Err(); err != nil {
		return err
	}
	params := NewBuffer(frozenSplit(m.Layout, embed16))
	for _, v := range params.Layout.Views {
		copy(params.Slice(v.Name), m.Params.Slice(v.Name))
	}
	m.release()
	m.b, m.Params, m.Grads, m.w16 = nil, params, nil, w16
	if err := m.Use(b, p); err != nil {
		return err
	}
	// Hand the float32 copy (Qwen2.5-0.5B: 2 GB) back to the system now:
	// left to the collector, it would stay resident while the first
	// training step takes fresh pages for its activations.
	debug.FreeOSMemory()
	return nil
}

// WeightSource gives a model's parameters view by view (NewFrozen reads
// a checkpoint through it).
type WeightSource interface {
	// BF16 reports whether view v is stored as bfloat16, which ReadBF16
	// reads without widening.
	BF16(v View) bool
	// Read fills dst (v.Size floats) with view v's values.
	Read(v View, dst []float32) error
	// ReadBF16 fills dst (v.Size values) with the bits of view v's
	// bfloat16 values; only called where BF16(v).
	ReadBF16(v View, dst []uint16) error
}

// NewFrozen builds on the CPU the model of c whose parameters src gives,
// to serve only as the frozen base of adapters (WithLoRA) or to decode:
// the model New, reading src and WithLoRA's freezeBF16 would make,
// without the float32 copy of its matrices that they hold on the way.
// When src stores every matrix (frozenView) as bf16 — a bf16 checkpoint,
// as Qwen2.5's are — they are read straight into bf16 storage (w16), the
// embedding too when it is bf16, and Params holds only the other views:
// half the bytes, and the numbers of the float32 model, bit for bit
// (widening is exact); its Decoder multiplies by them where they are
// stored (decision 59). Otherwise it reads the float32 model and freezes
// it as WithLoRA would. A model holding its matrices as bf16 only cannot
// train them itself (NewAdamW, Restore refuse it); its adapters train.
func NewFrozen(c Config, src WeightSource) (*Model, error) {
	l := NewLayout(c)
	all, embed16 := true, false
	for _, v := range l.Views {
		if frozenView(v) {
			all = all && src.BF16(v)
		} else if v.Name == embedName {
			embed16 = src.BF16(v)
		}
	}
	if !all || keepFrozenF32 {
		m, err := New(c, 0)
		if err != nil {
			return nil, err
		}
		for _, v := range l.Views {
			if err := src.Read(v, m.Params.Slice(v.Name)); err != nil {
				return nil, err
			}
		}
		return m, m.freezeBF16()
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid model config: %w", err)
	}
	m := &Model{Config: c, Layout: l, Params: NewBuffer(frozenSplit(l, embed16))}
	w16 := make([]uint16, l.Size)
	for _, v := range l.Views {
		var err error
		if _, ok := m.Params.Layout.Lookup(v.Name); ok {
			err = src.Read(v, m.Params.Slice(v.Name))
		} else {
			err = src.ReadBF16(v, w16[v.Offset:v.Offset+v.Size:v.Offset+v.Size])
		}
		if err != nil {
			return nil, err
		}
	}
	// The float32 views' slots of w16 hold their values rounded, as
	// freezeBF16's ToBF16 of the whole Layout leaves them: at BF16 a head
	// tied to a float32 embedding reads its slot.
	b := cpu.New()
	for _, v := range m.Params.Layout.Views {
		w, _ := l.Lookup(v.Name)
		b.ToBF16(cpu.HostBF16(w16[w.Offset:w.Offset+w.Size]), b.Wrap(m.Params.Slice(v.Name)), v.Size)
	}
	m.w16 = cpu.HostBF16(w16)
	if err := m.Use(b, backend.F32); err != nil {
		return nil, err
	}
	return m, nil
}

// LoRA returns the model's adapter configuration, nil for a model without
// adapters.
func (m *Model) LoRA() *LoRA { return m.lora }

// Base returns the frozen model an adapter model computes with (nil for a
// model without adapters).
func (m *Model) Base() *Model { return m.base }

// carveAdapters sets the adapter views of m from its parameters,
// gradients and bf16 copy.
func (m *Model) carveAdapters() {
	m.ad = nil
	if m.lora == nil {
		return
	}
	c := m.Config
	m.ad = make([][numModules]*adapter, c.NumLayers)
	view := func(buf backend.Buffer, name string) backend.Buffer {
		if buf == nil {
			return nil
		}
		v, _ := m.Layout.Lookup(name)
		return m.b.Slice(buf, v.Offset, v.Size)
	}
	for i := range c.NumLayers {
		for _, mod := range m.lora.modules() {
			an, bn := adapterName(i, mod, "lora_A"), adapterName(i, mod, "lora_B")
			in, out := mod.dims(c)
			m.ad[i][mod] = &adapter{a: view(m.params, an), b: view(m.params, bn), da: view(m.grads, an), db: view(m.grads, bn),
				ha: view(m.half, an), hb: view(m.half, bn), in: in, out: out}
		}
	}
}

// adaptForward adds module mod's adapter output to out (N rows), with x the
// layer's input as the base product read it (rounded at BF16):
// t = x·Aᵀ (kept for Backward), out += s·t·Bᵀ.
func (m *Model) adaptForward(ad *adapter, out, x backend.Buffer, N int) error {
	if ad == nil {
		return nil
	}
	if err := m.grow(need{&ad.t, N * m.lora.Rank}); err != nil {
		return err
	}
	m.adapt(ad, out, ad.out, x, ad.t, N)
	return nil
}

// adapt adds the adapter's output to out ([N, ad.out] with row stride ldc),
// x being the layer's input as the base product read it (rounded at
// BF16): t = x·Aᵀ into t ([N, r]), then out += s·t·Bᵀ with t rounded at
// BF16 — Forward's adapter (adaptForward) and a decoding step's
// (Decoder.adapt), the same products.
func (m *Model) adapt(ad *adapter, out backend.Buffer, ldc int, x, t backend.Buffer, N int) {
	r := m.lora.Rank
	a, b := ad.a, ad.b
	if m.half != nil {
		a, b = ad.ha, ad.hb
	}
	m.gemm(false, true, N, r, ad.in, 1, x, ad.in, a, ad.in, 0, t, r)
	m.gemm(false, true, N, ad.out, r, m.lora.Scale(), m.in(2, t, N*r), r, b, r, 1, out, ldc)
}

// adaptBackward accumulates the adapter's gradients and its part of dinp
// (nil: not needed), g being the output gradient as the products read it
// and x the layer's input:
//
//	dB += s·gᵀ·t,   u = s·g·B,   dA += uᵀ·x,   dinp += u·A.
func (m *Model) adaptBackward(ad *adapter, dinp, g, x backend.Buffer, N int) {
	if ad == nil {
		return
	}
	r, s := m.lora.Rank, m.lora.Scale()
	a, b := ad.a, ad.b
	if m.half != nil {
		a, b = ad.ha, ad.hb
	}
	t := ad.t
	if m.ws.prefixed {
		t = ad.bt
	}
	m.gemm(true, false, ad.out, r, N, s, g, ad.out, m.in(2, t, N*r), r, 1, ad.db, r)
	m.gemm(false, false, N, r, ad.out, s, g, ad.out, b, r, 0, m.ws.du, r)
	u := m.in(2, m.ws.du, N*r)
	m.gemm(true, false, r, ad.in, N, 1, u, r, x, ad.in, 1, ad.da, ad.in)
	if dinp != nil {
		m.gemm(false, false, N, ad.in, r, 1, u, r, a, ad.in, 1, dinp, ad.in)
	}
}
