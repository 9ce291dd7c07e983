package model

import (
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
	"github.com/ragen-go/ragen/engine/parallel"
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
// weight, so packing them at every step cost as much as the products) —
// except on a model holding its matrices as bf16 only (NewFrozen: a bf16
// checkpoint loaded to decode; or the frozen base of adapters) decoding by
// itself, whose products read its stored bf16 matrices, packing each panel
// as it multiplies, so that decoding holds the weights once (decision 59).
// On the CPU the packed weights are bf16 — half the bytes a step reads —
// wherever every value is one (a model loaded from bf16 safetensors, its
// frozen base under adapters, a model at BF16 precision), with the same
// products (decision 44). A model with adapters decodes as Forward
// computes it, the adapters unfolded — y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ, the
// adapter's two products on the step's few rows — over its frozen base's
// products, which on a Packer are packed once, by the first such Decoder,
// and kept by the base for every later one (decision 51). A Decoder
// therefore keeps using the parameters the Model had when NewDecoder ran:
// make a new one after the parameters change (a rollout makes one per
// call), and Close it when done. Not safe for concurrent use.
type Decoder struct {
	m     *Model
	cache backend.KVCache
	seqs  map[int]*cacheSeq
	used  []bool // slot s holds a sequence

	// prod are the products' weights: the decoder's own, or (shared) those
	// its model's frozen base keeps for all its decoders (basePanels),
	// which Close leaves alone.
	prod    *products
	shared  bool
	qkvBias []backend.Buffer // per layer [C+2·KV]; nil without attention_bias

	// Scratch for one Append, grown to the largest step and reused.
	x, ln, rstd, tmp      backend.Buffer // [N, d], rstd [N]
	qkv                   backend.Buffer // [N, C+2·KV]: q | k | v of each row
	attOut                backend.Buffer // [N, C]
	gateUp                backend.Buffer // [N, 2·I]: gate | up of each row
	hid                   backend.Buffer // [N, I]
	t                     backend.Buffer // [N, r]: an adapter's x·Aᵀ
	last, lastLn, lastStd backend.Buffer // [B, d], [B]
	logits                backend.Buffer // [B, V]
	host                  []float32      // Append's logits, downloaded off the CPU
}

// products are the weights a decoding step multiplies by: per layer
// q|k|v, o, gate|up and down, then the LM head.
type products struct {
	layers []layerProducts
	lmHead product
}

// layerProducts are one block's products.
type layerProducts struct{ qkv, o, gateUp, down product }

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
	C, KV := c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim()
	cache, err := b.NewKVCache(c.NumLayers, c.NumKVHeads, c.HeadDim(), c.MaxPositions)
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	d := &Decoder{m: m, cache: cache, seqs: map[int]*cacheSeq{}, qkvBias: make([]backend.Buffer, c.NumLayers)}
	_, isPacker := b.(backend.Packer)
	switch {
	case isPacker && m.base != nil:
		d.prod, err = m.base.basePanels()
		d.shared = err == nil
	case m.w16 != nil:
		// A frozen model decoding by itself reads its bf16 matrices where
		// they are stored: panels would be a second copy of the weights,
		// kept while it decodes (decision 59).
		d.prod, err = m.newProducts(false)
	default:
		d.prod, err = m.newProducts(true)
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("decoder: %w", err)
	}
	for l := range d.qkvBias {
		w := &m.p.layers[l]
		if w.qb == nil {
			continue
		}
		if d.qkvBias[l], err = b.Alloc(C + 2*KV); err != nil {
			d.Close()
			return nil, fmt.Errorf("decoder: %w", err)
		}
		b.Copy(b.Slice(d.qkvBias[l], 0, C), w.qb, C)
		b.Copy(b.Slice(d.qkvBias[l], C, KV), w.kb, KV)
		b.Copy(b.Slice(d.qkvBias[l], C+KV, KV), w.vb, KV)
	}
	return d, b.Err()
}

