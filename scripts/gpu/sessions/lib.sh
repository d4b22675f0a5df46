#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What every session run script does on the GPU machine, sourced by them
# (from session 42 on; the earlier scripts each carried their own copy):
#   run_begin NAME PACK   unpacks gpu-pack/PACK.tar.xz into ./PACK (linked
#                         as gpu-pack/PACK too), installs
#                         its runtime binaries as build/runtime/bin, and
#                         starts the timeline ($res/timeline.txt);
#   stamp TEXT            a timeline line with the seconds since the start;
#   save                  packs /tmp/res into $OUT/NAME.tgz (kept at each call,
#                         so a run cut off by its time limit still returns what
#                         it had) and copies the timeline to $OUT/summary.txt;
#   export_check_models DIR  regenerates the check pack's external-weight GPT
#                         exports (their .onnx.data never travel) and checks
#                         them against DIR/../check.sha256;
#   slim_check_pack DIR   here, before packing: records those exports'
#                         sha256 in DIR/../check.sha256 and removes them
#                         (only those: the pack's other .onnx.data travel);
#   run_check DIR SECONDS  check.sh on the pack DIR (exports first), its
#                         verdict lines into the timeline;
#   gpt2_ab STEPDIR "VARIANTS" "TORCH_MODES" STEPS SECONDS  bench/step/run.sh
#                         on GPT-2 (every variant profiled), into $res/gpt2;
#   run_cases_check DIR   scripts/gpu/run_cases.sh on the cases of DIR (graph
#                         replay and direct, 120 s at most; a slimmed pack's
#                         exports regenerated first) into
#                         $res/cases.txt, its verdict into the timeline;
#   step_ab MODEL DIR "VARIANTS" "PROFILES" "TORCH_MODES" STEPS SECONDS
#                         bench/step/run.sh on MODEL's pack DIR into
#                         $res/MODEL, its table rows, loss verdicts and the
#                         profiled variants' families into the timeline;
#   sanitize_case DIR CASE TOOLS...  compute-sanitizer (memcheck, racecheck)
#                         on DIR/CASE.txa, two steps without the graph;
#   harness_parts PART:SECONDS...  bench/run_all.sh on $pack/harness one
#                         part at a time, each saved as it ends, each only if
#                         its SECONDS (an estimate with margin) fit in $total;
#   norm_bench DIR NAME REPEATS SECONDS  the norm micro-benchmark of DIR
#                         (eager peers) into $res/norm-NAME, its rows (% of
#                         copy) into the timeline (norm_rows MD);
#   bias_grad_probe       builds and runs scripts/gpu/probes/bgrad_probe.cu
#                         (cuBLASLt's BGRADA/BGRADB on txopt's weight-
#                         gradient GEMMs) into $res/bgrad_probe.txt.
# Sets $root (the repository), $res (/tmp/res) and $pack (./PACK).
res=/tmp/res
root="$(pwd)"
mkdir -p "$res"

stamp() { echo "[$(( $(date +%s) - run_start )) s] $*" | tee -a "$res/timeline.txt"; }

save() {
  tar -C /tmp -czf "$OUT/$run_name.tgz.tmp" res && mv "$OUT/$run_name.tgz.tmp" "$OUT/$run_name.tgz"
  cp "$res/timeline.txt" "$OUT/summary.txt" 2>/dev/null || true
}

run_begin() {
  run_name="$1"
  pack="$root/$2"
  run_start=$(date +%s)
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
    | tee "$res/gpu.txt" | tee -a "$res/timeline.txt"
  tar -xJf "gpu-pack/$2.tar.xz"
  # A pack prepared as gpu-pack/PACK (not ./PACK) has .txa files that name
  # their weights there: the link makes both places one (session 45 run 1
  # lost its cases to that).
  [ -e "gpu-pack/$2" ] || ln -s "$pack" "gpu-pack/$2"
  mkdir -p build/runtime && rm -rf build/runtime/bin && cp -r "$pack/bin" build/runtime/bin
}

# The check pack's exports export_check_models regenerates on the GPU
# machine (scripts/gpu/prepare_check.sh makes them; gpt_small's and
# gpt_head128's weights are small and travel with the pack).
regenerated_check_models="gpt_bench gpt_bench_tanh gpt_deep"

slim_check_pack() {
  local dir="$1" m
  (cd "$dir" && for m in $regenerated_check_models; do sha256sum "$m.onnx.data"; done) > "$dir/../check.sha256" \
    && for m in $regenerated_check_models; do rm -f "$dir/$m.onnx.data"; done
}

export_check_models() {
  local dir="$1"
  python3 scripts/export_gpt_external.py "$dir/gpt_bench.onnx" --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 > /dev/null
  python3 scripts/export_gpt_external.py "$dir/gpt_bench_tanh.onnx" --layers 1 --d-model 256 --vocab 512 --seq 512 --batch 4 --gelu tanh > /dev/null
  python3 scripts/export_gpt_external.py "$dir/gpt_deep.onnx" --layers 80 --d-model 64 --vocab 128 --seq 32 --batch 2 > /dev/null
  (cd "$dir" && sha256sum -c ../check.sha256) 2>&1 | tee -a "$res/timeline.txt"
}

run_check() {
  local dir="$1" seconds="$2"
  stamp "check.sh on $dir"
  export_check_models "$dir"
  CURVE_STEPS=6000 timeout "$seconds" bash scripts/gpu/check.sh "$dir" /tmp/check-res > "$res/check.txt" 2>&1
  echo "check.sh rc=$?" >> "$res/check.txt"
  grep -E "cases passed|rc=|FAIL|failed|precision curves|vs f32|learned" "$res/check.txt" | tee -a "$res/timeline.txt"
  save
}

