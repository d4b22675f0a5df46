#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Structure-aware mutation driver for the whole txopt chain.

Mutates ModelProtos of the seed models with the onnx package (dims, element
types, attributes, node wiring, external-data records, raw data lengths,
opset and ir_version), then drives each mutant through

    txopt M --emit=tx -o F.mlir      -> txopt-run F.mlir          (forward)
    txopt M --train   -o S.mlir      -> txopt-run S.mlir --steps 1
    txopt M --train --precision=P -o S.txa   (the GPU lowering, P drawn
                                              from fp32, bf16, fp8; unless
                                              --no-gpu)

and flags a finding for any crash (killed by a signal), hang (timeout),
exit status other than 0/1/2, an error that is not one line starting
with "<tool>: error:", or one that says "internal error" (the GPU
lowering's own checks, DataflowCheck.cpp, failing on a step it built).
Findings are saved (mutant + log) under OUT/findings.

    fuzz/mutate_chain.py --bin build/bin --seconds 1200 --out /tmp/chain

Deterministic for a given --seed. Prints a summary line at the end:
`N mutants, E execs, F findings`.
"""
import argparse
import copy
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
EXTREME = [0, 1, -1, 2, 3, 7, 64, 1 << 20, 1 << 31, 1 << 40, -(1 << 40),
           INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1]
ATTR_NAMES = ["axis", "axes", "perm", "split", "k", "upper", "keepdims",
              "num_outputs", "to", "mode", "epsilon", "ratio", "seed", "value",
              "allowzero", "batch_dims", "transA", "stash_type", "bogus"]


def extreme(rng):
    return rng.choice(EXTREME) if rng.random() < 0.7 else rng.randrange(-100, 100)


def all_value_infos(g):
    return list(g.input) + list(g.output) + list(g.value_info)


def mutate_dims(m, rng):
    infos = [v for v in all_value_infos(m.graph)
             if v.type.HasField("tensor_type")]
    if not infos:
        return "dims: none"
    v = rng.choice(infos)
    shape = v.type.tensor_type.shape
    r = rng.random()
    if not shape.dim or r < 0.2:
        shape.dim.add().dim_value = rng.choice([1, 2, 3, 1 << 31, 0])
    elif r < 0.35:
        shape.dim.pop()
    else:
        d = rng.choice(shape.dim)
        if rng.random() < 0.15:
            d.dim_param = "sym"
        else:
            d.dim_value = rng.choice([0, 1, 2, 5, 1 << 31, 1 << 40, -1, extreme(rng)])
    return "dims of %s" % v.name


def mutate_type(m, rng):
    infos = [v for v in all_value_infos(m.graph)
             if v.type.HasField("tensor_type")]
    pool = infos + list(m.graph.initializer)
    if not pool:
        return "type: none"
    x = rng.choice(pool)
    t = rng.choice([1, 2, 3, 6, 7, 9, 10, 11, 16, 17, 19, 8, 0, 99])
    if isinstance(x, onnx.TensorProto):
        x.data_type = t
    else:
        x.type.tensor_type.elem_type = t
    return "type of %s -> %d" % (x.name, t)


def mutate_attr(m, rng):
    if not m.graph.node:
        return "attr: none"
    n = rng.choice(m.graph.node)
    r = rng.random()
    if n.attribute and r < 0.5:
        a = rng.choice(n.attribute)
        if a.type == onnx.AttributeProto.INT:
            a.i = extreme(rng)
        elif a.type == onnx.AttributeProto.INTS and a.ints:
            a.ints[rng.randrange(len(a.ints))] = extreme(rng)
        elif a.type == onnx.AttributeProto.FLOAT:
            a.f = rng.choice([0.0, -1.0, 1e30, float("nan"), float("inf")])
        elif a.type == onnx.AttributeProto.TENSOR:
            mutate_tensor(a.t, rng)
        else:
            a.type = rng.choice([1, 2, 3, 6, 7])
        return "attr %s of %s" % (a.name, n.name or n.op_type)
    if n.attribute and r < 0.65:
        del n.attribute[rng.randrange(len(n.attribute))]
        return "attr dropped from %s" % (n.name or n.op_type)
    name = rng.choice(ATTR_NAMES)
    if rng.random() < 0.5:
        n.attribute.append(helper.make_attribute(name, extreme(rng)))
    else:
        n.attribute.append(helper.make_attribute(
            name, [extreme(rng) for _ in range(rng.randrange(1, 4))]))
    return "attr %s added to %s" % (name, n.name or n.op_type)


def mutate_wiring(m, rng):
    g = m.graph
    if len(g.node) < 2:
        return "wiring: none"
    n = rng.choice(g.node)
    values = [o for x in g.node for o in x.output] + [i.name for i in g.input] \
        + [i.name for i in g.initializer]
    r = rng.random()
    if n.input and r < 0.5:
        n.input[rng.randrange(len(n.input))] = rng.choice(values)
    elif n.input and r < 0.7:
        n.input.pop()
    elif r < 0.85:
        n.input.append(rng.choice(values + [""]))
    else:
        i, j = rng.randrange(len(g.node)), rng.randrange(len(g.node))
        a, b = copy.deepcopy(g.node[i]), copy.deepcopy(g.node[j])
        g.node[i].CopyFrom(b)
        g.node[j].CopyFrom(a)
    return "wiring of %s" % (n.name or n.op_type)


def mutate_tensor(t, rng):
    r = rng.random()
    if r < 0.25 and t.dims:
        t.dims[rng.randrange(len(t.dims))] = rng.choice(
            [0, 1, 2, 1 << 31, 1 << 40, -1, extreme(rng)])
    elif r < 0.5 and t.raw_data:
        raw = t.raw_data
        if rng.random() < 0.5:
            t.raw_data = raw[: max(0, len(raw) - rng.randrange(1, 9))]
        else:
            t.raw_data = raw + b"\x7f" * rng.randrange(1, 9)
    elif (r < 0.65 and t.data_type == TensorProto.INT64 and t.raw_data and
          len(t.raw_data) % 8 == 0):  # an earlier mutation may have cut it
        a = np.frombuffer(t.raw_data, np.int64).copy()
        if a.size:
            a[rng.randrange(a.size)] = extreme(rng)
            t.raw_data = a.tobytes()
    elif r < 0.8:
        t.float_data.append(1.0)
    else:
        t.data_location = TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key = rng.choice(["location", "offset", "length", "checksum"])
        e.value = rng.choice(["w.bin", "../w.bin", "/etc/passwd", "-1",
                              "18446744073709551615", "0", "12", ""])


def mutate_initializer(m, rng):
    if not m.graph.initializer:
        return "init: none"
    t = rng.choice(m.graph.initializer)
    mutate_tensor(t, rng)
    return "initializer %s" % t.name


def mutate_header(m, rng):
    if rng.random() < 0.5:
        m.ir_version = rng.choice([3, 7, 8, 10, 0, -1, 1 << 40, 15])
        return "ir_version"
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = rng.choice([11, 13, 14, 17, 18, 21, 23, 24])
    return "opset"


def mutate_constant_node(m, rng):
    consts = [n for n in m.graph.node if n.op_type == "Constant"]
    if not consts:
        return mutate_attr(m, rng)
    n = rng.choice(consts)
    for a in n.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            mutate_tensor(a.t, rng)
    return "constant %s" % (n.name or n.output[0])


MUTATORS = [mutate_dims, mutate_type, mutate_attr, mutate_attr, mutate_wiring,
            mutate_initializer, mutate_header, mutate_constant_node]


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
    except subprocess.TimeoutExpired:
        return None, "", ""
    return p.returncode, p.stdout, p.stderr


def problem(tool, rc, err):
    if rc is None:
        return "hang"
    if rc < 0:
        return "signal %d" % -rc
    if rc not in (0, 1, 2):
        return "exit %d" % rc
    if rc != 0:
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith(tool + ": error: "):
            return "error not one line (%d lines)" % len(lines)
        if "internal error" in lines[0]:
            return "internal error"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="folder with txopt, txopt-run")
    ap.add_argument("--seeds", nargs="*", default=None)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--max-memory", default="2G")
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-gpu", action="store_true",
                    help="skip the GPU lowering (txopt --train -o S.txa)")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    seeds = args.seeds or [os.path.join(root, "test/Inputs/models", f)
                           for f in sorted(os.listdir(os.path.join(root, "test/Inputs/models")))
                           if f.endswith(".onnx")]
    models = [onnx.load(s, load_external_data=False) for s in seeds]
    txopt = os.path.join(args.bin, "txopt")
    txopt_run = os.path.join(args.bin, "txopt-run")
    out = args.out or tempfile.mkdtemp(prefix="mutate_chain.")
    os.makedirs(os.path.join(out, "findings"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="mc.", dir=out)
    rng = random.Random(args.seed)
    start = time.time()
    mutants = execs = findings = 0
    seen = set()
    while time.time() - start < args.seconds:
        base = rng.randrange(len(models))
        m = copy.deepcopy(models[base])
        what = [rng.choice(MUTATORS)(m, rng) for _ in range(rng.randrange(1, 4))]
        try:
            data = m.SerializeToString()
        except Exception:
            continue
        digest = hashlib.sha1(data).hexdigest()[:12]
        if digest in seen:
            continue
        seen.add(digest)
        mutants += 1
        path = os.path.join(work, "m.onnx")
        with open(path, "wb") as f:
            f.write(data)
        steps = [
            ("txopt", [txopt, path, "--emit=tx", "-o", os.path.join(work, "f.mlir")]),
            ("txopt-run", [txopt_run, os.path.join(work, "f.mlir"),
                           "--max-memory", args.max_memory, "--print-limit", "0"]),
            ("txopt", [txopt, path, "--train", "-o", os.path.join(work, "s.mlir")]),
            ("txopt-run", [txopt_run, os.path.join(work, "s.mlir"), "--steps", "1",
                           "--max-memory", args.max_memory]),
        ]
        if not args.no_gpu:
            precision = rng.choice(["fp32", "bf16", "fp8"])
            steps.append(("txopt", [txopt, path, "--train", "--precision=" + precision,
                                    "-o", os.path.join(work, "s.txa")]))
        train_rc = None
        for i, (tool, cmd) in enumerate(steps):
            if i in (1, 3) and last_rc != 0:
                continue
            # The GPU lowering of a step the CPU path could not build
            # says the same error again.
            if i == 4 and train_rc != 0:
                continue
            rc, _, err = run(cmd, args.timeout)
            execs += 1
            last_rc = rc
            if i == 2:
                train_rc = rc
            bad = problem(tool, rc, err)
            if bad:
                findings += 1
                name = "%s_%s" % (digest, tool)
                shutil.copy(path, os.path.join(out, "findings", name + ".onnx"))
                with open(os.path.join(out, "findings", name + ".log"), "w") as f:
                    f.write("seed model: %s\nmutations: %s\ncommand: %s\n"
                            "problem: %s\nstderr:\n%s\n" % (
                                seeds[base], "; ".join(what), " ".join(cmd),
                                bad, err))
                print("FINDING %s: %s (%s) [%s]" % (name, bad, tool,
                                                    "; ".join(what)),
                      flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print("%d mutants, %d execs, %d findings in %.0f s (seed %d)" % (
        mutants, execs, findings, time.time() - start, args.seed))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
