#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The FP8 cast table of the harness (bench/run_all.sh, part "fp8cast"):
txopt's FP8 cast kernels as they ran in GPT-2's fp8 step (bench/step's
per-command profile, PROFILES including fp8: every command of a 'tx.amax'
origin, which casts a tensor to FP8, writes its codes (and, for a GEMM
operand read transposed, the transposed codes) and its amax, often with
the elementwise producer fused in) beside PyTorch casting GPT-2's
activation shapes the same way (torch_cast.py). Bandwidth: txopt's by the
bytes its kernels touch (the profile's), PyTorch's by the minimal traffic
(bf16 read, two FP8 copies written); both against the copy ceiling. Exits
1 when the profile has no cast commands or no peer ran.
  summarize.py PROFILE.json TORCH_CAST.jsonl COPY_BANDWIDTH.json"""
import collections
import json
import sys


def fail(message):
    print(f"summarize.py: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    profile = json.load(open(sys.argv[1]))
    peers = [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
    copy = json.load(open(sys.argv[3]))["copy_gb_per_s"]
    casts = [c for c in profile["commands"] if "'tx.amax'" in c.get("origin", "")]
    if not casts:
        fail("the profile has no FP8 cast ('tx.amax') commands")
    if not peers:
        fail(f"no PyTorch measurements in {sys.argv[2]}")
    device = peers[0].get("device", "unknown GPU")
    by_kernel = collections.OrderedDict()
    for c in casts:
        k = by_kernel.setdefault(c["kernel"], {"launches": 0, "ms": 0.0, "bytes": 0, "origin": c["origin"]})
        k["launches"] += 1
        k["ms"] += c["ms"]
        k["bytes"] += c.get("bytes", 0)
    total_ms = sum(k["ms"] for k in by_kernel.values())
    total_bytes = sum(k["bytes"] for k in by_kernel.values())
    rate = lambda b, ms: b / (ms / 1e3) / 1e9 if ms > 0 else 0.0
    print(f"### FP8 casts (+ transposed codes + amax) — one run, {device}\n")
    print(f"copy ceiling {copy:.0f} GB/s. txopt: the {len(casts)} cast launches of GPT-2's fp8 step, "
          f"{total_ms:.3f} ms, {rate(total_bytes, total_ms):.0f} GB/s "
          f"({100 * rate(total_bytes, total_ms) / copy:.0f}% of copy) by the bytes they touch; "
          "the costliest kernels:\n")
    print("| kernel | launches | ms | GB/s | % of copy | origin |")
    print("|---|---|---|---|---|---|")
    for name, k in sorted(by_kernel.items(), key=lambda kv: -kv[1]["ms"])[:8]:
        r = rate(k["bytes"], k["ms"])
        print(f"| {name} | {k['launches']} | {k['ms']:.3f} | {r:.0f} | {100 * r / copy:.0f}% | {k['origin']} |")
    print("\nPyTorch casting a bf16 activation the same way (amax, E4M3 codes, transposed codes):\n")
    print("| peer | rows x cols | ms | GB/s | % of copy |")
    print("|---|---|---|---|---|")
    for p in peers:
        print(f"| {p['peer']} | {p['rows']}x{p['cols']} | {p['ms']:.4f} | {p['gb_per_s']:.0f} | "
              f"{100 * p['gb_per_s'] / copy:.0f}% |")


if __name__ == "__main__":
    main()
