#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's scaled_dot_product_attention backends at the benchmark shapes,
timed like txrt-attention-bench times txopt's (CUDA events, median of N
after 3 warm-ups, bf16, causal): prints one JSON line per backend and shape.

peers.py B H HKV T D [--iters N]
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_ms(fn, iters):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(iters + 3):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    b, h, hkv, t, d = map(int, sys.argv[1:6])
    iters = int(sys.argv[sys.argv.index("--iters") + 1]) if "--iters" in sys.argv else 20
    gen = torch.Generator(device="cuda").manual_seed(0)
    mk = lambda heads: torch.randn(b, heads, t, d, device="cuda", dtype=torch.bfloat16,
                                   generator=gen).requires_grad_()
    q, k, v = mk(h), mk(hkv), mk(hkv)
    do = torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16, generator=gen)
    flops = 4.0 * b * h * t * t * d * 0.5
    for name, backend in [("flash", SDPBackend.FLASH_ATTENTION),
                          ("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("efficient", SDPBackend.EFFICIENT_ATTENTION)]:
        row = {"backend": name, "B": b, "H": h, "HKV": hkv, "T": t, "D": d}
        try:
            with sdpa_kernel([backend]):
                gqa = {"enable_gqa": True} if hkv != h else {}
                fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, **gqa)
                def both():
                    o = fwd()
                    o.backward(do)
                fwd_ms = median_ms(lambda: fwd(), iters)
                both_ms = median_ms(both, iters)
            row.update(fwd_ms=round(fwd_ms, 4), fwd_bwd_ms=round(both_ms, 4),
                       fwd_tflops=round(flops / fwd_ms / 1e9, 1),
                       fwd_bwd_tflops=round(3.5 * flops / both_ms / 1e9, 1))
        except RuntimeError as e:
            row["error"] = str(e).splitlines()[0][:200]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
