#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peers of txrt-gemm-bench at one shape, on the GPU machine:
torch._scaled_mm (E4M3 x E4M3 -> bf16, scales 1, fast accumulation as
asked) and torch.matmul in bf16, D[M, N] = A[M, K] @ W[N, K]^T as a Linear
layer computes it (W.t() is the column-major operand _scaled_mm takes).
Median milliseconds of one GEMM over N timed samples after 5 warm-up
ones, each sample 10 GEMMs back to back between two CUDA events, as
txrt-gemm-bench times (one event pair around one short GEMM would count
the host's launch time). Prints one JSON line per peer and shape.
  torch_gemm.py MxNxK... [--iters N]   (one process for every shape: a
  Python start and torch's initialization take seconds)"""
import argparse
import json

import torch


PER_SAMPLE = 10


def median_ms(fn, iters):
    times = []
    for i in range(iters + 5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(PER_SAMPLE):
            fn()
        end.record()
        torch.cuda.synchronize()
        if i >= 5:
            times.append(start.elapsed_time(end) / PER_SAMPLE)
    times.sort()
    return times[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes", nargs="+", help="MxNxK")
    parser.add_argument("--iters", type=int, default=50)
    args = parser.parse_args()
    for shape in args.shapes:
        m, n, k = map(int, shape.split("x"))
        measure(m, n, k, args)


def measure(m, n, k, args):
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn(m, k, device="cuda", generator=gen)
    w = torch.randn(n, k, device="cuda", generator=gen)
    one = torch.ones((), device="cuda")
    a8, w8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
    flop = 2.0 * m * n * k
    for fast in (False, True):
        ms = median_ms(lambda: torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one,
                                                out_dtype=torch.bfloat16, use_fast_accum=fast),
                       args.iters)
        print(json.dumps({"m": m, "n": n, "k": k, "peer": "torch._scaled_mm", "type": "fp8",
                          "fast_accum": fast, "ms": ms, "tflops": flop / ms / 1e9,
                          "device": torch.cuda.get_device_name()}))
    ab, wb = a.to(torch.bfloat16), w.to(torch.bfloat16)
    ms = median_ms(lambda: ab @ wb.t(), args.iters)
    print(json.dumps({"m": m, "n": n, "k": k, "peer": "torch.matmul", "type": "bf16",
                      "fast_accum": False, "ms": ms, "tflops": flop / ms / 1e9,
                      "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    main()
