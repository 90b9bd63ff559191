#!/usr/bin/env python3
"""Inception-v3 training steps in fp32, as Li et al.'s workers ran it, measured on the GPU at hand.

torchvision's Inception-v3 (no auxiliary head, 299 x 299 inputs, NCHW as tf_cnn_benchmarks uses
on GPUs), SGD with momentum, cross-entropy; fp32 with TF32 off (IEEE arithmetic on the CUDA
cores, as a V100 runs fp32) and, for comparison, with TF32 on; cuDNN's autotuner on (TensorFlow
autotunes every convolution). Median and minimum of up to 8 CUDA-event-timed steps after 3
warm-ups (h100_steps.py's `measure`).

    python3 tools/measure/inception_fp32.py --out inception_fp32.csv

Columns: model, batch, arithmetic (ieee or tf32), step_ms, step_ms_min, steps.
"""
import argparse
import csv
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h100_steps import cleanup, cnn_loss, make_step, measure  # noqa: E402


def main():
    import torchvision
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    rows = []
    for arithmetic in ("ieee", "tf32"):
        torch.backends.cuda.matmul.allow_tf32 = arithmetic == "tf32"
        torch.backends.cudnn.allow_tf32 = arithmetic == "tf32"
        model = torchvision.models.inception_v3(aux_logits=False, init_weights=False).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        for n in (16, 32, 64, 128):
            x = torch.randn(n, 3, 299, 299, device="cuda")
            y = torch.randint(0, 1000, (n,), device="cuda")
            med, lo, _, _, k = measure(make_step(cnn_loss(model), opt, "fp32", x, y), 3, 8, 8.0)
            rows.append(dict(model="inception_v3", batch=n, arithmetic=arithmetic, step_ms=med,
                             step_ms_min=lo, steps=k))
            print(rows[-1], flush=True)
            del x, y
            cleanup()
        del model, opt
        cleanup()
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", file=sys.stderr)


if __name__ == "__main__":
    main()
