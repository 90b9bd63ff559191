"""Fine-tuning inputs from Python (docs/finetuning.md): QLoRA's storage, the paged optimizer's
states apart from the peak, the defaults a report names, and a bad field named.

Run by ctest (test `python`) as test_strata.py is.
"""

import json
import os
from pathlib import Path

import pytest

import strata

SCENARIOS = Path(os.environ.get("STRATA_TEST_SCENARIOS",
                                Path(__file__).resolve().parents[2] / "test" / "cli" / "good"))
QLORA = json.loads((SCENARIOS / "qlora_llama3_8b.json").read_text())


def test_qlora_storage_worked_by_hand():
    r = strata.evaluate(QLORA)
    # 6,979,584,000 block weights x 0.515869140625 B (NF4, double quantization) + the fp32
    # embedding and head (4 x 1,050,677,248) + fp32 rank-64 adapters (4 x 167,772,160)
    assert r["memory_GiB"]["weights"] * 2**30 == pytest.approx(8_474_349_632, rel=1e-9)
    paged = r["memory_GiB"]["paged_optimizer_states"]
    assert paged > 0
    assert r["memory_GiB"]["optimizer_states"] < paged  # most rank-64 factors are >= 1e5 elements
    assert any(d.startswith("training.lora.embeddings: fp32") for d in r["defaults"])


def test_a_bf16_base_weighs_twice_the_frozen_blocks():
    bf16 = json.loads(json.dumps(QLORA))
    bf16["training"]["lora"] = {"rank": 64, "targets": "all_linear", "base": "bf16"}
    r = strata.evaluate(bf16)
    # bf16 blocks and bf16 embedding and head (2 x 8,030,261,248), fp32 adapters (4 x 167,772,160)
    assert r["memory_GiB"]["weights"] * 2**30 == pytest.approx(2 * 8_030_261_248 + 4 * 167_772_160,
                                                              rel=1e-9)


def test_bad_fine_tuning_fields_are_named():
    bad = json.loads(json.dumps(QLORA))
    bad["training"]["lora"]["base"] = "nf3"
    with pytest.raises(strata.Error, match=r"training\.lora\.base: must be one of"):
        strata.evaluate(bad)
    bad["training"]["lora"]["base"] = "nf4"
    bad["training"]["optimizer"] = "adafactor"
    with pytest.raises(strata.Error, match=r"training\.optimizer: must be one of .*paged_adamw_8bit"):
        strata.evaluate(bad)


def test_litgpt_qlora_peaks_in_the_next_forward_and_names_its_first_step():
    litgpt = json.loads((SCENARIOS / "litgpt_qlora_llama32_1b.json").read_text())
    r = strata.evaluate(litgpt)
    m = r["memory_GiB"]
    assert m["moment"] == "next forward"
    # the previous step's graph-held inputs (bitsandbytes 0.42): (6 C + 2 I) x 1024 tokens x 16
    # layers + 2 C x 1024 = 473,956,352 B at most separate the two
    assert 0 < m["peak"] - m["first_step"] <= 473_956_352 / 2**30
    assert "model.tied: false (litgpt copies the tied embedding into a separate head)" in r["defaults"]
    # a cross-entropy over the whole fp32 logits keeps 12 B a logit where the chunks keep 4
    whole = json.loads(json.dumps(litgpt))
    whole["training"]["loss"] = "cross_entropy"
    assert strata.evaluate(whole)["memory_GiB"]["logits"] > m["logits"]
    whole["training"]["loss"] = "chunky"
    with pytest.raises(strata.Error, match=r"training\.loss: must be one of"):
        strata.evaluate(whole)


def test_gemma2_soft_capped_attention_runs_as_each_recipe_runs_it():
    lit = json.loads((SCENARIOS / "gemma2_litgpt.json").read_text())
    capped = strata.evaluate(lit)
    # the same config without the caps: LitGPT runs SDPA's fused kernel instead
    config = json.loads((Path(__file__).resolve().parents[2] / "tools" / "hf_configs"
                         / "google--gemma-2-2b.json").read_text())
    config["attn_logit_softcapping"] = None
    config["final_logit_softcapping"] = None
    plain = json.loads(json.dumps(lit))
    plain["model"] = {"hf_config": config}
    uncapped = strata.evaluate(plain)
    # per layer the written-out scores keep 8 B each (b 2 x 8 heads x 512 x 512 = 4,194,304
    # scores: 33,554,432 B) where SDPA kept its fp32 log-sum-exp (4 B x 1,024 tokens x 8 heads =
    # 32,768 B): 26 layers x 33,521,664 B = 871,563,264 B more
    more = capped["memory_GiB"]["activations"] - uncapped["memory_GiB"]["activations"]
    assert more * 2**30 == pytest.approx(871_563_264, rel=1e-9)
    # transformers' SDPA attention drops the cap, and the report says so
    hf = json.loads(json.dumps(lit))
    hf["training"]["framework"] = "huggingface"
    assert any(d.startswith("model.attention_softcap: dropped") for d in strata.evaluate(hf)["defaults"])
    lit["training"]["framework"] = "megatron"
    lit["training"].pop("lora")
    with pytest.raises(strata.Error, match=r"transformer\.attention_softcap: how the megatron"):
        strata.evaluate(lit)
