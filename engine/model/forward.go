package model

import (
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/backend/cpu"
	"gorgonia.org/tensor"
)

// Want says which heads Forward evaluates. Skipping a head skips its
// compute: a critic asks for Value only, a policy for LM only.
type Want struct {
	LM     bool // log-probabilities and entropies (needs the LM head)
	Value  bool // values (needs the value head)
	Logits bool // also return every position's logits (implies LM)
}

// Output holds Forward's per-token results for a packed batch of T tokens.
// Entries are aligned to the token being predicted: for token i of a
// sequence with i ≥ 1 (i counted within the sequence),
//
//	LogProb[i] = log p(tok[i] | tok[<i])      from the logits at position i−1
//	Entropy[i] = H(p(· | tok[<i]))            from the logits at position i−1
//	Value[i]   = value head at position i−1   (the state before emitting tok[i])
//
// The first token of each sequence has no prediction: its entries are 0 and
// must not be used. Slices are nil for heads not asked for. They point into
// the model's workspace and are overwritten by the next Forward (Logits
// already by Backward, which turns them into logit gradients in place).
type Output struct {
	LogProb []float32 // [T]
	Entropy []float32 // [T]
	Value   []float32 // [T]
	Logits  []float32 // [T, vocab_size] row t = logits at position t (predicts t+1); only with Want.Logits
}

// layerActs are one block's activations, saved for Backward.
type layerActs struct {
	resid       []float32 // [T, d] block input
	ln1, rstd1  []float32 // [T, d], [T]
	q           []float32 // [T, C] after RoPE
	k, v        []float32 // [T, KV], k after RoPE
	attOut      []float32 // [T, C] before o_proj
	resid2      []float32 // [T, d] after the attention residual
	ln2, rstd2  []float32 // [T, d], [T]
	gate, up, h []float32 // [T, I]; h = silu(gate)·up
}

// workspace holds the last Forward's inputs and activations and the scratch
// of Backward. Buffers grow to the largest batch seen and are then reused.
type workspace struct {
	T          int
	tokens     []int // copy of the batch
	lens       []int
	pos        []int // position of each token within its sequence
	targets    []int // [T] token predicted at row t, −1 at a sequence end
	layers     []layerActs
	final      []float32 // [T, d] last block output
	lnf, rstdf []float32
	logits     []float32 // [T, V]; becomes ∂loss/∂logits in Backward
	lse        []float32 // [T]
	lpRow      []float32 // [T] log-prob of targets[t] at row t
	entRow     []float32 // [T]
	valRow     []float32 // [T] value at row t
	out        Output
	lm, value  bool // heads evaluated by the last Forward
	fresh      bool // Forward ran and Backward has not consumed it yet

	// Backward scratch.
	dres, dln       []float32 // [T, d]
	dq, dattOut     []float32 // [T, C]
	dk, dv          []float32 // [T, KV]
	dgate, dup, dh  []float32 // [T, I]
	dlpRow, dentRow []float32 // [T]
	dvalRow         []float32 // [T]
	ceGrad          []float32 // [T] CrossEntropy's coefficients
}

// grow returns buf resized to n floats, reallocating only when it is too
// small. Contents are unspecified.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

func growInts(buf []int, n int) []int {
	if cap(buf) < n {
		return make([]int, n)
	}
	return buf[:n]
}

// checkBatch validates a packed batch against the config.
func (c Config) checkBatch(tokens, lens []int) error {
	if len(lens) == 0 {
		return errors.New("empty batch: no sequences")
	}
	total := 0
	for s, L := range lens {
		if L < 1 {
			return fmt.Errorf("sequence %d: length must be ≥ 1 (got %d)", s, L)
		}
		if L > c.MaxPositions {
			return fmt.Errorf("sequence %d: length %d exceeds max_position_embeddings %d", s, L, c.MaxPositions)
		}
		total += L
	}
	if total != len(tokens) {
		return fmt.Errorf("batch: lengths sum to %d but there are %d tokens", total, len(tokens))
	}
	for i, t := range tokens {
		if t < 0 || t >= c.VocabSize {
			return fmt.Errorf("token %d: id %d out of range [0, %d)", i, t, c.VocabSize)
		}
	}
	return nil
}

