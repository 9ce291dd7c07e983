package optim

import (
	"encoding/json"
	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"
)

type reference struct {
	LR, Beta1, Beta2, Eps float64
	WeightDecay           float64 `json:"weight_decay"`
	Init                  []float32
	Grads                 [][]float32
	Steps                 []struct{ Params, M, V []float32 }
	Clip                  struct {
		MaxNorm float64 `json:"max_norm"`
		In      []float32
		Norm    float64
		Out     []float32
	}
}

func loadReference(t *testing.T) reference {
	t.Helper()
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var r reference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > tol*math.Max(1e-3, math.Abs(float64(want[i]))) {
			t.Errorf("%s[%d] = %.9g, want %.9g (|Δ| %.3g)", what, i, got[i], want[i], d)
		}
	}
}

// TestAdamWMatchesPyTorch replays testdata/reference.json, written by
// torch.optim.AdamW (see gen_reference.py).
func TestAdamWMatchesPyTorch(t *testing.T) {
	r := loadReference(t)
	cfg := DefaultConfig()
	cfg.LR, cfg.Beta1, cfg.Beta2 = r.LR, r.Beta1, r.Beta2
	cfg.Eps, cfg.WeightDecay = r.Eps, r.WeightDecay
	opt, err := New(cpu.New(), cfg, 7, []Group{{Offset: 0, Size: 4, Decay: true}, {Offset: 4, Size: 3}})
	if err != nil {
		t.Fatal(err)
	}
	params := slices.Clone(r.Init)
	for s, g := range r.Grads {
		lr, err := opt.Step(cpu.Host(params), cpu.Host(g))
		if err != nil || lr != cfg.LR {
			t.Fatalf("step %d: lr %v err %v", s, lr, err)
		}
		want := r.Steps[s]
		closeTo(t, "params", params, want.Params, 1e-6)
		closeTo(t, "m", hostOf(opt.M), want.M, 1e-6)
		closeTo(t, "v", hostOf(opt.V), want.V, 1e-6)
	}
}

// TestAdamWHandComputed checks the first update by hand: with m = (1-β1)g
// and v = (1-β2)g², the bias corrections cancel and the step is
// lr·g/(|g| + ε) = lr·sign(g), plus decay θ·lr·λ on decaying groups.
func TestAdamWHandComputed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LR, cfg.WeightDecay = 0.1, 0.5
	opt, err := New(cpu.New(), cfg, 4, []Group{{Offset: 0, Size: 2, Decay: true}, {Offset: 2, Size: 1}})
	if err != nil {
		t.Fatal(err)
	}
	params := []float32{2, -1, 3, 7}
	grads := []float32{0.5, -4, -1e-3, 9}
	if _, err := opt.Step(cpu.Host(params), cpu.Host(grads)); err != nil {
		t.Fatal(err)
	}
	want := []float32{
		2*(1-0.1*0.5) - 0.1,      // decays, g > 0
		-1*(1-0.1*0.5) + 0.1,     // decays, g < 0
		3 + 0.1*1e-3/(1e-3+1e-8), // no decay: the ε shows at small g
		7,                        // outside every group: frozen
	}
	closeTo(t, "params", params, want, 1e-6)
	if hostOf(opt.M)[3] != 0 || hostOf(opt.V)[3] != 0 {
		t.Errorf("moments of a frozen parameter changed: m %v v %v", hostOf(opt.M)[3], hostOf(opt.V)[3])
	}
	if opt.T != 1 {
		t.Errorf("T = %d after one step, want 1", opt.T)
	}
}

func TestWeightDecaySkipped(t *testing.T) {
	// Zero gradients: only decay moves parameters.
	cfg := DefaultConfig()
	cfg.LR, cfg.WeightDecay = 0.5, 0.2
	opt, _ := New(cpu.New(), cfg, 4, []Group{{Offset: 0, Size: 2, Decay: true}, {Offset: 2, Size: 2, Decay: false}})
	params := []float32{1, -2, 1, -2}
	opt.Step(cpu.Host(params), cpu.Host(make([]float32, 4)))
	closeTo(t, "params", params, []float32{0.9, -1.8, 1, -2}, 1e-7)
}

func TestNewRejects(t *testing.T) {
	cfg := DefaultConfig()
	for _, c := range []struct {
		n      int
		groups []Group
		want   string
	}{
		{4, []Group{{Offset: 2, Size: 3}}, "adamw: group 0 [2, 5) lies outside the 4 parameters"},
		{4, []Group{{Offset: -1, Size: 1}}, "adamw: group 0 [-1, 0) lies outside the 4 parameters"},
		{8, []Group{{Offset: 0, Size: 4}, {Offset: 3, Size: 2}}, "adamw: group 1 [3, 5) overlaps group 0 [0, 4)"},
	} {
		_, err := New(cpu.New(), cfg, c.n, c.groups)
		if err == nil || err.Error() != c.want {
			t.Errorf("New(%d, %v) = %v, want %q", c.n, c.groups, err, c.want)
		}
	}
	cfg.Beta2 = 1
	if _, err := New(cpu.New(), cfg, 1, nil); err == nil || err.Error() != "adamw config: beta2: must be in [0, 1) (got 1)" {
		t.Errorf("bad config: %v", err)
	}
	opt, _ := New(cpu.New(), DefaultConfig(), 3, nil)
	if _, err := opt.Step(cpu.Host(make([]float32, 3)), cpu.Host(make([]float32, 2))); err == nil || err.Error() != "adamw: got 3 parameters and 2 gradients, want 3 of each" {
		t.Errorf("length mismatch: %v", err)
	}
}

