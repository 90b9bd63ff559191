#!/usr/bin/env python3
"""Turns a DeepBench training-results workbook (baidu-research/DeepBench, results/train/*.xlsx)
into the CSV tables `strata calibrate` reads.

    tools/deepbench_csv.py DeepBench_NV_V100.xlsx --prefix test/data/deepbench/v100

writes <prefix>_gemm.csv (dtype,M,N,K,a_t,b_t,ms; the untransposed shapes) and
<prefix>_gemm_transposed.csv (the rest), <prefix>_conv.csv (dtype,N,C,H,W,K,R,S,
pad_h,pad_w,stride_h,stride_w,fwd_ms,bwd_data_ms,bwd_filter_ms,fwd_algorithm; bwd_data_ms empty
where DeepBench skips it, for first layers; fwd_algorithm the cuDNN forward algorithm it chose) and, where the workbook measured it, <prefix>_allreduce.csv
(floats,gpus,nodes,ms,std_ms,algorithm). Only the standard library: an .xlsx is a zip of XML.

Sheets: one per precision. "Float" (fp32, on these GPUs the CUDA cores: dtype float32-ieee) and
"16 bit inputs ... 32 bit addition" (fp16 tensor cores: dtype float16). Other precisions are
skipped with a note on stderr. DeepBench's R is the filter height and S its width; the V100 sheet
spells them "R (Filter height)" and "S (Filter width)", the TITAN Xp sheet "R" and "S"; both
are read by name, as are the paddings and strides.
"""
import argparse
import csv
import re
import sys
import xml.etree.ElementTree as ET
import zipfile

MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def column_index(ref):
    n = 0
    for ch in re.match(r"[A-Z]+", ref).group(0):
        n = n * 26 + ord(ch) - 64
    return n - 1


def read_workbook(path):
    """{sheet name: rows as lists of cell texts}."""
    z = zipfile.ZipFile(path)
    shared = []
    if "xl/sharedStrings.xml" in z.namelist():
        for si in ET.fromstring(z.read("xl/sharedStrings.xml")).iter(MAIN + "si"):
            shared.append("".join(t.text or "" for t in si.iter(MAIN + "t")))
    rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
    target = {r.get("Id"): r.get("Target") for r in rels}
    out = {}
    for sheet in ET.fromstring(z.read("xl/workbook.xml")).iter(MAIN + "sheet"):
        root = ET.fromstring(z.read("xl/" + target[sheet.get(REL)]))
        rows = []
        for row in root.iter(MAIN + "row"):
            cells = {}
            for c in row.iter(MAIN + "c"):
                v = c.find(MAIN + "v")
                if v is None:
                    text = "".join(t.text or "" for t in c.iter(MAIN + "t"))
                elif c.get("t") == "s":
                    text = shared[int(v.text)]
                else:
                    text = v.text or ""
                cells[column_index(c.get("r"))] = text.strip()
            rows.append([cells.get(i, "") for i in range(max(cells) + 1)] if cells else [])
        out[sheet.get("name")] = rows
    return out


def precision_of(rows):
    for r in rows[:3]:
        if r and r[0] == "Precision":
            text = r[1] if len(r) > 1 else ""
            if text == "Float":
                return "float32-ieee"
            if text.startswith("16 bit inputs") and "32 bit addition" in text:
                return "float16"
            return None
    return None


def sections(rows):
    """Each section's title row index: the first cell names it."""
    return [(i, r[0]) for i, r in enumerate(rows) if r and r[0]]


def section_rows(rows, start, titles):
    ends = [i for i, _ in titles if i > start]
    end = ends[0] if ends else len(rows)
    # the column names are on the title row or the one after it
    at = start if sum(1 for c in rows[start] if c) > 2 else start + 1
    return rows[at], rows[at + 1:end]


def number(text):
    try:
        return float(text)
    except ValueError:
        return None


def fmt(x):
    return ("%.6g" % x) if x is not None else ""


