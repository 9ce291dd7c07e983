package hf

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ragen-go/ragen/engine/model"
)

// configJSON is the part of a Hugging Face config.json that shapes a
// Qwen2ForCausalLM or LlamaForCausalLM. Pointers tell an absent field from
// a zero one; unknown fields (dropout, initializer_range, ...) are ignored.
type configJSON struct {
	ModelType        string          `json:"model_type"`
	Architectures    []string        `json:"architectures,omitempty"`
	VocabSize        *int            `json:"vocab_size"`
	HiddenSize       *int            `json:"hidden_size"`
	NumLayers        *int            `json:"num_hidden_layers"`
	NumHeads         *int            `json:"num_attention_heads"`
	NumKVHeads       *int            `json:"num_key_value_heads,omitempty"`
	HeadDim          *int            `json:"head_dim,omitempty"`
	IntermediateSize *int            `json:"intermediate_size"`
	MaxPositions     *int            `json:"max_position_embeddings,omitempty"`
	RopeTheta        *float64        `json:"rope_theta,omitempty"`
	RopeScaling      json.RawMessage `json:"rope_scaling,omitempty"`
	RMSNormEps       *float64        `json:"rms_norm_eps,omitempty"`
	TieWordEmbed     *bool           `json:"tie_word_embeddings,omitempty"`
	AttentionBias    *bool           `json:"attention_bias,omitempty"`
	MLPBias          *bool           `json:"mlp_bias,omitempty"`
	HiddenAct        string          `json:"hidden_act,omitempty"`
	UseSlidingWindow *bool           `json:"use_sliding_window,omitempty"`
	TorchDType       string          `json:"torch_dtype,omitempty"`
}

// ParseConfig maps a Hugging Face config.json of model_type "qwen2" or
// "llama" to our model.Config. The size fields (vocab_size, hidden_size,
// num_hidden_layers, num_attention_heads, intermediate_size) are required;
// the others take the transformers defaults of the model type:
//
//	num_key_value_heads      num_attention_heads
//	max_position_embeddings  32768 (qwen2), 2048 (llama)
//	rope_theta               10000
//	rms_norm_eps             1e-6
//	tie_word_embeddings      false
//	attention_bias           always true for qwen2; false for llama
//	                         (true for llama would add o_proj biases:
//	                         unsupported)
//
// Anything the model cannot run is an error naming the field: another
// model_type, an activation other than silu, a sliding window, MLP
// biases, Llama attention biases (they include o_proj's), a head_dim
// other than hidden_size/num_attention_heads, or RoPE scaling other than
// none/"default".
func ParseConfig(data []byte) (model.Config, error) {
	var j configJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return model.Config{}, fmt.Errorf("config.json: %w", err)
	}
	c := model.Config{LMHead: true, RopeTheta: 10000, RMSNormEps: 1e-6}
	switch j.ModelType {
	case "qwen2":
		c.MaxPositions, c.AttentionBias = 32768, true
		if j.AttentionBias != nil && !*j.AttentionBias {
			return c, fmt.Errorf("config.json: attention_bias: qwen2 always has q/k/v biases (got false)")
		}
	case "llama":
		c.MaxPositions = 2048
		if j.AttentionBias != nil && *j.AttentionBias {
			// In transformers' Llama, attention_bias puts a bias on o_proj
			// as well as on q/k/v; the model has q/k/v biases only (Qwen2's).
			return c, fmt.Errorf("config.json: attention_bias: true is not supported for llama: it adds an o_proj bias (self_attn.o_proj.bias), which the model does not have (only Qwen2's q/k/v biases)")
		}
	case "":
		return c, fmt.Errorf("config.json: model_type: missing (want \"qwen2\" or \"llama\")")
	default:
		return c, fmt.Errorf("config.json: model_type: %q is not supported (want \"qwen2\" or \"llama\")", j.ModelType)
	}
	for _, f := range []struct {
		name string
		src  *int
		dst  *int
	}{
		{"vocab_size", j.VocabSize, &c.VocabSize},
		{"hidden_size", j.HiddenSize, &c.HiddenSize},
		{"num_hidden_layers", j.NumLayers, &c.NumLayers},
		{"num_attention_heads", j.NumHeads, &c.NumHeads},
		{"intermediate_size", j.IntermediateSize, &c.IntermediateSize},
	} {
		if f.src == nil {
			return c, fmt.Errorf("config.json: %s: missing", f.name)
		}
		*f.dst = *f.src
	}
	c.NumKVHeads = c.NumHeads
	if j.NumKVHeads != nil {
		c.NumKVHeads = *j.NumKVHeads
	}
	if j.MaxPositions != nil {
		c.MaxPositions = *j.MaxPositions
	}
	if j.RopeTheta != nil {
		c.RopeTheta = *j.RopeTheta
	}
	if j.RMSNormEps != nil {
		c.RMSNormEps = *j.RMSNormEps
	}
	if j.TieWordEmbed != nil {
		c.TieWordEmbeddings = *j.TieWordEmbed
	}
	switch {
	case j.HiddenAct != "" && j.HiddenAct != "silu":
		return c, fmt.Errorf("config.json: hidden_act: %q is not supported (the MLP is SwiGLU: silu)", j.HiddenAct)
	case j.UseSlidingWindow != nil && *j.UseSlidingWindow:
		return c, fmt.Errorf("config.json: use_sliding_window: sliding-window attention is not supported")
	case j.MLPBias != nil && *j.MLPBias:
		return c, fmt.Errorf("config.json: mlp_bias: MLP biases are not supported")
	case j.HeadDim != nil && c.NumHeads > 0 && *j.HeadDim != c.HiddenSize/c.NumHeads:
		return c, fmt.Errorf("config.json: head_dim: %d differs from hidden_size/num_attention_heads = %d, which the model requires", *j.HeadDim, c.HiddenSize/c.NumHeads)
	}
	if err := checkRopeScaling(j.RopeScaling); err != nil {
		return c, fmt.Errorf("config.json: rope_scaling: %w", err)
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("config.json: %w", err)
	}
	return c, nil
}

