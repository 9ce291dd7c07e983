package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/cpu"
	"github.com/ragen-go/ragen/engine/sample"
)

// loraPolicy returns adapters of l on a model of c (bf16-exact values
// when bf16Base: the base then holds its matrices as bf16 only, as a
// Qwen2.5 checkpoint's does) on backend b at precision p, with every A and
// B set to values that are not zero, so that the adapters change the
// logits.
func loraPolicy(t *testing.T, c Config, l LoRA, bf16Base bool, b backend.Backend, p backend.Precision) *Model {
	t.Helper()
	var m *Model
	if bf16Base {
		m = bf16Model(t, c, 31)
	} else {
		var err error
		if m, err = New(c, 31); err != nil {
			t.Fatal(err)
		}
		randomize(m, 32)
	}
	if err := m.Use(b, p); err != nil {
		t.Fatal(err)
	}
	a, err := m.WithLoRA(l, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	if bf16Base != (m.w16 != nil) {
		t.Fatalf("a base of bf16 values holds them as bf16 only: %v, want %v", m.w16 != nil, bf16Base)
	}
	for _, v := range a.Layout.Views {
		x := a.Params.Slice(v.Name)
		for j := range x {
			x[j] = float32(0.3 * math.Sin(float64(3*j+v.Offset)))
		}
	}
	if err := a.Upload(); err != nil {
		t.Fatal(err)
	}
	return a
}

// loraDecodeTol is how far (relative to the largest logit, relErr) a LoRA
// decoder's logits may be from Forward's over the same sequences. At F32
// the two compute the same expression — the base product, + its bias,
// then + s·(x·Aᵀ)·Bᵀ — and differ only in the order of float32 sums
// (products of a few rows against a whole batch's, the cached attention
// against the full one), as a decoder without adapters does: 1e-5, as
// TestDecoderMatchesForward (seen: at most 3.6e-6). At BF16 both round
// every product input to bf16 (8 bits of mantissa) at the same places, so
// most rows agree to float32 sums (~1e-7); but where the order of sums
// moves an activation across a bf16 rounding boundary, that input of the
// next product differs by one bf16 ulp (2⁻⁸ ≈ 3.9e-3 of its value), and
// the logits by up to that fraction of its share (seen: at most 2.3e-3).
// 1e-2 allows a flip or two of that kind and nothing like a wrong or
// missing adapter, which moves the logits by more than 0.1 here
// (checkAdaptersMatter).
var loraDecodeTol = map[backend.Precision]float64{backend.F32: 1e-5, backend.BF16: 1e-2}

// TestLoRADecodeMatchesForward: a decoder over a model with adapters runs
// them unfolded over its base's (packed, bf16 when bf16-exact) products,
// and gives Forward's logits — the trainer's log-probabilities — within
// loraDecodeTol at every step of a multi-turn decode (prefill, greedy and
// sampled steps, an environment chunk, sequences leaving): F32 and BF16,
// tied and untied heads, adapters on q and v and on every linear layer, a
// float32 and a bf16-only base, on the Packer and on plain Gemms.
func TestLoRADecodeMatchesForward(t *testing.T) {
	for _, p := range []backend.Precision{backend.F32, backend.BF16} {
		for _, tied := range []bool{true, false} {
			for _, targets := range [][]string{{"q_proj", "v_proj"}, {"all-linear"}} {
				for _, bf16Base := range []bool{false, true} {
					for _, packer := range []bool{true, false} {
						name := fmt.Sprintf("%s/tied=%v/%v/bf16base=%v/packer=%v", p, tied, targets, bf16Base, packer)
						t.Run(name, func(t *testing.T) {
							c := Tiny()
							c.TieWordEmbeddings = tied
							var b backend.Backend = cpu.New()
							if !packer {
								b = noPacker{b}
							}
							a := loraPolicy(t, c, LoRA{Rank: 4, Alpha: 8, Targets: targets}, bf16Base, b, p)
							checkLoRADecode(t, a, loraDecodeTol[p])
						})
					}
				}
			}
		}
	}
}

// checkLoRADecode runs a multi-turn decode of a, half its sequences greedy
// and half sampled, comparing every step's logits with a's Forward over
// the sequences so far, and checks that the adapters matter (the base's
// logits are far from a's).
func checkLoRADecode(t *testing.T, a *Model, tol float64) {
	t.Helper()
	d, err := a.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	V := a.Config.VocabSize
	rng := rand.New(rand.NewPCG(41, 42))
	ids, chunks, rngs := decodeSequences(rng, V)
	hist := map[int][]int{}
	var smp sample.Sampler
	for step := range 10 {
		for i, id := range ids {
			hist[id] = append(hist[id], chunks[i]...)
		}
		out, err := d.Append(ids, chunks)
		if err != nil {
			t.Fatal(err)
		}
		checkLogits(t, a, fmt.Sprintf("step %d", step), hist, ids, out, tol)
		if step == 0 {
			checkAdaptersMatter(t, a, hist, ids, out)
		}
		for i, id := range ids {
			o := sample.Options{Temperature: 1}
			if id%2 == 0 {
				o = sample.Options{} // greedy
			}
			chunks[i] = []int{smp.Sample(out[i*V:(i+1)*V], o, rngs[i])}
		}
		switch step {
		case 3: // an environment reply to two sequences
			chunks[1] = append(chunks[1], randomBatch(rng, V, 9)...)
			chunks[3] = append(chunks[3], randomBatch(rng, V, 4)...)
		case 5: // two episodes end: three rows per step from here on
			d.Remove(ids[0])
			d.Remove(ids[4])
			ids, chunks, rngs = ids[1:4], chunks[1:4], rngs[1:4]
		}
	}
}

// checkLogits compares the decoder's logits rows (one per id) with m's
// Forward over each sequence's whole history, to tol (relErr).
func checkLogits(t *testing.T, m *Model, what string, hist map[int][]int, ids []int, logits []float32, tol float64) {
	t.Helper()
	V := m.Config.VocabSize
	tokens, lens := histories(hist, ids)
	out, err := m.Forward(tokens, lens, Want{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	o := 0
	for i, id := range ids {
		o += lens[i]
		want := out.Logits[(o-1)*V : o*V]
		if e, at := relErr(logits[i*V:(i+1)*V], want); e > tol {
			t.Errorf("%s: sequence %d (length %d): decoder vs Forward logits differ by %.2e (> %.0e) at token %d", what, id, lens[i], e, tol, at)
		}
	}
}

// histories packs the sequences ids of hist for a Forward: their tokens
// one after another, and their lengths.
func histories(hist map[int][]int, ids []int) (tokens, lens []int) {
	for _, id := range ids {
		tokens = append(tokens, hist[id]...)
		lens = append(lens, len(hist[id]))
	}
	return tokens, lens
}

// checkAdaptersMatter fails unless the base's logits for the sequences
// are far from the adapter model's (logits, the decoder's): a decoder
// that dropped an adapter would pass checkLogits' tolerance otherwise
// only by accident.
func checkAdaptersMatter(t *testing.T, a *Model, hist map[int][]int, ids []int, logits []float32) {
	t.Helper()
	V := a.Config.VocabSize
	tokens, lens := histories(hist, ids)
	out, err := a.Base().Forward(tokens, lens, Want{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	o := 0
	for i := range ids {
		o += lens[i]
		if e, _ := relErr(logits[i*V:(i+1)*V], out.Logits[(o-1)*V:o*V]); e < 0.1 {
			t.Fatalf("the adapters move the logits of sequence %d by only %.2e: the test cannot tell a dropped adapter", ids[i], e)
		}
	}
}

// TestLoRADecoderSharesBasePanels: the decoders of a model with adapters
// on a Packer multiply by the panels their base packed once (a second
// decoder packs nothing, Close leaves the panels), and give the same
// logits; changing the base (Refresh, as after an Upload) drops them, and
// the next decoder packs its new weights.
func TestLoRADecoderSharesBasePanels(t *testing.T) {
	c := Tiny()
	a := loraPolicy(t, c, LoRA{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}}, true, cpu.New(), backend.F32)
	base := a.Base()
	tokens := [][]int{{1, 2, 3, 4}, {5, 6}}
	run := func() []float32 {
		d, err := a.NewDecoder()
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if !d.shared || d.prod != base.panels {
			t.Fatalf("the decoder does not multiply by its base's panels (shared %v)", d.shared)
		}
		out, err := d.Append([]int{0, 1}, tokens)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(out)
	}
	first := run()
	panels := base.panels
	if panels == nil || panels.lmHead.packed == nil {
		t.Fatal("the base kept no panels")
	}
	second := run()
	if base.panels != panels {
		t.Fatal("a second decoder packed the base again")
	}
	if !slices.Equal(first, second) {
		t.Fatal("two decoders over the same panels differ")
	}
	// A plain decoder of the base owns its panels and leaves the kept ones.
	d, err := base.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	if d.shared || d.prod == base.panels {
		t.Fatal("a decoder of the base itself shares the panels kept for its adapters")
	}
	d.Close()
	if base.panels != panels {
		t.Fatal("closing the base's own decoder dropped the kept panels")
	}
	base.Refresh()
	if base.panels != nil {
		t.Fatal("Refresh kept the panels of the old weights")
	}
	if !slices.Equal(run(), first) {
		t.Fatal("panels packed again from the same weights give other logits")
	}
	// ReleaseDecodePanels, called on the adapter model, drops its base's
	// panels; a decoder open at the call keeps decoding on them, and the
	// next decoder packs them again, to the same logits.
	open, err := a.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	a.ReleaseDecodePanels()
	if base.panels != nil {
		t.Fatal("ReleaseDecodePanels kept the base's panels")
	}
	out, err := open.Append([]int{0, 1}, tokens)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, first) {
		t.Fatal("a decoder open at ReleaseDecodePanels decodes other logits")
	}
	if !slices.Equal(run(), first) {
		t.Fatal("panels packed again after ReleaseDecodePanels give other logits")
	}
}
