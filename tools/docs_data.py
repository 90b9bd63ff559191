#!/usr/bin/env python3
"""Regenerates every number and picture the documentation shows from strata's own runs.

  /usr/bin/python3 tools/docs_data.py --build build           regenerate, then draw the figures
  /usr/bin/python3 tools/docs_data.py --build build --check   fail if anything committed is stale

It needs `build/strata` and `build/test/unit_tests` (cmake --build build --target strata_cli
unit_tests). Steps:
  1. the validation tests run with STRATA_VALIDATION_OUT set and write the rows they compared
     (test/validation/record.hpp) -> docs/data/validation/*.csv;
  2. the CLI runs docs/examples/: the 4-stage timelines and memory bars (strata simulate --svg,
     --memory-svg) -> docs/img/*.svg, a strategy sweep and a scaling series -> docs/data/*.csv;
  3. the tables of docs/validation.md between `<!-- generated:NAME -->` and
     `<!-- end generated -->` are rewritten from those CSVs;
  4. docs/cli_fields.md is regenerated from the parser (tools/docs_fields.py), the compiler
     error quoted in docs/concepts.md is checked against the source line it quotes, and every
     repository path a page names must exist;
  5. every block of docs/*.md and README.md that shows what the CLI prints (a `<!-- strata-output:
     ... -->` marker before it) is rewritten from a run of build/strata (tools/docs_outputs.py,
     which needs only the CLI);
  6. tools/figures.py (matplotlib) draws the validation figures from the CSVs -> docs/img/*.png.
Everything in steps 1-5 is deterministic and --check compares it byte for byte; the PNG figures
depend on the matplotlib version, so --check only checks that they exist.
"""
import argparse
import csv
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import docs_fields  # noqa: E402
import docs_outputs  # noqa: E402

VALIDATION_TESTS = [  # Catch2 test names (wildcards allowed), each run on its own
    "SC'21 Table 1: TFLOP/s per GPU within 10 % on every row",
    "Korthikanti et al. Fig. 1*",
    "Korthikanti et al. Table 5*",
    "Proteus Table V*",  # both clusters in one run: they write one table
    "H100 training steps*",
    "Hugging Face steps on an H100*",
    # one run for both: they write one table
    "the recipe on a second H100 session*,Llama-style models in plain eager PyTorch*",
    "the MoE step with TF32 allowed and off*",
    "Lin et al.'s model predicts held-out all-reduce sizes",
    "Lin et al.'s measured DLRM steps*",
    "published framework runs*",
    "published LoRA and QLoRA runs*",
    "LoRA and QLoRA steps measured on an H200*",
    "data parallelism from the sample trace agrees with the closed form",
]
TIMELINES = {  # docs/img/<name>.svg from docs/examples/<scenario>
    "1f1b": "llama3_8b_1f1b.json",
    "interleaved": "llama3_8b_interleaved.json",
}
SCALING_DEVICES = [64, 128, 256, 512, 1024, 2048, 4096]
FIGURES = ["validation_sc21.png", "validation_korthikanti.png", "validation_steps.png",
           "validation_nccl.png", "sweep_llama3_70b.png", "scaling_gpt3_175b.png"]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"docs_data: {' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r.stdout


def validation_csvs(build, out):
    exe = build / "test" / "unit_tests"
    if not exe.exists():
        sys.exit(f"docs_data: {exe} is missing (cmake --build {build} --target unit_tests)")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, STRATA_VALIDATION_OUT=tmp)
        for name in VALIDATION_TESTS:
            run([exe, name], env=env)
        for f in sorted(pathlib.Path(tmp).glob("*.csv")):
            (out / "data" / "validation").mkdir(parents=True, exist_ok=True)
            shutil.copy(f, out / "data" / "validation" / f.name)


