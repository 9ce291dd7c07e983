// Package hf loads and saves Hugging Face model directories: pretrained
// Qwen2 and Llama checkpoints (Qwen2.5-0.5B/3B-Instruct as RAGEN trains
// them) and our own models in the same layout, so that other tools read
// them.
//
// A directory holds
//
//	config.json                   model_type qwen2 or llama, the sizes  → ParseConfig
//	model.safetensors             the weights (F32, F16 or BF16), or
//	model.safetensors.index.json  + shards: {"weight_map": {tensor: file}}
//	tokenizer.json                byte-level BPE                       → engine/tokenizer
//	tokenizer_config.json         chat_template, eos_token             → ChatTemplate
//	generation_config.json        eos/pad ids (written by Save)
//
// Parameter names are the Hugging Face ones on both sides (model.Layout
// already names its views model.layers.N.self_attn.q_proj.weight, ...), so
// loading is a loop over the model's views reading each tensor straight into
// the flat parameter buffer, with its shape checked; with Options.Frozen
// (the base of LoRA adapters) a BF16 checkpoint's matrices go into bf16
// storage instead (model.NewFrozen), never widened into a float32 copy.
// The model math matches transformers' Qwen2ForCausalLM (RMSNorm in float32, rotate_half RoPE,
// grouped-query attention, SwiGLU): testdata/gen_qwen2_tiny.py writes tiny
// random checkpoints with logits computed by a plain PyTorch forward, and
// the tests compare ours with them.
//
// Chat templates are Jinja in Hugging Face's world; we do not run Jinja.
// ParseChatTemplate recognises Qwen's ChatML (with Qwen2.5's default system
// message, or Qwen3's reasoning blocks) and Render reproduces it.
package hf
