#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads the JSON lines of txrt-attention-bench ("txopt") and peers.py and
prints a Markdown table: TFLOP/s forward and forward+backward per shape,
and txopt's ratio to each PyTorch backend (> 1: txopt faster).

report.py RESULTS.jsonl
"""
import json
import sys


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
    shapes = []
    for r in rows:
        key = (r["B"], r["H"], r["HKV"], r["T"], r["D"])
        if key not in shapes:
            shapes.append(key)
    print("| shape B,H,HKV,T,D | impl | fwd TFLOP/s | fwd+bwd TFLOP/s | txopt / impl (fwd+bwd) |")
    print("|---|---|---|---|---|")
    for key in shapes:
        here = [r for r in rows if (r["B"], r["H"], r["HKV"], r["T"], r["D"]) == key]
        ours = next((r for r in here if "backend" not in r), None)
        for r in here:
            name = r.get("backend", "txopt (cuDNN SDPA via txrt)")
            if "error" in r:
                print(f"| {key} | {name} | - | - | unavailable: {r['error'][:60]} |")
                continue
            ratio = (f"{ours['fwd_bwd_tflops'] / r['fwd_bwd_tflops']:.2f}"
                     if ours and "backend" in r else "")
            print(f"| {key} | {name} | {r['fwd_tflops']} | {r['fwd_bwd_tflops']} | {ratio} |")


if __name__ == "__main__":
    main()
