package model

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ragen-go/ragen/engine/backend"
)

// Decoder runs a Model incrementally over a batch of sequences that grow
// across turns, keeping each sequence's keys and values (the KV cache, in
// the backend's layout) so that a prefix is never recomputed. A rollout
// typically
//
//  1. appends each conversation's prompt (prefill),
//  2. generates token by token for all live sequences at once,
//  3. appends the environment's reply to some sequences (only the new
//     chunk runs, attending to the cached prefix),
//  4. generates again, and removes sequences when their episode ends.
//
// Sequences are named by caller-chosen ids. A step runs the same
// operations row by row as Model.Forward, so the logits match a full
// forward over the whole sequences; its products are fused — q|k|v and
// gate|up each one product of the stacked weights — and, on a backend
// that is a backend.Packer (the CPU), run on weights packed once when the
// Decoder is made (a decoding step multiplies only a few rows by each
// weight, so packing them at every step cost as much as the products).
// On the CPU the packed weights are bf16 — half the bytes a step reads —
// wherever every value is one (a model loaded from bf16 safetensors, its
// frozen base under adapters, a model at BF16 precision), with the same
// products (decision 44). A Decoder therefore keeps using the parameters the Model had when
// NewDecoder ran: make a new one after the parameters change (a rollout
// makes one per call), and Close it when done. Not safe for concurrent
// use.
type Decoder struct {
	m     *Model
	cache backend.KVCache
	seqs  map[int]*cacheSeq
	used  []bool // slot s holds a sequence

	// The products: per layer q|k|v, o, gate|up, down, then the LM head.
	layers []decodeLayer
	lmHead product
	merged []backend.Buffer // weights with their adapters folded in

	// Scratch for one Append, grown to the largest step and reused.
	x, ln, rstd, tmp      backend.Buffer // [N, d], rstd [N]
	qkv                   backend.Buffer // [N, C+2·KV]: q | k | v of each row
	attOut                backend.Buffer // [N, C]
	gateUp                backend.Buffer // [N, 2·I]: gate | up of each row
	hid                   backend.Buffer // [N, I]
	last, lastLn, lastStd backend.Buffer // [B, d], [B]
	logits                backend.Buffer // [B, V]
	host                  []float32      // Append's logits, downloaded off the CPU
}

// decodeLayer is one block's products and the q|k|v bias.
type decodeLayer struct {
	qkv, o, gateUp, down product
	qkvBias              backend.Buffer // [C+2·KV]; nil without attention_bias
}

// product is linear layers sharing their input, computed side by side:
// packed once, or the weights themselves (views of the parameters or of
// their bf16 copy) multiplied one by one.
type product struct {
	packed  backend.Buffer
	weights []backend.Buffer
	outs    []int
	in      int
}

// cacheSeq is one sequence: its cache slot, the tokens cached there, and
// the tokens known but not yet run (the last token Generate sampled).
type cacheSeq struct {
	slot, n int
	pending []int
}

