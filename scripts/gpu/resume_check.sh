#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine: txrun checkpoints and exact resume (issue 12).
#  1. an uninterrupted 10-step run (token stream, seeded shuffle, warm-up +
#     cosine schedule) against the same run saving every 5 steps: saving
#     must not change a single step line;
#  2. a 5-step run saved, resumed to step 10: steps 6..10 must equal the
#     uninterrupted run's lines exactly (loss, grad_norm and lr printed with
#     9 significant digits; the timing columns are cut off);
#  3. the --log JSONL of the resumed run appends to the first part's and
#     its losses equal the uninterrupted log's;
#  4. the checkpoint is safetensors + manifest that numpy reads;
#  5. kill -9 at random moments of runs saving every step: the checkpoint
#     always loads (txrun --resume, nothing left to run).
# Prints one verdict line per check; exits non-zero if any failed.
# Usage: scripts/gpu/resume_check.sh [STEP.txa] [OUT_DIR]
#   STEP.txa defaults to gpu-run/nanogpt_op18_loss.txa (prepare_check.sh),
#   else it is compiled here from nanogpt_op17_loss.onnx when build/bin/txopt
#   exists.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="$root/build/runtime/bin"
out="${2:-${OUT:-/tmp/txopt-resume}}"
txa="${1:-$root/gpu-run/nanogpt_op18_loss.txa}"
mkdir -p "$out"
status=0
if [ ! -f "$txa" ]; then
  if [ -x "$root/build/bin/txopt" ]; then
    txa="$out/step.txa"
    "$root/build/bin/txopt" "$root/test/Inputs/models/nanogpt_op17_loss.onnx" --train \
      --lr=1e-2 -q -o "$txa" || { echo "cannot compile $txa"; exit 1; }
  else
    echo "no artifact: pass STEP.txa or run scripts/gpu/prepare_check.sh first"; exit 1
  fi
fi
python3 "$root/test/Training/make_markov_tokens.py" "$out/tokens.npy" 40000 512 > /dev/null
flags=(--data "$out/tokens.npy" --shuffle --warmup 2 --decay-steps 10 --min-lr 1e-4)
steplines() { grep '^step ' "$1" | sed 's/  ms .*//'; }
verdict() { if [ "$1" = 0 ]; then echo "PASS $2"; else echo "FAIL $2"; status=1; fi; }

rm -rf "$out/ck" "$out/ck5" "$out"/*.jsonl
"$bin/txrun" "$txa" --steps 10 --seed 5 "${flags[@]}" --log "$out/full.jsonl" > "$out/full.log" 2>&1
verdict $? "uninterrupted run"
"$bin/txrun" "$txa" --steps 10 --seed 5 "${flags[@]}" --save "$out/ck" --save-every 5 \
  > "$out/saved.log" 2> "$out/saved.err"
verdict $? "run saving at 5 and 10"
diff <(steplines "$out/full.log") <(steplines "$out/saved.log") > "$out/saved.diff"
verdict $? "saving does not change the step lines (diff: $out/saved.diff)"
grep -q "saved step 5 to" "$out/saved.err" && grep -q "saved step 10 to" "$out/saved.err"
verdict $? "checkpoints written at steps 5 and 10"

"$bin/txrun" "$txa" --steps 5 --seed 5 "${flags[@]}" --save "$out/ck5" \
  --log "$out/resumed.jsonl" > "$out/first.log" 2>&1
verdict $? "5-step run saved"
"$bin/txrun" "$txa" --steps 10 "${flags[@]}" --resume "$out/ck5" --log "$out/resumed.jsonl" \
  > "$out/resumed.log" 2>&1
verdict $? "resumed to step 10"
diff <(steplines "$out/full.log" | sed -n '6,10p') <(steplines "$out/resumed.log") \
  > "$out/resume.diff"
verdict $? "steps 6..10 after resume equal the uninterrupted run's bit for bit (diff: $out/resume.diff)"
python3 - "$out/full.jsonl" "$out/resumed.jsonl" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
key = lambda r: (r["step"], r["loss"], r.get("grad_norm"), r.get("lr"))
sys.exit(0 if [key(r) for r in a] == [key(r) for r in b] and len(a) == 10 else 1)
PY
verdict $? "the resumed JSONL log (appended) equals the uninterrupted one"
python3 - "$out/ck5" <<'PY'
import json, os, sys
import numpy as np
m = json.load(open(os.path.join(sys.argv[1], "checkpoint.json")))
raw = open(os.path.join(sys.argv[1], m["file"]), "rb").read()
n = int.from_bytes(raw[:8], "little")
h = json.loads(raw[8:8 + n]); h.pop("__metadata__")
dt = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4", "F16": "<f2", "BOOL": "?"}
for name, e in h.items():
    b, s = e["data_offsets"]
    np.frombuffer(raw[8 + n + b:8 + n + s], dt.get(e["dtype"], "u1"))
ok = m["step"] == 5 and m["producer"] == "txrun" and len(h) == len(m["tensors"]) > 0
print(f"  {len(h)} tensors, step {m['step']}, data {m['data']}")
sys.exit(0 if ok else 1)
PY
verdict $? "the checkpoint reads as safetensors + manifest"

# kill -9 at random moments of runs that save every step.
rm -rf "$out/ckk"
killfail=0
for i in $(seq 1 10); do
  resume=(); [ -f "$out/ckk/checkpoint.json" ] && resume=(--resume "$out/ckk")
  "$bin/txrun" "$txa" --steps 200 "${flags[@]}" --decay-steps 200 --save "$out/ckk" \
    --save-every 1 "${resume[@]}" > "$out/kill$i.log" 2>&1 &
  pid=$!
  sleep "0.$((RANDOM % 9 + 1))$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if [ -f "$out/ckk/checkpoint.json" ]; then
    "$bin/txrun" "$txa" --steps 1 "${flags[@]}" --decay-steps 200 --resume "$out/ckk" \
      > "$out/kill$i.check" 2>&1 || { killfail=1; echo "  kill $i: checkpoint does not load:"; tail -2 "$out/kill$i.check"; }
  fi
done
verdict $killfail "kill -9 during saving runs never leaves an unloadable checkpoint"
exit $status
