// Package backendtest is the conformance suite of engine/backend: every op
// of a backend against its float64 twin in Naive at several shapes
// (ragged packed sequences, grouped-query attention, QKV bias, long
// positions), a whole training step of the one model (policy with tied and
// untied heads, critic, reference) and a multi-turn decode with sampling
// on the backend against the same on Naive. The CPU backend runs it in `go
// test ./...`; the CUDA backend in scripts/gpu-check. Adding an op costs a
// row of ops.
package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/sample"
)

// Tolerances, as max|got − want| / max|want| (RelErr).
const (
	opTol   = 1e-4 // one op in float32 against float64
	stepTol = 1e-3 // a whole training step at f32
	bf16Tol = 2e-2 // a whole training step at bf16
)

// RelErr is max|got − want| / max|want| (the plain max difference when
// want is all zeros; +Inf on a length mismatch or a NaN): the error
// measure of the suite, scaled by the largest value so that entries near
// zero do not dominate.
func RelErr(got, want []float32) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d, m float64
	for i := range want {
		if math.IsNaN(float64(got[i])) != math.IsNaN(float64(want[i])) {
			return math.Inf(1)
		}
		d = max(d, math.Abs(float64(got[i])-float64(want[i])))
		m = max(m, math.Abs(float64(want[i])))
	}
	if m == 0 {
		return d
	}
	return d / m
}

// Run runs the whole suite on b.
func Run(t *testing.T, b backend.Backend) {
	t.Run("ops", func(t *testing.T) { Ops(t, b) })
	t.Run("training-step", func(t *testing.T) { TrainingStep(t, b) })
	t.Run("decode", func(t *testing.T) { Decode(t, b) })
}

// shape is one attention geometry of the op table.
type shape struct {
	lens          []int // packed sequences
	nH, nKV, hd   int
	bias          bool
	past          []int // DecodeAttention: positions cached before the rows (one per sequence)
	maxPos, vocab int
}

var shapes = []shape{
	{lens: []int{5}, nH: 4, nKV: 4, hd: 8, maxPos: 64, vocab: 50, past: []int{0}},
	{lens: []int{1, 7, 33}, nH: 4, nKV: 2, hd: 16, bias: true, maxPos: 512, vocab: 97, past: []int{300, 0, 12}},
	{lens: []int{70, 3}, nH: 6, nKV: 1, hd: 8, maxPos: 512, vocab: 33, past: []int{5, 400}},
}

func (s shape) T() int  { return sum(s.lens) }
func (s shape) C() int  { return s.nH * s.hd }
func (s shape) KV() int { return s.nKV * s.hd }
func (s shape) name() string {
	return fmt.Sprintf("lens%v-h%d-kv%d-hd%d", s.lens, s.nH, s.nKV, s.hd)
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// call is one run of an op row on one backend: it makes inputs (the same
// values on every backend: the rng is seeded per row and shape) and keeps
// the buffers whose contents are compared.
type call struct {
	t       *testing.T
	b       backend.Backend
	rng     *rand.Rand
	outs    []backend.Buffer
	scalars []float32
	ints    []int
}

// in returns a buffer of n values drawn from N(0, scale²).
func (c *call) in(n int, scale float64) backend.Buffer {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(c.rng.NormFloat64() * scale)
	}
	return c.upload(x)
}

func (c *call) upload(x []float32) backend.Buffer {
	buf, err := c.b.Alloc(max(len(x), 1))
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.b.Upload(buf, x); err != nil {
		c.t.Fatal(err)
	}
	return buf
}

// out returns buf, marked to be compared.
func (c *call) out(buf backend.Buffer) backend.Buffer {
	c.outs = append(c.outs, buf)
	return buf
}

