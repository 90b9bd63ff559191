#!/usr/bin/env bash
# The same search on 1 and 2 MPI ranks (strata-mpi, OpenMPI): prints each run's wall time
# (--timing: read, parse, sweep, gather, merge, print; MPI start-up excluded) and checks that
# both reports equal, byte for byte, what the serial `strata` prints.
# Usage: bench/mpi_search.sh [BUILD_DIR] [SCENARIO] [REPEATS]
set -euo pipefail
build=${1:-build}
scenario=${2:-bench/mpi_search.json}
repeats=${3:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/strata" "$scenario" > "$tmp/serial.json"
python3 -c "import json, sys; j = json.load(open(sys.argv[1])); print(f\"{j['candidates']} candidates, {j['fitting']} fit, {len(j['pareto'])} on the Pareto front\")" "$tmp/serial.json"
for ranks in 1 2; do
  for _ in $(seq "$repeats"); do
    mpirun -n "$ranks" --oversubscribe "$build/tools/mpi/strata-mpi" "$scenario" --timing \
      > "$tmp/ranked.json"
    cmp -s "$tmp/serial.json" "$tmp/ranked.json" || { echo "$ranks ranks: the report differs"; exit 1; }
  done
  echo "$ranks rank(s): report identical to the serial search"
done
