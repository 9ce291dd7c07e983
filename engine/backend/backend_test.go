package backend

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/sample"
)

func TestCheck(t *testing.T) {
	if err := Check("cpu"); err != nil {
		t.Fatalf("Check(cpu) = %v", err)
	}
	err := Check("tpu")
	if err == nil || err.Error() != `backend "tpu": unknown (valid: cpu, cpu-ref, cuda)` {
		t.Fatalf("Check(tpu) = %v", err)
	}
	if _, err := Open("tpu"); err == nil {
		t.Fatal("Open(tpu) succeeded")
	}
	for _, name := range []string{"cpu", "cpu-ref"} {
		b, err := Open(name)
		if err != nil || b.Name() != name {
			t.Fatalf("Open(%s) = %v, %v", name, b, err)
		}
	}
}

// This package's tests are built without the cuda tag, so nothing
// registers "cuda" and Check says how to rebuild.
func TestCheckCUDAWithoutTag(t *testing.T) {
	want := "backend cuda: this binary was built without CUDA support; rebuild with: go build -tags cuda ./cmd/ragen (needs the CUDA toolkit headers and libraries)"
	if err := Check("cuda"); err == nil || err.Error() != want {
		t.Fatalf("Check(cuda) = %v\nwant %s", err, want)
	}
}

func randn(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// batch returns a packed batch of sequences with the given lengths.
func batch(rng *rand.Rand, V int, lens ...int) []int {
	var toks []int
	for _, L := range lens {
		for range L {
			toks = append(toks, rng.IntN(V))
		}
	}
	return toks
}

// The Transformer on the cpu backend runs model.Forward/Backward's ops in
// the same order on the same kernels: log-probabilities, entropies, every
// gradient and the parameters after two AdamW steps agree (bit-identical
// when written; 1e-5 leaves room for the model's kernels to be fused
// differently).
func TestTransformerMatchesModel(t *testing.T) {
	c := model.Tiny()
	m, err := model.New(c, 7)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lens := []int{9, 1, 17}
	toks := batch(rng, c.VocabSize, lens...)

	b := &CPU{}
	tr, err := NewTransformer(b, c, m.Params.Data)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	got, err := tr.Forward(toks, lens, model.Want{LM: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(toks, lens, model.Want{LM: true})
	if err != nil {
		t.Fatal(err)
	}
	if e := RelErr(got.LogProb, out.LogProb); e > 1e-5 {
		t.Fatalf("log-probs differ: relative error %g", e)
	}
	if e := RelErr(got.Entropy, out.Entropy); e > 1e-5 {
		t.Fatalf("entropies differ: relative error %g", e)
	}

	dlp, dent := randn(rng, len(toks)), randn(rng, len(toks))
	m.ZeroGrad()
	if err := m.Backward(model.Grad{LogProb: dlp, Entropy: dent}); err != nil {
		t.Fatal(err)
	}
	tr.ZeroGrad()
	if err := tr.Backward(model.Grad{LogProb: dlp, Entropy: dent}); err != nil {
		t.Fatal(err)
	}
	if e := RelErr(tr.Grads.(Host), m.Grads.Data); e > 1e-5 {
		t.Fatalf("gradients differ: relative error %g", e)
	}

	groups := make([]optim.Group, len(m.Layout.Views))
	for i, v := range m.Layout.Views {
		groups[i] = optim.Group{Offset: v.Offset, Size: v.Size, Decay: v.Decay}
	}
	cfg := optim.DefaultConfig()
	ref, err := optim.New(cfg, len(m.Params.Data), groups)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := NewAdamW(b, cfg, len(m.Params.Data), groups)
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 2; step++ {
		if _, err := ref.Step(m.Params.Data, m.Grads.Data); err != nil {
			t.Fatal(err)
		}
		if _, err := opt.Step(tr.Params, tr.Grads); err != nil {
			t.Fatal(err)
		}
	}
	if e := RelErr(tr.Params.(Host), m.Params.Data); e > 1e-5 {
		t.Fatalf("parameters after AdamW differ: relative error %g", e)
	}
	gn, _ := b.GradNorm(tr.Grads, tr.Grads.Len())
	if want := optim.GradNorm(m.Grads.Data); math.Abs(gn-want) > 1e-5*want {
		t.Fatalf("grad norm %v, want %v", gn, want)
	}
}

func TestTransformerErrors(t *testing.T) {
	c := model.Tiny()
	b := &CPU{}
	if _, err := NewTransformer(b, c, make([]float32, 3)); err == nil || !strings.Contains(err.Error(), "got 3 parameters") {
		t.Fatalf("short params: %v", err)
	}
	m, _ := model.New(c, 1)
	tr, err := NewTransformer(b, c, m.Params.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Backward(model.Grad{}); err == nil || !strings.Contains(err.Error(), "needs a Forward first") {
		t.Fatalf("backward first: %v", err)
	}
	for _, tc := range []struct {
		toks, lens []int
		want       string
	}{
		{[]int{1, 2}, []int{3}, "lengths sum to 3 but there are 2 tokens"},
		{[]int{1, 200}, []int{2}, "token 1: id 200 out of range [0, 96)"},
		{nil, nil, "empty batch"},
	} {
		if _, err := tr.Forward(tc.toks, tc.lens, model.Want{LM: true}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Forward(%v, %v) = %v, want %q", tc.toks, tc.lens, err, tc.want)
		}
	}
}

// Sample on the cpu backend is sample.Sampler row by row, one draw per row.
func TestCPUSampleMatchesSampler(t *testing.T) {
	const rows, V = 5, 50
	rng := rand.New(rand.NewPCG(3, 4))
	logits := randn(rng, rows*V)
	o := sample.Options{Temperature: 0.8, TopK: 20, TopP: 0.9}
	var rngs, refs []*sample.RNG
	for r := range rows {
		rngs, refs = append(rngs, sample.NewRNG(uint64(r))), append(refs, sample.NewRNG(uint64(r)))
	}
	b := &CPU{}
	got, err := b.Sample(Host(logits), rows, V, o, rngs)
	if err != nil {
		t.Fatal(err)
	}
	var s sample.Sampler
	for r := range rows {
		if want := s.Sample(logits[r*V:r*V+V], o, refs[r]); got[r] != want {
			t.Errorf("row %d: token %d, want %d", r, got[r], want)
		}
	}
	if _, err := b.Sample(Host(logits), rows, V, o, rngs[:2]); err == nil || !strings.Contains(err.Error(), "2 random streams for 5 rows") {
		t.Errorf("short rngs: %v", err)
	}
	if _, err := b.Sample(Host(logits), rows, V, sample.Options{TopP: 2}, rngs); err == nil || !strings.Contains(err.Error(), "top_p") {
		t.Errorf("bad top_p: %v", err)
	}
}

func TestClipGradNorm(t *testing.T) {
	b := &CPU{}
	g := Host{3, 4}
	norm, err := ClipGradNorm(b, g, 1)
	if err != nil || norm != 5 {
		t.Fatalf("norm %v, %v", norm, err)
	}
	if n := math.Hypot(float64(g[0]), float64(g[1])); math.Abs(n-1) > 1e-6 {
		t.Fatalf("clipped norm %v, want 1", n)
	}
}
