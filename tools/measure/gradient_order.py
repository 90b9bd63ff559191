#!/usr/bin/env python3
"""The order in which a model's gradients become ready in the backward pass, read on one GPU.

For each model and precision: three training steps, and in the last one every parameter's
post-accumulate-grad hook (the moment DDP's hook would see it) appends the parameter; written in
that order with its bytes. Precisions: fp32, and bf16 through torch.autocast over fp32 parameters
(the sample trace's setting). Models: the nanoGPT-style GPT-2 124M of h100_steps.py (torch.nn
Linear layers with biases, vocabulary 50,304, the sample trace's model) and transformers' GPT-2
124M (Conv1D layers).

    python3 tools/measure/gradient_order.py --out gradient_order.csv

Columns: model, precision, index, bytes, name.
"""
import argparse
import csv
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_buckets import ready_order  # noqa: E402
from h100_steps import GPT  # noqa: E402


def models():
    yield "nanogpt-124M", lambda: GPT(12, 768, 12, 1024), 50304, lambda m, x: m(x, x)
    from transformers import GPT2Config, GPT2LMHeadModel
    yield ("hf-gpt2-124M", lambda: GPT2LMHeadModel(GPT2Config()), 50257,
           lambda m, x: m(input_ids=x, labels=x).loss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = []
    for name, make, vocab, loss_of in models():
        for precision in ("fp32", "bf16-autocast"):
            model = make().cuda()
            names = {id(p): n for n, p in model.named_parameters()}
            opt = torch.optim.SGD(model.parameters(), lr=1e-4)
            x = torch.randint(0, vocab, (2, 256), device="cuda")

            def step():
                with torch.autocast("cuda", torch.bfloat16, enabled=precision != "fp32"):
                    loss = loss_of(model, x)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)

            order = ready_order(model, step)
            for i, p in enumerate(order):
                rows.append(dict(model=name, precision=precision, index=i,
                                 bytes=p.numel() * p.element_size(), name=names[id(p)]))
            print(name, precision, len(order), "gradients", file=sys.stderr)
            del model, opt
            torch.cuda.empty_cache()
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["model", "precision", "index", "bytes", "name"])
        w.writeheader()
        w.writerows(rows)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", file=sys.stderr)


if __name__ == "__main__":
    main()
