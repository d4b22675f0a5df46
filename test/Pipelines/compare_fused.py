"""Fused and unfused compilations of one model must compute the same numbers.

Compiles MODEL twice with txopt (default pipeline, and --no-fuse=all), runs
both on the CPU reference executor with the same inputs, and compares
every output: max |fused - unfused| / max(|unfused|, tiny) must be at most
--rtol (default 1e-6 in f32, as the fusion issue states). Prints one line
per output and exits 1 on any mismatch.
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--txopt", default="txopt")
ap.add_argument("--txopt-run", default="txopt-run")
ap.add_argument("--seed", type=int, default=1234)
ap.add_argument("--rtol", type=float, default=1e-6)
ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                help="fill input NAME (an fnmatch pattern) with VALUE instead "
                     "(e.g. a realistic lr)")
ap.add_argument("--scale", action="append", default=[], metavar="NAME=FACTOR",
                help="multiply the random values of input NAME (an fnmatch "
                     "pattern) by FACTOR (e.g. 1e-4 for Adam's second moment)")
args = ap.parse_args()


def patterns(flags):
    return [(name, float(value)) for name, value in (s.split("=", 1) for s in flags)]


def lookup(table, name):
    return next((value for pattern, value in table if fnmatch.fnmatchcase(name, pattern)), None)


fixed, scaled = patterns(args.set), patterns(args.scale)

work = tempfile.mkdtemp(prefix="compare_fused_")

# Inputs from the ONNX graph: token ids by the shared models' recipe
# ((7*i + 3) mod 512), floats uniform in [0.1, 1) so that optimizer state
# such as the second moment is positive, as it is in training; --set fixes
# an input where that range is unrealistic (an Adam lr of 0.5, a step of
# 0.7) and --scale shrinks one (a second moment of 0.5 with gradients of
# 0.5), for the held-out recipe's magnitudes (lr 1e-3, step 10, g ~ 0.1,
# m ~ 0.01, v ~ 1e-4).
rng = np.random.default_rng(args.seed)
dtypes = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64,
          onnx.TensorProto.INT32: np.int32}
input_flags = []
for value in onnx.load(args.model, load_external_data=False).graph.input:
    tensor = value.type.tensor_type
    shape = [d.dim_value for d in tensor.shape.dim]
    dtype = dtypes[tensor.elem_type]
    if lookup(fixed, value.name) is not None:
        data = np.full(shape, lookup(fixed, value.name), dtype=dtype)
    elif np.issubdtype(dtype, np.integer):
        data = ((7 * np.arange(int(np.prod(shape))) + 3) % 512).reshape(shape).astype(dtype)
    else:
        data = rng.uniform(0.1, 1.0, size=shape)
        data = (data * (lookup(scaled, value.name) or 1.0)).astype(dtype)
    path = os.path.join(work, f"input{len(input_flags)}.npy")
    np.save(path, data)
    input_flags += ["--input", f"{value.name}={path}"]

outputs = {}
for variant, flags in [("fused", []), ("unfused", ["--no-fuse=all"])]:
    mlir = os.path.join(work, variant + ".mlir")
    subprocess.run([args.txopt, args.model, "-q", "-o", mlir] + flags, check=True)
    out_dir = os.path.join(work, variant)
    os.makedirs(out_dir)
    subprocess.run([args.txopt_run, mlir, "--no-dropout", "--output-dir", out_dir]
                   + input_flags, check=True, stdout=subprocess.DEVNULL)
    outputs[variant] = {f: np.load(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir))}

failed = False
print(f"model {os.path.basename(args.model)} seed {args.seed}")
# Equal outputs prove something only if the fused build fused: it must hold
# fused ops and the unfused build none (every model here has a norm or an
# optimizer step).
FUSED_OPS = ("tx.layer_norm", "tx.rms_norm", "tx.adam", "tx.sgd", "tx.attention")
for variant in ("fused", "unfused"):
    text = open(os.path.join(work, variant + ".mlir")).read()
    counts = {op: len(re.findall(r"= " + re.escape(op) + r"\b", text))
              for op in FUSED_OPS}
    found = ", ".join(f"{op} x{n}" for op, n in counts.items() if n)
    print(f"{variant} build: {found or 'no fused ops'}")
    if (variant == "fused") != bool(found):
        print(f"{variant} build: MISMATCH (expected "
              f"{'fused ops' if variant == 'fused' else 'none'})")
        failed = True
for name, reference in outputs["unfused"].items():
    fused = outputs["fused"][name]
    if fused.shape != reference.shape:
        print(f"{name}: shape {fused.shape} != {reference.shape}")
        failed = True
        continue
    if not (np.all(np.isfinite(reference)) and np.all(np.isfinite(fused))):
        print(f"{name}: MISMATCH (non-finite values)")
        failed = True
        continue
    scale = max(float(np.max(np.abs(reference))), 1e-30)
    err = float(np.max(np.abs(fused.astype(np.float64) - reference))) / scale
    ok = err <= args.rtol
    failed |= not ok
    print(f"{name}: {'ok' if ok else 'MISMATCH'} (rel err {err:.2e}, tolerance {args.rtol:g})")
sys.exit(1 if failed else 0)
