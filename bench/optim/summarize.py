#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""txopt's packed AdamW beside torch.optim.AdamW, from one benchmark run:
txopt's time is the sum of its `adam` kernels in the profiled GPT-2 bf16
step (profile_bf16.json: the same parameter set, updated in place inside
the step), the peers' from torch_adamw.py, the ceiling from the run's
copy bandwidth. Writes OUT/adamw.md and prints it.

  summarize.py OUT

Bandwidth counts the bytes each side moves: torch 28 per parameter (p, m,
v read and written, an f32 g read); txopt reads the bf16 weight gradients
of a bf16 step (2 bytes) and the others in f32, so its bytes are the
profile's bytes of its adam launches (each of p, g, m, v once) plus p, m
and v once more for their writes. The time ratio needs no byte count.
"""
import json
import os
import sys


def main():
    out = sys.argv[1]
    profile = json.load(open(os.path.join(out, "profile_bf16.json")))
    adam = [c for c in profile["commands"] if c["kind"] == "Launch" and c["kernel"].endswith("_adam")]
    if not adam:
        sys.exit("no adam kernels in the profile")
    torch_results = json.load(open(os.path.join(out, "adamw_torch.json")))
    copy_info = json.load(open(os.path.join(out, "copy_bandwidth.json")))
    copy = copy_info["copy_gb_per_s"]
    device = copy_info.get("device", "GPU")
    elements = torch_results["elements"]
    txopt_ms = sum(c["ms"] for c in adam)
    txopt_bytes = sum(c["bytes"] for c in adam) + 12 * elements
    rows = [("txopt packed (in the step)", txopt_ms, len(adam), txopt_bytes)]
    rows += [(f"torch.optim.AdamW {name}", v["ms"], None, 28 * elements)
             for name, v in torch_results["variants"].items()]
    fused = torch_results["variants"]["fused"]["ms"]
    lines = [f"### AdamW over GPT-2-124M's parameters ({torch_results['tensors']} tensors, "
             f"{elements / 1e6:.1f}M elements) — one run, one {device}",
             "", "| optimizer | ms | launches | bytes moved GB | GB/s | % of copy | vs torch fused |",
             "|---|---|---|---|---|---|---|"]
    for name, ms, launches, moved in rows:
        gbs = moved / (ms / 1e3) / 1e9
        lines.append(f"| {name} | {ms:.3f} | {launches if launches else '-'} | {moved / 1e9:.2f} | "
                     f"{gbs:.0f} | {100 * gbs / copy:.0f}% | {fused / ms:.2f}x |")
    lines.append("")
    lines.append(f"copy ceiling {copy:.0f} GB/s; target (issue 11): <= 0.95 ms, >= 88% of copy")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "adamw.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