// checkRopeScaling accepts no scaling: null, absent, or {"rope_type":
// "default"}. Scaled variants ("linear", "dynamic", "yarn", Llama 3.1's
// "llama3") change the rotary frequencies, which model.Config cannot
// express yet.
func checkRopeScaling(raw json.RawMessage) error {
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	var s struct {
		RopeType string `json:"rope_type"`
		Type     string `json:"type"` // the older spelling
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("must be null or an object: %w", err)
	}
	t := s.RopeType
	if t == "" {
		t = s.Type
	}
	if t == "default" {
		return nil
	}
	return fmt.Errorf("type %q is not supported (only unscaled RoPE; Llama 3.1/3.2 checkpoints use \"llama3\" scaling)", t)
}

// marshalConfig writes c as a Hugging Face config.json: model_type "qwen2"
// with Qwen2ForCausalLM when the model has q/k/v biases, else "llama" with
// LlamaForCausalLM and attention_bias false (what Qwen2 cannot express).
func marshalConfig(c model.Config) ([]byte, error) {
	j := configJSON{
		ModelType: "qwen2", Architectures: []string{"Qwen2ForCausalLM"},
		VocabSize: &c.VocabSize, HiddenSize: &c.HiddenSize, NumLayers: &c.NumLayers,
		NumHeads: &c.NumHeads, NumKVHeads: &c.NumKVHeads, IntermediateSize: &c.IntermediateSize,
		MaxPositions: &c.MaxPositions, RopeTheta: &c.RopeTheta, RMSNormEps: &c.RMSNormEps,
		TieWordEmbed: &c.TieWordEmbeddings, HiddenAct: "silu", TorchDType: "float32",
	}
	if !c.AttentionBias {
		no := false
		j.ModelType, j.Architectures = "llama", []string{"LlamaForCausalLM"}
		j.AttentionBias, j.MLPBias = &no, &no
	}
	return json.MarshalIndent(j, "", "  ")
}
