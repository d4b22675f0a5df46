#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The GEMM benchmark's table (bench/gemm/run.sh) from its JSON lines:
per shape, txopt's FP8 GEMM (txrt-gemm-bench) against torch._scaled_mm
with the same accumulation, and txopt's bf16 GEMM against torch.matmul.
Ratio: the peer's milliseconds over txopt's (> 1: txopt faster); the
target (issue 11) is >= 0.98 for FP8, judged on what txrun runs by default
(cuBLASLt's first choice) and shown for the tuned choice (txrun
--tune-gemms). Exits 1 when a shape lacks a measurement.
  summarize.py gemm.jsonl"""
import json
import sys

TARGET = 0.98


def main():
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    shapes = []
    for r in rows:
        key = (r["m"], r["n"], r["k"])
        if key not in shapes:
            shapes.append(key)
    if not shapes:
        print(f"summarize.py: no measurements in {sys.argv[1]}", file=sys.stderr)
        return 1
    device = next((r["device"] for r in rows if "device" in r), "unknown GPU")
    print(f"### GEMMs: txopt's cuBLASLt calls beside PyTorch — one run, {device}\n")
    print("D[M, N] = A[M, K] W[N, K]^T, bf16 out; FP8 operands E4M3 with scales 1. "
          "ms: one GEMM, the median of 50 samples of 10 back to back (CUDA events). "
          "Ratio: peer ms / txopt ms "
          f"(target for FP8: >= {TARGET} on the heuristic's first choice, what txrun runs).\n")
    print("| M x N x K | accumulation | txopt fp8 ms (first / tuned) | TFLOP/s | _scaled_mm ms | TFLOP/s "
          "| ratio first / tuned | target | txopt bf16 ms | torch.matmul bf16 ms | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    status = 0

    def find(key, **want):
        for r in rows:
            if (r["m"], r["n"], r["k"]) == key and all(r.get(k) == v for k, v in want.items()):
                return r
        return None

    for key in shapes:
        bf16 = find(key, type="bf16", peer=None)
        matmul = find(key, peer="torch.matmul")
        for fast in (False, True):
            first = find(key, type="fp8", fast_accum=fast, algorithm="first choice")
            tuned = find(key, type="fp8", fast_accum=fast, algorithm="tuned")
            peer = find(key, peer="torch._scaled_mm", fast_accum=fast)
            # The bf16 pair shares the split row; the fast row needs only FP8.
            if not (first and tuned and peer and (fast or (bf16 and matmul))):
                print(f"| {'x'.join(map(str, key))} | {'fast' if fast else 'split'} | missing | | | | | | | | |")
                status = 1
                continue
            ratio, ratio_tuned = peer["ms"] / first["ms"], peer["ms"] / tuned["ms"]
            met = "met" if ratio >= TARGET else "missed"
            bf16_cells = (f"{bf16['ms']:.4f} | {matmul['ms']:.4f} | {matmul['ms'] / bf16['ms']:.2f}"
                          if not fast else " |  | ")
            print(f"| {'x'.join(map(str, key))} | {'fast' if fast else 'split'} | "
                  f"{first['ms']:.4f} / {tuned['ms']:.4f} | {first['tflops']:.0f} | {peer['ms']:.4f} | "
                  f"{peer['tflops']:.0f} | {ratio:.3f} / {ratio_tuned:.3f} | {met} | {bf16_cells} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
