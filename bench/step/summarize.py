#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Collects one whole-step benchmark run (bench/step/run.sh) into
OUT/bench.json and OUT/bench.md, prints the table, and fails if txopt's
losses leave PyTorch's on the same weights and batches.

  summarize.py DIR OUT MODEL

Step time is the median over the steps after the first 5 (txopt: its
per-step JSONL log, CUDA events around the replayed graph; PyTorch: CUDA
events around forward, backward and optimizer). Ratios are tokens/s of the
row over tokens/s of the peer named in the column.

A txopt configuration not named in TOLERANCE (an A/B variant such as
bf16-base: another artifact copied into DIR as MODEL_bf16-base.txa with its
.report.json) is a row too, after the named ones, checked against the
peer and tolerances of its base (the name before the first '-'); its first
step time is "-" when prepare.sh did not compile it.
"""

import json
import math
import os
import re
import statistics
import sys

WARMUP = 5
# Loss agreement with PyTorch, relative, worst step (and step 1 alone):
# f32 against eager f32; bf16 and fp8 against eager AMP bf16 (different
# rounding points, so looser; FP8 quantizes the GEMM operands).
TOLERANCE = {"fp32": ("eager-fp32", 1e-3, 1e-5),
             "bf16": ("eager-bf16", 2e-2, 5e-3),
             "fp8": ("eager-bf16", 5e-2, 2e-2),
             "fp8-cached": ("eager-bf16", 5e-2, 2e-2),
             "bf16-clip": ("eager-bf16-clip", 2e-2, 5e-3),
             "fp8-clip": ("eager-bf16-clip", 5e-2, 2e-2),
             # The ZeRO-1 step on one rank through NCCL (--data-parallel=1):
             # the same arithmetic as bf16 plus its collectives and copies.
             "bf16-dp1": ("eager-bf16", 2e-2, 5e-3),
             "fp8-lmhead": ("eager-bf16", 5e-2, 2e-2),
             # The forward FP8 GEMMs in the fast accumulator
             # (--fp8-fast-accumulation=forward).
             "fp8-fast": ("eager-bf16", 5e-2, 2e-2),
             # Attention in FP8 too (--fp8-attention; GPT-1.3B: head dim 128).
             "fp8-attention": ("eager-bf16", 5e-2, 2e-2),
             "bf16-unfused": ("eager-bf16", 2e-2, 5e-3)}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def model_flops_per_token(shape):
    """6 N (weights, forward and backward) + 12 L T d (attention scores and
    values), N counting a tied embedding once (an untied input embedding
    not at all: a lookup), by the export's --arch."""
    layers, d, t = shape["--layers"], shape["--d-model"], shape["--seq"]
    vocab = shape.get("--vocab", 50304)
    arch = shape.get("--arch", "gpt")
    if arch == "llama":  # untied head, no biases, SwiGLU of --ffn (prepare.sh spells it)
        n = vocab * d + layers * (4 * d * d + 3 * d * shape["--ffn"] + 2 * d) + d
    elif arch == "bert":  # + the embedding's norm, the MLM transform, the decoder's bias
        n = vocab * d + t * d + 2 * d + layers * (12 * d * d + 13 * d) + d * d + 3 * d + vocab
    else:
        n = vocab * d + t * d + layers * (12 * d * d + 13 * d) + 2 * d
    return 6 * n + 12 * layers * t * d


def tolerance_of(precision):
    """TOLERANCE's entry for |precision|, or its base's (bf16-base: bf16's)."""
    return TOLERANCE.get(precision) or TOLERANCE.get(precision.split("-")[0])


def variants_in(out, named):
    """The txopt configurations run into |out| beyond the |named| ones."""
    found = [f[len("txopt_"):-len(".jsonl")] for f in os.listdir(out)
             if f.startswith("txopt_") and f.endswith(".jsonl")]
    return sorted(p for p in found if p not in named and tolerance_of(p))


