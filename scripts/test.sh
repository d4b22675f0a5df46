#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, builds and runs every txopt test: the lit suite (compiler) and
# the runtime's own tests. Ends with one 'N passed, N failed' line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TXOPT_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"
TXOPT_BUILD_DIR="$build" "$root/scripts/build.sh"

results="$build/test-results.json"
status=0
# lit runs under the test venv's Python, so %python tests see onnxruntime;
# txopt_require_python_deps makes a missing package fail the run (lit.cfg.py).
# A fresh build has no lit timing file, so lit would start tests in path
# order and leave the longest (Training/) to the end on two workers; the
# committed one (measured on a Release build; refresh it from
# build/test/.lit_test_times.txt when tests are added) starts them first.
[ -f "$build/test/.lit_test_times.txt" ] ||
  cp "$root/test/lit-test-times.txt" "$build/test/.lit_test_times.txt"
"$root/.venv/bin/python" /usr/lib/llvm-22/bin/lit -sv --param txopt_require_python_deps=1 --output "$results" "$build/test" || status=$?
(cd "$build/runtime" && ctest --output-on-failure) || status=$?

"$root/.venv/bin/python" - "$results" <<'PY'
import json, sys
tests = json.load(open(sys.argv[1]))["tests"]
passed = sum(t["code"] in ("PASS", "XFAIL") for t in tests)
skipped = sum(t["code"] in ("UNSUPPORTED",) for t in tests)
failed = len(tests) - passed - skipped
print(f"lit: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
