#!/usr/bin/env python3
"""Measure single-GPU training steps (time and memory) in PyTorch eager.

The framework behaviour measured is the one strata's step model documents (docs/calibration.md):
fp32 parameters; bf16 through torch.autocast or fp32 with TF32 allowed; fused AdamW (GPT-2) or SGD
with momentum (CNNs); zero_grad(set_to_none=True); the batch resident on the GPU; dropout 0 in the
GPT-2 model; scaled_dot_product_attention; cross-entropy on fp32 logits; channels-last CNNs.

For each configuration: median step time over timed steps (CUDA events around forward, backward,
optimizer step and zero_grad, synchronised per step), max_memory_allocated during a step (the
peak is reset after the previous step's zero_grad), memory_allocated between steps.

    python3 tools/measure/h100_steps.py --part gpt --models 124m,350m --out steps.csv
    python3 tools/measure/h100_steps.py --part cnn --out cnn.csv
    python3 tools/measure/h100_steps.py --part hf --out hf.csv        # transformers models
    python3 tools/measure/h100_steps.py --part llama --out llama.csv  # Llama-style eager PyTorch
    python3 tools/measure/h100_steps.py --part hf --trace --out-dir traces --out hf.csv
    python3 tools/measure/h100_steps.py --part host-steps --out host.csv  # host cost per launch
    python3 tools/measure/h100_steps.py --part gemm-queued --out queued.csv  # GEMMs as in a step
    python3 tools/measure/h100_steps.py --part moe-trace --out-dir traces --out moe.csv
    python3 tools/measure/h100_steps.py --part gemm-ieee --out gemm_ieee.csv  # fp32, TF32 off

The `hf` and `llama` parts write the columns of test/data/h100_hf_steps.csv (checked by
frameworks::huggingface and a plain eager recipe), plus `tf32`: whether fp32 matmuls (MoE experts
on fp32 weights) may use TF32.
"""
import argparse, csv, gc, math, os, statistics, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True

