package train

import (
	"context"
	"testing"

	"github.com/ragen-go/ragen/engine/metrics"
	_ "github.com/ragen-go/ragen/envs/all"
)

// tinyConfig is a bandit run small enough for a unit test.
func tinyConfig(t *testing.T) Config {
	c := Default()
	c.Model = "tiny"
	c.ContextLength = 512
	c.VocabSize = 512
	c.EnvGroups, c.GroupSize = 4, 4
	c.Steps = 2
	c.ValEpisodes, c.ValEvery = 8, 1
	c.WarmStart = WarmStart{Steps: 20, Episodes: 32, Imperfect: 0.3, LR: 3e-3, BatchSize: 8, CacheDir: t.TempDir()}
	return c
}

func TestTrainBanditSmoke(t *testing.T) {
	c := tinyConfig(t)
	tr, err := New(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := tr.History.Steps[len(tr.History.Steps)-1]
	for _, name := range []string{metrics.RewardMean, metrics.Entropy, metrics.GradNorm, metrics.ValSuccessRate, metrics.ValueLoss} {
		if _, ok := last.Values[name]; !ok {
			t.Errorf("step %d has no %s: %v", last.Step, name, last.Values)
		}
	}
	t.Logf("%+v", last.Values)
}
