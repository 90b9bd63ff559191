#!/usr/bin/env bash
# Issue 38: `pip install .` with Debian's packages only. A fresh virtual environment under a
# temporary folder (removed at the end), `pip install .` with no package index to reach (the
# in-tree build backend, python/build_backend.py, needs none), then the README's command from the
# tree's root; then, from outside the tree, an "hf_id" scenario (its config is the package's own
# data) and the version pip recorded. Prints the iteration time. $PYTHON: the interpreter
# (default python3; Debian's /usr/bin/python3 in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-pip-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"${PYTHON:-python3}" -m venv --system-site-packages "$tmp/v"
# no index, no links, no pip configuration: what the install needs must be on this machine. The
# build (Release, the one target strata_python) runs in a CMake folder under $TMPDIR.
env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u STRATA_HF_CONFIGS \
  PIP_NO_INDEX=1 PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 TMPDIR="$tmp" \
  "$tmp/v/bin/pip" install --quiet .
"$tmp/v/bin/python" -c "import strata; print(strata.evaluate('test/cli/good/gpt3_175b.json')['iteration_time_s'])"

cd "$tmp"
env -u STRATA_HF_CONFIGS "$tmp/v/bin/python" - "$root" <<'PY'
import importlib.metadata, pathlib, sys
import strata
root = pathlib.Path(sys.argv[1]).resolve()
pkg = pathlib.Path(strata.__file__).resolve().parent
assert root not in pkg.parents, f"strata imported from the source tree: {pkg}"
(module,) = pkg.glob("_strata*")
assert str(root).encode() not in module.read_bytes(), f"{module.name} names the source tree {root}"
report = strata.evaluate(str(root / "test/cli/good/hf_id_qwen.json"))  # "hf_id": Qwen/Qwen2.5-0.5B
assert report["parameters"] == 494032768, report["parameters"]
assert importlib.metadata.version("strata") == strata.__version__, strata.__version__
print(f"installed strata {strata.__version__} in {pkg}; hf_id Qwen/Qwen2.5-0.5B: "
      f"{report['parameters']} parameters")
PY
echo "pip_check took $(( $(date +%s) - start )) s"
