"""The Python module against the strata command: same scenarios, same reports, same errors.

Run by ctest (test `python`) with PYTHONPATH at the build tree's python/ folder, STRATA_CLI at
the built `strata` program and STRATA_TEST_SCENARIOS at test/cli/good.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import strata

SCENARIOS = Path(os.environ.get("STRATA_TEST_SCENARIOS",
                                Path(__file__).resolve().parents[2] / "test" / "cli" / "good"))
CLI = os.environ.get("STRATA_CLI")
GPT3 = SCENARIOS / "gpt3_175b.json"
LLAMA_SEARCH = SCENARIOS / "llama3_70b_search.json"


def cli(*args, stdin=None):
    """Runs the strata command; returns (exit code, stdout, stderr)."""
    if not CLI:
        pytest.skip("STRATA_CLI is not set (ctest sets it)")
    p = subprocess.run([CLI, *map(str, args)], input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def load(path):
    return json.loads(Path(path).read_text())


# ---- evaluate --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gpt3_175b", "custom_transformer", "hf_llama", "data",
                                  "pipeline", "dlrm_plan", "step_gpt2", "step_resnet50",
                                  "deepseek_v3"])
def test_evaluate_equals_the_command(name):
    path = SCENARIOS / f"{name}.json"
    rc, out, _ = cli(path)
    assert rc == 0
    assert strata.evaluate(load(path)) == json.loads(out)  # a dict
    assert strata.evaluate(str(path)) == json.loads(out)   # a file
    assert strata.evaluate(path.read_text()) == json.loads(out)  # JSON text


def test_evaluate_table_equals_the_command():
    rc, out, _ = cli(GPT3, "--format", "table")
    assert rc == 0
    assert strata.evaluate(GPT3, format="table") == out


HF_CONFIGS = Path(__file__).resolve().parents[2] / "tools" / "hf_configs"


def test_model_from_hf_config():
    # Mistral-7B-v0.1 from its config.json, as a dict and as a path: 7,241,732,096 parameters
    # (the published safetensors total; untied, no biases, GQA with 8 key/value heads)
    path = HF_CONFIGS / "mistralai--Mistral-7B-v0.1.json"
    config = json.loads(path.read_text())
    def report(model):
        return strata.evaluate(strata.Scenario(
            model=model, cluster=strata.Cluster("dgx-h100", 8),
            training=strata.Training(batch=8, sequence=4096),
            parallel=strata.Parallel(data=8, zero=1)).to_dict())
    by_dict = report(strata.Model.from_hf_config(config, name="mistral"))
    assert by_dict["parameters"] == 7_241_732_096
    assert report(strata.Model.from_hf_config(path, name="mistral")) == by_dict
    assert report(strata.Model.from_hf_id("mistralai/Mistral-7B-v0.1"))["parameters"] == \
        7_241_732_096
    with pytest.raises(strata.Error, match="hf_config"):
        report(strata.Model.from_hf_config({**config, "model_type": "mamba"}))


def test_list_models_equals_the_command():
    rc, out, _ = cli("--list-models", "--format", "json")
    assert rc == 0
    models = strata.list_models()
    assert models == json.loads(out)
    by_name = {m["model"]: m for m in models}
    assert by_name["llama3-8b"]["parameters"] == 8_030_261_248
    assert by_name["meta-llama/Llama-3.1-8B"]["parameters"] == 8_030_261_248
    assert by_name["deepseek-ai/DeepSeek-V3"]["parameters"] == 671_026_404_352
    assert "not_planned" not in by_name["deepseek-ai/DeepSeek-V3"]  # planned since issue 36


def test_gpt3_on_1024_a100():
    # Narayanan et al. SC'21 Table 1: GPT-3 175B (t=8, p=8, d=16, batch 1536) achieves 140 TFLOP/s
    # per A100; the CLI's own test (cli_transformer_gpt3) accepts 140-159.
    r = strata.evaluate(GPT3)
    assert 140 <= r["tflops_per_device"] < 160
    assert r["parallel"]["tensor"] * r["parallel"]["pipeline"] * r["parallel"]["data"] == 1024
    # tokens/s is the batch's tokens over the iteration: 1536 x 2048 / t
    assert r["tokens_per_s"] == pytest.approx(1536 * 2048 / r["iteration_time_s"], rel=1e-12)


def test_typed_objects_equal_the_dict():
    typed = strata.Scenario(
        model="gpt3-175b",
        cluster=strata.Cluster(preset="dgx-a100", devices=1024),
        parallel=strata.Parallel(tensor=8, pipeline=8, virtual_stages=2, data=16,
                                 recompute="full", micro_batch=1),
        training=strata.Training(batch=1536, sequence=2048, precision="fp16",
                                 flash_attention=False))
    assert typed.to_dict() == load(GPT3)
    assert strata.evaluate(typed) == strata.evaluate(GPT3)


def test_older_spellings_give_the_same_report():
    # "transformer" and "global_batch" are the older names of "model" and "batch"
    j = load(GPT3)
    j["transformer"] = j.pop("model")
    j["training"]["global_batch"] = j["training"].pop("batch")
    older = strata.Scenario(transformer=j["transformer"], training=strata.Training(**j["training"]),
                            cluster=strata.Cluster(**j["cluster"]),
                            parallel=strata.Parallel(**j["parallel"]))
    assert older.to_dict() == j
    assert strata.evaluate(older) == strata.evaluate(j) == strata.evaluate(GPT3)


def test_import_needs_no_numpy():
    # an interpreter without NumPy (pyenv's, say) imports the module and evaluates; only
    # sweep(columns=True) needs NumPy
    code = ("import sys; sys.modules['numpy'] = None; import strata; "
            f"print(strata.evaluate({str(GPT3)!r})['iteration_time_s'])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert float(p.stdout) == strata.evaluate(GPT3)["iteration_time_s"]


# ---- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["transformer_heads", "transformer_devices", "transformer_unknown",
                                  "transformer_typo", "transformer_recompute"])
def test_errors_carry_the_command_sentence(name):
    path = SCENARIOS.parent / "bad" / f"{name}.json"
    rc, _, err = cli(path)
    assert rc == 2 and err.startswith("strata: error: ")
    with pytest.raises(strata.Error) as e:
        strata.evaluate(load(path))
    assert str(e.value) == err.strip()[len("strata: error: "):]
    assert isinstance(e.value, ValueError)


def test_error_sentences():
    with pytest.raises(strata.Error, match="^tensor parallelism: the degree must divide the "
                                           "attention heads"):
        strata.evaluate(load(SCENARIOS.parent / "bad" / "transformer_heads.json"))
    with pytest.raises(strata.Error, match="^malformed JSON: "):
        strata.evaluate('{"transformer": ')
    with pytest.raises(strata.Error,
                       match=r"^scenario.transformer: cannot be written as JSON \(a Python object\)"):
        strata.evaluate({"transformer": object()})
    with pytest.raises(strata.Error, match="^cost.tokens: must lie in"):
        strata.evaluate({**load(GPT3), "cost": {"tokens": -1}})
    with pytest.raises(strata.Error, match='^search: a sweep needs a transformer scenario'):
        strata.sweep(GPT3)
    with pytest.raises(strata.Error, match="^buckets: must be an integer"):
        strata.simulate(GPT3, buckets=0)


# ---- sweep, Pareto front, cost ----------------------------------------------------------------

def test_search_report_equals_the_command():
    rc, out, _ = cli(LLAMA_SEARCH)
    assert rc == 0
    report = strata.evaluate(LLAMA_SEARCH)
    assert report == json.loads(out)
    assert strata.sweep(LLAMA_SEARCH) == report["best"]
    assert strata.sweep(LLAMA_SEARCH, front=True) == report["pareto"]


def test_pareto_front():
    report = strata.evaluate(LLAMA_SEARCH)
    front = report["pareto"]
    assert len(front) >= 2
    key = [(p["iteration_s"], p["required_GiB"], p["gpu_hours_per_iteration"]) for p in front]
    for a in key:  # no plan of the front dominates another
        for b in key:
            assert not (all(x <= y for x, y in zip(a, b)) and a != b)
    # fastest first, memory not rising as time rises (a 2-D front: GPU-hours follow time on a fixed
    # cluster), and the fastest plan is the search's best
    assert [k[0] for k in key] == sorted(k[0] for k in key)
    assert all(a[1] >= b[1] for a, b in zip(key, key[1:]))  # equal plans are all kept
    assert front[0] == report["best"][0]
    # every plan of the front beats every other fitting plan on time or memory
    c = strata.sweep(LLAMA_SEARCH, columns=True)
    fits = c["fits"]
    for t, m in zip(c["iteration_s"][fits], c["required_GiB"][fits]):
        assert any(p["iteration_s"] <= t and p["required_GiB"] <= m + 1e-12 for p in front)


def test_cost_worked_by_hand():
    # GPU-hours = devices x iterations x iteration time / 3600; iterations = tokens / (batch x
    # sequence). Llama-3 70B, 512 GPUs, 1024 x 8192 tokens per iteration, 15 T tokens, $2.5/h.
    s = {**load(LLAMA_SEARCH), "cost": {"tokens": 15e12, "price_per_gpu_hour": 2.5}}
    report = strata.evaluate(s)
    assert report["cost"] == {"tokens": 15e12, "price_per_gpu_hour": 2.5}
    best = report["best"][0]
    iterations = 15e12 / (1024 * 8192)  # 1,788,139.3
    assert best["gpu_hours_per_iteration"] == pytest.approx(512 * best["iteration_s"] / 3600)
    assert best["gpu_hours"] == pytest.approx(iterations * 512 * best["iteration_s"] / 3600)
    assert best["cost"] == pytest.approx(2.5 * best["gpu_hours"])
    # one plan: the same formula in the plan's report
    one = strata.evaluate({**load(GPT3), "cost": {"tokens": 300e9, "price_per_gpu_hour": 2.0}})
    t = one["iteration_time_s"]
    assert one["cost"]["iterations"] == pytest.approx(300e9 / (1536 * 2048))  # 95,367.4
    assert one["cost"]["gpu_hours"] == pytest.approx(300e9 / (1536 * 2048) * 1024 * t / 3600)
    assert one["cost"]["money"] == pytest.approx(2.0 * one["cost"]["gpu_hours"])


def test_sweep_columns_skip_the_degrees_the_model_refuses():
    # issue 39: tensor 16 does not divide Llama-3 70B's 8 key/value heads; every path skips it
    # (the batch path once raised "plans[240]: tensor parallelism: the degree must divide ...")
    s = json.loads(LLAMA_SEARCH.read_text())
    s["search"]["tensor"] = [1, 2, 4, 8, 16]
    report = strata.evaluate(s)
    c = strata.sweep(s, columns=True)
    assert len(c["tensor"]) == report["candidates"]
    assert 16 not in set(c["tensor"].tolist())
    assert int(c["fits"].sum()) == report["fitting"]


def test_sweep_columns_agree_with_the_ranked_plans():
    report = strata.evaluate(LLAMA_SEARCH)
    c = strata.sweep(LLAMA_SEARCH, columns=True)
    n = report["candidates"]
    assert all(isinstance(v, np.ndarray) and v.shape == (n,) for v in c.values())
    assert int(c["fits"].sum()) == report["fitting"]
    # the fastest fitting candidate is the search's best, to the last bit
    i = int(np.argmin(np.where(c["fits"], c["iteration_s"], np.inf)))
    best = report["best"][0]
    assert c["iteration_s"][i] == best["iteration_s"]
    assert c["peak_GiB"][i] == best["peak_GiB"]
    assert c["required_GiB"][i] == best["required_GiB"]
    for k in ("tensor", "pipeline", "data", "zero", "micro_batch", "virtual_stages"):
        assert c[k][i] == best["parallel"][k]
    assert c["recompute"][i] == best["parallel"]["recompute"]
    # the time terms sum to the iteration; GPU-hours = 512 x t / 3600
    terms = [k for k in c if k.endswith("_s") and k not in ("iteration_s", "tokens_per_s")]
    assert len(terms) == 11
    np.testing.assert_allclose(sum(c[k] for k in terms), c["iteration_s"], rtol=1e-12)
    np.testing.assert_allclose(c["gpu_hours_per_iteration"], 512 * c["iteration_s"] / 3600,
                               rtol=1e-12)
    # one thread or many: the same columns
    one = strata.sweep(LLAMA_SEARCH, columns=True, threads=1)
    for k in c:
        np.testing.assert_array_equal(one[k], c[k])


def test_a_swept_plan_evaluates_to_its_row():
    c = strata.sweep(LLAMA_SEARCH, columns=True)
    i = int(np.flatnonzero(c["pipeline"] > 1)[0])
    s = load(LLAMA_SEARCH)
    del s["search"]
    s["parallel"] = {k: (c[k][i].item()) for k in ("tensor", "pipeline", "data", "zero",
                                                   "micro_batch", "virtual_stages", "context",
                                                   "expert", "sequence_parallel")}
    s["parallel"]["recompute"] = str(c["recompute"][i])
    r = strata.evaluate(s)
    assert r["iteration_time_s"] == c["iteration_s"][i]
    assert r["memory_GiB"]["peak"] == pytest.approx(c["peak_GiB"][i], rel=1e-12)
    assert r["memory_GiB"]["required"] == pytest.approx(c["required_GiB"][i], rel=1e-12)
    assert r["mfu"] == pytest.approx(c["mfu"][i], rel=1e-12)


# ---- simulate --------------------------------------------------------------------------------

def test_simulate_equals_the_command(tmp_path):
    trace = tmp_path / "trace.json"
    rc, out, _ = cli("simulate", GPT3, "--overlap", "--buckets", 4, "--trace", trace)
    assert rc == 0
    report, timeline = strata.simulate(GPT3, overlap=True, buckets=4, trace=True)
    assert report == json.loads(out)
    assert timeline == json.loads(trace.read_text())
    assert strata.simulate(load(SCENARIOS / "data.json")) == json.loads(
        cli("simulate", SCENARIOS / "data.json")[1])
    with pytest.raises(strata.Error, match="^schedule: a transformer scenario sets its schedule"):
        strata.simulate(GPT3, schedule="1f1b")


def test_simulate_details_on_request():
    """The summary by default; each stream's utilization and the critical path with details."""
    data = load(SCENARIOS / "data.json")
    brief = strata.simulate(data)
    assert "critical_path" not in brief and "utilization" not in brief
    full = strata.simulate(data, details=True)
    assert full == json.loads(cli("simulate", SCENARIOS / "data.json", "--details")[1])
    assert full["iteration_time_s"] == brief["iteration_time_s"]
    assert len(full["critical_path"]) > 0