// NewDecoder returns an empty decoder for m over its current weights. The
// model needs an LM head.
func (m *Model) NewDecoder() (*Decoder, error) {
	c := m.Config
	if !c.LMHead {
		return nil, errors.New("decoder: the model has no LM head (lm_head: false)")
	}
	b := m.b
	dm, C, KV, I := c.HiddenSize, c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim(), c.IntermediateSize
	cache, err := b.NewKVCache(c.NumLayers, c.NumKVHeads, c.HeadDim(), c.MaxPositions)
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	d := &Decoder{m: m, cache: cache, seqs: map[int]*cacheSeq{}, layers: make([]decodeLayer, c.NumLayers)}
	mw := m.mat()
	var all []*product
	for l := range d.layers {
		w, mm, dl := &m.p.layers[l], &mw.layers[l], &d.layers[l]
		// wt is module mod's weight in a product with the modules of
		// group: at F32 a frozen base's bf16 matrix is widened when
		// another module of its group has an adapter folded in (a
		// float32 weight), so the group's weights are of one kind.
		wt := func(mod module, group ...module) backend.Buffer {
			if err == nil {
				widen := false
				for _, g := range group {
					widen = widen || m.half == nil && m.adapterAt(l, g) != nil
				}
				var x backend.Buffer
				x, err = d.fold(l, mod, mm.module(mod), w.module(mod), widen)
				return x
			}
			return nil
		}
		qkv, gateUp := []module{modQ, modK, modV}, []module{modGate, modUp}
		dl.qkv = product{outs: []int{C, KV, KV}, in: dm}
		dl.gateUp = product{outs: []int{I, I}, in: dm}
		if _, ok := b.(backend.Packer); ok {
			d.fuse(&dl.qkv, l, mm.qkv, qkv...)
			d.fuse(&dl.gateUp, l, mm.gateUp, gateUp...)
			if err == nil {
				err = d.foldGroup(&dl.qkv, l, qkv...)
			}
			if err == nil {
				err = d.foldGroup(&dl.gateUp, l, gateUp...)
			}
		}
		if dl.qkv.weights == nil {
			dl.qkv.weights = []backend.Buffer{wt(modQ, qkv...), wt(modK, qkv...), wt(modV, qkv...)}
		}
		if dl.gateUp.weights == nil {
			dl.gateUp.weights = []backend.Buffer{wt(modGate, gateUp...), wt(modUp, gateUp...)}
		}
		dl.o = product{weights: []backend.Buffer{wt(modO)}, outs: []int{dm}, in: C}
		dl.down = product{weights: []backend.Buffer{wt(modDown)}, outs: []int{dm}, in: I}
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("decoder: %w", err)
		}
		if w.qb != nil {
			if dl.qkvBias, err = b.Alloc(C + 2*KV); err != nil {
				d.Close()
				return nil, fmt.Errorf("decoder: %w", err)
			}
			b.Copy(b.Slice(dl.qkvBias, 0, C), w.qb, C)
			b.Copy(b.Slice(dl.qkvBias, C, KV), w.kb, KV)
			b.Copy(b.Slice(dl.qkvBias, C+KV, KV), w.vb, KV)
		}
		all = append(all, &dl.qkv, &dl.o, &dl.gateUp, &dl.down)
	}
	d.lmHead = product{weights: []backend.Buffer{mw.lmHead}, outs: []int{c.VocabSize}, in: dm}
	all = append(all, &d.lmHead)
	if p, ok := b.(backend.Packer); ok {
		groups := make([]backend.LinearGroup, len(all))
		for i, x := range all {
			groups[i] = backend.LinearGroup{Weights: x.weights, Outs: x.outs, In: x.in}
		}
		packed, err := p.PackLinear(groups)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("decoder: %w", err)
		}
		for i, x := range all {
			x.packed = packed[i]
		}
		d.free(d.merged) // packed now
		d.merged = nil
	}
	return d, b.Err()
}

// fold returns the weight the decoder multiplies by for module mod of
// layer l: the model's (mat, as the products read it), or for an adapted
// module a new one with the adapter folded in, W + s·B·A (rounded to bf16
// at BF16), so that decoding costs no extra products. (The trainer's
// log-probabilities come from Forward, which runs the adapters unfolded.)
//
// w32 is the float32 weight, or the bf16 one of a base holding its frozen
// matrices as bf16 only, widened here (exact); widen asks for that copy
// for a module without an adapter too.
func (d *Decoder) fold(l int, mod module, mat, w32 backend.Buffer, widen bool) (backend.Buffer, error) {
	m := d.m
	ad := m.adapterAt(l, mod)
	if ad == nil && !(widen && backend.IsBF16(w32)) {
		return mat, nil
	}
	b, n := m.b, w32.Len()
	w, err := b.Alloc(n)
	if err != nil {
		return nil, err
	}
	d.foldInto(w, l, mod, w32)
	if ad != nil && m.half != nil {
		h, err := b.AllocBF16(n)
		if err != nil {
			b.Free(w)
			return nil, err
		}
		b.ToBF16(h, w, n)
		b.Free(w)
		w = h
	}
	d.merged = append(d.merged, w)
	return w, nil
}

// foldInto writes into w (float32) module mod's weight of layer l with
// its adapter, if any, folded in: w32 copied or widened (exact), then
// w += s·B·A.
func (d *Decoder) foldInto(w backend.Buffer, l int, mod module, w32 backend.Buffer) {
	m := d.m
	b, n := m.b, w32.Len()
	if backend.IsBF16(w32) {
		b.FromBF16(w, w32, n)
	} else {
		b.Copy(w, w32, n)
	}
	if ad := m.adapterAt(l, mod); ad != nil {
		b.Gemm(false, false, ad.out, ad.in, m.lora.Rank, m.lora.Scale(), ad.b, m.lora.Rank, ad.a, ad.in, 1, w, ad.in)
	}
}

// foldGroup makes p, the fused product of modules mods of layer l, read
// one float32 buffer holding their weights back to back with their
// adapters folded in, at F32 when some module of the group has one: the
// matrix a Packer would otherwise concatenate from a folded copy of each
// module (and keep for its products of a few rows), made without those
// copies. p is left as it is otherwise.
func (d *Decoder) foldGroup(p *product, l int, mods ...module) error {
	m := d.m
	adapted := false
	for _, mod := range mods {
		adapted = adapted || m.adapterAt(l, mod) != nil
	}
	if !adapted || m.half != nil {
		return nil
	}
	n := 0
	for _, o := range p.outs {
		n += o
	}
	buf, err := m.b.Alloc(n * p.in)
	if err != nil {
		return err
	}
	d.merged = append(d.merged, buf)
	off, w := 0, &m.p.layers[l]
	for _, mod := range mods {
		w32 := w.module(mod)
		d.foldInto(m.b.Slice(buf, off, w32.Len()), l, mod, w32)
		off += w32.Len()
	}
	p.weights, p.outs = []backend.Buffer{buf}, []int{n}
	return nil
}

