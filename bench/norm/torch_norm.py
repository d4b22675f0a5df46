#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch peers of the norm micro-benchmark (issue 11), run by run.sh in
the same run as txopt's artifacts: F.layer_norm / F.rms_norm forward and
backward (autograd: dx, dweight and, for LayerNorm, dbias, from a random
grad_output), eager and under torch.compile, at the shapes and dtypes of
DIR/models.json.

  torch_norm.py DIR/models.json OUT.json [--iters 40] [--warmup 10]
                [--modes eager,compile]

Timing, per iteration: a spin kernel (torch.cuda._sleep) first, so that the
host can queue the whole iteration while the GPU is busy; then CUDA events
before the forward, between forward and backward, and after the backward.
The events therefore measure device time, not host dispatch (the forward of
16384x768 bf16 takes about as long on the GPU as eager PyTorch takes to
dispatch it). Medians over --iters iterations after --warmup.

Inputs are rotated: several (x, dy) sets, together at least 4x the L2 cache
(50 MB on an H200), cycled so each iteration's inputs were last touched
several hundred MB of traffic ago and come from HBM. For shapes whose x fits
in L2, eager is also timed with one set reused ("eager_l2_warm"), for
comparison with txopt, whose step writes the norm's input and its dy in the
kernel right before the norm reads them (see bench/NOTES.md).

The forward runs with autograd recording, so it saves its statistics (mean
and rstd) for the backward, as txopt's forward kernel does.
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
# About 1 ms at the H200's ~2 GHz: longer than the host needs to queue one
# iteration (eager or compiled), so no host gap falls inside the events.
SLEEP_CYCLES = 2_000_000


def norm_fn(norm, hidden, eps):
    if norm == "layer":
        return lambda x, w, b: F.layer_norm(x, (hidden,), w, b, eps)
    return lambda x, w, b: F.rms_norm(x, (hidden,), w, eps)


def inputs_for(cfg, sets, device):
    dtype = DTYPES[cfg["dtype"]]
    rows, hidden = cfg["rows"], cfg["hidden"]
    gen = torch.Generator(device=device).manual_seed(11)
    xs = [torch.randn(rows, hidden, dtype=dtype, device=device, generator=gen).requires_grad_()
          for _ in range(sets)]
    dys = [torch.randn(rows, hidden, dtype=dtype, device=device, generator=gen) for _ in range(sets)]
    w = torch.ones(hidden, dtype=dtype, device=device, requires_grad=True)
    b = torch.zeros(hidden, dtype=dtype, device=device, requires_grad=True) if cfg["norm"] == "layer" else None
    return xs, dys, w, b


def one_iteration(fn, x, dy, w, b, events=None):
    params = [x, w] + ([b] if b is not None else [])
    if events:
        torch.cuda._sleep(SLEEP_CYCLES)
        events[0].record()
    y = fn(x, w, b)
    if events:
        events[1].record()
    grads = torch.autograd.grad(y, params, dy)
    if events:
        events[2].record()
    return grads


def measure(fn, xs, dys, w, b, warmup, iters):
    for i in range(warmup):
        one_iteration(fn, xs[i % len(xs)], dys[i % len(dys)], w, b)
    recorded = []
    for i in range(iters):
        events = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        one_iteration(fn, xs[i % len(xs)], dys[i % len(dys)], w, b, events)
        recorded.append(events)
    torch.cuda.synchronize()
    fwd = [e[0].elapsed_time(e[1]) for e in recorded]
    bwd = [e[1].elapsed_time(e[2]) for e in recorded]
    return {"fwd_ms": statistics.median(fwd), "bwd_ms": statistics.median(bwd),
            "fwd_min_ms": min(fwd), "bwd_min_ms": min(bwd), "iters": iters}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models")
    p.add_argument("out")
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--modes", default="eager,compile")
    a = p.parse_args()
    device = torch.device("cuda")
    props = torch.cuda.get_device_properties(device)
    l2 = getattr(props, "L2_cache_size", 0) or 50 * 2**20
    modes = a.modes.split(",")
    results = {"system": {"torch": torch.__version__, "device": torch.cuda.get_device_name(device),
                          "l2_bytes": l2, "sleep_cycles": SLEEP_CYCLES},
               "configs": []}
    for cfg in json.load(open(a.models)):
        started = time.time()
        element = torch.finfo(DTYPES[cfg["dtype"]]).bits // 8
        tensor_bytes = cfg["rows"] * cfg["hidden"] * element
        sets = min(16, max(2, math.ceil(4 * l2 / (2 * tensor_bytes))))
        xs, dys, w, b = inputs_for(cfg, sets, device)
        fn = norm_fn(cfg["norm"], cfg["hidden"], cfg["eps"])
        row = {"name": cfg["name"], "input_sets": sets, "tensor_bytes": tensor_bytes}
        if "eager" in modes:
            row["eager"] = measure(fn, xs, dys, w, b, a.warmup, a.iters)
            if tensor_bytes < l2:
                row["eager_l2_warm"] = measure(fn, xs[:1], dys[:1], w, b, a.warmup, a.iters)
        if "compile" in modes:
            # A fresh dynamo cache per shape: no recompile limit reached, and
            # no automatic dynamic shapes after the first shape (each shape
            # gets kernels specialized to it, as a model would).
            torch._dynamo.reset()
            compiled = torch.compile(fn, dynamic=False, fullgraph=True)
            t0 = time.time()
            one_iteration(compiled, xs[0], dys[0], w, b)
            torch.cuda.synchronize()
            compile_s = time.time() - t0
            row["compile"] = measure(compiled, xs, dys, w, b, a.warmup, a.iters)
            row["compile"]["compile_s"] = compile_s
        del xs, dys, w, b
        torch.cuda.empty_cache()
        row["wall_s"] = time.time() - started
        results["configs"].append(row)
        line = "  ".join(f"{m} fwd {row[m]['fwd_ms']:.4f} bwd {row[m]['bwd_ms']:.4f} ms"
                         for m in ("eager", "compile") if m in row)
        print(f"torch_norm: {cfg['name']}: {line}  ({row['wall_s']:.1f} s)", flush=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
