package backend

import (
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/model"
)

// Transformer is model.Model's forward and backward pass on a Backend:
// parameters, gradients and activations live in backend buffers, laid out
// by model.Layout; the host sends tokens and gets per-token
// log-probabilities, entropies and values back. Its API is model.Model's
// (Forward with a model.Want, Backward with a model.Grad, results aligned
// like model.Output), and its sequence of ops is exactly model.Forward's
// and model.Backward's, so on the "cpu" backend the results equal the
// model's, and on "cuda" they are the parity target. Both heads are
// supported: an LM head (a policy) and a value head (a critic).
type Transformer struct {
	Config        model.Config
	Layout        *model.Layout
	Params, Grads Buffer // Layout.Size floats each

	b        Backend
	p, g     tweights
	cos, sin Buffer // rotary tables [MaxPositions, head_dim/2]
	ws       tspace
}

// tlayer and tweights are views of Params or Grads (see model's weights).
type tlayer struct {
	inNorm, q, k, v, qb, kb, vb, o, postNorm, gate, up, down Buffer
}

type tweights struct {
	embed, norm, lmHead Buffer
	valueW, valueB      Buffer // nil without a value head
	layers              []tlayer
}

// tacts are one block's saved activations.
type tacts struct {
	resid, ln1, rstd1, q, k, v, att, attOut, resid2, ln2, rstd2, gate, up, h Buffer
}

// tspace holds the last batch and every activation and scratch buffer,
// grown to the largest batch seen.
type tspace struct {
	T                              int
	tokens, lens, pos, targets     []int
	layers                         []tacts
	final, lnf, rstdf              Buffer
	logits, lse, lp, ent, val      Buffer
	dres, dln, dq, dattOut, dk, dv Buffer
	datt, dgate, dup, dh           Buffer
	dlp, dent, dval                Buffer
	lm, value, fresh               bool // heads of the last Forward; Backward not yet run
	out                            model.Output
	rows, lpHost, entHost, valHost []float32 // downloads and Forward's results
	dlpHost, dentHost, dvHost      []float32 // Backward's uploads
}

// NewTransformer uploads params (model.NewLayout(c).Size floats, e.g. a
// model.Model's Params.Data) to b.
func NewTransformer(b Backend, c model.Config, params []float32) (*Transformer, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid model config: %w", err)
	}
	l := model.NewLayout(c)
	if len(params) != l.Size {
		return nil, fmt.Errorf("transformer: got %d parameters, the layout has %d", len(params), l.Size)
	}
	t := &Transformer{Config: c, Layout: l, b: b}
	var err error
	if t.Params, err = b.Alloc(l.Size); err != nil {
		return nil, err
	}
	if t.Grads, err = b.Alloc(l.Size); err != nil {
		t.Free()
		return nil, err
	}
	if err = b.Upload(t.Params, params); err != nil {
		t.Free()
		return nil, err
	}
	t.p, t.g = t.carve(t.Params), t.carve(t.Grads)
	half := c.HeadDim() / 2
	cos, sin := make([]float32, c.MaxPositions*half), make([]float32, c.MaxPositions*half)
	cpu.RopeTables(cos, sin, c.MaxPositions, c.HeadDim(), c.RopeTheta)
	if t.cos, err = t.upload(cos); err == nil {
		t.sin, err = t.upload(sin)
	}
	if err != nil {
		t.Free()
		return nil, err
	}
	return t, nil
}

func (t *Transformer) upload(x []float32) (Buffer, error) {
	buf, err := t.b.Alloc(len(x))
	if err != nil {
		return nil, err
	}
	return buf, t.b.Upload(buf, x)
}

