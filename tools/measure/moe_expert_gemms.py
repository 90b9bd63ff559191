#!/usr/bin/env python3
"""The per-expert GEMMs of a Mixtral-style step, read from the event trace that
`h100_steps.py --part moe-trace` writes (moe_trace.csv.gz).

transformers' `grouped_mm` experts on fp32 weights run one `aten::mm` per expert, each on the
rows the router sent that expert in this step. For every such `aten::mm` (the bf16 GEMMs of
the rest of the step run cuBLAS's `nvjet` kernels; the experts' fp32 ones do not), one row: the step, the pass (forward on the Python thread, backward on autograd's), the
GEMM's m, n, k (from the op's input shapes [m, k] x [k, n]) and the kernel's microseconds.

    python3 tools/measure/moe_expert_gemms.py trace_tf32.csv.gz:1 trace_ieee.csv.gz:0 \
        > test/data/h100_moe_expert_gemms.csv

Each argument is a trace and, after the colon, whether TF32 was allowed when it was taken (the
`tf32` column).
"""
import collections, csv, gzip, json, sys


def expert_gemms(path):
    rows = list(csv.DictReader(gzip.open(path, "rt")))
    gpu = {r["correlation"]: r for r in rows if r["cat"] == "kernel"}
    launches = collections.defaultdict(list)  # (step, thread) -> runtime calls with a kernel
    for r in rows:
        if r["cat"] in ("cuda_runtime", "cuda_driver") and r["correlation"] in gpu:
            launches[(r["step"], r["thread"])].append(r)
    out = []
    for r in rows:
        if r["cat"] != "cpu_op" or r["name"] != "aten::mm":
            continue
        shapes = json.loads(r["shapes"]) if r["shapes"] else []
        if len(shapes) < 2 or len(shapes[0]) != 2 or len(shapes[1]) != 2:
            continue
        start = float(r["start_us"])
        end = start + float(r["dur_us"])
        kernels = [gpu[c["correlation"]] for c in launches[(r["step"], r["thread"])]
                   if start <= float(c["start_us"]) <= end]
        if not kernels or "nvjet" in kernels[0]["name"]:
            continue  # the bf16 GEMMs of attention, the router and the head run cuBLAS's nvjet
        (m, k), (_, n) = shapes[0], shapes[1]
        out.append(dict(step=r["step"], phase="forward" if r["thread"] == "0" else "backward",
                        m=m, n=n, k=k,
                        us=round(sum(float(g["dur_us"]) for g in kernels), 3)))
    return out


if __name__ == "__main__":
    w = csv.DictWriter(sys.stdout, fieldnames=["tf32", "step", "phase", "m", "n", "k", "us"])
    w.writeheader()
    for arg in sys.argv[1:]:
        path, tf32 = arg.rsplit(":", 1)
        w.writerows(dict(tf32=tf32, **row) for row in expert_gemms(path))
