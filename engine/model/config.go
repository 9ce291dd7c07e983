package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Config describes a decoder-only transformer of the Llama/Qwen2 family. JSON
// names follow Hugging Face's config.json so real Qwen2 configs load as is.
// The zero value is invalid: start from a preset (Tiny, Small, Base) and set
// VocabSize from the tokenizer.
type Config struct {
	// VocabSize is the number of token ids (embedding rows, logits per
	// position). No default: set it from the tokenizer.
	VocabSize int `json:"vocab_size"`
	// HiddenSize is d_model, the width of the residual stream.
	HiddenSize int `json:"hidden_size"`
	// NumLayers is the number of transformer blocks.
	NumLayers int `json:"num_hidden_layers"`
	// NumHeads is the number of query heads; head_dim = HiddenSize/NumHeads.
	NumHeads int `json:"num_attention_heads"`
	// NumKVHeads is the number of key/value heads (grouped-query attention);
	// it divides NumHeads. Equal to NumHeads for plain multi-head attention.
	NumKVHeads int `json:"num_key_value_heads"`
	// IntermediateSize is the width of the SwiGLU MLP. The presets use 8d/3
	// rounded up to a multiple of 32 (352 for d=128, as the PyTorch baseline).
	IntermediateSize int `json:"intermediate_size"`
	// MaxPositions is the longest sequence the model accepts (prompt and
	// generation together).
	MaxPositions int `json:"max_position_embeddings"`
	// RopeTheta is the base of the rotary position frequencies (default 10000;
	// Qwen2.5 uses 1e6).
	RopeTheta float64 `json:"rope_theta"`
	// RMSNormEps is added to mean(x²) in every RMSNorm (default 1e-6).
	RMSNormEps float64 `json:"rms_norm_eps"`
	// TieWordEmbeddings makes the LM head reuse the token embedding matrix
	// (no lm_head.weight parameter). Default true; no effect without LMHead.
	TieWordEmbeddings bool `json:"tie_word_embeddings"`
	// AttentionBias adds biases to the q, k and v projections (Qwen2 has
	// them, Llama does not). Default true.
	AttentionBias bool `json:"attention_bias"`
	// LMHead says whether the model predicts tokens. A pure critic sets it
	// false and ValueHead true. Default true.
	LMHead bool `json:"lm_head"`
	// ValueHead adds a scalar value per position (value_head.weight/bias),
	// read from the final normed hidden state. Default false.
	ValueHead bool `json:"value_head"`
}

// HeadDim is the width of one attention head.
func (c Config) HeadDim() int { return c.HiddenSize / c.NumHeads }

// preset fills the fields the three presets share.
func preset(d, layers, heads, kvHeads, maxPos int) Config {
	return Config{
		VocabSize:         0,
		HiddenSize:        d,
		NumLayers:         layers,
		NumHeads:          heads,
		NumKVHeads:        kvHeads,
		IntermediateSize:  (8*d/3 + 31) / 32 * 32,
		MaxPositions:      maxPos,
		RopeTheta:         10000,
		RMSNormEps:        1e-6,
		TieWordEmbeddings: true,
		AttentionBias:     true,
		LMHead:            true,
	}
}

// Tiny is the preset for fast tests: d=32, 2 layers, 4 heads sharing 2
// key/value heads, MLP 96, vocabulary 96, 256 positions.
func Tiny() Config {
	c := preset(32, 2, 4, 2, 256)
	c.VocabSize = 96
	return c
}

// Small is the benchmark preset: d=128, 4 layers, 4 heads (no GQA), MLP 352,
// 1024 positions. Set VocabSize (512 in the benchmarks).
func Small() Config { return preset(128, 4, 4, 4, 1024) }

// Base is d=256, 4 layers, 4 heads, MLP 704, 2048 positions. Set VocabSize.
func Base() Config { return preset(256, 4, 4, 4, 2048) }

// Validate reports the first invalid field, named as in config.json.
func (c Config) Validate() error {
	pos := func(name string, v int) error {
		if v <= 0 {
			return fmt.Errorf("%s: must be > 0 (got %d)", name, v)
		}
		return nil
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize},
		{"hidden_size", c.HiddenSize},
		{"num_hidden_layers", c.NumLayers},
		{"num_attention_heads", c.NumHeads},
		{"num_key_value_heads", c.NumKVHeads},
		{"intermediate_size", c.IntermediateSize},
		{"max_position_embeddings", c.MaxPositions},
	} {
		if err := pos(f.name, f.v); err != nil {
			return err
		}
	}
	if c.HiddenSize%c.NumHeads != 0 {
		return fmt.Errorf("num_attention_heads: must divide hidden_size (got %d and %d)", c.NumHeads, c.HiddenSize)
	}
	if c.HeadDim()%2 != 0 {
		return fmt.Errorf("hidden_size: head_dim = hidden_size/num_attention_heads must be even for rotary embeddings (got %d)", c.HeadDim())
	}
	if c.NumHeads%c.NumKVHeads != 0 {
		return fmt.Errorf("num_key_value_heads: must divide num_attention_heads (got %d and %d)", c.NumKVHeads, c.NumHeads)
	}
	if !(c.RopeTheta > 1) || math.IsInf(c.RopeTheta, 0) {
		return fmt.Errorf("rope_theta: must be a finite number > 1 (got %g)", c.RopeTheta)
	}
	if !(c.RMSNormEps > 0) || c.RMSNormEps > 1 {
		return fmt.Errorf("rms_norm_eps: must be in (0, 1] (got %g)", c.RMSNormEps)
	}
	if !c.LMHead && !c.ValueHead {
		return errors.New("lm_head, value_head: at least one head must be on")
	}
	// Flat buffers are indexed by int; keep every activation addressable.
	if n := int64(c.VocabSize) * int64(c.HiddenSize); n > math.MaxInt32 {
		return fmt.Errorf("vocab_size: embedding of %d x %d floats is too large", c.VocabSize, c.HiddenSize)
	}
	return nil
}

// UnmarshalJSON reads a config.json, ours or a Hugging Face Llama/Qwen2 one,
// filling absent fields with Hugging Face's defaults: num_key_value_heads =
// num_attention_heads, rope_theta 10000, rms_norm_eps 1e-6,
// tie_word_embeddings true, lm_head true, value_head false, and
// attention_bias true for model_type "qwen2" (whose q/k/v projections always
// have biases) and false otherwise. Call Validate afterwards.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config // without this method
	var aux struct {
		plain
		ModelType     string `json:"model_type"`
		AttentionBias *bool  `json:"attention_bias"`
		NumKVHeads    *int   `json:"num_key_value_heads"`
	}
	aux.plain = plain{RopeTheta: 10000, RMSNormEps: 1e-6, TieWordEmbeddings: true, LMHead: true}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*c = Config(aux.plain)
	c.NumKVHeads = c.NumHeads
	if aux.NumKVHeads != nil {
		c.NumKVHeads = *aux.NumKVHeads
	}
	c.AttentionBias = aux.ModelType == "qwen2"
	if aux.AttentionBias != nil {
		c.AttentionBias = *aux.AttentionBias
	}
	return nil
}

// Preset returns the named size preset: tiny, small or base.
func Preset(name string) (Config, error) {
	switch name {
	case "tiny":
		return Tiny(), nil
	case "small":
		return Small(), nil
	case "base":
		return Base(), nil
	}
	return Config{}, fmt.Errorf("model: must be one of tiny, small, base (got %q)", name)
}