// Forward runs the model over a packed batch: tokens holds the sequences
// one after another, lens their lengths; positions restart at 0 in each
// sequence and each attends causally to itself only. Activations are kept
// for Backward. See Output for the alignment of the results.
func (m *Model) Forward(tokens, lens []int, want Want) (*Output, error) {
	c := m.Config
	m.ws.fresh = false // a failed Forward leaves nothing for Backward
	if want.Logits {
		want.LM = true
	}
	if want.LM && !c.LMHead {
		return nil, errors.New("forward: log-probs asked for but the model has no LM head (lm_head: false)")
	}
	if want.Value && !c.ValueHead {
		return nil, errors.New("forward: values asked for but the model has no value head (value_head: false)")
	}
	if !want.LM && !want.Value {
		return nil, errors.New("forward: nothing asked for (set Want.LM or Want.Value)")
	}
	if err := c.checkBatch(tokens, lens); err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	ws := &m.ws
	m.prepare(tokens, lens)
	T, d, V := ws.T, c.HiddenSize, c.VocabSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)

	cpu.EmbeddingForward(ws.layers[0].resid, ws.tokens, m.p.embed, T, d)
	for l := range ws.layers {
		a, w := &ws.layers[l], &m.p.layers[l]
		cpu.RMSNormForward(a.ln1, a.rstd1, a.resid, w.inNorm, T, d, eps)
		cpu.MatmulForward(a.q, a.ln1, w.q, w.qb, T, d, C)
		cpu.MatmulForward(a.k, a.ln1, w.k, w.kb, T, d, KV)
		cpu.MatmulForward(a.v, a.ln1, w.v, w.vb, T, d, KV)
		cpu.RopeForward(a.q, m.cos, m.sin, ws.pos, T, nH, hd)
		cpu.RopeForward(a.k, m.cos, m.sin, ws.pos, T, nKV, hd)
		cpu.AttentionForward(a.attOut, a.q, a.k, a.v, ws.lens, nH, nKV, hd)
		cpu.MatmulForward(a.resid2, a.attOut, w.o, nil, T, C, d)
		cpu.ResidualForward(a.resid2, a.resid2, a.resid, T*d)
		cpu.RMSNormForward(a.ln2, a.rstd2, a.resid2, w.postNorm, T, d, eps)
		cpu.MatmulForward(a.gate, a.ln2, w.gate, nil, T, d, I)
		cpu.MatmulForward(a.up, a.ln2, w.up, nil, T, d, I)
		cpu.SwiGLUForward(a.h, a.gate, a.up, T*I)
		next := ws.final
		if l+1 < len(ws.layers) {
			next = ws.layers[l+1].resid
		}
		cpu.MatmulForward(next, a.h, w.down, nil, T, I, d)
		cpu.ResidualForward(next, next, a.resid2, T*d)
	}
	cpu.RMSNormForward(ws.lnf, ws.rstdf, ws.final, m.p.norm, T, d, eps)

	ws.lm, ws.value, ws.fresh = want.LM, want.Value, true
	ws.out = Output{}
	if want.LM {
		ws.logits = grow(ws.logits, T*V)
		ws.lse, ws.lpRow, ws.entRow = grow(ws.lse, T), grow(ws.lpRow, T), grow(ws.entRow, T)
		cpu.MatmulForward(ws.logits, ws.lnf, m.p.lmHead, nil, T, d, V)
		cpu.LogSoftmaxForward(ws.lse, ws.lpRow, ws.entRow, ws.logits, ws.targets, T, V)
		ws.out.LogProb = alignRows(ws.out.LogProb, ws.lpRow, lens)
		ws.out.Entropy = alignRows(ws.out.Entropy, ws.entRow, lens)
		if want.Logits {
			ws.out.Logits = ws.logits
		}
	}
	if want.Value {
		ws.valRow = grow(ws.valRow, T)
		cpu.MatmulForward(ws.valRow, ws.lnf, m.p.valueW, m.p.valueB, T, d, 1)
		ws.out.Value = alignRows(ws.out.Value, ws.valRow, lens)
	}
	return &ws.out, nil
}

