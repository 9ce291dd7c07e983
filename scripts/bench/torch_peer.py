"""PyTorch peer for `ragen bench`: the same Llama-style model as
engine/model (RMSNorm, RoPE, causal attention, SwiGLU, q/k/v biases, tied
LM head, scalar value head), in plain torch, timed on the same work.

The Go side starts this script once per preset and talks to it over
stdin/stdout, one JSON object per line, so that our runs and PyTorch's can
alternate in rounds without paying torch's import each time:

    {"op": "train", "steps": 3}      -> {"tok_s": [...], "maxrss_kb": N}
    {"op": "decode", "batch": 16, "prompt": 128, "new": 128}
                                      -> {"tok_s": [x], "maxrss_kb": N}
    {"op": "quit"}

--dtype bfloat16 converts the model (weights and rotary tables) and the
KV caches to bfloat16 before anything runs, for the decode op only (a
train op is refused): plain PyTorch's bf16 inference, the peer of a
decoder that keeps bf16 weights (docs/decisions.md, 44).

Thread setting (research/perf.md, section 2): only one of torch's OpenMP
pool and OpenBLAS's pool may use both cores. The parent sets
OPENBLAS_NUM_THREADS in our environment; --torch-threads sets torch's.
The parent also sets OPENBLAS_CORETYPE when OpenBLAS mis-detects the CPU
(`ragen bench` prints it); the ready line reports what torch and OpenBLAS
made of the machine: ATen's CPU capability and OpenBLAS's core.

--lora-rank R trains rank-R LoRA adapters (PEFT's: A random, B zero,
scale alpha/R) on every linear layer of a frozen model — the base needs
no gradient, only A and B do, and AdamW steps only them — the peer of
`model.WithLoRA` with target all-linear.

Attention shares each key/value head among its group of query heads by
folding the group into the query rows (no copy of the KV cache per step,
as a tuned grouped-query attention does).
"""

