package train

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
)

// precision is checked with the backend: bf16 needs a device path.
func TestPrecisionValidate(t *testing.T) {
	for _, tc := range []struct{ backend, precision, want string }{
		{"cpu", "", ""}, {"cpu", "f32", ""}, {"cpu-ref", "bf16", ""},
		{"cpu", "bf16", "precision: bf16 needs a device backend: the cpu backend's host fast path (model.Model) is float32 only; use backend cpu-ref (the reference, on the CPU) or cuda"},
		{"", "bf16", "precision: bf16 needs a device backend"},
		{"cpu-ref", "fp16", `precision: unknown "fp16" (valid: f32, bf16)`},
	} {
		c := tinyConfig(t)
		c.Backend, c.Precision = tc.backend, tc.precision
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("backend %q, precision %q: %v, want %q", tc.backend, tc.precision, err, tc.want)
		}
	}
}

// A bf16 run on the CPU reference: the networks multiply in bf16, the
// metrics differ from f32's (so the setting reaches the products), and a
// run resumed from a checkpoint — parameters uploaded, the bf16 copy
// refreshed — gives the metrics of an uninterrupted one, which also needs
// the copy refreshed after every optimizer step.
func TestBF16Path(t *testing.T) {
	c := tinyConfig(t)
	c.Backend = "cpu-ref"
	c.Steps, c.ValEpisodes = 2, 0
	c.Algo.FilterRatio = 1
	f32 := run(t, c)
	defer f32.Close()

	c.Precision = "bf16"
	whole := run(t, c)
	defer whole.Close()
	for name, n := range map[string]network{"policy": whole.policy, "critic": whole.critic} {
		if d, ok := n.(*deviceNet); !ok || d.tr.Precision != backend.BF16 {
			t.Fatalf("%s: %T, want a deviceNet at bf16", name, n)
		}
	}
	if reflect.DeepEqual(deterministic(f32.History), deterministic(whole.History)) {
		t.Fatal("bf16 metrics equal f32's")
	}

	checkResumeMatches(t, c, whole)
}