// alignRows maps per-row results to per-token ones: dst[i] = row[i−1]
// within each sequence, dst[first] = 0. dst is reused when large enough.
func alignRows(dst, row []float32, lens []int) []float32 {
	dst = grow(dst, len(row))
	o := 0
	for _, L := range lens {
		dst[o] = 0
		copy(dst[o+1:o+L], row[o:o+L-1])
		o += L
	}
	return dst
}

// prepare copies the batch into the workspace and sizes its buffers.
func (m *Model) prepare(tokens, lens []int) {
	c, ws := m.Config, &m.ws
	T := len(tokens)
	ws.T = T
	ws.tokens = append(ws.tokens[:0], tokens...)
	ws.lens = append(ws.lens[:0], lens...)
	ws.pos, ws.targets = growInts(ws.pos, T), growInts(ws.targets, T)
	o := 0
	for _, L := range lens {
		for i := 0; i < L; i++ {
			ws.pos[o+i] = i
			ws.targets[o+i] = -1
			if i+1 < L {
				ws.targets[o+i] = tokens[o+i+1]
			}
		}
		o += L
	}
	d, C, KV, I := c.HiddenSize, c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim(), c.IntermediateSize
	if len(ws.layers) != c.NumLayers {
		ws.layers = make([]layerActs, c.NumLayers)
	}
	for l := range ws.layers {
		a := &ws.layers[l]
		a.resid, a.ln1, a.rstd1 = grow(a.resid, T*d), grow(a.ln1, T*d), grow(a.rstd1, T)
		a.q, a.k, a.v = grow(a.q, T*C), grow(a.k, T*KV), grow(a.v, T*KV)
		a.attOut = grow(a.attOut, T*C)
		a.resid2, a.ln2, a.rstd2 = grow(a.resid2, T*d), grow(a.ln2, T*d), grow(a.rstd2, T)
		a.gate, a.up, a.h = grow(a.gate, T*I), grow(a.up, T*I), grow(a.h, T*I)
	}
	ws.final, ws.lnf, ws.rstdf = grow(ws.final, T*d), grow(ws.lnf, T*d), grow(ws.rstdf, T)
}

// AttentionMap returns the attention probabilities of one head in one layer
// for one sequence of the last Forward, as an L×L tensor (row i: how much
// position i attends to each position ≤ i). Forward does not keep them, so
// they are recomputed from its saved queries and keys, to the same floats.
func (m *Model) AttentionMap(layer, seq, head int) (*tensor.Dense, error) {
	ws, c := &m.ws, m.Config
	switch {
	case ws.layers == nil || ws.T == 0:
		return nil, errors.New("attention map: run Forward first")
	case layer < 0 || layer >= c.NumLayers:
		return nil, fmt.Errorf("attention map: layer %d out of range [0, %d)", layer, c.NumLayers)
	case seq < 0 || seq >= len(ws.lens):
		return nil, fmt.Errorf("attention map: sequence %d out of range [0, %d)", seq, len(ws.lens))
	case head < 0 || head >= c.NumHeads:
		return nil, fmt.Errorf("attention map: head %d out of range [0, %d)", head, c.NumHeads)
	}
	hd := c.HeadDim()
	C, KV := c.NumHeads*hd, c.NumKVHeads*hd
	o, L, g := 0, ws.lens[seq], head/(c.NumHeads/c.NumKVHeads)
	for _, n := range ws.lens[:seq] {
		o += n
	}
	a := &ws.layers[layer]
	p := make([]float32, L*L)
	cpu.AttentionProbs(p, a.q[o*C+head*hd:], a.k[o*KV+g*hd:], L, hd, C, KV)
	return tensor.New(tensor.WithShape(L, L), tensor.WithBacking(p)), nil
}