def cli_runs(build, out):
    exe = build / "strata"
    if not exe.exists():
        sys.exit(f"docs_data: {exe} is missing (cmake --build {build} --target strata_cli)")
    ex = ROOT / "docs" / "examples"
    (out / "img").mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(parents=True, exist_ok=True)
    rows = []
    for name, scenario in TIMELINES.items():
        report = json.loads(run([exe, "simulate", ex / scenario, "--svg", out / "img" / f"timeline_{name}.svg",
                                 "--memory-svg", out / "img" / f"memory_{name}.svg"]))
        rows.append([name, f"{report['iteration_time_s']:.4f}", f"{report['closed_form_iteration_time_s']:.4f}"]
                    + [f"{b / 2**30:.2f}" for b in report["peak_memory_bytes"]])
    with open(out / "data" / "timelines.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["schedule", "simulated_s", "closed_form_s", "peak_gib_stage0", "peak_gib_stage1",
                    "peak_gib_stage2", "peak_gib_stage3"])
        w.writerows(rows)
    sweep = json.loads(run([exe, ex / "llama3_70b_sweep.json"]))
    # the device capacity the sweep pruned against: the fastest plan's own report
    one = json.loads((ex / "llama3_70b_sweep.json").read_text())
    del one["search"]
    one["parallel"] = sweep["best"][0]["parallel"]
    capacity = json.loads(run([exe, "-"], input=json.dumps(one)))["memory_GiB"]["capacity"]
    with open(out / "data" / "sweep_llama3_70b.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["tensor", "sequence_parallel", "pipeline", "virtual_stages", "data", "zero", "micro_batch",
                    "recompute", "iteration_s", "memory_gib", "capacity_gib"])
        for p in sweep["best"]:
            q = p["parallel"]
            w.writerow([q["tensor"], int(q["sequence_parallel"]), q["pipeline"], q["virtual_stages"], q["data"],
                        q["zero"], q["micro_batch"], q["recompute"], f"{p['iteration_s']:.6g}",
                        f"{p['peak_GiB']:.6g}", f"{capacity:.6g}"])
    # the H100 fit of docs/calibration.md: the command that wrote tools/profiles/h100_sxm.json
    with tempfile.TemporaryDirectory() as tmp:
        data = ROOT / "test" / "data"
        cal = json.loads(run([exe, "calibrate", "--gemm", data / "h100_gemm.csv",
                              "--gemm", data / "h100_gemm_ieee.csv", "--membound", data / "h100_membound.csv",
                              "--attention", data / "h100_attention.csv",
                              "--attention-fp32", data / "h100_attention_fp32.csv",
                              "--steps", data / "h100_steps_gpt2.csv", "--steps", data / "h100_steps_cnn.csv",
                              "--device", "h100", "--sms", "132", "--output", pathlib.Path(tmp) / "p.json"]))
    with open(out / "data" / "calibration_h100.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["op", "points", "mape", "gmae", "held_out_points", "held_out_mape", "held_out_gmae"])
        for r in cal["report"]:
            w.writerow([r["op"], r["points"], f"{r['mape']:.6g}", f"{r['gmae']:.6g}", r["held_out_points"],
                        f"{r['held_out_mape']:.6g}", f"{r['held_out_gmae']:.6g}"])
    # the V100 and TITAN Xp fits of docs/calibration.md from DeepBench's tables: the commands that
    # wrote tools/profiles/v100_sxm2.json and titan_xp.json
    with open(out / "data" / "calibration_deepbench.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["device", "op", "points", "mape", "gmae", "held_out_points", "held_out_gmae"])
        for device, gpu in (("v100-16gb", "v100"), ("titan-xp", "titan_xp")):
            data = ROOT / "test" / "data" / "deepbench"
            cal = json.loads(run([exe, "calibrate", "--device", device, "--gemm", data / f"{gpu}_gemm.csv",
                                  "--gemm-min-side", "64", "--conv", data / f"{gpu}_conv.csv"]))
            for r in cal["report"]:
                w.writerow([device, r["op"], r["points"], f"{r['mape']:.6g}", f"{r['gmae']:.6g}",
                            r["held_out_points"], f"{r['held_out_gmae']:.6g}"])
    base = json.loads((ex / "gpt3_175b_scaling.json").read_text())
    with open(out / "data" / "scaling_gpt3_175b.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["devices", "candidates", "fitting", "tensor", "pipeline", "virtual_stages", "data", "zero",
                    "micro_batch", "recompute", "iteration_s", "tokens_per_s", "memory_gib"])
        for n in SCALING_DEVICES:
            base["cluster"]["devices"] = n
            r = json.loads(run([exe, "-"], input=json.dumps(base)))
            if not r["best"]:
                continue
            p = r["best"][0]
            q = p["parallel"]
            w.writerow([n, r["candidates"], r["fitting"], q["tensor"], q["pipeline"], q["virtual_stages"], q["data"],
                        q["zero"], q["micro_batch"], q["recompute"], f"{p['iteration_s']:.6g}",
                        f"{p['tokens_per_s']:.6g}", f"{p['peak_GiB']:.6g}"])


def read(out, name):
    with open(out / "data" / name) as f:
        return list(csv.DictReader(f))


def pct(a, b, digits=1):
    return f"{100 * (float(a) / float(b) - 1):+.{digits}f} %"


def tables(out):
    """The generated tables of docs/validation.md, by name."""
    t = {}
    lines = ["| op class | points | MAPE | GMAE | held-out points | held-out MAPE | held-out GMAE |",
             "|---|---|---|---|---|---|---|"]
    for r in read(out, "calibration_h100.csv"):
        p = [f"{100 * float(r[k]):.1f} %" for k in ("mape", "gmae", "held_out_mape", "held_out_gmae")]
        lines.append(f"| {r['op']} | {r['points']} | {p[0]} | {p[1]} | {r['held_out_points']} | {p[2]} | {p[3]} |")
    t["calibration_h100"] = lines
    lines = ["| device | op class | points | MAPE | GMAE | held-out GMAE |", "|---|---|---|---|---|---|"]
    for r in read(out, "calibration_deepbench.csv"):
        p = [f"{100 * float(r[k]):.1f} %" for k in ("mape", "gmae")]
        held = f"{100 * float(r['held_out_gmae']):.1f} %" if int(r["held_out_points"]) else "(not fitted)"
        lines.append(f"| {r['device']} | {r['op']} | {r['points']} | {p[0]} | {p[1]} | {held} |")
    t["calibration_deepbench"] = lines
    rows = read(out, "validation/megatron_sc21.csv")
    lines = ["| model | GPUs | t | p | v | d | b | published TFLOP/s | strata | error | memory GiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['gpus']} | {r['t']} | {r['p']} | {r['v']} | {r['d']} | {r['b']} | "
                     f"{float(r['published_tflops']):.0f} | {float(r['strata_tflops']):.1f} | "
                     f"{pct(r['strata_tflops'], r['published_tflops'])} | {float(r['memory_gib']):.1f} |")
    t["sc21"] = lines
    rows = read(out, "validation/korthikanti_fig1.csv")
    lines = ["| model | mode | term | paper GiB | strata GiB | error |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['mode']} | {r['metric']} | {float(r['paper_gib']):.2f} | "
                     f"{float(r['strata_gib']):.2f} | {pct(r['strata_gib'], r['paper_gib'], 2)} |")
    t["korthikanti"] = lines
    rows = read(out, "validation/proteus_table5.csv")
    lines = ["| cluster | strategy (n_micro_batch) | iteration s | samples/s | rank truth / strata |",
             "|---|---|---|---|---|"]
    for hc in ("HC1", "HC2"):
        mine = [r for r in rows if r["cluster"] == hc]
        order = sorted(mine, key=lambda r: -float(r["samples_per_s"]))
        for r in mine:
            lines.append(f"| {hc} | {r['strategy']} | {float(r['iteration_s']):.3f} | "
                         f"{float(r['samples_per_s']):.1f} | {r['truth_rank']} / {order.index(r) + 1} |")
    t["proteus_table5"] = lines
    rows = read(out, "validation/lin_dlrm_steps.csv")
    lines = ["| GPU | model | batch | measured | strata (eager loop) | error | kernels alone | error |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['gpu']} | {r['model']} | {float(r['batch']):.0f} | {float(r['measured_ms']):.2f} ms | "
                     f"{float(r['strata_ms']):.2f} ms | {pct(r['strata_ms'], r['measured_ms'])} | "
                     f"{float(r['kernels_ms']):.2f} ms | {pct(r['kernels_ms'], r['measured_ms'])} |")
    e = sorted(abs(float(r["strata_ms"]) / float(r["measured_ms"]) - 1) for r in rows)
    k = sorted(abs(float(r["kernels_ms"]) / float(r["measured_ms"]) - 1) for r in rows)
    lines.append(f"| all | | | | median \\|error\\| | {100 * percentile(e, 0.5):.1f} % | | "
                 f"{100 * percentile(k, 0.5):.1f} % |")
    t["lin_dlrm_steps"] = lines
    rows = read(out, "validation/korthikanti_table5.csv")
    lines = ["| model | mode | paper s | strata s | error |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['mode']} | {float(r['published_s']):.2f} | "
                     f"{float(r['strata_s']):.2f} | {float(r['error_pct']):+.1f} % |")
    e = [abs(float(r["error_pct"])) for r in rows]
    lines.append(f"| all | | | | {sum(e) / len(e):.1f} % mean, {max(e):.1f} % max |")
    t["korthikanti_table5"] = lines
    rows = read(out, "validation/hf_steps.csv")
    lines = ["| row | batch | sequence | step measured | strata | error | peak measured | strata | error |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['row']} | {r['batch']} | {r['sequence']} | {float(r['measured_ms']):.1f} ms | "
                     f"{float(r['strata_ms']):.1f} ms | {pct(r['strata_ms'], r['measured_ms'])} | "
                     f"{float(r['measured_peak_gb']):.2f} GB | {float(r['strata_peak_gb']):.2f} GB | "
                     f"{pct(r['strata_peak_gb'], r['measured_peak_gb'], 2)} |")
    t["hf_steps"] = lines
    rows = read(out, "validation/hf_rerun.csv")
    lines = ["| row | recipe | checkpointing | step measured | strata | error | peak measured | strata | error |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['row']} | `{r['recipe']}` | {'yes' if r['checkpointed'] == '1' else 'no'} | "
                     f"{float(r['measured_ms']):.1f} ms | {float(r['strata_ms']):.1f} ms | "
                     f"{pct(r['strata_ms'], r['measured_ms'])} | {float(r['measured_peak_gb']):.2f} GB | "
                     f"{float(r['strata_peak_gb']):.2f} GB | {pct(r['strata_peak_gb'], r['measured_peak_gb'], 2)} |")
    t["hf_rerun"] = lines
    rows = read(out, "validation/hf_moe.csv")
    lines = ["| session | TF32 | expert GEMMs traced | strata | error | step measured | strata | error |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['session']} | {'allowed' if r['tf32'] == '1' else 'off'} | "
                     + (f"{float(r['traced_gemm_ms']):.1f} ms | {float(r['strata_gemm_ms']):.1f} ms | "
                        f"{pct(r['strata_gemm_ms'], r['traced_gemm_ms'])} | " if r['traced_gemm_ms'] else "| | | ")
                     + f"{float(r['measured_ms']):.1f} ms | {float(r['strata_ms']):.1f} ms | "
                     f"{pct(r['strata_ms'], r['measured_ms'])} |")
    t["hf_moe"] = lines
    rows = read(out, "validation/h100_steps.csv")
    groups = {}
    for r in rows:
        key = ("GPT-2" if r["model"] == "gpt2" else r["model"].replace("resnet50", "ResNet-50")
               .replace("vgg16", "VGG16"), r["precision"])
        groups.setdefault(key, []).append(r)
    lines = ["| models | precision | steps | step time MAPE | worst | peak memory MAPE | worst |",
             "|---|---|---|---|---|---|---|"]

    def mape(rs, a, b):
        e = [abs(float(r[a]) / float(r[b]) - 1) for r in rs]
        return f"{100 * sum(e) / len(e):.1f} %", f"{100 * max(e):.1f} %"
    for key in sorted(groups):
        rs = groups[key]
        tm, tw = mape(rs, "strata_ms", "measured_ms")
        pm, pw = mape(rs, "strata_peak_gb", "measured_peak_gb")
        lines.append(f"| {key[0]} | {key[1]} | {len(rs)} | {tm} | {tw} | {pm} | {pw} |")
    tm, tw = mape(rows, "strata_ms", "measured_ms")
    pm, pw = mape(rows, "strata_peak_gb", "measured_peak_gb")
    lines.append(f"| all | | {len(rows)} | {tm} | {tw} | {pm} | {pw} |")
    t["h100_steps"] = lines
    rows = read(out, "validation/nccl_allreduce.csv")
    lines = ["| system | sizes held out | MAPE of bus bandwidth (held out) | worst |", "|---|---|---|---|"]
    systems = []
    for r in rows:
        if r["system"] not in systems:
            systems.append(r["system"])
    for s in systems:
        rs = [r for r in rows if r["system"] == s and r["held_out"] == "1"]
        e = [abs(float(r["lin_busbw_gbps"]) / float(r["measured_busbw_gbps"]) - 1) for r in rs]
        lines.append(f"| {s} | {len(rs)} | {100 * sum(e) / len(e):.1f} % | {100 * max(e):.1f} % |")
    t["nccl"] = lines
    rows = read(out, "validation/published_frameworks.csv")
    names = {"s_per_iter": "s / iteration", "tokens_per_s": "tokens/s per GPU",
             "tflops_per_gpu": "TFLOP/s per GPU", "peak_mem_gib": "peak memory", "oom": "out of memory"}
    groups = {}
    for r in rows:
        groups.setdefault((r["source"], r["framework"], r["metric"]), []).append(r)
    lines = ["| source | framework | metric | rows | median error | range |", "|---|---|---|---|---|---|"]
    for (src, fw, metric), rs in groups.items():
        if metric == "oom":
            hit = sum(1 for r in rs if float(r["predicted"]) > 0)
            lines.append(f"| {src} | {fw} | {names[metric]} | {len(rs)} | {hit} of {len(rs)} predicted | |")
            continue
        e = sorted(float(r["error_pct"]) for r in rs)
        med = e[len(e) // 2] if len(e) % 2 else 0.5 * (e[len(e) // 2 - 1] + e[len(e) // 2])
        lines.append(f"| {src} | {fw} | {names[metric]} | {len(rs)} | {med:+.1f} % | "
                     f"{e[0]:+.1f} to {e[-1]:+.1f} % |")
    t["published"] = lines
    rows = read(out, "validation/published_frameworks_skipped.csv")
    lines = ["| source | framework | metric | why it is not predicted |", "|---|---|---|---|"]
    seen = set()
    for r in rows:
        key = (r["source"], r["metric"], r["why"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"| {r['source']} | {r['framework']} | {names[r['metric']]} | {r['why']} |")
    t["published_skipped"] = lines
    counts = {}
    for r in read(out, "validation/published_frameworks_verdicts.csv"):
        key = (r["source"], r["framework"], r["verdict"])
        counts[key] = counts.get(key, 0) + 1
    lines = ["| source | framework | verdict | rows that ran |", "|---|---|---|---|"]
    for (src, fw, verdict), n in sorted(counts.items()):
        lines.append(f"| {src} | {fw} | {verdict} | {n} |")
    t["published_verdicts"] = lines
    rows = read(out, "validation/finetune.csv")
    lines = ["| source | model | method | base | r | GPU | sequence x batch | checkpointing | metric | "
             "published GB | strata GB | error | published tokens/s | strata tokens/s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        tps = float(r["measured_tokens_per_s"])
        speed = f"{tps:,.0f} | {float(r['predicted_tokens_per_s']):,.0f}" if tps > 0 else " | "
        lines.append(f"| {r['source']} | {r['model']} | {r['method']} | {r['base']} | {r['rank']} | {r['gpu']} | "
                     f"{r['sequence']} x {r['micro_batch']} | {r['checkpointing']} | {r['metric']} | "
                     f"{float(r['measured_gb']):.2f} | {float(r['predicted_gb']):.2f} | "
                     f"{float(r['error_pct']):+.1f} % | {speed} |")
    t["finetune"] = lines
    groups = {}
    for r in rows:
        groups.setdefault((r["source"].split("_")[0], r["method"]), []).append(float(r["error_pct"]))
    lines = ["| framework | method | rows | mean error | mean abs error |", "|---|---|---|---|---|"]
    for (fw, method), e in sorted(groups.items()):
        lines.append(f"| {fw} | {method} | {len(e)} | {sum(e) / len(e):+.1f} % | "
                     f"{sum(map(abs, e)) / len(e):.1f} % |")
    for method in ("lora", "qlora"):
        e = [float(r["error_pct"]) for r in rows if r["method"] == method]
        lines.append(f"| all | {method} | {len(e)} | {sum(e) / len(e):+.1f} % | {sum(map(abs, e)) / len(e):.1f} % |")
    t["finetune_summary"] = lines
    rows = read(out, "validation/finetune_measured.csv")
    lines = ["| model | base | checkpointing | measured GiB | strata GiB | error | kernels ms | "
             "strata GPU ms | error | step ms | strata step ms | error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['base']} | {r['checkpointing']} | "
                     f"{float(r['measured_GiB']):.2f} | {float(r['predicted_GiB']):.2f} | "
                     f"{float(r['memory_error_pct']):+.1f} % | {float(r['kernel_ms']):.1f} | "
                     f"{float(r['predicted_gpu_ms']):.1f} | {float(r['gpu_error_pct']):+.1f} % | "
                     f"{float(r['step_ms']):.1f} | {float(r['predicted_step_ms']):.1f} | "
                     f"{float(r['step_error_pct']):+.1f} % |")
    t["finetune_measured"] = lines
    rows = read(out, "validation/finetune_skipped.csv")
    why = {}
    for r in rows:
        why[r["why"]] = why.get(r["why"], 0) + 1
    lines = ["| why a row is not predicted | rows |", "|---|---|"]
    for k, n in sorted(why.items(), key=lambda x: -x[1]):
        lines.append(f"| {k} | {n} |")
    t["finetune_skipped"] = lines
    rows = read(out, "validation/dp_trace.csv")
    lines = ["| GPUs | buckets | all-reduce total | closed form (no overlap) | simulated, no overlap | "
             "simulated, overlap | trace's buckets | their all-reduce | simulated, overlap | "
             "overlap, recorded host |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ms = [f"{1e3 * float(r[k]):.3f} ms" for k in ("all_reduce_s", "closed_form_s", "serial_s", "overlap_s")]
        tr = [f"{1e3 * float(r[k]):.3f} ms" for k in ("trace_all_reduce_s", "trace_overlap_s", "trace_host_s")]
        lines.append(f"| {r['gpus']} | {r['buckets']} | " + " | ".join(ms) + f" | {r['trace_buckets']} | "
                     + " | ".join(tr) + " |")
    t["dp_trace"] = lines
    rows = read(out, "timelines.csv")
    lines = ["| schedule | simulated iteration | closed form | peak GiB per stage (0, 1, 2, 3) |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['schedule']} | {r['simulated_s']} s | {r['closed_form_s']} s | "
                     f"{r['peak_gib_stage0']}, {r['peak_gib_stage1']}, {r['peak_gib_stage2']}, "
                     f"{r['peak_gib_stage3']} |")
    t["timelines"] = lines
    rows = read(out, "scaling_gpt3_175b.csv")
    lines = ["| GPUs | plans that fit | fastest plan (t, p, v, d, ZeRO, b, recompute) | iteration | tokens/s | memory GiB |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['devices']} | {r['fitting']} of {r['candidates']} | {r['tensor']}, {r['pipeline']}, "
                     f"{r['virtual_stages']}, {r['data']}, {r['zero']}, {r['micro_batch']}, {r['recompute']} | "
                     f"{float(r['iteration_s']):.2f} s | {float(r['tokens_per_s']):,.0f} | "
                     f"{float(r['memory_gib']):.1f} |")
    t["scaling"] = lines
    return t


GENERATED = re.compile(r"(<!-- generated:(\w+) -->\n)(.*?)(<!-- end generated -->)", re.S)


def fill(text, t, page):
    def repl(m):
        name = m.group(2)
        if name not in t:
            sys.exit(f"docs_data: {page} asks for an unknown generated table '{name}'")
        return m.group(1) + "\n".join(t[name]) + "\n" + m.group(4)
    return GENERATED.sub(repl, text)


def concepts_error_line():
    """The compiler error quoted in docs/concepts.md names the line of the throw it quotes."""
    text = (ROOT / "docs" / "concepts.md").read_text()
    m = re.search(r"include/strata/(\S+?\.hpp):(\d+):\d+: error.*\n +\d+ \| (.*)\n", text)
    if not m:
        return ["docs/concepts.md: the quoted compiler error is missing"]
    src = (ROOT / "include" / "strata" / m.group(1)).read_text().split("\n")
    line = int(m.group(2))
    if line > len(src) or src[line - 1].strip() != m.group(3).strip():
        return [f"docs/concepts.md quotes {m.group(1)}:{line} but that line is not the one quoted; "
                f"recompile test/fail/filter_limit.cpp with -DSTRATA_SHOULD_FAIL and update it"]
    return []


def doc_paths():
    """Every repository path a page names in code (strata/..., include/, test/, tools/, docs/,
    examples/, bench/) exists."""
    bad = []
    prefixes = ("strata/", "include/", "test/", "tools/", "docs/", "examples/", "bench/", "single_include/")
    for page in sorted((ROOT / "docs").glob("*.md")):
        for code in re.findall(r"```.*?```|`[^`]+`", page.read_text(), re.S):
            for p in re.findall(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:hpp|cpp|py|csv|json|sh|md))\b", code):
                if not p.startswith(prefixes) or "*" in p:
                    continue
                if not any(c.exists() for c in (ROOT / p, ROOT / "include" / p)):
                    bad.append(f"docs/{page.name} names {p}, which does not exist")
    return sorted(set(bad))


BANDS_HEADER = ROOT / "include" / "strata" / "io" / "validation_bands.hpp"


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return 0.0
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def bands_header(out):
    """include/strata/io/validation_bands.hpp: how far strata was from measured runs, by recipe,
    scale and LoRA, from the validation CSVs (every report prints its band). A time error is
    predicted time / measured time - 1 (a rate's error inverted); memory, predicted / measured - 1."""
    groups = {}  # (framework, many GPUs, lora, metric) -> [error %]

    def add(fw, many, lora, metric, e):
        groups.setdefault((fw, many, lora, metric), []).append(e)

    names = {"megatron_deepspeed": "deepspeed"}
    for r in read(out, "validation/published_frameworks.csv"):
        m, meas, pred = r["metric"], float(r["measured"]), float(r["predicted"])
        if m == "oom" or meas <= 0 or pred <= 0:
            continue
        fw = names.get(r["framework"], r["framework"])
        if m == "s_per_iter":
            add(fw, True, False, "time", 100 * (pred / meas - 1))
        elif m in ("tokens_per_s", "tflops_per_gpu"):
            add(fw, True, False, "time", 100 * (meas / pred - 1))
        elif m == "peak_mem_gib":
            add(fw, True, False, "memory", 100 * (pred / meas - 1))
    for r in read(out, "validation/hf_rerun.csv"):
        fw = "huggingface" if r["recipe"] == "huggingface" else "pytorch-modules"
        add(fw, False, False, "time", 100 * (float(r["strata_ms"]) / float(r["measured_ms"]) - 1))
        add(fw, False, False, "memory",
            100 * (float(r["strata_peak_gb"]) / float(r["measured_peak_gb"]) - 1))
    for r in read(out, "validation/h100_steps.csv"):
        add("pytorch", False, False, "time", 100 * (float(r["strata_ms"]) / float(r["measured_ms"]) - 1))
        add("pytorch", False, False, "memory",
            100 * (float(r["strata_peak_gb"]) / float(r["measured_peak_gb"]) - 1))
    for r in read(out, "validation/finetune.csv"):
        src = r["source"]
        fw = "litgpt" if src.startswith("litgpt") else "torchtune" if src.startswith("torchtune") \
            else "huggingface"
        add(fw, False, True, "memory", float(r["error_pct"]))
        tps = float(r["measured_tokens_per_s"])
        if tps > 0:
            add(fw, False, True, "time", 100 * (tps / float(r["predicted_tokens_per_s"]) - 1))
    for r in read(out, "validation/finetune_measured.csv"):
        add("huggingface", False, True, "memory", float(r["memory_error_pct"]))
        add("huggingface", False, True, "time", float(r["step_error_pct"]))
    rows = []
    for (fw, many, lora, metric), e in sorted(groups.items()):
        rows.append(f'    {{"{fw}", {"true" if many else "false"}, {"true" if lora else "false"}, '
                    f'"{metric}", {len(e)}, {percentile(e, 0.5):.1f}, '
                    f'{percentile([abs(x) for x in e], 0.9):.1f}}},')
    return "\n".join([
        "#pragma once",
        "/// @file io/validation_bands.hpp",
        "/// @brief How far strata's predictions were from measured and published runs, by recipe, scale",
        "/// (one GPU or several) and LoRA: the median signed error and the |error| 90 % of runs stay within,",
        "/// for step time and peak memory. GENERATED by tools/docs_data.py from docs/data/validation/*.csv",
        "/// (`--check` fails when it is stale): do not edit. Every transformer report prints its band.",
        "#include <string_view>",
        "",
        "namespace strata::io {",
        "",
        "/// One band: `rows` compared runs, errors in % (time: predicted / measured time - 1).",
        "struct validation_band {",
        "  std::string_view framework;  ///< the scenario's `training.framework`",
        "  bool many_gpus;              ///< runs on more than one GPU",
        "  bool lora;                   ///< LoRA or QLoRA fine-tuning",
        "  std::string_view metric;     ///< \"time\" or \"memory\"",
        "  int rows;",
        "  double median_pct;  ///< the median signed error",
        "  double within_pct;  ///< 90 % of |error| at most this",
        "};",
        "",
        "inline constexpr validation_band validation_bands[] = {",
        *rows,
        "};",
        "",
        "}  // namespace strata::io",
        ""])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="the CMake build directory")
    ap.add_argument("--check", action="store_true", help="compare with the committed files; change nothing")
    ap.add_argument("--no-figures", action="store_true", help="skip tools/figures.py")
    a = ap.parse_args()
    build = pathlib.Path(a.build).resolve()
    docs = ROOT / "docs"
    problems = concepts_error_line() + doc_paths()
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) if a.check else docs
        validation_csvs(build, out)
        cli_runs(build, out)
        t = tables(out)
        bands = bands_header(out)
        pages = {p: fill(p.read_text(), t, p.name) for p in sorted(docs.glob("*.md"))}
        if a.check:
            for sub in ["data", "img"]:
                for f in sorted((out / sub).rglob("*")):
                    if f.is_dir():
                        continue
                    committed = docs / f.relative_to(out)
                    if not committed.exists() or committed.read_bytes() != f.read_bytes():
                        problems.append(f"docs/{f.relative_to(out)} is stale")
            for p, text in pages.items():
                if p.read_text() != text:
                    problems.append(f"docs/{p.name}: a generated table is stale")
            for name in FIGURES:
                if not (docs / "img" / name).exists():
                    problems.append(f"docs/img/{name} is missing (run tools/figures.py)")
            if not BANDS_HEADER.exists() or BANDS_HEADER.read_text() != bands:
                problems.append("include/strata/io/validation_bands.hpp is stale")
            fields = docs_fields.render()
            if (docs / "cli_fields.md").read_text() != fields:
                problems.append("docs/cli_fields.md is stale")
            problems += ["undocumented: " + m for m in docs_fields.undocumented()]
        else:
            for p, text in pages.items():
                if p.read_text() != text:
                    p.write_text(text)
            (docs / "cli_fields.md").write_text(docs_fields.render())
            if not BANDS_HEADER.exists() or BANDS_HEADER.read_text() != bands:
                BANDS_HEADER.write_text(bands)
            problems += ["undocumented: " + m for m in docs_fields.undocumented()]
    # 5. every printed output of the CLI the pages show (tools/docs_outputs.py): rewritten, or checked
    errors, stale, _, _ = docs_outputs.refresh(build / "strata", check=a.check)
    problems += errors + stale
    if not a.check and not a.no_figures:
        run(["/usr/bin/python3", ROOT / "tools" / "figures.py"])
    for p in problems:
        print("docs_data: " + p)
    if a.check and problems:
        print("docs_data: regenerate with `/usr/bin/python3 tools/docs_data.py --build BUILD` and commit")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
