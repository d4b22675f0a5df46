#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds txopt's own code with AddressSanitizer (leak checks on) and
# UndefinedBehaviorSanitizer into ./build-asan (or $TXOPT_ASAN_BUILD_DIR)
# and runs the whole lit suite and the runtime's ctest against it. Debian's
# libMLIR/libLLVM, protobuf and libonnx stay uninstrumented. Any sanitizer
# report fails the test it happens in. Ends with one 'N passed' line.
#
#   scripts/test_sanitizers.sh          (.ci/run runs it after scripts/test.sh)
#   TXOPT_ASAN_JOBS=1 scripts/test_sanitizers.sh   (build jobs; default 2)
#
# ASAN_OPTIONS: allow_user_poisoning=0 because MLIR's bump allocator, inlined
# into our instrumented code while libMLIR is not, otherwise reports
# use-after-poison false positives. detect_leaks=1: no leak is allowed; a
# leak in a third-party library we cannot fix goes, narrowly and with the
# reason, into scripts/lsan.supp.
# Stock mlir-opt-22 loading our instrumented plugin (test/Plugin) gets the
# ASan runtime in LD_PRELOAD from test/lit.cfg.py; nothing else does (not
# python, not ptxas).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TXOPT_ASAN_BUILD_DIR:-$root/build-asan}"

"$root/scripts/setup.sh"

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
linker=()
if command -v ld.lld-22 >/dev/null 2>&1 || [ -x /usr/lib/llvm-22/bin/ld.lld ]; then
  linker=(-DLLVM_USE_LINKER=lld)
fi

t0=$SECONDS
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DTXOPT_ENABLE_SANITIZERS=ON "${launcher[@]}" "${linker[@]}"
fi
grep -q '^TXOPT_ENABLE_SANITIZERS:BOOL=ON' "$build/CMakeCache.txt" || {
  echo "test_sanitizers: $build is not a sanitizer build (remove it)" >&2
  exit 2
}
# ASan roughly doubles the memory a translation unit needs (up to ~3 GB):
# two jobs fit a 2-core CI machine, where ninja's default would start four.
ninja -C "$build" -j "${TXOPT_ASAN_JOBS:-2}"
t1=$SECONDS

# abort_on_error=1: a report ends the process with SIGABRT, not exit 1 (23
# for leaks), so a report in an error path fails `not txopt ...` RUN lines
# and the scripts that accept exit 1 too (LLVM's `not` fails on a signal).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allow_user_poisoning=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}"
if [ -z "${LSAN_OPTIONS:-}" ] && [ -s "$root/scripts/lsan.supp" ]; then
  export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
fi
[ -x /usr/lib/llvm-22/bin/llvm-symbolizer ] &&
  export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}"

results="$build/test-results.json"
status=0
# A fresh build has no lit timing file, so lit would start tests in path
# order and leave the longest (Training/) to the end on two workers; the
# committed one (measured on a Release build; refresh it from
# build/test/.lit_test_times.txt when tests are added) starts them first.
[ -f "$build/test/.lit_test_times.txt" ] ||
  cp "$root/test/lit-test-times.txt" "$build/test/.lit_test_times.txt"
"$root/.venv/bin/python" /usr/lib/llvm-22/bin/lit -sv --param txopt_require_python_deps=1 --output "$results" "$build/test" || status=$?
t2=$SECONDS
(cd "$build/runtime" && ctest --output-on-failure) || status=$?
t3=$SECONDS

"$root/.venv/bin/python" - "$results" <<'PY'
import json, sys
tests = json.load(open(sys.argv[1]))["tests"]
passed = sum(t["code"] in ("PASS", "XFAIL") for t in tests)
skipped = sum(t["code"] in ("UNSUPPORTED",) for t in tests)
failed = len(tests) - passed - skipped
print(f"lit (ASan+UBSan): {passed} passed, {failed} failed, {skipped} skipped")
PY
echo "test_sanitizers: build $((t1 - t0)) s, lit $((t2 - t1)) s, ctest $((t3 - t2)) s"
exit $status
