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
	x, ln, rstd, tmp      []float32 // [N, d], rstd [N]
	qkv                   []float32 // [N, C+2·KV]: q | k | v of each row
	attOut                []float32 // [N, C]
	att                   []float32 // per (sequence, head) n×(past+n)
	gateUp                []float32 // [N, 2·I]: gate | up of each row
	h                     []float32 // [N, I]
	last, lastLn, lastStd []float32 // [B, d], [B]
	logits                []float32 // [B, V]
}

// packedLayer is one block's weight matrices packed for the matrix kernel
// (norms are used from the Model). The q, k and v projections are packed as
// one matrix of C+2·KV outputs, and gate and up as one of 2·I, so each
// input row is multiplied once per block of products (one pass, one
// parallel split) instead of three and two times; every output is summed
// exactly as in its own product, since the kernel sums each column alone.
type packedLayer struct {
	qkv, o, gateUp, down *gemm.PackedB
	qkvBias              []float32 // [C+2·KV]; nil without attention_bias
}

// cacheSeq is one sequence's cache: per layer, the keys (after RoPE) and
// values of its first n tokens, head by head. Key/value head g's keys are a
// block of cap rows of hd floats at k[g·cap·hd:], its values the same at
// v[g·cap·hd:], so a decoding step streams two contiguous blocks per head
// (rows of all heads interleaved made it 4× slower once the caches outgrew
// the L2, and values stored transposed, a short row per channel, made the
// attention 25% slower).
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
	// The matrices are packed in parallel, one task each (the LM head last).
	L := len(m.p.layers)
	parallel.For(4*L+1, 1, func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			if t == 4*L {
				d.lmHead = cpu.PackWeight(m.p.lmHead, dm, c.VocabSize)
				continue
			}
			// Torch layout [out, in]: stacking the rows stacks the outputs.
			w, pl := &m.p.layers[t/4], &d.layers[t/4]
			switch t % 4 {
			case 0:
				pl.qkv = cpu.PackWeight(slices.Concat(w.q, w.k, w.v), dm, C+2*KV)
				if w.qb != nil {
					pl.qkvBias = slices.Concat(w.qb, w.kb, w.vb)
				}
			case 1:
				pl.o = cpu.PackWeight(w.o, C, dm)
			case 2:
				pl.gateUp = cpu.PackWeight(slices.Concat(w.gate, w.up), dm, 2*I)
			case 3:
				pl.down = cpu.PackWeight(w.down, I, dm)
			}
		}
	})
	return d, nil
}

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
func (d *Decoder) Remove(id int) { delete(d.seqs, id) }

// Append adds chunks[i] to sequence ids[i] (creating the sequence if new)
// and runs the new tokens — each sequence's pending tokens, then its chunk —
// through the model in one packed step, attending to the cached prefixes.
// It returns the logits of the next token after each sequence's last token,
// row i for ids[i] ([len(ids), vocab_size], valid until the next call).
// On error nothing changes.
func (d *Decoder) Append(ids []int, chunks [][]int) ([]float32, error) {
	return d.append(ids, chunks, 0)
}

