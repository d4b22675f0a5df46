#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU side of the norm micro-benchmark (issue 11): in one run, the device's
# copy bandwidth, txopt's compiled steps (DIR from bench/norm/prepare.sh),
# each profiled command by command, and the PyTorch peers (torch_norm.py:
# F.layer_norm / F.rms_norm, eager and torch.compile) at the same shapes and
# dtypes; then summarize.py picks txopt's norm kernels out of the profiles
# and writes OUT/norm.json and OUT/norm.md. Exits 1 if anything failed.
# Usage: bench/norm/run.sh DIR OUT
#   (needs build/runtime/bin/txrun, or TXRUN=...; python3 with torch)
#   REPEATS=3: txrun runs per artifact of at most 16M elements per tensor,
#   whose norm kernels take tens of microseconds (one profiled step each;
#   the summary takes the median per command). Larger shapes run once:
#   their kernels take hundreds of microseconds, where one event-timed
#   sample is steady, and each run spends seconds on the host drawing the
#   random x. TORCH_ITERS=40 and TORCH_MODES=eager,compile for the peers.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/bench/norm"
dir="$1" out="$2"
txrun="${TXRUN:-$root/build/runtime/bin/txrun}"
repeats="${REPEATS:-3}"
mkdir -p "$out/profiles"
status=0
begin=$(date +%s)

# The device's copy bandwidth: the ceiling of a memory-bound kernel.
python3 "$root/bench/copy_bandwidth.py" > "$out/copy_bandwidth.json" || status=1
cat "$out/copy_bandwidth.json"

# txopt: three steps (the CUDA graph is captured at step 2), the third
# profiled command by command. x and c are drawn by txrun (seeded N(0, 1)).
names=$(python3 -c 'import json, sys; print(" ".join(m["name"] for m in json.load(open(sys.argv[1]))))' "$dir/models.json")
for name in $names; do
  runs=$(python3 -c 'import json, sys
m = next(m for m in json.load(open(sys.argv[1])) if m["name"] == sys.argv[2])
print(sys.argv[3] if m["rows"] * m["hidden"] <= 16 * 2**20 else 1)' "$dir/models.json" "$name" "$repeats")
  for r in $(seq 1 "$runs"); do
    if ! "$txrun" "$dir/$name.txa" --steps 3 --profile 3 \
         --profile-out "$out/profiles/$name.$r.json" > "$out/profiles/$name.$r.txt" 2>&1; then
      status=1
      echo "== txopt $name run $r FAILED"; tail -5 "$out/profiles/$name.$r.txt"
      continue
    fi
  done
  echo "== txopt $name: $runs run(s), $(( $(date +%s) - begin )) s so far"
done

echo "== pytorch peers"
python3 "$here/torch_norm.py" "$dir/models.json" "$out/torch_norm.json" \
  --iters "${TORCH_ITERS:-40}" --modes "${TORCH_MODES:-eager,compile}" \
  2>&1 | tee "$out/torch_norm.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

python3 "$here/summarize.py" "$dir" "$out" || status=1
echo "run.sh: $(( $(date +%s) - begin )) s"
exit $status