GPT2 = {  # layers, hidden, heads
    "124m": (12, 768, 12), "350m": (24, 1024, 16), "774m": (36, 1280, 20),
    "1.5b": (48, 1600, 25), "2.7b": (32, 2560, 32),
}


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc, self.fc_proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, s, h))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, h, heads, sequence, vocabulary=50304):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocabulary, h), nn.Embedding(sequence, h)
        self.blocks = nn.ModuleList(Block(h, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, vocabulary, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        self.checkpoint = False

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = checkpoint(blk, x, use_reentrant=False) if self.checkpoint else blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def measure(step, warmup, timed, budget_s):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    between = torch.cuda.memory_allocated()
    times, peaks = [], []
    start = time.time()
    for i in range(timed):
        torch.cuda.reset_peak_memory_stats()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
        peaks.append(torch.cuda.max_memory_allocated())
        if i >= 2 and time.time() - start > budget_s:
            break
    return statistics.median(times), min(times), max(peaks), between, len(times)


def cleanup():
    gc.collect()
    torch.cuda.empty_cache()


def make_step(loss_fn, opt, precision, *batch):
    """One training step: the loss under bf16 autocast (or in fp32), backward, the optimizer step
    and zero_grad(set_to_none=True)."""
    def step():
        with torch.autocast("cuda", torch.bfloat16, enabled=precision == "bf16"):
            loss = loss_fn(*batch)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def cnn_loss(net):
    return lambda x, y: F.cross_entropy(net(x).float(), y)


def run_gpt(args, w):
    for name in args.models.split(","):
        layers, h, heads = GPT2[name]
        for precision in ("bf16", "fp32"):
            for seq in (512, 1024, 2048):
                model = GPT(layers, h, heads, seq).cuda()
                params = sum(p.numel() for p in model.parameters())
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
                for ckpt in (False, True):
                    model.checkpoint = ckpt
                    for mb in (1, 4, 8, 16):
                        idx = torch.randint(0, 50304, (mb, seq), device="cuda")
                        tgt = torch.randint(0, 50304, (mb, seq), device="cuda")
                        step = make_step(model, opt, precision, idx, tgt)
                        row = dict(model="gpt2", size=name, layers=layers, hidden=h, heads=heads,
                                   sequence=seq, batch=mb, precision=precision,
                                   checkpoint=int(ckpt), parameters=params)
                        try:
                            med, lo, peak, between, n = measure(step, 2, 5, 6.0)
                            row.update(step_ms=med, step_ms_min=lo, peak_bytes=peak,
                                       between_bytes=between, steps=n, oom=0)
                        except torch.OutOfMemoryError:
                            opt.zero_grad(set_to_none=True)
                            row.update(step_ms="", step_ms_min="", peak_bytes="",
                                       between_bytes="", steps=0, oom=1)
                        del idx, tgt
                        cleanup()
                        w.writerow(row)
                        print(row, flush=True)
                        if row["oom"]:
                            break  # larger micro-batches do not fit either
                del model, opt
                cleanup()


def run_cnn(args, w):
    import torchvision
    for name in ("resnet50", "vgg16"):
        for precision in ("bf16", "fp32"):
            model = getattr(torchvision.models, name)().cuda().to(memory_format=torch.channels_last)
            params = sum(p.numel() for p in model.parameters())
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            for n in (32, 64, 128, 256):
                x = torch.randn(n, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
                y = torch.randint(0, 1000, (n,), device="cuda")
                step = make_step(cnn_loss(model), opt, precision, x, y)
                row = dict(model=name, size="", layers="", hidden="", heads="", sequence="",
                           batch=n, precision=precision, checkpoint=0, parameters=params)
                try:
                    med, lo, peak, between, k = measure(step, 3, 8, 8.0)
                    row.update(step_ms=med, step_ms_min=lo, peak_bytes=peak, between_bytes=between,
                               steps=k, oom=0)
                except torch.OutOfMemoryError:
                    row.update(step_ms="", step_ms_min="", peak_bytes="", between_bytes="",
                               steps=0, oom=1)
                del x, y
                cleanup()
                w.writerow(row)
                print(row, flush=True)
            del model, opt
            cleanup()


def run_profile(args):
    """Kernel times of a few steps, grouped by kernel, for explaining gaps."""
    import torchvision
    cases = [("gpt2-350m-s1024-b8-bf16", "350m", 1024, 8, "bf16"),
             ("gpt2-350m-s1024-b8-fp32", "350m", 1024, 8, "fp32"),
             ("gpt2-124m-s512-b1-bf16", "124m", 512, 1, "bf16")]
    for label, name, seq, mb, precision in cases:
        layers, h, heads = GPT2[name]
        model = GPT(layers, h, heads, seq).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        idx = torch.randint(0, 50304, (mb, seq), device="cuda")
        profile_steps(label, make_step(model, opt, precision, idx, idx), args.out_dir)
        del model, opt
        cleanup()
    for name, precision in (("resnet50", "bf16"), ("vgg16", "bf16")):
        model = getattr(torchvision.models, name)().cuda().to(memory_format=torch.channels_last)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(128, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (128,), device="cuda")
        profile_steps(f"{name}-b128-{precision}", make_step(cnn_loss(model), opt, precision, x, y),
                      args.out_dir)
        del model, opt
        cleanup()


def profile_steps(label, step, out_dir):
    from torch.profiler import profile, ProfilerActivity
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if t > 0:
            rows.append((t / 2, e.count // 2, e.key))
    rows.sort(reverse=True)
    with open(os.path.join(out_dir, f"profile_{label}.txt"), "w") as f:
        total = sum(r[0] for r in rows)
        f.write(f"# {label}: kernel time per step {total / 1000:.3f} ms\n")
        for t, n, key in rows:
            f.write(f"{t / 1000:10.4f} ms {n:6d}  {key[:150]}\n")
    print(label, f"kernel ms/step {sum(r[0] for r in rows) / 1000:.2f}", flush=True)


def run_host_profile(args):
    """Where the time of small, launch-bound steps goes: CPU-side operators and GPU kernels."""
    from torch.profiler import profile, ProfilerActivity
    for name, seq, mb, ckpt in (("774m", 512, 1, False), ("774m", 512, 1, True),
                                ("124m", 512, 1, False), ("124m", 512, 1, True)):
        layers, h, heads = GPT2[name]
        model = GPT(layers, h, heads, seq).cuda()
        model.checkpoint = ckpt
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        idx = torch.randint(0, 50304, (mb, seq), device="cuda")
        step = make_step(model, opt, "bf16", idx, idx)
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", torch.bfloat16):
            loss = model(idx, idx)
        t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
        loss.backward()
        t3 = time.perf_counter(); torch.cuda.synchronize(); t4 = time.perf_counter()
        opt.step()
        t5 = time.perf_counter(); torch.cuda.synchronize(); t6 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        t7 = time.perf_counter()
        label = f"{name}-s{seq}-b{mb}-ckpt{int(ckpt)}"
        print(label, "host ms: forward %.2f (+sync %.2f) backward %.2f (+sync %.2f) "
              "optimizer %.2f (+sync %.2f) zero_grad %.2f" % tuple(
                  1e3 * x for x in (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6)),
              flush=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        with open(os.path.join(args.out_dir, f"host_{label}.txt"), "w") as f:
            f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40,
                                              max_name_column_width=60))
        del model, opt
        cleanup()


def run_attention(args, w):
    """Causal scaled_dot_product_attention in fp32 (the memory-efficient kernel) at the shapes of
    h100_attention.csv, in its format."""
    with open(args.attention_shapes) as f:
        shapes = [(int(r["b"]), int(r["heads"]), int(r["s"]), int(r["d"])) for r in csv.DictReader(f)]
    shapes += [(8, 16, 1024, 64), (4, 25, 2048, 64), (1, 32, 2048, 80), (16, 12, 512, 64)]
    for b, h, s, d in shapes:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", requires_grad=True) for _ in range(3))
        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        def fwdbwd():
            fwd().sum().backward()
        out = {}
        for label, fn in (("fwd", fwd), ("fwdbwd", fwdbwd)):
            for _ in range(3):
                fn()
            times = []
            for _ in range(10):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(); fn(); e1.record()
                torch.cuda.synchronize()
                times.append(e0.elapsed_time(e1))
            out[label] = statistics.median(times)
        flops = 2 * b * h * s * s * d
        w.writerow(dict(b=b, heads=h, s=s, d=d, fwd_ms=out["fwd"], fwdbwd_ms=out["fwdbwd"],
                        fwd_tflops=flops / out["fwd"] / 1e9,
                        fwdbwd_tflops=3.5 * flops / out["fwdbwd"] / 1e9))
        del q, k, v
        cleanup()


def run_gemm(args, w):
    """Re-measure the fp32 (TF32) shapes of h100_gemm.csv over rotated buffers. `--part
    gemm-ieee`: the same fp32 shapes with TF32 off (PyTorch's default for matmul), written as
    dtype `float32-ieee`."""
    ieee = args.part == "gemm-ieee"
    torch.backends.cuda.matmul.allow_tf32 = not ieee
    shapes = []
    with open(args.gemm_shapes) as f:
        for r in csv.DictReader(f):
            if r["dtype"] == "float32":
                shapes.append((int(r["M"]), int(r["N"]), int(r["K"])))
    kinds = (((torch.float32, "float32-ieee"),) if ieee else
             ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")))
    for dt, name in kinds:
        for m, n, k in shapes:
            sets = max(2, min(8, int(2e9 // ((m * k + k * n + m * n) * 4)) ))
            bufs = [(torch.randn(m, k, device="cuda", dtype=dt), torch.randn(k, n, device="cuda", dtype=dt))
                    for _ in range(sets)]
            for a, b in bufs[:2]:
                torch.matmul(a, b)
            times = []
            for i in range(30):
                a, b = bufs[i % sets]
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(); torch.matmul(a, b); e1.record()
                torch.cuda.synchronize()
                times.append(e0.elapsed_time(e1))
            med = statistics.median(times)
            w.writerow(dict(dtype=name, M=m, N=n, K=k, ms=med, ms_min=min(times), ms_max=max(times),
                            tflops=2 * m * n * k / med / 1e9))
            del bufs
        cleanup()


def queued_times(a, b, n=40):
    """Milliseconds of n products a @ b queued back to back (an event after each), after 5."""
    for _ in range(5):
        torch.matmul(a, b)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for i in range(n):
        torch.matmul(a, b)
        ev[i + 1].record()
    torch.cuda.synchronize()
    return [ev[i].elapsed_time(ev[i + 1]) for i in range(n)]


def run_gemm_queued(args, w):
    """The shapes of h100_gemm.csv (both types) queued back to back as inside a training step: 40
    products of the same operands with an event after each, timed between neighbouring events
    (median), after 5 warm-up products. The isolated timings (`--part gemm`) include the launch
    gap after the first event."""
    with open(args.gemm_shapes) as f:
        rows = [(r["dtype"], int(r["M"]), int(r["N"]), int(r["K"])) for r in csv.DictReader(f)]
    for name, m, n, k in rows:
        dt = torch.float32 if name == "float32" else torch.bfloat16
        a = torch.randn(m, k, device="cuda", dtype=dt)
        b = torch.randn(k, n, device="cuda", dtype=dt)
        t = queued_times(a, b)
        med = statistics.median(t)
        w.writerow(dict(dtype=name, M=m, N=n, K=k, ms=med, ms_min=min(t), ms_max=max(t),
                        tflops=2 * m * n * k / med / 1e9))
        del a, b
    cleanup()


def run_gemm_data(args, w):
    """Whether a bf16 GEMM's speed depends on its data: a few training shapes with operands drawn
    as N(0, 1) x N(0, 1), N(0, 1) x N(0, 0.02) (activations times freshly initialised weights, as
    HF and Megatron initialise), N(0, 0.02) x N(0, 0.02) and zeros; timed one at a time
    (synchronised, as `--part gemm`) and queued back to back (as inside a step)."""
    shapes = [(4096, 8192, 2048), (4096, 2048, 2048), (8192, 4864, 896), (4096, 128256, 2048),
              (16384, 3072, 1024), (8192, 8192, 8192), (1024, 2304, 768)]
    dists = {"randn": (1.0, 1.0), "init": (1.0, 0.02), "small": (0.02, 0.02), "zeros": (0.0, 0.0)}
    for m, n, k in shapes:
        for dname, (sa, sb) in dists.items():
            a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16) * sa
            b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) * sb
            for _ in range(5):
                torch.matmul(a, b)
            torch.cuda.synchronize()
            iso = []
            for _ in range(20):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record(); torch.matmul(a, b); e1.record()
                torch.cuda.synchronize()
                iso.append(e0.elapsed_time(e1))
            for mode, t in (("isolated", iso), ("queued", queued_times(a, b))):
                med = statistics.median(t)
                w.writerow(dict(M=m, N=n, K=k, data=dname, mode=mode, ms=round(med, 5),
                                tflops=round(2 * m * n * k / med / 1e9, 1)))
            del a, b
        cleanup()


# ---- Hugging Face transformers and Llama-style eager models (test/data/h100_hf_steps.csv) -----
HF_FIELDS = ["model", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "tied", "experts",
             "top_k", "seq", "micro_batch", "ckpt", "precision", "optimizer", "attn",
             "transformers", "params", "step_ms", "step_ms_min", "step_ms_max", "static_bytes",
             "peak_bytes", "reserved_bytes", "oom", "tf32"]
# name: (config class, layers, hidden, heads, kv heads, ffn, vocab, tied, experts, top-k, seq, b)
HF_MODELS = {
    "hf-gpt2-124M": ("GPT2Config", 12, 768, 12, 12, 3072, 50257, 1, 0, 0, 1024, 8),
    "hf-llama3.2-1B": ("LlamaConfig", 16, 2048, 32, 8, 8192, 128256, 1, 0, 0, 2048, 2),
    "hf-tinyllama-1.1B": ("LlamaConfig", 22, 2048, 32, 4, 5632, 32000, 0, 0, 0, 2048, 4),
    "hf-qwen2.5-0.5B": ("Qwen2Config", 24, 896, 14, 2, 4864, 151936, 1, 0, 0, 2048, 4),
    "hf-mixtral-mini": ("MixtralConfig", 8, 1024, 16, 8, 3584, 32000, 0, 8, 2, 2048, 4),
}


def hf_config(spec):
    import transformers
    cls, l, h, a, kv, f, v, tied, e, k, seq, _ = spec
    if cls == "GPT2Config":
        return transformers.GPT2Config(n_layer=l, n_embd=h, n_head=a, vocab_size=v, n_positions=seq,
                                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    kw = dict(num_hidden_layers=l, hidden_size=h, num_attention_heads=a, num_key_value_heads=kv,
              intermediate_size=f, vocab_size=v, tie_word_embeddings=bool(tied),
              max_position_embeddings=max(seq, 4096))
    if cls == "MixtralConfig":
        kw.update(num_local_experts=e, num_experts_per_tok=k, output_router_logits=False)
    return getattr(transformers, cls)(**kw)


def hf_row(name, spec, model, ckpt, opt_step, version):
    _, l, h, a, kv, f, v, tied, e, k, seq, b = spec
    row = dict(model=name, layers=l, hidden=h, heads=a, kv_heads=kv, ffn=f, vocab=v, tied=tied,
               experts=e, top_k=k, seq=seq, micro_batch=b, ckpt=int(ckpt),
               precision="bf16-autocast-fp32-params", optimizer="adamw-fused", attn="sdpa",
               transformers=version, params=sum(p.numel() for p in model.parameters()),
               tf32=int(torch.backends.cuda.matmul.allow_tf32))
    try:
        med, lo, peak, between, n = measure(opt_step, 2, 8, 20.0)
        row.update(step_ms=med, step_ms_min=lo, step_ms_max="", static_bytes=between,
                   peak_bytes=peak, reserved_bytes=torch.cuda.max_memory_reserved(), oom=0)
    except torch.OutOfMemoryError:
        row.update(step_ms="", step_ms_min="", step_ms_max="", static_bytes="", peak_bytes="",
                   reserved_bytes="", oom=1)
    return row


def hf_training_step(spec):
    """A transformers causal LM built from `spec`'s config with fp32 parameters and sdpa, fused
    AdamW, random ids of (micro-batch, sequence): the model, the optimizer, the ids and one
    training step under bf16 autocast."""
    import transformers
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(
            hf_config(spec), attn_implementation="sdpa", dtype=torch.float32)
    model = model.cuda()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ids = torch.randint(0, spec[6], (spec[11], spec[10]), device="cuda")
    step = make_step(lambda x: model(input_ids=x, labels=x).loss, opt, "bf16", ids)
    return model, opt, ids, step


def run_hf(args, w):
    """`AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=float32)`, the
    loss under bf16 autocast, fused AdamW, zero_grad(set_to_none=True); without and then with
    `gradient_checkpointing_enable(use_reentrant=False)` on the same model. With `--trace`, also
    each model's GPU operations of two steps without checkpointing (`trace_steps`)."""
    import transformers
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    for name, spec in HF_MODELS.items():
        model, opt, ids, step = hf_training_step(spec)
        for ckpt in (False, True):
            if ckpt:
                model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs={"use_reentrant": False})
            row = hf_row(name, spec, model, ckpt, step, transformers.__version__)
            w.writerow(row)
            print(row, flush=True)
            if args.trace and not ckpt and not row["oom"]:
                trace_steps(name, step, args.out_dir, row)
        del model, opt, ids, step
        cleanup()


def trace_steps(label, step, out_dir, row=None, steps=2):
    """The GPU operations of `steps` steps under torch.profiler (CPU and CUDA activity), one CSV
    row each: the step, its start and duration on the GPU and the start and duration of the host
    call that launched it (microseconds from the step's host start), its category and name; and a
    line per step in trace_summary.txt (host span, GPU busy time, GPU span)."""
    import json, tempfile
    from torch.profiler import profile, ProfilerActivity, record_function
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            with record_function(f"strata_step_{i}"):
                step()
                torch.cuda.synchronize()
    path = os.path.join(tempfile.gettempdir(), f"trace_{label}.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    launches, gpu, marks = {}, [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, a = e.get("cat", ""), e.get("args", {}) or {}
        if cat in ("cuda_runtime", "cuda_driver") and "correlation" in a:
            launches[a["correlation"]] = (float(e["ts"]), float(e.get("dur", 0)))
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            gpu.append(e)
        elif cat == "user_annotation" and e.get("name", "").startswith("strata_step_"):
            marks.append((float(e["ts"]), float(e["dur"]), int(e["name"].rsplit("_", 1)[1])))
    marks.sort()
    out = os.path.join(out_dir, f"trace_{label}.csv")
    with open(out, "w", newline="") as f, \
            open(os.path.join(out_dir, "trace_summary.txt"), "a") as summary:
        cw = csv.writer(f)
        cw.writerow(["step", "gpu_us", "dur_us", "launch_us", "launch_dur_us", "cat", "name"])
        for t0, span, i in marks:
            rows = []
            for e in gpu:
                l0, ld = launches.get((e.get("args", {}) or {}).get("correlation"), (None, 0))
                ts = float(e["ts"])
                anchor = l0 if l0 is not None else ts
                if t0 <= anchor <= t0 + span:
                    rows.append((ts - t0, float(e.get("dur", 0)),
                                 "" if l0 is None else round(l0 - t0, 3), round(ld, 3),
                                 e.get("cat", ""), e.get("name", "")[:200]))
            rows.sort()
            for r in rows:
                cw.writerow([i, round(r[0], 3), round(r[1], 3)] + list(r[2:]))
            busy = sum(r[1] for r in rows)
            gspan = (max(r[0] + r[1] for r in rows) - min(r[0] for r in rows)) if rows else 0
            summary.write(f"{label} step {i}: host span {span / 1e3:.3f} ms, GPU ops {len(rows)}, "
                          f"GPU busy {busy / 1e3:.3f} ms, GPU span {gspan / 1e3:.3f} ms"
                          + (f", unprofiled step {row['step_ms']:.3f} ms" if row and
                             row.get("step_ms") != "" else "") + "\n")
    os.remove(path)
    print(label, "traced", flush=True)


def run_host_steps(args, w):
    """Host cost per launched kernel: each model's step at sequence 128, micro-batch 1, where
    every kernel is short and the step takes the time the host needs to issue it. Per model:
    the median step (CUDA events, synchronised), the median host time of `step()` alone
    (perf_counter, no synchronisation), and one profiled step's launches (kernels, memsets,
    copies) and their summed GPU time."""
    import transformers
    from torch.profiler import profile, ProfilerActivity
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    seq, b = 128, 1

    def models():
        layers, h, heads = GPT2["124m"]
        yield "nanogpt-124M", lambda: GPT(layers, h, heads, seq), 50304, "nanogpt"
        for name, spec in HF_MODELS.items():
            spec = spec[:10] + (seq, b)
            yield name, (lambda spec=spec: transformers.AutoModelForCausalLM.from_config(
                hf_config(spec), attn_implementation="sdpa", dtype=torch.float32)), spec[6], "hf"
            if spec[0] in ("LlamaConfig", "Qwen2Config"):
                _, l, h2, a, kv, f, v, tied, e, k, _, _ = spec
                def llama(l=l, h2=h2, a=a, kv=kv, f=f, v=v, tied=tied):
                    model = Llama(l, h2, a, kv, f, v, seq)
                    if tied:
                        model.head.weight = model.emb.weight
                    return model
                yield name.replace("hf-", "eager-"), llama, v, "eager"

    for name, build, vocab, kind in models():
        if args.only and name not in args.only.split(","):
            continue
        with torch.device("cuda"):
            model = build()
        model = model.cuda()
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        ids = torch.randint(0, vocab, (b, seq), device="cuda")
        if kind == "hf":
            step = make_step(lambda x: model(input_ids=x, labels=x).loss, opt, "bf16", ids)
        elif kind == "eager":
            step = make_step(model, opt, "bf16", ids)
        else:
            step = make_step(model, opt, "bf16", ids, ids)
        med, lo, _, _, n = measure(step, 3, 30, 10.0)
        hosts = []
        for _ in range(10):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step()
            hosts.append(1e3 * (time.perf_counter() - t0))
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        launches, busy = 0, 0.0
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                launches += 1
                busy += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
        row = dict(model=name, seq=seq, micro_batch=b, step_ms=round(med, 3),
                   host_ms=round(statistics.median(hosts), 3), launches=launches,
                   kernel_ms=round(busy / 1e3, 3), tf32=int(bool(args.tf32)))
        w.writerow(row)
        print(row, flush=True)
        del model, opt, ids, step
        cleanup()


def run_moe_trace(args, w):
    """A timestamped trace of the Mixtral-style MoE step (`hf-mixtral-mini` as in `run_hf`, no
    checkpointing): its unprofiled row goes to `w`, then two profiled steps (CPU ops with their
    input shapes, CUDA runtime calls, GPU operations) to `moe_trace.csv.gz` in --out-dir, one row
    per event: the step, the category, the host thread (0: the Python thread, 1: autograd's),
    start and duration in microseconds from the step's host start (GPU operations on the same
    clock), the CUDA correlation id, the name and the input shapes. Forward hooks mark each
    decoder layer's attention and MoE block (`fwd_attn_<i>`, `fwd_moe_<i>`)."""
    import gzip, json, tempfile, transformers
    from torch.profiler import profile, ProfilerActivity, record_function
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    name, spec = "hf-mixtral-mini", HF_MODELS["hf-mixtral-mini"]
    model, opt, ids, step = hf_training_step(spec)
    row = hf_row(name, spec, model, False, step, transformers.__version__)
    w.writerow(row)
    print(row, flush=True)
    open_ranges = []

    def enter(tag):
        def hook(module, inputs):
            r = record_function(tag)
            r.__enter__()
            open_ranges.append(r)
        return hook

    def leave(module, inputs, output):
        open_ranges.pop().__exit__(None, None, None)

    for i, layer in enumerate(model.model.layers):
        moe = getattr(layer, "mlp", None) or getattr(layer, "block_sparse_moe")
        for tag, mod in ((f"fwd_attn_{i}", layer.self_attn), (f"fwd_moe_{i}", moe)):
            mod.register_forward_pre_hook(enter(tag))
            mod.register_forward_hook(leave)
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True) as prof:
        for i in range(2):
            with record_function(f"strata_step_{i}"):
                step()
                torch.cuda.synchronize()
    path = os.path.join(tempfile.gettempdir(), "trace_moe.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    events = [e for e in (trace["traceEvents"] if isinstance(trace, dict) else trace)
              if e.get("ph") == "X"]
    marks = sorted((float(e["ts"]), float(e["dur"]), int(e["name"].rsplit("_", 1)[1]))
                   for e in events if e.get("cat") == "user_annotation"
                   and e.get("name", "").startswith("strata_step_"))
    launch = {}
    for e in events:
        a = e.get("args", {}) or {}
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in a:
            launch[a["correlation"]] = float(e["ts"])
    threads = {}
    for e in sorted(events, key=lambda e: float(e["ts"])):
        if e.get("cat") == "cpu_op" and e.get("pid") != "Spans":
            threads.setdefault(e.get("tid"), len(threads))
    with gzip.open(os.path.join(args.out_dir, "moe_trace.csv.gz"), "wt", newline="") as f:
        cw = csv.writer(f)
        cw.writerow(["step", "cat", "thread", "start_us", "dur_us", "correlation", "name",
                     "shapes"])
        for t0, span, i in marks:
            rows = []
            for e in events:
                cat, a = e.get("cat", ""), e.get("args", {}) or {}
                gpu = cat in ("kernel", "gpu_memcpy", "gpu_memset")
                anchor = launch.get(a.get("correlation"), float(e["ts"])) if gpu else float(e["ts"])
                if not t0 <= anchor <= t0 + span:
                    continue
                rows.append((float(e["ts"]) - t0, cat,
                             "" if gpu else threads.get(e.get("tid"), e.get("tid")),
                             float(e.get("dur", 0)), a.get("correlation", ""),
                             e.get("name", "")[:160],
                             json.dumps(a.get("Input Dims", ""), separators=(",", ":"))[:200]
                             if cat == "cpu_op" else ""))
            rows.sort(key=lambda r: r[0])
            for r in rows:
                cw.writerow([i, r[1], r[2], round(r[0], 3), round(r[3], 3), r[4], r[5], r[6]])
            print(f"moe trace step {i}: host span {span / 1e3:.3f} ms, {len(rows)} events",
                  flush=True)
    os.remove(path)


class LlamaBlock(nn.Module):
    """A Llama-style block written plainly: RMSNorm, RoPE (rotate-half), GQA through sdpa's
    enable_gqa, SwiGLU, no biases."""

    def __init__(self, h, heads, kv, f):
        super().__init__()
        self.heads, self.kv, self.d = heads, kv, h // heads
        self.n1, self.n2 = nn.RMSNorm(h), nn.RMSNorm(h)
        self.q, self.k = nn.Linear(h, h, bias=False), nn.Linear(h, kv * self.d, bias=False)
        self.v, self.o = nn.Linear(h, kv * self.d, bias=False), nn.Linear(h, h, bias=False)
        self.gate, self.up = nn.Linear(h, f, bias=False), nn.Linear(h, f, bias=False)
        self.down = nn.Linear(f, h, bias=False)

    @staticmethod
    def rope(x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        y = self.n1(x)
        q = self.q(y).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v(y).view(b, s, self.kv, self.d).transpose(1, 2)
        q, k = self.rope(q, cos, sin).to(v.dtype), self.rope(k, cos, sin).to(v.dtype)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, s, h))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Llama(nn.Module):
    def __init__(self, layers, h, heads, kv, f, vocabulary, sequence):
        super().__init__()
        self.emb = nn.Embedding(vocabulary, h)
        self.blocks = nn.ModuleList(LlamaBlock(h, heads, kv, f) for _ in range(layers))
        self.norm, self.head = nn.RMSNorm(h), nn.Linear(h, vocabulary, bias=False)
        d = h // heads
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        ang = torch.outer(torch.arange(sequence).float(), inv)
        self.register_buffer("cos", torch.cat((ang, ang), -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((ang, ang), -1).sin(), persistent=False)
        self.checkpoint = False

    def forward(self, idx):
        x = self.emb(idx)
        s = idx.shape[1]
        for blk in self.blocks:
            args = (x, self.cos[:s], self.sin[:s])
            x = checkpoint(blk, *args, use_reentrant=False) if self.checkpoint else blk(*args)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1))[:-1], idx.view(-1)[1:])


def run_llama(args, w):
    """The Llama-family rows of HF_MODELS as plain eager PyTorch (no transformers), without and
    then with checkpointing on the same model."""
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    for name, spec in HF_MODELS.items():
        _, l, h, a, kv, f, v, tied, e, k, seq, b = spec
        if spec[0] not in ("LlamaConfig", "Qwen2Config"):
            continue
        with torch.device("cuda"):
            model = Llama(l, h, a, kv, f, v, seq)
        if tied:
            model.head.weight = model.emb.weight
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        ids = torch.randint(0, v, (b, seq), device="cuda")
        step = make_step(model, opt, "bf16", ids)
        for ckpt in (False, True):
            model.checkpoint = ckpt
            row = hf_row(name.replace("hf-", "eager-"), spec, model, ckpt, step, "")
            row["transformers"] = ""
            w.writerow(row)
            print(row, flush=True)
            if args.trace and not ckpt and not row["oom"]:
                trace_steps(name.replace("hf-", "eager-"), step, args.out_dir, row)
        del model, opt, ids, step
        cleanup()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", required=True, choices=["gpt", "cnn", "profile", "cnn-profile", "host", "gemm", "attention", "hf", "llama", "host-steps", "gemm-data", "gemm-queued", "moe-trace", "gemm-ieee"])
    ap.add_argument("--tf32", type=int, default=0,
                    help="hf/llama: allow TF32 for fp32 matmuls (PyTorch's default: 0)")
    ap.add_argument("--models", default="124m,350m,774m,1.5b,2.7b")
    ap.add_argument("--only", default="",
                    help="host-steps: the models to run, by name (default: all)")
    ap.add_argument("--out", default="-")
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--trace", action="store_true",
                    help="hf/llama: also write each model's GPU operations of two steps "
                         "(trace_<model>.csv, trace_summary.txt in --out-dir)")
    ap.add_argument("--gemm-shapes", default="test/data/h100_gemm.csv")
    ap.add_argument("--attention-shapes", default="test/data/h100_attention.csv")
    args = ap.parse_args()
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    if args.part == "cnn-profile":
        import torchvision
        for name in ("resnet50", "vgg16"):
            model = getattr(torchvision.models, name)().cuda().to(memory_format=torch.channels_last)
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            x = torch.randn(128, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
            y = torch.randint(0, 1000, (128,), device="cuda")
            profile_steps(f"{name}-b128-fp32", make_step(cnn_loss(model), opt, "fp32", x, y),
                          args.out_dir)
            del model, opt
            cleanup()
        sys.exit(0)
    if args.part in ("profile", "host"):
        (run_profile if args.part == "profile" else run_host_profile)(args)
        sys.exit(0)
    fields = (HF_FIELDS if args.part in ("hf", "llama", "moe-trace") else
              ["model", "seq", "micro_batch", "step_ms", "host_ms", "launches", "kernel_ms", "tf32"]
              if args.part == "host-steps" else
              ["M", "N", "K", "data", "mode", "ms", "tflops"] if args.part == "gemm-data" else
              ["dtype", "M", "N", "K", "ms", "ms_min", "ms_max", "tflops"]
              if args.part in ("gemm", "gemm-queued", "gemm-ieee") else
              ["b", "heads", "s", "d", "fwd_ms", "fwdbwd_ms", "fwd_tflops", "fwdbwd_tflops"]
              if args.part == "attention" else
              ["model", "size", "layers", "hidden", "heads", "sequence", "batch", "precision",
               "checkpoint", "parameters", "step_ms", "step_ms_min", "peak_bytes", "between_bytes",
               "steps", "oom"])
    f = sys.stdout if args.out == "-" else open(args.out, "w", newline="", buffering=1)
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    {"gpt": run_gpt, "cnn": run_cnn, "gemm": run_gemm, "gemm-ieee": run_gemm, "attention": run_attention,
     "hf": run_hf, "llama": run_llama, "moe-trace": run_moe_trace, "host-steps": run_host_steps,
     "gemm-data": run_gemm_data, "gemm-queued": run_gemm_queued}[args.part](args, w)
    f.flush()