// fuse makes p, the product of modules mods of layer l, read their weights
// as the one view whole (the weights stored back to back, see
// layerWeights.qkv) when no adapter is folded into them: a Packer then
// packs the group without first concatenating the weights into a copy
// that its products of a few rows would keep reading (a second copy of
// two thirds of a block's weights). The matrix is the same, so are the
// products.
func (d *Decoder) fuse(p *product, l int, whole backend.Buffer, mods ...module) {
	if whole == nil {
		return
	}
	for _, mod := range mods {
		if d.m.adapterAt(l, mod) != nil {
			return
		}
	}
	n := 0
	for _, o := range p.outs {
		n += o
	}
	p.weights, p.outs = []backend.Buffer{whole}, []int{n}
}

// free releases buffers of the decoder's backend.
func (d *Decoder) free(bufs []backend.Buffer) {
	for _, x := range bufs {
		if x != nil {
			d.m.b.Free(x)
		}
	}
}

// run computes the product of x's N rows ([N, in], rounded at BF16) into
// out ([N, Σouts]).
func (d *Decoder) run(p *product, out, x backend.Buffer, N int) {
	m := d.m
	if p.packed != nil {
		m.b.(backend.Packer).PackedLinear(out, x, p.packed, N)
		return
	}
	ld := 0
	for _, o := range p.outs {
		ld += o
	}
	off := 0
	for i, w := range p.weights {
		// Columns [off, off+outs[i]) of out: a view from off with the row
		// stride ld.
		m.gemm(false, true, N, p.outs[i], p.in, 1, x, p.in, w, p.in, 0, m.b.Slice(out, off, N*ld-off), ld)
		off += p.outs[i]
	}
}

// Close releases the decoder's cache, packed weights and scratch.
func (d *Decoder) Close() {
	if d.m == nil {
		return
	}
	bufs := []backend.Buffer{d.x, d.ln, d.rstd, d.tmp, d.qkv, d.attOut, d.gateUp, d.hid, d.last, d.lastLn, d.lastStd, d.logits, d.lmHead.packed}
	for _, l := range d.layers {
		bufs = append(bufs, l.qkv.packed, l.o.packed, l.gateUp.packed, l.down.packed, l.qkvBias)
	}
	d.free(append(bufs, d.merged...))
	if d.cache != nil {
		d.cache.Free()
	}
	*d = Decoder{}
}

// MaxPositions is the most tokens a sequence of the decoder can hold: the
// model's max_position_embeddings.
func (d *Decoder) MaxPositions() int { return d.m.Config.MaxPositions }

// Len returns the number of tokens of sequence id (0 if unknown).
func (d *Decoder) Len(id int) int {
	n, _, _ := d.lengths(id)
	return n
}

// lengths is CheckAppend's view of a sequence.
func (d *Decoder) lengths(id int) (length, pending int, ok bool) {
	s, ok := d.seqs[id]
	if !ok {
		return 0, 0, false
	}
	return s.n + len(s.pending), len(s.pending), true
}

