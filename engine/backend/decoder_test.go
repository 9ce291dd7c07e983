package backend

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/sample"
)

// A critic (value head, no LM head) and a model with both heads run on the
// cpu backend exactly as model.Model: values, log-probabilities and every
// gradient are bit-identical (the same kernels in the same order).
func TestTransformerValueHeadMatchesModel(t *testing.T) {
	for _, heads := range []struct{ lm, value bool }{{false, true}, {true, true}} {
		c := model.Tiny()
		c.LMHead, c.ValueHead = heads.lm, heads.value
		m, err := model.New(c, 3)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(4, 4))
		// A fresh value head is zero; make it random so values and
		// gradients are not trivially 0.
		for _, name := range []string{"value_head.weight", "value_head.bias"} {
			v, _ := m.Layout.Lookup(name)
			copy(m.Params.Data[v.Offset:v.Offset+v.Size], randn(rng, v.Size))
		}
		lens := []int{5, 12, 1}
		toks := batch(rng, c.VocabSize, lens...)
		tr, err := NewTransformer(&CPU{}, c, m.Params.Data)
		if err != nil {
			t.Fatal(err)
		}
		want := model.Want{LM: heads.lm, Value: true}
		got, err := tr.Forward(toks, lens, want)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := m.Forward(toks, lens, want)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Value, ref.Value) || !slices.Equal(got.LogProb, ref.LogProb) || !slices.Equal(got.Entropy, ref.Entropy) {
			t.Fatalf("heads %+v: outputs differ: values %v, want %v", heads, got.Value, ref.Value)
		}
		g := model.Grad{Value: randn(rng, len(toks))}
		if heads.lm {
			g.LogProb = randn(rng, len(toks))
		}
		m.ZeroGrad()
		tr.ZeroGrad()
		if err := m.Backward(g); err != nil {
			t.Fatal(err)
		}
		if err := tr.Backward(g); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tr.Grads.(Host), m.Grads.Data) {
			t.Fatalf("heads %+v: gradients differ: relative error %g", heads, RelErr(tr.Grads.(Host), m.Grads.Data))
		}
		tr.Free()
	}

	// The checks are model.Forward's and model.Backward's.
	c := model.Tiny()
	c.LMHead, c.ValueHead = false, true
	m, _ := model.New(c, 1)
	tr, err := NewTransformer(&CPU{}, c, m.Params.Data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Forward([]int{1, 2}, []int{2}, model.Want{LM: true}); err == nil || !strings.Contains(err.Error(), "no LM head") {
		t.Fatalf("LM of a critic: %v", err)
	}
	if _, err := tr.Forward([]int{1, 2}, []int{2}, model.Want{Value: true}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Backward(model.Grad{LogProb: []float32{0, 1}}); err == nil || !strings.Contains(err.Error(), "did not evaluate the LM head") {
		t.Fatalf("log-prob gradient of a critic: %v", err)
	}
	if _, err := tr.NewDecoder(1, 8); err == nil || !strings.Contains(err.Error(), "no LM head") {
		t.Fatalf("decoder of a critic: %v", err)
	}
}

// The backend Decoder on the cpu backend reproduces model.Decoder over a
// multi-turn conversation: prompts, sampled responses ending at a stop
// sequence or MaxNew, environment replies appended to some sequences, a
// sequence removed and a new one taking its slot. Logits agree to 1e-6
// (the model's decoder multiplies by packed weights and attends with its
// own cache layout) and every sampled token is the model's.
func TestDecoderMatchesModelDecoder(t *testing.T) {
	c := model.Tiny()
	m, _ := model.New(c, 5)
	rng := rand.New(rand.NewPCG(9, 9))
	tr, err := NewTransformer(&CPU{}, c, m.Params.Data)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Free()
	bd, err := tr.NewDecoder(3, c.MaxPositions)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Free()
	md, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	V := c.VocabSize
	o := model.GenerateOptions{Sample: sample.Options{Temperature: 1, TopK: 40, TopP: 0.95}, MaxNew: 12,
		Stop: sample.NewStopper([][]int{{7}, {3, 4}})}
	rngs := map[int][2]*sample.RNG{}
	generate := func(ids []int, prompts [][]int) {
		t.Helper()
		var mr, br []model.Request
		for i, id := range ids {
			if _, ok := rngs[id]; !ok {
				rngs[id] = [2]*sample.RNG{sample.NewRNG(uint64(id)), sample.NewRNG(uint64(id))}
			}
			mr = append(mr, model.Request{ID: id, Prompt: prompts[i], RNG: rngs[id][0]})
			br = append(br, model.Request{ID: id, Prompt: prompts[i], RNG: rngs[id][1]})
		}
		want, err := md.Generate(mr, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bd.Generate(br, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ids {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("sequence %d: generated %v, model.Decoder %v", ids[i], got[i], want[i])
			}
			if bd.Len(ids[i]) != md.Len(ids[i]) {
				t.Fatalf("sequence %d: length %d, model.Decoder %d", ids[i], bd.Len(ids[i]), md.Len(ids[i]))
			}
		}
	}
	prompt := func(n int) []int { return batch(rng, V, n) }
	generate([]int{0, 1, 2}, [][]int{prompt(9), prompt(1), prompt(30)})
	generate([]int{2, 0}, [][]int{prompt(5), prompt(3)}) // environment replies
	bd.Remove(1)
	md.Remove(1)
	if _, err := bd.Append([]int{4, 5}, [][]int{prompt(2), prompt(2)}); err == nil || !strings.Contains(err.Error(), "2 new sequences but only 1 of 3 slots are free") {
		t.Fatalf("too many sequences: %v", err)
	}
	generate([]int{4, 0}, [][]int{prompt(6), nil}) // 4 takes 1's slot; 0 runs its pending token only
	// Append's logits.
	chunks := [][]int{prompt(4), prompt(1)}
	want, err := md.Append([]int{2, 4}, chunks)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bd.Append([]int{2, 4}, chunks)
	if err != nil {
		t.Fatal(err)
	}
	if e := RelErr(got.(Host)[:2*V], want[:2*V]); e > 1e-6 {
		t.Fatalf("Append's logits: relative error %g", e)
	}
	if !slices.Equal(bd.IDs(), []int{0, 2, 4}) {
		t.Fatalf("IDs %v", bd.IDs())
	}
}

// A long prefill runs in blocks of decodeRows rows, and the caches grow
// past initialCap positions with the prefixes copied; the logits are those
// of a full Forward at each sequence's last token.
func TestDecoderPrefillMatchesForward(t *testing.T) {
	c := model.Tiny()
	c.MaxPositions = 600
	m, _ := model.New(c, 6)
	rng := rand.New(rand.NewPCG(1, 7))
	lens := []int{300, 250, 190} // 710 rows in the second Append: two blocks, a sequence split across them
	toks := batch(rng, c.VocabSize, lens...)
	out, err := m.Forward(toks, lens, model.Want{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := NewTransformer(&CPU{}, c, m.Params.Data)
	dec, err := tr.NewDecoder(3, c.MaxPositions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dec.Append([]int{10, 11, 12}, [][]int{toks[:20], toks[300:310], toks[550:560]}); err != nil {
		t.Fatal(err)
	}
	if dec.cap != initialCap {
		t.Fatalf("cap %d, want %d", dec.cap, initialCap)
	}
	logits, err := dec.Append([]int{10, 11, 12}, [][]int{toks[20:300], toks[310:550], toks[560:]})
	if err != nil {
		t.Fatal(err)
	}
	if dec.cap != 2*initialCap {
		t.Fatalf("cap %d after growing, want %d", dec.cap, 2*initialCap)
	}
	V, end := c.VocabSize, 0
	for i, L := range lens {
		end += L
		if e := RelErr(logits.(Host)[i*V:i*V+V], out.Logits[(end-1)*V:end*V]); e > 1e-5 {
			t.Fatalf("sequence %d: relative error %g", i, e)
		}
	}
	if _, err := dec.Append([]int{10}, [][]int{make([]int, c.MaxPositions)}); err == nil || !strings.Contains(err.Error(), "would exceed the decoder's 600 positions") {
		t.Fatalf("overlong: %v", err)
	}
}
