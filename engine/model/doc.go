// Package model is the policy and critic network: a decoder-only
// transformer of the Llama/Qwen2 family (token embedding, RMSNorm, rotary
// positions, causal grouped-query attention with optional QKV bias, SwiGLU
// MLP, final RMSNorm, tied or untied LM head, optional scalar value head).
//
// Parameters and gradients each live in one flat []float32 carved into
// named views by a Layout (llm.c style); Buffer.Tensor exposes a view as a
// gorgonia *tensor.Dense sharing the memory, under its Hugging Face name:
//
//	w, _ := m.Params.Tensor("model.layers.0.self_attn.q_proj.weight")
//
// Training runs on packed batches: several sequences of different lengths
// concatenated into one token array, each attending to itself only.
// Forward returns what an RL trainer needs per token — the log-probability
// of the token, the entropy of the distribution it was drawn from, and the
// value of the state before it — and Backward takes ∂loss/∂ of each of
// those per token, so any PPO/GRPO/SFT loss is a choice of coefficients.
//
// WithLoRA makes a model that trains low-rank adapters on a frozen base
// (PEFT's math and files: SaveAdapter, LoadAdapter, Merged), which holds
// bf16-exact weights as bf16 only; NewFrozen reads such a base straight
// from a bf16 checkpoint; SetRecompute
// trades a forward pass for holding one block's activations; a long batch
// over a large vocabulary runs the LM head in blocks of rows.
//
// Generation uses a Decoder: a KV cache over a batch of sequences that grow
// across turns (prompt, generated tokens, environment chunks), never
// recomputing a prefix.
//
// It is the one transformer of the engine, written once against
// engine/backend's interface: a Model computes on the CPU backend by
// default and on any other through Use (CUDA), at f32 or bf16 products,
// with the same code. The math of every op lives in the backends (on the
// CPU, package engine/backend/cpu); this package wires the ops together
// and checks its inputs, returning errors (never panicking) on bad token
// ids, lengths or shapes.
package model
