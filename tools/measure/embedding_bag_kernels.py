#!/usr/bin/env python3
"""Kernel-only times of nn.EmbeddingBag (issue 37: separate the host from the GPU in Lin et al.'s
embedding model).

For each shape of test/data/h100_embedding_bag.csv (E rows, D columns, L indices per bag, B bags,
uniform or Zipf-like indices drawn as that file's README says), three calls are run under
torch.profiler with CUDA activity, as the shared file timed them:
  fwd          bag(indices, offsets)
  fwdbwd       the forward, then out.sum().backward() into a fresh dense fp32 gradient (E x D)
  fwdbwd_sgd   the same, then SGD(lr=0.01).step() and zero_grad(set_to_none=True)
and the GPU time of the kernels, memsets and copies each call runs (summed, per call, median of
`reps` calls) is written with the number of GPU operations per call, next to the wall time of the
same call between CUDA events (median) on the same machine.

    python3 tools/measure/embedding_bag_kernels.py --out embedding_bag_kernels.csv
"""
import argparse, csv, statistics

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile


def draw(E, n, dist, gen):
    """n indices in [0, E): uniform, or rank r with p ~ r^-a (continuous power law's inverse CDF
    on [1, E + 1)) and ranks permuted over the rows."""
    if dist == "uniform":
        return torch.randint(0, E, (n,), generator=gen)
    a = float(dist[len("zipf"):])
    u = torch.rand(n, generator=gen, dtype=torch.float64)
    top = float(E + 1) ** (1.0 - a)
    x = ((top - 1.0) * u + 1.0) ** (1.0 / (1.0 - a))
    ranks = (x.floor().long() - 1).clamp_(0, E - 1)
    return torch.randperm(E, generator=gen)[ranks]


def gpu_ms_per_call(fn, reps):
    """Sum of the GPU operations' durations of each call (ms), median over calls, and their
    count per call."""
    fn(); torch.cuda.synchronize()
    per_call, counts = [], []
    for _ in range(reps):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        per_call.append(sum(e.device_time_total for e in events) / 1000.0)
        counts.append(len(events))
    return statistics.median(per_call), int(statistics.median(counts))


def wall_ms(fn, reps):
    fn(); torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="test/data/h100_embedding_bag.csv")
    ap.add_argument("--out", default="-")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    shapes = list(csv.DictReader(open(args.shapes)))
    out = open(args.out, "w", newline="", buffering=1) if args.out != "-" else None
    fields = ["rows_E", "dim_D", "pooling_L", "batch", "dist", "unique_rows",
              "fwd_kernel_ms", "fwd_ops", "fwdbwd_kernel_ms", "fwdbwd_ops",
              "fwdbwd_sgd_kernel_ms", "fwdbwd_sgd_ops", "fwd_ms", "fwdbwd_ms", "fwdbwd_sgd_ms"]
    w = csv.DictWriter(out or __import__("sys").stdout, fieldnames=fields)
    w.writeheader()
    gen = torch.Generator().manual_seed(0)
    for s in shapes:
        E, D, L, B = (int(s[k]) for k in ("rows_E", "dim_D", "pooling_L", "batch"))
        bag = nn.EmbeddingBag(E, D, mode="sum").cuda()
        opt = torch.optim.SGD(bag.parameters(), lr=0.01)
        idx = draw(E, B * L, s["dist"], gen).cuda()
        offsets = torch.arange(0, B * L, L, device="cuda")

        def fwd():
            return bag(idx, offsets)

        def fwdbwd():
            bag.weight.grad = None
            bag(idx, offsets).sum().backward()

        def fwdbwd_sgd():
            bag(idx, offsets).sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        row = dict(rows_E=E, dim_D=D, pooling_L=L, batch=B, dist=s["dist"],
                   unique_rows=int(torch.unique(idx).numel()))
        for name, fn in (("fwd", fwd), ("fwdbwd", fwdbwd), ("fwdbwd_sgd", fwdbwd_sgd)):
            row[f"{name}_kernel_ms"], row[f"{name}_ops"] = gpu_ms_per_call(fn, args.reps)
            row[f"{name}_ms"] = wall_ms(fn, args.reps * 3)
        w.writerow(row)
        print(row, flush=True)
        del bag, opt, idx, offsets
        torch.cuda.empty_cache()


if __name__ == "__main__":
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    main()