import argparse
import ctypes
import gc
import json
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(max_pos, hd, theta):
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope(x, cos, sin):
    # x: (B, H, L, hd); rotate halves (Hugging Face Llama convention).
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        d, self.h, self.kv, self.hd = a.d, a.heads, a.kv_heads, a.d // a.heads
        self.inorm = RMSNorm(d, a.eps)
        self.q = nn.Linear(d, self.h * self.hd)
        self.k = nn.Linear(d, self.kv * self.hd)
        self.v = nn.Linear(d, self.kv * self.hd)
        self.o = nn.Linear(self.h * self.hd, d, bias=False)
        self.pnorm = RMSNorm(d, a.eps)
        self.gate = nn.Linear(d, a.inter, bias=False)
        self.up = nn.Linear(d, a.inter, bias=False)
        self.down = nn.Linear(a.inter, d, bias=False)

    def forward(self, x, cos, sin, cache=None, pos=0):
        B, L, _ = x.shape
        y = self.inorm(x)
        q = self.q(y).view(B, L, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(B, L, self.kv, self.hd).transpose(1, 2)
        v = self.v(y).view(B, L, self.kv, self.hd).transpose(1, 2)
        c, s = cos[pos:pos + L], sin[pos:pos + L]
        q, k = rope(q, c, s), rope(k, c, s)
        if cache is not None:
            kc, vc = cache
            kc[:, :, pos:pos + L] = k
            vc[:, :, pos:pos + L] = v
            k, v = kc[:, :, : pos + L], vc[:, :, : pos + L]
        # Grouped-query attention: the g query heads of a key/value head
        # become g·L rows against that head's keys, q (B, kv, g·L, hd).
        g = self.h // self.kv
        q = q.reshape(B, self.kv, g * L, self.hd)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        if L > 1:
            W = k.shape[2]
            mask = torch.ones(L, W, dtype=torch.bool).triu(W - L + 1).repeat(g, 1)
            att = att.masked_fill(mask, float("-inf"))
        out = (att.softmax(-1) @ v).view(B, self.h, L, self.hd).transpose(1, 2).reshape(B, L, self.h * self.hd)
        x = x + self.o(out)
        y = self.pnorm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Model(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed = nn.Embedding(a.vocab, a.d)
        self.blocks = nn.ModuleList(Block(a) for _ in range(a.layers))
        self.norm = RMSNorm(a.d, a.eps)
        self.value = nn.Linear(a.d, 1) if a.value_head else None
        cos, sin = rope_tables(a.max_pos, a.d // a.heads, a.rope_theta)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, tokens, caches=None, pos=0, last_only=False):
        """Logits (of the last position only with last_only, as a decoder
        needs) and values (None without a value head)."""
        x = self.embed(tokens)
        for i, b in enumerate(self.blocks):
            x = b(x, self.cos, self.sin, None if caches is None else caches[i], pos)
        x = self.norm(x)
        value = None if self.value is None else self.value(x).squeeze(-1)
        if last_only:
            x = x[:, -1:]
        return x @ self.embed.weight.t(), value


class LoRALinear(nn.Module):
    """A frozen linear layer plus PEFT's adapter: y = W·x + b + s·B·(A·x),
    A (r, in) uniform in ±1/√in, B (out, r) zero, s = alpha/r."""

    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.empty(r, base.in_features).uniform_(-1 / math.sqrt(base.in_features), 1 / math.sqrt(base.in_features)))
        self.b = nn.Parameter(torch.zeros(base.out_features, r))
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.a.t()) @ self.b.t() * self.scale


def add_lora(model, r, alpha):
    """Freezes model and puts adapters on every linear layer of its blocks
    (q, k, v, o, gate, up, down); returns the adapters' parameters."""
    for p in model.parameters():
        p.requires_grad_(False)
    for b in model.blocks:
        for name in ("q", "k", "v", "o", "gate", "up", "down"):
            setattr(b, name, LoRALinear(getattr(b, name), r, alpha))
    return [p for p in model.parameters() if p.requires_grad]


def aten_capability():
    """ATen's vectorized-kernel level ("AVX2", "AVX512", ...) as torch
    reports it; torch 1.13 has no torch.backends.cpu.get_cpu_capability."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def openblas_core():
    """The core OpenBLAS chose in this process (Debian's torch calls
    OpenBLAS through libblas.so.3), or "unknown"."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "unknown"


def reset_peak_rss():
    """Restarts the peak resident set size getrusage reports from the
    current size, once the model is built (Linux: "5" in
    /proc/self/clear_refs), so maxrss_kb is the peak of the work and not of
    the setup (a bfloat16 model is built in float32 first); as
    `ragen bench` does for its side."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def maxrss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def train(model, opt, a, steps):
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
    returns = torch.randn(a.batch, a.seq - 1, generator=g)
    rates = []
    for _ in range(steps):
        t0 = time.perf_counter()
        logits, value = model(tokens)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, a.vocab), tokens[:, 1:].reshape(-1))
        if value is not None:
            loss = loss + 0.5 * F.mse_loss(value[:, 1:], returns)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        rates.append(a.batch * a.seq / (time.perf_counter() - t0))
    return rates


@torch.no_grad()
def decode(model, a, batch, prompt, new):
    g = torch.Generator().manual_seed(2)
    tokens = torch.randint(0, a.vocab, (batch, prompt), generator=g)
    hd = a.d // a.heads
    dt = model.embed.weight.dtype
    caches = [(torch.empty(batch, a.kv_heads, prompt + new, hd, dtype=dt), torch.empty(batch, a.kv_heads, prompt + new, hd, dtype=dt))
              for _ in range(a.layers)]
    t0 = time.perf_counter()
    logits, _ = model(tokens, caches, 0, last_only=True)
    nxt = torch.multinomial(logits[:, -1].float().softmax(-1), 1, generator=g)
    for pos in range(prompt, prompt + new - 1):
        logits, _ = model(nxt, caches, pos)
        nxt = torch.multinomial(logits[:, -1].float().softmax(-1), 1, generator=g)
    return [batch * new / (time.perf_counter() - t0)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--kv-heads", type=int, required=True)
    p.add_argument("--inter", type=int, required=True)
    p.add_argument("--vocab", type=int, required=True)
    p.add_argument("--max-pos", type=int, required=True)
    p.add_argument("--eps", type=float, default=1e-6)
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--value-head", type=int, choices=[0, 1], default=1)
    p.add_argument("--lora-rank", type=int, default=0, help="train rank-R adapters on a frozen model (0: train it all)")
    p.add_argument("--lora-alpha", type=float, default=0, help="adapter scale numerator (default 2 × rank)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    a = p.parse_args()
    torch.set_num_threads(a.torch_threads)
    torch.manual_seed(0)
    model = Model(a)
    opt = None
    if a.dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    else:
        params = model.parameters()
        if a.lora_rank > 0:
            params = add_lora(model, a.lora_rank, a.lora_alpha or 2 * a.lora_rank)
        opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    reset_peak_rss()
    print(json.dumps({"ready": True, "params": sum(p.numel() for p in model.parameters()),
                      "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
                      "torch": torch.__version__, "aten_cpu_capability": aten_capability(),
                      "openblas_core": openblas_core()}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "quit":
            break
        if req["op"] == "train" and opt is None:
            print(json.dumps({"error": "train: the model is bfloat16 (--dtype); train in float32"}), flush=True)
            continue
        if req["op"] == "train":
            rates = train(model, opt, a, req["steps"])
        elif req["op"] == "decode":
            rates = decode(model, a, req["batch"], req["prompt"], req["new"])
        else:
            print(json.dumps({"error": "unknown op " + req["op"]}), flush=True)
            continue
        print(json.dumps({"tok_s": rates, "maxrss_kb": maxrss_kb()}), flush=True)


if __name__ == "__main__":
    main()
