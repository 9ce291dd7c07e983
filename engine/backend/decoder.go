package backend

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/sample"
)

// Decoder is model.Decoder on a backend: it runs a Transformer
// incrementally over sequences that grow across turns (prompt, generated
// response, environment reply, ...), named by caller-chosen ids, with
// their keys and values cached on the backend, so a prefix is never
// recomputed. Its API is model.Decoder's — Append, Generate (same checks,
// same sampling draws, same stop rule), Remove — so the rollout drives
// either; on the "cpu" backend it generates the model's tokens.
//
// The cache is, per layer, S slots of cap positions ([S, cap, nKV·hd] for
// keys and for values): a new sequence takes the lowest free slot, Remove
// frees it. cap starts small and doubles, up to maxLen, when a sequence
// outgrows it (the cached prefixes are copied on the backend), so a model
// with a long max_position_embeddings does not reserve S·maxLen positions
// for rollouts that never get there. Only token ids cross to the backend
// and sampled ids come back; logits stay there.
//
// The Decoder reads the Transformer's parameters (at BF16, their bf16
// copy, as of the last Refresh) at every step: after an update, the cached
// keys and values are those of the old weights, so make a new Decoder per
// rollout (as for model.Decoder).
type Decoder struct {
	t              *Transformer
	S, maxLen, cap int
	seqs           map[int]*dseq
	used           []bool   // slot s holds a sequence
	kc, vc         []Buffer // per layer: [S, cap, nKV·hd]

	// Scratch of one block of at most decodeRows rows, and of the B ≤ S
	// sequences of one Append.
	rows                  int // rows the block scratch holds
	x, ln, rstd, tmp      Buffer
	q, attOut, k, v, att  Buffer
	gate, up, h           Buffer
	last, lastLn, lastStd Buffer
	logits                Buffer // [B, vocab_size]
	rngs                  []*sample.RNG
}

// dseq is one sequence: its cache slot, the tokens cached there, and the
// tokens known but not yet run (the last token Generate sampled).
type dseq struct {
	slot, n int
	pending []int
}

// initialCap is the positions per slot a decoder starts with.
const initialCap = 256

// decodeRows bounds the rows (new tokens) one block of an Append runs, so
// that a long prefill does not need attention scratch for every row at
// once (AttendCached takes nH·cap floats per row). Rows of one sequence
// run in order, and a row only reads cache entries written by earlier rows
// or blocks, so splitting changes nothing in the results.
const decodeRows = 512

// NewDecoder returns an empty decoder with room for S sequences of up to
// maxLen tokens (at most max_position_embeddings). The model needs an LM
// head.
func (t *Transformer) NewDecoder(S, maxLen int) (*Decoder, error) {
	c := t.Config
	if !c.LMHead {
		return nil, errors.New("decoder: the model has no LM head (lm_head: false)")
	}
	if S < 1 || maxLen < 1 || maxLen > c.MaxPositions {
		return nil, fmt.Errorf("decoder: need ≥ 1 slot and 1 ≤ max length ≤ %d (got %d slots of %d)", c.MaxPositions, S, maxLen)
	}
	d := &Decoder{t: t, S: S, maxLen: maxLen, seqs: map[int]*dseq{}, used: make([]bool, S)}
	if err := d.reserve(min(initialCap, maxLen)); err != nil {
		d.Free()
		return nil, err
	}
	dm := c.HiddenSize
	if err := growAll(t.b, []need{{&d.last, S * dm}, {&d.lastLn, S * dm}, {&d.lastStd, S}, {&d.logits, S * c.VocabSize}}); err != nil {
		d.Free()
		return nil, fmt.Errorf("decoder: %w", err)
	}
	return d, nil
}

// reserve makes every slot hold n positions, copying the cached prefixes
// into the new caches.
func (d *Decoder) reserve(n int) error {
	if n <= d.cap {
		return nil
	}
	b, c := d.t.b, d.t.Config
	KV := c.NumKVHeads * c.HeadDim()
	fresh := make([]Buffer, 0, 2*c.NumLayers)
	for range 2 * c.NumLayers {
		x, err := b.Alloc(d.S * n * KV)
		if err != nil {
			for _, x := range fresh {
				b.Free(x)
			}
			return fmt.Errorf("decoder: kv cache of %d slots × %d positions: %w", d.S, n, err)
		}
		fresh = append(fresh, x)
	}
	for l, old := range append(slices.Clone(d.kc), d.vc...) {
		for _, s := range d.seqs {
			if s.n > 0 {
				b.Copy(b.Slice(fresh[l], s.slot*n*KV, s.n*KV), b.Slice(old, s.slot*d.cap*KV, s.n*KV), s.n*KV)
			}
		}
		b.Free(old)
	}
	d.kc, d.vc, d.cap = fresh[:c.NumLayers], fresh[c.NumLayers:], n
	d.rows = 0 // the attention scratch needs nH·cap floats per row
	return b.Err()
}

// MaxPositions is the most tokens a sequence can hold (maxLen).
func (d *Decoder) MaxPositions() int { return d.maxLen }

