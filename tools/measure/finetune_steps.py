#!/usr/bin/env python3
"""Measure LoRA and QLoRA training steps of Hugging Face models (issue 36): peak memory and step
time, bf16 and NF4 bases, with and without gradient checkpointing.

The setup is the one PEFT's and transformers' documentation teach, on random weights (the machine
has no network, and neither time nor memory depends on the values):
- the model built from a shipped config (tools/hf_configs) with sdpa attention;
- bf16 base: the model in bf16 (`dtype=torch.bfloat16`); NF4 base: the bf16 model saved and loaded
  again with `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
  bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)`, then
  `prepare_model_for_kbit_training` (which upcasts the embedding, norms and head to fp32);
- `get_peft_model(LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear"))`
  (adapters in fp32, PEFT's default);
- checkpointing: `gradient_checkpointing_enable(use_reentrant=False)` (what the Trainer does);
- each step: the loss of `model(input_ids=ids, labels=ids)` under bf16 autocast (the Trainer's
  `bf16=True`), backward, fused AdamW over the adapters, zero_grad(set_to_none=True).
For each row: median step time (CUDA events), max_memory_allocated over the timed steps,
memory_allocated between steps, max_memory_reserved; then one profiled step: the GPU operations'
summed time (kernel_ms) and count (launches).

    python3 tools/measure/finetune_steps.py --out finetune.csv [--bases bf16,nf4]
"""
import argparse, csv, json, os, sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from h100_steps import cleanup, measure  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default

MODELS = {  # shipped config, micro-batch, sequence
    "qwen2.5-0.5B": ("Qwen--Qwen2.5-0.5B.json", 4, 2048),
    "llama3.2-1B": ("meta-llama--Llama-3.2-1B.json", 2, 2048),
}
FIELDS = ["model", "hf_id", "base", "ckpt", "micro_batch", "seq", "rank", "targets", "params",
          "trainable", "step_ms", "step_ms_min", "static_bytes", "peak_bytes", "reserved_bytes",
          "oom", "kernel_ms", "launches", "transformers", "peft", "bitsandbytes", "torch", "device"]


def config(file):
    import transformers
    d = json.load(open(os.path.join(os.path.dirname(__file__), "..", "hf_configs", file)))
    return d["_name_or_path"], transformers.AutoConfig.for_model(**{
        k: v for k, v in d.items() if k not in ("_name_or_path", "architectures", "torch_dtype")})


def load(name, base, ckpt, tmp):
    import transformers
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    hf_id, cfg = config(MODELS[name][0])
    if base == "bf16":
        with torch.device("cuda"):
            model = transformers.AutoModelForCausalLM.from_config(
                cfg, attn_implementation="sdpa", dtype=torch.bfloat16)
        if ckpt:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        path = os.path.join(tmp, name)
        if not os.path.isdir(path):
            with torch.device("cuda"):
                full = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
            full.save_pretrained(path)
            del full
            cleanup()
        q = transformers.BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            path, quantization_config=q, dtype=torch.bfloat16, attn_implementation="sdpa",
            device_map={"": 0})
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=ckpt,
            gradient_checkpointing_kwargs={"use_reentrant": False})
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                                             target_modules="all-linear", task_type="CAUSAL_LM"))
    model.train()
    return hf_id, model


def gpu_work(step, summary=None):
    """The GPU operations of one more step under torch.profiler: their summed durations (ms) and
    count. step_ms well above kernel_ms means the GPU waited for the host. With `summary` (a
    file), also the step's operators and kernels by GPU time and by host time."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if summary else [])
    with profile(activities=acts) as prof:
        step()
        torch.cuda.synchronize()
    ops = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if summary:
        avg = prof.key_averages()
        with open(summary, "w") as f:
            f.write(avg.table(sort_by="self_device_time_total", row_limit=45, max_name_column_width=70))
            f.write(avg.table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=70))
    return dict(kernel_ms=sum(e.device_time_total for e in ops) / 1000.0, launches=len(ops))


def run(name, base, ckpt, tmp, versions, summary=None):
    _, b, s = MODELS[name]
    hf_id, model = load(name, base, ckpt, tmp)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
    ids = torch.randint(0, model.config.vocab_size, (b, s), device="cuda")

    def step():
        with torch.autocast("cuda", torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    row = dict(model=name, hf_id=hf_id, base=base, ckpt=int(ckpt), micro_batch=b, seq=s, rank=16,
               targets="all-linear", params=sum(p.numel() for p in model.parameters()),
               trainable=sum(p.numel() for p in params), **versions)
    try:
        torch.cuda.reset_peak_memory_stats()
        med, lo, peak, between, _ = measure(step, 2, 8, 20.0)
        row.update(step_ms=med, step_ms_min=lo, static_bytes=between, peak_bytes=peak,
                   reserved_bytes=torch.cuda.max_memory_reserved(), oom=0)
        row.update(gpu_work(step, summary and f"{summary}/ops_{name}_{base}_ckpt{int(ckpt)}.txt"))
    except torch.OutOfMemoryError:
        row.update(oom=1)
    del model, opt, ids, params
    cleanup()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="-")
    ap.add_argument("--bases", default="bf16,nf4")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--tmp", default="/tmp/finetune_models")
    ap.add_argument("--ckpt", default="0,1", help="checkpointing off (0), on (1) or both")
    ap.add_argument("--summary", default="",
                    help="a folder: write each row's operators by GPU and host time there")
    args = ap.parse_args()
    import peft, transformers
    versions = dict(transformers=transformers.__version__, peft=peft.__version__,
                    torch=torch.__version__, device=torch.cuda.get_device_name(), bitsandbytes="")
    if "nf4" in args.bases:
        import bitsandbytes
        versions["bitsandbytes"] = bitsandbytes.__version__
    f = sys.stdout if args.out == "-" else open(args.out, "w", newline="", buffering=1)
    w = csv.DictWriter(f, fieldnames=FIELDS)
    w.writeheader()
    for base in args.bases.split(","):
        for name in args.models.split(","):
            for ckpt in (c == "1" for c in args.ckpt.split(",")):
                row = run(name, base, ckpt, args.tmp, versions, args.summary or None)
                w.writerow(row)
                print(row, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
