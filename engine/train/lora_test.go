package train

import (
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/hf"
	"github.com/ragen-go/ragen/engine/model"
)

// A LoRA run trains the adapters only: the base the warm start produced is
// left bit for bit as it was and serves as the reference policy, the
// critic has its own adapters and value head on that base, the metrics
// are finite, the checkpoint holds the adapters as a PEFT directory that
// loads back onto the base, and a resumed run gives the metrics of an
// uninterrupted one.
func TestLoRARun(t *testing.T) {
	c := tinyConfig(t)
	c.Algo.AdvEstimator = algo.EstGAE // a critic
	c.Algo.KLPlacement, c.Algo.KLCoef = algo.KLLoss, 0.01
	c.LoRA = &model.LoRA{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}}
	c.Steps, c.ValEpisodes = 2, 0
	c.Algo.FilterRatio = 1
	tr, err := New(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	base := slices.Clone(tr.base.Params.Data)
	adapters := slices.Clone(tr.policy.Params.Data)
	if tr.ref != tr.base || tr.critic.Base() != tr.base || !tr.critic.Config.ValueHead {
		t.Fatalf("reference %p, critic's base %p, base %p: want the base shared", tr.ref, tr.critic.Base(), tr.base)
	}
	if err := tr.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.base.Params.Data, base) {
		t.Fatal("training changed the frozen base")
	}
	if slices.Equal(tr.policy.Params.Data, adapters) {
		t.Fatal("training left the adapters as they were")
	}
	for _, s := range deterministic(tr.History) {
		for k, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("step %d: %s = %v", s.Step, k, v)
			}
		}
	}

	checkResumeMatches(t, c, tr)

	c.RunDir, c.CheckpointEvery = t.TempDir(), 1
	one := run(t, c)
	defer one.Close()
	loaded, err := one.base.LoadAdapter(filepath.Join(c.RunDir, "checkpoints", "step-000002", "policy-adapter"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(loaded.Params.Data, one.policy.Params.Data) {
		t.Fatal("the PEFT adapter of the checkpoint differs from the policy's")
	}
}

func TestLoRAValidates(t *testing.T) {
	c := tinyConfig(t)
	c.LoRA = &model.LoRA{Rank: 0, Alpha: 8, Targets: []string{"q_proj"}}
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "lora.r: must be ≥ 1") {
		t.Fatalf("rank 0: %v", err)
	}
}

// A LoRA run from a bf16 checkpoint loads its base frozen (hf.Options
// Frozen: the matrices and the embedding straight into bf16 storage) and
// computes the metrics, adapters and base of a run from an F32 checkpoint
// of the same values, which loads as float32 and is frozen after, bit
// for bit — with a critic and the base as KL reference.
func TestLoRAPretrainedBF16(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes = 1, 0
	warm := run(t, c)
	policy := policyOf(t, warm)
	for i, v := range policy.Params.Data {
		policy.Params.Data[i] = backend.RoundBF16(v)
	}
	f32, bf16 := filepath.Join(t.TempDir(), "f32"), filepath.Join(t.TempDir(), "bf16")
	for _, dir := range []string{f32, bf16} {
		if err := hf.Save(dir, policy, warm.Tok, nil); err != nil {
			t.Fatal(err)
		}
	}
	tensors, err := policy.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteSafetensorsBF16(filepath.Join(bf16, hf.WeightsFile), tensors, nil); err != nil {
		t.Fatal(err)
	}
	c.Algo.AdvEstimator = algo.EstGAE
	c.Algo.KLPlacement, c.Algo.KLCoef = algo.KLLoss, 0.01
	c.Algo.FilterRatio = 1
	c.LoRA = &model.LoRA{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}}
	c.WarmStart.Steps, c.Steps = 0, 2
	var runs [2]*Trainer
	for i, dir := range []string{f32, bf16} {
		c.Pretrained = dir
		runs[i] = run(t, c)
		defer runs[i].Close()
		if runs[i].base.Params.Slice("model.layers.0.mlp.up_proj.weight") != nil || runs[i].base.Params.Slice("model.embed_tokens.weight") != nil {
			t.Fatalf("%s: the base holds float32 matrices", filepath.Base(dir))
		}
	}
	if a, b := deterministic(runs[0].History), deterministic(runs[1].History); !reflect.DeepEqual(a, b) {
		t.Fatalf("metrics from the F32 checkpoint\n%v\nfrom the BF16 one\n%v", a, b)
	}
	for _, m := range [][2]*model.Model{{runs[0].policy, runs[1].policy}, {runs[0].critic, runs[1].critic}, {runs[0].base, runs[1].base}} {
		a, err := m[0].Tensors()
		if err != nil {
			t.Fatal(err)
		}
		b, err := m[1].Tensors()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatal("the runs' models differ")
		}
	}
}
