#!/usr/bin/python3
"""Do transformers and peft read what ragen writes? (scripts/gpu-check run)

DIR is what `go run ./scripts/peftexport DIR` wrote: base/ (a Hugging Face
Qwen2 directory), adapter/ (LoRA adapters as a PEFT directory), merged/ (the
adapted model merged, a Hugging Face directory) and expected.json (ragen's
logits with the adapters). Loads base + adapter with peft.PeftModel and
merged with transformers, on the CPU in float32, and compares each one's
logits with ragen's: relative error (max |diff| / max |ragen's|) ≤ 1e-4.
Prints a table; exits 1 on a larger error, 2 when a package is missing.
"""
import json
import sys

try:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
except ImportError as e:
    print(f"peft-check: needs torch, transformers and peft: {e}")
    sys.exit(2)

d = sys.argv[1]
exp = json.load(open(f"{d}/expected.json"))
ids = torch.tensor([exp["tokens"]])
want = torch.tensor(exp["logits"], dtype=torch.float32).view(len(exp["tokens"]), exp["vocab_size"])


def logits(m):
    m.eval()
    with torch.no_grad():
        return m(input_ids=ids).logits[0].float()


def rel(got):
    return ((got - want).abs().max() / want.abs().max()).item()


rows = []
base = AutoModelForCausalLM.from_pretrained(f"{d}/base", torch_dtype=torch.float32)
rows.append(("base + adapter (peft.PeftModel)", rel(logits(PeftModel.from_pretrained(base, f"{d}/adapter")))))
rows.append(("merged (transformers)", rel(logits(AutoModelForCausalLM.from_pretrained(f"{d}/merged", torch_dtype=torch.float32)))))
print("| ragen's files loaded by | logits relative error |")
print("|---|---|")
for name, e in rows:
    print(f"| {name} | {e:.2e} |")
bad = [n for n, e in rows if not e <= 1e-4]
if bad:
    print(f"peft-check: {', '.join(bad)}: logits differ from ragen's by more than 1e-4")
    sys.exit(1)
print("peft-check: ok")