def txopt_row(directory, out, model, precision, shape):
    log = os.path.join(out, f"txopt_{precision}.jsonl")
    if not os.path.exists(log):
        return None
    steps = read_jsonl(log)
    ms = statistics.median([s["ms"] for s in steps[WARMUP:]] or [s["ms"] for s in steps])
    text = open(os.path.join(out, f"txopt_{precision}.txt")).read()
    peak = re.search(r"peak device memory [\d.]+ MiB \((\d+) bytes", text)
    report = json.load(open(os.path.join(directory, f"{model}_{precision}.report.json")))
    # A pack made without prepare.sh may lack the compile times: the first
    # step's time is then left out ("-"), not guessed.
    compile_log = os.path.join(directory, f"{model}.compile.jsonl")
    compile_s = next((r["compile_s"] for r in (read_jsonl(compile_log) if os.path.exists(compile_log) else [])
                      if r["precision"] == precision), None)
    first = json.load(open(os.path.join(out, f"txopt_{precision}_first.json")))
    window = shape["--batch"] * shape["--seq"]
    return {"system": "txopt", "config": f"txopt {precision}", "precision": precision,
            "ms": ms, "tok_per_s": window / (ms / 1e3),
            "model_tflops": model_flops_per_token(shape) * window / (ms / 1e3) / 1e12,
            "peak_bytes": int(peak.group(1)) if peak else None,
            "launches": report.get("launches"),
            "first_step_s": (compile_s + first["first_step_run_s"]) if compile_s is not None else None,
            "losses": [s["loss"] for s in steps]}


def torch_row(out, mode, shape):
    path = os.path.join(out, f"torch_{mode}.json")
    if not os.path.exists(path):
        return None
    r = json.load(open(path))
    window = shape["--batch"] * shape["--seq"]
    return {"system": "pytorch", "config": f"pytorch {mode}", "precision": mode,
            "ms": r["ms"], "tok_per_s": r["tok_per_s"],
            "model_tflops": model_flops_per_token(shape) * window / (r["ms"] / 1e3) / 1e12,
            "peak_bytes": r["peak_reserved_bytes"],
            "peak_allocated_bytes": r["peak_allocated_bytes"],
            "launches": r["launches"], "first_step_s": r["first_step_s"],
            "losses": r["losses"], "version": r["system"]}


