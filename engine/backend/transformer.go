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
// like model.Output), and at F32 its sequence of ops is exactly
// model.Forward's and model.Backward's, so on the "cpu" backend the
// results equal the model's, and on "cuda" they are the parity target. Both heads are
// supported: an LM head (a policy) and a value head (a critic).
//
// Its matrix products run at a Precision (SetPrecision): F32, or BF16,
// where Params stay the float32 master copy (AdamW updates them, Host
// downloads them) and Half, a bf16 copy of them, is what the products
// read: see SetPrecision.
type Transformer struct {
	Config        model.Config
	Layout        *model.Layout
	Params, Grads Buffer // Layout.Size floats each
	Precision     Precision
	Half          Buffer // BF16: Params rounded to bf16 (Layout.Size values); nil at F32

	b        Backend
	p, g, h  tweights  // views of Params, Grads, Half
	xs       [2]Buffer // BF16: scratch of the inputs of products, rounded (see in)
	cos, sin Buffer    // rotary tables [MaxPositions, head_dim/2]
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
	t := &Transformer{Config: c, Layout: l, Precision: F32, b: b}
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

// SetPrecision sets the precision of the matrix products:
//
//   - F32: every product reads float32 inputs (the default);
//   - BF16: every product (Backend.GemmBF16) reads its two inputs rounded
//     to bfloat16, to nearest with ties to even, and accumulates and writes
//     float32. Weights come from Half, the bf16 copy of Params made here
//     and by Refresh; activations and gradients are rounded as they enter
//     a product (the layer's input in forward and for the weight gradient,
//     the output gradient for both backward products). Activations are
//     stored in float32 between ops, and every other op — embedding,
//     RMSNorm, RoPE, attention (its q·kᵀ and p·v included), SwiGLU,
//     log-softmax, AdamW, the gradient norm — reads and writes float32
//     as at F32.
//
// Changing the precision keeps Params; a bf16 copy is allocated or freed.
func (t *Transformer) SetPrecision(p Precision) error {
	p, err := ParsePrecision(string(p))
	if err != nil {
		return err
	}
	if p == t.Precision {
		return nil
	}
	t.freeHalf()
	if p == BF16 {
		if t.Half, err = t.b.AllocBF16(t.Layout.Size); err != nil {
			return fmt.Errorf("transformer: bf16 copy of the parameters: %w", err)
		}
		t.h = t.carve(t.Half)
		t.Refresh()
	}
	t.Precision = p
	return t.b.Err()
}

// Refresh rounds Params into Half at BF16 (a no-op at F32). Call it after
// anything changes Params — an optimizer step, an Upload — or the products
// go on reading the old weights.
func (t *Transformer) Refresh() {
	if t.Half != nil {
		t.b.ToBF16(t.Half, t.Params, t.Layout.Size)
	}
}

// freeHalf releases the bf16 copy and scratch.
func (t *Transformer) freeHalf() {
	for _, x := range []*Buffer{&t.Half, &t.xs[0], &t.xs[1]} {
		if *x != nil {
			t.b.Free(*x)
			*x = nil
		}
	}
	t.h = tweights{}
}

// mat returns the weights the products read: views of Params at F32, of
// Half at BF16. Biases and norm weights always come from Params (t.p).
func (t *Transformer) mat() *tweights {
	if t.Half != nil {
		return &t.h
	}
	return &t.p
}

// growHalf makes scratch slot i hold n[i] bf16 values, at BF16.
func (t *Transformer) growHalf(n ...int) error {
	if t.Half == nil {
		return nil
	}
	for i, m := range n {
		if t.xs[i] != nil && t.xs[i].Len() >= m {
			continue
		}
		if t.xs[i] != nil {
			t.b.Free(t.xs[i])
			t.xs[i] = nil
		}
		var err error
		if t.xs[i], err = t.b.AllocBF16(m); err != nil {
			return fmt.Errorf("bf16 scratch: %w", err)
		}
	}
	return nil
}

// in returns x (n floats) as an input of a product: x itself at F32, and
// at BF16 x rounded into scratch slot 0 (activations) or 1 (output
// gradients), valid until the next in with that slot. An input shared by
// several products (the layer input of q, k and v) is rounded once.
func (t *Transformer) in(slot int, x Buffer, n int) Buffer {
	if t.Half == nil {
		return x
	}
	t.b.ToBF16(t.xs[slot], x, n)
	return t.xs[slot]
}

// gemm is Backend.Gemm at F32 and Backend.GemmBF16 at BF16; a and b come
// from in and mat.
func (t *Transformer) gemm(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int) {
	if t.Half != nil {
		t.b.GemmBF16(transA, transB, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc)
	} else {
		t.b.Gemm(transA, transB, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// linear is a linear layer as torch stores it: out[N,OC] = x[N,C] ·
// weight[OC,C]ᵀ + bias[OC] (bias may be nil), with x from in and weight
// from mat.
func (t *Transformer) linear(out, x, weight, bias Buffer, N, C, OC int) {
	t.gemm(false, true, N, OC, C, 1, x, C, weight, C, 0, out, OC)
	if bias != nil {
		t.b.AddBias(out, bias, N, OC)
	}
}

// linearBackward accumulates dinp += dout·weight, dweight += doutᵀ·x and
// dbias += Σₙ dout[n] (dinp and dbias may be nil), with x (the layer's
// input) from in and weight from mat; dout is float32, rounded here for
// the two products. With linear these are the three layouts of Gemm the
// engine uses (NT, NN, TN).
func (t *Transformer) linearBackward(dinp, dweight, dbias, dout, x, weight Buffer, N, C, OC int) {
	g := t.in(1, dout, N*OC)
	if dinp != nil {
		t.gemm(false, false, N, C, OC, 1, g, OC, weight, C, 1, dinp, C)
	}
	t.gemm(true, false, OC, C, N, 1, g, OC, x, C, 1, dweight, C)
	if dbias != nil {
		t.b.ColumnSum(dbias, dout, N, OC)
	}
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
	// Rounded inputs: a layer's input (d, C or I wide), and an output
	// gradient (C, KV, d or I wide, V for the logits, 1 for the values).
	grad := max(C, d, I)
	if want.LM {
		grad = max(grad, V)
	}
	if err := t.growHalf(T*max(d, C, I), T*grad); err != nil {
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

	mw := t.mat()
	b.EmbeddingForward(ws.layers[0].resid, ws.tokens, t.p.embed, T, d)
	for l := range ws.layers {
		a, w, m := &ws.layers[l], &t.p.layers[l], &mw.layers[l]
		b.RMSNormForward(a.ln1, a.rstd1, a.resid, w.inNorm, T, d, eps)
		x := t.in(0, a.ln1, T*d)
		t.linear(a.q, x, m.q, w.qb, T, d, C)
		t.linear(a.k, x, m.k, w.kb, T, d, KV)
		t.linear(a.v, x, m.v, w.vb, T, d, KV)
		b.RopeForward(a.q, t.cos, t.sin, ws.pos, T, nH, hd)
		b.RopeForward(a.k, t.cos, t.sin, ws.pos, T, nKV, hd)
		b.AttentionForward(a.attOut, a.att, a.q, a.k, a.v, ws.lens, nH, nKV, hd)
		t.linear(a.resid2, t.in(0, a.attOut, T*C), m.o, nil, T, C, d)
		b.Add(a.resid2, a.resid2, a.resid, T*d)
		b.RMSNormForward(a.ln2, a.rstd2, a.resid2, w.postNorm, T, d, eps)
		x = t.in(0, a.ln2, T*d)
		t.linear(a.gate, x, m.gate, nil, T, d, I)
		t.linear(a.up, x, m.up, nil, T, d, I)
		b.SwiGLUForward(a.h, a.gate, a.up, T*I)
		next := ws.final
		if l+1 < len(ws.layers) {
			next = ws.layers[l+1].resid
		}
		t.linear(next, t.in(0, a.h, T*I), m.down, nil, T, I, d)
		b.Add(next, next, a.resid2, T*d)
	}
	b.RMSNormForward(ws.lnf, ws.rstdf, ws.final, t.p.norm, T, d, eps)
	x := t.in(0, ws.lnf, T*d) // the input of both heads

	ws.out = model.Output{}
	ws.rows = append(ws.rows[:0], make([]float32, T)...)
	if want.LM {
		t.linear(ws.logits, x, mw.lmHead, nil, T, d, V)
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
		t.linear(ws.val, x, mw.valueW, t.p.valueB, T, d, 1)
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
	mw := t.mat()
	x := t.in(0, ws.lnf, T*d)
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
		t.linearBackward(ws.dln, t.g.lmHead, nil, ws.logits, x, mw.lmHead, T, d, V)
	}
	if g.Value != nil {
		ws.dvHost = unalign(ws.dvHost, g.Value, ws.lens, T)
		if err := b.Upload(ws.dval, ws.dvHost); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		t.linearBackward(ws.dln, t.g.valueW, t.g.valueB, ws.dval, x, mw.valueW, T, d, 1)
	}
	b.Zero(ws.dres)
	b.RMSNormBackward(ws.dres, t.g.norm, ws.dln, ws.final, t.p.norm, ws.rstdf, T, d)
	for l := len(ws.layers) - 1; l >= 0; l-- {
		a, w, m, gw := &ws.layers[l], &t.p.layers[l], &mw.layers[l], &t.g.layers[l]
		b.Zero(ws.dh)
		t.linearBackward(ws.dh, gw.down, nil, ws.dres, t.in(0, a.h, T*I), m.down, T, I, d)
		b.Zero(ws.dgate)
		b.Zero(ws.dup)
		b.SwiGLUBackward(ws.dgate, ws.dup, ws.dh, a.gate, a.up, T*I)
		b.Zero(ws.dln)
		x := t.in(0, a.ln2, T*d)
		t.linearBackward(ws.dln, gw.gate, nil, ws.dgate, x, m.gate, T, d, I)
		t.linearBackward(ws.dln, gw.up, nil, ws.dup, x, m.up, T, d, I)
		b.RMSNormBackward(ws.dres, gw.postNorm, ws.dln, a.resid2, w.postNorm, a.rstd2, T, d)
		b.Zero(ws.dattOut)
		t.linearBackward(ws.dattOut, gw.o, nil, ws.dres, t.in(0, a.attOut, T*C), m.o, T, C, d)
		b.Zero(ws.dq)
		b.Zero(ws.dk)
		b.Zero(ws.dv)
		b.AttentionBackward(ws.dq, ws.dk, ws.dv, ws.datt, ws.dattOut, a.att, a.q, a.k, a.v, ws.lens, nH, nKV, hd)
		b.RopeBackward(ws.dq, t.cos, t.sin, ws.pos, T, nH, hd)
		b.RopeBackward(ws.dk, t.cos, t.sin, ws.pos, T, nKV, hd)
		b.Zero(ws.dln)
		x = t.in(0, a.ln1, T*d)
		t.linearBackward(ws.dln, gw.q, gw.qb, ws.dq, x, m.q, T, d, C)
		t.linearBackward(ws.dln, gw.k, gw.kb, ws.dk, x, m.k, T, d, KV)
		t.linearBackward(ws.dln, gw.v, gw.vb, ws.dv, x, m.v, T, d, KV)
		b.RMSNormBackward(ws.dres, gw.inNorm, ws.dln, a.resid, w.inNorm, a.rstd1, T, d)
	}
	b.EmbeddingBackward(t.g.embed, ws.dres, ws.tokens, T, d)
	return b.Err()
}

// Free releases every buffer.
func (t *Transformer) Free() {
	t.freeHalf()
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
