#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compile side of the whole benchmark harness (issue 11), on a machine
# without a GPU: the GPT-2 step's artifacts (bench/step/prepare.sh) and the
# norm micro-benchmark's (bench/norm/prepare.sh) into DIR. The GEMM and
# attention benchmarks need nothing compiled. Then, on the GPU machine:
# bench/run_all.sh DIR OUT.
# Usage: bench/prepare_all.sh DIR   (SKIP_CPU_CHECK=1 passes to the norm
#   side where PyTorch cannot be installed)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:?usage: prepare_all.sh DIR}"
mkdir -p "$dir"
# The commit the artifacts come from (run_all.sh names it: the GPU machine
# may run them with a tree or runtime of another commit).
git -C "$root" log --oneline -1 > "$dir/compiled_at.txt" 2>/dev/null || echo unknown > "$dir/compiled_at.txt"
"$root/bench/step/prepare.sh" "$dir/step" gpt2
"$root/bench/norm/prepare.sh" "$dir/norm"
echo "prepare_all.sh: $dir ready; on the GPU machine: bench/run_all.sh $dir OUT"