def main():
    directory, out, model = sys.argv[1:4]
    words = open(os.path.join(directory, f"{model}.shape")).read().split()
    # The export's flags: numbers, --gelu's form (gpt2-tanh), --arch.
    shape = {k: int(v) if v.isdigit() else v for k, v in zip(words[::2], words[1::2])}
    named = ("fp32", "bf16", "fp8", "fp8-cached", "bf16-clip", "fp8-clip", "bf16-dp1",
             "fp8-lmhead", "bf16-unfused", "fp8-fast", "fp8-attention")
    rows = [r for r in [txopt_row(directory, out, model, p, shape)
                        for p in named + tuple(variants_in(out, named))] +
            [torch_row(out, m, shape) for m in ("eager-fp32", "eager-bf16", "compile-bf16",
                                                "eager-bf16-clip", "compile-bf16-clip")] if r]
    peers = {r["precision"]: r for r in rows if r["system"] == "pytorch"}
    status = 0
    checks = []
    for r in rows:
        if r["system"] != "txopt":
            continue
        peer_mode, worst_tol, first_tol = tolerance_of(r["precision"])
        peer = peers.get(peer_mode)
        if not peer:
            checks.append(f"{r['config']}: no {peer_mode} run to compare losses with")
            status = 1
            continue
        n = min(len(r["losses"]), len(peer["losses"]))
        rel = [abs(a - b) / abs(b) for a, b in zip(r["losses"][:n], peer["losses"][:n])]
        ok = n > 0 and all(math.isfinite(x) for x in rel) and max(rel) <= worst_tol and rel[0] <= first_tol
        checks.append(f"{r['config']} vs pytorch {peer_mode}: {n} steps, loss step 1 "
                      f"{r['losses'][0]:.6f} vs {peer['losses'][0]:.6f} (rel {rel[0]:.2e}, tol "
                      f"{first_tol:g}), worst rel {max(rel):.2e} (tol {worst_tol:g}): "
                      f"{'PASS' if ok else 'FAIL'}")
        status |= 0 if ok else 1
    # The GPU the run had (copy_bandwidth.py names it): an H100 or an H200.
    copy_path = os.path.join(out, "copy_bandwidth.json")
    device = (json.load(open(copy_path)).get("device", "GPU") if os.path.exists(copy_path)
              else "GPU")
    lines = [f"### {model} (B{shape['--batch']}, T{shape['--seq']}, {shape['--layers']} layers, "
             f"d{shape['--d-model']}{', ' + shape['--gelu'] + ' GELU' if '--gelu' in shape else ''}) — one run, one {device}", "",
             "| configuration | ms/step | tok/s | model TFLOP/s | peak memory GiB | launches/step "
             "| first step s | vs torch.compile bf16 (clipped: clipped) | vs eager (same precision) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        # A clipped step is compared with the clipped peers.
        clipped = "-clip" if r["precision"].endswith("-clip") else ""
        compiled = peers.get("compile-bf16" + clipped)
        eager = peers.get("eager-fp32" if r["precision"].split("-")[0] == "fp32"
                          or r["precision"] == "eager-fp32" else "eager-bf16" + clipped)
        ratio = f"{r['tok_per_s'] / compiled['tok_per_s']:.2f}x" if compiled else "-"
        vs_eager = f"{r['tok_per_s'] / eager['tok_per_s']:.2f}x" if eager else "-"
        peak = f"{r['peak_bytes'] / 2**30:.1f}" if r.get("peak_bytes") else "-"
        first_step = f"{r['first_step_s']:.1f}" if r.get("first_step_s") is not None else "-"
        lines.append(f"| {r['config']} | {r['ms']:.1f} | {r['tok_per_s'] / 1e3:.1f}k | "
                     f"{r['model_tflops']:.0f} | {peak} | {r['launches']} | "
                     f"{first_step} | {ratio} | {vs_eager} |")
    lines += ["", "Loss agreement (same weights, same token windows):"] + [f"- {c}" for c in checks]
    profile = os.path.join(out, "profile_bf16.json")
    copy = os.path.join(out, "copy_bandwidth.json")
    if os.path.exists(profile) and os.path.exists(copy):
        ceiling = json.load(open(copy))["copy_gb_per_s"]
        commands = json.load(open(profile))["commands"]
        kernels = [c for c in commands if c["kind"] == "Launch" and c["ms"] > 0]
        moved = sum(c["bytes"] for c in kernels)
        spent = sum(c["ms"] for c in kernels)
        lines += ["", f"txopt bf16 kernels (not GEMM/attention): {len(kernels)} launches, "
                      f"{spent:.2f} ms, {moved / 1e9:.2f} GB touched, "
                      f"{moved / (spent / 1e3) / 1e9:.0f} GB/s overall against a copy "
                      f"ceiling of {ceiling:.0f} GB/s"]
        # Device time per kind of command beside the host time its enqueue
        # took: where host > device the profile (no graph) overstates it.
        kinds = {}
        for c in commands:
            kind = c["kind"] if c["kind"] != "Launch" else "kernels"
            k = kinds.setdefault(kind, [0, 0.0, 0.0])
            k[0] += 1
            k[1] += c["ms"]
            k[2] += c.get("host_ms", 0.0)
        lines += ["", "| profiled step, by command kind | count | device ms | host enqueue ms |",
                  "|---|---|---|---|"]
        for kind, (n, dev, host) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
            lines.append(f"| {kind} | {n} | {dev:.2f} | {host:.2f} |")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "bench.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump({"model": model, "shape": shape, "rows": rows, "checks": checks}, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
