package backend

import (
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend/cpu/gemm"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
)

// RoundBF16 on hand-picked bit patterns: ties to even both ways, the
// neighbours of a tie, signs, zeros, infinities, NaNs (a payload in the
// low bits only must stay a NaN), overflow past the largest bf16, and
// subnormals (a carry into the exponent makes the smallest normal).
func TestRoundBF16Cases(t *testing.T) {
	for _, c := range []struct{ in, want uint32 }{
		{0x3f800000, 0x3f800000}, // 1
		{0x3f808000, 0x3f800000}, // 1 + 2⁻⁸: a tie, 0x3f80 is even
		{0x3f818000, 0x3f820000}, // a tie, 0x3f81 is odd: up to even
		{0x3f808001, 0x3f810000}, // just above the tie
		{0x3f807fff, 0x3f800000}, // just below
		{0xbf808001, 0xbf810000}, // the same, negative
		{0xbf818000, 0xbf820000},
		{0x00000000, 0x00000000}, // +0
		{0x80000000, 0x80000000}, // −0
		{0x7f800000, 0x7f800000}, // +Inf
		{0xff800000, 0xff800000}, // −Inf
		{0x7fc00000, 0x7fc00000}, // quiet NaN
		{0x7f800001, 0x7fc00000}, // signalling NaN, payload in the low bits: quiet, not Inf
		{0xff812345, 0xffc10000}, // negative NaN: top payload bits kept
		{0x7f7f7fff, 0x7f7f0000}, // below the tie under the largest bf16
		{0x7f7f8000, 0x7f800000}, // tie above the largest bf16 (odd): Inf
		{0x7f7fffff, 0x7f800000}, // the largest float32: Inf
		{0xff7fffff, 0xff800000},
		{0x00000001, 0x00000000}, // smallest subnormal: 0
		{0x00008000, 0x00000000}, // subnormal tie, 0 is even
		{0x00018000, 0x00020000}, // subnormal tie, odd: up
		{0x00010001, 0x00010000},
		{0x007fffff, 0x00800000}, // largest subnormal: the smallest normal
		{0x807fffff, 0x80800000},
	} {
		got := math.Float32bits(RoundBF16(math.Float32frombits(c.in)))
		if got != c.want {
			t.Errorf("RoundBF16(%#08x) = %#08x, want %#08x", c.in, got, c.want)
		}
	}
}

