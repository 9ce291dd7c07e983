package model

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
	"github.com/ragen-go/ragen/engine/backend/cpu/parallel"
)

// Decoder runs a Model incrementally over a batch of sequences that grow
// across turns, keeping each sequence's keys and values (the KV cache) so
// that a prefix is never recomputed. A rollout typically
//
//  1. appends each conversation's prompt (prefill),
//  2. generates token by token for all live sequences at once,
//  3. appends the environment's reply to some sequences (only the new
//     chunk runs, attending to the cached prefix),
//  4. generates again, and removes sequences when their episode ends.
//
// Sequences are named by caller-chosen ids. A Decoder has its own scratch
// and its own copy of the weight matrices, packed once at creation for the
// matrix kernel (a decoding step multiplies only a few rows by each weight,
// so packing them at every step cost as much as the products). It therefore
// keeps using the parameters the Model had when NewDecoder ran: create a new
// Decoder after the parameters change (a rollout creates one per call).
// Not safe for concurrent use.
type Decoder struct {
	m      *Model
	seqs   map[int]*cacheSeq
	layers []packedLayer
	lmHead *gemm.PackedB

	// Scratch for one Append, grown to the largest step and reused.
	pos                   []int
	x, ln, rstd, tmp      []float32 // [N, d], rstd [N]
	q, attOut             []float32 // [N, C]
	k, v                  []float32 // [N, KV]
	att                   []float32 // per (sequence, head) n×(past+n)
	gate, up, h           []float32 // [N, I]
	last, lastLn, lastStd []float32 // [B, d], [B]
	logits                []float32 // [B, V]
}

// packedLayer is one block's weight matrices packed for the matrix kernel
// (biases and norms are used from the Model).
type packedLayer struct {
	q, k, v, o, gate, up, down *gemm.PackedB
}

// cacheSeq is one sequence's cache: per layer, the keys (after RoPE) and
// values of its first n tokens, head by head. Key/value head g's keys are a
// block of cap rows of hd floats at k[g·cap·hd:], so a decoding step streams
// one contiguous block per head (rows of all heads interleaved made it 4×
// slower once the caches outgrew the L2). Values are stored transposed —
// channel c of position j at v[c·cap+j], c over all KV channels — so that
// a decoding step's p·v is a product of stored rows (cpu.AttendLast).
type cacheSeq struct {
	k, v    [][]float32 // [layer][cap·KV]
	cap     int         // positions the caches hold
	n       int         // tokens in the cache
	pending []int       // tokens known but not yet run (the last token Generate sampled)
}

// NewDecoder returns an empty decoder for m, with m's current weights
// packed (see Decoder). The model needs an LM head.
func (m *Model) NewDecoder() (*Decoder, error) {
	c := m.Config
	if !c.LMHead {
		return nil, errors.New("decoder: the model has no LM head (lm_head: false)")
	}
	dm, C, KV, I := c.HiddenSize, c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim(), c.IntermediateSize
	d := &Decoder{m: m, seqs: map[int]*cacheSeq{}, layers: make([]packedLayer, len(m.p.layers))}
	for l, w := range m.p.layers {
		d.layers[l] = packedLayer{
			q: cpu.PackWeight(w.q, dm, C), k: cpu.PackWeight(w.k, dm, KV), v: cpu.PackWeight(w.v, dm, KV),
			o: cpu.PackWeight(w.o, C, dm), gate: cpu.PackWeight(w.gate, dm, I),
			up: cpu.PackWeight(w.up, dm, I), down: cpu.PackWeight(w.down, I, dm),
		}
	}
	d.lmHead = cpu.PackWeight(m.p.lmHead, dm, c.VocabSize)
	return d, nil
}