func (t *Transformer) carve(buf Buffer) tweights {
	s := func(name string) Buffer {
		v, ok := t.Layout.Lookup(name)
		if !ok {
			return nil
		}
		return t.b.Slice(buf, v.Offset, v.Size)
	}
	w := tweights{embed: s("model.embed_tokens.weight"), norm: s("model.norm.weight"),
		valueW: s("value_head.weight"), valueB: s("value_head.bias")}
	if t.Config.LMHead {
		w.lmHead = s("lm_head.weight")
		if t.Config.TieWordEmbeddings {
			w.lmHead = w.embed
		}
	}
	for i := 0; i < t.Config.NumLayers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		w.layers = append(w.layers, tlayer{
			inNorm: s(p + "input_layernorm.weight"),
			q:      s(p + "self_attn.q_proj.weight"), k: s(p + "self_attn.k_proj.weight"), v: s(p + "self_attn.v_proj.weight"),
			qb: s(p + "self_attn.q_proj.bias"), kb: s(p + "self_attn.k_proj.bias"), vb: s(p + "self_attn.v_proj.bias"),
			o:        s(p + "self_attn.o_proj.weight"),
			postNorm: s(p + "post_attention_layernorm.weight"),
			gate:     s(p + "mlp.gate_proj.weight"), up: s(p + "mlp.up_proj.weight"), down: s(p + "mlp.down_proj.weight"),
		})
	}
	return w
}

// grow makes *buf hold at least n floats (contents unspecified).
func grow(b Backend, buf *Buffer, n int) error {
	if *buf != nil && (*buf).Len() >= n {
		return nil
	}
	if *buf != nil {
		b.Free(*buf)
	}
	var err error
	*buf, err = b.Alloc(n)
	return err
}

// need is a buffer and the floats it must hold.
type need struct {
	buf *Buffer
	n   int
}

// growAll grows every buffer of needs.
func growAll(b Backend, needs []need) error {
	for _, n := range needs {
		if err := grow(b, n.buf, n.n); err != nil {
			return err
		}
	}
	return nil
}

// prepare checks the batch and the heads asked for (with model.Forward's
// messages), copies the batch, derives positions and targets, and sizes
// the buffers of the heads asked for.
func (t *Transformer) prepare(tokens, lens []int, want model.Want) error {
	c, ws := t.Config, &t.ws
	if want.LM && !c.LMHead {
		return errors.New("forward: log-probs asked for but the model has no LM head (lm_head: false)")
	}
	if want.Value && !c.ValueHead {
		return errors.New("forward: values asked for but the model has no value head (value_head: false)")
	}
	if !want.LM && !want.Value {
		return errors.New("forward: nothing asked for (set Want.LM or Want.Value)")
	}
	if len(lens) == 0 {
		return errors.New("forward: empty batch: no sequences")
	}
	T := 0
	for s, L := range lens {
		if L < 1 || L > c.MaxPositions {
			return fmt.Errorf("forward: sequence %d: length %d outside [1, %d]", s, L, c.MaxPositions)
		}
		T += L
	}
	if T != len(tokens) {
		return fmt.Errorf("forward: batch: lengths sum to %d but there are %d tokens", T, len(tokens))
	}
	for i, tok := range tokens {
		if tok < 0 || tok >= c.VocabSize {
			return fmt.Errorf("forward: token %d: id %d out of range [0, %d)", i, tok, c.VocabSize)
		}
	}
	ws.T = T
	ws.tokens = append(ws.tokens[:0], tokens...)
	ws.lens = append(ws.lens[:0], lens...)
	ws.pos, ws.targets = ws.pos[:0], ws.targets[:0]
	o := 0
	for _, L := range lens {
		for i := 0; i < L; i++ {
			tgt := -1
			if i+1 < L {
				tgt = tokens[o+i+1]
			}
			ws.pos, ws.targets = append(ws.pos, i), append(ws.targets, tgt)
		}
		o += L
	}
	d, V, I := c.HiddenSize, c.VocabSize, c.IntermediateSize
	C, KV := c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim()
	att := AttentionSize(lens, c.NumHeads)
	if len(ws.layers) != c.NumLayers {
		ws.layers = make([]tacts, c.NumLayers)
	}
	var needs []need
	for l := range ws.layers {
		a := &ws.layers[l]
		needs = append(needs, need{&a.resid, T * d}, need{&a.ln1, T * d}, need{&a.rstd1, T},
			need{&a.q, T * C}, need{&a.k, T * KV}, need{&a.v, T * KV}, need{&a.att, att}, need{&a.attOut, T * C},
			need{&a.resid2, T * d}, need{&a.ln2, T * d}, need{&a.rstd2, T},
			need{&a.gate, T * I}, need{&a.up, T * I}, need{&a.h, T * I})
	}
	needs = append(needs, need{&ws.final, T * d}, need{&ws.lnf, T * d}, need{&ws.rstdf, T},
		need{&ws.dres, T * d}, need{&ws.dln, T * d}, need{&ws.dq, T * C}, need{&ws.dattOut, T * C},
		need{&ws.dk, T * KV}, need{&ws.dv, T * KV}, need{&ws.datt, att},
		need{&ws.dgate, T * I}, need{&ws.dup, T * I}, need{&ws.dh, T * I})
	if want.LM {
		needs = append(needs, need{&ws.logits, T * V}, need{&ws.lse, T}, need{&ws.lp, T}, need{&ws.ent, T},
			need{&ws.dlp, T}, need{&ws.dent, T})
	}
	if want.Value {
		needs = append(needs, need{&ws.val, T}, need{&ws.dval, T})
	}
	if err := growAll(t.b, needs); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	return nil
}

