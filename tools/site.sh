#!/usr/bin/env bash
# Builds and checks the documentation site (CI runs this; run it from the repository root):
# the generated docs are current, Doxygen's API reference, `mkdocs build --strict` (broken links
# fail), and a headless Chromium looks at the home page and the validation page.
# Usage: tools/site.sh [BUILD_DIR]   (BUILD_DIR holds strata and test/unit_tests; default build)
set -euo pipefail
build="${1:-build}"
/usr/bin/python3 tools/docs_data.py --build "$build" --check
rm -rf docs/api && doxygen tools/Doxyfile
mkdocs build --strict --site-dir "$build/site"
/usr/bin/python3 tools/site_check.py --site "$build/site" --out "$build/site-check"
