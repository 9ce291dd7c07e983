package train

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/model"
)

// precision is f32 or bf16 on every backend.
func TestPrecisionValidate(t *testing.T) {
	for _, tc := range []struct{ backend, precision, want string }{
		{"cpu", "", ""}, {"cpu", "f32", ""}, {"cpu", "bf16", ""}, {"", "bf16", ""},
		{"cpu", "fp16", `precision: unknown "fp16" (valid: f32, bf16)`},
		{"cpu-ref", "", `backend "cpu-ref": unknown (valid: cpu, cuda)`},
	} {
		c := tinyConfig(t)
		c.Backend, c.Precision = tc.backend, tc.precision
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("backend %q, precision %q: %v, want %q", tc.backend, tc.precision, err, tc.want)
		}
	}
}

// A bf16 run on the CPU: the models multiply in bf16, the
// metrics differ from f32's (so the setting reaches the products), and a
// run resumed from a checkpoint — parameters uploaded, the bf16 copy
// refreshed — gives the metrics of an uninterrupted one, which also needs
// the copy refreshed after every optimizer step.
func TestBF16Path(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes = 2, 0
	c.Algo.FilterRatio = 1
	f32 := run(t, c)
	defer f32.Close()

	c.Precision = "bf16"
	whole := run(t, c)
	defer whole.Close()
	for name, m := range map[string]*model.Model{"policy": whole.policy, "critic": whole.critic} {
		if m.Precision() != backend.BF16 {
			t.Fatalf("%s: at %s, want bf16", name, m.Precision())
		}
	}
	if reflect.DeepEqual(deterministic(f32.History), deterministic(whole.History)) {
		t.Fatal("bf16 metrics equal f32's")
	}

	checkResumeMatches(t, c, whole)
}
