package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/optim"
)

// frozenRun trains LoRA adapters (a policy and a critic on one bf16-exact
// base) for a few steps and returns every number it saw, in order: the
// policy's log-probabilities and entropies, the critic's values, the base's
// (the KL reference's) log-probabilities, the gradient norms, then the
// adapters after training, a decode's logits and the merged model's
// parameters. keep forces the float32 base (the path before freezeBF16);
// embedF32 makes the embedding's values no bf16s, so that it stays
// float32 while the matrices are bf16.
func frozenRun(t *testing.T, c Config, b backend.Backend, p backend.Precision, keep, embedF32 bool) []float32 {
	t.Helper()
	keepFrozenF32 = keep
	defer func() { keepFrozenF32 = false }()
	base := bf16Model(t, c, 31)
	if embedF32 {
		for i, x := range base.Params.Slice(embedName) {
			base.Params.Slice(embedName)[i] = x + x*1e-5
		}
	}
	if err := base.Use(b, p); err != nil {
		t.Fatal(err)
	}
	l := LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj", "o_proj", "gate_proj", "down_proj"}}
	policy, err := base.WithLoRA(l, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	critic, err := base.WithLoRA(l, true, 6)
	if err != nil {
		t.Fatal(err)
	}
	if got := base.w16 != nil; got == keep {
		t.Fatalf("keep %v: frozen bf16 storage %v", keep, got)
	}
	if !keep && len(base.Params.Data) >= base.Layout.Size/4 {
		t.Fatalf("the frozen base kept %d of %d floats", len(base.Params.Data), base.Layout.Size)
	}
	if _, f32 := base.Params.Layout.Lookup(embedName); !keep && f32 != embedF32 {
		t.Fatalf("embedding of bf16s %v: the frozen base holds it as float32: %v", !embedF32, f32)
	}
	oc := optim.DefaultConfig()
	oc.LR = 1e-2
	var seen []float32
	rng := rand.New(rand.NewPCG(7, 8))
	for _, m := range []*Model{policy, critic} {
		opt, err := m.NewAdamW(oc)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			lens := []int{9, 14, 5}
			tokens := randomBatch(rng, c.VocabSize, lens...)
			want := Want{LM: m.Config.LMHead, Value: m.Config.ValueHead}
			out, err := m.Forward(tokens, lens, want)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(append(append(seen, out.LogProb...), out.Entropy...), out.Value...)
			g := Grad{}
			if want.LM {
				g.LogProb, g.Entropy = make([]float32, len(out.LogProb)), make([]float32, len(out.Entropy))
				for i := range g.LogProb {
					g.LogProb[i], g.Entropy[i] = float32(math.Sin(float64(i))), 0.01
				}
			} else {
				g.Value = make([]float32, len(out.Value))
				for i := range g.Value {
					g.Value[i] = out.Value[i] - 0.5
				}
			}
			m.ZeroGrad()
			if err := m.Backward(g); err != nil {
				t.Fatal(err)
			}
			norm, err := m.ClipGradNorm(1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Step(opt); err != nil {
				t.Fatal(err)
			}
			ref, err := base.Forward(tokens, lens, Want{LM: true})
			if err != nil {
				t.Fatal(err)
			}
			seen = append(append(seen, ref.LogProb...), float32(norm))
		}
		seen = append(seen, m.Params.Data...)
	}
	logits, _ := decodeTrace(t, policy)
	seen = append(seen, logits...)
	merged, err := policy.Merged()
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, merged.Params.Data...)
	tensors, err := base.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tensors {
		seen = append(seen, x.Data...)
	}
	return seen
}

// TestFrozenBF16BaseBitEqual: a base whose matrices are bf16-exact holds
// them as bf16 only under LoRA adapters, and training, the reference
// policy, decoding (packed and plain products), merging and the base's
// tensors give the very floats of the float32 base, bit for bit, at F32
// and BF16, with an untied head (frozen too) and a tied one, and with the
// embedding held as bf16 (its rows widened as they are gathered) or, when
// its values are no bf16s, as float32.
func TestFrozenBF16BaseBitEqual(t *testing.T) {
	for _, tied := range []bool{false, true} {
		for _, p := range []backend.Precision{backend.F32, backend.BF16} {
			for _, packer := range []bool{true, false} {
				for _, embedF32 := range []bool{false, true} {
					c := Tiny()
					c.TieWordEmbeddings = tied
					var b backend.Backend = cpu.New()
					if !packer {
						b = noPacker{b}
					}
					old, got := frozenRun(t, c, b, p, true, embedF32), frozenRun(t, c, b, p, false, embedF32)
					if len(old) != len(got) {
						t.Fatalf("tied %v, %s, packer %v, F32 embedding %v: %d numbers from the float32 base, %d from bf16", tied, p, packer, embedF32, len(old), len(got))
					}
					for i := range old {
						if math.Float32bits(old[i]) != math.Float32bits(got[i]) {
							t.Fatalf("tied %v, %s, packer %v, F32 embedding %v: number %d is %v from the bf16 base, %v from the float32 one", tied, p, packer, embedF32, i, got[i], old[i])
						}
					}
				}
			}
		}
	}
}

// TestFrozenBaseNotBF16KeepsFloat32: a base with a value that is not a
// bf16 keeps its float32 matrices (dropping them would change the numbers).
func TestFrozenBaseNotBF16KeepsFloat32(t *testing.T) {
	base := bf16Model(t, Tiny(), 3)
	base.Params.Slice("model.layers.1.mlp.up_proj.weight")[5] += 1e-6
	if _, err := base.WithLoRA(LoRA{Rank: 2, Alpha: 4, Targets: []string{"all-linear"}}, false, 1); err != nil {
		t.Fatal(err)
	}
	if base.w16 != nil || len(base.Params.Data) != base.Layout.Size {
		t.Fatal("a base with a value that is not a bf16 dropped its float32 matrices")
	}
}
