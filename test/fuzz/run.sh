#!/usr/bin/env bash
# Builds the libFuzzer program with Clang 14 and runs each target for SECONDS (default 25) from its seed
# corpus and dictionary. A crash, a leak, a sanitizer report, a timeout (>10 s on one input) or an
# out-of-memory fails the run; the input is left in $WORK/artifacts for test/fuzz/regressions/.
# BUILD_DIR may be an existing Clang build (CI passes its sanitizer build, configured with
# -DSTRATA_FUZZ=ON, whose fuzz_strata is then already built).
# Usage: test/fuzz/run.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
seconds=${1:-25}
build=${2:-build-fuzz}
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE= \
  -DSTRATA_FUZZ=ON -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_EXAMPLES=OFF >/dev/null
targets=(scenario transformer lin_trace nccl_tests csv op_trace front_door)
cmake --build "$build" --target fuzz_strata
work="$build/fuzz-work"
rm -rf "$work" && mkdir -p "$work/artifacts"
status=0
for t in "${targets[@]}"; do
  corpus="$work/corpus-$t"
  mkdir -p "$corpus" && cp "$root/test/fuzz/corpus/$t/"* "$corpus/"
  echo "== fuzz $t for ${seconds} s"
  if ! STRATA_FUZZ_TARGET=$t "$build/test/fuzz/fuzz_strata" "$corpus" -dict="$root/test/fuzz/$t.dict" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" 2>"$work/$t.log"; then
    echo "fuzz $t FAILED: see $work/$t.log and $work/artifacts/"
    tail -40 "$work/$t.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$work/$t.log" || true
  fi
done
exit $status
