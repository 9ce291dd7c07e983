package model

import (
	"errors"
	"fmt"

	"github.com/ragen-go/ragen/engine/backend"
	"gorgonia.org/tensor"
)

// Want says which heads Forward evaluates. Skipping a head skips its
// compute: a critic asks for Value only, a policy for LM only.
type Want struct {
	LM     bool // log-probabilities and entropies (needs the LM head)
	Value  bool // values (needs the value head)
	Logits bool // also return every position's logits (implies LM)
	// Targets, with LM, are the tokens whose log-probability and entropy
	// are wanted, aligned as Output (entry i: LogProb[i], Entropy[i]);
	// nil: every token's. The others come out 0, and Backward takes no
	// gradient there. An RL update wants its responses' tokens only: the
	// prompt and the environment's tokens are context. Where the head
	// takes no gradient (an adapter model's, a frozen base's) it then runs
	// on the wanted rows alone — the same numbers for them, and on
	// Qwen2.5-0.5B with RAGEN's prompts a fifth of a pass's products and
	// most of its log-softmax saved (decision 54).
	Targets []bool
	// NoGrad says no Backward follows (the old, reference and value
	// passes of an RL step, scoring); Backward after such a Forward is an
	// error. See Forward for what it changes.
	NoGrad bool
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
// must not be used. Slices are nil for heads not asked for. They are
// overwritten by the next Forward (Logits, on the CPU, already by
// Backward, which turns them into logit gradients in place).
type Output struct {
	LogProb []float32 // [T]
	Entropy []float32 // [T]
	Value   []float32 // [T]
	Logits  []float32 // [T, vocab_size] row t = logits at position t (predicts t+1); only with Want.Logits
}

// layerActs are one block's activations, saved for Backward.
type layerActs struct {
	resid       backend.Buffer // [T, d] block input
	ln1, rstd1  backend.Buffer // [T, d], [T]
	q           backend.Buffer // [T, C] after RoPE
	k, v        backend.Buffer // [T, KV], k after RoPE
	att         backend.Buffer // AttentionStore floats: probabilities a backend keeps
	attOut      backend.Buffer // [T, C] before o_proj
	resid2      backend.Buffer // [T, d] after the attention residual
	ln2, rstd2  backend.Buffer // [T, d], [T]
	gate, up, h backend.Buffer // [T, I]; h = silu(gate)·up
}

// workspace holds the last Forward's inputs and activations and the scratch
// of Backward. Buffers grow to the largest batch seen and are then reused.
type workspace struct {
	// The rows the passes compute: the batch's, or with shared prefixes
	// (prefixed) the batch's without the positions other sequences
	// computed.
	T       int
	tokens  []int
	lens    []int // rows of each sequence
	pos     []int // position of each row within its sequence
	targets []int // [T] token predicted at row t, −1 at a sequence end
	// The batch as given (Output's and Backward's layout): batchT tokens
	// in sequences of batchLens, at positions batchPos. Prefixed, the
	// first past[s] positions of sequence s are rows another sequence
	// computed, and rowOf maps each batch row to the row that computed it;
	// Backward copies the activations out to the batch's rows, block by
	// block, into wide.
	batchT      int
	batchTokens []int
	batchLens   []int
	batchPos    []int
	prefixed    bool
	past        []int
	rowOf       []int
	wide        struct {
		layer             layerActs
		final, lnf, rstdf backend.Buffer
	}
	// The LM head's rows (Want.Targets): rowWanted[r] says batch row r's
	// target is wanted (nil: all are). Gathered, the head runs on the batch rows
	// head only — the wanted ones when compact, every one otherwise —
	// which are the rows gather, copied into lnfH, with targets
	// headTargets (which is targets when not gathered).
	rowWanted   []bool
	compact     bool
	gathered    bool
	head        []int
	gather      []int
	headTargets []int
	lnfH        backend.Buffer // [len(head), d]
	layers      []layerActs
	final       backend.Buffer // [T, d] last block output
	lnf, rstdf  backend.Buffer
	logits      backend.Buffer // [headRows, V]; becomes ∂loss/∂logits in Backward
	headRows    int            // rows per block of the LM head (all its rows: one block)
	lse         backend.Buffer // [T], the first len(head) when compact
	lp, ent     backend.Buffer // [T] log-prob of targets[t] and entropy at row t (compact: of head[k])
	val         backend.Buffer // [T] value at row t
	shared      bool           // SetRecompute: every block uses layer 0's activation buffers
	held        int            // the block whose activations the buffers hold, then
	lm, value   bool           // heads evaluated by the last Forward
	fresh       bool           // Forward ran and Backward has not consumed it yet
	noGrad      bool           // the last Forward had Want.NoGrad

	// Backward scratch.
	dres, dln      backend.Buffer // [T, d]
	dq, dattOut    backend.Buffer // [T, C]
	dk, dv         backend.Buffer // [T, KV]
	datt           backend.Buffer // AttentionStore floats
	dgate, dup, dh backend.Buffer // [T, I]
	dlp, dent, dvl backend.Buffer // [T] row gradients of the heads
	dlnH           backend.Buffer // [len(head), d] ∂loss/∂lnfH, compact
	dnorm          backend.Buffer // [d] the discarded gradient of a frozen norm
	du             backend.Buffer // [T, r] an adapter's s·g·B

	attMap backend.Buffer // AttentionMap's probabilities

	// Host copies: per-row results, Forward's aligned Output, Backward's
	// row gradients.
	rows, rowsH, rowsC       []float32
	out                      Output
	lpHost, entHost, valHost []float32
	logitsHost               []float32 // Want.Logits, downloaded off the CPU
	dlpRow, dentRow, dvalRow []float32
	ceGrad                   []float32 // CrossEntropy's coefficients
}

// buffers lists every backend buffer of the workspace.
func (ws *workspace) buffers() []backend.Buffer {
	bufs := []backend.Buffer{ws.final, ws.lnf, ws.rstdf, ws.lnfH, ws.logits, ws.lse, ws.lp, ws.ent, ws.val,
		ws.dres, ws.dln, ws.dlnH, ws.dq, ws.dattOut, ws.dk, ws.dv, ws.datt, ws.dgate, ws.dup, ws.dh, ws.dlp, ws.dent, ws.dvl, ws.dnorm, ws.du, ws.attMap}
	w := &ws.wide.layer
	bufs = append(bufs, ws.wide.final, ws.wide.lnf, ws.wide.rstdf, w.resid, w.ln1, w.rstd1, w.q, w.k, w.v, w.attOut, w.resid2, w.ln2, w.rstd2, w.gate, w.up, w.h)
	for i, a := range ws.layers {
		bufs = append(bufs, a.resid)
		if i == 0 || !ws.shared {
			bufs = append(bufs, a.ln1, a.rstd1, a.q, a.k, a.v, a.att, a.attOut, a.resid2, a.ln2, a.rstd2, a.gate, a.up, a.h)
		}
	}
	return bufs
}

// need is a workspace buffer and the values it must hold.
type need struct {
	buf *backend.Buffer
	n   int
}

// maxHeadLogits is the most logits (rows × vocabulary) the LM head holds
// at once. Beyond it, Forward runs the head and the log-softmax in blocks
// of rows, and Backward recomputes each block's logits before its
// log-softmax backward and head products, so the T×V logits of a long
// batch over a large vocabulary (4 × 512 tokens × 151,936 for Qwen2.5:
// 1.2 GB, more than the model) are never held whole. A batch within it
// runs as one block, with no recomputation. A variable for the tests.
var maxHeadLogits = 1 << 26 // 256 MiB of float32

// grow makes every buffer of needs hold at least its n floats
// (contents unspecified), reallocating only the ones that are too small.
func (m *Model) grow(needs ...need) error {
	for _, x := range needs {
		if *x.buf != nil && (*x.buf).Len() >= x.n {
			continue
		}
		if *x.buf != nil {
			m.b.Free(*x.buf)
			*x.buf = nil
		}
		var err error
		if *x.buf, err = m.b.Alloc(x.n); err != nil {
			return err
		}
	}
	return nil
}

// growHost returns buf resized to n floats, reallocating only when it is
// too small. Contents are unspecified.
func growHost(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
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
//
// Positions that sequences share — the same tokens from the start, as a
// GRPO group's prompt — run once on a backend that implements
// backend.PrefixAttention, and every sequence gets their results: each the
// float it is without sharing (decision 57). With Want.NoGrad every such
// prefix is shared; otherwise only when it saves a quarter of the batch's
// rows, as Backward then copies every block's activations out to the
// batch's rows. No sharing with Want.Logits.
func (m *Model) Forward(tokens, lens []int, want Want) (*Output, error) {
	c := m.Config
	m.ws.fresh, m.ws.noGrad = false, false // a failed Forward leaves nothing for Backward
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
	if want.Targets != nil && len(want.Targets) != len(tokens) {
		return nil, fmt.Errorf("forward: Want.Targets has %d entries, the batch has %d tokens", len(want.Targets), len(tokens))
	}
	if err := m.prepare(tokens, lens, want); err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	b, ws := m.b, &m.ws
	T, d, V := ws.T, c.HiddenSize, c.VocabSize
	eps := float32(c.RMSNormEps)

	mw := m.mat()
	b.EmbeddingForward(ws.layers[0].resid, ws.tokens, m.p.embed, T, d)
	var err error
	for l := range ws.layers {
		next := ws.final
		if l+1 < len(ws.layers) {
			next = ws.layers[l+1].resid
		}
		if err = m.blockForward(l, next); err != nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	b.RMSNormForward(ws.lnf, ws.rstdf, ws.final, m.p.norm, T, d, eps)
	x := m.in(0, ws.lnf, T*d) // the input of both heads

	ws.lm, ws.value, ws.fresh, ws.noGrad = want.LM, want.Value, !want.NoGrad, want.NoGrad
	ws.out = Output{}
	ws.rows = growHost(ws.rows, ws.batchT)
	if want.LM {
		// The head in blocks of headRows rows (one block unless the
		// logits would outgrow maxHeadLogits; see there), over the rows
		// head alone when gathered.
		xh, H := x, T
		if ws.gathered {
			H = len(ws.head)
			b.EmbeddingForward(ws.lnfH, ws.gather, ws.lnf, H, d) // a row gather
			xh = m.in(0, ws.lnfH, H*d)
		}
		for r0 := 0; r0 < H; r0 += ws.headRows {
			n := min(ws.headRows, H-r0)
			logits := b.Slice(ws.logits, 0, n*V)
			m.linear(logits, b.Slice(xh, r0*d, n*d), mw.lmHead, nil, n, d, V)
			b.LogSoftmaxForward(b.Slice(ws.lse, r0, n), b.Slice(ws.lp, r0, n), b.Slice(ws.ent, r0, n), logits, ws.headTargets[r0:r0+n], n, V)
		}
		if ws.lpHost, err = m.headAligned(ws.lpHost, ws.lp); err == nil {
			ws.entHost, err = m.headAligned(ws.entHost, ws.ent)
		}
		ws.out.LogProb, ws.out.Entropy = ws.lpHost, ws.entHost
		if want.Logits && err == nil {
			if x, ok := backend.HostFloats(ws.logits); ok {
				ws.out.Logits = x[:T*V]
			} else {
				ws.logitsHost = growHost(ws.logitsHost, T*V)
				err = b.Download(ws.logitsHost, ws.logits)
				ws.out.Logits = ws.logitsHost
			}
		}
	}
	if want.Value && err == nil {
		if ws.gathered {
			x = m.in(0, ws.lnf, T*d) // the head's rows took slot 0
		}
		m.linear(ws.val, x, mw.valueW, m.p.valueB, T, d, 1)
		ws.valHost, err = m.aligned(ws.valHost, ws.val)
		ws.out.Value = ws.valHost
	}
	if err != nil {
		ws.fresh = false
		return nil, fmt.Errorf("forward: %w", err)
	}
	return &ws.out, nil
}

// blockForward runs block l on its saved input, ws.layers[l].resid,
// keeping its activations in ws.layers[l], and writes its output to out
// (nil: only the activations, which Backward recomputes this way under
// SetRecompute).
func (m *Model) blockForward(l int, out backend.Buffer) error {
	b, c, ws := m.b, m.Config, &m.ws
	T, d := ws.T, c.HiddenSize
	nH, nKV, hd := c.NumHeads, c.NumKVHeads, c.HeadDim()
	C, KV, I := nH*hd, nKV*hd, c.IntermediateSize
	eps := float32(c.RMSNormEps)
	a, w, mm := &ws.layers[l], &m.p.layers[l], &m.mat().layers[l]
	var err error
	// adapt adds layer l's adapter of mod (if any) to a product's output.
	adapt := func(mod module, out, x backend.Buffer) {
		if err == nil {
			err = m.adaptForward(m.adapterAt(l, mod), out, x, T)
		}
	}
	b.RMSNormForward(a.ln1, a.rstd1, a.resid, w.inNorm, T, d, eps)
	x := m.in(0, a.ln1, T*d)
	m.linear(a.q, x, mm.q, w.qb, T, d, C)
	adapt(modQ, a.q, x)
	m.linear(a.k, x, mm.k, w.kb, T, d, KV)
	adapt(modK, a.k, x)
	m.linear(a.v, x, mm.v, w.vb, T, d, KV)
	adapt(modV, a.v, x)
	b.RopeForward(a.q, m.cos, m.sin, ws.pos, T, nH, hd)
	b.RopeForward(a.k, m.cos, m.sin, ws.pos, T, nKV, hd)
	if ws.prefixed {
		b.(backend.PrefixAttention).AttentionForwardPrefixed(a.attOut, a.q, a.k, a.v, ws.lens, ws.past, ws.rowOf, nH, nKV, hd)
	} else {
		b.AttentionForward(a.attOut, a.att, a.q, a.k, a.v, ws.lens, nH, nKV, hd)
	}
	x = m.in(0, a.attOut, T*C)
	m.linear(a.resid2, x, mm.o, nil, T, C, d)
	adapt(modO, a.resid2, x)
	b.Add(a.resid2, a.resid2, a.resid, T*d)
	b.RMSNormForward(a.ln2, a.rstd2, a.resid2, w.postNorm, T, d, eps)
	x = m.in(0, a.ln2, T*d)
	m.linear(a.gate, x, mm.gate, nil, T, d, I)
	adapt(modGate, a.gate, x)
	m.linear(a.up, x, mm.up, nil, T, d, I)
	adapt(modUp, a.up, x)
	b.SwiGLUForward(a.h, a.gate, a.up, T*I)
	ws.held = l
	if out == nil {
		return err
	}
	x = m.in(0, a.h, T*I)
	m.linear(out, x, mm.down, nil, T, I, d)
	adapt(modDown, out, x)
	b.Add(out, out, a.resid2, T*d)
	return err
}

// SetRecompute makes Forward keep only each block's input and Backward
// recompute a block's activations from it just before the block's
// backward pass (activation checkpointing): the activations of one block
// are held instead of all of them — for a Qwen2-0.5B shape about 77 KB a
// token instead of 1.85 MB — for one more forward pass of every block but
// the last. The results and gradients are the same floats.
func (m *Model) SetRecompute(on bool) {
	if on != m.recompute {
		m.freeWorkspace() // its layout changes
		m.recompute = on
	}
}

// Recompute reports whether SetRecompute is on.
func (m *Model) Recompute() bool { return m.recompute }

// FreeWorkspace releases the activations and scratch of the last Forward
// and Backward, which a model otherwise keeps, sized to the largest batch
// it has run, for its next pass: a trainer calls it when a model is done
// for a phase, so that the next phase's models get the memory (a
// Qwen2.5-0.5B model's workspace for 5,000 tokens is over a GB even with
// SetRecompute). The next Forward allocates them again; no number
// changes. Backward needs a Forward after it.
func (m *Model) FreeWorkspace() { m.freeWorkspace() }

// freeWorkspace releases the workspace's backend buffers.
func (m *Model) freeWorkspace() {
	for _, x := range m.ws.buffers() {
		if x != nil {
			m.b.Free(x)
		}
	}
	for _, l := range m.ad {
		for _, ad := range l {
			if ad != nil && ad.bt != nil {
				m.b.Free(ad.bt)
				ad.bt = nil
			}
		}
	}
	m.ws = workspace{}
}

// aligned downloads the per-row results in rows and maps them to per-token
// ones (see Output): dst[i] = row[i−1] within each sequence, dst[first] =
// 0. A prefixed batch's rows are first copied from the rows that computed
// them. dst is reused when large enough.
func (m *Model) aligned(dst []float32, rows backend.Buffer) ([]float32, error) {
	ws := &m.ws
	if !ws.prefixed {
		if err := m.b.Download(ws.rows, rows); err != nil {
			return dst, err
		}
		return alignRows(dst, ws.rows, ws.lens), nil
	}
	ws.rowsC = growHost(ws.rowsC, ws.T)
	if err := m.b.Download(ws.rowsC, rows); err != nil {
		return dst, err
	}
	for r, c := range ws.rowOf {
		ws.rows[r] = ws.rowsC[c]
	}
	return alignRows(dst, ws.rows, ws.batchLens), nil
}

// headAligned is aligned for the LM head's results: when gathered, the
// rows of ws.head are put in place first, every other row 0; the tokens
// not wanted (Want.Targets) get 0.
func (m *Model) headAligned(dst []float32, rows backend.Buffer) ([]float32, error) {
	ws := &m.ws
	if !ws.gathered {
		dst, err := m.aligned(dst, rows)
		if err != nil || ws.rowWanted == nil {
			return dst, err
		}
		dst = dst[:ws.T]
		o := 0
		for _, L := range ws.lens {
			for i := 1; i < L; i++ {
				if !ws.rowWanted[o+i-1] {
					dst[o+i] = 0
				}
			}
			o += L
		}
		return dst, nil
	}
	ws.rowsH = growHost(ws.rowsH, len(ws.head))
	if err := m.b.Download(ws.rowsH, rows); err != nil {
		return dst, err
	}
	clear(ws.rows)
	for k, r := range ws.head {
		if ws.compact || ws.rowWanted == nil || ws.rowWanted[r] {
			ws.rows[r] = ws.rowsH[k]
		}
	}
	return alignRows(dst, ws.rows, ws.batchLens), nil
}

// alignRows maps per-row results to per-token ones (see Output):
// dst[i] = rows[i−1] within each sequence of lengths lens, dst[first] = 0.
func alignRows(dst, rows []float32, lens []int) []float32 {
	T := 0
	for _, L := range lens {
		T += L
	}
	dst = growHost(dst, T)
	o := 0
	for _, L := range lens {
		dst[o] = 0
		copy(dst[o+1:o+L], rows[o:o+L-1])
		o += L
	}
	return dst
}

// headRowsOf sets the LM head's rows of the batch (tokens, as
// prepare laid it out; see workspace.rowWanted) from want.Targets and
// returns their number: the wanted rows when compact, T when not gathered.
// Compact where only some rows are wanted and the head takes no gradient
// (its weight gradient sums over the rows, in blocks that fewer rows would
// move) and no logits are asked for. A prefixed batch is gathered with
// every batch row when not compact, so that the head runs on the rows it
// runs on without sharing, in the same blocks.
func (m *Model) headRowsOf(tokens []int, want Want) int {
	ws := &m.ws
	ws.rowWanted, ws.compact, ws.gathered, ws.head, ws.headTargets = nil, false, false, ws.head[:0], ws.targets
	if !want.LM || (want.Targets == nil && !ws.prefixed) {
		return ws.T
	}
	if want.Targets != nil {
		o := 0
		for _, L := range ws.batchLens {
			for i := 0; i+1 < L; i++ {
				if want.Targets[o+i+1] {
					ws.head = append(ws.head, o+i)
				}
			}
			o += L
		}
		ws.rowWanted = make([]bool, ws.batchT)
		for _, r := range ws.head {
			ws.rowWanted[r] = true
		}
	}
	ws.compact = want.Targets != nil && m.g.lmHead == nil && !want.Logits && len(ws.head) < ws.batchT
	if !ws.compact {
		if !ws.prefixed {
			return ws.T
		}
		ws.head = ws.head[:0]
		for r := range ws.batchT {
			ws.head = append(ws.head, r)
		}
	}
	ws.gathered, ws.gather = true, ws.head
	if ws.prefixed {
		ws.gather = make([]int, len(ws.head))
		for k, r := range ws.head {
			ws.gather[k] = ws.rowOf[r]
		}
	}
	ws.headTargets = make([]int, 0, len(ws.head))
	k, o := 0, 0
	for _, L := range ws.batchLens {
		for ; k < len(ws.head) && ws.head[k] < o+L; k++ {
			tgt := -1
			if r := ws.head[k]; r+1 < o+L {
				tgt = tokens[r+1]
			}
			ws.headTargets = append(ws.headTargets, tgt)
		}
		o += L
	}
	return len(ws.head)
}

// prefixSharing is whether Forward shares prefixes (see there); off, for
// the tests, it never does.
var prefixSharing = true

// sharePrefixes lays out a batch with shared prefixes (see
// workspace.past): each sequence, in order, takes the longest prefix it
// has in common with an earlier one, rounded down to the backend's
// PrefixAlign and leaving it one row of its own, from the rows that
// computed that prefix. It reports whether the batch is laid out so: some
// sequence shares a prefix and, unless noGrad, a quarter of the rows are
// saved (see Forward).
func (m *Model) sharePrefixes(tokens, lens []int, noGrad bool) bool {
	pa, ok := m.b.(backend.PrefixAttention)
	if !ok || !prefixSharing || len(lens) < 2 {
		return false
	}
	align, ws := pa.PrefixAlign(), &m.ws
	ws.past, ws.rowOf = ws.past[:0], ws.rowOf[:0]
	shared, rows, o := false, 0, 0
	for s, L := range lens {
		seq := tokens[o : o+L-1]
		past, from := 0, 0
		for j, oj := 0, 0; j < s; j++ {
			n := commonPrefix(seq, tokens[oj:oj+lens[j]]) / align * align
			if n > past {
				past, from = n, oj
			}
			oj += lens[j]
		}
		ws.rowOf = append(ws.rowOf, ws.rowOf[from:from+past]...)
		for range L - past {
			ws.rowOf = append(ws.rowOf, rows)
			rows++
		}
		ws.past = append(ws.past, past)
		shared = shared || past > 0
		o += L
	}
	return shared && (noGrad || 4*(len(tokens)-rows) >= len(tokens))
}

// commonPrefix is the number of leading entries a and b share.
func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// prepare copies the batch into the workspace, derives positions and
// targets, and sizes the buffers of the heads asked for.
func (m *Model) prepare(tokens, lens []int, want Want) error {
	c, ws := m.Config, &m.ws
	ws.batchT, ws.batchLens = len(tokens), append(ws.batchLens[:0], lens...)
	ws.batchTokens, ws.batchPos = append(ws.batchTokens[:0], tokens...), ws.batchPos[:0]
	ws.prefixed = !want.Logits && m.sharePrefixes(tokens, lens, want.NoGrad)
	ws.tokens, ws.lens, ws.pos, ws.targets = ws.tokens[:0], ws.lens[:0], ws.pos[:0], ws.targets[:0]
	o := 0
	for s, L := range lens {
		past := 0
		if ws.prefixed {
			past = ws.past[s]
		}
		for i := range L {
			ws.batchPos = append(ws.batchPos, i)
		}
		for i := past; i < L; i++ {
			tgt := -1
			if i+1 < L {
				tgt = tokens[o+i+1]
			}
			ws.tokens, ws.pos, ws.targets = append(ws.tokens, tokens[o+i]), append(ws.pos, i), append(ws.targets, tgt)
		}
		ws.lens = append(ws.lens, L-past)
		o += L
	}
	T := len(ws.tokens)
	ws.T = T
	d, V, I := c.HiddenSize, c.VocabSize, c.IntermediateSize
	C, KV := c.NumHeads*c.HeadDim(), c.NumKVHeads*c.HeadDim()
	att := m.b.AttentionStore(ws.lens, c.NumHeads)
	if len(ws.layers) != c.NumLayers {
		ws.layers = make([]layerActs, c.NumLayers)
	}
	var needs []need
	for l := range ws.layers {
		a := &ws.layers[l]
		needs = append(needs, need{&a.resid, T * d})
		if l > 0 && m.recompute {
			continue // shares layer 0's activation buffers (below)
		}
		needs = append(needs, need{&a.ln1, T * d}, need{&a.rstd1, T},
			need{&a.q, T * C}, need{&a.k, T * KV}, need{&a.v, T * KV}, need{&a.att, att}, need{&a.attOut, T * C},
			need{&a.resid2, T * d}, need{&a.ln2, T * d}, need{&a.rstd2, T},
			need{&a.gate, T * I}, need{&a.up, T * I}, need{&a.h, T * I})
	}
	needs = append(needs, need{&ws.final, T * d}, need{&ws.lnf, T * d}, need{&ws.rstdf, T})
	H := m.headRowsOf(tokens, want)
	ws.headRows = max(1, H)
	if want.LM && !want.Logits && H*V > maxHeadLogits {
		ws.headRows = max(1, maxHeadLogits/V)
	}
	if want.LM {
		needs = append(needs, need{&ws.logits, ws.headRows * V}, need{&ws.lse, max(T, H)}, need{&ws.lp, max(T, H)}, need{&ws.ent, max(T, H)})
	}
	if ws.gathered {
		needs = append(needs, need{&ws.lnfH, max(1, H) * d})
	}
	if want.Value {
		needs = append(needs, need{&ws.val, T})
	}
	if err := m.grow(needs...); err != nil {
		return err
	}
	ws.shared = m.recompute
	if m.recompute {
		for l := 1; l < len(ws.layers); l++ {
			resid := ws.layers[l].resid
			ws.layers[l] = ws.layers[0]
			ws.layers[l].resid = resid
		}
	}
	// Slot 0 also takes the LM head's rows, which a prefixed batch
	// gathers from fewer computed rows (H may exceed T).
	return m.growHalf(max(T*max(d, C, I), H*d), 0, T*m.rank())
}

// AttentionMap returns the attention probabilities of one head in one layer
// for one sequence of the last Forward, as an L×L tensor (row i: how much
// position i attends to each position ≤ i). They are recomputed from the
// Forward's saved queries and keys, to the same floats.
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
	o, L, g := 0, ws.batchLens[seq], head/(c.NumHeads/c.NumKVHeads)
	for _, n := range ws.batchLens[:seq] {
		o += n
	}
	if err := m.grow(need{&ws.attMap, L * L}); err != nil {
		return nil, fmt.Errorf("attention map: %w", err)
	}
	if m.recompute && ws.held != layer {
		if err := m.blockForward(layer, nil); err != nil {
			return nil, fmt.Errorf("attention map: %w", err)
		}
	}
	a, b := &ws.layers[layer], m.b
	qs, ks := a.q, a.k
	var err error
	if ws.prefixed { // the sequence's rows, from the rows that computed them
		rows := ws.rowOf[o : o+L]
		if qs, err = b.Alloc(L * C); err != nil {
			return nil, fmt.Errorf("attention map: %w", err)
		}
		defer b.Free(qs)
		if ks, err = b.Alloc(L * KV); err != nil {
			return nil, fmt.Errorf("attention map: %w", err)
		}
		defer b.Free(ks)
		b.EmbeddingForward(qs, rows, a.q, L, C)
		b.EmbeddingForward(ks, rows, a.k, L, KV)
		o = 0
	}
	q := b.Slice(qs, o*C+head*hd, (L-1)*C+hd)
	k := b.Slice(ks, o*KV+g*hd, (L-1)*KV+hd)
	b.AttentionProbs(ws.attMap, q, k, L, hd, C, KV)
	p := make([]float32, L*L)
	if err := b.Download(p, ws.attMap); err != nil {
		return nil, fmt.Errorf("attention map: %w", err)
	}
	return tensor.New(tensor.WithShape(L, L), tensor.WithBacking(p)), nil
}