// rope returns rotary tables of maxPos positions.
func (c *call) rope(maxPos, hd int) (cos, sin backend.Buffer) {
	half := hd / 2
	cs, sn := make([]float32, maxPos*half), make([]float32, maxPos*half)
	for p := range maxPos {
		for i := range half {
			a := float64(p) / math.Pow(10000, float64(2*i)/float64(hd))
			cs[p*half+i], sn[p*half+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	return c.upload(cs), c.upload(sn)
}

// positions are the in-sequence positions of a packed batch.
func positions(lens []int) []int {
	var pos []int
	for _, L := range lens {
		for i := range L {
			pos = append(pos, i)
		}
	}
	return pos
}

// op is a row of the table: it runs one op (or a short chain that needs
// it) on c.b with inputs from c.
type op struct {
	name string
	run  func(c *call, s shape)
}

var ops = []op{
	{"gemm-nt", func(c *call, s shape) {
		M, N, K := s.T(), s.C(), s.KV()+3
		a, b, out := c.in(M*K, 1), c.in(N*(K+2), 1), c.in(M*N, 1)
		c.b.Gemm(false, true, M, N, K, 0.5, a, K, b, K+2, 1, c.out(out), N)
	}},
	{"gemm-nn", func(c *call, s shape) {
		M, N, K := s.T(), s.C(), s.KV()
		a, b, out := c.in(M*K, 1), c.in(K*N, 1), c.in(M*N, 1)
		c.b.Gemm(false, false, M, N, K, 1, a, K, b, N, 0.25, c.out(out), N)
	}},
	{"gemm-tn", func(c *call, s shape) {
		M, N, K := s.C(), s.KV(), s.T()
		a, b, out := c.in(K*M, 1), c.in(K*N, 1), c.in(M*N, 1)
		c.b.Gemm(true, false, M, N, K, 1, a, M, b, N, 1, c.out(out), N)
	}},
	{"gemm-bf16", func(c *call, s shape) {
		M, N, K := s.T(), s.C(), s.KV()
		a, b := bf16(c, c.in(M*K, 1), M*K), bf16(c, c.in(N*K, 1), N*K)
		out := c.in(M*N, 1)
		c.b.GemmBF16(false, true, M, N, K, 1, a, K, b, K, 0, c.out(out), N)
	}},
	{"gemm-bf16-b", func(c *call, s shape) {
		M, N, K := s.T(), s.C(), s.KV()
		a, b := c.in(M*K, 1), bf16(c, c.in(K*N, 1), K*N)
		out := c.in(M*N, 1)
		c.b.GemmBF16B(false, false, M, N, K, 1, a, K, b, N, 0.5, c.out(out), N)
	}},
	{"from-bf16", func(c *call, s shape) {
		n := s.T() * s.C()
		x := c.in(n, 1)
		c.b.FromBF16(c.out(x), bf16(c, c.in(n, 1), n), n)
	}},
	{"add-bias", func(c *call, s shape) {
		out := c.in(s.T()*s.C(), 1)
		c.b.AddBias(c.out(out), c.in(s.C(), 1), s.T(), s.C())
	}},
	{"column-sum", func(c *call, s shape) {
		sum := c.in(s.C(), 1)
		c.b.ColumnSum(c.out(sum), c.in(s.T()*s.C(), 1), s.T(), s.C())
	}},
	{"add", func(c *call, s shape) {
		n := s.T() * s.C()
		a := c.in(n, 1)
		c.b.Add(c.out(a), a, c.in(n, 1), n)
	}},
	{"scale", func(c *call, s shape) {
		n := s.T() * s.C()
		x := c.in(n, 1)
		c.b.Scale(c.out(x), n, -0.3)
	}},
	{"embedding", func(c *call, s shape) {
		T, C := s.T(), s.C()
		toks := tokens(c.rng, s.vocab, T)
		wte, dwte := c.in(s.vocab*C, 1), c.in(s.vocab*C, 1)
		out := c.in(T*C, 1)
		c.b.EmbeddingForward(c.out(out), toks, wte, T, C)
		c.b.EmbeddingBackward(c.out(dwte), c.in(T*C, 1), toks, T, C)
	}},
	{"embedding-bf16", func(c *call, s shape) { // a frozen embedding held as bf16
		T, C := s.T(), s.C()
		toks := tokens(c.rng, s.vocab, T)
		out := c.in(T*C, 1)
		c.b.EmbeddingForward(c.out(out), toks, bf16(c, c.in(s.vocab*C, 1), s.vocab*C), T, C)
	}},
	{"rmsnorm", func(c *call, s shape) {
		N, C := s.T(), s.C()
		inp, w, dout := c.in(N*C, 2), c.in(C, 1), c.in(N*C, 1)
		out, rstd := c.in(N*C, 1), c.in(N, 1)
		c.b.RMSNormForward(c.out(out), c.out(rstd), inp, w, N, C, 1e-6)
		dinp, dw := c.in(N*C, 1), c.in(C, 1)
		c.b.RMSNormBackward(c.out(dinp), c.out(dw), dout, inp, w, rstd, N, C)
	}},
	{"rope", func(c *call, s shape) {
		cos, sin := c.rope(s.maxPos, s.hd)
		T := s.T()
		pos := positions(s.lens)
		for i := range pos { // long positions too
			pos[i] = (pos[i]*37 + i) % s.maxPos
		}
		x := c.in(T*s.C(), 1)
		c.b.RopeForward(c.out(x), cos, sin, pos, T, s.nH, s.hd)
		dx := c.in(T*s.KV(), 1)
		c.b.RopeBackward(c.out(dx), cos, sin, pos, T, s.nKV, s.hd)
	}},
	{"attention", func(c *call, s shape) {
		T, C, KV := s.T(), s.C(), s.KV()
		q, k, v, dout := c.in(T*C, 1), c.in(T*KV, 1), c.in(T*KV, 1), c.in(T*C, 1)
		n := c.b.AttentionStore(s.lens, s.nH)
		att, datt := c.in(n, 1), c.in(n, 1)
		out := c.in(T*C, 1)
		c.b.AttentionForward(c.out(out), att, q, k, v, s.lens, s.nH, s.nKV, s.hd)
		dq, dk, dv := c.in(T*C, 1), c.in(T*KV, 1), c.in(T*KV, 1)
		c.b.AttentionBackward(c.out(dq), c.out(dk), c.out(dv), datt, dout, att, q, k, v, s.lens, s.nH, s.nKV, s.hd)
	}},
	{"attention-probs", func(c *call, s shape) {
		L := s.lens[len(s.lens)-1]
		C, KV := s.C(), s.KV()
		q, k := c.in(L*C, 1), c.in(L*KV, 1)
		p := c.in(L*L, 1)
		h := s.nH - 1
		c.b.AttentionProbs(c.out(p), c.b.Slice(q, h*s.hd, (L-1)*C+s.hd), c.b.Slice(k, (h/(s.nH/s.nKV))*s.hd, (L-1)*KV+s.hd), L, s.hd, C, KV)
	}},
	{"swiglu", func(c *call, s shape) {
		n := s.T() * s.C()
		gate, up, dout := c.in(n, 2), c.in(n, 1), c.in(n, 1)
		out, dgate, dup := c.in(n, 1), c.in(n, 1), c.in(n, 1)
		c.b.SwiGLUForward(c.out(out), gate, up, n)
		c.b.SwiGLUBackward(c.out(dgate), c.out(dup), dout, gate, up, n)
		rows := c.in(s.T()*s.C(), 1)
		c.b.SwiGLURows(c.out(rows), c.in(2*s.T()*s.C(), 2), s.T(), s.C())
	}},
	{"log-softmax", func(c *call, s shape) {
		N, V := s.T(), s.vocab
		logits := c.in(N*V, 3)
		tg := tokens(c.rng, V, N)
		tg[0], tg[N-1] = -1, -1 // rows without a target
		lse, lp, ent := c.in(N, 1), c.in(N, 1), c.in(N, 1)
		c.b.LogSoftmaxForward(c.out(lse), c.out(lp), c.out(ent), logits, tg, N, V)
		dl := c.in(N*V, 1)
		c.b.LogSoftmaxBackward(c.out(dl), logits, lse, ent, tg, c.in(N, 1), c.in(N, 1), N, V)
	}},
	{"decode-attention", func(c *call, s shape) {
		C, KV := s.C(), s.KV()
		cos, sin := c.rope(s.maxPos, s.hd)
		cache, err := c.b.NewKVCache(2, s.nKV, s.hd, s.maxPos)
		if err != nil {
			c.t.Fatal(err)
		}
		defer cache.Free()
		var bias backend.Buffer
		if s.bias {
			bias = c.in(C+2*KV, 1)
		}
		// A prefill of each sequence's past (slots 2, 0, 1, ...), then
		// its rows in one step, then one more row each.
		var pre, step, next []backend.DecodeSeq
		for i, L := range s.lens {
			slot := (i + 2) % len(s.lens)
			if s.past[i] > 0 {
				pre = append(pre, backend.DecodeSeq{Slot: slot, Past: 0, Rows: s.past[i]})
			}
			step = append(step, backend.DecodeSeq{Slot: slot, Past: s.past[i], Rows: L})
			next = append(next, backend.DecodeSeq{Slot: slot, Past: s.past[i] + L, Rows: 1})
			if err := cache.Reserve(slot, s.past[i]+L+1); err != nil {
				c.t.Fatal(err)
			}
		}
		for _, seqs := range [][]backend.DecodeSeq{pre, step, next} {
			if len(seqs) == 0 {
				continue
			}
			N := 0
			for _, x := range seqs {
				N += x.Rows
			}
			out := c.in(N*C, 1)
			c.b.DecodeAttention(c.out(out), c.in(N*(C+2*KV), 1), bias, cache, 1, seqs, cos, sin, s.nH, s.nKV, s.hd)
		}
	}},
	{"adamw", func(c *call, s shape) {
		n := s.T() * s.C()
		p, m, v := c.in(n, 1), c.in(n, 0.1), c.in(n, 0) // second moments start at 0
		g := c.in(n, 1)
		oc := optim.DefaultConfig()
		for step := 1; step <= 2; step++ {
			c.b.AdamW(p, m, v, g, n, optim.Scalars(oc, step, 1e-3, step == 1))
		}
		c.out(p)
		c.out(m)
		c.out(v)
	}},
	{"grad-norm", func(c *call, s shape) {
		n, err := c.b.GradNorm(c.in(s.T()*s.C()*s.hd, 1), s.T()*s.C()*s.hd)
		if err != nil {
			c.t.Fatal(err)
		}
		c.scalars = append(c.scalars, float32(n))
	}},
	{"packed-linear", func(c *call, s shape) {
		p, ok := c.b.(backend.Packer)
		if !ok {
			p = naivePacker{c.b}
		}
		N, in := s.T(), s.C()
		w1, w2 := c.in(s.KV()*in, 1), c.in(3*in, 1)
		packed, err := p.PackLinear([]backend.LinearGroup{{Weights: []backend.Buffer{w1, w2}, Outs: []int{s.KV(), 3}, In: in}})
		if err != nil {
			c.t.Fatal(err)
		}
		out := c.in(N*(s.KV()+3), 1)
		p.PackedLinear(c.out(out), c.in(N*in, 1), packed[0], N)
	}},
	{"sample", func(c *call, s shape) {
		rows, V := s.T(), s.vocab
		logits := c.in(rows*V, 2)
		for _, o := range []sample.Options{{}, {Temperature: 1}, {Temperature: 0.7, TopK: 5}, {Temperature: 1.3, TopP: 0.9}} {
			rngs := make([]*sample.RNG, rows)
			for r := range rngs {
				rngs[r] = sample.NewRNG(uint64(r + 1))
			}
			if rows > 2 {
				rngs[2] = rngs[1] // a shared stream draws in row order
			}
			toks, err := c.b.Sample(logits, rows, V, o, rngs)
			if err != nil {
				c.t.Fatal(err)
			}
			c.ints = append(c.ints, toks...)
		}
	}},
}

// naivePacker stands in for a backend without packing: the same product
// as Gemms on the unpacked weights, which is what the decoder runs then.
type naivePacker struct{ b backend.Backend }

type npacked struct {
	ws   []backend.Buffer
	outs []int
	in   int
}

func (p *npacked) Len() int { return 0 }

func (n naivePacker) PackLinear(groups []backend.LinearGroup) ([]backend.Buffer, error) {
	out := make([]backend.Buffer, len(groups))
	for i, g := range groups {
		out[i] = &npacked{g.Weights, g.Outs, g.In}
	}
	return out, nil
}

func (n naivePacker) PackedLinear(out, x, packed backend.Buffer, N int) {
	p := packed.(*npacked)
	ld := sum(p.outs)
	off := 0
	for i, w := range p.ws {
		n.b.Gemm(false, true, N, p.outs[i], p.in, 1, x, p.in, w, p.in, 0, n.b.Slice(out, off, N*ld-off), ld)
		off += p.outs[i]
	}
}

func bf16(c *call, x backend.Buffer, n int) backend.Buffer {
	h, err := c.b.AllocBF16(n)
	if err != nil {
		c.t.Fatal(err)
	}
	c.b.ToBF16(h, x, n)
	return h
}

func tokens(rng *rand.Rand, V, n int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = rng.IntN(V)
	}
	return t
}

// results runs row r at shape s on b and downloads what it marked.
func results(t *testing.T, b backend.Backend, r op, s shape, seed uint64) (floats [][]float32, ints []int) {
	c := &call{t: t, b: b, rng: rand.New(rand.NewPCG(seed, 7))}
	r.run(c, s)
	for _, o := range c.outs {
		x := make([]float32, o.Len())
		if err := b.Download(x, o); err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		floats = append(floats, x)
	}
	if len(c.scalars) > 0 {
		floats = append(floats, c.scalars)
	}
	if err := b.Err(); err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return floats, c.ints
}

// Ops runs every op of the table on b and on Naive at every shape.
func Ops(t *testing.T, b backend.Backend) {
	for i, r := range ops {
		for j, s := range shapes {
			t.Run(r.name+"/"+s.name(), func(t *testing.T) {
				seed := uint64(100*i + j)
				want, wantInts := results(t, Naive{}, r, s, seed)
				got, gotInts := results(t, b, r, s, seed)
				for k := range want {
					if e := RelErr(got[k], want[k]); e > opTol {
						t.Errorf("output %d: relative error %.3g > %g", k, e, opTol)
					}
				}
				if !slices.Equal(gotInts, wantInts) {
					t.Errorf("tokens differ:\n got %v\nwant %v", gotInts, wantInts)
				}
			})
		}
	}
}

// configs are the model geometries of the whole-model checks.
func configs() map[string]model.Config {
	tied := model.Tiny() // GQA, QKV bias, tied head
	untied := model.Tiny()
	untied.TieWordEmbeddings, untied.AttentionBias, untied.NumKVHeads = false, false, 4
	return map[string]model.Config{"tied-gqa-bias": tied, "untied-mha": untied}
}

// onBackends returns a model of c (random weights from seed) on ref and
// one on b with the same weights, at precision p; with round every weight
// is rounded to bf16, as a model loaded from bf16 safetensors is (a LoRA
// base then holds its matrices as bf16 only).
func onBackends(t *testing.T, refB, b backend.Backend, c model.Config, seed uint64, p backend.Precision, round bool) (ref, got *model.Model) {
	t.Helper()
	mk := func(be backend.Backend) *model.Model {
		m, err := model.New(c, seed)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		for _, v := range m.Layout.Views { // non-zero biases and value head
			if v.Size < 2*c.HiddenSize {
				for i := range v.Size {
					m.Params.Data[v.Offset+i] += float32(rng.NormFloat64() * 0.1)
				}
			}
		}
		if round {
			for i, x := range m.Params.Data {
				m.Params.Data[i] = backend.RoundBF16(x)
			}
		}
		if err := m.Use(be, p); err != nil {
			t.Fatal(err)
		}
		return m
	}
	return mk(refB), mk(b)
}

// TrainingStep checks one StarPO update of a policy (tied and untied
// heads), a critic and a frozen reference on b against Naive, at f32 and
// bf16 (see Step).
func TrainingStep(t *testing.T, b backend.Backend) {
	for name, c := range configs() {
		for _, p := range []backend.Precision{backend.F32, backend.BF16} {
			t.Run(fmt.Sprintf("%s/%s", name, p), func(t *testing.T) { Step(t, Naive{}, b, c, p) })
		}
	}
}

// Step checks one StarPO update of a policy of c, a critic and a frozen
// reference on b against the same on ref, at precision p: log-probabilities,
// entropies, values, every gradient, the gradient norm and the parameters
// after an AdamW step, within 1e-3 (f32) or 2e-2 (bf16) relative error.
func Step(t *testing.T, ref, b backend.Backend, c model.Config, p backend.Precision) {
	tol := stepTol
	if p == backend.BF16 {
		tol = bf16Tol
	}
	lens := []int{9, 1, 40, 17}
	rng := rand.New(rand.NewPCG(3, 3))
	toks := tokens(rng, c.VocabSize, sum(lens))
	adv := make([]float32, len(toks))
	for i := range adv {
		adv[i] = float32(rng.NormFloat64()) / float32(len(toks))
	}
	critic := c
	critic.LMHead, critic.ValueHead = false, true
	worst := 0.0
	compare := func(what string, got, want []float32) {
		t.Helper()
		e := RelErr(got, want)
		worst = max(worst, e)
		if e > tol {
			t.Errorf("%s: relative error %.3g > %g", what, e, tol)
		}
	}
	defer func() { t.Logf("worst relative error %.3g (tolerance %g)", worst, tol) }()
	lora := &model.LoRA{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}}
	for _, role := range []struct {
		name string
		c    model.Config
		want model.Want
		step bool
		lora *model.LoRA // adapters on the model of c (a critic's with a value head)
		bf16 bool        // the base's weights rounded to bf16 (held as bf16 only)
	}{
		{"policy", c, model.Want{LM: true}, true, nil, false}, {"critic", critic, model.Want{Value: true}, true, nil, false},
		{"reference", c, model.Want{LM: true}, false, nil, false},
		{"lora-policy", c, model.Want{LM: true}, true, lora, false}, {"lora-critic", c, model.Want{Value: true}, true, lora, false},
		{"lora-policy-bf16-base", c, model.Want{LM: true}, true, lora, true},
	} {
		refM, got := onBackends(t, ref, b, role.c, 5, p, role.bf16)
		if role.lora != nil {
			refM, got = adapters(t, refM, *role.lora, role.want.Value), adapters(t, got, *role.lora, role.want.Value)
		}
		if base := got.Base(); role.bf16 && len(base.Params.Data) == base.Layout.Size {
			t.Fatalf("%s: the bf16-exact base kept its float32 matrices", role.name)
		}
		models := []*model.Model{refM, got}
		var outs [2]*model.Output
		for i, m := range models {
			out, err := m.Forward(toks, lens, role.want)
			if err != nil {
				t.Fatal(err)
			}
			outs[i] = &model.Output{LogProb: slices.Clone(out.LogProb), Entropy: slices.Clone(out.Entropy), Value: slices.Clone(out.Value)}
		}
		compare(role.name+" log-probs", outs[1].LogProb, outs[0].LogProb)
		compare(role.name+" entropies", outs[1].Entropy, outs[0].Entropy)
		compare(role.name+" values", outs[1].Value, outs[0].Value)
		if role.step {
			var norms [2]float64
			var grads [2][]float32
			for i, m := range models {
				m.ZeroGrad()
				g := model.Grad{LogProb: adv, Entropy: adv}
				if role.want.Value {
					g = model.Grad{Value: adv}
				}
				if err := m.Backward(g); err != nil {
					t.Fatal(err)
				}
				if err := m.SyncGrads(); err != nil {
					t.Fatal(err)
				}
				grads[i] = slices.Clone(m.Grads.Data) // before clipping
				opt, err := m.NewAdamW(optim.DefaultConfig())
				if err != nil {
					t.Fatal(err)
				}
				if norms[i], err = m.ClipGradNorm(1); err != nil {
					t.Fatal(err)
				}
				if _, err := m.Step(opt); err != nil {
					t.Fatal(err)
				}
				if err := m.SyncParams(); err != nil {
					t.Fatal(err)
				}
				opt.Free()
			}
			for _, v := range refM.Layout.Views {
				compare(role.name+" gradient of "+v.Name, grads[1][v.Offset:v.Offset+v.Size], grads[0][v.Offset:v.Offset+v.Size])
			}
			compare(role.name+" gradient norm", []float32{float32(norms[1])}, []float32{float32(norms[0])})
			compare(role.name+" parameters after AdamW", got.Params.Data, refM.Params.Data)
		}
		refM.Free()
		got.Free()
	}
}

// adapters returns LoRA adapters on base whose B is not zero (so that
// they matter), the same on every backend.
func adapters(t *testing.T, base *model.Model, l model.LoRA, valueHead bool) *model.Model {
	t.Helper()
	a, err := base.WithLoRA(l, valueHead, 11)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range a.Params.Data {
		a.Params.Data[i] += float32(rng.NormFloat64() * 0.05)
	}
	if err := a.Upload(); err != nil {
		t.Fatal(err)
	}
	return a
}

// Decode checks a multi-turn decode with sampling on b against Naive:
// prompts of several lengths, generation with a stop rule, an
// environment reply appended to some sequences, a removed sequence, a new
// one in its slot, and generation again. The sampled tokens must be the
// same and the logits close. Also of a LoRA policy (adapters on every
// linear layer, unfolded beside the base's products; on a bf16-exact
// base, which holds its matrices as bf16 only). (That the decoder's
// logits equal a full forward's is engine/model's test.)
func Decode(t *testing.T, b backend.Backend) {
	for name, c := range configs() {
		for _, p := range []backend.Precision{backend.F32, backend.BF16} {
			for _, lora := range []bool{false, true} {
				run := fmt.Sprintf("%s/%s", name, p)
				if lora {
					run += "/lora"
				}
				t.Run(run, func(t *testing.T) { decode(t, b, c, p, lora) })
			}
		}
	}
}

// decode is Decode's check of one model of c at precision p, a LoRA
// policy when lora.
func decode(t *testing.T, b backend.Backend, c model.Config, p backend.Precision, lora bool) {
	ref, got := onBackends(t, Naive{}, b, c, 9, p, lora)
	defer got.Free()
	if lora {
		l := model.LoRA{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}}
		ref, got = adapters(t, ref, l, false), adapters(t, got, l, false)
	}
	var toks [2][][]int
	var logits [2][]float32
	for i, m := range []*model.Model{ref, got} {
		toks[i], logits[i] = play(t, m)
	}
	if !slices.EqualFunc(toks[0], toks[1], slices.Equal) {
		t.Fatalf("sampled tokens differ:\n got %v\nwant %v", toks[1], toks[0])
	}
	tol := opTol * 10
	if p == backend.BF16 {
		tol = bf16Tol
	}
	if e := RelErr(logits[1], logits[0]); e > tol {
		t.Errorf("logits: relative error %.3g > %g", e, tol)
	}
}

