#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU side of the cross-entropy benchmark (issue 11: softmax cross-entropy
# forward + backward over 16384 x 50304 logits): txopt's kernels are timed
# where they run, in GPT-2's bf16 step (bench/step/run.sh's per-command
# profile, STEP_OUT/profile_bf16.json; PROFILES must include bf16, its
# default), and PyTorch's F.cross_entropy at the same shape in the same
# session (torch_ce.py: eager and torch.compile). Writes OUT/torch_ce.jsonl
# and OUT/loss.md.
# Usage: bench/loss/run.sh STEP_OUT OUT   (run after bench/step/run.sh)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
step="${1:?usage: run.sh STEP_OUT OUT}" out="${2:?usage: run.sh STEP_OUT OUT}"
mkdir -p "$out"
[ -f "$step/profile_bf16.json" ] || { echo "run.sh: no $step/profile_bf16.json (run bench/step/run.sh with PROFILES including bf16 first)" >&2; exit 1; }
# A peer that fails (torch.compile, say) leaves the others' lines: the table
# is written from what ran, and the run still fails.
status=0
python3 "$root/bench/loss/torch_ce.py" > "$out/torch_ce.jsonl" || status=1
python3 "$root/bench/loss/summarize.py" "$step/profile_bf16.json" "$out/torch_ce.jsonl" \
  "$step/copy_bandwidth.json" > "$out/loss.md" || status=1
cat "$out/loss.md"
exit $status
