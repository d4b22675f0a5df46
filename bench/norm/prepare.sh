#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compile side of the norm micro-benchmark (issue 11; this machine, no GPU):
# writes the ONNX training graphs (make_models.py: LayerNorm and RMSNorm,
# f32 and bf16-typed, rows x hidden in 16384x768, 16384x4096, 8192x8192),
# compiles each with `txopt --train` into DIR/NAME.txa, and keeps beside it
# what a reader needs to check what the GPU will run: the --report (the
# fused norm and norm-gradient counts, checked here to be 1 and 1), the
# --gpu-plan (commands, their kernels and origins, the buffers) and the
# compile time. No weights travel: x and c are graph inputs that txrun fills
# with seeded random values, so DIR stays small (checked at the end).
# Before that, check_cpu.py runs one step of small models of each kind on
# txopt-run and compares loss and gradients (dx included) with PyTorch.
# Usage: bench/norm/prepare.sh DIR   (SHAPES=16384x768,... and DTYPES=f32,bf16
#   to change the set;
#   TXOPT_BUILD=DIR and PYTHON=... where this checkout has no build/ or
#   .venv/, e.g. a second git worktree: TXOPT_BUILD=/work/main/build;
#   SKIP_CPU_CHECK=1 leaves check_cpu.py out, saying so, where PyTorch
#   cannot be installed: the models it checks are those of the last
#   prepared pack that ran it)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/bench/norm"
dir="$1"
python="${PYTHON:-$root/.venv/bin/python}"
build="${TXOPT_BUILD:-$root/build}"
txopt="$build/bin/txopt"
for need in "$python" "$txopt" "$build/bin/txopt-run"; do
  [ -x "$need" ] || { echo "prepare.sh: '$need' not found (set PYTHON / TXOPT_BUILD)" >&2; exit 2; }
done
shapes="${SHAPES:-16384x768,16384x4096,8192x8192}"
dtypes="${DTYPES:-f32,bf16}"
mkdir -p "$dir"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ "${SKIP_CPU_CHECK:-}" = 1 ]; then
  echo "prepare.sh: SKIP_CPU_CHECK=1: the models are not checked against PyTorch on the CPU"
else
  "$python" "$here/check_cpu.py" "$txopt" "$build/bin/txopt-run" "$work/check"
fi

"$python" "$here/make_models.py" "$dir" --shapes "$shapes" --dtypes "$dtypes"
: > "$dir/compile.jsonl"
for name in $("$python" -c 'import json, sys; print(" ".join(m["name"] for m in json.load(open(sys.argv[1]))))' "$dir/models.json"); do
  start=$(date +%s.%N)
  # --no-norm-grad-input-fusion: dy (c broadcast over the rows) stays a
  # full [R, H] tensor in memory that the norm gradient reads, as a
  # model's GEMM output is; computed in the kernel from c, it would read
  # H values a row less than PyTorch's backward does.
  "$txopt" "$dir/$name.onnx" --train -o "$dir/$name.txa" --report="$dir/$name.report.json" \
    --gpu-plan="$dir/$name.plan.txt" --no-norm-grad-input-fusion -q
  end=$(date +%s.%N)
  # One fused norm and one fused norm gradient, or the benchmark would time
  # something else (a decomposition op by op).
  "$python" - "$dir/$name.report.json" "$name" "$start" "$end" >> "$dir/compile.jsonl" <<'PY'
import json, sys
report, name, start, end = json.load(open(sys.argv[1])), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
norm = name.split("_")[0] + "_norm"
fused = (report["fused"].get(norm, 0), report["fused"].get(norm + "_grad", 0))
if fused != (1, 1) or report.get("not_fused"):
    sys.exit(f"prepare.sh: {name}: expected one fused {norm} and one {norm}_grad, got {fused}; "
             f"not fused: {report.get('not_fused')}")
print(json.dumps({"name": name, "compile_s": round(end - start, 3), "launches": report["launches"],
                  "arena_bytes": report["memory"]["arena_bytes"], "fused": {norm: 1, norm + "_grad": 1}}))
PY
  echo "prepare.sh: $name: $(tail -1 "$dir/compile.jsonl")"
done
du -sh "$dir"
size=$(tar cJf - -C "$(dirname "$dir")" "$(basename "$dir")" | wc -c)
echo "prepare.sh: tar cJf of $dir: $size bytes"
if [ "$size" -gt $((10 * 1024 * 1024)) ]; then
  echo "prepare.sh: the pack is over 10 MB" >&2
  exit 1
fi