// play runs the decode script on m and returns the sampled tokens and the
// logits of a final Append.
func play(t *testing.T, m *model.Model) ([][]int, []float32) {
	t.Helper()
	d, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	V := m.Config.VocabSize
	prompt := func(n int) []int { return tokens(rng, V, n) }
	reqs := []model.Request{{ID: 7, Prompt: prompt(12)}, {ID: 3, Prompt: prompt(1)}, {ID: 5, Prompt: prompt(30)}}
	for i := range reqs {
		reqs[i].RNG = sample.NewRNG(uint64(10 + i))
	}
	opts := model.GenerateOptions{Sample: sample.Options{Temperature: 1}, MaxNew: 9, Stop: sample.NewStopper([][]int{{4}})}
	var all [][]int
	gen := func(reqs []model.Request) {
		out, err := d.Generate(reqs, opts)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, out...)
	}
	gen(reqs)
	d.Remove(3)
	reqs = []model.Request{{ID: 7, Prompt: prompt(5), RNG: reqs[0].RNG}, {ID: 11, Prompt: prompt(8), RNG: sample.NewRNG(99)}, {ID: 5, RNG: reqs[2].RNG}}
	gen(reqs)
	logits, err := d.Append([]int{5, 11}, [][]int{prompt(3), prompt(2)})
	if err != nil {
		t.Fatal(err)
	}
	return all, slices.Clone(logits)
}