// newProducts returns the products of m's weights as its products read
// them (mat): on a backend.Packer q|k|v and gate|up each from their one
// view when the layout stores them back to back (see layerWeights.qkv; no
// concatenated copy, which the products of a few rows would keep
// reading), packed when pack is set; elsewhere the weights themselves,
// one Gemm each. Of a model with adapters these are its base's weights:
// the adapters run beside them (Decoder.adapt).
func (m *Model) newProducts(pack bool) (*products, error) {
	c := m.Config
	dm, C, KV, I := c.HiddenSize, c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim(), c.IntermediateSize
	packer, isPacker := m.b.(backend.Packer)
	mw := m.mat()
	ps := &products{layers: make([]layerProducts, c.NumLayers)}
	var all []*product
	for l := range ps.layers {
		mm, lp := &mw.layers[l], &ps.layers[l]
		lp.qkv = product{weights: []backend.Buffer{mm.q, mm.k, mm.v}, outs: []int{C, KV, KV}, in: dm}
		lp.gateUp = product{weights: []backend.Buffer{mm.gate, mm.up}, outs: []int{I, I}, in: dm}
		if isPacker && mm.qkv != nil {
			lp.qkv.weights, lp.qkv.outs = []backend.Buffer{mm.qkv}, []int{C + 2*KV}
		}
		if isPacker && mm.gateUp != nil {
			lp.gateUp.weights, lp.gateUp.outs = []backend.Buffer{mm.gateUp}, []int{2 * I}
		}
		lp.o = product{weights: []backend.Buffer{mm.o}, outs: []int{dm}, in: C}
		lp.down = product{weights: []backend.Buffer{mm.down}, outs: []int{dm}, in: I}
		all = append(all, &lp.qkv, &lp.o, &lp.gateUp, &lp.down)
	}
	ps.lmHead = product{weights: []backend.Buffer{mw.lmHead}, outs: []int{c.VocabSize}, in: dm}
	all = append(all, &ps.lmHead)
	if !isPacker || !pack {
		return ps, nil
	}
	groups := make([]backend.LinearGroup, len(all))
	for i, x := range all {
		groups[i] = backend.LinearGroup{Weights: x.weights, Outs: x.outs, In: x.in, BF16Inputs: m.precision == backend.BF16}
	}
	packed, err := packer.PackLinear(groups)
	if err != nil {
		return nil, err
	}
	for i, x := range all {
		x.packed = packed[i]
	}
	return ps, nil
}

// basePanels returns the products of m, the frozen base of adapters,
// packed for decoding: made by the first call and kept, so that every
// decoder of its adapter models (a rollout's, at each training step)
// multiplies by the same panels instead of packing the base again (on
// Qwen2.5-0.5B 1 GB of bf16 panels, seconds of packing, and fresh memory
// each time). The base's weights never change while it has adapters;
// Refresh and release, which follow a change, drop the panels. Like the
// rest of a Model, not safe for concurrent use: make the decoders of one
// base's adapter models one at a time.
func (m *Model) basePanels() (*products, error) {
	if m.panels == nil {
		p, err := m.newProducts(true)
		if err != nil {
			return nil, err
		}
		m.panels = p
	}
	return m.panels, nil
}

// ReleaseDecodePanels frees the decoding panels that the frozen base of m
// (m itself, or the base of m's adapters) keeps for its decoders
// (basePanels); the next Decoder packs them again. It trades memory for
// packing time: on Qwen2.5-0.5B the panels are 1 GB, and packing them
// again from the bf16 base takes 0.07 s at BF16 and 0.25 s at F32 (3 s
// when the pages are new to the process). The trainer calls it after
// every rollout, so that the update's activations reuse those pages
// (decision 54). The panels are host memory (only a backend.Packer has
// them): dropped, not given to Backend.Free, whose pool would keep their
// pages for the next packing. Decoders open at the call keep working on
// them until they close. It runs a collection: until the next one the
// collector's goal counts the panels as live, and the allocations that
// follow would take fresh pages instead of theirs.
func (m *Model) ReleaseDecodePanels() {
	base := m
	if m.base != nil {
		base = m.base
	}
	if base.panels != nil {
		base.panels = nil
		runtime.GC()
	}
}