func TestValidate(t *testing.T) {
	mod := func(f func(*Config)) Config { c := DefaultConfig(); f(&c); return c }
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{DefaultConfig(), ""},
		{mod(func(c *Config) { c.LR = 0 }), "lr: must be > 0 (got 0)"},
		{mod(func(c *Config) { c.LR = math.NaN() }), "lr: must be > 0 (got NaN)"},
		{mod(func(c *Config) { c.Beta1 = -0.1 }), "beta1: must be in [0, 1) (got -0.1)"},
		{mod(func(c *Config) { c.Eps = 0 }), "eps: must be > 0 (got 0)"},
		{mod(func(c *Config) { c.WeightDecay = -1 }), "weight_decay: must be >= 0 (got -1)"},
		{mod(func(c *Config) { c.WarmupSteps = -5 }), "warmup_steps: must be >= 0 (got -5)"},
		{mod(func(c *Config) { c.Schedule = "linear" }), `schedule: unknown schedule "linear" (want constant, warmup or cosine)`},
		{mod(func(c *Config) { c.Schedule, c.WarmupSteps, c.TotalSteps = "cosine", 10, 10 }), "total_steps: must be > warmup_steps (10) for the cosine schedule (got 10)"},
		{mod(func(c *Config) { c.Schedule, c.TotalSteps, c.MinLRRatio = "cosine", 10, 2 }), "min_lr_ratio: must be in [0, 1] (got 2)"},
	} {
		err := c.cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestSchedules(t *testing.T) {
	c := DefaultConfig()
	c.LR = 1
	near := func(name string, step int, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: LRAt(%d) = %v, want %v", name, step, got, want)
		}
	}
	for _, s := range []int{0, 1, 100, 1e6} {
		near("constant", s, c.LRAt(s), 1)
	}
	c.Schedule, c.WarmupSteps = "warmup", 4
	for s, want := range []float64{0.25, 0.5, 0.75, 1, 1, 1} {
		near("warmup", s, c.LRAt(s), want)
	}
	c.Schedule, c.WarmupSteps, c.TotalSteps, c.MinLRRatio = "cosine", 10, 110, 0.1
	near("cosine", 0, c.LRAt(0), 0.1)
	near("cosine", 9, c.LRAt(9), 1)
	near("cosine", 10, c.LRAt(10), 1)
	near("cosine", 60, c.LRAt(60), 0.55) // half-way: (1 + 0.1)/2
	near("cosine", 35, c.LRAt(35), 0.1+0.9*0.5*(1+math.Cos(math.Pi/4)))
	near("cosine", 110, c.LRAt(110), 0.1)
	near("cosine", 5000, c.LRAt(5000), 0.1)
	c.WarmupSteps = 0
	near("cosine no warm-up", 0, c.LRAt(0), 1)
	// Step uses the schedule and advances it.
	opt, _ := New(cpu.New(), c, 1, []Group{{Size: 1}})
	p, g := []float32{0}, []float32{1}
	for s := 0; s < 3; s++ {
		lr, _ := opt.Step(cpu.Host(p), cpu.Host(g))
		near("Step", s, lr, c.LRAt(s))
	}
}

func TestClipGradNorm(t *testing.T) {
	r := loadReference(t)
	g := slices.Clone(r.Clip.In)
	norm := clip(g, r.Clip.MaxNorm)
	if math.Abs(norm-r.Clip.Norm) > 1e-6*r.Clip.Norm {
		t.Errorf("norm %v, torch %v", norm, r.Clip.Norm)
	}
	closeTo(t, "clipped", g, r.Clip.Out, 1e-6)

	small := []float32{0.3, -0.4}
	if n := clip(small, 1); math.Abs(n-0.5) > 1e-7 || small[0] != 0.3 || small[1] != -0.4 {
		t.Errorf("below the bound: norm %v, grads %v (want 0.5, unchanged)", n, small)
	}
	measure := []float32{30, 40}
	if n := clip(measure, 0); n != 50 || measure[0] != 30 {
		t.Errorf("maxNorm 0: norm %v grads %v, want 50 and unchanged", n, measure)
	}
	nan := []float32{1, float32(math.NaN())}
	if n := clip(nan, 1); !math.IsNaN(n) || nan[0] != 1 {
		t.Errorf("NaN gradient: norm %v grads %v, want NaN and unchanged", n, nan)
	}
	// Large buffer: against a float64 serial sum (many chunks).
	big := make([]float32, 300001)
	var want float64
	for i := range big {
		big[i] = float32(math.Sin(float64(i))) * 1e-2
		want += float64(big[i]) * float64(big[i])
	}
	if n := gradNorm(big); math.Abs(n-math.Sqrt(want)) > 1e-12*math.Sqrt(want) {
		t.Errorf("GradNorm %v, serial %v", n, math.Sqrt(want))
	}
}

