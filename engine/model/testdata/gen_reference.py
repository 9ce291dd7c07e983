#!/usr/bin/python3
"""Reference forward and backward of the ragen transformer in plain PyTorch.

Writes reference.safetensors, read by TestMatchesPyTorch (engine/model).
Regenerate (needs Debian's python3-torch 1.13, no other package):

    apt-get install -y python3-torch
    cd engine/model/testdata && /usr/bin/python3 gen_reference.py

The architecture is written out op by op (no Hugging Face transformers):
token embedding, per block RMSNorm -> q/k/v projections with bias -> rotary
embedding (HF "rotate_half", tables computed in float32 like HF) -> causal
grouped-query attention -> o_proj -> residual, RMSNorm -> SwiGLU MLP ->
residual; final RMSNorm, untied LM head and a scalar value head.

The batch packs two sequences of different lengths; each attends to itself
only and positions restart at 0. Per token i >= 1 of a sequence:
    logprob[i] = log p(tok[i] | tok[<i]), entropy[i] = H(p(. | tok[<i])),
    value[i]   = value head at position i-1,
and the loss mixes them with per-token weights:
    loss = sum_i a[i]*logprob[i] + b[i]*entropy[i] + 0.5*c[i]*(value[i]-ret[i])^2
(a, b, c, ret are 0 at each sequence's first token). Weights are float32
values; the computation runs in float64, so the file holds the exact
answer for those weights rounded to float32.
"""
import json
import struct

import torch

CONFIG = dict(
    vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, intermediate_size=96, max_position_embeddings=64,
    rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
    attention_bias=True, lm_head=True, value_head=True,
)
LENS = [7, 12]
SEED = 1234


def make_params(c, g):
    d, V, I = c["hidden_size"], c["vocab_size"], c["intermediate_size"]
    hd = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    p = {}

    def w(name, *shape, std=0.2):
        p[name] = (torch.randn(*shape, generator=g) * std).float()

    def norm(name):
        p[name] = (1 + 0.1 * torch.randn(d, generator=g)).float()

    w("model.embed_tokens.weight", V, d, std=1.0)
    for i in range(c["num_hidden_layers"]):
        s = f"model.layers.{i}."
        norm(s + "input_layernorm.weight")
        w(s + "self_attn.q_proj.weight", q, d)
        w(s + "self_attn.k_proj.weight", kv, d)
        w(s + "self_attn.v_proj.weight", kv, d)
        w(s + "self_attn.q_proj.bias", q, std=0.1)
        w(s + "self_attn.k_proj.bias", kv, std=0.1)
        w(s + "self_attn.v_proj.bias", kv, std=0.1)
        w(s + "self_attn.o_proj.weight", d, q)
        norm(s + "post_attention_layernorm.weight")
        w(s + "mlp.gate_proj.weight", I, d)
        w(s + "mlp.up_proj.weight", I, d)
        w(s + "mlp.down_proj.weight", d, I, std=0.1)
    norm("model.norm.weight")
    w("lm_head.weight", V, d)
    w("value_head.weight", 1, d)
    w("value_head.bias", 1, std=0.1)
    return p


