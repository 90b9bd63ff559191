#!/usr/bin/env python3
"""How PyTorch DDP buckets a model's gradients, read from DDP itself on one GPU.

For each model: wrap it in DistributedDataParallel (one rank, NCCL), run three training steps,
and write
  - every parameter's gradient in the order it became ready in the last step's backward pass
    (post-accumulate-grad hooks), with its bytes, and
  - the bucket sizes DDP reports after it rebuilt its buckets in that order
    (`_get_ddp_logging_data()`), the first bucket first in all-reduce order.

    python3 tools/measure/ddp_buckets.py --out ddp_buckets.csv

Columns: model, what (`gradient` or `bucket`), index, bytes, name (the parameter; empty for a
bucket). Needs torch and transformers (GPT-2 124M and a Llama-3.2-1B-shaped model, fp32
parameters, random weights).
"""
import argparse
import csv
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def models():
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    yield "gpt2-124M", GPT2LMHeadModel(GPT2Config()), 50257
    cfg = LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                      num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                      tie_word_embeddings=True)
    yield "llama-3.2-1B", LlamaForCausalLM(cfg), 128256


def ready_order(model, run_step, steps=3):
    """The parameters of `model` in the order their post-accumulate-grad hooks fired (when DDP's
    hook sees each gradient) in the last of `steps` calls of `run_step` (one training step)."""
    order = []
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda p: order.append(p))
    for _ in range(steps):
        order.clear()
        run_step()
    torch.cuda.synchronize()
    return list(order)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1)
    rows = []
    for name, model, vocab in models():
        model = model.cuda()
        ddp = DDP(model, device_ids=[0])
        names = {id(p): n for n, p in model.named_parameters()}
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
        x = torch.randint(0, vocab, (2, 128), device="cuda")

        def step():
            ddp(input_ids=x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        order = ready_order(model, step)
        for i, p in enumerate(order):
            rows.append(dict(model=name, what="gradient", index=i,
                             bytes=p.numel() * p.element_size(), name=names[id(p)]))
        data = ddp._get_ddp_logging_data()
        keys = {k: v for k, v in data.items() if "bucket" in k}
        print(name, keys, file=sys.stderr)
        sizes = data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes")
        for i, b in enumerate(int(s) for s in str(sizes).split(",") if s.strip()):
            rows.append(dict(model=name, what="bucket", index=i, bytes=b, name=""))
        del ddp, model, opt
        torch.cuda.empty_cache()
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["model", "what", "index", "bytes", "name"])
        w.writeheader()
        w.writerows(rows)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", file=sys.stderr)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
