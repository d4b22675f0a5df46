#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the importer's libFuzzer target with clang-22 and ASan + UBSan, and
# runs it for SECONDS (default 600) seeded from test/Inputs/models and the
# malformed models of test/Import/ONNX/Inputs/bad.
#
#   fuzz/run.sh [SECONDS] [extra libFuzzer flags...]
#
# Needs clang-22 and its runtime (Debian: apt-get install clang-22
# libclang-rt-22-dev). Build folder: $TXOPT_FUZZ_BUILD_DIR (default
# build-fuzz); corpus: $TXOPT_FUZZ_CORPUS (default build-fuzz/corpus), kept
# between runs; crashes land in build-fuzz/artifacts. Exit status: 0 clean,
# non-zero when libFuzzer found a crash, leak, sanitizer report or timeout.
#
# ASAN_OPTIONS: allow_user_poisoning=0 because MLIR's bump allocator, inlined
# into our instrumented code while libMLIR is not, otherwise reports
# use-after-poison false positives.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-600}"
shift || true
build="${TXOPT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
corpus="${TXOPT_FUZZ_CORPUS:-$build/corpus}"

cc=clang-22 cxx=clang++-22
if ! command -v "$cxx" >/dev/null 2>&1; then
  [ -x /usr/lib/llvm-22/bin/clang++ ] || {
    echo "fuzz/run.sh: clang-22 not found (apt-get install clang-22 libclang-rt-22-dev)" >&2
    exit 2
  }
  cc=/usr/lib/llvm-22/bin/clang cxx=/usr/lib/llvm-22/bin/clang++
fi
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null 2>&1 &&
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_C_FLAGS="$sanitize -fsanitize=fuzzer-no-link" \
    -DCMAKE_CXX_FLAGS="$sanitize -fsanitize=fuzzer-no-link" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DTXOPT_BUILD_FUZZERS=ON -DLLVM_USE_LINKER=lld "${launcher[@]}" >/dev/null
fi
ninja -C "$build" ${TXOPT_FUZZ_JOBS:+-j "$TXOPT_FUZZ_JOBS"} txopt-import-fuzzer

mkdir -p "$corpus" "$build/artifacts"
seeds=("$root/test/Inputs/models" "$root/test/Import/ONNX/Inputs/bad")
[ -d "$root/../shared/models" ] && seeds+=("$root/../shared/models")
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allow_user_poisoning=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec "$build/bin/txopt-import-fuzzer" "$corpus" "${seeds[@]}" \
  -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len=4000000 \
  -artifact_prefix="$build/artifacts/" -print_final_stats=1 "$@"
