//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/sample"
)

// Parity tolerances of the issue: relative error (backend.RelErr) against
// the CPU backend.
const (
	tolF32  = 1e-3
	tolBF16 = 2e-2
)

// open returns the CUDA backend on device 0, or skips the test on a
// machine without one.
func open(t testing.TB) *Backend {
	t.Helper()
	if err := Check(); err != nil {
		t.Skip("no CUDA device: " + err.Error() + " (parity runs on a GPU: scripts/gpu-check)")
	}
	b, err := New(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// The kernels compile with NVRTC without a device: this runs wherever the
// NVRTC library is present (scripts/cuda-check provides it).
func TestKernelsCompile(t *testing.T) {
	ptx, err := compileFor("compute_80")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range kernelNames {
		if !containsEntry(ptx, name) {
			t.Errorf("PTX has no entry %s", name)
		}
	}
	// A device newer than NVRTC knows falls back to an older PTX target.
	if _, arch, err := compile(99, 0); err != nil || arch == "compute_990" {
		t.Errorf("compile for compute capability 99.0: arch %q, %v", arch, err)
	} else {
		t.Logf("compute capability 99.0 compiles for %s", arch)
	}
}

func containsEntry(ptx, name string) bool {
	return strings.Contains(ptx, ".entry "+name+"(")
}

func randn(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

// opCase runs an op on both backends over buffers filled with the same
// inputs, then compares every buffer except those in scratch.
type opCase struct {
	name    string
	inputs  [][]float32
	run     func(b backend.Backend, x []backend.Buffer)
	scratch []int // buffers whose layout differs between backends
}

func TestOpsParity(t *testing.T) {
	g := open(t)
	c := &backend.CPU{}
	rng := rand.New(rand.NewPCG(1, 1))
	r := func(n int) []float32 { return randn(rng, n, 1) }
	zeros := func(n int) []float32 { return make([]float32, n) }

	const M, N, K = 37, 29, 53
	tokens := []int{3, 7, 3, 0, 29, 7, 7, 12, 3, 1}
	lens := []int{5, 1, 13}
	T := 19
	const nH, nKV, hd = 4, 2, 8
	C, KV := nH*hd, nKV*hd
	att := backend.AttentionSize(lens, nH)
	pos := []int{0, 1, 2, 3, 4, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	cos, sin := make([]float32, 32*hd/2), make([]float32, 32*hd/2)
	cpu.RopeTables(cos, sin, 32, hd, 10000)
	const V = 1000
	targets := []int{5, -1, 999, 0, 17, -1}
	adam := backend.NewAdamWScalars(optim.DefaultConfig(), 3, 1e-3, true)

	cases := []opCase{
		{"gemm NN", [][]float32{r(M * K), r(K * N), r(M * N)}, func(b backend.Backend, x []backend.Buffer) {
			b.Gemm(false, false, M, N, K, 1.5, x[0], K, x[1], N, 0.5, x[2], N)
		}, nil},
		{"gemm NT", [][]float32{r(M * K), r(N * K), r(M * N)}, func(b backend.Backend, x []backend.Buffer) {
			b.Gemm(false, true, M, N, K, 1, x[0], K, x[1], K, 0, x[2], N)
		}, nil},
		{"gemm TN", [][]float32{r(K * M), r(K * N), r(M * N)}, func(b backend.Backend, x []backend.Buffer) {
			b.Gemm(true, false, M, N, K, 1, x[0], M, x[1], N, 1, x[2], N)
		}, nil},
		{"add_bias column_sum add scale", [][]float32{r(M * N), r(N), r(N), r(M * N)}, func(b backend.Backend, x []backend.Buffer) {
			b.AddBias(x[0], x[1], M, N)
			b.ColumnSum(x[2], x[0], M, N)
			b.Add(x[3], x[3], x[0], M*N)
			b.Scale(x[3], M*N, -0.25)
		}, nil},
		{"embedding", [][]float32{zeros(10 * 48), r(30 * 48), r(10 * 48), r(30 * 48)}, func(b backend.Backend, x []backend.Buffer) {
			b.EmbeddingForward(x[0], tokens, x[1], 10, 48)
			b.EmbeddingBackward(x[3], x[2], tokens, 10, 48)
		}, nil},
		{"rmsnorm", [][]float32{zeros(7 * 300), zeros(7), r(7 * 300), r(300), r(7 * 300), r(7 * 300), r(300)}, func(b backend.Backend, x []backend.Buffer) {
			b.RMSNormForward(x[0], x[1], x[2], x[3], 7, 300, 1e-6)
			b.RMSNormBackward(x[5], x[6], x[4], x[2], x[3], x[1], 7, 300)
		}, nil},
		{"rope", [][]float32{r(T * C), r(T * KV), r(32 * hd / 2), r(32 * hd / 2)}, func(b backend.Backend, x []backend.Buffer) {
			b.Upload(x[2], cos)
			b.Upload(x[3], sin)
			b.RopeForward(x[0], x[2], x[3], pos, T, nH, hd)
			b.RopeBackward(x[1], x[2], x[3], pos, T, nKV, hd)
		}, nil},
		{"attention", [][]float32{zeros(T * C), zeros(att), r(T * C), r(T * KV), r(T * KV),
			r(T * C), r(T * KV), r(T * KV), zeros(att), r(T * C)}, func(b backend.Backend, x []backend.Buffer) {
			b.AttentionForward(x[0], x[1], x[2], x[3], x[4], lens, nH, nKV, hd)
			b.AttentionBackward(x[5], x[6], x[7], x[8], x[9], x[1], x[2], x[3], x[4], lens, nH, nKV, hd)
		}, []int{8}},
		{"kv cache", [][]float32{r(3 * 16 * KV), r(3 * 16 * KV), r(3 * KV), r(3 * KV), r(3 * C), zeros(3 * C), zeros(3 * nH * 16)}, func(b backend.Backend, x []backend.Buffer) {
			sl, l := []int{2, 0, 1}, []int{4, 16, 1}
			b.AppendKV(x[0], x[1], x[2], x[3], sl, l, KV, 16)
			b.AttendCached(x[5], x[6], x[4], x[0], x[1], sl, l, nH, nKV, hd, 16)
		}, []int{6}},
		{"swiglu", [][]float32{zeros(999), r(999), r(999), r(999), r(999), r(999)}, func(b backend.Backend, x []backend.Buffer) {
			b.SwiGLUForward(x[0], x[1], x[2], 999)
			b.SwiGLUBackward(x[4], x[5], x[3], x[1], x[2], 999)
		}, nil},
		{"logsoftmax", [][]float32{zeros(6), zeros(6), zeros(6), randn(rng, 6*V, 3), r(6), r(6), zeros(6 * V)}, func(b backend.Backend, x []backend.Buffer) {
			b.LogSoftmaxForward(x[0], x[1], x[2], x[3], targets, 6, V)
			b.LogSoftmaxBackward(x[6], x[3], x[0], x[2], targets, x[4], x[5], 6, V)
		}, nil},
		{"adamw", [][]float32{r(5000), randn(rng, 5000, 0.1), abs(randn(rng, 5000, 0.01)), r(5000)}, func(b backend.Backend, x []backend.Buffer) {
			b.AdamW(x[0], x[1], x[2], x[3], 5000, adam)
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cb, gb := make([]backend.Buffer, len(tc.inputs)), make([]backend.Buffer, len(tc.inputs))
			for i, in := range tc.inputs {
				cb[i] = backend.Host(append([]float32(nil), in...))
			}
			for i, in := range tc.inputs {
				var err error
				if gb[i], err = g.Alloc(len(in)); err != nil {
					t.Fatal(err)
				}
				defer g.Free(gb[i])
				if err := g.Upload(gb[i], in); err != nil {
					t.Fatal(err)
				}
			}
			tc.run(c, cb)
			tc.run(g, gb)
			for i := range cb {
				if contains(tc.scratch, i) {
					continue
				}
				got := make([]float32, cb[i].Len())
				if err := g.Download(got, gb[i]); err != nil {
					t.Fatal(err)
				}
				if e := backend.RelErr(got, cb[i].(backend.Host)); e > tolF32 {
					t.Errorf("buffer %d: relative error %.3g > %g", i, e, tolF32)
				}
			}
		})
	}
}

// abs makes a second moment (≥ 0).
func abs(x []float32) []float32 {
	for i, v := range x {
		x[i] = float32(math.Abs(float64(v)))
	}
	return x
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestGradNormParity(t *testing.T) {
	g := open(t)
	rng := rand.New(rand.NewPCG(2, 2))
	x := randn(rng, 100_003, 1)
	gb, _ := g.Alloc(len(x))
	defer g.Free(gb)
	g.Upload(gb, x)
	got, err := g.GradNorm(gb, len(x))
	if err != nil {
		t.Fatal(err)
	}
	want := optim.GradNorm(x)
	if math.Abs(got-want) > 1e-9*want {
		t.Fatalf("grad norm %v, want %v", got, want)
	}
	again, _ := g.GradNorm(gb, len(x))
	if again != got {
		t.Fatalf("grad norm not deterministic: %v then %v", got, again)
	}
}

// Sampling draws the same tokens as sample.Sampler from the same streams.
func TestSampleParity(t *testing.T) {
	g := open(t)
	const rows, V = 64, 3000
	rng := rand.New(rand.NewPCG(3, 3))
	logits := randn(rng, rows*V, 2)
	gb, _ := g.Alloc(len(logits))
	defer g.Free(gb)
	g.Upload(gb, logits)
	for _, o := range []sample.Options{
		{}, {Temperature: 1}, {Temperature: 0.7, TopK: 10}, {Temperature: 1, TopP: 0.9},
		{Temperature: 1.3, TopK: 50, TopP: 0.5}, {Temperature: 1, TopK: 1},
	} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			streams := func() []*sample.RNG {
				var s []*sample.RNG
				for r := range rows {
					s = append(s, sample.NewRNG(uint64(100+r)))
				}
				return s
			}
			want, err := (&backend.CPU{}).Sample(backend.Host(logits), rows, V, o, streams())
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.Sample(gb, rows, V, o, streams())
			if err != nil {
				t.Fatal(err)
			}
			for r := range rows {
				if got[r] != want[r] {
					t.Errorf("row %d: token %d, want %d", r, got[r], want[r])
				}
			}
		})
	}
}

// bf16 conversion (f32_to_bf16) is backend.RoundBF16 bit for bit — on
// random values, ties, NaNs, infinities, overflow and subnormals — and
// widening it back (bf16_to_f32) is exact.
func TestBF16Parity(t *testing.T) {
	g := open(t)
	rng := rand.New(rand.NewPCG(4, 4))
	x := randn(rng, 4097, 10)
	for i, u := range []uint32{0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xff812345, 0x3f808000, 0x3f818000,
		0x7f7f8000, 0x7f7fffff, 0x00008000, 0x00018000, 0x007fffff, 0x80000000, 0} {
		x[i] = math.Float32frombits(u)
	}
	src, _ := g.Alloc(len(x))
	dst, _ := g.Alloc(len(x))
	h, err := g.AllocBF16(len(x))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free(h)
	g.Upload(src, x)
	g.ToBF16(h, src, len(x))
	g.FromBF16(dst, h, len(x))
	got := make([]float32, len(x))
	if err := g.Download(got, dst); err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		if want := backend.RoundBF16(v); math.Float32bits(got[i]) != math.Float32bits(want) {
			t.Fatalf("x[%d] = %#08x: got %#08x, want %#08x", i, math.Float32bits(v), math.Float32bits(got[i]), math.Float32bits(want))
		}
	}
}

// GemmBF16 (cublasGemmEx, bf16 inputs, float32 accumulation) against the
// CPU backend's, in the three layouts of a linear layer, on inputs
// rounded by each backend's ToBF16 and on bf16 slices at an offset.
func TestGemmBF16Parity(t *testing.T) {
	g := open(t)
	c := &backend.CPU{}
	rng := rand.New(rand.NewPCG(8, 8))
	const M, N, K, off = 37, 29, 53, 3
	for _, tr := range []struct{ a, b bool }{{false, true}, {false, false}, {true, false}} {
		lda, ldb := K, N
		if tr.a {
			lda = M
		}
		if tr.b {
			ldb = K
		}
		x, y, z := randn(rng, off+M*K, 1), randn(rng, off+K*N, 1), randn(rng, M*N, 1)
		run := func(b backend.Backend) []float32 {
			var bufs [5]backend.Buffer
			for i, n := range []int{len(x), len(y), len(z)} {
				bufs[i], _ = b.Alloc(n)
				defer b.Free(bufs[i])
			}
			bufs[3], _ = b.AllocBF16(len(x))
			bufs[4], _ = b.AllocBF16(len(y))
			defer b.Free(bufs[3])
			defer b.Free(bufs[4])
			b.Upload(bufs[0], x)
			b.Upload(bufs[1], y)
			b.Upload(bufs[2], z)
			b.ToBF16(bufs[3], bufs[0], len(x))
			b.ToBF16(bufs[4], bufs[1], len(y))
			b.GemmBF16(tr.a, tr.b, M, N, K, 1.5, b.Slice(bufs[3], off, M*K), lda, b.Slice(bufs[4], off, K*N), ldb, 0.5, bufs[2], N)
			out := make([]float32, len(z))
			if err := b.Download(out, bufs[2]); err != nil {
				t.Fatal(err)
			}
			return out
		}
		e := backend.RelErr(run(g), run(c))
		t.Logf("trans %v: relative error %.3g", tr, e)
		if e > tolBF16 {
			t.Errorf("trans %v: relative error %.3g > %g", tr, e, tolBF16)
		}
	}
}

// A whole training step — forward, backward, AdamW — of the Transformer on
// CUDA against model.Model on the CPU, for the tiny and small presets.
func TestTrainStepParity(t *testing.T) {
	g := open(t)
	small := model.Small()
	small.VocabSize = 512
	for _, c := range []model.Config{model.Tiny(), small} {
		t.Run(fmt.Sprintf("d%d", c.HiddenSize), func(t *testing.T) {
			trainStepParity(t, g, c)
		})
	}
}

func trainStepParity(t *testing.T, g *Backend, c model.Config) {
	m, err := model.New(c, 11)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	lens := []int{40, 7, 64, 1}
	var toks []int
	for _, L := range lens {
		for range L {
			toks = append(toks, rng.IntN(c.VocabSize))
		}
	}
	tr, err := backend.NewTransformer(g, c, m.Params.Data)
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
	if e := backend.RelErr(got.LogProb, out.LogProb); e > tolF32 {
		t.Errorf("log-probs: relative error %.3g", e)
	}
	if e := backend.RelErr(got.Entropy, out.Entropy); e > tolF32 {
		t.Errorf("entropies: relative error %.3g", e)
	}
	dlp, dent := randn(rng, len(toks), 0.1), randn(rng, len(toks), 0.01)
	m.ZeroGrad()
	if err := m.Backward(model.Grad{LogProb: dlp, Entropy: dent}); err != nil {
		t.Fatal(err)
	}
	tr.ZeroGrad()
	if err := tr.Backward(model.Grad{LogProb: dlp, Entropy: dent}); err != nil {
		t.Fatal(err)
	}
	grads := make([]float32, len(m.Grads.Data))
	if err := g.Download(grads, tr.Grads); err != nil {
		t.Fatal(err)
	}
	for _, v := range m.Layout.Views {
		if e := backend.RelErr(grads[v.Offset:v.Offset+v.Size], m.Grads.Data[v.Offset:v.Offset+v.Size]); e > tolF32 {
			t.Errorf("gradient of %s: relative error %.3g", v.Name, e)
		}
	}
	groups := make([]optim.Group, len(m.Layout.Views))
	for i, v := range m.Layout.Views {
		groups[i] = optim.Group{Offset: v.Offset, Size: v.Size, Decay: v.Decay}
	}
	cfg := optim.DefaultConfig()
	ref, _ := optim.New(cfg, len(grads), groups)
	opt, err := backend.NewAdamW(g, cfg, len(grads), groups)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	ref.Step(m.Params.Data, m.Grads.Data)
	if _, err := opt.Step(tr.Params, tr.Grads); err != nil {
		t.Fatal(err)
	}
	if err := g.Download(grads, tr.Params); err != nil {
		t.Fatal(err)
	}
	if e := backend.RelErr(grads, m.Params.Data); e > tolF32 {
		t.Errorf("parameters after AdamW: relative error %.3g", e)
	}
}

// The critic — a value head, no LM head — on CUDA against model.Model on
// the CPU: values and every gradient.
func TestCriticStepParity(t *testing.T) {
	g := open(t)
	c := model.Tiny()
	c.LMHead, c.ValueHead = false, true
	m, err := model.New(c, 12)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 6))
	for _, name := range []string{"value_head.weight", "value_head.bias"} { // a fresh head is zero
		v, _ := m.Layout.Lookup(name)
		copy(m.Params.Data[v.Offset:v.Offset+v.Size], randn(rng, v.Size, 0.1))
	}
	lens := []int{30, 5, 1}
	var toks []int
	for _, L := range lens {
		for range L {
			toks = append(toks, rng.IntN(c.VocabSize))
		}
	}
	tr, err := backend.NewTransformer(g, c, m.Params.Data)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	got, err := tr.Forward(toks, lens, model.Want{Value: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Forward(toks, lens, model.Want{Value: true})
	if err != nil {
		t.Fatal(err)
	}
	if e := backend.RelErr(got.Value, out.Value); e > tolF32 {
		t.Errorf("values: relative error %.3g", e)
	}
	dv := randn(rng, len(toks), 0.1)
	m.ZeroGrad()
	if err := m.Backward(model.Grad{Value: dv}); err != nil {
		t.Fatal(err)
	}
	tr.ZeroGrad()
	if err := tr.Backward(model.Grad{Value: dv}); err != nil {
		t.Fatal(err)
	}
	grads := make([]float32, len(m.Grads.Data))
	if err := g.Download(grads, tr.Grads); err != nil {
		t.Fatal(err)
	}
	for _, v := range m.Layout.Views {
		if e := backend.RelErr(grads[v.Offset:v.Offset+v.Size], m.Grads.Data[v.Offset:v.Offset+v.Size]); e > tolF32 {
			t.Errorf("gradient of %s: relative error %.3g", v.Name, e)
		}
	}
}

// Multi-turn decoding on CUDA against the CPU backend's Decoder: the
// logits of a prefill (blocks of rows, slots, a cache that grows with its
// prefixes copied on the device) and of a follow-up chunk, then greedy
// generation (a near-tie of a random model's logits could flip a token;
// the logits' error is checked first).
func TestDecoderParity(t *testing.T) {
	g := open(t)
	c := model.Tiny()
	c.MaxPositions = 600
	m, err := model.New(c, 13)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := backend.NewTransformer(&backend.CPU{}, c, m.Params.Data)
	if err != nil {
		t.Fatal(err)
	}
	gt, err := backend.NewTransformer(g, c, m.Params.Data)
	if err != nil {
		t.Fatal(err)
	}
	defer gt.Free()
	cd, _ := ct.NewDecoder(3, c.MaxPositions)
	gd, err := gt.NewDecoder(3, c.MaxPositions)
	if err != nil {
		t.Fatal(err)
	}
	defer gd.Free()
	rng := rand.New(rand.NewPCG(7, 7))
	chunk := func(n int) []int {
		x := make([]int, n)
		for i := range x {
			x[i] = rng.IntN(c.VocabSize)
		}
		return x
	}
	V := c.VocabSize
	for step, a := range []struct {
		ids    []int
		chunks [][]int
	}{
		{[]int{0, 1, 2}, [][]int{chunk(200), chunk(7), chunk(40)}},
		{[]int{2, 0}, [][]int{chunk(3), chunk(350)}}, // sequence 0 outgrows the first caches
	} {
		want, err := cd.Append(a.ids, a.chunks)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gd.Append(a.ids, a.chunks)
		if err != nil {
			t.Fatal(err)
		}
		host := make([]float32, len(a.ids)*V)
		if err := g.Download(host, got); err != nil {
			t.Fatal(err)
		}
		if e := backend.RelErr(host, want.(backend.Host)[:len(host)]); e > tolF32 {
			t.Errorf("append %d: logits: relative error %.3g", step, e)
		}
	}
	reqs := []model.Request{{ID: 1, Prompt: chunk(5)}, {ID: 2, Prompt: chunk(2)}, {ID: 0, Prompt: chunk(1)}}
	o := model.GenerateOptions{MaxNew: 16} // greedy: no RNG needed
	want, err := cd.Generate(reqs, o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := gd.Generate(reqs, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Errorf("sequence %d: greedy tokens %v, cpu %v", reqs[i].ID, got[i], want[i])
		}
	}
}

// A training step at bf16 — forward, backward, AdamW, Refresh, then
// decoding with the refreshed weights — on CUDA against the same on the
// CPU backend (backend.Transformer at BF16, the reference of the bf16
// semantics), for the tiny and small presets: relative error ≤ 2e-2.
func TestTrainStepParityBF16(t *testing.T) {
	g := open(t)
	small := model.Small()
	small.VocabSize = 512
	for _, c := range []model.Config{model.Tiny(), small} {
		t.Run(fmt.Sprintf("d%d", c.HiddenSize), func(t *testing.T) {
			trainStepParityBF16(t, g, c)
		})
	}
}

func trainStepParityBF16(t *testing.T, g *Backend, c model.Config) {
	m, err := model.New(c, 14)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	lens := []int{40, 7, 64, 1}
	var toks []int
	for _, L := range lens {
		for range L {
			toks = append(toks, rng.IntN(c.VocabSize))
		}
	}
	dlp, dent := randn(rng, len(toks), 0.1), randn(rng, len(toks), 0.01)
	type result struct {
		lp, ent, grads, params, logits []float32
	}
	run := func(b backend.Backend) result {
		var r result
		tr, err := backend.NewTransformer(b, c, m.Params.Data)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Free()
		if err := tr.SetPrecision(backend.BF16); err != nil {
			t.Fatal(err)
		}
		out, err := tr.Forward(toks, lens, model.Want{LM: true})
		if err != nil {
			t.Fatal(err)
		}
		r.lp, r.ent = slices.Clone(out.LogProb), slices.Clone(out.Entropy)
		tr.ZeroGrad()
		if err := tr.Backward(model.Grad{LogProb: dlp, Entropy: dent}); err != nil {
			t.Fatal(err)
		}
		r.grads = make([]float32, tr.Layout.Size)
		if err := b.Download(r.grads, tr.Grads); err != nil {
			t.Fatal(err)
		}
		opt, err := backend.NewAdamW(b, optim.DefaultConfig(), tr.Layout.Size, tr.Layout.OptimGroups())
		if err != nil {
			t.Fatal(err)
		}
		defer opt.Free()
		if _, err := opt.Step(tr.Params, tr.Grads); err != nil {
			t.Fatal(err)
		}
		tr.Refresh()
		r.params = make([]float32, tr.Layout.Size)
		if err := b.Download(r.params, tr.Params); err != nil {
			t.Fatal(err)
		}
		dec, err := tr.NewDecoder(2, c.MaxPositions)
		if err != nil {
			t.Fatal(err)
		}
		defer dec.Free()
		logits, err := dec.Append([]int{0, 1}, [][]int{toks[:40], toks[40:47]})
		if err != nil {
			t.Fatal(err)
		}
		r.logits = make([]float32, 2*c.VocabSize)
		if err := b.Download(r.logits, logits); err != nil {
			t.Fatal(err)
		}
		return r
	}
	got, want := run(g), run(&backend.CPU{})
	check := func(what string, got, want []float32) {
		e := backend.RelErr(got, want)
		if e > tolBF16 {
			t.Errorf("%s: relative error %.3g > %g", what, e, tolBF16)
		}
	}
	check("log-probs", got.lp, want.lp)
	check("entropies", got.ent, want.ent)
	for _, v := range m.Layout.Views {
		check("gradient of "+v.Name, got.grads[v.Offset:v.Offset+v.Size], want.grads[v.Offset:v.Offset+v.Size])
	}
	check("parameters after AdamW", got.params, want.params)
	check("decoder logits after Refresh", got.logits, want.logits)
	t.Logf("bf16: log-probs %.3g, entropies %.3g, parameters %.3g, decoder logits %.3g (relative error)",
		backend.RelErr(got.lp, want.lp), backend.RelErr(got.ent, want.ent), backend.RelErr(got.params, want.params), backend.RelErr(got.logits, want.logits))
}
