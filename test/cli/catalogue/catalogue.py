#!/usr/bin/env python3
"""The bad-input catalogue of issue 13: runs `strata` on several hundred malformed or extreme
inputs and checks that none crashes, hangs or lies.

Each case must either fail cleanly -- exit code 2 and exactly one line on stderr matching
`^strata: error: [^:]+: .+` -- or succeed -- exit code 0 with no `null`, `nan` or `inf` in its
output. Cases marked "error" must fail; "either" cases may do both. The inputs are generated here
(deterministically) into WORK, so the repository holds only this script and the seed files it
mutates (test/cli/good, test/cli/traces, test/data).

Usage: catalogue.py STRATA_EXE WORK_DIR [--list] [--only SUBSTRING] [--jobs N]
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
GOOD = os.path.join(ROOT, "test", "cli", "good")
TRACES = os.path.join(ROOT, "test", "cli", "traces")
DATA = os.path.join(ROOT, "test", "data")

ERROR_LINE = re.compile(r"^strata: error: [^:\n]+: .+$")
NON_FINITE = re.compile(r"(?<![A-Za-z_])(null|nan|-nan|inf|-inf|NaN|Infinity|-Infinity)(?![A-Za-z_])")
TIMEOUT_S = 30

# Cases whose fix lies in a file this catalogue's owner does not own; they are run and reported,
# but do not fail the test (an XPASS is reported when they start passing). Each names the file.
KNOWN = {
}


class Case:
    def __init__(self, name, args, expect="either", files=None, stdin=None):
        self.name = name
        self.args = args  # "{name}" placeholders are replaced by the paths of `files`
        self.expect = expect  # "error" or "either"
        self.files = files or {}  # name -> bytes
        self.stdin = stdin


def load(path):
    with open(path, "rb") as f:
        return f.read()


def leaves(node, path=()):
    """Every scalar leaf of a JSON value, as (path, value)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, path + (i,))
    else:
        yield path, node


def replaced(node, path, raw):
    """The JSON text of `node` with the leaf at `path` replaced by the raw JSON text `raw`."""
    marker = "\u0000MARK\u0000"

    def sub(n, p):
        if not p:
            return marker
        n = json.loads(json.dumps(n))
        n[p[0]] = sub(n[p[0]], p[1:])
        return n

    text = json.dumps(sub(node, path))
    return text.replace(json.dumps(marker), raw).encode()


# Replacement values for numbers, strings and booleans, as raw JSON text.
BAD_NUMBERS = ["0", "-1", "1e309", "1e308", "-1e308", "1e-308", "0.5", "2147483648",
               "9007199254740993", "4294967297", "\"12\"", "null", "true", "[]", "{}", "-0"]
BAD_STRINGS = ["\"\"", "5", "null", "[\"x\"]", "{\"a\": 1}", "\"\\u0000\"", "\"" + "x" * 5000 + "\"",
               "\"\\ud800\"", "true"]
BAD_BOOLS = ["1", "\"true\"", "null", "[]"]


def mutations(base_name, text, stride):
    node = json.loads(text)
    out = []
    for k, (path, value) in enumerate(leaves(node)):
        if isinstance(value, bool):
            pool = BAD_BOOLS
        elif isinstance(value, (int, float)):
            pool = BAD_NUMBERS
        else:
            pool = BAD_STRINGS
        # a deterministic subset: `stride` values per leaf, rotating through the pool
        for j in range(stride):
            raw = pool[(k * stride + j) % len(pool)]
            label = ".".join(str(p) for p in path)
            out.append((f"{base_name}:{label}={raw[:12]}", replaced(node, path, raw)))
    return out