// Len returns the number of tokens of sequence id (0 if unknown).
func (d *Decoder) Len(id int) int {
	n, _, _ := d.lengths(id)
	return n
}

// lengths is model.CheckAppend's view of a sequence.
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

// Remove drops sequence id and frees its slot (no-op if unknown).
func (d *Decoder) Remove(id int) {
	if s, ok := d.seqs[id]; ok {
		d.used[s.slot] = false
		delete(d.seqs, id)
	}
}

// Append adds chunks[i] to sequence ids[i] (creating the sequence if new)
// and runs the new tokens — each sequence's pending tokens, then its chunk
// — attending to the cached prefixes. It returns the logits of the next
// token after each sequence's last token, row i for ids[i]
// ([len(ids), vocab_size] on the backend, valid until the next call). A
// rejected request (bad ids, tokens or lengths, no free slot) changes
// nothing.
func (d *Decoder) Append(ids []int, chunks [][]int) (Buffer, error) {
	c := d.t.Config
	fresh, _, err := model.CheckAppend(ids, chunks, c.VocabSize, d.maxLen, fmt.Sprintf("the decoder's %d positions", d.maxLen), d.lengths)
	if err != nil {
		return nil, err
	}
	if free := d.S - len(d.seqs); fresh > free {
		return nil, fmt.Errorf("decoder: %d new sequences but only %d of %d slots are free", fresh, free, d.S)
	}

	longest := 0
	for i, id := range ids {
		longest = max(longest, d.Len(id)+len(chunks[i]))
	}
	if longest > d.cap {
		if err := d.reserve(min(max(2*d.cap, longest), d.maxLen)); err != nil {
			return nil, err
		}
	}

	// Lay the new tokens out as rows, sequence by sequence: row r is token
	// tokens[r] at position pos[r] of slot slots[r].
	B := len(ids)
	seqs := make([]*dseq, B)
	var tokens, slots, lens []int
	ends := make([]int, B) // row after each sequence's last
	for i, id := range ids {
		s, ok := d.seqs[id]
		if !ok {
			s = &dseq{slot: slices.Index(d.used, false)}
			d.used[s.slot] = true
			d.seqs[id] = s
		}
		seqs[i] = s
		for j, tok := range append(slices.Clone(s.pending), chunks[i]...) {
			tokens, slots, lens = append(tokens, tok), append(slots, s.slot), append(lens, s.n+j+1)
		}
		ends[i] = len(tokens)
	}
	for lo, seq := 0, 0; lo < len(tokens); {
		hi := min(lo+decodeRows, len(tokens))
		if err := d.block(tokens[lo:hi], slots[lo:hi], lens[lo:hi]); err != nil {
			return nil, err
		}
		// Keep the last row of every sequence that ends in this block.
		var last []int
		first := seq
		for seq < B && ends[seq] <= hi {
			last = append(last, ends[seq]-1-lo)
			seq++
		}
		if len(last) > 0 {
			dm := c.HiddenSize
			// EmbeddingForward is a row gather: out[i] = x[last[i]].
			d.t.b.EmbeddingForward(d.t.b.Slice(d.last, first*dm, len(last)*dm), last, d.x, len(last), dm)
		}
		lo = hi
	}
	for i, s := range seqs {
		s.n += len(s.pending) + len(chunks[i])
		s.pending = s.pending[:0]
	}
	b, t := d.t.b, d.t
	dm, V := c.HiddenSize, c.VocabSize
	b.RMSNormForward(d.lastLn, d.lastStd, d.last, t.p.norm, B, dm, float32(c.RMSNormEps))
	if err := t.growHalf(B * dm); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	t.linear(d.logits, t.in(0, d.lastLn, B*dm), t.mat().lmHead, nil, B, dm, V)
	return d.logits, b.Err()
}

