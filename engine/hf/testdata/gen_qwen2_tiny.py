#!/usr/bin/python3
"""Tiny random Hugging Face checkpoints with reference logits, for engine/hf.

Writes three model directories next to this file, each with config.json,
tokenizer.json (a copy of engine/tokenizer/testdata/env512.tokenizer.json),
tokenizer_config.json, the weights, and reference.safetensors holding the
logits of a packed batch of two sequences computed here in plain PyTorch:

    qwen2_untied_f32/  model_type qwen2, untied lm_head, F32, one file
    qwen2_tied_bf16/   model_type qwen2, tied embeddings, BF16, two shards
                       and model.safetensors.index.json
    llama_f16/         model_type llama, no q/k/v bias, untied, F16

Shapes are Qwen2's in miniature: grouped-query attention (4 query heads,
2 key/value heads), QKV biases, SwiGLU, rope_theta 1e6, and a vocab_size
(520) larger than the tokenizer's 512 ids, as Qwen2.5 pads 151665 to 151936.

The forward is written out op by op with the math of transformers'
Qwen2ForCausalLM / LlamaForCausalLM: RMSNorm (x * rsqrt(mean(x^2) + eps) * w),
rotary embedding with rotate_half and inv_freq computed in float32,
repeat_kv for grouped-query attention, causal softmax(q k^T / sqrt(hd)) v,
SwiGLU down(silu(gate(x)) * up(x)), final norm, lm_head. It runs in float64
on the float32 values of the stored weights (BF16/F16 weights rounded
first), so the file holds the exact logits of the stored checkpoint.

Regenerate (Debian's python3-torch 1.13; no safetensors package needed):

    cd engine/hf/testdata && /usr/bin/python3 gen_qwen2_tiny.py
"""
import json
import os
import shutil
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER = os.path.join(HERE, "..", "..", "tokenizer", "testdata", "env512.tokenizer.json")
LENS = [7, 12]

BASE = dict(
    vocab_size=520, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128,
    rope_theta=1000000.0, rms_norm_eps=1e-6, hidden_act="silu",
)
QWEN_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}{%- for message in messages %}{%- if not (loop.first and message['role'] == 'system') %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} in the safetensors format, names sorted."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        if t.dtype == torch.float32:
            raw = t.numpy().tobytes()
        else:  # 16-bit: the raw bits, little-endian
            raw = t.view(torch.int16).numpy().astype("<i2").tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def make_params(c, g):
    d, V, I = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    hd = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    p = {}

    def w(name, *shape, std=0.2):
        p[name] = torch.randn(*shape, generator=g) * std

    def norm(name):
        p[name] = 1 + 0.1 * torch.randn(d, generator=g)

    w("model.embed_tokens.weight", V, d, std=1.0)
    for i in range(c["num_hidden_layers"]):
        s = f"model.layers.{i}."
        norm(s + "input_layernorm.weight")
        w(s + "self_attn.q_proj.weight", q, d)
        w(s + "self_attn.k_proj.weight", kv, d)
        w(s + "self_attn.v_proj.weight", kv, d)
        if c["bias"]:
            w(s + "self_attn.q_proj.bias", q, std=0.1)
            w(s + "self_attn.k_proj.bias", kv, std=0.1)
            w(s + "self_attn.v_proj.bias", kv, std=0.1)
        w(s + "self_attn.o_proj.weight", d, q)
        norm(s + "post_attention_layernorm.weight")
        w(s + "mlp.gate_proj.weight", I, d)
        w(s + "mlp.up_proj.weight", I, d)
        w(s + "mlp.down_proj.weight", d, I, std=0.1)
    norm("model.norm.weight")
    if not c["tie_word_embeddings"]:
        w("lm_head.weight", V, d)
    return p


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(c, p, tokens):
    """Logits [T, V] of one sequence, in float64."""
    d, nH, nKV = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd, T, eps = d // nH, len(tokens), c["rms_norm_eps"]
    P = {k: v.double() for k, v in p.items()}
    # inv_freq and the angles in float32, as transformers computes them
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    ang = torch.outer(torch.arange(T).float(), inv)
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos().double(), emb.sin().double()
    x = P["model.embed_tokens.weight"][torch.tensor(tokens)]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for i in range(c["num_hidden_layers"]):
        s = f"model.layers.{i}."

        def lin(name, inp):
            y = inp @ P[s + name + ".weight"].T
            b = P.get(s + name + ".bias")
            return y if b is None else y + b

        h = rms_norm(x, P[s + "input_layernorm.weight"], eps)
        q = lin("self_attn.q_proj", h).view(T, nH, hd).transpose(0, 1)
        k = lin("self_attn.k_proj", h).view(T, nKV, hd).transpose(0, 1)
        v = lin("self_attn.v_proj", h).view(T, nKV, hd).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nH // nKV, dim=0)  # repeat_kv
        v = v.repeat_interleave(nH // nKV, dim=0)
        att = torch.softmax(q @ k.transpose(1, 2) / hd ** 0.5 + mask, dim=-1)
        o = (att @ v).transpose(0, 1).reshape(T, nH * hd)
        x = x + lin("self_attn.o_proj", o)
        h = rms_norm(x, P[s + "post_attention_layernorm.weight"], eps)
        x = x + lin("mlp.down_proj", torch.nn.functional.silu(lin("mlp.gate_proj", h)) * lin("mlp.up_proj", h))
    x = rms_norm(x, P["model.norm.weight"], eps)
    head = P["model.embed_tokens.weight"] if c["tie_word_embeddings"] else P["lm_head.weight"]
    return x @ head.T


def build(name, model_type, tied, dtype, shards, seed):
    c = dict(BASE, model_type=model_type, tie_word_embeddings=tied, bias=model_type == "qwen2")
    g = torch.Generator().manual_seed(seed)
    stored = {k: v.to(dtype) for k, v in make_params(c, g).items()}
    p = {k: v.float() for k, v in stored.items()}  # what a loader reads
    tokens = torch.randint(0, 512, (sum(LENS),), generator=g).tolist()
    logits, at = [], 0
    for L in LENS:
        logits.append(forward(c, p, tokens[at:at + L]))
        at += L
    out = os.path.join(HERE, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cfg = {k: v for k, v in c.items() if k != "bias"}
    cfg["architectures"] = ["Qwen2ForCausalLM" if model_type == "qwen2" else "LlamaForCausalLM"]
    cfg["torch_dtype"] = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}[dtype]
    if model_type == "llama":
        cfg["attention_bias"] = False
        cfg["mlp_bias"] = False
        cfg["rope_scaling"] = None
    else:
        cfg["use_sliding_window"] = False
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shutil.copy(TOKENIZER, os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": QWEN_TEMPLATE, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, f, indent=2)
    names = sorted(stored)
    if shards == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), stored, {"format": "pt"})
    else:
        weight_map = {}
        for s in range(shards):
            file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            part = {n: stored[n] for n in names[s::shards]}
            write_safetensors(os.path.join(out, file), part, {"format": "pt"})
            weight_map.update({n: file for n in part})
        total = sum(t.numel() * t.element_size() for t in stored.values())
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    write_safetensors(os.path.join(out, "reference.safetensors"),
                      {"logits": torch.cat(logits).float()},
                      {"tokens": json.dumps(tokens), "lens": json.dumps(LENS)})


if __name__ == "__main__":
    build("qwen2_untied_f32", "qwen2", False, torch.float32, 1, 1)
    build("qwen2_tied_bf16", "qwen2", True, torch.bfloat16, 2, 2)
    build("llama_f16", "llama", False, torch.float16, 1, 3)
