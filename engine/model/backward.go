package model

import (
	"errors"
	"fmt"
	"github.com/ragen-go/ragen/engine/backend"
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
		if ws.noGrad {
			return errors.New("backward: the last Forward had Want.NoGrad; run Forward without it before Backward")
		}
		return errors.New("backward: needs a Forward first (each Forward supports one Backward)")
	}
	// The batch's rows (see workspace.batchT), which a prefixed Forward's
	// activations are copied out to.
	T, lens := ws.batchT, ws.batchLens
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

	b := m.b
	d, V := c.HiddenSize, c.VocabSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	grad := max(C, d, I) // widest output gradient rounded for a product
	needs := []need{{&ws.dres, T * d}, {&ws.dln, T * d}, {&ws.dq, T * C}, {&ws.dattOut, T * C},
		{&ws.dk, T * KV}, {&ws.dv, T * KV}, {&ws.datt, b.AttentionStore(lens, nH)},
		{&ws.dgate, T * I}, {&ws.dup, T * I}, {&ws.dh, T * I}}
	if useLM {
		needs = append(needs, need{&ws.dlp, T}, need{&ws.dent, T})
	}
	if g.Value != nil {
		needs = append(needs, need{&ws.dvl, T})
	}
	if m.base != nil {
		needs = append(needs, need{&ws.dnorm, d}, need{&ws.du, T * m.rank()})
	}
	H := T // the LM head's rows
	if useLM && ws.gathered {
		H = len(ws.head)
		needs = append(needs, need{&ws.dlnH, max(1, H) * d})
	}
	if err := m.grow(needs...); err != nil {
		return fmt.Errorf("backward: %w", err)
	}
	head := 0 // the rounded logit gradients of a block of the head
	if useLM {
		head = ws.headRows * V
	}
	if err := m.growHalf(T*max(d, C, I), max(T*grad, head), T*m.rank()); err != nil {
		return fmt.Errorf("backward: %w", err)
	}

	final, lnf, rstdf := ws.final, ws.lnf, ws.rstdf
	if ws.prefixed {
		var err error
		if final, err = m.batchRows(&ws.wide.final, ws.final, d); err == nil {
			if lnf, err = m.batchRows(&ws.wide.lnf, ws.lnf, d); err == nil {
				rstdf, err = m.batchRows(&ws.wide.rstdf, ws.rstdf, 1)
			}
		}
		if err != nil {
			return fmt.Errorf("backward: %w", err)
		}
	}

	// Heads: ∂loss/∂lnf from the LM head and the value head.
	mw := m.mat()
	x := m.in(0, lnf, T*d)
	b.Zero(ws.dln)
	if useLM {
		ws.dlpRow, ws.dentRow = unalignRows(ws.dlpRow, g.LogProb, lens), unalignRows(ws.dentRow, g.Entropy, lens)
		if err := ws.checkHeadGrads(); err != nil {
			return err
		}
		xh, dxh := x, ws.dln
		if ws.gathered { // the rows of head only, gathered as Forward did
			for k, r := range ws.head {
				ws.dlpRow[k], ws.dentRow[k] = ws.dlpRow[r], ws.dentRow[r] // k ≤ r: in place
			}
			xh, dxh = m.in(0, ws.lnfH, H*d), ws.dlnH
			b.Zero(dxh)
		}
		if err := b.Upload(ws.dlp, ws.dlpRow[:H]); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		if err := b.Upload(ws.dent, ws.dentRow[:H]); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		for r0 := 0; r0 < H; r0 += ws.headRows {
			n := min(ws.headRows, H-r0)
			logits, xr := b.Slice(ws.logits, 0, n*V), b.Slice(xh, r0*d, n*d)
			if ws.headRows < H { // Forward kept only the last block's logits
				m.linear(logits, xr, mw.lmHead, nil, n, d, V)
			}
			b.LogSoftmaxBackward(logits, logits, b.Slice(ws.lse, r0, n), b.Slice(ws.ent, r0, n), ws.headTargets[r0:r0+n],
				b.Slice(ws.dlp, r0, n), b.Slice(ws.dent, r0, n), n, V)
			m.linearBackward(b.Slice(dxh, r0*d, n*d), m.g.lmHead, nil, logits, xr, mw.lmHead, nil, n, d, V, addGrad)
		}
		if ws.gathered {
			// Scattered into their rows of the zeroed dln (a row each).
			b.EmbeddingBackward(ws.dln, dxh, ws.head, H, d)
			x = m.in(0, lnf, T*d) // the head's rows took slot 0
		}
	}
	if g.Value != nil {
		ws.dvalRow = unalignRows(ws.dvalRow, g.Value, lens)
		if err := b.Upload(ws.dvl, ws.dvalRow); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		m.linearBackward(ws.dln, m.g.valueW, m.g.valueB, ws.dvl, x, mw.valueW, nil, T, d, 1, addGrad)
	}
	b.Zero(ws.dres)
	b.RMSNormBackward(ws.dres, m.normGrad(m.g.norm), ws.dln, final, m.p.norm, rstdf, T, d)

	// Blocks in reverse. On entry dres = ∂loss/∂(block output); each
	// residual branch adds its contribution into dres, which leaves
	// ∂loss/∂(block input).
	for l := len(ws.layers) - 1; l >= 0; l-- {
		if m.recompute && ws.held != l {
			if err := m.blockForward(l, nil); err != nil {
				return fmt.Errorf("backward: %w", err)
			}
		}
		a, err := m.batchActs(l)
		if err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		w, mm, gw := &m.p.layers[l], &mw.layers[l], &m.g.layers[l]
		// MLP branch: out = resid2 + down(silu(gate(ln2))·up(ln2)).
		m.linearBackward(ws.dh, gw.down, nil, ws.dres, m.in(0, a.h, T*I), mm.down, m.adapterAt(l, modDown), T, I, d, setGrad)
		b.Zero(ws.dgate)
		b.Zero(ws.dup)
		b.SwiGLUBackward(ws.dgate, ws.dup, ws.dh, a.gate, a.up, T*I)
		x := m.in(0, a.ln2, T*d)
		m.linearBackward(ws.dln, gw.gate, nil, ws.dgate, x, mm.gate, m.adapterAt(l, modGate), T, d, I, setGrad)
		m.linearBackward(ws.dln, gw.up, nil, ws.dup, x, mm.up, m.adapterAt(l, modUp), T, d, I, addGrad)
		b.RMSNormBackward(ws.dres, m.normGrad(gw.postNorm), ws.dln, a.resid2, w.postNorm, a.rstd2, T, d)
		// Attention branch: resid2 = resid + o(attention(rope(q), rope(k), v)).
		m.linearBackward(ws.dattOut, gw.o, nil, ws.dres, m.in(0, a.attOut, T*C), mm.o, m.adapterAt(l, modO), T, C, d, setGrad)
		b.Zero(ws.dq)
		b.Zero(ws.dk)
		b.Zero(ws.dv)
		b.AttentionBackward(ws.dq, ws.dk, ws.dv, ws.datt, ws.dattOut, a.att, a.q, a.k, a.v, lens, nH, nKV, hd)
		b.RopeBackward(ws.dq, m.cos, m.sin, ws.batchPos, T, nH, hd)
		b.RopeBackward(ws.dk, m.cos, m.sin, ws.batchPos, T, nKV, hd)
		x = m.in(0, a.ln1, T*d)
		m.linearBackward(ws.dln, gw.q, gw.qb, ws.dq, x, mm.q, m.adapterAt(l, modQ), T, d, C, setGrad)
		m.linearBackward(ws.dln, gw.k, gw.kb, ws.dk, x, mm.k, m.adapterAt(l, modK), T, d, KV, addGrad)
		m.linearBackward(ws.dln, gw.v, gw.vb, ws.dv, x, mm.v, m.adapterAt(l, modV), T, d, KV, addGrad)
		b.RMSNormBackward(ws.dres, m.normGrad(gw.inNorm), ws.dln, a.resid, w.inNorm, a.rstd1, T, d)
	}
	if m.g.embed != nil { // frozen under adapters
		b.EmbeddingBackward(m.g.embed, ws.dres, ws.batchTokens, T, d)
	}
	return b.Err()
}

