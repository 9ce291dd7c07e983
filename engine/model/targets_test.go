package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
)

// TestForwardTargets checks Want.Targets: the wanted tokens' log-probs and
// entropies, and the gradients of a loss over them, are the bits of a pass
// over every token; the others are 0. An adapter model's head (no
// gradient) then runs on the wanted rows alone (compact), a full model's
// on all rows; both at F32 and BF16, with the head in one block and in
// blocks of 3 rows (maxHeadLogits), whose last block takes the few-row
// path of the products.
func TestForwardTargets(t *testing.T) {
	c := Tiny()
	rng := rand.New(rand.NewPCG(9, 9))
	lens := []int{7, 12, 5}
	tokens := randomBatch(rng, c.VocabSize, lens...)
	T := len(tokens)
	targets := make([]bool, T)
	for i := range targets {
		targets[i] = rng.IntN(3) == 0
	}
	targets[1] = true // at least one
	dlp, dent := make([]float32, T), make([]float32, T)
	for i, on := range targets {
		if on {
			dlp[i], dent[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
	}
	defer func(v int) { maxHeadLogits = v }(maxHeadLogits)
	for _, p := range []backend.Precision{backend.F32, backend.BF16} {
		for _, lora := range []bool{true, false} {
			for _, blockRows := range []int{0, 3} {
				maxHeadLogits = 1 << 26
				if blockRows > 0 {
					maxHeadLogits = blockRows * c.VocabSize
				}
				m := testPolicy(t, c, lora, p)
				name := map[bool]string{true: "lora", false: "full"}[lora] + "/" + string(p)
				run := func(want []bool) (lp, ent, grads []float32) {
					out, err := m.Forward(tokens, lens, Want{LM: true, Targets: want})
					if err != nil {
						t.Fatal(err)
					}
					if m.ws.compact != (lora && want != nil) {
						t.Fatalf("%s: compact %v with targets %v", name, m.ws.compact, want != nil)
					}
					lp, ent = slices.Clone(out.LogProb), slices.Clone(out.Entropy)
					m.ZeroGrad()
					if err := m.Backward(Grad{LogProb: dlp, Entropy: dent}); err != nil {
						t.Fatal(err)
					}
					return lp, ent, slices.Clone(m.Grads.Data)
				}
				allLp, allEnt, allGrads := run(nil)
				lp, ent, grads := run(targets)
				for i := range T {
					wantLp, wantEnt := allLp[i], allEnt[i]
					if !targets[i] {
						wantLp, wantEnt = 0, 0
					}
					if math.Float32bits(lp[i]) != math.Float32bits(wantLp) || math.Float32bits(ent[i]) != math.Float32bits(wantEnt) {
						t.Errorf("%s, head blocks of %d: token %d (wanted %v): logprob %v entropy %v, want %v %v", name, blockRows, i, targets[i], lp[i], ent[i], wantLp, wantEnt)
					}
				}
				for i := range grads {
					if math.Float32bits(grads[i]) != math.Float32bits(allGrads[i]) {
						t.Fatalf("%s, head blocks of %d: gradient %d is %v, over every row %v", name, blockRows, i, grads[i], allGrads[i])
					}
				}
				// A gradient at a token not asked for is refused.
				if _, err := m.Forward(tokens, lens, Want{LM: true, Targets: targets}); err != nil {
					t.Fatal(err)
				}
				bad := slices.Clone(dlp)
				i := slices.Index(targets[1:], false) + 1
				bad[i] = 1
				err := m.Backward(Grad{LogProb: bad})
				if err == nil || !strings.Contains(err.Error(), "Want.Targets") {
					t.Errorf("%s: a gradient at token %d, not asked for: err %v", name, i, err)
				}
			}
		}
	}
	m, err := New(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Forward(tokens, lens, Want{LM: true, Targets: targets[:5]}); err == nil || !strings.Contains(err.Error(), "Want.Targets has 5 entries") {
		t.Errorf("Targets of the wrong length: err %v", err)
	}
}
