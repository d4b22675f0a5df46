#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Plots a whole-step benchmark run (bench/step/run.sh's OUT folder):
  OUT/throughput.png  tokens/s and peak memory per configuration
  OUT/bandwidth.png   each kernel of txopt's bf16 step: GB/s (buffers
                      touched / time) against its ms, with the copy ceiling
Needs matplotlib (the test venv has it; run here on the fetched files).

  plot.py OUT
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    out = sys.argv[1]
    bench = json.load(open(os.path.join(out, "bench.json")))
    rows = bench["rows"]
    names = [r["config"] for r in rows]
    colors = ["tab:blue" if r["system"] == "txopt" else "tab:gray" for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    left.barh(names, [r["tok_per_s"] / 1e3 for r in rows], color=colors)
    left.set_xlabel("thousand tokens / s (higher is better)")
    right.barh(names, [(r.get("peak_bytes") or 0) / 2**30 for r in rows], color=colors)
    right.set_xlabel("peak device memory, GiB (lower is better)")
    right.set_yticklabels([])
    copy_path = os.path.join(out, "copy_bandwidth.json")
    device = (json.load(open(copy_path)).get("device", "GPU") if os.path.exists(copy_path)
              else "GPU")
    fig.suptitle(f"{bench['model']} training step, one {device} (blue: txopt, gray: PyTorch)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "throughput.png"), dpi=120)
    print(f"plot.py: {os.path.join(out, 'throughput.png')}: {len(rows)} configurations")

    profile = os.path.join(out, "profile_bf16.json")
    copy = os.path.join(out, "copy_bandwidth.json")
    if os.path.exists(profile) and os.path.exists(copy):
        ceiling = json.load(open(copy))["copy_gb_per_s"]
        commands = [c for c in json.load(open(profile))["commands"]
                    if c["kind"] == "Launch" and c["ms"] > 0]
        families = {}
        for c in commands:
            family = c["kernel"].split("_", 1)[-1]
            families.setdefault(family, []).append(c)
        fig, ax = plt.subplots(figsize=(10, 6))
        for family, cs in sorted(families.items(), key=lambda kv: -sum(c["ms"] for c in kv[1])):
            ax.scatter([c["ms"] for c in cs],
                       [c["bytes"] / (c["ms"] / 1e3) / 1e9 for c in cs], s=12,
                       label=f"{family} ({sum(c['ms'] for c in cs):.2f} ms)")
        ax.axhline(ceiling, color="black", linestyle="--", label=f"copy ceiling {ceiling:.0f} GB/s")
        ax.set_xscale("log")
        ax.set_xlabel("kernel time, ms (log)")
        ax.set_ylabel("GB/s (bytes of the buffers it touches / time)")
        ax.set_title("txopt bf16 step: bandwidth of each kernel (GEMMs and attention excluded)")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "bandwidth.png"), dpi=120)
        print(f"plot.py: {os.path.join(out, 'bandwidth.png')}: {len(commands)} kernels in "
              f"{len(families)} families against {ceiling:.0f} GB/s")
    else:
        print(f"plot.py: no bandwidth.png (no profile_bf16.json or copy_bandwidth.json in {out})")


if __name__ == "__main__":
    main()
