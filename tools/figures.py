#!/usr/bin/python3
"""Draws the documentation's figures from the CSVs strata's runs wrote (tools/docs_data.py).

  /usr/bin/python3 tools/figures.py        (Debian's python3-matplotlib)

Reads docs/data/ and writes docs/img/*.png:
  validation_sc21.png         Narayanan et al. SC'21 Table 1: published vs predicted TFLOP/s per GPU
  validation_korthikanti.png  Korthikanti et al. Fig. 1: model states and activations per GPU
  validation_steps.png        single-GPU steps on an H100 (nanoGPT/torchvision and Hugging Face):
                              step time and peak memory, measured vs predicted
  validation_nccl.png         all-reduce bus bandwidth: nccl-tests curves vs Lin et al.'s fitted model
  sweep_llama3_70b.png        every plan of a Llama-3 70B sweep that fits: time vs memory, Pareto front
  scaling_gpt3_175b.png       GPT-3 175B: the fastest plan's throughput against the GPU count
"""
import csv
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data"
IMG = ROOT / "docs" / "img"
plt.rcParams.update({"figure.dpi": 100, "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                     "svg.hashsalt": "strata"})
METADATA = {"Software": None}


def read(name):
    with open(DATA / name) as f:
        return list(csv.DictReader(f))


def col(rows, key):
    return [float(r[key]) for r in rows]


def identity(ax, lo, hi, band=None):
    ax.plot([lo, hi], [lo, hi], color="0.3", lw=1, label="predicted = measured")
    if band:
        ax.fill_between([lo, hi], [lo * (1 - band), hi * (1 - band)], [lo * (1 + band), hi * (1 + band)],
                        color="0.85", label=f"±{band:.0%}")


def save(fig, name):
    fig.tight_layout()
    fig.savefig(IMG / name, metadata=METADATA)
    plt.close(fig)


def sc21():
    rows = read("validation/megatron_sc21.csv")
    fig, ax = plt.subplots(figsize=(5.2, 4.2))
    identity(ax, 120, 180, 0.10)
    x, y = col(rows, "published_tflops"), col(rows, "strata_tflops")
    ax.scatter(x, y, color="#3f6fb5", zorder=3)
    crowded = 0  # the points near 137 TFLOP/s: labels in a column on the left, with leaders
    for r, a, b in sorted(zip(rows, x, y), key=lambda t: -t[2]):
        label = f"{r['model'].replace('GPT ', '')} ({r['gpus']})"
        if a < 139:
            ax.annotate(label, (a, b), xytext=(122, 158 - 4 * crowded), fontsize=7,
                        arrowprops={"arrowstyle": "-", "color": "0.5", "lw": 0.6})
            crowded += 1
        else:
            ax.annotate(label, (a, b), fontsize=7, xytext=(5, -3), textcoords="offset points")
    ax.set(xlim=(120, 180), ylim=(120, 180), xlabel="published TFLOP/s per GPU (SC'21 Table 1)",
           ylabel="strata TFLOP/s per GPU", title="Megatron-LM on A100 clusters, 32-3072 GPUs")
    ax.legend(loc="upper left")
    save(fig, "validation_sc21.png")


def korthikanti():
    rows = read("validation/korthikanti_fig1.csv")
    fig, ax = plt.subplots(figsize=(5.2, 4.2))
    hi = max(col(rows, "paper_gib")) * 1.1
    identity(ax, 0, hi, 0.005)
    for term, colour in [("model states", "#3f6fb5"), ("activations", "#e08a2c")]:
        rs = [r for r in rows if r["metric"] == term]
        ax.scatter(col(rs, "paper_gib"), col(rs, "strata_gib"), color=colour, label=term, zorder=3)
    ax.set(xlim=(0, hi), ylim=(0, hi), xlabel="Korthikanti et al. Fig. 1 (GiB per GPU)",
           ylabel="strata (GiB per GPU)", title="22B-1T GPT models: memory per GPU")
    ax.legend(loc="upper left")
    save(fig, "validation_korthikanti.png")


def steps():
    rows = read("validation/h100_steps.csv")
    hf = read("validation/hf_steps.csv")
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 4.2))
    kinds = [("gpt2", "bf16", "#3f6fb5", "GPT-2 bf16"), ("gpt2", "fp32", "#9db8e3", "GPT-2 fp32"),
             ("resnet50", None, "#3a9a4a", "ResNet-50"), ("vgg16", None, "#a0785a", "VGG16")]
    for ax, (m_key, s_key, unit, title, band) in zip(
            axes, [("measured_ms", "strata_ms", "ms", "step time", 0.10),
                   ("measured_peak_gb", "strata_peak_gb", "GB", "peak memory", 0.05)]):
        lo = min(col(rows, m_key) + col(hf, m_key)) * 0.8
        hi = max(col(rows, m_key) + col(hf, m_key)) * 1.2
        identity(ax, lo, hi, band)
        for model, prec, colour, label in kinds:
            rs = [r for r in rows if r["model"] == model and (prec is None or r["precision"] == prec)]
            ax.scatter(col(rs, m_key), col(rs, s_key), s=10, color=colour, label=label, zorder=3)
        ax.scatter(col(hf, m_key), col(hf, s_key), s=28, marker="D", color="#c8414b",
                   label="Hugging Face (5 models)", zorder=4)
        ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi), xlabel=f"measured {title} ({unit})",
               ylabel=f"strata ({unit})", title=f"H100 single-GPU steps: {title}")
        ax.legend(loc="upper left", fontsize=7)
    save(fig, "validation_steps.png")


