package optim

import (
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"math"
	"path/filepath"
	"testing"

	"github.com/ragen-go/ragen/engine/checkpoint"
)

// TestResumeFromCheckpoint: three steps, save to optimizer.safetensors,
// load into a fresh AdamW, two more steps — bit-identical to five steps in
// one go.
func TestResumeFromCheckpoint(t *testing.T) {
	const n = 1000
	cfg := DefaultConfig()
	cfg.Schedule, cfg.WarmupSteps = "warmup", 4
	groups := []Group{{Offset: 0, Size: 900, Decay: true}, {Offset: 900, Size: 100}}
	grad := func(s int) []float32 {
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(math.Sin(float64(i+7*s))) * 0.1
		}
		return g
	}
	straight, _ := New(cpu.New(), cfg, n, groups)
	p1 := make([]float32, n)
	for s := 0; s < 5; s++ {
		straight.Step(cpu.Host(p1), cpu.Host(grad(s)))
	}

	first, _ := New(cpu.New(), cfg, n, groups)
	p2 := make([]float32, n)
	for s := 0; s < 3; s++ {
		first.Step(cpu.Host(p2), cpu.Host(grad(s)))
	}
	path := filepath.Join(t.TempDir(), "optimizer.safetensors")
	ts, meta, err := first.StateTensors()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteSafetensors(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	f, err := checkpoint.OpenSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	resumed, _ := New(cpu.New(), cfg, n, groups)
	if err := resumed.LoadState(f); err != nil {
		t.Fatal(err)
	}
	if resumed.T != 3 {
		t.Fatalf("resumed at step %d, want 3", resumed.T)
	}
	for s := 3; s < 5; s++ {
		resumed.Step(cpu.Host(p2), cpu.Host(grad(s)))
	}
	for i := range p1 {
		if math.Float32bits(p1[i]) != math.Float32bits(p2[i]) {
			t.Fatalf("param %d: %v resumed, %v straight", i, p2[i], p1[i])
		}
	}

	// A state for another model size is refused without touching M.
	small, _ := New(cpu.New(), cfg, 10, nil)
	hostOf(small.M)[0] = 42
	err = small.LoadState(f)
	if err == nil || err.Error() != `checkpoint `+path+`: tensor "adamw.exp_avg" has shape [1000], the model expects [10]` || hostOf(small.M)[0] != 42 {
		t.Errorf("size mismatch: %v (M[0] = %v)", err, hostOf(small.M)[0])
	}
	noStep := filepath.Join(t.TempDir(), "x.safetensors")
	checkpoint.WriteSafetensors(noStep, ts, nil)
	g, _ := checkpoint.OpenSafetensors(noStep)
	defer g.Close()
	if err := resumed.LoadState(g); err == nil || err.Error() != `checkpoint `+noStep+`: no "adamw.step" in the metadata (not an AdamW state)` {
		t.Errorf("no step: %v", err)
	}
}
