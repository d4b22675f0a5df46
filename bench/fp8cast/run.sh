#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU side of the FP8 cast benchmark (issue 11: FP8 cast(+transpose)+amax):
# txopt's cast kernels are timed where they run, in GPT-2's fp8 step
# (bench/step/run.sh's per-command profile, STEP_OUT/profile_fp8.json;
# PROFILES must include fp8), and PyTorch's cast of GPT-2's activation
# shapes in the same session (torch_cast.py, eager and torch.compile).
# Writes OUT/torch_cast.jsonl and OUT/fp8cast.md.
# Usage: bench/fp8cast/run.sh STEP_OUT OUT   (run after bench/step/run.sh)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
step="${1:?usage: run.sh STEP_OUT OUT}" out="${2:?usage: run.sh STEP_OUT OUT}"
mkdir -p "$out"
[ -f "$step/profile_fp8.json" ] || { echo "run.sh: no $step/profile_fp8.json (run bench/step/run.sh with PROFILES including fp8 first)" >&2; exit 1; }
# A peer that fails (torch.compile, say) leaves the others' lines: the table
# is written from what ran, and the run still fails.
status=0
python3 "$root/bench/fp8cast/torch_cast.py" 16384x768 16384x3072 > "$out/torch_cast.jsonl" || status=1
python3 "$root/bench/fp8cast/summarize.py" "$step/profile_fp8.json" "$out/torch_cast.jsonl" \
  "$step/copy_bandwidth.json" > "$out/fp8cast.md" || status=1
cat "$out/fp8cast.md"
exit $status