def nccl():
    rows = read("validation/nccl_allreduce.csv")
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colours = ["#3f6fb5", "#e08a2c", "#3a9a4a", "#8064a2"]
    systems = []
    for r in rows:
        if r["system"] not in systems:
            systems.append(r["system"])
    for s, colour in zip(systems, colours):
        rs = [r for r in rows if r["system"] == s]
        x = col(rs, "bytes")
        ax.plot(x, col(rs, "lin_busbw_gbps"), color=colour, lw=1.5, label=f"{s}: Lin et al. fit")
        held = [r for r in rs if r["held_out"] == "1"]
        fit = [r for r in rs if r["held_out"] == "0"]
        ax.scatter(col(fit, "bytes"), col(fit, "measured_busbw_gbps"), s=14, color=colour, marker="o",
                   facecolors="none")
        ax.scatter(col(held, "bytes"), col(held, "measured_busbw_gbps"), s=16, color=colour, marker="x")
    ax.scatter([], [], s=14, color="0.3", marker="o", facecolors="none", label="measured, fitted on")
    ax.scatter([], [], s=16, color="0.3", marker="x", label="measured, held out")
    ax.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s)",
           title="8-GPU all-reduce: nccl-tests vs Lin et al.'s sigmoid model")
    ax.legend(fontsize=7, loc="upper left")
    save(fig, "validation_nccl.png")


def pareto(points):
    """Indices of the points no other point beats in both time and memory."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], float("inf")
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def sweep():
    rows = read("sweep_llama3_70b.csv")
    pts = [(float(r["iteration_s"]), float(r["memory_gib"])) for r in rows]
    front = pareto(pts)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colours = {"none": "#3f6fb5", "selective": "#3a9a4a", "full": "#e08a2c"}
    for rc, colour in colours.items():
        rs = [p for p, r in zip(pts, rows) if r["recompute"] == rc]
        ax.scatter([p[0] for p in rs], [p[1] for p in rs], s=7, alpha=0.5, color=colour,
                   label=f"recompute {rc}")
    fx = [pts[i][0] for i in front]
    fy = [pts[i][1] for i in front]
    ax.step(fx, fy, where="post", color="#c8414b", lw=1.5)
    ax.scatter(fx, fy, s=30, color="#c8414b", zorder=4, label=f"Pareto front ({len(front)} plans)")
    b = rows[0]
    ax.annotate(f"fastest: t={b['tensor']} p={b['pipeline']} d={b['data']} ZeRO-{b['zero']}",
                pts[0], xytext=(8, -4), textcoords="offset points", fontsize=7)
    cap = float(rows[0]["capacity_gib"])
    ax.axhline(cap, color="0.4", ls="--", lw=1, label=f"device capacity {cap:.1f} GiB")
    ax.set(xlabel="predicted iteration time (s)", ylabel="peak memory per GPU (GiB)",
           title=f"Llama-3 70B on 512 H100, batch 1024 x 8192: the {len(rows)} plans that fit")
    ax.legend(fontsize=7, loc="upper right")
    save(fig, "sweep_llama3_70b.png")


def scaling():
    rows = read("scaling_gpt3_175b.csv")
    n, tok = col(rows, "devices"), col(rows, "tokens_per_s")
    fig, ax = plt.subplots(figsize=(6.0, 4.2))
    ax.plot(n, [tok[0] * x / n[0] for x in n], color="0.5", ls="--", lw=1, label="linear from the smallest")
    ax.plot(n, tok, marker="o", color="#3f6fb5", label="fastest plan that fits")
    for r, x, y in zip(rows, n, tok):
        ax.annotate(f"t{r['tensor']} p{r['pipeline']} d{r['data']}", (x, y), fontsize=7, xytext=(5, -10),
                    textcoords="offset points")
    ax.set(xscale="log", yscale="log", xlabel="A100 GPUs (DGX A100 nodes)", ylabel="tokens per second",
           title="GPT-3 175B, global batch 1536 x 2048: strong scaling")
    ax.legend(fontsize=7)
    save(fig, "scaling_gpt3_175b.png")


def main():
    IMG.mkdir(parents=True, exist_ok=True)
    for draw in (sc21, korthikanti, steps, nccl, sweep, scaling):
        draw()


if __name__ == "__main__":
    main()
