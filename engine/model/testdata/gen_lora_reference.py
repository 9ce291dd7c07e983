#!/usr/bin/python3
"""Reference forward and backward of LoRA adapters on the ragen transformer.

Writes lora_reference.safetensors, read by TestLoRAMatchesPyTorch
(engine/model). Regenerate (needs Debian's python3-torch, no other package):

    apt-get install -y python3-torch
    cd engine/model/testdata && /usr/bin/python3 gen_lora_reference.py

The base is gen_reference.py's model (its forward, op by op) with the LM
head only. Every linear layer of every block carries an adapter, as PEFT's
LoRA computes it (dropout 0):
    y = x W^T + b + (alpha/r) (x A^T) B^T,   A [r, in], B [out, r],
which equals x (W + (alpha/r) B A)^T + b: the reference folds each adapter
into its weight and lets autograd differentiate through the fold, so the
gradients of A and B are the exact ones for the float32 weights, computed in
float64. B is random (not PEFT's zeros) so that the adapters matter.
    loss = sum_i a[i]*logprob[i] + b[i]*entropy[i]
"""
import json

import torch

from gen_reference import CONFIG, LENS, align, forward, make_params, save_safetensors

RANK, ALPHA = 4, 8.0
MODULES = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
SEED = 4321


def main():
    c = dict(CONFIG, value_head=False)
    g = torch.Generator().manual_seed(SEED)
    base32 = make_params(c, g)
    del base32["value_head.weight"], base32["value_head.bias"]
    lora32 = {}
    for i in range(c["num_hidden_layers"]):
        for mod in MODULES:
            out_dim, in_dim = base32[f"model.layers.{i}.{mod}.weight"].shape
            lora32[f"model.layers.{i}.{mod}.lora_A.weight"] = (torch.randn(RANK, in_dim, generator=g) * 0.2).float()
            lora32[f"model.layers.{i}.{mod}.lora_B.weight"] = (torch.randn(out_dim, RANK, generator=g) * 0.2).float()
    T = sum(LENS)
    tokens = torch.randint(0, c["vocab_size"], (T,), generator=g)
    first = torch.zeros(T, dtype=torch.bool)
    first[torch.tensor([sum(LENS[:i]) for i in range(len(LENS))])] = True
    coef = {n: (torch.randn(T, generator=g) * 0.5).float().masked_fill(first, 0) for n in ("coef.logprob", "coef.entropy")}

    base = {n: t.double() for n, t in base32.items()}
    lora = {n: t.double().requires_grad_() for n, t in lora32.items()}
    p = dict(base)
    for i in range(c["num_hidden_layers"]):
        for mod in MODULES:
            s = f"model.layers.{i}.{mod}."
            p[s + "weight"] = base[s + "weight"] + (ALPHA / RANK) * lora[s + "lora_B.weight"] @ lora[s + "lora_A.weight"]
    p["value_head.weight"] = torch.zeros(1, c["hidden_size"], dtype=torch.float64)  # forward computes one; unused
    p["value_head.bias"] = torch.zeros(1, dtype=torch.float64)
    logits, _ = forward(c, p, tokens, LENS)
    logp_all = logits.log_softmax(-1)
    ent_row = -(logp_all.exp() * logp_all).sum(-1)
    nxt = torch.cat([tokens[1:], tokens[:1]])
    lp_row = logp_all.gather(1, nxt.unsqueeze(1)).squeeze(1)
    logprob, entropy = align(lp_row, LENS), align(ent_row, LENS)
    a, b = coef["coef.logprob"].double(), coef["coef.entropy"].double()
    loss = (a * logprob).sum() + (b * entropy).sum()
    loss.backward()

    out = {"tokens": tokens.int(), "lens": torch.tensor(LENS, dtype=torch.int32)}
    out.update(coef)
    out["logits"] = logits.float()
    out["logprob"], out["entropy"] = logprob.float(), entropy.float()
    for n, t in base32.items():
        out["param." + n] = t
    for n, t in lora32.items():
        out["lora." + n] = t
    for n, t in lora.items():
        out["grad." + n] = t.grad.float()
    meta = {"config": json.dumps(c), "lora": json.dumps({"r": RANK, "lora_alpha": ALPHA, "target_modules": ["all-linear"]}),
            "torch": torch.__version__}
    save_safetensors("lora_reference.safetensors", out, meta)
    print(f"wrote lora_reference.safetensors: {len(out)} tensors, loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