// free releases the packed buffers of ps (the weights are the model's).
func (ps *products) free(b backend.Backend) {
	if ps == nil {
		return
	}
	for _, l := range ps.layers {
		for _, p := range []backend.Buffer{l.qkv.packed, l.o.packed, l.gateUp.packed, l.down.packed} {
			if p != nil {
				b.Free(p)
			}
		}
	}
	if ps.lmHead.packed != nil {
		b.Free(ps.lmHead.packed)
	}
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

// adapt adds to the columns [off, off+out) of out ([N, ld]) layer l's
// adapter of module mod, if it has one, as Forward does (adaptForward):
// out += s·(x·Aᵀ)·Bᵀ, x being the module's input as its base product read
// it.
func (d *Decoder) adapt(l int, mod module, out backend.Buffer, off, ld int, x backend.Buffer, N int) {
	if ad := d.m.adapterAt(l, mod); ad != nil {
		d.m.adapt(ad, d.m.b.Slice(out, off, N*ld-off), ld, x, d.t, N)
	}
}

// Close releases the decoder's cache, packed weights (unless its base
// keeps them) and scratch.
func (d *Decoder) Close() {
	if d.m == nil {
		return
	}
	if !d.shared {
		d.prod.free(d.m.b)
	}
	bufs := []backend.Buffer{d.x, d.ln, d.rstd, d.tmp, d.qkv, d.attOut, d.gateUp, d.hid, d.t, d.last, d.lastLn, d.lastStd, d.logits}
	d.free(append(bufs, d.qkvBias...))
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
		n := len(s.pending) + len(chunks[i])
		if err := d.cache.Reserve(s.slot, min(s.n+n+ahead, c.MaxPositions)); err != nil {
			return nil, fmt.Errorf("decoder: %w", err)
		}
		if !ok {
			d.used[s.slot] = true
			d.seqs[id] = s
		}
		seqs[i], steps[i] = s, backend.DecodeSeq{Slot: s.slot, Past: s.n, Rows: n}
	}
	// Run each distinct new sequence once (sharedPrompts); the head still
	// reads a row for every sequence, so its product has B rows as before.
	src := d.sharedPrompts(seqs, chunks)
	var run []backend.DecodeSeq
	last := make([]int, B)
	for i, s := range seqs {
		if src[i] != i {
			last[i] = last[src[i]]
			continue
		}
		tokens = append(append(tokens, s.pending...), chunks[i]...)
		run = append(run, steps[i])
		last[i] = len(tokens) - 1
	}
	if err := d.step(tokens, run, last); err != nil {
		return nil, err
	}
	for i, s := range seqs {
		if src[i] != i {
			// The shared prompt's keys and values, copied: the same floats.
			if err := d.cache.(backend.KVCopier).CopySlot(s.slot, seqs[src[i]].slot, steps[i].Rows); err != nil {
				return nil, fmt.Errorf("decoder: %w", err)
			}
		}
	}
	for i, s := range seqs {
		s.n += steps[i].Rows
		s.pending = s.pending[:0]
	}
	return d.logits, nil
}

// sharedPrompts returns, for each sequence of an append, the first one
// with the same rows to run (src[i] = i: its own): a sequence new to the
// decoder whose chunk equals an earlier new one's — the prompt a GRPO
// group's members share — gets that one's keys and values copied
// (backend.KVCopier) instead of running its rows again. Every row's
// numbers do not depend on the other rows of its step, but the CPU's
// products of at most gemm.DotMaxRows rows sum in another order, so
// prompts are shared only when more rows than that still run.
func (d *Decoder) sharedPrompts(seqs []*cacheSeq, chunks [][]int) []int {
	src := make([]int, len(seqs))
	for i := range src {
		src[i] = i
	}
	if _, ok := d.cache.(backend.KVCopier); !ok {
		return src
	}
	fresh := func(i int) bool { return seqs[i].n == 0 && len(seqs[i].pending) == 0 }
	rows, shared := 0, false
	for i := range seqs {
		if fresh(i) {
			for j := 0; j < i; j++ {
				if src[j] == j && fresh(j) && slices.Equal(chunks[i], chunks[j]) {
					src[i], shared = j, true
					break
				}
			}
		}
		if src[i] == i {
			rows += len(seqs[i].pending) + len(chunks[i])
		}
	}
	if !shared || rows <= gemm.DotMaxRows {
		for i := range src {
			src[i] = i
		}
	}
	return src
}

