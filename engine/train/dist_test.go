package train

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/ragen-go/ragen/engine/algo"
	"github.com/ragen-go/ragen/engine/dist"
	"github.com/ragen-go/ragen/engine/metrics"
)

// runRanks runs c on n ranks connected in this process (dist.Local), one
// goroutine each, and returns their trainers by rank.
func runRanks(t *testing.T, c Config, n int) []*Trainer {
	t.Helper()
	return resumeRanks(t, c, n, "")
}

// resumeRanks is runRanks from checkpoint ckpt ("": from the start).
func resumeRanks(t *testing.T, c Config, n int, ckpt string) []*Trainer {
	t.Helper()
	out := make([]*Trainer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, comm := range dist.Local(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := c
			c.Comm = comm
			tr, err := New(context.Background(), c, nil)
			if err == nil && ckpt != "" {
				err = tr.Resume(ckpt)
			}
			if err == nil {
				err = tr.Run(context.Background())
			}
			out[r], errs[r] = tr, err
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return out
}

// A data-parallel run computes the same bits on one rank and on three: the
// rollouts are the same trajectories, and the gradient is an exact sum of
// per-unit gradients (micro-batches, or single trajectories). Every rank ends with the same policy. Against
// the default update (the packed minibatch's gradient) it differs only in
// the rounding of sums.
func TestDataParallelSameBitsAnyWorldSize(t *testing.T) {
	c := tinyConfig(t)
	c.Algo.AdvEstimator = algo.EstGAE // the critic's update too
	c.MiniBatches = 2
	c.Algo.FilterRatio = 1 // 16 trajectories, minibatches of 8
	var want []metrics.Step
	for _, micro := range []int{800, 0} { // units of a few trajectories, then single ones
		c.MicroBatchTokens = micro
		one := runRanks(t, c, 1)
		if micro > 0 {
			if n := len(one[0].units(one[0].reused.trajs[:8])); n < 3 || n >= 8 {
				t.Fatalf("micro_batch_tokens %d: a minibatch makes %d units of 8 trajectories; the test wants several of several", micro, n)
			}
		}
		three := runRanks(t, c, 3)
		want = deterministic(one[0].History)
		for r, tr := range three {
			if got := deterministic(tr.History); !reflect.DeepEqual(got, want) {
				t.Fatalf("micro_batch_tokens %d, rank %d of 3: metrics differ from one rank's:\n%v\n%v", micro, r, got, want)
			}
			if !slices.Equal(policyOf(t, tr).Params.Data, policyOf(t, one[0]).Params.Data) {
				t.Fatalf("micro_batch_tokens %d, rank %d of 3: the policy differs from one rank's", micro, r)
			}
		}
	}

	plain := run(t, c)
	p := deterministic(plain.History)
	worst := 0.0
	for i := range p {
		for k, v := range p[i].Values {
			d := math.Abs(want[i].Values[k]-v) / max(1, math.Abs(v))
			worst = max(worst, d)
			if d > 1e-4 {
				t.Errorf("step %d: %s = %v data-parallel, %v default", p[i].Step, k, want[i].Values[k], v)
			}
		}
	}
	t.Logf("largest relative difference from the default update: %.3g", worst)
}

// A data-parallel run writes its run directory once (rank 0) and resumes
// from its checkpoint on every rank to the uninterrupted run's metrics.
func TestDataParallelResume(t *testing.T) {
	c := tinyConfig(t)
	c.Steps, c.ValEpisodes = 3, 0
	c.Algo.FilterRatio = 1
	whole := runRanks(t, c, 2)[0]
	c.RunDir, c.CheckpointEvery, c.Steps = t.TempDir(), 1, 1
	runRanks(t, c, 2)
	b, err := os.ReadFile(filepath.Join(c.RunDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 1 {
		t.Fatalf("metrics.jsonl of a 1-step run on 2 ranks has %d lines, want 1 (rank 0 writes)", n)
	}
	c.Steps = 3
	resumed := resumeRanks(t, c, 2, filepath.Join(c.RunDir, "checkpoints", "step-000001"))
	for r, tr := range resumed {
		if !reflect.DeepEqual(deterministic(whole.History), deterministic(tr.History)) {
			t.Fatalf("rank %d: resumed run differs:\n%v\n%v", r, deterministic(whole.History), deterministic(tr.History))
		}
	}
}
