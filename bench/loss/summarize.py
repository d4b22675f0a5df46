#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The cross-entropy table of the harness (bench/run_all.sh, part "loss"):
txopt's softmax cross-entropy kernels as they ran in GPT-2's bf16 step
(bench/step's per-command profile, PROFILES=bf16: the loss kernels and the
gradient kernels over the [B*T, vocab] bf16 logits, the gradient written
over the logits) beside PyTorch's F.cross_entropy at the same shape
(torch_ce.py, eager and torch.compile). Bandwidth against the copy
ceiling from the minimal traffic: the forward reads the logits once, the
forward + backward reads them twice and writes the gradient once.
Ratios: peer ms / txopt ms (> 1: txopt faster). Exits 1 when the profile
has no cross-entropy commands or a peer is missing.
  summarize.py PROFILE.json TORCH_CE.jsonl COPY_BANDWIDTH.json"""
import json
import sys


def fail(message):
    print(f"summarize.py: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    profile = json.load(open(sys.argv[1]))
    peers = [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
    copy = json.load(open(sys.argv[3]))["copy_gb_per_s"]
    if not peers:
        fail(f"no PyTorch measurements in {sys.argv[2]}")
    rows, vocab = peers[0]["rows"], peers[0]["vocab"]
    loss = [c for c in profile["commands"] if "'tx.softmax_cross_entropy_loss'" in c.get("origin", "")]
    grad = [c for c in profile["commands"] if "'tx.softmax_cross_entropy_grad'" in c.get("origin", "")]
    if not loss or not grad:
        fail("the profile has no softmax cross-entropy commands")
    fwd_ms = sum(c["ms"] for c in loss)
    both_ms = fwd_ms + sum(c["ms"] for c in grad)
    logits_bytes = rows * vocab * 2
    minimal = {"fwd": logits_bytes, "fwd+bwd": 3 * logits_bytes}
    device = peers[0].get("device", "unknown GPU")
    print(f"### Softmax cross-entropy over [{rows}, {vocab}] bf16 logits — one run, {device}\n")
    print(f"copy ceiling {copy:.0f} GB/s. txopt: its loss and gradient kernels in GPT-2's bf16 step "
          f"({len(loss)} + {len(grad)} launches: "
          f"{', '.join(c['kernel'] for c in loss + grad)}); PyTorch: F.cross_entropy (f32 inside, "
          "as under autocast). % of copy: minimal bytes (logits read once forward; read twice and "
          "the gradient written once forward + backward) / time / copy. Ratio: peer ms / txopt ms.\n")
    print("| pass | txopt ms | % of copy | " +
          " | ".join(f"{p['peer']} ms | % of copy | ratio" for p in peers) + " |")
    print("|---|---|---|" + "---|---|---|" * len(peers))
    # A loss kernel that also writes the gradient (the step's default,
    # RowKernels.cpp) does the forward and backward's work in one pass: the
    # step has no forward-only loss to time, so its "fwd" row is that
    # kernel, and its fwd+bwd traffic is one read and one write where the
    # unfused minimum counts two reads.
    fused = any("_and_grad" in c["kernel"] for c in loss)
    for phase, ms, key in (("fwd", fwd_ms, "fwd_ms"), ("fwd+bwd", both_ms, "fwd_bwd_ms")):
        pct = lambda t: 100 * minimal[phase] / (t / 1e3) / 1e9 / copy
        cells = " | ".join(f"{p[key]:.3f} | {pct(p[key]):.0f}% | {p[key] / ms:.2f}" for p in peers)
        label = f"{phase} (txopt: the fused kernel)" if fused and phase == "fwd" else phase
        print(f"| {label} | {ms:.3f} | {pct(ms):.0f}% | {cells} |")
    if fused:
        print("\ntxopt's loss kernel writes the gradient as it computes the loss: its fwd row times "
              "the forward and backward's work, against the peers' forward alone, and its fwd+bwd "
              "reads the logits once, so it can pass 100% of the two-read minimum.")


if __name__ == "__main__":
    main()