def test_evaluate_explain_equals_the_command():
    """explain=N is the command's --explain N: the search's table, then its N-th plan."""
    path = SCENARIOS / "llama3_70b_search.json"
    text = strata.evaluate(load(path), format="table", explain=2)
    assert text == cli(path, "--format", "table", "--explain", 2)[1]
    assert "\nplan 2 of the search:\n" in text
    with pytest.raises(strata.Error, match="^explain: explains a plan of a transformer search"):
        strata.evaluate(GPT3, format="table", explain=1)


def test_evaluate_csv_equals_the_command():
    """format="csv" is the command's --format csv: a search's plans one row each."""
    text = strata.evaluate(load(SCENARIOS / "llama3_70b_search.json"), format="csv")
    assert text == cli(SCENARIOS / "llama3_70b_search.json", "--format", "csv")[1]
    header, first = text.splitlines()[:2]
    assert header.startswith("rank,") and "mfu" in header.split(",")
    assert first.startswith("1,")


# ---- docs/python.md --------------------------------------------------------------------------

def test_docs_example(capsys, monkeypatch):
    """Runs docs/python.md's cells in order and compares what they print with the page."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "python.md").read_text()
    parts = text.split("```")
    cells = []  # (code, expected output)
    for i in range(1, len(parts) - 1, 2):
        if parts[i].startswith("python\n"):
            after = parts[i + 2] if i + 2 < len(parts) else ""
            expected = after[1:] if parts[i + 1].strip() == "" and after.startswith("\n") else ""
            cells.append((parts[i][len("python\n"):], expected))
    assert len(cells) == 6 and all(expected for _, expected in cells)
    monkeypatch.chdir(root)
    scope = {}
    for code, expected in cells:
        exec(compile(code, "docs/python.md", "exec"), scope)
        assert capsys.readouterr().out == expected


def test_list_gpus_equals_the_command():
    gpus = strata.list_gpus()
    assert {"rtx4090", "h100", "mi325x"} <= {g["key"] for g in gpus}
    if CLI:
        out = subprocess.run([CLI, "--list-gpus", "--format", "json"], capture_output=True,
                             text=True, check=True).stdout
        assert json.loads(out) == gpus
    # a listed datasheet, edited, is a scenario's device
    g = next(g for g in gpus if g["key"] == "rtx4090")
    r = strata.evaluate({"model": "gpt2-124m", "cluster": {"device": g, "levels": [
        {"fanout": 1, "bandwidth_GBps": 32}]}, "training": {"batch": 8, "sequence": 1024}})
    assert r["memory_GiB"]["capacity"] == pytest.approx(24.0)


def test_a_search_names_the_values_it_could_not_use():
    # issue 38: requested micro-batches that divide no replica's share of the batch were
    # dropped silently; the report lists them (and the values the search did use are not listed)
    s = json.loads(LLAMA_SEARCH.read_text())
    s["search"]["micro_batch"] = [1, 2, 3, 4]
    unused = strata.evaluate(s)["unused"]
    assert unused == ["micro_batch 3: it divides no data-parallel replica's share of the batch "
                      "in any plan"]


def test_a_parameter_server_search_stops_at_its_time_limit():
    # issue 39: Python calls had no time limit; evaluate(time_limit=S) stops a long search as
    # `strata FILE --time-limit S` does
    search = SCENARIOS / "parameter_server_search.json"
    with pytest.raises(strata.Error, match=r"time_limit: the search stopped after 1e-09 s"):
        strata.evaluate(search, time_limit=1e-9)
    with pytest.raises(strata.Error, match=r"time_limit: must be a number of seconds"):
        strata.evaluate(search, time_limit=-1)


def test_a_transformer_search_stops_at_its_time_limit():
    # issue 39: evaluate, sweep and the batch columns stop a transformer search as `strata FILE
    # --time-limit S` and `strata-mpi --time-limit S` do; without a limit the same search ranks
    stopped = r"time_limit: the search stopped after 1e-09 s, 0 % done"
    with pytest.raises(strata.Error, match=stopped):
        strata.evaluate(LLAMA_SEARCH, time_limit=1e-9)
    with pytest.raises(strata.Error, match=stopped):
        strata.sweep(LLAMA_SEARCH, time_limit=1e-9)
    with pytest.raises(strata.Error, match=stopped):
        strata.sweep(LLAMA_SEARCH, columns=True, time_limit=1e-9)
    with pytest.raises(strata.Error, match=r"time_limit: must be a number of seconds"):
        strata.sweep(LLAMA_SEARCH, time_limit=float("nan"))
    # a limit where nothing searches is refused, named by Python's keyword
    with pytest.raises(strata.Error, match=r"^time_limit: stops a search, not a transformer plan"):
        strata.evaluate(SCENARIOS / "gpt3_175b.json", time_limit=5)
    assert strata.sweep(LLAMA_SEARCH, time_limit=600)


def test_sweep_warns_of_the_values_it_could_not_use():
    s = json.loads(LLAMA_SEARCH.read_text())
    s["search"]["micro_batch"] = [1, 2, 3]
    with pytest.warns(UserWarning, match=r"search: not used: micro_batch 3: it divides no"):
        best = strata.sweep(s)
    assert best  # the other values still rank