def gemm_rows(dtype, header, rows):
    col = {h: i for i, h in enumerate(header) if h}
    out = []
    for r in rows:
        get = lambda name: r[col[name]] if col[name] < len(r) else ""
        m, n, k, ms = (number(get(c)) for c in ("M", "N", "K", "Time (msec)"))
        if None in (m, n, k, ms) or ms <= 0:
            continue
        out.append([dtype, int(m), int(n), int(k), get("A Transpose"), get("B Transpose"), fmt(ms)])
    return out


def conv_rows(dtype, header, rows):
    col = {}
    for i, h in enumerate(header):
        key = h.split(" (")[0].strip()
        if key and key not in col:
            col[key] = i
    names = {"R": "R", "S": "S", "pad_h": "pad_h", "pad_w": "pad_w",
             "stride_h": "Vertical stride", "stride_w": "Horizontal stride",
             "fwd": "Forward", "data": "wrt Inputs", "filter": "wrt Parameters"}
    out = []
    for r in rows:
        get = lambda key: number(r[col[key]]) if col[key] < len(r) else None
        dims = [get(c) for c in ("N", "C", "H", "W", "K")]
        if None in dims:
            continue
        window = [get(names[c]) for c in ("R", "S", "pad_h", "pad_w", "stride_h", "stride_w")]
        fwd, data, filt = (get(names[c]) for c in ("fwd", "data", "filter"))
        if None in window or fwd is None or filt is None:
            continue
        at = col.get("Forward Algorithm")
        algo = r[at] if at is not None and at < len(r) else ""
        if algo == "LICIT_PRECOMP_GEMM":  # two V100 rows lost the name's first letters
            algo = "IMPLICIT_PRECOMP_GEMM"
        out.append([dtype] + [int(v) for v in dims + window] + [fmt(fwd), fmt(data), fmt(filt), algo])
    return out


def allreduce_rows(header, rows):
    out = []
    for r in rows:
        floats, gpus, ms = (number(r[i]) if i < len(r) else None for i in (2, 3, 6))
        if None in (floats, gpus, ms):
            continue
        nodes = number(r[4]) if len(r) > 4 else None
        std = number(r[10]) if len(r) > 10 else None
        out.append([int(floats), int(gpus), int(nodes or 1), fmt(ms), fmt(std), r[9]])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workbook")
    ap.add_argument("--prefix", required=True, help="output path prefix")
    a = ap.parse_args()
    gemm, conv, allreduce = [], [], []
    for name, rows in read_workbook(a.workbook).items():
        dtype = precision_of(rows)
        if dtype is None:
            if rows and rows[0] and rows[0][0] == "Precision":
                print(f"{name}: precision {rows[0][1:2]} skipped", file=sys.stderr)
            continue
        titles = sections(rows)
        for start, title in titles:
            if title.startswith("Dense Matrix Multiplication"):
                gemm += gemm_rows(dtype, *section_rows(rows, start, titles))
            elif title.startswith("Convolution"):
                conv += conv_rows(dtype, *section_rows(rows, start, titles))
            elif title.startswith("All-Reduce") and dtype == "float32-ieee":
                allreduce += allreduce_rows(*section_rows(rows, start, titles))
    # strata's tile model knows no operand layout: the profiles are fitted on the untransposed
    # shapes; the transposed ones go to a file of their own (on the TITAN Xp's CUDA 8 some run
    # several times slower than the same shape untransposed)
    plain = [r for r in gemm if r[4] == "N" and r[5] == "N"]
    transposed = [r for r in gemm if not (r[4] == "N" and r[5] == "N")]
    tables = [("gemm", ["dtype", "M", "N", "K", "a_t", "b_t", "ms"], plain),
              ("gemm_transposed", ["dtype", "M", "N", "K", "a_t", "b_t", "ms"], transposed),
              ("conv", ["dtype", "N", "C", "H", "W", "K", "R", "S", "pad_h", "pad_w", "stride_h",
                        "stride_w", "fwd_ms", "bwd_data_ms", "bwd_filter_ms", "fwd_algorithm"], conv),
              ("allreduce", ["floats", "gpus", "nodes", "ms", "std_ms", "algorithm"], allreduce)]
    for what, header, body in tables:
        if not body:
            continue
        with open(f"{a.prefix}_{what}.csv", "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            w.writerows(body)
        print(f"{a.prefix}_{what}.csv: {len(body)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