// block runs rows through every layer, writing their keys and values into
// the cache (row r at position lens[r]−1 of slot slots[r]) and attending
// to the first lens[r] cached positions; the block's last hidden states
// are left in d.x. The ops are model.Forward's, row by row.
func (d *Decoder) block(tokens, slots, lens []int) error {
	t, b, c := d.t, d.t.b, d.t.Config
	N, dm := len(tokens), c.HiddenSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)
	if N > d.rows {
		if err := growAll(b, []need{{&d.x, N * dm}, {&d.ln, N * dm}, {&d.tmp, N * dm}, {&d.rstd, N},
			{&d.q, N * C}, {&d.attOut, N * C}, {&d.k, N * KV}, {&d.v, N * KV}, {&d.att, N * nH * d.cap},
			{&d.gate, N * I}, {&d.up, N * I}, {&d.h, N * I}}); err != nil {
			return fmt.Errorf("decoder: %w", err)
		}
		d.rows = N
	}
	if err := t.growHalf(N * max(dm, C, I)); err != nil { // the precision may have changed since
		return fmt.Errorf("decoder: %w", err)
	}
	pos := make([]int, N)
	for r, L := range lens {
		pos[r] = L - 1
	}
	b.EmbeddingForward(d.x, tokens, t.p.embed, N, dm)
	mw := t.mat()
	for l := range c.NumLayers {
		w, m := &t.p.layers[l], &mw.layers[l]
		b.RMSNormForward(d.ln, d.rstd, d.x, w.inNorm, N, dm, eps)
		x := t.in(0, d.ln, N*dm)
		t.linear(d.q, x, m.q, w.qb, N, dm, C)
		t.linear(d.k, x, m.k, w.kb, N, dm, KV)
		t.linear(d.v, x, m.v, w.vb, N, dm, KV)
		b.RopeForward(d.q, t.cos, t.sin, pos, N, nH, hd)
		b.RopeForward(d.k, t.cos, t.sin, pos, N, nKV, hd)
		b.AppendKV(d.kc[l], d.vc[l], d.k, d.v, slots, lens, KV, d.cap)
		b.AttendCached(d.attOut, d.att, d.q, d.kc[l], d.vc[l], slots, lens, nH, nKV, hd, d.cap)
		// x = o(attOut) + x; x = down(silu(gate(ln))·up(ln)) + x, the
		// model's residual sums in the model's order.
		t.linear(d.tmp, t.in(0, d.attOut, N*C), m.o, nil, N, C, dm)
		b.Add(d.x, d.tmp, d.x, N*dm)
		b.RMSNormForward(d.ln, d.rstd, d.x, w.postNorm, N, dm, eps)
		x = t.in(0, d.ln, N*dm)
		t.linear(d.gate, x, m.gate, nil, N, dm, I)
		t.linear(d.up, x, m.up, nil, N, dm, I)
		b.SwiGLUForward(d.h, d.gate, d.up, N*I)
		t.linear(d.tmp, t.in(0, d.h, N*I), m.down, nil, N, I, dm)
		b.Add(d.x, d.tmp, d.x, N*dm)
	}
	return b.Err()
}

// Generate is model.Decoder.Generate on the backend: it appends each
// request's prompt, then samples tokens for all the requests' sequences in
// batched steps (Backend.Sample, one draw per token from the request's
// RNG) until each has produced a stop sequence, MaxNew tokens, or filled
// its maxLen positions, and returns the generated tokens per request (stop
// sequence included). The last token of each sequence stays pending, run
// by the next Append or Generate on that sequence.
func (d *Decoder) Generate(reqs []model.Request, o model.GenerateOptions) ([][]int, error) {
	if err := o.Sample.Validate(); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	if o.MaxNew < 1 {
		return nil, fmt.Errorf("generate: max_new_tokens: must be ≥ 1 (got %d)", o.MaxNew)
	}
	if len(reqs) == 0 {
		return nil, errors.New("generate: empty batch: no requests")
	}
	ids, chunks := make([]int, len(reqs)), make([][]int, len(reqs))
	for i, r := range reqs {
		if r.RNG == nil && o.Sample.Temperature > 0 {
			return nil, fmt.Errorf("generate: sequence %d: sampling at temperature %g needs an RNG", r.ID, o.Sample.Temperature)
		}
		if n := d.Len(r.ID) + len(r.Prompt); n >= d.maxLen {
			return nil, fmt.Errorf("generate: sequence %d: length %d leaves no room to generate within the decoder's %d positions", r.ID, n, d.maxLen)
		}
		ids[i], chunks[i] = r.ID, r.Prompt
	}
	logits, err := d.Append(ids, chunks)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	V := d.t.Config.VocabSize
	out := make([][]int, len(reqs))
	live := make([]int, len(reqs)) // request index of each row of logits
	for i := range live {
		live[i] = i
	}
	for len(live) > 0 {
		d.rngs = d.rngs[:0]
		for _, i := range live {
			d.rngs = append(d.rngs, reqs[i].RNG)
		}
		toks, err := d.t.b.Sample(logits, len(live), V, o.Sample, d.rngs)
		if err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		next := live[:0]
		ids, chunks = ids[:0], chunks[:0]
		for row, i := range live {
			tok := toks[row]
			out[i] = append(out[i], tok)
			s := d.seqs[reqs[i].ID]
			if o.Stop.Match(out[i]) || len(out[i]) >= o.MaxNew || s.n+1 >= d.maxLen {
				s.pending = append(s.pending, tok)
				continue
			}
			next = append(next, i)
			ids, chunks = append(ids, reqs[i].ID), append(chunks, []int{tok})
		}
		live = next
		if len(live) == 0 {
			break
		}
		if logits, err = d.Append(ids, chunks); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
	}
	return out, nil
}

// Free releases the caches and buffers.
func (d *Decoder) Free() {
	bufs := append([]Buffer{d.x, d.ln, d.rstd, d.tmp, d.q, d.attOut, d.k, d.v, d.att, d.gate, d.up, d.h,
		d.last, d.lastLn, d.lastStd, d.logits}, d.kc...)
	for _, x := range append(bufs, d.vc...) {
		if x != nil {
			d.t.b.Free(x)
		}
	}
	*d = Decoder{}
}
