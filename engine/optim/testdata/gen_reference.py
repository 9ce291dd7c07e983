#!/usr/bin/python3
"""Reference values for engine/optim from PyTorch (Debian's python3-torch 1.13).

Regenerate with:  /usr/bin/python3 engine/optim/testdata/gen_reference.py > engine/optim/testdata/reference.json

Three AdamW updates over 7 parameters in two groups (the first 4 decay, the
last 3 do not), with fixed gradients, then clip_grad_norm_ on a gradient.
"""
import json

import torch

torch.set_default_dtype(torch.float32)
lr, betas, eps, wd = 1e-2, (0.9, 0.95), 1e-8, 0.1
init = [0.5, -1.25, 2.0, 0.0, 0.75, -0.3, 1.5]
grads = [
    [0.1, -0.2, 0.3, -0.4, 0.5, 1e-4, -2.0],
    [-0.3, 0.25, 0.0, 1.0, -0.5, 1e-4, 0.7],
    [0.05, 0.05, -0.6, 0.2, 0.1, -3.0, 0.0],
]
decay = torch.nn.Parameter(torch.tensor(init[:4]))
nodecay = torch.nn.Parameter(torch.tensor(init[4:]))
opt = torch.optim.AdamW(
    [{"params": [decay], "weight_decay": wd}, {"params": [nodecay], "weight_decay": 0.0}],
    lr=lr, betas=betas, eps=eps, foreach=False)
steps = []
for g in grads:
    decay.grad = torch.tensor(g[:4])
    nodecay.grad = torch.tensor(g[4:])
    opt.step()
    st = [opt.state[decay], opt.state[nodecay]]
    steps.append({
        "params": decay.tolist() + nodecay.tolist(),
        "m": st[0]["exp_avg"].tolist() + st[1]["exp_avg"].tolist(),
        "v": st[0]["exp_avg_sq"].tolist() + st[1]["exp_avg_sq"].tolist(),
    })

clip_in = [3.0, -4.0, 1.0, 2.0, -0.5]
p = torch.nn.Parameter(torch.zeros(5))
p.grad = torch.tensor(clip_in)
norm = torch.nn.utils.clip_grad_norm_([p], max_norm=2.0)

print(json.dumps({
    "lr": lr, "beta1": betas[0], "beta2": betas[1], "eps": eps, "weight_decay": wd,
    "init": init, "grads": grads, "steps": steps,
    "clip": {"max_norm": 2.0, "in": clip_in, "norm": norm.item(), "out": p.grad.tolist()},
}, indent=1))