// IDs returns the ids of the sequences in the decoder, ascending.
func (d *Decoder) IDs() []int {
	ids := make([]int, 0, len(d.seqs))
	for id := range d.seqs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Remove drops sequence id and its cache (no-op if unknown).
func (d *Decoder) Remove(id int) {
	if s, ok := d.seqs[id]; ok {
		d.used[s.slot] = false
		d.cache.Drop(s.slot)
		delete(d.seqs, id)
	}
}

// Append adds chunks[i] to sequence ids[i] (creating the sequence if new)
// and runs the new tokens — each sequence's pending tokens, then its chunk —
// through the model in one packed step, attending to the cached prefixes.
// It returns the logits of the next token after each sequence's last token,
// row i for ids[i] ([len(ids), vocab_size], valid until the next call).
// On error nothing changes.
func (d *Decoder) Append(ids []int, chunks [][]int) ([]float32, error) {
	logits, err := d.append(ids, chunks, 0)
	if err != nil {
		return nil, err
	}
	n := len(ids) * d.m.Config.VocabSize
	if x, ok := backend.HostFloats(logits); ok {
		return x[:n], nil
	}
	d.host = growHost(d.host, n)
	if err := d.m.b.Download(d.host, logits); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	return d.host, nil
}

// append is Append with room reserved in each sequence's cache for ahead
// more tokens (Generate's max_new_tokens), so that the caches are not
// regrown, and copied, as generation proceeds; the logits stay on the
// backend.
func (d *Decoder) append(ids []int, chunks [][]int, ahead int) (backend.Buffer, error) {
	c := d.m.Config
	_, N, err := CheckAppend(ids, chunks, c.VocabSize, c.MaxPositions, fmt.Sprintf("max_position_embeddings %d", c.MaxPositions), d.lengths)
	if err != nil {
		return nil, err
	}

	// Gather the new tokens, sequence by sequence, and make room in the caches.
	B := len(ids)
	seqs := make([]*cacheSeq, B)
	steps := make([]backend.DecodeSeq, B)
	tokens := make([]int, 0, N)
	for i, id := range ids {
		s, ok := d.seqs[id]
		if !ok {
			slot := slices.Index(d.used, false)
			if slot < 0 {
				slot = len(d.used)
				d.used = append(d.used, false)
			}
			s = &cacheSeq{slot: slot}
		}
		start := len(tokens)
		tokens = append(append(tokens, s.pending...), chunks[i]...)
		n := len(tokens) - start
		if err := d.cache.Reserve(s.slot, min(s.n+n+ahead, c.MaxPositions)); err != nil {
			return nil, fmt.Errorf("decoder: %w", err)
		}
		if !ok {
			d.used[s.slot] = true
			d.seqs[id] = s
		}
		seqs[i], steps[i] = s, backend.DecodeSeq{Slot: s.slot, Past: s.n, Rows: n}
	}
	if err := d.step(tokens, steps); err != nil {
		return nil, err
	}
	for i, s := range seqs {
		s.n += steps[i].Rows
		s.pending = s.pending[:0]
	}
	return d.logits, nil
}

// step runs the packed new tokens through every block, writing their keys
// and values into the cache, and leaves in d.logits the logits at each
// sequence's last new token.
func (d *Decoder) step(tokens []int, seqs []backend.DecodeSeq) error {
	m, c := d.m, d.m.Config
	b := m.b
	N, B := len(tokens), len(seqs)
	dm, V := c.HiddenSize, c.VocabSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)
	if err := m.grow(need{&d.x, N * dm}, need{&d.ln, N * dm}, need{&d.rstd, N}, need{&d.tmp, N * dm},
		need{&d.qkv, N * (C + 2*KV)}, need{&d.attOut, N * C}, need{&d.gateUp, N * 2 * I}, need{&d.hid, N * I},
		need{&d.last, B * dm}, need{&d.lastLn, B * dm}, need{&d.lastStd, B}, need{&d.logits, B * V}); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	if err := m.growHalf(N * max(dm, C, I)); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}

	b.EmbeddingForward(d.x, tokens, m.p.embed, N, dm)
	for l := range d.layers {
		w, dl := &m.p.layers[l], &d.layers[l]
		b.RMSNormForward(d.ln, d.rstd, d.x, w.inNorm, N, dm, eps)
		// The bias is added in DecodeAttention, with the RoPE.
		d.run(&dl.qkv, d.qkv, m.in(0, d.ln, N*dm), N)
		b.DecodeAttention(d.attOut, d.qkv, dl.qkvBias, d.cache, l, seqs, m.cos, m.sin, nH, nKV, hd)
		// x = o(attOut) + x; x = down(silu(gate(ln))·up(ln)) + x, the
		// residual sums in Forward's order.
		d.run(&dl.o, d.tmp, m.in(0, d.attOut, N*C), N)
		b.Add(d.x, d.tmp, d.x, N*dm)
		b.RMSNormForward(d.ln, d.rstd, d.x, w.postNorm, N, dm, eps)
		d.run(&dl.gateUp, d.gateUp, m.in(0, d.ln, N*dm), N)
		b.SwiGLURows(d.hid, d.gateUp, N, I)
		d.run(&dl.down, d.tmp, m.in(0, d.hid, N*I), N)
		b.Add(d.x, d.tmp, d.x, N*dm)
	}
	// Only each sequence's last row predicts a token we need: gather them
	// (EmbeddingForward is a row gather) for the final norm and the head.
	last := make([]int, B)
	r := 0
	for i, s := range seqs {
		r += s.Rows
		last[i] = r - 1
	}
	b.EmbeddingForward(d.last, last, d.x, B, dm)
	b.RMSNormForward(d.lastLn, d.lastStd, d.last, m.p.norm, B, dm, eps)
	d.run(&d.lmHead, d.logits, m.in(0, d.lastLn, B*dm), B)
	return b.Err()
}
