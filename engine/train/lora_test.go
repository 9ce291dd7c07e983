package train

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/algo"
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