// Forward runs the model over a packed batch, as model.Forward: tokens
// holds the sequences one after another, lens their lengths, and the
// heads of want are evaluated (Want.Logits also downloads every
// position's logits). The results are aligned like model.Output and
// reused by the next call.
func (t *Transformer) Forward(tokens, lens []int, want model.Want) (*model.Output, error) {
	t.ws.fresh = false
	if want.Logits {
		want.LM = true
	}
	if err := t.prepare(tokens, lens, want); err != nil {
		return nil, err
	}
	b, c, ws := t.b, t.Config, &t.ws
	T, d, V := ws.T, c.HiddenSize, c.VocabSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)

	b.EmbeddingForward(ws.layers[0].resid, ws.tokens, t.p.embed, T, d)
	for l := range ws.layers {
		a, w := &ws.layers[l], &t.p.layers[l]
		b.RMSNormForward(a.ln1, a.rstd1, a.resid, w.inNorm, T, d, eps)
		MatmulForward(b, a.q, a.ln1, w.q, w.qb, T, d, C)
		MatmulForward(b, a.k, a.ln1, w.k, w.kb, T, d, KV)
		MatmulForward(b, a.v, a.ln1, w.v, w.vb, T, d, KV)
		b.RopeForward(a.q, t.cos, t.sin, ws.pos, T, nH, hd)
		b.RopeForward(a.k, t.cos, t.sin, ws.pos, T, nKV, hd)
		b.AttentionForward(a.attOut, a.att, a.q, a.k, a.v, ws.lens, nH, nKV, hd)
		MatmulForward(b, a.resid2, a.attOut, w.o, nil, T, C, d)
		b.Add(a.resid2, a.resid2, a.resid, T*d)
		b.RMSNormForward(a.ln2, a.rstd2, a.resid2, w.postNorm, T, d, eps)
		MatmulForward(b, a.gate, a.ln2, w.gate, nil, T, d, I)
		MatmulForward(b, a.up, a.ln2, w.up, nil, T, d, I)
		b.SwiGLUForward(a.h, a.gate, a.up, T*I)
		next := ws.final
		if l+1 < len(ws.layers) {
			next = ws.layers[l+1].resid
		}
		MatmulForward(b, next, a.h, w.down, nil, T, I, d)
		b.Add(next, next, a.resid2, T*d)
	}
	b.RMSNormForward(ws.lnf, ws.rstdf, ws.final, t.p.norm, T, d, eps)

	ws.out = model.Output{}
	ws.rows = append(ws.rows[:0], make([]float32, T)...)
	if want.LM {
		MatmulForward(b, ws.logits, ws.lnf, t.p.lmHead, nil, T, d, V)
		b.LogSoftmaxForward(ws.lse, ws.lp, ws.ent, ws.logits, ws.targets, T, V)
		if err := b.Download(ws.rows, ws.lp); err != nil {
			return nil, fmt.Errorf("forward: %w", err)
		}
		ws.lpHost = align(ws.lpHost, ws.rows, ws.lens)
		ws.out.LogProb = ws.lpHost
		if err := b.Download(ws.rows, ws.ent); err != nil {
			return nil, fmt.Errorf("forward: %w", err)
		}
		ws.entHost = align(ws.entHost, ws.rows, ws.lens)
		ws.out.Entropy = ws.entHost
		if want.Logits {
			ws.out.Logits = make([]float32, T*V)
			if err := b.Download(ws.out.Logits, ws.logits); err != nil {
				return nil, fmt.Errorf("forward: %w", err)
			}
		}
	}
	if want.Value {
		MatmulForward(b, ws.val, ws.lnf, t.p.valueW, t.p.valueB, T, d, 1)
		if err := b.Download(ws.rows, ws.val); err != nil {
			return nil, fmt.Errorf("forward: %w", err)
		}
		ws.valHost = align(ws.valHost, ws.rows, ws.lens)
		ws.out.Value = ws.valHost
	}
	ws.lm, ws.value, ws.fresh = want.LM, want.Value, true
	return &ws.out, nil
}

