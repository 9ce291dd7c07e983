package hf

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/backend"
	"github.com/ragen-go/ragen/engine/backend/backendtest"
	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/optim"
	"github.com/ragen-go/ragen/engine/tokenizer"
)

// writeBF16Dir writes a tiny random Qwen2 (every value a bf16 with nonzero
// norms and biases) as a Hugging Face directory in two shards: the
// matrices BF16, the norms and biases F32, and the embedding BF16, or F32
// with values that are no bf16 when embedF32 (a checkpoint of mixed
// dtypes, as conversions leave some).
func writeBF16Dir(t *testing.T, tied, embedF32 bool) string {
	t.Helper()
	c := model.Tiny()
	c.VocabSize, c.TieWordEmbeddings = 520, tied
	m, err := model.New(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for _, v := range m.Layout.Views {
		x := m.Params.Slice(v.Name)
		for i := range x {
			x[i] = backend.RoundBF16(x[i] + float32(0.05*rng.NormFloat64()))
			if embedF32 && v.Name == "model.embed_tokens.weight" {
				x[i] += x[i] * 1e-5 // no longer a bf16
			}
		}
	}
	tok, err := tokenizer.Load("testdata/qwen2_untied_f32/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Save(dir, m, tok, nil); err != nil {
		t.Fatal(err)
	}
	tensors, err := m.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	var half, full []checkpoint.Tensor
	weightMap := map[string]string{}
	for _, x := range tensors {
		if len(x.Shape) == 2 && !(embedF32 && x.Name == "model.embed_tokens.weight") {
			half, weightMap[x.Name] = append(half, x), "model-bf16.safetensors"
		} else {
			full, weightMap[x.Name] = append(full, x), "model-f32.safetensors"
		}
	}
	if err := checkpoint.WriteSafetensorsBF16(filepath.Join(dir, "model-bf16.safetensors"), half, nil); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteSafetensors(filepath.Join(dir, "model-f32.safetensors"), full, nil); err != nil {
		t.Fatal(err)
	}
	index, _ := json.Marshal(map[string]any{"weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(dir, WeightsIndexFile), index, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, WeightsFile)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loraRun loads dir (frozen or not), trains a LoRA policy and a LoRA
// critic on it two steps each and returns every number it saw: the
// policy's log-probabilities and entropies, the critic's values, the
// base's (the KL reference's) log-probabilities, the gradient norms, the
// adapters, a decode's logits and sampled tokens, and the merged model.
func loraRun(t *testing.T, dir string, frozen bool, p backend.Precision) []float32 {
	t.Helper()
	base, _, _, err := Load(dir, Options{Frozen: frozen})
	if err != nil {
		t.Fatal(err)
	}
	if err := base.Use(base.Backend(), p); err != nil {
		t.Fatal(err)
	}
	l := model.LoRA{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}}
	policy, err := base.WithLoRA(l, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	critic, err := base.WithLoRA(l, true, 6)
	if err != nil {
		t.Fatal(err)
	}
	c := base.Config
	rng := rand.New(rand.NewPCG(7, 8))
	var seen []float32
	for _, m := range []*model.Model{policy, critic} {
		opt, err := m.NewAdamW(optim.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			lens := []int{11, 6}
			tokens := make([]int, 17)
			for i := range tokens {
				tokens[i] = rng.IntN(c.VocabSize)
			}
			want := model.Want{LM: m.Config.LMHead, Value: m.Config.ValueHead}
			out, err := m.Forward(tokens, lens, want)
			if err != nil {
				t.Fatal(err)
			}
			seen = append(append(append(seen, out.LogProb...), out.Entropy...), out.Value...)
			g := model.Grad{}
			if want.LM {
				g.LogProb = make([]float32, len(out.LogProb))
				for i := range g.LogProb {
					g.LogProb[i] = float32(math.Cos(float64(i)))
				}
			} else {
				g.Value = make([]float32, len(out.Value))
				for i := range g.Value {
					g.Value[i] = out.Value[i] - 0.3
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
			ref, err := base.Forward(tokens, lens, model.Want{LM: true})
			if err != nil {
				t.Fatal(err)
			}
			seen = append(append(seen, ref.LogProb...), float32(norm))
		}
		seen = append(seen, m.Params.Data...)
	}
	d, err := policy.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	logits, err := d.Append([]int{0, 1}, [][]int{{3, 9, 27, 81}, {5, 25}})
	if err != nil {
		t.Fatal(err)
	}
	seen = append(seen, logits...)
	if logits, err = d.Append([]int{0}, [][]int{{7}}); err != nil {
		t.Fatal(err)
	}
	seen = append(seen, logits...)
	d.Close()
	merged, err := policy.Merged()
	if err != nil {
		t.Fatal(err)
	}
	return append(seen, merged.Params.Data...)
}

// TestLoadFrozenBitEqual: a bf16 checkpoint loaded frozen — its matrices
// (and a bf16 embedding) read from the files straight into bf16 storage —
// gives the numbers of the float32 load followed by WithLoRA, bit for bit:
// training a policy's and a critic's adapters, the reference policy,
// decoding and merging, at F32 and BF16, tied and untied, with a BF16 and
// with an F32 embedding.
func TestLoadFrozenBitEqual(t *testing.T) {
	for _, tied := range []bool{false, true} {
		for _, embedF32 := range []bool{false, true} {
			dir := writeBF16Dir(t, tied, embedF32)
			m, _, _, err := Load(dir, Options{Frozen: true})
			if err != nil {
				t.Fatal(err)
			}
			embed := m.Params.Slice("model.embed_tokens.weight")
			if (embed != nil) != embedF32 || m.Params.Slice("model.layers.0.mlp.up_proj.weight") != nil || m.Params.Slice("model.norm.weight") == nil {
				t.Fatalf("tied %v, F32 embedding %v: the frozen load holds %d float32 values (embedding float32: %v)", tied, embedF32, len(m.Params.Data), embed != nil)
			}
			if _, err := m.NewAdamW(optim.DefaultConfig()); err == nil || !strings.Contains(err.Error(), "frozen base") {
				t.Errorf("NewAdamW on a frozen load: %v", err)
			}
			for _, p := range []backend.Precision{backend.F32, backend.BF16} {
				old, got := loraRun(t, dir, false, p), loraRun(t, dir, true, p)
				if len(old) != len(got) {
					t.Fatalf("tied %v, F32 embedding %v, %s: %d numbers loaded as float32, %d frozen", tied, embedF32, p, len(old), len(got))
				}
				for i := range old {
					if math.Float32bits(old[i]) != math.Float32bits(got[i]) {
						t.Fatalf("tied %v, F32 embedding %v, %s: number %d is %v loaded frozen, %v loaded as float32", tied, embedF32, p, i, got[i], old[i])
					}
				}
			}
		}
	}
}

// TestLoadFrozenFloatCheckpoints: F32 and F16 checkpoints whose values are
// not all bf16 load as float32 with Frozen too, the same parameters as
// without it.
func TestLoadFrozenFloatCheckpoints(t *testing.T) {
	for _, name := range []string{"qwen2_untied_f32", "llama_f16"} {
		dir := filepath.Join("testdata", name)
		plain, _, _, err := Load(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		frozen, _, _, err := Load(dir, Options{Frozen: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(frozen.Params.Data) != frozen.Layout.Size {
			t.Fatalf("%s: a checkpoint that is no bf16 was held as bf16 (%d of %d floats)", name, len(frozen.Params.Data), frozen.Layout.Size)
		}
		for i, v := range plain.Params.Data {
			if math.Float32bits(v) != math.Float32bits(frozen.Params.Data[i]) {
				t.Fatalf("%s: parameter %d is %v frozen, %v plain", name, i, frozen.Params.Data[i], v)
			}
		}
	}
	if _, _, _, err := Load("testdata/qwen2_tied_bf16", Options{Frozen: true, ValueHead: true}); err == nil || !strings.Contains(err.Error(), "Frozen and ValueHead cannot be combined") {
		t.Errorf("Frozen with ValueHead: %v", err)
	}
}

// TestLoadFrozenMoves: a frozen load moved to another backend (the naive
// one) takes its bf16 weights along and computes there what the float32
// load computes there, bit for bit.
func TestLoadFrozenMoves(t *testing.T) {
	dir := writeBF16Dir(t, true, false)
	var logits [2][]float32
	for i, frozen := range []bool{false, true} {
		m, _, _, err := Load(dir, Options{Frozen: frozen})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Use(backendtest.Naive{}, backend.F32); err != nil {
			t.Fatal(err)
		}
		out, err := m.Forward([]int{1, 4, 9, 16, 25, 36}, []int{4, 2}, model.Want{Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		logits[i] = out.Logits
	}
	for i, v := range logits[0] {
		if math.Float32bits(v) != math.Float32bits(logits[1][i]) {
			t.Fatalf("logit %d is %v moved frozen, %v moved as float32", i, logits[1][i], v)
		}
	}
}
