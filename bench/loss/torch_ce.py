#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peers of txopt's softmax cross-entropy at GPT-2's LM-head shape, on
the GPU machine: F.cross_entropy over [ROWS, VOCAB] logits (bf16, mean over
the rows, labels in [0, VOCAB)) forward, then its backward to the logits'
gradient, in PyTorch eager and torch.compile. Median milliseconds of the
forward and of forward + backward over N samples after warm-up, CUDA
events, the logits rotated between two sets so L2 does not flatter (txopt's
step reads logits its LM-head GEMM has just written). Prints JSON.
  torch_ce.py [--rows 16384] [--vocab 50304] [--iters 20] [--modes eager,compile]"""
import argparse
import json

import torch
import torch.nn.functional as F


def median(times):
    times = sorted(times)
    return times[len(times) // 2]


def measure(fn, inputs, iters):
    for i in range(3):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    times = []
    for i in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        args = inputs[i % len(inputs)]
        start.record()
        fn(*args)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=16384)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--modes", default="eager,compile")
    a = p.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(1)
    sets = []
    for _ in range(2):
        logits = torch.randn(a.rows, a.vocab, device="cuda", dtype=torch.bfloat16, generator=gen)
        labels = torch.randint(0, a.vocab, (a.rows,), device="cuda", generator=gen)
        sets.append((logits.requires_grad_(), labels))

    def forward(logits, labels):
        return F.cross_entropy(logits.float(), labels)

    for mode in a.modes.split(","):
        fn = torch.compile(forward) if mode == "compile" else forward

        def fwd(logits, labels):
            with torch.no_grad():
                fn(logits, labels)

        def both(logits, labels):
            logits.grad = None
            fn(logits, labels).backward()

        result = {"peer": f"pytorch {mode}", "rows": a.rows, "vocab": a.vocab, "dtype": "bf16",
                  "fwd_ms": measure(fwd, sets, a.iters), "fwd_bwd_ms": measure(both, sets, a.iters),
                  "device": torch.cuda.get_device_name()}
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
