package model

import (
	"encoding/json"
	"github.com/ragen-go/ragen/engine/backend"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// randomBatch returns a packed batch of sequences with the given lengths.
func randomBatch(rng *rand.Rand, vocab int, lens ...int) []int {
	n := 0
	for _, L := range lens {
		n += L
	}
	toks := make([]int, n)
	for i := range toks {
		toks[i] = rng.IntN(vocab)
	}
	return toks
}

// randomize gives every parameter a random value of a larger scale than
// the initialisation, so that gradients and attention patterns are far
// from uniform.
func randomize(m *Model, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, v := range m.Layout.Views {
		x := m.Params.Slice(v.Name)
		for i := range x {
			if strings.HasSuffix(v.Name, "norm.weight") {
				x[i] = float32(1 + 0.1*rng.NormFloat64())
			} else {
				x[i] = float32(0.3 * rng.NormFloat64())
			}
		}
	}
}

// mixedLoss is Σ a·LogProb + b·Entropy + ½c·Value² in float64, with the
// coefficients of Grad it implies.
type mixedLoss struct{ a, b, c []float32 }

func newMixedLoss(rng *rand.Rand, T int) mixedLoss {
	l := mixedLoss{make([]float32, T), make([]float32, T), make([]float32, T)}
	for i := 0; i < T; i++ {
		l.a[i], l.b[i], l.c[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	return l
}

func (l mixedLoss) eval(m *Model, tokens, lens []int) (float64, Grad, error) {
	out, err := m.Forward(tokens, lens, Want{LM: true, Value: true})
	if err != nil {
		return 0, Grad{}, err
	}
	var loss float64
	dv := make([]float32, len(tokens))
	o := 0
	for _, L := range lens {
		for i := o + 1; i < o+L; i++ {
			loss += float64(l.a[i])*float64(out.LogProb[i]) + float64(l.b[i])*float64(out.Entropy[i]) +
				0.5*float64(l.c[i])*float64(out.Value[i])*float64(out.Value[i])
			dv[i] = l.c[i] * out.Value[i]
		}
		o += L
	}
	return loss, Grad{LogProb: l.a, Entropy: l.b, Value: dv}, nil
}

// TestGradientFiniteDifference checks Backward against central differences
// of the loss on the tiny preset (tied head, GQA, QKV bias, value head), for
// a sample of elements of every parameter tensor.
func TestGradientFiniteDifference(t *testing.T) {
	c := Tiny()
	c.ValueHead = true
	m, err := New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 2)
	rng := rand.New(rand.NewPCG(3, 3))
	lens := []int{5, 9, 3}
	tokens := randomBatch(rng, c.VocabSize, lens...)
	loss := newMixedLoss(rng, len(tokens))
	_, g, err := loss.eval(m, tokens, lens)
	if err != nil {
		t.Fatal(err)
	}
	m.ZeroGrad()
	if err := m.Backward(g); err != nil {
		t.Fatal(err)
	}
	const h = 1e-2
	for _, v := range m.Layout.Views {
		p, grad := m.Params.Slice(v.Name), m.Grads.Slice(v.Name)
		var gmax float64
		for _, x := range grad {
			gmax = math.Max(gmax, math.Abs(float64(x)))
		}
		worst := 0.0
		for k := 0; k < 6; k++ {
			i := rng.IntN(len(p))
			if k == 0 { // the largest gradient element, the most informative
				for j, x := range grad {
					if math.Abs(float64(x)) == gmax {
						i = j
					}
				}
			}
			old := p[i]
			p[i] = old + h
			lp, _, _ := loss.eval(m, tokens, lens)
			p[i] = old - h
			lm, _, _ := loss.eval(m, tokens, lens)
			p[i] = old
			fd := (lp - lm) / (2 * h)
			e := math.Abs(fd-float64(grad[i])) / (math.Max(gmax, 1e-3))
			worst = math.Max(worst, e)
			if e > 5e-3 {
				t.Errorf("%s[%d]: backward %.6g, finite difference %.6g (max |grad| %.3g)", v.Name, i, grad[i], fd, gmax)
			}
		}
		t.Logf("%-50s max |grad| %.3g, worst error / max|grad| %.2e", v.Name, gmax, worst)
	}
}

// TestGOMAXPROCSBitIdentical runs forward and backward with 1 and 2
// threads on a batch large enough that every kernel splits into several
// chunks, and requires bit-identical outputs and gradients.
func TestGOMAXPROCSBitIdentical(t *testing.T) {
	c := Small()
	c.VocabSize = 256
	c.NumKVHeads = 2
	c.ValueHead = true
	lens := []int{150, 37, 90, 1, 120}
	rng := rand.New(rand.NewPCG(4, 4))
	tokens := randomBatch(rng, c.VocabSize, lens...)
	loss := newMixedLoss(rng, len(tokens))
	run := func(procs int) (out, grads []float32) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		m, err := New(c, 7)
		if err != nil {
			t.Fatal(err)
		}
		randomize(m, 8)
		l, g, err := loss.eval(m, tokens, lens)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Backward(g); err != nil {
			t.Fatal(err)
		}
		out = append([]float32{float32(l)}, m.ws.out.Value...)
		lse, _ := backend.HostFloats(m.ws.lse)
		out = append(out, lse...)
		return out, slices.Clone(m.Grads.Data)
	}
	o1, g1 := run(1)
	o2, g2 := run(2)
	if !slices.Equal(o1, o2) {
		t.Error("forward outputs differ between GOMAXPROCS=1 and 2")
	}
	if !slices.Equal(g1, g2) {
		for i := range g1 {
			if g1[i] != g2[i] {
				t.Errorf("gradients differ between GOMAXPROCS=1 and 2, first at flat index %d: %g vs %g", i, g1[i], g2[i])
				break
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	m, err := New(Tiny(), 1)
	if err != nil {
		t.Fatal(err)
	}
	long := make([]int, Tiny().MaxPositions+1)
	for _, tc := range []struct {
		name         string
		tokens, lens []int
		want         Want
		err          string
	}{
		{"empty batch", nil, nil, Want{LM: true}, "forward: empty batch: no sequences"},
		{"token id too large", []int{1, 96, 3}, []int{3}, Want{LM: true}, "forward: token 1: id 96 out of range [0, 96)"},
		{"negative token id", []int{1, 2, -1}, []int{2, 1}, Want{LM: true}, "forward: token 2: id -1 out of range [0, 96)"},
		{"too long", long, []int{len(long)}, Want{LM: true}, "forward: sequence 0: length 257 exceeds max_position_embeddings 256"},
		{"zero length", []int{1, 2}, []int{2, 0}, Want{LM: true}, "forward: sequence 1: length must be ≥ 1 (got 0)"},
		{"lens mismatch", []int{1, 2, 3}, []int{2}, Want{LM: true}, "forward: batch: lengths sum to 2 but there are 3 tokens"},
		{"no value head", []int{1, 2}, []int{2}, Want{Value: true}, "forward: values asked for but the model has no value head (value_head: false)"},
		{"nothing wanted", []int{1, 2}, []int{2}, Want{}, "forward: nothing asked for (set Want.LM or Want.Value)"},
	} {
		_, err := m.Forward(tc.tokens, tc.lens, tc.want)
		if err == nil || err.Error() != tc.err {
			t.Errorf("%s: got error %v, want %q", tc.name, err, tc.err)
		}
	}

	if err := m.Backward(Grad{}); err == nil || !strings.Contains(err.Error(), "needs a Forward first") {
		t.Errorf("backward before forward: got %v", err)
	}
	if _, err := m.AttentionMap(0, 0, 0); err == nil {
		t.Error("attention map before forward: no error")
	}
	if _, err := m.Forward([]int{1, 2, 3}, []int{3}, Want{LM: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AttentionMap(0, 1, 0); err == nil || err.Error() != "attention map: sequence 1 out of range [0, 1)" {
		t.Errorf("attention map of a missing sequence: got %v", err)
	}
	if err := m.Backward(Grad{LogProb: make([]float32, 2)}); err == nil || err.Error() != "backward: Grad.LogProb has 2 entries, the batch has 3 tokens" {
		t.Errorf("short gradient: got %v", err)
	}
	if err := m.Backward(Grad{Value: make([]float32, 3)}); err == nil || !strings.Contains(err.Error(), "did not evaluate the value head") {
		t.Errorf("value gradient without value head: got %v", err)
	}
	if err := m.Backward(Grad{LogProb: make([]float32, 3)}); err != nil {
		t.Errorf("valid backward: %v", err)
	}
	if err := m.Backward(Grad{LogProb: make([]float32, 3)}); err == nil {
		t.Error("second backward on one forward: no error")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		err  string
	}{
		{func(c *Config) { c.VocabSize = 0 }, "vocab_size: must be > 0 (got 0)"},
		{func(c *Config) { c.NumKVHeads = 3 }, "num_key_value_heads: must divide num_attention_heads (got 3 and 4)"},
		{func(c *Config) { c.NumHeads = 5 }, "num_attention_heads: must divide hidden_size (got 5 and 32)"},
		{func(c *Config) { c.HiddenSize, c.NumHeads, c.NumKVHeads = 36, 12, 4 }, "hidden_size: head_dim = hidden_size/num_attention_heads must be even for rotary embeddings (got 3)"},
		{func(c *Config) { c.RopeTheta = 0 }, "rope_theta: must be a finite number > 1 (got 0)"},
		{func(c *Config) { c.RMSNormEps = -1 }, "rms_norm_eps: must be in (0, 1] (got -1)"},
		{func(c *Config) { c.LMHead = false }, "lm_head, value_head: at least one head must be on"},
		{func(c *Config) { c.MaxPositions = -2 }, "max_position_embeddings: must be > 0 (got -2)"},
	} {
		c := Tiny()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || err.Error() != tc.err {
			t.Errorf("got %v, want %q", err, tc.err)
		}
		if _, err := New(c, 0); err == nil || !strings.HasSuffix(err.Error(), tc.err) {
			t.Errorf("New: got %v, want an error ending in %q", err, tc.err)
		}
	}
	for name, c := range map[string]Config{"Tiny": Tiny(), "Small": Small(), "Base": Base()} {
		c.VocabSize = 512
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if s := Small(); s.IntermediateSize != 352 || s.HiddenSize != 128 || s.NumLayers != 4 {
		t.Errorf("Small: %+v", s)
	}
}

func TestParamsLayout(t *testing.T) {
	c := Tiny()
	c.TieWordEmbeddings = false
	c.ValueHead = true
	m, err := New(c, 42)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Params.Tensor("model.layers.1.self_attn.k_proj.weight")
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Shape(); len(got) != 2 || got[0] != 16 || got[1] != 32 {
		t.Errorf("k_proj shape %v, want (16, 32)", got)
	}
	if err := w.SetAt(float32(3.5), 2, 5); err != nil {
		t.Fatal(err)
	}
	if got := m.Params.Slice("model.layers.1.self_attn.k_proj.weight")[2*32+5]; got != 3.5 {
		t.Errorf("tensor does not share the buffer: flat value %g after SetAt 3.5", got)
	}
	if _, err := m.Params.Tensor("model.layers.1.self_attn.kproj.weight"); err == nil || !strings.Contains(err.Error(), "model.layers.1.self_attn.k_proj.weight") {
		t.Errorf("unknown name: got %v, want it to suggest the close name", err)
	}
	for _, v := range m.Layout.Views {
		decay := !strings.Contains(v.Name, "norm") && !strings.HasSuffix(v.Name, ".bias")
		if v.Decay != decay {
			t.Errorf("%s: Decay %v", v.Name, v.Decay)
		}
		if v.Offset%align != 0 || v.Offset+v.Size > m.Layout.Size {
			t.Errorf("%s: offset %d size %d in a buffer of %d", v.Name, v.Offset, v.Size, m.Layout.Size)
		}
	}
	if _, ok := m.Layout.Lookup("lm_head.weight"); !ok {
		t.Error("untied model lacks lm_head.weight")
	}
	if _, ok := NewLayout(Tiny()).Lookup("lm_head.weight"); ok {
		t.Error("tied model has lm_head.weight")
	}
	// Init: deterministic from the seed; norms 1, value head 0.
	m2, _ := New(c, 42)
	m2.Params.Slice("model.layers.1.self_attn.k_proj.weight")[2*32+5] = 3.5
	if !slices.Equal(m.Params.Data, m2.Params.Data) {
		t.Error("same seed, different parameters")
	}
	if m.Params.Slice("model.norm.weight")[3] != 1 || m.Params.Slice("value_head.weight")[0] != 0 {
		t.Error("norms must start at 1 and the value head at 0")
	}
}

// TestPackedMatchesSeparate checks that packing isolates sequences: each
// sequence's outputs are the same alone as packed with others.
func TestPackedMatchesSeparate(t *testing.T) {
	c := Tiny()
	c.ValueHead = true
	m, err := New(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 6)
	lens := []int{4, 11, 1, 7}
	tokens := randomBatch(rand.New(rand.NewPCG(9, 9)), c.VocabSize, lens...)
	out, err := m.Forward(tokens, lens, Want{Logits: true, Value: true})
	if err != nil {
		t.Fatal(err)
	}
	packed := []([]float32){slices.Clone(out.LogProb), slices.Clone(out.Entropy), slices.Clone(out.Value), slices.Clone(out.Logits)}
	o := 0
	for s, L := range lens {
		one, err := m.Forward(tokens[o:o+L], []int{L}, Want{Logits: true, Value: true})
		if err != nil {
			t.Fatal(err)
		}
		for k, got := range [][]float32{one.LogProb, one.Entropy, one.Value} {
			if e, _ := relErr(got, packed[k][o:o+L]); e > 1e-6 {
				t.Errorf("sequence %d output %d: alone vs packed differ by %.2e", s, k, e)
			}
		}
		if e, _ := relErr(one.Logits, packed[3][o*c.VocabSize:(o+L)*c.VocabSize]); e > 1e-6 {
			t.Errorf("sequence %d logits: alone vs packed differ by %.2e", s, e)
		}
		// Attention maps are causal rows summing to 1.
		a, err := m.AttentionMap(1, 0, 3)
		if err != nil {
			t.Fatal(err)
		}
		if sh := a.Shape(); sh[0] != L || sh[1] != L {
			t.Fatalf("attention map shape %v, want (%d, %d)", sh, L, L)
		}
		for i := 0; i < L; i++ {
			var sum float32
			for j := 0; j < L; j++ {
				v, _ := a.At(i, j)
				if j > i && v.(float32) != 0 {
					t.Errorf("sequence %d: attention %d -> %d is %g, want 0 (causal)", s, i, j, v)
				}
				sum += v.(float32)
			}
			if math.Abs(float64(sum-1)) > 1e-5 {
				t.Errorf("sequence %d: attention row %d sums to %g", s, i, sum)
			}
		}
		if one.LogProb[0] != 0 || one.Value[0] != 0 {
			t.Errorf("sequence %d: first token has a prediction", s)
		}
		o += L
	}
}

// TestCrossEntropyLearns trains the tiny model with plain SGD on one
// repeated batch and requires the loss to fall well below chance.
func TestCrossEntropyLearns(t *testing.T) {
	m, err := New(Tiny(), 1)
	if err != nil {
		t.Fatal(err)
	}
	pattern := []int{5, 17, 3, 60, 8, 22, 91, 40}
	tokens := append(append([]int{}, pattern...), pattern[:6]...)
	lens := []int{8, 6}
	var first, last float32
	for step := 0; step < 60; step++ {
		m.ZeroGrad()
		loss, err := m.CrossEntropy(tokens, lens, nil)
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = loss
		}
		last = loss
		for i, g := range m.Grads.Data {
			m.Params.Data[i] -= 0.5 * g
		}
	}
	if chance := float32(math.Log(96)); math.Abs(float64(first-chance)) > 0.1 || last > 0.5 {
		t.Errorf("loss %.3f -> %.3f after 60 steps (chance %.3f); want it below 0.5", first, last, chance)
	}
}

// TestCriticValueOnly runs a critic (value head, no LM head): Forward skips
// the LM head and Backward reaches every parameter from value gradients.
func TestCriticValueOnly(t *testing.T) {
	c := Tiny()
	c.LMHead, c.ValueHead = false, true
	m, err := New(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 4)
	if _, ok := m.Layout.Lookup("lm_head.weight"); ok {
		t.Error("critic has an LM head")
	}
	lens := []int{6, 4}
	tokens := randomBatch(rand.New(rand.NewPCG(5, 5)), c.VocabSize, lens...)
	if _, err := m.Forward(tokens, lens, Want{LM: true}); err == nil {
		t.Error("log-probs from a critic: no error")
	}
	out, err := m.Forward(tokens, lens, Want{Value: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.LogProb != nil || out.Value[0] != 0 || out.Value[1] == 0 {
		t.Errorf("critic output: LogProb %v, Value %v", out.LogProb, out.Value)
	}
	dv := make([]float32, len(tokens))
	for i := range dv {
		dv[i] = 1
	}
	m.ZeroGrad()
	if err := m.Backward(Grad{Value: dv}); err != nil {
		t.Fatal(err)
	}
	for _, v := range m.Layout.Views {
		nonzero := slices.ContainsFunc(m.Grads.Slice(v.Name), func(x float32) bool { return x != 0 })
		if !nonzero {
			t.Errorf("%s: zero gradient", v.Name)
		}
	}
}

func TestConfigJSON(t *testing.T) {
	// The text model's part of Qwen2.5-0.5B's config.json.
	qwen := `{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "intermediate_size": 4864,
		"max_position_embeddings": 32768, "model_type": "qwen2", "num_attention_heads": 14,
		"num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
		"tie_word_embeddings": true, "vocab_size": 151936}`
	var c Config
	if err := json.Unmarshal([]byte(qwen), &c); err != nil {
		t.Fatal(err)
	}
	want := Config{VocabSize: 151936, HiddenSize: 896, NumLayers: 24, NumHeads: 14, NumKVHeads: 2,
		IntermediateSize: 4864, MaxPositions: 32768, RopeTheta: 1e6, RMSNormEps: 1e-6,
		TieWordEmbeddings: true, AttentionBias: true, LMHead: true}
	if c != want {
		t.Errorf("Qwen2 config read as %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	// Ours round-trips.
	tiny := Tiny()
	tiny.ValueHead, tiny.AttentionBias = true, false
	b, err := json.Marshal(tiny)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil || back != tiny {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	// A Llama config without num_key_value_heads or attention_bias.
	if err := json.Unmarshal([]byte(`{"num_attention_heads": 8, "model_type": "llama"}`), &back); err != nil || back.NumKVHeads != 8 || back.AttentionBias {
		t.Errorf("llama defaults: %+v, %v", back, err)
	}
}

// TestHeadInBlocks: when the logits would outgrow maxHeadLogits, the LM
// head, log-softmax and their backward run in blocks of rows, recomputing
// each block's logits in Backward — the same log-probabilities,
// entropies and gradients as in one block, up to the order of the weight
// gradient's sums.
func TestHeadInBlocks(t *testing.T) {
	c := Tiny()
	lens := []int{9, 30, 4}
	rng := rand.New(rand.NewPCG(8, 8))
	tokens := randomBatch(rng, c.VocabSize, lens...)
	loss := newMixedLoss(rng, len(tokens))
	run := func() (lp, ent, grads []float32) {
		m, err := New(c, 4)
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Forward(tokens, lens, Want{LM: true})
		if err != nil {
			t.Fatal(err)
		}
		lp, ent = slices.Clone(out.LogProb), slices.Clone(out.Entropy)
		m.ZeroGrad()
		if err := m.Backward(Grad{LogProb: loss.a, Entropy: loss.b}); err != nil {
			t.Fatal(err)
		}
		return lp, ent, slices.Clone(m.Grads.Data)
	}
	lp1, ent1, g1 := run()
	defer func(v int) { maxHeadLogits = v }(maxHeadLogits)
	maxHeadLogits = 7 * c.VocabSize // blocks of 7 rows
	lp2, ent2, g2 := run()
	for _, x := range []struct {
		name      string
		got, want []float32
		tol       float64
	}{{"log-probs", lp2, lp1, 1e-6}, {"entropies", ent2, ent1, 1e-6}, {"gradients", g2, g1, 1e-5}} {
		if e, at := relErr(x.got, x.want); e > x.tol {
			t.Errorf("%s: relative error %.2e at %d", x.name, e, at)
		}
	}
}

// TestRecompute: with SetRecompute, a Forward keeps only each block's
// input and Backward recomputes the rest, to the same floats: the same
// outputs and gradients bit for bit, the same attention maps, and the
// workspace holds one block's activations (not all of them).
func TestRecompute(t *testing.T) {
	c := Tiny()
	c.NumLayers, c.ValueHead = 3, true
	lens := []int{9, 30, 4}
	rng := rand.New(rand.NewPCG(9, 9))
	tokens := randomBatch(rng, c.VocabSize, lens...)
	loss := newMixedLoss(rng, len(tokens))
	run := func(recompute bool) ([]float32, []float32, []float32, int) {
		m, err := New(c, 4)
		if err != nil {
			t.Fatal(err)
		}
		m.SetRecompute(recompute)
		_, g, err := loss.eval(m, tokens, lens)
		if err != nil {
			t.Fatal(err)
		}
		out := slices.Clone(m.ws.out.LogProb)
		if err := m.Backward(g); err != nil {
			t.Fatal(err)
		}
		att, err := m.AttentionMap(0, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		distinct := map[*float32]bool{}
		for _, a := range m.ws.layers {
			h, _ := backend.HostFloats(a.h)
			distinct[&h[0]] = true
		}
		return out, slices.Clone(m.Grads.Data), slices.Clone(att.Data().([]float32)), len(distinct)
	}
	o1, g1, a1, n1 := run(false)
	o2, g2, a2, n2 := run(true)
	if !slices.Equal(o1, o2) || !slices.Equal(g1, g2) || !slices.Equal(a1, a2) {
		t.Fatal("recomputed activations changed the outputs, gradients or attention map")
	}
	if n1 != c.NumLayers || n2 != 1 {
		t.Fatalf("MLP activation buffers: %d without, %d with recomputation; want %d and 1", n1, n2, c.NumLayers)
	}
}
