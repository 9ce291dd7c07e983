//go:build cuda

package cuda

import (
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/backendtest"
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/model"
)

// open returns the CUDA backend on device 0, or skips the test on a
// machine without one.
func open(t testing.TB) *Backend {
	t.Helper()
	if err := Check(); err != nil {
		t.Skip("no CUDA device: " + err.Error() + " (the conformance suite runs on a GPU: scripts/gpu-check)")
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
		if !strings.Contains(ptx, ".entry "+name+"(") {
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

// TestConformance is the backend conformance suite on the GPU: every op
// against the naive float64 backend, a training step and a multi-turn
// decode with sampling.
func TestConformance(t *testing.T) { backendtest.Run(t, open(t)) }

// TestParityWithCPU: a whole training step (policy, critic, reference) of
// the small preset on CUDA against the CPU backend, f32 ≤ 1e-3 and bf16
// ≤ 2e-2 relative error.
func TestParityWithCPU(t *testing.T) {
	g := open(t)
	c := model.Small()
	c.VocabSize, c.NumLayers = 512, 2
	for _, p := range []backend.Precision{backend.F32, backend.BF16} {
		t.Run(string(p), func(t *testing.T) { backendtest.Step(t, cpu.New(), g, c, p) })
	}
}
