package model

import (
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/backend/cpu"
)

// Grad holds ∂loss/∂ of Forward's per-token outputs, aligned like Output:
// entry i is the coefficient of LogProb[i], Entropy[i] or Value[i]. A nil
// slice means all zeros; entries at the first token of a sequence are
// ignored. A PPO loss, for instance, sets LogProb[i] from the clipped
// ratio and the advantage, Entropy[i] = −coef/n on response tokens, and a
// critic sets Value[i] = (V[i] − R[i])/n.
type Grad struct {
	LogProb []float32 // [T]
	Entropy []float32 // [T]
	Value   []float32 // [T]
}

// Backward propagates g through the last Forward and accumulates the
// gradient of every parameter into m.Grads (call ZeroGrad first to start
// afresh). Each Forward supports one Backward.
func (m *Model) Backward(g Grad) error {
	c, ws := m.Config, &m.ws
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
	ws.dres, ws.dln = grow(ws.dres, T*d), grow(ws.dln, T*d)
	ws.dq, ws.dattOut = grow(ws.dq, T*C), grow(ws.dattOut, T*C)
	ws.dk, ws.dv = grow(ws.dk, T*KV), grow(ws.dv, T*KV)
	ws.dgate, ws.dup, ws.dh = grow(ws.dgate, T*I), grow(ws.dup, T*I), grow(ws.dh, T*I)

	// Heads: ∂loss/∂lnf from the LM head and the value head.
	clear(ws.dln)
	if useLM {
		ws.dlpRow, ws.dentRow = unalignRows(ws.dlpRow, g.LogProb, ws.lens), unalignRows(ws.dentRow, g.Entropy, ws.lens)
		cpu.LogSoftmaxBackward(ws.logits, ws.logits, ws.lse, ws.entRow, ws.targets, ws.dlpRow, ws.dentRow, T, V)
		cpu.MatmulBackward(ws.dln, m.g.lmHead, nil, ws.logits, ws.lnf, m.p.lmHead, T, d, V)
	}
	if g.Value != nil {
		ws.dvalRow = unalignRows(ws.dvalRow, g.Value, ws.lens)
		cpu.MatmulBackward(ws.dln, m.g.valueW, m.g.valueB, ws.dvalRow, ws.lnf, m.p.valueW, T, d, 1)
	}
	clear(ws.dres)
	cpu.RMSNormBackward(ws.dres, m.g.norm, ws.dln, ws.final, m.p.norm, ws.rstdf, T, d)

	// Blocks in reverse. On entry dres = ∂loss/∂(block output); each
	// residual branch adds its contribution into dres, which leaves
	// ∂loss/∂(block input).
	for l := len(ws.layers) - 1; l >= 0; l-- {
		a, w, gw := &ws.layers[l], &m.p.layers[l], &m.g.layers[l]
		// MLP branch: out = resid2 + down(silu(gate(ln2))·up(ln2)).
		clear(ws.dh)
		cpu.MatmulBackward(ws.dh, gw.down, nil, ws.dres, a.h, w.down, T, I, d)
		clear(ws.dgate)
		clear(ws.dup)
		cpu.SwiGLUBackward(ws.dgate, ws.dup, ws.dh, a.gate, a.up, T*I)
		clear(ws.dln)
		cpu.MatmulBackward(ws.dln, gw.gate, nil, ws.dgate, a.ln2, w.gate, T, d, I)
		cpu.MatmulBackward(ws.dln, gw.up, nil, ws.dup, a.ln2, w.up, T, d, I)
		cpu.RMSNormBackward(ws.dres, gw.postNorm, ws.dln, a.resid2, w.postNorm, a.rstd2, T, d)
		// Attention branch: resid2 = resid + o(attention(rope(q), rope(k), v)).
		clear(ws.dattOut)
		cpu.MatmulBackward(ws.dattOut, gw.o, nil, ws.dres, a.attOut, w.o, T, C, d)
		clear(ws.dq)
		clear(ws.dk)
		clear(ws.dv)
		cpu.AttentionBackward(ws.dq, ws.dk, ws.dv, ws.dattOut, a.q, a.k, a.v, ws.lens, nH, nKV, hd)
		cpu.RopeBackward(ws.dq, m.cos, m.sin, ws.pos, T, nH, hd)
		cpu.RopeBackward(ws.dk, m.cos, m.sin, ws.pos, T, nKV, hd)
		clear(ws.dln)
		cpu.MatmulBackward(ws.dln, gw.q, gw.qb, ws.dq, a.ln1, w.q, T, d, C)
		cpu.MatmulBackward(ws.dln, gw.k, gw.kb, ws.dk, a.ln1, w.k, T, d, KV)
		cpu.MatmulBackward(ws.dln, gw.v, gw.vb, ws.dv, a.ln1, w.v, T, d, KV)
		cpu.RMSNormBackward(ws.dres, gw.inNorm, ws.dln, a.resid, w.inNorm, a.rstd1, T, d)
	}
	cpu.EmbeddingBackward(m.g.embed, ws.dres, ws.tokens, T, d)
	return nil
}

// unalignRows is the inverse of alignRows: row[t] = g[t+1] within each
// sequence, 0 at a sequence's last row (and everywhere when g is nil).
func unalignRows(row, g []float32, lens []int) []float32 {
	T := 0
	for _, L := range lens {
		T += L
	}
	row = grow(row, T)
	if g == nil {
		clear(row)
		return row
	}
	o := 0
	for _, L := range lens {
		copy(row[o:o+L-1], g[o+1:o+L])
		row[o+L-1] = 0
		o += L
	}
	return row
}

// CrossEntropy is the supervised next-token loss for SFT and language
// modelling: the mean of −LogProb[i] over the tokens i where mask[i] is
// true (nil mask: every token; the first token of a sequence never counts,
// having no prediction). It runs Forward and Backward, accumulating the
// gradient of the returned loss into m.Grads.
func (m *Model) CrossEntropy(tokens, lens []int, mask []bool) (float32, error) {
	if mask != nil && len(mask) != len(tokens) {
		return 0, fmt.Errorf("cross-entropy: mask has %d entries, the batch has %d tokens", len(mask), len(tokens))
	}
	out, err := m.Forward(tokens, lens, Want{LM: true})
	if err != nil {
		return 0, err
	}
	m.ws.ceGrad = grow(m.ws.ceGrad, len(tokens))
	loss, err := CrossEntropyGrad(m.ws.ceGrad, out.LogProb, lens, mask)
	if err != nil {
		return 0, err
	}
	if err := m.Backward(Grad{LogProb: m.ws.ceGrad}); err != nil {
		return 0, err
	}
	return loss, nil
}
