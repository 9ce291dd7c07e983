package main

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
)

// sameFloats reports whether a and b hold the same bits.
func sameFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestExport: ragen export writes a LoRA policy (a PEFT adapter directory
// on a bf16 base) merged, and a full policy of ours, as Hugging Face
// directories that load back with the merged weights bit for bit; wrong
// flag combinations are named.
func TestExport(t *testing.T) {
	const baseDir = "../../engine/hf/testdata/qwen2_tied_bf16"
	base, _, _, err := hf.Load(baseDir, hf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := base.WithLoRA(model.LoRA{Rank: 2, Alpha: 4, Targets: []string{"q_proj", "down_proj"}}, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range policy.Params.Data { // trained adapters: B no longer 0
		policy.Params.Data[i] += float32(math.Sin(float64(i))) * 0.01
	}
	adapter := filepath.Join(t.TempDir(), "adapter")
	if err := policy.SaveAdapter(adapter); err != nil {
		t.Fatal(err)
	}
	merged, err := policy.Merged()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged")
	if err := export([]string{"-base", baseDir, "-adapter", adapter, out}, io.Discard); err != nil {
		t.Fatal(err)
	}
	got, _, tmpl, err := hf.Load(out, hf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameFloats(got.Params.Data, merged.Params.Data) || tmpl == nil {
		t.Fatal("the exported LoRA policy is not the merged one (or lost its chat template)")
	}

	ckpt := t.TempDir() // a run's checkpoints/step-N: policy/ inside
	tokJSON, err := os.ReadFile(filepath.Join(baseDir, hf.TokenizerFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := merged.Save(filepath.Join(ckpt, "policy"), tokJSON, checkpoint.Checkpoint{}); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(t.TempDir(), "full")
	if err := export([]string{"-checkpoint", ckpt, out2}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, _, _, err = hf.Load(out2, hf.Options{}); err != nil {
		t.Fatal(err)
	}
	if !sameFloats(got.Params.Data, merged.Params.Data) {
		t.Fatal("the exported checkpoint is not the saved policy")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-base", baseDir, out}, "give -base and -adapter"},
		{[]string{"-checkpoint", ckpt, "-adapter", adapter, out}, "give one of the two"},
		{[]string{"-checkpoint", ckpt}, "give the output directory"},
	} {
		if err := export(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.args, err, c.want)
		}
	}
}
