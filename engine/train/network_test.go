package train

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/model"
)

func policyOf(t *testing.T, tr *Trainer) *model.Model {
	t.Helper()
	m, err := tr.Policy()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The device path on the CPU reference backend ("cpu-ref") trains exactly
// as the host path: warm start, rollouts (backend.Decoder), old and
// reference log-probs, critic values, the PPO and critic updates and
// validation run the same kernels in the same order on the same numbers,
// so every metric and the final weights are bit-identical. (The rollout
// decoders differ — model.Decoder multiplies by packed weights — yet give
// the same logits here, hence the same tokens.)
func TestBackendPathMatchesHost(t *testing.T) {
	c := tinyConfig(t)
	c.Algo.KLPlacement, c.Algo.KLCoef = algo.KLLoss, 0.01 // a reference policy too
	host := run(t, c)
	defer host.Close()

	c.Backend = "cpu-ref"
	c.WarmStart.CacheDir = t.TempDir() // fine-tune on the device path too
	dev := run(t, c)
	defer dev.Close()
	if _, ok := dev.policy.(*deviceNet); !ok || dev.critic == nil || dev.ref == nil {
		t.Fatalf("cpu-ref: policy %T, critic %v, reference %v: want all three on the backend", dev.policy, dev.critic != nil, dev.ref != nil)
	}
	if !reflect.DeepEqual(deterministic(host.History), deterministic(dev.History)) {
		t.Fatalf("cpu-ref differs from cpu:\n%v\n%v", deterministic(host.History), deterministic(dev.History))
	}
	if !slices.Equal(policyOf(t, host).Params.Data, policyOf(t, dev).Params.Data) {
		t.Fatal("the trained policies differ")
	}
}

// Checkpoints (parameters and optimizer state downloaded) and Resume
// (uploaded) work on the device path: a resumed run gives the metrics of
// an uninterrupted one.
func TestBackendPathResume(t *testing.T) {
	c := tinyConfig(t)
	c.Backend = "cpu-ref"
	c.Steps, c.ValEpisodes = 2, 0
	c.Algo.FilterRatio = 1
	whole := run(t, c)
	defer whole.Close()

	checkResumeMatches(t, c, whole)
}