// align maps per-row results to per-token ones (model's alignRows): entry
// i of a sequence is row i−1, entry 0 is 0.
func align(dst, row []float32, lens []int) []float32 {
	dst = append(dst[:0], make([]float32, len(row))...)
	o := 0
	for _, L := range lens {
		copy(dst[o+1:o+L], row[o:o+L-1])
		o += L
	}
	return dst
}

// unalign is align's inverse: row[t] = g[t+1] within a sequence, 0 at its
// last row and everywhere when g is nil.
func unalign(row, g []float32, lens []int, T int) []float32 {
	row = append(row[:0], make([]float32, T)...)
	if g == nil {
		return row
	}
	o := 0
	for _, L := range lens {
		copy(row[o:o+L-1], g[o+1:o+L])
		o += L
	}
	return row
}

// ZeroGrad clears Grads (Backward accumulates).
func (t *Transformer) ZeroGrad() { t.b.Zero(t.Grads) }

// Backward propagates g (∂loss/∂ of Forward's outputs, aligned like them;
// nil slices are zeros) through the last Forward and accumulates into
// Grads, in model.Backward's order and with its checks.
func (t *Transformer) Backward(g model.Grad) error {
	b, c, ws := t.b, t.Config, &t.ws
	if !ws.fresh {
		return errors.New("backward: needs a Forward first (each Forward supports one Backward)")
	}
	T := ws.T
	for _, f := range []struct {
		name string
		s    []float32
	}{{"LogProb", g.LogProb}, {"Entropy", g.Entropy}, {"Value", g.Value}} {
		if f.s != nil && len(f.s) != T {
			return fmt.Errorf("backward: Grad.%s has %d entries, the batch has %d tokens", f.name, len(f.s), T)
		}
	}
	useLM := g.LogProb != nil || g.Entropy != nil
	if useLM && !ws.lm {
		return errors.New("backward: log-prob or entropy gradients given but Forward did not evaluate the LM head (Want.LM)")
	}
	if g.Value != nil && !ws.value {
		return errors.New("backward: value gradients given but Forward did not evaluate the value head (Want.Value)")
	}
	ws.fresh = false
	d, V := c.HiddenSize, c.VocabSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize

	// Heads: ∂loss/∂lnf from the LM head and the value head.
	b.Zero(ws.dln)
	if useLM {
		ws.dlpHost = unalign(ws.dlpHost, g.LogProb, ws.lens, T)
		ws.dentHost = unalign(ws.dentHost, g.Entropy, ws.lens, T)
		if err := b.Upload(ws.dlp, ws.dlpHost); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		if err := b.Upload(ws.dent, ws.dentHost); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		b.LogSoftmaxBackward(ws.logits, ws.logits, ws.lse, ws.ent, ws.targets, ws.dlp, ws.dent, T, V)
		MatmulBackward(b, ws.dln, t.g.lmHead, nil, ws.logits, ws.lnf, t.p.lmHead, T, d, V)
	}
	if g.Value != nil {
		ws.dvHost = unalign(ws.dvHost, g.Value, ws.lens, T)
		if err := b.Upload(ws.dval, ws.dvHost); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		MatmulBackward(b, ws.dln, t.g.valueW, t.g.valueB, ws.dval, ws.lnf, t.p.valueW, T, d, 1)
	}
	b.Zero(ws.dres)
	b.RMSNormBackward(ws.dres, t.g.norm, ws.dln, ws.final, t.p.norm, ws.rstdf, T, d)
	for l := len(ws.layers) - 1; l >= 0; l-- {
		a, w, gw := &ws.layers[l], &t.p.layers[l], &t.g.layers[l]
		b.Zero(ws.dh)
		MatmulBackward(b, ws.dh, gw.down, nil, ws.dres, a.h, w.down, T, I, d)
		b.Zero(ws.dgate)
		b.Zero(ws.dup)
		b.SwiGLUBackward(ws.dgate, ws.dup, ws.dh, a.gate, a.up, T*I)
		b.Zero(ws.dln)
		MatmulBackward(b, ws.dln, gw.gate, nil, ws.dgate, a.ln2, w.gate, T, d, I)
		MatmulBackward(b, ws.dln, gw.up, nil, ws.dup, a.ln2, w.up, T, d, I)
		b.RMSNormBackward(ws.dres, gw.postNorm, ws.dln, a.resid2, w.postNorm, a.rstd2, T, d)
		b.Zero(ws.dattOut)
		MatmulBackward(b, ws.dattOut, gw.o, nil, ws.dres, a.attOut, w.o, T, C, d)
		b.Zero(ws.dq)
		b.Zero(ws.dk)
		b.Zero(ws.dv)
		b.AttentionBackward(ws.dq, ws.dk, ws.dv, ws.datt, ws.dattOut, a.att, a.q, a.k, a.v, ws.lens, nH, nKV, hd)
		b.RopeBackward(ws.dq, t.cos, t.sin, ws.pos, T, nH, hd)
		b.RopeBackward(ws.dk, t.cos, t.sin, ws.pos, T, nKV, hd)
		b.Zero(ws.dln)
		MatmulBackward(b, ws.dln, gw.q, gw.qb, ws.dq, a.ln1, w.q, T, d, C)
		MatmulBackward(b, ws.dln, gw.k, gw.kb, ws.dk, a.ln1, w.k, T, d, KV)
		MatmulBackward(b, ws.dln, gw.v, gw.vb, ws.dv, a.ln1, w.v, T, d, KV)
		b.RMSNormBackward(ws.dres, gw.inNorm, ws.dln, a.resid, w.inNorm, a.rstd1, T, d)
	}
	b.EmbeddingBackward(t.g.embed, ws.dres, ws.tokens, T, d)
	return b.Err()
}

// Free releases every buffer.
func (t *Transformer) Free() {
	ws := &t.ws
	bufs := []Buffer{t.Params, t.Grads, t.cos, t.sin, ws.final, ws.lnf, ws.rstdf, ws.logits, ws.lse, ws.lp, ws.ent, ws.val,
		ws.dres, ws.dln, ws.dq, ws.dattOut, ws.dk, ws.dv, ws.datt, ws.dgate, ws.dup, ws.dh, ws.dlp, ws.dent, ws.dval}
	for _, a := range ws.layers {
		bufs = append(bufs, a.resid, a.ln1, a.rstd1, a.q, a.k, a.v, a.att, a.attOut, a.resid2, a.ln2, a.rstd2, a.gate, a.up, a.h)
	}
	for _, x := range bufs {
		if x != nil {
			t.b.Free(x)
		}
	}
	*t = Transformer{}
}