// Len returns the number of tokens of sequence id (0 if unknown).
func (d *Decoder) Len(id int) int {
	s, ok := d.seqs[id]
	if !ok {
		return 0
	}
	return s.n + len(s.pending)
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
func (d *Decoder) Remove(id int) { delete(d.seqs, id) }

// Append adds chunks[i] to sequence ids[i] (creating the sequence if new)
// and runs the new tokens — each sequence's pending tokens, then its chunk —
// through the model in one packed step, attending to the cached prefixes.
// It returns the logits of the next token after each sequence's last token,
// row i for ids[i] ([len(ids), vocab_size], valid until the next call).
// On error nothing changes.
func (d *Decoder) Append(ids []int, chunks [][]int) ([]float32, error) {
	c := d.m.Config
	if len(ids) == 0 {
		return nil, errors.New("decoder: empty batch: no sequences")
	}
	if len(chunks) != len(ids) {
		return nil, fmt.Errorf("decoder: %d ids but %d chunks", len(ids), len(chunks))
	}
	seen := make(map[int]bool, len(ids))
	N := 0
	for i, id := range ids {
		if seen[id] {
			return nil, fmt.Errorf("decoder: sequence %d appears twice in one step", id)
		}
		seen[id] = true
		for j, t := range chunks[i] {
			if t < 0 || t >= c.VocabSize {
				return nil, fmt.Errorf("decoder: sequence %d: token %d: id %d out of range [0, %d)", id, j, t, c.VocabSize)
			}
		}
		add := len(chunks[i])
		if s, ok := d.seqs[id]; ok {
			add += len(s.pending)
		}
		if add == 0 {
			return nil, fmt.Errorf("decoder: sequence %d: nothing to append (empty chunk)", id)
		}
		if n := d.Len(id) + len(chunks[i]); n > c.MaxPositions {
			return nil, fmt.Errorf("decoder: sequence %d: length %d would exceed max_position_embeddings %d", id, n, c.MaxPositions)
		}
		N += add
	}

	// Gather the new tokens, sequence by sequence, and make room in the caches.
	B := len(ids)
	seqs := make([]*cacheSeq, B)
	lens, past := make([]int, B), make([]int, B)
	tokens := make([]int, 0, N)
	d.pos = d.pos[:0]
	for i, id := range ids {
		s, ok := d.seqs[id]
		if !ok {
			s = &cacheSeq{k: make([][]float32, c.NumLayers), v: make([][]float32, c.NumLayers)}
			d.seqs[id] = s
		}
		seqs[i], past[i] = s, s.n
		start := len(tokens)
		tokens = append(append(tokens, s.pending...), chunks[i]...)
		lens[i] = len(tokens) - start
		for j := 0; j < lens[i]; j++ {
			d.pos = append(d.pos, s.n+j)
		}
		d.reserve(s, s.n+lens[i])
	}
	d.step(tokens, seqs, lens, past)
	for i, s := range seqs {
		s.n += lens[i]
		s.pending = s.pending[:0]
	}
	return d.logits, nil
}

// reserve grows the caches of s to hold n tokens (doubling, capped at
// max_position_embeddings).
func (d *Decoder) reserve(s *cacheSeq, n int) {
	c := d.m.Config
	KV := c.NumKVHeads * c.HeadDim()
	if s.cap >= n {
		return
	}
	capacity := min(max(2*s.cap, n, 16), c.MaxPositions)
	hd := c.HeadDim()
	for l := range s.k {
		k := make([]float32, capacity*KV)
		for g := 0; g < c.NumKVHeads; g++ {
			copy(k[g*capacity*hd:g*capacity*hd+s.n*hd], s.k[l][g*s.cap*hd:g*s.cap*hd+s.n*hd])
		}
		vt := make([]float32, capacity*KV)
		for ch := 0; ch < KV; ch++ {
			copy(vt[ch*capacity:ch*capacity+s.n], s.v[l][ch*s.cap:ch*s.cap+s.n])
		}
		s.k[l], s.v[l] = k, vt
	}
	s.cap = capacity
}

// step runs the packed new tokens through every block, writing their keys
// and values into the caches, and leaves in d.logits the logits at each
// sequence's last new token. It performs the same operations row by row as
// Model.Forward, so the logits match a full forward over the whole
// sequences.
func (d *Decoder) step(tokens []int, seqs []*cacheSeq, lens, past []int) {
	m, c := d.m, d.m.Config
	N, B := len(tokens), len(seqs)
	dm, V := c.HiddenSize, c.VocabSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)
	d.x, d.ln, d.rstd, d.tmp = grow(d.x, N*dm), grow(d.ln, N*dm), grow(d.rstd, N), grow(d.tmp, N*dm)
	d.q, d.attOut, d.k, d.v = grow(d.q, N*C), grow(d.attOut, N*C), grow(d.k, N*KV), grow(d.v, N*KV)
	d.gate, d.up, d.h = grow(d.gate, N*I), grow(d.up, N*I), grow(d.h, N*I)
	group := nH / nKV
	// Scratch for attention scores: a prefill needs each head's n×(past+n)
	// block, a single new token only AttendLast's W scores per group.
	rows, attOffs := make([]int, B), make([]int, B)
	r, a := 0, 0
	for i, n := range lens {
		rows[i], attOffs[i] = r, a
		r += n
		if n == 1 {
			a += nKV * (past[i] + 1)
		} else {
			a += nH * n * (past[i] + n)
		}
	}
	d.att = grow(d.att, a)

	cpu.EmbeddingForward(d.x, tokens, m.p.embed, N, dm)
	for l := range m.p.layers {
		w, pw := &m.p.layers[l], &d.layers[l]
		cpu.RMSNormForward(d.ln, d.rstd, d.x, w.inNorm, N, dm, eps)
		cpu.MatmulForwardPacked(d.q, d.ln, pw.q, w.qb, N, dm, C)
		cpu.MatmulForwardPacked(d.k, d.ln, pw.k, w.kb, N, dm, KV)
		cpu.MatmulForwardPacked(d.v, d.ln, pw.v, w.vb, N, dm, KV)
		cpu.RopeForward(d.q, m.cos, m.sin, d.pos, N, nH, hd)
		cpu.RopeForward(d.k, m.cos, m.sin, d.pos, N, nKV, hd)
		for i, s := range seqs {
			kc, vt := s.k[l], s.v[l]
			for j := 0; j < lens[i]; j++ {
				r, p := rows[i]+j, past[i]+j
				for g := 0; g < nKV; g++ {
					copy(kc[(g*s.cap+p)*hd:(g*s.cap+p+1)*hd], d.k[r*KV+g*hd:r*KV+(g+1)*hd])
				}
				for ch, x := range d.v[r*KV : (r+1)*KV] {
					vt[ch*s.cap+p] = x
				}
			}
		}
		// One task per (sequence, key/value head): the group's query heads
		// read the same cached keys and values.
		parallel.For(B*nKV, 1, func(_, lo, hi int) {
			for task := lo; task < hi; task++ {
				i, g := task/nKV, task%nKV
				n, o, s, W := lens[i], rows[i], seqs[i], past[i]+lens[i]
				kc, vt := s.k[l][g*s.cap*hd:], s.v[l][g*hd*s.cap:]
				if n == 1 {
					h0 := g * group
					cpu.AttendLast(d.attOut[o*C+h0*hd:], d.att[attOffs[i]+g*W:], d.q[o*C+h0*hd:], kc, vt, group, W, hd, hd, s.cap)
					continue
				}
				for h := g * group; h < (g+1)*group; h++ {
					att := d.att[attOffs[i]+h*n*W:]
					cpu.AttendHeadVT(d.attOut[o*C+h*hd:], att, d.q[o*C+h*hd:], kc, vt, n, past[i], hd, C, hd, s.cap, C)
				}
			}
		})
		cpu.MatmulForwardPacked(d.tmp, d.attOut, pw.o, nil, N, C, dm)
		cpu.ResidualForward(d.x, d.tmp, d.x, N*dm)
		cpu.RMSNormForward(d.ln, d.rstd, d.x, w.postNorm, N, dm, eps)
		cpu.MatmulForwardPacked(d.gate, d.ln, pw.gate, nil, N, dm, I)
		cpu.MatmulForwardPacked(d.up, d.ln, pw.up, nil, N, dm, I)
		cpu.SwiGLUForward(d.h, d.gate, d.up, N*I)
		cpu.MatmulForwardPacked(d.tmp, d.h, pw.down, nil, N, I, dm)
		cpu.ResidualForward(d.x, d.tmp, d.x, N*dm)
	}
	// Only each sequence's last row predicts a token we need.
	d.last, d.lastLn, d.lastStd = grow(d.last, B*dm), grow(d.lastLn, B*dm), grow(d.lastStd, B)
	for i := range seqs {
		r := rows[i] + lens[i] - 1
		copy(d.last[i*dm:(i+1)*dm], d.x[r*dm:(r+1)*dm])
	}
	cpu.RMSNormForward(d.lastLn, d.lastStd, d.last, m.p.norm, B, dm, eps)
	d.logits = grow(d.logits, B*V)
	cpu.MatmulForwardPacked(d.logits, d.lastLn, d.lmHead, nil, B, dm, V)
}