def rope_tables(c):
    hd = c["hidden_size"] // c["num_attention_heads"]
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    t = torch.arange(c["max_position_embeddings"], dtype=torch.float32)
    emb = torch.outer(t, inv)
    emb = torch.cat((emb, emb), dim=-1)
    return emb.cos().double(), emb.sin().double()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def forward(c, p, tokens, lens):
    nH, nKV = c["num_attention_heads"], c["num_key_value_heads"]
    d = c["hidden_size"]
    hd, eps = d // nH, c["rms_norm_eps"]
    cos, sin = rope_tables(c)
    pos = torch.cat([torch.arange(L) for L in lens])
    cos, sin = cos[pos].unsqueeze(1), sin[pos].unsqueeze(1)  # [T, 1, hd]
    T = tokens.shape[0]
    x = p["model.embed_tokens.weight"][tokens]
    for i in range(c["num_hidden_layers"]):
        s = f"model.layers.{i}."
        h = rmsnorm(x, p[s + "input_layernorm.weight"], eps)
        q = h @ p[s + "self_attn.q_proj.weight"].T + p[s + "self_attn.q_proj.bias"]
        k = h @ p[s + "self_attn.k_proj.weight"].T + p[s + "self_attn.k_proj.bias"]
        v = h @ p[s + "self_attn.v_proj.weight"].T + p[s + "self_attn.v_proj.bias"]
        q, k, v = q.view(T, nH, hd), k.view(T, nKV, hd), v.view(T, nKV, hd)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nH // nKV, dim=1)  # query head j reads kv head j // group
        v = v.repeat_interleave(nH // nKV, dim=1)
        outs, o = [], 0
        for L in lens:
            qs, ks, vs = (t[o:o + L].transpose(0, 1) for t in (q, k, v))  # [nH, L, hd]
            att = qs @ ks.transpose(1, 2) / hd ** 0.5
            mask = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            outs.append((att @ vs).transpose(0, 1).reshape(L, nH * hd))
            o += L
        x = x + torch.cat(outs) @ p[s + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, p[s + "post_attention_layernorm.weight"], eps)
        gate = h @ p[s + "mlp.gate_proj.weight"].T
        up = h @ p[s + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ p[s + "mlp.down_proj.weight"].T
    h = rmsnorm(x, p["model.norm.weight"], eps)
    logits = h @ p["lm_head.weight"].T
    values = (h @ p["value_head.weight"].T + p["value_head.bias"]).squeeze(-1)
    return logits, values


def align(rows, lens):
    """Per-row results -> per-token: out[i] = rows[i-1] within a sequence."""
    out, o = [], 0
    for L in lens:
        out.append(torch.zeros(1, dtype=rows.dtype))
        out.append(rows[o:o + L - 1])
        o += L
    return torch.cat(out)


def save_safetensors(path, tensors, metadata):
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        dtype = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        b = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    c = CONFIG
    g = torch.Generator().manual_seed(SEED)
    p32 = make_params(c, g)
    T = sum(LENS)
    tokens = torch.randint(0, c["vocab_size"], (T,), generator=g)
    first = torch.zeros(T, dtype=torch.bool)
    first[torch.tensor([sum(LENS[:i]) for i in range(len(LENS))])] = True
    coef = {n: (torch.randn(T, generator=g) * 0.5).float().masked_fill(first, 0)
            for n in ("coef.logprob", "coef.entropy", "coef.value", "returns")}

    p = {n: t.double().requires_grad_() for n, t in p32.items()}
    logits, values_row = forward(c, p, tokens, LENS)
    logp_all = logits.log_softmax(-1)
    ent_row = -(logp_all.exp() * logp_all).sum(-1)
    nxt = torch.cat([tokens[1:], tokens[:1]])  # row r predicts token r+1 (last row of a sequence unused)
    lp_row = logp_all.gather(1, nxt.unsqueeze(1)).squeeze(1)
    logprob = align(lp_row, LENS)
    entropy = align(ent_row, LENS)
    value = align(values_row, LENS)
    a, b, cv, ret = (coef[n].double() for n in ("coef.logprob", "coef.entropy", "coef.value", "returns"))
    loss = (a * logprob).sum() + (b * entropy).sum() + 0.5 * (cv * (value - ret) ** 2).sum()
    loss.backward()

    out = {"tokens": tokens.int(), "lens": torch.tensor(LENS, dtype=torch.int32)}
    out.update(coef)
    out["logits"] = logits.float()
    out["logprob"], out["entropy"], out["value"] = logprob.float(), entropy.float(), value.float()
    out["loss"] = loss.float().reshape(1)
    for n, t in p32.items():
        out["param." + n] = t
    for n, t in p.items():
        out["grad." + n] = t.grad.float()
    save_safetensors("reference.safetensors", out, {"config": json.dumps(c), "torch": torch.__version__})
    print(f"wrote reference.safetensors: {len(out)} tensors, loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
