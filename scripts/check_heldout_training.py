#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Developer check of `txopt --train` on held-out exports (not in the repo,
written by scripts/export_heldout_models.py): for every *_loss model the
step is built and run for --steps steps on the recipe batch; the loss of
step 1 (the forward at the initial parameters) must equal onnxruntime's
loss recorded in the model's .ref.json (relative 1e-5) and the loss must
fall. *_logits models are trained with --loss=cross-entropy.

With --precision=bf16|fp16|fp8 the step-1 loss is compared with
onnxruntime's f32 loss within --low-tolerance (2%) instead.

The exports are read from --dir, by default build/heldout under the
repository, where scripts/export_heldout_models.py writes them.

Usage: check_heldout_training.py [--dir build/heldout] [--build build] [--steps 10]
                                 [--precision fp32|bf16|fp16|fp8]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "heldout"),
                    help="folder of the exports (default: build/heldout)")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--only", default="")
    ap.add_argument("--precision", default="fp32",
                    help="fp32 compares step 1 with onnxruntime (1e-5); bf16/fp16/"
                         "fp8 with the f32 step-1 loss within --low-tolerance")
    ap.add_argument("--low-tolerance", type=float, default=0.02)
    args = ap.parse_args()
    txopt = os.path.join(args.build, "bin", "txopt")
    run_tool = os.path.join(args.build, "bin", "txopt-run")
    work = tempfile.mkdtemp(prefix="heldout-train-")
    failures = 0
    for path in sorted(glob.glob(os.path.join(args.dir, "*.onnx"))):
        name = os.path.basename(path)[:-5]
        if args.only and not re.search(args.only, name):
            continue
        if not (name.endswith("_loss") or name.endswith("_logits")):
            continue
        ref = json.load(open(os.path.join(args.dir, name + ".ref.json")))
        inputs = ref["inputs"]
        flags, shape_flags = [], []
        for inp, spec in inputs.items():
            b, t = spec["shape"]
            k = np.arange(b * t).reshape(b, t)
            data = (7 * k + 3) % 512 if inp != "labels" else (11 * k + 5) % 512
            np.save(os.path.join(work, inp + ".npy"), data.astype(np.int64))
            flags += ["--input", "%s=%s" % (inp, os.path.join(work, inp + ".npy"))]
            shape_flags += ["--input-shape", "%s=%dx%d" % (inp, b, t)]
        train = ["--train", "--precision=" + args.precision]
        if name.endswith("_logits"):
            train += ["--loss=cross-entropy", "--labels=labels"]
            k = np.arange(b * t).reshape(b, t)
            np.save(os.path.join(work, "labels.npy"), ((11 * k + 5) % 512).astype(np.int64))
            flags += ["--input", "labels=%s" % os.path.join(work, "labels.npy")]
        step = os.path.join(work, name + ".step.mlir")
        compile_ = subprocess.run([txopt, path, "-q", "-o", step] + train + shape_flags,
                                  capture_output=True, text=True)
        if compile_.returncode != 0:
            print("%-44s COMPILE FAILED: %s" % (name, compile_.stderr.strip()))
            failures += 1
            continue
        result = subprocess.run([run_tool, step, "--steps", str(args.steps)] + flags,
                                capture_output=True, text=True)
        losses = [float(x) for x in re.findall(r"^step \d+  loss (\S+)", result.stdout, re.M)]
        if result.returncode != 0 or len(losses) != args.steps:
            print("%-44s RUN FAILED: %s" % (name, result.stderr.strip()))
            failures += 1
            continue
        ort = ref.get("ort_outputs", {}).get("loss", {}).get("value")
        rel = abs(losses[0] - ort) / abs(ort) if ort is not None else None
        limit = 1e-5 if args.precision == "fp32" else args.low_tolerance
        ok = losses[-1] < losses[0] and (rel is None or rel <= limit)
        failures += not ok
        print("%-44s %s  step-1 loss %.6f  ort %s  rel %s  loss after %d steps %.6f" % (
            name, "ok  " if ok else "FAIL", losses[0],
            "%.6f" % ort if ort is not None else "-",
            "%.1e" % rel if rel is not None else "-", args.steps, losses[-1]))
    print("heldout training: %s" % ("ok" if failures == 0 else "%d failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
