#!/usr/bin/env python3
"""tools/devices/<key>.json: one datasheet per device preset, written from the presets.

The constexpr presets of include/strata/hardware/presets.hpp are the truth; these files are their
datasheets as `strata --list-gpus --format json` prints them (io/device_file.hpp's schema), so that
a user can copy one, edit it and give it as a scenario's "device". The unit test
test/unit/devices.cpp fails when a file differs from its preset.

  tools/devices/generate.py STRATA            rewrite the files with the built `strata` program
  tools/devices/generate.py STRATA --check    fail when one is stale, missing or extra
"""
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    check = "--check" in sys.argv[2:]
    out = subprocess.run([sys.argv[1], "--list-gpus", "--format", "json"], check=True,
                         capture_output=True, text=True).stdout
    wanted = {d["key"]: json.dumps(d, indent=2) + "\n" for d in json.loads(out)}
    have = {p.stem: p for p in HERE.glob("*.json")}
    bad = [k for k in sorted(set(wanted) | set(have))
           if k not in have or k not in wanted or have[k].read_text() != wanted[k]]
    if check:
        for k in bad:
            print(f"tools/devices/{k}.json: stale, missing or not a preset")
        sys.exit(1 if bad else 0)
    for k in have:
        if k not in wanted:
            have[k].unlink()
    for k, text in wanted.items():
        (HERE / f"{k}.json").write_text(text)
    print(f"wrote {len(wanted)} datasheets")


if __name__ == "__main__":
    main()