def scenario_cases():
    cases = []
    bases = {
        "data": 4, "custom_model": 2, "pipeline": 5, "parameter_server": 4, "spatial": 3,
        "data_filter": 3, "step_gpt2": 3, "step_resnet50": 3, "gpt3_175b": 2,
        "custom_transformer": 1, "llama3_70b_search": 1, "parameter_server_search": 2,
    }
    for base, stride in bases.items():
        text = load(os.path.join(GOOD, base + ".json"))
        for name, content in mutations(base, text, stride):
            cases.append(Case("mutate " + name, ["{in}"], "either", {"in": content}))
    # structural damage
    data = load(os.path.join(GOOD, "data.json"))
    structural = {
        "empty": b"", "space": b"   \n", "brace": b"{", "array": b"[]", "object": b"{}",
        "null": b"null", "number": b"1", "string": b"\"resnet50\"", "truncated": data[: len(data) // 2],
        "trailing": data + b"}", "nul byte": data[:10] + b"\x00" + data[10:],
        "bad utf8": b"{\"model\": \"\xff\xfe\"}", "bom": b"\xef\xbb\xbf" + data,
        "deep arrays": b"[" * 100000 + b"]" * 100000, "deep objects": b"{\"a\":" * 50000 + b"1" + b"}" * 50000,
        "deep unclosed": b"[" * 100000, "comment": b"// c\n" + data, "nan literal": data.replace(b"256", b"NaN"),
        "infinity literal": data.replace(b"256", b"Infinity"), "1e309": data.replace(b"256", b"1e309"),
        "-1e309": data.replace(b"256", b"-1e309"), "hex": data.replace(b"256", b"0x400"),
        "duplicate key": data.replace(b"\"model\": \"resnet50\"", b"\"model\": \"resnet50\", \"model\": \"vgg16\""),
        "long name": b"{\"model\": \"" + b"n" * 10_000_000 + b"\"}",
        "long key": b"{\"" + b"k" * 1_000_000 + b"\": 1}",
        "long model object": b"{\"model\": {\"name\": \"" + b"m" * 1_000_000 + b"\"}}",
        "many layers": json.dumps({"model": {"input": {"c": 1, "h": 8, "w": 8},
                                              "layers": [{"type": "relu"}] * 200000},
                                   "cluster": "hc1", "parallel": {"kind": "data", "p": 1},
                                   "training": {"batch": 1}}).encode(),
    }
    for name, content in structural.items():
        cases.append(Case("structure " + name, ["{in}"], "error" if name not in ("duplicate key", "many layers", "bom") else "either", {"in": content}))
        if name in ("deep arrays", "long name", "truncated", "empty", "nan literal"):
            cases.append(Case("simulate structure " + name, ["simulate", "{in}"], "error", {"in": content}))
            cases.append(Case("replay structure " + name, ["replay", "{in}"], "error", {"in": content}))
    return cases


def regression_cases():
    """The defects of issue 13, one case (or more) each."""
    c = []
    good = lambda n: os.path.join(GOOD, n + ".json")
    for cmd in ([], ["simulate"], ["replay"]):
        c.append(Case("1 directory " + " ".join(cmd), cmd + [ROOT], "error"))
    c.append(Case("1 directory calibrate", ["calibrate", "--gemm", ROOT, "--membound", ROOT, "--attention", ROOT], "error"))
    c.append(Case("1 dev-null input", ["/dev/null"], "error"))
    c.append(Case("3 custom model 3 buckets", ["simulate", good("custom_model"), "--overlap", "--buckets", "3"], "either"))
    for b in (2, 3, 5, 7, 16, 64, 1000):
        c.append(Case(f"3 resnet50 {b} buckets", ["simulate", good("data"), "--overlap", "--buckets", str(b)], "either"))
    wrap = {"model": "resnet50", "cluster": {"name": "x", "device": "v100-16gb", "levels": [
        {"fanout": 65536, "bandwidth_GBps": 1}, {"fanout": 65537, "bandwidth_GBps": 1}]},
        "parallel": {"kind": "data", "p": 1}, "training": {"batch": 1}}
    c.append(Case("4 fanout product wraps", ["{in}"], "error", {"in": json.dumps(wrap).encode()}))
    ps = json.loads(load(good("parameter_server")))
    for servers, replicas, workers in ((1, 65536, 65537), (16777216, 16777216, 16777216), (1, 1, 16777216)):
        p = json.loads(json.dumps(ps))
        p["parallel"].update({"servers": servers, "replicas": replicas, "workers": workers})
        c.append(Case(f"4 yan C1 {servers}x{replicas}x{workers}", ["{in}"], "error", {"in": json.dumps(p).encode()}))
    p = json.loads(json.dumps(ps))
    p["parallel"]["layers"] = [{"partitions": 65536, "replicas": 65537}] * 5
    c.append(Case("4 yan C3 overflow", ["{in}"], "error", {"in": json.dumps(p).encode()}))
    times = json.loads(load(good("custom_model")))
    n_layers = len(times["model"]["layers"])
    for v in ("1e308", "1e300", "1e7"):
        t = dict(times)
        text = json.dumps(t)[:-1] + ", \"layer_times\": [" + ",".join([f"[{v}, {v}, {v}]"] * n_layers) + "]}"
        c.append(Case(f"7 layer_times {v}", ["{in}"], "error", {"in": text.encode()}))
    c.append(Case("9 gamma nan", ["simulate", good("data"), "--gamma", "nan"], "error"))
    for g in ("inf", "-1", "1e9", "-nan", "abc", "1e-320"):
        c.append(Case(f"9 gamma {g}", ["simulate", good("data"), "--gamma", g], "either" if g == "1e-320" else "error"))
    for segs in (16777216, 1 << 20, 100000):
        p = json.loads(load(good("pipeline")))
        p["parallel"]["segments"] = segs
        p["training"]["batch"] = segs
        c.append(Case(f"11 pipeline segments {segs} evaluate", ["{in}"], "either", {"in": json.dumps(p).encode()}))
        c.append(Case(f"11 pipeline segments {segs} simulate", ["simulate", "{in}"], "either", {"in": json.dumps(p).encode()}))
    for machines in (100, 400, 5000, 16777216):
        p = json.loads(load(good("parameter_server_search")))
        p["cluster"]["devices"] = machines
        c.append(Case(f"11 ps search {machines} machines", ["{in}", "--time-limit", "2"], "either", {"in": json.dumps(p).encode()}))
    c.append(Case("11 time limit nan", ["--time-limit", "nan"], "error"))
    c.append(Case("11 time limit negative", ["--time-limit", "-1"], "error"))
    c.append(Case("12 datasheet 5", ["{in}"], "error", {"in": b"{\"step\": {\"model\": \"gpt2\", \"layers\": 2, \"hidden\": 64, \"heads\": 2, \"sequence\": 8, \"batch\": 1}, \"profile\": {\"datasheet\": 5}}"}))
    c.append(Case("12 number overflow", ["{in}"], "error", {"in": load(good("data")).replace(b"256", b"1e309")}))
    c.append(Case("12 profile directory", ["{in}"], "error", {"in": ("{\"step\": {\"model\": \"gpt2\", \"layers\": 2, \"hidden\": 64, \"heads\": 2, \"sequence\": 8, \"batch\": 1}, \"profile\": " + json.dumps(ROOT) + "}").encode()}))
    # command-line mistakes (CLI11)
    for args in (["--format", "xml"], ["--nope"], ["simulate"], ["replay"], ["calibrate"],
                 ["simulate", good("data"), "--buckets", "0"], ["simulate", good("data"), "--buckets", "-3"],
                 ["simulate", good("data"), "--buckets", "1e9"], ["simulate", good("data"), "--buckets", "x"],
                 ["simulate", good("data"), "--schedule", "zigzag"], ["simulate", good("data"), "--max-in-flight", "-1"],
                 ["a.json", "b.json"], ["simulate", good("data"), "extra"], ["--format"],
                 ["calibrate", "--gemm", "x"], ["calibrate", "--gemm", "a", "--membound", "b", "--attention", "c", "--sms", "0"],
                 ["calibrate", "--gemm", "a", "--membound", "b", "--attention", "c", "--device", "tpu"]):
        c.append(Case("12 options " + " ".join(os.path.basename(a) for a in args), args, "error"))
    c.append(Case("missing file", ["/nonexistent/x.json"], "error"))
    # outputs that cannot be written
    for target in ("/dev/full", "/nonexistent/dir/t.json", ROOT):
        c.append(Case(f"6 trace to {target}", ["simulate", good("data"), "--trace", target], "error"))
        c.append(Case(f"6 replay trace to {target}", ["replay", os.path.join(TRACES, "two_ranks.json"), "--trace", target], "error"))
        c.append(Case(f"6 output to {target}", ["calibrate", "--gemm", os.path.join(DATA, "h100_gemm.csv"),
                                                "--membound", os.path.join(DATA, "h100_membound.csv"),
                                                "--attention", os.path.join(DATA, "h100_attention.csv"),
                                                "--output", target], "error"))
    return c


def csv_mutations(path, label):
    """Damaged copies of a CSV: empty, header only, a missing column, bad numbers per column."""
    lines = load(path).decode().splitlines()
    header, rows = lines[0], lines[1:]
    cols = header.split(",")
    out = [(f"{label} empty", b""), (f"{label} header only", (header + "\n").encode()),
           (f"{label} blank", b"\n\n"), (f"{label} ragged", (header + "\n" + rows[0] + ",x\n").encode()),
           (f"{label} unterminated quote", (header + "\n\"" + rows[0] + "\n").encode())]
    for i, col in enumerate(cols[:6]):
        without = [",".join(f for j, f in enumerate(l.split(",")) if j != i) for l in lines]
        out.append((f"{label} without {col}", ("\n".join(without) + "\n").encode()))
        for bad in ("1e20", "-1", "0", "nan", "inf", "1e308", "x", "", "1e-300"):
            first = rows[0].split(",")
            if i >= len(first):
                continue
            first[i] = bad
            text = "\n".join([header, ",".join(first)] + rows[1:]) + "\n"
            out.append((f"{label} {col}={bad or 'empty'}", text.encode()))
    return out


def calibrate_cases():
    c = []
    gemm, mem, att = (os.path.join(DATA, f) for f in ("h100_gemm.csv", "h100_membound.csv", "h100_attention.csv"))
    base = {"gemm": gemm, "membound": mem, "attention": att}
    for which, path in base.items():
        for name, content in csv_mutations(path, which):
            args = ["calibrate"]
            for k, v in base.items():
                args += ["--" + k, "{in}" if k == which else v]
            c.append(Case("calibrate " + name, args, "either", {"in": content}))
    steps = os.path.join(DATA, "h100_steps_gpt2.csv")
    lines = load(steps).decode().splitlines()
    for col, bad in (("layers", "1000000"), ("layers", "1e20"), ("hidden", "1e20"), ("batch", "-1"),
                     ("heads", "0.5"), ("step_ms", "0"), ("step_ms", "-5"), ("peak_bytes", "1e300"),
                     ("sequence", "nan"), ("precision", "fp64"), ("model", "gpt5")):
        cols = lines[0].split(",")
        first = lines[1].split(",")
        first[cols.index(col)] = bad
        text = "\n".join([lines[0], ",".join(first)] + lines[2:]) + "\n"
        c.append(Case(f"5 steps {col}={bad}", ["calibrate", "--gemm", gemm, "--membound", mem, "--attention", att,
                                                 "--steps", "{in}"], "error", {"in": text.encode()}))
    c.append(Case("5 steps directory", ["calibrate", "--gemm", gemm, "--membound", mem, "--attention", att, "--steps", ROOT], "error"))
    c.append(Case("5 steps empty", ["calibrate", "--gemm", gemm, "--membound", mem, "--attention", att, "--steps", "{in}"], "error", {"in": b""}))
    return c


def replay_cases():
    c = []
    text = load(os.path.join(TRACES, "two_ranks.json"))
    for name, content in mutations("two_ranks", text, 2):
        c.append(Case("replay " + name, ["replay", "{in}"], "either", {"in": content}))
    return c


def profile_cases():
    """Step scenarios with damaged profile files (the shipped H100 profile, mutated)."""
    c = []
    prof = load(os.path.join(ROOT, "tools", "profiles", "h100_sxm.json"))
    node = json.loads(prof)
    step = lambda p: ("{\"step\": {\"model\": \"gpt2\", \"layers\": 2, \"hidden\": 64, \"heads\": 2, "
                      "\"sequence\": 8, \"batch\": 1}, \"profile\": \"" + p + "\"}").encode()
    picks = ["0", "1e-300", "-1", "1e308", "\"x\"", "null"]
    for k, (path, value) in enumerate(leaves(node)):
        if k % 3 != 0 or not isinstance(value, (int, float)):
            continue
        raw = picks[k % len(picks)]
        label = ".".join(str(p) for p in path)
        c.append(Case(f"7 profile {label}={raw}", ["{scenario}"], "either",
                      {"prof": replaced(node, path, raw), "scenario": None}))
    return c, step


def run_case(exe, work, idx, case, step_template):
    d = os.path.join(work, f"{idx:04d}")
    os.makedirs(d, exist_ok=True)
    paths = {}
    for name, content in case.files.items():
        paths[name] = os.path.join(d, name + ".in")
    for name, content in case.files.items():
        if content is None:  # a step scenario that points at the "prof" file
            content = step_template(paths["prof"])
        with open(paths[name], "wb") as f:
            f.write(content)
    args = [a.format(**paths) if "{" in a else a for a in case.args]
    try:
        p = subprocess.run([exe] + args, cwd=d, input=case.stdin, capture_output=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"hung (more than {TIMEOUT_S} s)"
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode == 2:
        lines = err.split("\n")
        if len(lines) != 2 or lines[1] != "" or not ERROR_LINE.match(lines[0]):
            return f"exit 2 but stderr is not one 'strata: error: <field>: <what>' line: {err[:300]!r}"
        if len(lines[0]) > 500:
            return f"error line of {len(lines[0])} characters"
        return None
    if p.returncode == 0:
        if case.expect == "error":
            return f"exit 0, expected an error: {out[:200]!r}"
        m = NON_FINITE.search(out)
        if m:
            return f"exit 0 with a non-finite number ({m.group(0)!r}) in the report"
        if err.strip():
            return f"exit 0 with stderr: {err[:200]!r}"
        return None
    return f"exit code {p.returncode} (a crash?): {err[-300:]!r}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("work")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    a.exe = os.path.abspath(a.exe)
    prof_cases, step_template = profile_cases()
    cases = scenario_cases() + regression_cases() + calibrate_cases() + replay_cases() + prof_cases
    cases = [c for c in cases if a.only in c.name]
    if a.list:
        for c in cases:
            print(c.name)
        print(f"{len(cases)} cases")
        return 0
    os.makedirs(a.work, exist_ok=True)
    failures, xfails, xpasses = [], [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = list(pool.map(lambda ic: run_case(a.exe, a.work, ic[0], ic[1], step_template),
                                enumerate(cases)))
    for case, problem in zip(cases, results):
        known = KNOWN.get(case.name)
        if problem and known:
            xfails.append((case, problem, known))
        elif problem:
            failures.append((case, problem))
        elif known:
            xpasses.append(case)
    for case, problem, known in xfails:
        print(f"KNOWN {case.name}: {problem} [{known}]")
    for case in xpasses:
        print(f"XPASS {case.name}: now passes; remove it from KNOWN")
    for case, problem in failures:
        print(f"FAIL {case.name}: {problem}\n     strata {' '.join(case.args)}")
    print(f"{len(cases)} bad inputs: {len(cases) - len(failures) - len(xfails)} handled, "
          f"{len(failures)} failed, {len(xfails)} known (other files)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
