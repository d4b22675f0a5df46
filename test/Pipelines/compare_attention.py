"""Training with and without tx-fuse-attention must give the same losses.

Compiles MODEL with `txopt --train` twice (default pipeline, and
--no-fuse=attention), checks the report's `fused.attention` count of the
first against --expect (every attention of the model fused, and each
differentiated to one tx.attention_grad), runs both for --steps steps on the
CPU reference executor (dropout off unless --dropout, same seed: with it,
the fused attention's dropout must draw the unfused tx.dropout's masks)
and compares every step's loss and gradient norm: |fused - unfused| / |unfused| at most --rtol
(default 1e-5, f32). Prints one line per step; exits 1 on any mismatch.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--txopt", default="txopt")
ap.add_argument("--txopt-run", default="txopt-run")
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--rtol", type=float, default=1e-5)
ap.add_argument("--expect", type=int, help="expected fused.attention count")
ap.add_argument("--loss", default=None, help="txopt --loss (e.g. cross-entropy)")
ap.add_argument("--dropout", action="store_true",
                help="train with dropout on (the default turns it off)")
ap.add_argument("--lr", default=None, help="txopt-run --lr")
args = ap.parse_args()

work = tempfile.mkdtemp(prefix="compare_attention_")
runs = {}
failed = False
print(f"model {os.path.basename(args.model)}")
for variant, flags in [("fused", []), ("unfused", ["--no-fuse=attention"])]:
    mlir = os.path.join(work, variant + ".mlir")
    report = os.path.join(work, variant + ".json")
    extra = ["--loss=" + args.loss] if args.loss else []
    subprocess.run([args.txopt, args.model, "--train", "-q", "-o", mlir,
                    "--report=" + report] + flags + extra, check=True)
    with open(report) as f:
        fused = json.load(f)["fused"]
    print(f"{variant}: attention {fused.get('attention', 0)}, "
          f"attention_grad {fused.get('attention_grad', 0)}")
    if variant == "fused" and args.expect is not None:
        if fused.get("attention") != args.expect or \
           fused.get("attention_grad") != args.expect:
            print(f"COUNT MISMATCH: expected {args.expect}")
            failed = True
    run = [args.txopt_run, mlir, "--steps", str(args.steps)]
    run += [] if args.dropout else ["--no-dropout"]
    run += ["--lr", args.lr] if args.lr else []
    out = subprocess.run(run, check=True, capture_output=True, text=True).stdout
    runs[variant] = [(int(m.group(1)), float(m.group(2)), float(m.group(3)))
                     for m in re.finditer(r"step (\d+)\s+loss (\S+)\s+grad_norm (\S+)", out)]

if len(runs["fused"]) != args.steps or len(runs["unfused"]) != args.steps:
    print("MISMATCH: missing steps", runs)
    sys.exit(1)
for (step, loss, norm), (_, loss0, norm0) in zip(runs["fused"], runs["unfused"]):
    el = abs(loss - loss0) / max(abs(loss0), 1e-30)
    en = abs(norm - norm0) / max(abs(norm0), 1e-30)
    ok = el <= args.rtol and en <= args.rtol
    failed |= not ok
    print(f"step {step}: {'ok' if ok else 'MISMATCH'} loss {loss:.9g} vs {loss0:.9g} "
          f"(rel {el:.1e}), grad_norm rel {en:.1e}")
sys.exit(1 if failed else 0)
