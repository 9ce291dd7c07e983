package model

import (
	"math/rand/v2"
	"testing"

	"github.com/ragen-go/ragen/engine/optim"
)

// TestLearnsToCopy trains the small preset on a copy task, [BOS] x₁…xₙ [SEP]
// x₁…xₙ with random digits, loss on the second half only. Predicting it
// needs an induction head (find the same position in the first half, copy
// the next token), the circuit a policy uses to copy positions from an
// observation into its reasoning; a model that cannot form one stays at
// the 10-way guess, ln 10 ≈ 2.30. Forward, backward, attention and AdamW
// together must bring the loss near 0 within a few dozen steps.
func TestLearnsToCopy(t *testing.T) {
	c := Small()
	c.VocabSize = 16
	m, err := New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	oc := optim.DefaultConfig()
	oc.LR, oc.Schedule, oc.WarmupSteps, oc.TotalSteps = 3e-3, "cosine", 10, 80
	opt, err := m.NewAdamW(oc)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n, B = 12, 16
	var loss float32
	for step := 0; step < oc.TotalSteps; step++ {
		var tokens, lens []int
		var mask []bool
		for range B {
			seq := []int{0}
			for range n {
				seq = append(seq, 2+rng.IntN(10))
			}
			seq = append(seq, 1)
			seq = append(seq, seq[1:n+1]...)
			tokens, lens = append(tokens, seq...), append(lens, len(seq))
			for i := range seq {
				mask = append(mask, i > n+1)
			}
		}
		out, err := m.Forward(tokens, lens, Want{LM: true})
		if err != nil {
			t.Fatal(err)
		}
		dlp := make([]float32, len(tokens))
		if loss, err = CrossEntropyGrad(dlp, out.LogProb, lens, mask); err != nil {
			t.Fatal(err)
		}
		m.ZeroGrad()
		if err := m.Backward(Grad{LogProb: dlp}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.ClipGradNorm(1.0); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Step(opt); err != nil {
			t.Fatal(err)
		}
	}
	if loss > 0.05 {
		t.Errorf("copy loss after %d steps: %.3f, want < 0.05 (ln 10 = 2.30 is guessing)", oc.TotalSteps, loss)
	}
}