// append is Append with room reserved in each sequence's caches for ahead
// more tokens (Generate's max_new_tokens), so that the caches are not
// regrown, and copied, as generation proceeds.
func (d *Decoder) append(ids []int, chunks [][]int, ahead int) ([]float32, error) {
	c := d.m.Config
	_, N, err := CheckAppend(ids, chunks, c.VocabSize, c.MaxPositions, fmt.Sprintf("max_position_embeddings %d", c.MaxPositions), d.lengths)
	if err != nil {
		return nil, err
	}

	// Gather the new tokens, sequence by sequence, and make room in the caches.
	B := len(ids)
	seqs := make([]*cacheSeq, B)
	lens, past := make([]int, B), make([]int, B)
	tokens := make([]int, 0, N)
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
		d.reserve(s, s.n+lens[i]+ahead)
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
		k, v := make([]float32, capacity*KV), make([]float32, capacity*KV)
		for g := 0; g < c.NumKVHeads; g++ {
			copy(k[g*capacity*hd:g*capacity*hd+s.n*hd], s.k[l][g*s.cap*hd:g*s.cap*hd+s.n*hd])
			copy(v[g*capacity*hd:g*capacity*hd+s.n*hd], s.v[l][g*s.cap*hd:g*s.cap*hd+s.n*hd])
		}
		s.k[l], s.v[l] = k, v
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
	QKV := C + 2*KV
	d.x, d.ln, d.rstd, d.tmp = grow(d.x, N*dm), grow(d.ln, N*dm), grow(d.rstd, N), grow(d.tmp, N*dm)
	d.qkv, d.attOut = grow(d.qkv, N*QKV), grow(d.attOut, N*C)
	d.gateUp, d.h = grow(d.gateUp, N*2*I), grow(d.h, N*I)
	group := nH / nKV
	// Scratch for attention scores: a prefill needs each head's
	// AttendScratch, a single new token only AttendLast's W scores per group.
	rows, attOffs := make([]int, B), make([]int, B)
	r, a := 0, 0
	for i, n := range lens {
		rows[i], attOffs[i] = r, a
		r += n
		if n == 1 {
			a += nKV * (past[i] + 1)
		} else {
			a += nH * cpu.AttendScratch(n, past[i])
		}
	}
	d.att = grow(d.att, a)

	cpu.EmbeddingForward(d.x, tokens, m.p.embed, N, dm)
	for l := range m.p.layers {
		w, pw := &m.p.layers[l], &d.layers[l]
		cpu.RMSNormForward(d.ln, d.rstd, d.x, w.inNorm, N, dm, eps)
		// The bias is added in the attention tasks below, with the RoPE.
		cpu.MatmulForwardPacked(d.qkv, d.ln, pw.qkv, nil, N, dm, QKV)
		// One task per (sequence, key/value head): it adds the bias to its
		// rows' query heads of the group and to their key and value, rotates
		// the queries in place and the keys into the cache, copies the values
		// into the cache, then attends (the group's query heads read the same
		// cached keys and values). Each element gets the same operations as
		// in a bias pass and a RoPE loop of their own, but a decoding step
		// (one row per sequence) ran that loop as a single chunk, serially,
		// and its stores to the new cache rows, which miss the caches, now
		// drain while the task streams the cached prefix.
		parallel.For(B*nKV, 1, func(_, lo, hi int) {
			for task := lo; task < hi; task++ {
				i, g := task/nKV, task%nKV
				n, o, s, W := lens[i], rows[i], seqs[i], past[i]+lens[i]
				kc, vc := s.k[l][g*s.cap*hd:], s.v[l][g*s.cap*hd:]
				h0 := g * group
				for j := 0; j < n; j++ {
					r, p := o+j, past[i]+j
					row := d.qkv[r*QKV : (r+1)*QKV]
					cs, sn := m.cos[p*hd/2:(p+1)*hd/2], m.sin[p*hd/2:(p+1)*hd/2]
					q := row[h0*hd : (h0+group)*hd]
					k, v := row[C+g*hd:C+(g+1)*hd], row[C+KV+g*hd:C+KV+(g+1)*hd]
					if b := pw.qkvBias; b != nil {
						cpu.AddInPlace(q, b[h0*hd:(h0+group)*hd])
						cpu.AddInPlace(k, b[C+g*hd:C+(g+1)*hd])
						cpu.AddInPlace(v, b[C+KV+g*hd:C+KV+(g+1)*hd])
					}
					for h := 0; h < group; h++ {
						cpu.RopeHead(q[h*hd:(h+1)*hd], q[h*hd:(h+1)*hd], cs, sn)
					}
					// The key is rotated in place, then copied: the
					// rotation's scalar stores straight into the new cache
					// row stalled on its missing lines more than the copy's
					// few wide stores do.
					cpu.RopeHead(k, k, cs, sn)
					copy(kc[p*hd:(p+1)*hd], k)
					copy(vc[p*hd:(p+1)*hd], v)
				}
				if n == 1 {
					cpu.AttendLast(d.attOut[o*C+h0*hd:], d.att[attOffs[i]+g*W:], d.qkv[o*QKV+h0*hd:], kc, vc, group, W, hd, hd)
					continue
				}
				for h := h0; h < h0+group; h++ {
					att := d.att[attOffs[i]+h*cpu.AttendScratch(n, past[i]):]
					cpu.AttendHead(d.attOut[o*C+h*hd:], att, d.qkv[o*QKV+h*hd:], kc, vc, n, past[i], hd, QKV, hd, C)
				}
			}
		})
		cpu.MatmulForwardPacked(d.tmp, d.attOut, pw.o, nil, N, C, dm)
		cpu.ResidualForward(d.x, d.tmp, d.x, N*dm)
		cpu.RMSNormForward(d.ln, d.rstd, d.x, w.postNorm, N, dm, eps)
		cpu.MatmulForwardPacked(d.gateUp, d.ln, pw.gateUp, nil, N, dm, 2*I)
		cpu.SwiGLURows(d.h, d.gateUp, N, I)
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
