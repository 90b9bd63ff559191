#!/usr/bin/env python3
"""The table of docs/hf_configs.md, from index.json (the data test/unit/hf_config.cpp checks).

strata's count is the published count less the elements that are not parameters; the unit test
asserts that `read_hf_config(config).net.parameters()` equals it for every row, so the table
cannot claim a count strata does not produce.

  tools/hf_configs/table.py    print the table (paste it into docs/hf_configs.md)
"""
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent


def main():
    index = json.loads((HERE / "index.json").read_text())
    print("| model id | model_type | kind | strata's count | published | source | a plan |")
    print("|---|---|---|--:|--:|---|---|")
    for e in index:
        cfg = json.loads((HERE / (e["id"].replace("/", "--") + ".json")).read_text())
        if "error" in e:
            print(f"| {e['id']} | {cfg['model_type']} | {e['kind']} | refused | | | "
                  f"refused: {e['error']} |")
            continue
        extra = e.get("not_parameters", 0)
        strata = e["published"] - extra
        source = e["source"]
        if extra:
            source += f"; {extra:,} of it are {e['not_parameters_are']}"
        refused = e.get("refused", "")
        if refused == "sliding_window":
            plan = f"exact up to training.sequence {e['sequence']:,} (sliding window)"
        elif refused:
            plan = f"refused ({refused})"
        else:
            plan = "exact"
        print(f"| {e['id']} | {cfg['model_type']} | {e['kind']} | {strata:,} | "
              f"{e['published']:,} | {source} | {plan} |")


if __name__ == "__main__":
    main()
