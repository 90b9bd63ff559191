#!/usr/bin/env bash
# Rewrites test/cli/golden/NAME.txt from the CLI in BUILD_DIR (default build) for every case in
# cases.txt. Usage: bash test/cli/golden/update.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
exe="$root/${1:-build}/strata"
cd "$root"
grep -v '^#' "$here/cases.txt" | while IFS='|' read -r name args; do
  name=$(echo "$name" | xargs)
  # shellcheck disable=SC2086
  "$exe" $args > "$here/$name.txt"
  echo "wrote test/cli/golden/$name.txt"
done