// step runs the packed new tokens of seqs through every block, writing
// their keys and values into the cache, and leaves in d.logits the logits
// at the rows last names (row i of the logits at packed row last[i]).
func (d *Decoder) step(tokens []int, seqs []backend.DecodeSeq, last []int) error {
	m, c := d.m, d.m.Config
	b := m.b
	N, B := len(tokens), len(last)
	dm, V := c.HiddenSize, c.VocabSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)
	needs := []need{{&d.x, N * dm}, {&d.ln, N * dm}, {&d.rstd, N}, {&d.tmp, N * dm},
		{&d.qkv, N * (C + 2*KV)}, {&d.attOut, N * C}, {&d.gateUp, N * 2 * I}, {&d.hid, N * I},
		{&d.last, B * dm}, {&d.lastLn, B * dm}, {&d.lastStd, B}, {&d.logits, B * V}}
	if r := m.rank(); r > 0 {
		needs = append(needs, need{&d.t, N * r})
	}
	if err := m.grow(needs...); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	if err := m.growHalf(N*max(dm, C, I), 0, N*m.rank()); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}

	b.EmbeddingForward(d.x, tokens, m.p.embed, N, dm)
	if groups := d.groups(seqs); len(groups) > 1 {
		parallel.For(len(groups), 1, func(_, lo, hi int) {
			for _, g := range groups[lo:hi] {
				d.blocks(g.row, g.rows, seqs[g.lo:g.hi])
			}
		})
	} else {
		d.blocks(0, N, seqs)
	}
	// Only each sequence's last row predicts a token we need: gather them
	// (EmbeddingForward is a row gather) for the final norm and the head.
	b.EmbeddingForward(d.last, last, d.x, B, dm)
	b.RMSNormForward(d.lastLn, d.lastStd, d.last, m.p.norm, B, dm, eps)
	d.run(&d.prod.lmHead, d.logits, m.in(0, d.lastLn, B*dm), B)
	return b.Err()
}

// blocks runs rows [r0, r0+N) of a step — the new rows of seqs, packed —
// through every block, on those rows of the step's scratch. Only the rows
// of a whole step use the adapters' and bf16 rounding's scratch (groups).
func (d *Decoder) blocks(r0, N int, seqs []backend.DecodeSeq) {
	m, c := d.m, d.m.Config
	b := m.b
	dm := c.HiddenSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)
	ld := C + 2*KV
	rows := func(x backend.Buffer, width int) backend.Buffer { return b.Slice(x, r0*width, N*width) }
	dx, dln, rstd, tmp := rows(d.x, dm), rows(d.ln, dm), rows(d.rstd, 1), rows(d.tmp, dm)
	qkv, attOut, gateUp, hid := rows(d.qkv, ld), rows(d.attOut, C), rows(d.gateUp, 2*I), rows(d.hid, I)
	for l := range d.prod.layers {
		w, lp := &m.p.layers[l], &d.prod.layers[l]
		b.RMSNormForward(dln, rstd, dx, w.inNorm, N, dm, eps)
		x := m.in(0, dln, N*dm)
		d.run(&lp.qkv, qkv, x, N)
		// The bias is added in DecodeAttention, with the RoPE; with an
		// adapter on q, k or v first, as Forward adds it: x·Wᵀ + b, then
		// the adapter.
		bias := d.qkvBias[l]
		if bias != nil && (m.adapterAt(l, modQ) != nil || m.adapterAt(l, modK) != nil || m.adapterAt(l, modV) != nil) {
			b.AddBias(qkv, bias, N, ld)
			bias = nil
		}
		d.adapt(l, modQ, qkv, 0, ld, x, N)
		d.adapt(l, modK, qkv, C, ld, x, N)
		d.adapt(l, modV, qkv, C+KV, ld, x, N)
		b.DecodeAttention(attOut, qkv, bias, d.cache, l, seqs, m.cos, m.sin, nH, nKV, hd)
		// x = o(attOut) + x; x = down(silu(gate(ln))·up(ln)) + x, the
		// residual sums in Forward's order.
		x = m.in(0, attOut, N*C)
		d.run(&lp.o, tmp, x, N)
		d.adapt(l, modO, tmp, 0, dm, x, N)
		b.Add(dx, tmp, dx, N*dm)
		b.RMSNormForward(dln, rstd, dx, w.postNorm, N, dm, eps)
		x = m.in(0, dln, N*dm)
		d.run(&lp.gateUp, gateUp, x, N)
		d.adapt(l, modGate, gateUp, 0, 2*I, x, N)
		d.adapt(l, modUp, gateUp, I, 2*I, x, N)
		b.SwiGLURows(hid, gateUp, N, I)
		x = m.in(0, hid, N*I)
		d.run(&lp.down, tmp, x, N)
		d.adapt(l, modDown, tmp, 0, dm, x, N)
		b.Add(dx, tmp, dx, N*dm)
	}
}