gpt2_ab() {
  local dir="$1" variants="$2" torch_modes="$3" steps="$4" seconds="$5"
  stamp "GPT-2: $variants beside $torch_modes"
  PRECISIONS="$variants" TORCH_MODES="$torch_modes" PROFILES="$variants" \
    timeout "$seconds" bash bench/step/run.sh "$dir" /tmp/gpt2 gpt2 "$steps" > "$res/gpt2.txt" 2>&1
  echo "run.sh rc=$?" >> "$res/gpt2.txt"
  mkdir -p "$res/gpt2" && cp /tmp/gpt2/*.json /tmp/gpt2/*.md /tmp/gpt2/*.txt "$res/gpt2/" 2>/dev/null
  grep -E "^\| txopt|^\| pytorch|PASS|FAIL|rc=|layer_norm_grad " "$res/gpt2.txt" | tee -a "$res/timeline.txt"
  save
}

step_ab() {
  local model="$1" dir="$2" variants="$3" profiles="$4" torch_modes="$5" steps="$6" seconds="$7" p
  stamp "$model: $variants beside $torch_modes"
  PRECISIONS="$variants" TORCH_MODES="$torch_modes" PROFILES="$profiles" \
    timeout "$seconds" bash bench/step/run.sh "$dir" "$res/$model" "$model" "$steps" > "$res/$model.txt" 2>&1
  echo "run.sh $model rc=$?" | tee -a "$res/$model.txt" "$res/timeline.txt"
  grep -E "^\| txopt|^\| pytorch|PASS|FAIL" "$res/$model.txt" | tee -a "$res/timeline.txt"
  for p in $profiles; do
    grep -E "^  kernel|^  gemm|^  attention" "$res/$model/profile_$p.txt" 2>/dev/null | head -8 \
      | sed "s/^/$p /" | tee -a "$res/timeline.txt"
  done
  save
}

norm_bench() {
  local dir="$1" name="$2" repeats="$3" seconds="$4"
  stamp "norm micro-benchmark: $name"
  REPEATS="$repeats" TORCH_MODES=eager timeout "$seconds" bash bench/norm/run.sh "$dir" "$res/norm-$name" \
    > "$res/norm-$name.txt" 2>&1
  echo "run.sh rc=$?" >> "$res/norm-$name.txt"
  norm_rows "$res/norm-$name/norm.md"
  save
}

run_cases_check() {
  local dir="$1" m
  # A slimmed pack (slim_check_pack wrote check.sha256 beside it) gets its
  # exports back first, unless they are there already (run_check made them).
  if [ -f "$dir/../check.sha256" ]; then
    for m in $regenerated_check_models; do
      [ -f "$dir/$m.onnx.data" ] || { export_check_models "$dir"; break; }
    done
  fi
  stamp "the cases of $dir against the executor (run_cases.sh)"
  timeout 180 bash scripts/gpu/run_cases.sh "$dir" /tmp/cases-res > "$res/cases.txt" 2>&1
  echo "run_cases.sh rc=$?" >> "$res/cases.txt"
  grep -E "cases passed|rc=|FAIL|failed" "$res/cases.txt" | tee -a "$res/timeline.txt"
  save
}

sanitize_case() {
  local dir="$1" case="$2" tool
  shift 2
  for tool in "$@"; do
    if timeout 60 compute-sanitizer --tool "$tool" --error-exitcode 9 build/runtime/bin/txrun \
        "$dir/$case.txa" --steps 2 --no-graph > "$res/$tool-$case.log" 2>&1; then
      stamp "$case $tool: clean"
    else
      stamp "$case $tool: FAILED or cut off"
      grep -m3 -E "ERROR|Invalid|Race" "$res/$tool-$case.log" | tee -a "$res/timeline.txt"
    fi
  done
  save
}

# One part a call, each saved as it ends (the device may cut the call at
# the budget left); $total: the seconds the calling script may take.
harness_parts() {
  local part name need
  for part in "$@"; do
    name="${part%%:*}" need="${part##*:}"
    if [ $(( $(elapsed) + need )) -gt "$total" ]; then stamp "harness $name skipped: out of time"; continue; fi
    stamp "harness: $name"
    PARTS="$name" timeout $(( total - $(elapsed) )) bash bench/run_all.sh "$pack/harness" /tmp/res/harness \
      >> "$res/harness.txt" 2>&1
    echo "run_all.sh $name rc=$?" | tee -a "$res/harness.txt" "$res/timeline.txt"
    cp /tmp/res/harness/summary.md "/tmp/res/harness/summary-$name.md" 2>/dev/null
    case "$name" in
      norm) norm_rows /tmp/res/harness/norm/norm.md ;;
      step) grep -E "^\| txopt|^\| pytorch|PASS|FAIL" /tmp/res/harness/step/bench.md | tee -a "$res/timeline.txt" ;;
    esac
    save
  done
}

# The norm table's rows (norm, dtype, shape, pass, ms, % of copy) of
# NORM_MD into the timeline.
norm_rows() {
  grep -E "^\| (layer|rms)" "$1" | awk -F'|' '{print $2,$3,$4,$5,$6,$10}' | tee -a "$res/timeline.txt"
}

# Seconds since run_begin.
elapsed() { echo $(( $(date +%s) - run_start )); }

bias_grad_probe() {
  stamp "cuBLASLt bias-gradient epilogue probe"
  (cd scripts/gpu/probes && /usr/local/cuda/bin/nvcc -O2 -arch=sm_90 -o /tmp/bgrad_probe bgrad_probe.cu -lcublasLt \
    && timeout 90 /tmp/bgrad_probe) > "$res/bgrad_probe.txt" 2>&1
  tee -a "$res/timeline.txt" < "$res/bgrad_probe.txt"
  save
}
