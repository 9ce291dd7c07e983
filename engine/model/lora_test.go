package model

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// loraReference returns the base and adapter model of
// testdata/lora_reference.safetensors (gen_lora_reference.py) with its
// weights, and the reference.
func loraReference(t *testing.T) (*Model, *Model, *safetensors) {
	t.Helper()
	ref, err := readSafetensors("testdata/lora_reference.safetensors")
	if err != nil {
		t.Fatalf("%v (regenerate with: cd engine/model/testdata && /usr/bin/python3 gen_lora_reference.py)", err)
	}
	var c Config
	if err := json.Unmarshal([]byte(ref.meta["config"]), &c); err != nil {
		t.Fatalf("config: %v", err)
	}
	var l LoRA
	if err := json.Unmarshal([]byte(ref.meta["lora"]), &l); err != nil {
		t.Fatalf("lora: %v", err)
	}
	base, err := New(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range base.Layout.Views {
		w, ok := ref.f32["param."+v.Name]
		if !ok || len(w) != v.Size {
			t.Fatalf("reference has no parameter %s of %d floats", v.Name, v.Size)
		}
		copy(base.Params.Slice(v.Name), w)
	}
	a, err := base.WithLoRA(l, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range a.Layout.Views {
		w, ok := ref.f32["lora."+v.Name]
		if !ok || len(w) != v.Size {
			t.Fatalf("reference has no adapter %s of %d floats", v.Name, v.Size)
		}
		copy(a.Params.Slice(v.Name), w)
	}
	return base, a, ref
}

// TestLoRAMatchesPyTorch compares a forward and backward of a model with
// adapters on every linear layer with the PyTorch reference: logits,
// log-probabilities and entropies, and the gradient of every A and B, to
// 1e-4 relative to the tensor's largest magnitude. The base gets no
// gradient: it is frozen.
func TestLoRAMatchesPyTorch(t *testing.T) {
	base, a, ref := loraReference(t)
	tokens, lens := ref.i32["tokens"], ref.i32["lens"]
	out, err := a.Forward(tokens, lens, Want{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	type cmp struct {
		name      string
		got, want []float32
	}
	cmps := []cmp{{"logits", slices.Clone(out.Logits), ref.f32["logits"]}, {"logprob", out.LogProb, ref.f32["logprob"]}, {"entropy", out.Entropy, ref.f32["entropy"]}}
	a.ZeroGrad()
	if err := a.Backward(Grad{LogProb: ref.f32["coef.logprob"], Entropy: ref.f32["coef.entropy"]}); err != nil {
		t.Fatal(err)
	}
	for _, v := range a.Layout.Views {
		cmps = append(cmps, cmp{"grad " + v.Name, a.Grads.Slice(v.Name), ref.f32["grad."+v.Name]})
	}
	for _, c := range cmps {
		e, at := relErr(c.got, c.want)
		t.Logf("%-58s max rel err %.2e", c.name, e)
		if !(e <= 1e-4) {
			t.Errorf("%s: max rel err %.2e > 1e-4; worst element %d: got %g, want %g", c.name, e, at, c.got[at], c.want[at])
		}
	}
	if slices.ContainsFunc(base.Grads.Data, func(x float32) bool { return x != 0 }) {
		t.Error("the frozen base got gradients")
	}
}

// A fresh adapter (B = 0) computes the base's outputs bit for bit, and
// only B gets a gradient at first (dA = s·(g·B)ᵀ·x = 0).
func TestLoRAStartsAtBase(t *testing.T) {
	c := Tiny()
	base, err := New(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	a, err := base.WithLoRA(LoRA{Rank: 2, Alpha: 4, Targets: []string{"q_proj", "v_proj", "down_proj"}}, false, 9)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	lens := []int{5, 9}
	toks := randomBatch(rng, c.VocabSize, lens...)
	want, _ := base.Forward(toks, lens, Want{LM: true})
	wantLP := slices.Clone(want.LogProb)
	got, err := a.Forward(toks, lens, Want{LM: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.LogProb, wantLP) {
		t.Fatal("a fresh adapter changed the base's log-probabilities")
	}
	a.ZeroGrad()
	g := make([]float32, len(toks))
	for i := range g {
		g[i] = float32(rng.NormFloat64())
	}
	if err := a.Backward(Grad{LogProb: g}); err != nil {
		t.Fatal(err)
	}
	for _, v := range a.Layout.Views {
		nonzero := slices.ContainsFunc(a.Grads.Slice(v.Name), func(x float32) bool { return x != 0 })
		if isA := strings.Contains(v.Name, "lora_A"); nonzero == isA {
			t.Errorf("%s: gradient nonzero %v", v.Name, nonzero)
		}
	}
}

// The decoder runs the adapters unfolded over the base's products: its
// logits match the adapter model's forward; the merged model computes the same; and an
// adapter saved in PEFT's format loads back to the same numbers.
func TestLoRADecodeMergeSaveLoad(t *testing.T) {
	base, a, ref := loraReference(t)
	tokens, lens := ref.i32["tokens"], ref.i32["lens"]
	out, err := a.Forward(tokens, lens, Want{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	logits := slices.Clone(out.Logits)
	V := a.Config.VocabSize
	last := func(s int) []float32 { // logits after the whole of sequence s
		o := 0
		for _, L := range lens[:s+1] {
			o += L
		}
		return logits[(o-1)*V : o*V]
	}

	d, err := a.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := d.Append([]int{0, 1}, [][]int{tokens[:lens[0]], tokens[lens[0]:]})
	if err != nil {
		t.Fatal(err)
	}
	for s := range 2 {
		if e, _ := relErr(got[s*V:(s+1)*V], last(s)); e > 1e-5 {
			t.Errorf("decoder, sequence %d: logits relative error %.2e", s, e)
		}
	}

	merged, err := a.Merged()
	if err != nil {
		t.Fatal(err)
	}
	mo, err := merged.Forward(tokens, lens, Want{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := relErr(mo.Logits, logits); e > 1e-5 {
		t.Errorf("merged model: logits relative error %.2e", e)
	}

	dir := filepath.Join(t.TempDir(), "adapter")
	if err := a.SaveAdapter(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
	if err != nil || !strings.Contains(string(raw), `"peft_type": "LORA"`) {
		t.Fatalf("adapter_config.json: %s, %v", raw, err)
	}
	loaded, err := base.LoadAdapter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(loaded.Params.Data, a.Params.Data) {
		t.Fatal("the loaded adapter differs from the saved one")
	}
	// Settings that change the math are refused by name.
	os.WriteFile(filepath.Join(dir, AdapterConfigFile), []byte(`{"peft_type":"LORA","r":4,"lora_alpha":8,"target_modules":["q_proj"],"use_dora":true}`), 0o644)
	if _, err := base.LoadAdapter(dir); err == nil || !strings.Contains(err.Error(), "use_dora") {
		t.Fatalf("a DoRA adapter: %v", err)
	}
	os.WriteFile(filepath.Join(dir, AdapterConfigFile), []byte(`{"peft_type":"LORA","r":4,"lora_alpha":8,"target_modules":["q_proj"]}`), 0o644)
	if _, err := base.LoadAdapter(dir); err == nil || !strings.Contains(err.Error(), "no adapter of this base") {
		t.Fatalf("an adapter file with tensors of modules the config does not target: %v", err)
	}
}

func TestLoRAValidate(t *testing.T) {
	for _, tc := range []struct {
		l    LoRA
		want string
	}{
		{LoRA{Rank: 0, Alpha: 1, Targets: []string{"q_proj"}}, "r: must be ≥ 1 (got 0)"},
		{LoRA{Rank: 2, Alpha: 0, Targets: []string{"q_proj"}}, "lora_alpha: must be a finite number > 0 (got 0)"},
		{LoRA{Rank: 2, Alpha: 1}, "target_modules: empty"},
		{LoRA{Rank: 2, Alpha: 1, Targets: []string{"qproj"}}, `target_modules: unknown "qproj"`},
	} {
		if err := tc.l.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.l, err, tc.want)
		}
	}
}
