package backend

import (
	"fmt"
)

// Decoder generates with the Transformer's parameters and a KV cache on
// the backend: S slots (sequences) of up to maxLen tokens each. Each Step
// feeds one token per slot and leaves the next-token logits on the backend
// for Sample, so a decoding loop moves only token ids across.
type Decoder struct {
	t         *Transformer
	S, maxLen int
	lens      []int    // tokens cached per slot
	kc, vc    []Buffer // per layer: [S, maxLen, nKV·hd]
	x, ln, rstd, q, k, v, att, attOut,
	gate, up, h, logits Buffer
}

// NewDecoder allocates the caches and step buffers for S slots of maxLen.
func (t *Transformer) NewDecoder(S, maxLen int) (*Decoder, error) {
	c := t.Config
	if S < 1 || maxLen < 1 || maxLen > c.MaxPositions {
		return nil, fmt.Errorf("decoder: need ≥ 1 slot and 1 ≤ max length ≤ %d (got %d slots of %d)", c.MaxPositions, S, maxLen)
	}
	d := &Decoder{t: t, S: S, maxLen: maxLen, lens: make([]int, S)}
	nH, hd, I := c.NumHeads, c.HeadDim(), c.IntermediateSize
	C, KV := nH*hd, c.NumKVHeads*hd
	for range c.NumLayers {
		for _, cache := range []*[]Buffer{&d.kc, &d.vc} {
			b, err := t.b.Alloc(S * maxLen * KV)
			if err != nil {
				d.Free()
				return nil, fmt.Errorf("decoder: kv cache: %w", err)
			}
			*cache = append(*cache, b)
		}
	}
	for _, n := range []struct {
		buf *Buffer
		n   int
	}{{&d.x, S * c.HiddenSize}, {&d.ln, S * c.HiddenSize}, {&d.rstd, S}, {&d.q, S * C}, {&d.k, S * KV}, {&d.v, S * KV},
		{&d.att, S * nH * maxLen}, {&d.attOut, S * C}, {&d.gate, S * I}, {&d.up, S * I}, {&d.h, S * I}, {&d.logits, S * c.VocabSize}} {
		b, err := t.b.Alloc(n.n)
		if err != nil {
			d.Free()
			return nil, fmt.Errorf("decoder: %w", err)
		}
		*n.buf = b
	}
	return d, nil
}

// Reset empties every slot.
func (d *Decoder) Reset() { clear(d.lens) }

// Len is the number of tokens cached in slot s.
func (d *Decoder) Len(s int) int { return d.lens[s] }

// Step appends tokens[s] to slot s for every slot and returns the logits
// for the next token, [S, vocab_size] on the backend (valid until the next
// Step). It is model.Forward for one position per sequence, attending to
// the cache instead of recomputing the prefix.
func (d *Decoder) Step(tokens []int) (Buffer, error) {
	t, b, c := d.t, d.t.b, d.t.Config
	if len(tokens) != d.S {
		return nil, fmt.Errorf("decoder: %d tokens for %d slots", len(tokens), d.S)
	}
	pos := make([]int, d.S)
	for s, tok := range tokens {
		if tok < 0 || tok >= c.VocabSize {
			return nil, fmt.Errorf("decoder: slot %d: token id %d out of range [0, %d)", s, tok, c.VocabSize)
		}
		if d.lens[s] >= d.maxLen {
			return nil, fmt.Errorf("decoder: slot %d is full (%d tokens)", s, d.maxLen)
		}
		pos[s] = d.lens[s]
	}
	for s := range d.lens {
		d.lens[s]++
	}
	S, dm, V := d.S, c.HiddenSize, c.VocabSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)

	b.EmbeddingForward(d.x, tokens, t.p.embed, S, dm)
	for l := range c.NumLayers {
		w := &t.p.layers[l]
		b.RMSNormForward(d.ln, d.rstd, d.x, w.inNorm, S, dm, eps)
		MatmulForward(b, d.q, d.ln, w.q, w.qb, S, dm, C)
		MatmulForward(b, d.k, d.ln, w.k, w.kb, S, dm, KV)
		MatmulForward(b, d.v, d.ln, w.v, w.vb, S, dm, KV)
		b.RopeForward(d.q, t.cos, t.sin, pos, S, nH, hd)
		b.RopeForward(d.k, t.cos, t.sin, pos, S, nKV, hd)
		b.AppendKV(d.kc[l], d.vc[l], d.k, d.v, d.lens, KV, d.maxLen)
		b.AttendCached(d.attOut, d.att, d.q, d.kc[l], d.vc[l], d.lens, nH, nKV, hd, d.maxLen)
		// x += o(attOut); x += down(silu(gate(ln))·up(ln)), as the model's
		// residual stream (the sums commute with nothing else here).
		b.Gemm(false, true, S, dm, C, 1, d.attOut, C, w.o, C, 1, d.x, dm)
		b.RMSNormForward(d.ln, d.rstd, d.x, w.postNorm, S, dm, eps)
		MatmulForward(b, d.gate, d.ln, w.gate, nil, S, dm, I)
		MatmulForward(b, d.up, d.ln, w.up, nil, S, dm, I)
		b.SwiGLUForward(d.h, d.gate, d.up, S*I)
		b.Gemm(false, true, S, dm, I, 1, d.h, I, w.down, I, 1, d.x, dm)
	}
	b.RMSNormForward(d.ln, d.rstd, d.x, t.p.norm, S, dm, eps)
	MatmulForward(b, d.logits, d.ln, t.p.lmHead, nil, S, dm, V)
	return d.logits, b.Err()
}

// Free releases the caches and buffers.
func (d *Decoder) Free() {
	for _, x := range append(append([]Buffer{d.x, d.ln, d.rstd, d.q, d.k, d.v, d.att, d.attOut, d.gate, d.up, d.h, d.logits}, d.kc...), d.vc...) {
		if x != nil {
			d.t.b.Free(x)
		}
	}
	d.kc, d.vc = nil, nil
}