// On random normal numbers RoundBF16 is big.Float's rounding to 8
// significant bits, ties to even (an independent reference; big.Float has
// no subnormals, hence the hand cases above).
func TestRoundBF16MatchesBigFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200_000 {
		u := rng.Uint32()
		if e := u >> 23 & 0xff; e == 0 || e == 0xff {
			continue
		}
		if rng.IntN(4) == 0 { // many exact ties
			u = u&^0xffff | 0x8000
		}
		f := math.Float32frombits(u)
		want, _ := new(big.Float).SetMode(big.ToNearestEven).SetPrec(8).SetFloat64(float64(f)).Float32()
		if got := RoundBF16(f); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("RoundBF16(%#08x) = %#08x, want %#08x", u, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

func TestParsePrecision(t *testing.T) {
	for s, want := range map[string]Precision{"": F32, "f32": F32, "bf16": BF16} {
		if p, err := ParsePrecision(s); err != nil || p != want {
			t.Errorf("ParsePrecision(%q) = %q, %v", s, p, err)
		}
	}
	if _, err := ParsePrecision("fp16"); err == nil || err.Error() != `precision: unknown "fp16" (valid: f32, bf16)` {
		t.Errorf("ParsePrecision(fp16) = %v", err)
	}
}

// The CPU's GemmBF16 on ToBF16's outputs is Sgemm on the rounded inputs,
// bit for bit, in all three layouts the engine uses.
func TestCPUGemmBF16(t *testing.T) {
	b := &CPU{}
	rng := rand.New(rand.NewPCG(2, 2))
	const M, N, K = 13, 17, 29
	for _, tr := range []struct{ a, b bool }{{false, true}, {false, false}, {true, false}} {
		x, y, c0 := randn(rng, M*K), randn(rng, K*N), randn(rng, M*N)
		lda, ldb := K, N
		if tr.a {
			lda = M
		}
		if tr.b {
			ldb = K
		}
		hx, _ := b.AllocBF16(len(x))
		hy, _ := b.AllocBF16(len(y))
		b.ToBF16(hx, Host(x), len(x))
		b.ToBF16(hy, Host(y), len(y))
		got := slices.Clone(c0)
		b.GemmBF16(tr.a, tr.b, M, N, K, 1, hx, lda, hy, ldb, 0.5, Host(got), N)
		rx, ry, want := round(x), round(y), slices.Clone(c0)
		gemm.Sgemm(tr.a, tr.b, M, N, K, 1, rx, lda, ry, ldb, 0.5, want, N)
		if !slices.Equal(got, want) {
			t.Errorf("trans %v: GemmBF16 differs from Sgemm on rounded inputs", tr)
		}
		plain := slices.Clone(c0)
		gemm.Sgemm(tr.a, tr.b, M, N, K, 1, x, lda, y, ldb, 0.5, plain, N)
		if e := RelErr(got, plain); e == 0 || e > 2e-2 {
			t.Errorf("trans %v: bf16 vs f32 product: relative error %g, want in (0, 2e-2]", tr, e)
		}
	}
}

func round(x []float32) []float32 {
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = RoundBF16(v)
	}
	return r
}

// roundingCPU is the CPU backend whose Gemm rounds both inputs to bf16
// first: the definition of BF16 written the simplest way.
type roundingCPU struct{ CPU }

func (r *roundingCPU) Gemm(transA, transB bool, M, N, K int, alpha float32, a Buffer, lda int, b Buffer, ldb int, beta float32, c Buffer, ldc int) {
	r.CPU.Gemm(transA, transB, M, N, K, alpha, Host(round(h(a))), lda, Host(round(h(b))), ldb, beta, c, ldc)
}

// A Transformer at BF16 is the F32 Transformer on a backend whose every
// product rounds its inputs: log-probabilities, entropies, values, every
// gradient and the decoder's logits are bit-identical. So the bf16 copy
// of the weights, the rounding of activations and gradients, and GemmBF16
// together implement exactly "every product reads bf16 inputs".
func TestTransformerBF16IsRoundedProducts(t *testing.T) {
	c := model.Tiny()
	c.ValueHead = true
	m, err := model.New(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	v, _ := m.Layout.Lookup("value_head.weight") // a fresh value head is zero
	copy(m.Params.Data[v.Offset:v.Offset+v.Size], randn(rng, v.Size))
	lens := []int{11, 1, 20}
	toks := batch(rng, c.VocabSize, lens...)
	g := model.Grad{LogProb: randn(rng, len(toks)), Entropy: randn(rng, len(toks)), Value: randn(rng, len(toks))}
	want := model.Want{LM: true, Value: true}

	run := func(b Backend, p Precision) (*model.Output, []float32, []float32) {
		tr, err := NewTransformer(b, c, m.Params.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.SetPrecision(p); err != nil {
			t.Fatal(err)
		}
		out, err := tr.Forward(toks, lens, want)
		if err != nil {
			t.Fatal(err)
		}
		out = &model.Output{LogProb: slices.Clone(out.LogProb), Entropy: slices.Clone(out.Entropy), Value: slices.Clone(out.Value)}
		tr.ZeroGrad()
		if err := tr.Backward(g); err != nil {
			t.Fatal(err)
		}
		dec, err := tr.NewDecoder(2, 64)
		if err != nil {
			t.Fatal(err)
		}
		logits, err := dec.Append([]int{0, 1}, [][]int{toks[:9], toks[20:25]})
		if err != nil {
			t.Fatal(err)
		}
		return out, slices.Clone(tr.Grads.(Host)), slices.Clone(h(logits)[:2*c.VocabSize])
	}
	ref, refGrads, refLogits := run(&roundingCPU{}, F32)
	got, grads, logits := run(&CPU{}, BF16)
	if !slices.Equal(got.LogProb, ref.LogProb) || !slices.Equal(got.Entropy, ref.Entropy) || !slices.Equal(got.Value, ref.Value) {
		t.Fatal("forward: bf16 outputs differ from rounded-product f32 outputs")
	}
	if !slices.Equal(grads, refGrads) {
		t.Fatalf("backward: gradients differ: relative error %g", RelErr(grads, refGrads))
	}
	if !slices.Equal(logits, refLogits) {
		t.Fatalf("decoder: logits differ: relative error %g", RelErr(logits, refLogits))
	}
	// And bf16 does change the numbers.
	f32, _, _ := run(&CPU{}, F32)
	if slices.Equal(f32.LogProb, got.LogProb) {
		t.Fatal("bf16 log-probs equal the f32 ones: nothing was rounded")
	}
}

// BF16 against F32 on the same weights, small preset: log-probabilities,
// entropies and gradients are within bf16's precision (8 significant
// bits: 2⁻⁹ relative per rounding, a few roundings deep).
func TestTransformerBF16NearF32(t *testing.T) {
	c := model.Small()
	c.VocabSize, c.NumLayers = 256, 2
	m, err := model.New(c, 6)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	lens := []int{40, 3, 25}
	toks := batch(rng, c.VocabSize, lens...)
	g := model.Grad{LogProb: randn(rng, len(toks)), Entropy: randn(rng, len(toks))}
	run := func(p Precision) (*model.Output, []float32) {
		tr, err := NewTransformer(&CPU{}, c, m.Params.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.SetPrecision(p); err != nil {
			t.Fatal(err)
		}
		out, err := tr.Forward(toks, lens, model.Want{LM: true})
		if err != nil {
			t.Fatal(err)
		}
		out = &model.Output{LogProb: slices.Clone(out.LogProb), Entropy: slices.Clone(out.Entropy)}
		tr.ZeroGrad()
		if err := tr.Backward(g); err != nil {
			t.Fatal(err)
		}
		return out, slices.Clone(tr.Grads.(Host))
	}
	f, fg := run(F32)
	b, bg := run(BF16)
	const tol = 2e-2
	for _, x := range []struct {
		name      string
		got, want []float32
	}{{"log-probs", b.LogProb, f.LogProb}, {"entropies", b.Entropy, f.Entropy}} {
		e := RelErr(x.got, x.want)
		t.Logf("%s: relative error %.3g", x.name, e)
		if e > tol || e == 0 {
			t.Errorf("%s: relative error %.3g, want in (0, %g]", x.name, e, tol)
		}
	}
	worst, name := 0.0, ""
	for _, v := range m.Layout.Views {
		if e := RelErr(bg[v.Offset:v.Offset+v.Size], fg[v.Offset:v.Offset+v.Size]); e > worst {
			worst, name = e, v.Name
		}
	}
	t.Logf("gradients: worst relative error %.3g (%s)", worst, name)
	if worst > 5e-2 {
		t.Errorf("gradient of %s: relative error %.3g > 5e-2", name, worst)
	}
}

// Params stay the float32 master copy: after an AdamW step and Refresh, a
// bf16 Transformer computes what a new one made from its parameters does;
// back at F32 it is the f32 Transformer again, bit for bit.
func TestTransformerBF16Refresh(t *testing.T) {
	c := model.Tiny()
	m, _ := model.New(c, 8)
	rng := rand.New(rand.NewPCG(5, 5))
	lens := []int{7, 9}
	toks := batch(rng, c.VocabSize, lens...)
	b := &CPU{}
	tr, _ := NewTransformer(b, c, m.Params.Data)
	defer tr.Free()
	if err := tr.SetPrecision(BF16); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Forward(toks, lens, model.Want{LM: true}); err != nil {
		t.Fatal(err)
	}
	tr.ZeroGrad()
	if err := tr.Backward(model.Grad{LogProb: randn(rng, len(toks))}); err != nil {
		t.Fatal(err)
	}
	opt, err := NewAdamW(b, optim.DefaultConfig(), tr.Layout.Size, tr.Layout.OptimGroups())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := opt.Step(tr.Params, tr.Grads); err != nil {
		t.Fatal(err)
	}
	tr.Refresh()
	for i, v := range tr.Params.(Host) {
		if tr.Half.(HostBF16)[i] != RoundBF16(v) {
			t.Fatalf("Half[%d] = %v, want RoundBF16(%v)", i, tr.Half.(HostBF16)[i], v)
		}
	}
	forward := func(tr *Transformer) []float32 {
		out, err := tr.Forward(toks, lens, model.Want{LM: true})
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(out.LogProb)
	}
	fresh, _ := NewTransformer(b, c, tr.Params.(Host))
	fresh.SetPrecision(BF16)
	if !slices.Equal(forward(tr), forward(fresh)) {
		t.Fatal("after Step and Refresh: log-probs differ from a new bf16 Transformer's")
	}
	fresh.SetPrecision(F32)
	if err := tr.SetPrecision(F32); err != nil || tr.Half != nil {
		t.Fatalf("back to f32: %v, Half %v", err, tr.Half != nil)
	}
	if !slices.Equal(forward(tr), forward(fresh)) {
		t.Fatal("back at f32: log-probs differ")
	}
	if err := tr.SetPrecision("fp8"); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("SetPrecision(fp8) = %v", err)
	}
}