// rowGroup is sequences [lo, hi) of a step, whose rows [row, row+rows)
// run through the blocks together.
type rowGroup struct{ lo, hi, row, rows int }

// Side by side (see groups): a group takes sequences until it holds
// groupRows rows, and a last group of at most gemm.DotMaxRows rows joins
// the one before it; the weights of a step must be at most
// groupWeightBytes.
const (
	groupRows        = 8
	groupWeightBytes = 32 << 20
)

// groupSteps, off, runs every step whole (for the tests).
var groupSteps = true

// groups cuts a step into groups of sequences that run through the blocks
// side by side, one goroutine each, where the backend allows it
// (backend.Concurrent), the model is small and the step is more than one
// group, none with more than twice the mean rows; nil otherwise. A small model's step (the toy presets' weights are
// a few MB, in the caches) is dozens of small operations, each of which
// the cores split and then wait on each other: decoding 16 sequences of
// the small preset ran 1.1× faster on two cores than on one. A group
// computes its rows' floats: every group has more than gemm.DotMaxRows
// rows, so each row of a product is summed as in the whole step, and
// attention, norms and sampling are per row or per sequence. Not with
// adapters or at BF16, whose scratch (Decoder.t, Model.in) is the step's.
func (d *Decoder) groups(seqs []backend.DecodeSeq) []rowGroup {
	m := d.m
	if _, ok := m.b.(backend.Concurrent); !ok || !groupSteps || m.half != nil || m.ad != nil {
		return nil
	}
	if 4*m.NumParams() > groupWeightBytes {
		return nil
	}
	var gs []rowGroup
	g := rowGroup{}
	for i, s := range seqs {
		g.hi, g.rows = i+1, g.rows+s.Rows
		if g.rows >= groupRows {
			gs = append(gs, g)
			g = rowGroup{lo: i + 1, hi: i + 1, row: g.row + g.rows}
		}
	}
	if g.rows > 0 {
		if g.rows <= gemm.DotMaxRows && len(gs) > 0 {
			gs[len(gs)-1].hi, gs[len(gs)-1].rows = g.hi, gs[len(gs)-1].rows+g.rows
		} else {
			gs = append(gs, g)
		}
	}
	// Uneven groups (a long reply beside single rows) would leave one
	// goroutine most of the work that every core shared before.
	largest := 0
	for _, g := range gs {
		largest = max(largest, g.rows)
	}
	if len(gs) < 2 || largest*len(gs) > 2*(gs[len(gs)-1].row+gs[len(gs)-1].rows) {
		return nil
	}
	return gs
}