// batchRows copies the rows of x (width floats each; the rows a
// prefixed Forward computed) out to the batch's rows (rowOf) in *dst,
// grown to hold them, and returns it.
func (m *Model) batchRows(dst *backend.Buffer, x backend.Buffer, width int) (backend.Buffer, error) {
	ws := &m.ws
	if err := m.grow(need{dst, ws.batchT * width}); err != nil {
		return nil, err
	}
	m.b.EmbeddingForward(*dst, ws.rowOf, x, ws.batchT, width) // a row gather
	return *dst, nil
}

// batchActs returns block l's activations with the batch's rows:
// ws.layers[l], or for a prefixed Forward their copy in ws.wide.layer (and
// its adapters' intermediates, t, in their bt). A
// backend that shares prefixes keeps no attention probabilities
// (backend.PrefixAttention), so there is no att to copy.
func (m *Model) batchActs(l int) (*layerActs, error) {
	ws, c := &m.ws, m.Config
	a := &ws.layers[l]
	if !ws.prefixed {
		return a, nil
	}
	d, I := c.HiddenSize, c.IntermediateSize
	C, KV := c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim()
	w := &ws.wide.layer
	for _, r := range []struct {
		dst   *backend.Buffer
		src   backend.Buffer
		width int
	}{
		{&w.resid, a.resid, d}, {&w.ln1, a.ln1, d}, {&w.rstd1, a.rstd1, 1}, {&w.q, a.q, C}, {&w.k, a.k, KV}, {&w.v, a.v, KV},
		{&w.attOut, a.attOut, C}, {&w.resid2, a.resid2, d}, {&w.ln2, a.ln2, d}, {&w.rstd2, a.rstd2, 1},
		{&w.gate, a.gate, I}, {&w.up, a.up, I}, {&w.h, a.h, I},
	} {
		if _, err := m.batchRows(r.dst, r.src, r.width); err != nil {
			return nil, err
		}
	}
	if m.ad != nil {
		for _, ad := range m.ad[l] {
			if ad == nil {
				continue
			}
			if _, err := m.batchRows(&ad.bt, ad.t, m.lora.Rank); err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

// normGrad is where a norm's weight gradient goes: dw itself, or scratch
// that is never read when the norm is frozen (an adapter model's).
func (m *Model) normGrad(dw backend.Buffer) backend.Buffer {
	if dw == nil {
		return m.ws.dnorm
	}
	return dw
}

// unalignRows is the inverse of alignRows: row[t] = g[t+1] within each
// sequence, 0 at a sequence's last row (and everywhere when g is nil).
func unalignRows(row, g []float32, lens []int) []float32 {
	T := 0
	for _, L := range lens {
		T += L
	}
	row = growHost(row, T)
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

// checkHeadGrads reports a log-prob or entropy gradient (the row forms
// dlpRow, dentRow) at a token Forward was not asked for (Want.Targets).
func (ws *workspace) checkHeadGrads() error {
	if ws.rowWanted == nil {
		return nil
	}
	for r, ok := range ws.rowWanted {
		if !ok && (ws.dlpRow[r] != 0 || ws.dentRow[r] != 0) {
			return fmt.Errorf("backward: a log-prob or entropy gradient at token %d, which Forward was not asked for (Want.Targets): ask for it, or give it 0", r+1)
		}
	}
	return nil
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
	out, err := m.Forward(tokens, lens, Want{LM: true, Targets: mask})
	if err != nil {
		return 0, err
	}
	m.ws.ceGrad = growHost(m.ws.ceGrad, len(tokens))
	loss, err := CrossEntropyGrad(m.ws.ceGrad, out.LogProb, lens, mask)
	if err != nil {
		return 0, err
	}
	if err := m.Backward(Grad{LogProb: m.ws.ceGrad}); err != nil {
		return 0, err
	}
	return loss, nil
}
