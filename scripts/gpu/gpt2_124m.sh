#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPT-2-124M (12 layers, d768, vocab 50304, B=16, T=1024) training on the
# GPU: the weights are regenerated here by the same seeded script that made
# the model the artifact was compiled from (502 MB never travel), checked
# against the compile machine's checksum, then txrun trains N steps and
# prints tok/s and peak memory.
# Usage: scripts/gpu/gpt2_124m.sh ARTIFACT SHA256_FILE [STEPS=30] [txrun flags...]
#   (compile side: scripts/export_gpt_external.py DIR/gpt2_124m.onnx
#    --batch 16 --seq 1024; txopt DIR/gpt2_124m.onnx --train -o gpt2_124m.txa)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
artifact="$1" sums="$2" steps="${3:-30}"
shift $(( $# < 3 ? $# : 3 ))
dir="${TMPDIR:-/tmp}/txopt-gpt2-124m"
mkdir -p "$dir"
python3 "$root/scripts/export_gpt_external.py" "$dir/gpt2_124m.onnx" --batch 16 --seq 1024
echo "$(cut -d' ' -f1 "$sums")  $dir/gpt2_124m.onnx.data" | sha256sum -c -
"$root/build/runtime/bin/txrun" "$artifact" --weights-dir "$dir" --steps "$steps" "$@"