// TestDeterminism: bit-identical parameters, moments and norms with
// GOMAXPROCS 1 and 2, and a save/restore of the state mid-run resumes
// bit-identically.
func TestDeterminism(t *testing.T) {
	const n = 3<<16 + 123 // three parallel chunks of the CPU's AdamW and a tail
	run := func(procs int, restoreAt int) ([]float32, []float32, []float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		cfg := DefaultConfig()
		cfg.Schedule, cfg.WarmupSteps, cfg.TotalSteps = "cosine", 2, 6
		groups := []Group{{Offset: 0, Size: n - 1000, Decay: true}, {Offset: n - 1000, Size: 1000}}
		opt, _ := New(cpu.New(), cfg, n, groups)
		params := make([]float32, n)
		for i := range params {
			params[i] = float32(math.Cos(float64(i)))
		}
		grads := make([]float32, n)
		var norms []float64
		for s := 0; s < 6; s++ {
			if s == restoreAt {
				saved, m, v := opt.T, slices.Clone(hostOf(opt.M)), slices.Clone(hostOf(opt.V))
				opt, _ = New(cpu.New(), cfg, n, groups)
				if err := opt.SetState(saved, m, v); err != nil {
					t.Fatal(err)
				}
			}
			for i := range grads {
				grads[i] = float32(math.Sin(float64(i*(s+1)))) * 3
			}
			norms = append(norms, clip(grads, 100))
			opt.Step(cpu.Host(params), cpu.Host(grads))
		}
		return params, hostOf(opt.V), norms
	}
	p1, v1, n1 := run(1, -1)
	p2, v2, n2 := run(2, -1)
	p3, v3, n3 := run(2, 3)
	for i := range p1 {
		if math.Float32bits(p1[i]) != math.Float32bits(p2[i]) || math.Float32bits(p1[i]) != math.Float32bits(p3[i]) ||
			math.Float32bits(v1[i]) != math.Float32bits(v2[i]) || math.Float32bits(v1[i]) != math.Float32bits(v3[i]) {
			t.Fatalf("param %d differs: %v %v %v", i, p1[i], p2[i], p3[i])
		}
	}
	if !slices.Equal(n1, n2) || !slices.Equal(n1, n3) {
		t.Fatalf("norms differ: %v %v %v", n1, n2, n3)
	}
	if n1[0] <= 100 {
		t.Fatalf("test should exercise clipping: norm %v", n1[0])
	}
}

func TestSetStateRejects(t *testing.T) {
	opt, _ := New(cpu.New(), DefaultConfig(), 3, nil)
	for _, c := range []struct {
		t    int
		m, v []float32
		want string
	}{
		{-1, make([]float32, 3), make([]float32, 3), "adamw state: step must be >= 0 (got -1)"},
		{1, make([]float32, 2), make([]float32, 3), "adamw state: first moment has 2 values, want 3"},
		{1, make([]float32, 3), make([]float32, 4), "adamw state: second moment has 4 values, want 3"},
	} {
		if err := opt.SetState(c.t, c.m, c.v); err == nil || err.Error() != c.want {
			t.Errorf("SetState: %v, want %q", err, c.want)
		}
	}
}

func BenchmarkAdamWStep(b *testing.B) {
	const n = 1 << 20
	opt, _ := New(cpu.New(), DefaultConfig(), n, []Group{{Offset: 0, Size: n - 4096, Decay: true}, {Offset: n - 4096, Size: 4096}})
	params, grads := make([]float32, n), make([]float32, n)
	for i := range grads {
		grads[i] = float32(i%17) * 1e-3
	}
	b.SetBytes(n * 4)
	for b.Loop() {
		opt.Step(cpu.Host(params), cpu.Host(grads))
	}
}

func BenchmarkClipGradNorm(b *testing.B) {
	const n = 1 << 20
	grads := make([]float32, n)
	for i := range grads {
		grads[i] = float32(i%17) * 1e-3
	}
	b.SetBytes(n * 4)
	for b.Loop() {
		clip(grads, 1)
	}
}

// hostOf returns the floats of a CPU buffer.
func hostOf(b backend.Buffer) []float32 {
	f, _ := backend.HostFloats(b)
	return f
}

// clip and gradNorm are ClipGradNorm and GradNorm on host slices.
func clip(g []float32, maxNorm float64) float64 {
	n, _ := ClipGradNorm(cpu.New(), cpu.Host(g), maxNorm)
	return n
}

func gradNorm(g []float32) float64 {
	n, _ := GradNorm(cpu.New(), cpu.Host(g))
	return n
}
