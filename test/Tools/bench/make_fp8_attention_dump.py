#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a dump in txrt-fp8-attention-probe's layout (q, k, v, do, o, lse,
dq, dk, dv as f32 .npy, scales.json with the probe's scales and the
amaxes) computed by the reference executor (txopt-run on tx.fp8_attention
and tx.fp8_attention_grad) instead of cuDNN, so that
bench/attention/check_fp8_attention.py can be tested without a GPU: on the
executor's own results it must pass, and on a perturbed output it must not.

make_fp8_attention_dump.py DIR --txopt-run BIN [--perturb] [--shift-dv-codes N]
  [--shift-lse X]"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Reference"))
import fp8_attention_oracle as oracle  # noqa: E402

F32 = np.float32


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--txopt-run", required=True)
    ap.add_argument("--perturb", action="store_true",
                    help="flip the output's sign in one head (a dump that must fail)")
    ap.add_argument("--shift-dv-codes", type=int, default=0,
                    help="move a dV element of codes +-2.0 this many FP8 codes up (down if < 0)")
    ap.add_argument("--shift-lse", type=float, default=0.0,
                    help="add this to the lse of one row")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    b, h, h_kv, t, d = 1, 2, 1, 160, 32   # T > 128: two key blocks
    rng = np.random.default_rng(3)
    fp8, grad = "f8E4M3FN", "f8E5M2"
    shapes = ([b, h, t, d], [b, h_kv, t, d], [b, h_kv, t, d])
    attn = float(F32(1.0 / np.sqrt(d)))
    # The probe's scales (txrt_fp8_attention_probe.cpp).
    f32 = lambda x: float(F32(x))
    sc = {"attn_scale": attn, "causal": True, "grad_type": grad,
          "descale_q": 0.5, "descale_k": 0.5, "descale_v": 0.5,
          "scale_s": 224.0, "descale_s": f32(F32(1) / F32(224)), "scale_o": 16.0,
          "descale_o": f32(F32(1) / F32(16)), "descale_do": 1.0, "scale_dp": 64.0,
          "descale_dp": f32(F32(1) / F32(64)), "scale_dq": 2.0, "scale_dk": 2.0, "scale_dv": 2.0}
    model = os.path.join(args.dir, "model.mlir")
    with open(model, "w") as f:
        f.write(oracle.model_text(shapes, True, fp8, grad, attn))
    q = oracle.representable(rng, shapes[0], fp8, 2.0)
    k = oracle.representable(rng, shapes[1], fp8, 2.0)
    v = oracle.representable(rng, shapes[2], fp8, 2.0)
    do = oracle.representable(rng, shapes[0], grad, 1.0)
    run_args = argparse.Namespace(txopt_run=args.txopt_run)
    fwd_dir = os.path.join(args.dir, "fwd")
    os.makedirs(fwd_dir + ".in", exist_ok=True)
    got = oracle.run(run_args, model, "fwd", {
        "q": q, "k": k, "v": v, "q_si": sc["descale_q"], "k_si": sc["descale_k"],
        "v_si": sc["descale_v"], "s_si": sc["descale_s"], "s_s": sc["scale_s"],
        "o_s": sc["scale_o"]}, fwd_dir)
    o, lse = got("o"), got("lse")
    bwd_dir = os.path.join(args.dir, "bwd")
    os.makedirs(bwd_dir + ".in", exist_ok=True)
    got_b = oracle.run(run_args, model, "bwd", {
        "do": do, "q": q, "k": k, "v": v, "o": o, "lse": lse,
        "q_si": sc["descale_q"], "k_si": sc["descale_k"], "v_si": sc["descale_v"],
        "o_si": sc["descale_o"], "do_si": sc["descale_do"], "s_si": sc["descale_s"],
        "dp_si": sc["descale_dp"], "s_s": sc["scale_s"], "dq_s": sc["scale_dq"],
        "dk_s": sc["scale_dk"], "dv_s": sc["scale_dv"], "dp_s": sc["scale_dp"]}, bwd_dir)
    sc.update({"amax_s": float(got("s_amax")), "amax_o": float(got("o_amax"))})
    for name in ("dq", "dk", "dv", "dp"):
        sc["amax_" + name] = float(got_b(name + "_amax"))
    if args.perturb:
        o = o.copy()
        o[:, 0] = -o[:, 0]
    dv = got_b("dv").copy()
    if args.shift_dv_codes:
        # An element of real value 1.0 (codes 2.0 at scale 2), where one
        # E5M2 code up (0.25 real) is beyond NVIDIA's 0.04 + 0.2 rel. Codes
        # in magnitude order are consecutive bit patterns.
        at = tuple(np.argwhere(np.abs(dv) == 2.0)[0])
        code = np.array([abs(dv[at])]).astype(oracle.FP8[grad][0]).view(np.uint8)
        moved = (code.astype(np.int64) + args.shift_dv_codes).astype(np.uint8).view(
            oracle.FP8[grad][0])
        dv[at] = np.sign(dv[at]) * float(moved.astype(np.float64)[0])
    lse = np.array(lse, dtype=np.float64)
    lse.flat[0] += args.shift_lse
    tensors = {"q": q, "k": k, "v": v, "do": do, "o": o, "lse": lse,
               "dq": got_b("dq"), "dk": got_b("dk"), "dv": dv}
    for name, value in tensors.items():
        np.save(os.path.join(args.dir, name + ".npy"), np.asarray(value, dtype=F32))
    with open(os.path.join(args.dir, "scales.json"), "w") as f:
        json.dump(sc, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
