#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The peers of txopt's packed AdamW: torch.optim.AdamW as a for-loop
(foreach=False), multi-tensor (foreach=True) and fused (fused=True) over
the parameter set of the GPT-2-124M the step benchmark trains (12 layers,
d768, vocab 50304, 1024 positions, LM head tied: 148 tensors, 124.5M
elements), with txopt's defaults (lr 1e-3, betas 0.9/0.999, eps 1e-8,
weight decay 0.01 on tensors of rank >= 2, none on the others), f32
parameters, gradients and moments.

  torch_adamw.py --out RESULT.json [--steps 20] [--warmup 5]

Each variant: CUDA events around each optimizer.step(), the median after
the warm-up. Fresh random gradients are drawn once; the 2 GB of state is
40x the H200's 50 MB L2, so nothing stays cached between steps. Bytes per
parameter: p, m, v read and written and g read, 28 bytes in f32.
"""
import argparse
import json
import statistics

import torch


def gpt2_shapes(layers=12, d=768, vocab=50304, positions=1024):
    shapes = [(vocab, d), (positions, d)]
    for _ in range(layers):
        shapes += [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,),
                   (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    return shapes + [(d,), (d,)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    shapes = gpt2_shapes()
    elements = sum(torch.Size(s).numel() for s in shapes)
    results = {"tensors": len(shapes), "elements": elements, "bytes_per_element": 28,
               "variants": {}}
    for name, flags in [("for-loop", {"foreach": False}), ("foreach", {"foreach": True}),
                        ("fused", {"fused": True})]:
        params = [torch.randn(s, device="cuda") * 0.02 for s in shapes]
        for p in params:
            p.requires_grad_(True)
            p.grad = torch.randn_like(p) * 1e-3
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.01},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, **flags)
        times = []
        for step in range(args.warmup + args.steps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            opt.step()
            end.record()
            end.synchronize()
            if step >= args.warmup:
                times.append(start.elapsed_time(end))
        # The update really happened (a comparison that can fail).
        assert all(torch.isfinite(p).all() for p in params)
        assert opt.state[params[0]]["step"].item() == args.warmup + args.steps
        ms = statistics.median(times)
        results["variants"][name] = {"ms": ms, "gb_per_s": elements * 28 / (ms / 1e3) / 1e9}
        print(f"torch AdamW {name:9s} {ms:7.3f} ms  {results['variants'][name]['gb_per_s']:7.0f} GB/s")
        del opt, params
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
