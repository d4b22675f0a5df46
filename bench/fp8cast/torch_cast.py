#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peers of txopt's FP8 cast kernels, on the GPU machine: a bf16
[ROWS, COLS] activation's amax, its E4M3 codes at a scale (x * scale,
saturated, as Transformer Engine casts) and the codes transposed (the
copy a wgrad GEMM reads in cuBLASLt's TN form), in PyTorch eager and
torch.compile. Median milliseconds over N runs after warm-up, CUDA events,
two input sets rotated so L2 does not flatter; GB/s by the minimal
traffic (bf16 read once, two FP8 copies written). Prints JSON lines.
  torch_cast.py ROWSxCOLS... [--iters 20] [--modes eager,compile]"""
import argparse
import json

import torch


def cast(x, scale):
    amax = x.abs().amax().float()
    q = (x.float() * scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return amax, q, q.t().contiguous()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("shapes", nargs="+", help="ROWSxCOLS")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--modes", default="eager,compile")
    a = p.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(1)
    scale = torch.tensor(2.0, device="cuda")
    for shape in a.shapes:
        rows, cols = map(int, shape.split("x"))
        sets = [torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16, generator=gen)
                for _ in range(2)]
        for mode in a.modes.split(","):
            fn = torch.compile(cast) if mode == "compile" else cast
            for i in range(3):
                fn(sets[i % 2], scale)
            torch.cuda.synchronize()
            times = []
            for i in range(a.iters):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn(sets[i % 2], scale)
                end.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(end))
            ms = sorted(times)[len(times) // 2]
            minimal = rows * cols * (2 + 1 + 1)
            print(json.dumps({"peer": f"pytorch {mode}", "rows": rows, "cols": cols, "ms": ms,
                              "gb_per_s": minimal / (ms / 1e3) / 1e9,
                              "device": torch.cuda.get_device_name()}), flush=True)


if __name__ == "__main__":
    main()
