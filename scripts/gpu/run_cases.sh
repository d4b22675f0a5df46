#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: every case of CASES_DIR (cases.txt, as
# prepare_check.sh and prepare_heldout.sh write it) with txrun, graph replay
# and direct, then scripts/gpu/compare.py against the CPU executor.
# Usage: scripts/gpu/run_cases.sh CASES_DIR [RESULTS_DIR=${OUT:-/tmp/txopt-cases}] [txrun flags...]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cases="${1:?usage: run_cases.sh CASES_DIR [RESULTS_DIR] [txrun flags...]}"
results="${2:-${OUT:-/tmp/txopt-cases}}"
shift $(( $# < 2 ? $# : 2 ))
bin="$root/build/runtime/bin"
mkdir -p "$results"
while read -r name steps checkpoint _; do
  # A case may start from the executor's checkpoint (prepare_check.sh).
  resume=()
  [ -n "${checkpoint:-}" ] && resume=(--resume "$cases/$checkpoint")
  out=()
  [ -d "$cases/$name.cpu" ] && out=(--output-dir "$results/$name.gpu")
  "$bin/txrun" "$cases/$name.txa" --steps "$steps" "${resume[@]}" "${out[@]}" "$@" \
    > "$results/$name.gpu.log" 2>&1 || { echo "$name: txrun failed"; tail -3 "$results/$name.gpu.log"; }
  "$bin/txrun" "$cases/$name.txa" --steps "$steps" "${resume[@]}" --no-graph "$@" \
    > "$results/$name.nograph.log" 2>&1
done < "$cases/cases.txt"
python3 "$root/scripts/gpu/compare.py" "$cases" "$results"
