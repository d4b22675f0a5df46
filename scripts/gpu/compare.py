#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares GPU training steps (txrun) with the CPU reference executor
(txopt-run) case by case and prints one table.

f32 cases: every step's loss within 1e-5 relative, its gradient norm within
1e-5 at step 1 and 1e-4 after (the norm sums squares of every gradient,
tiny ones included, whose f32 summation-order noise Adam's normalized
steps feed back into the next steps). A one-step case checks the gradient
kernels at full sensitivity: from the same state, every first moment
(exp_avg = 0.1 g) within 1e-5 of its largest magnitude, every parameter
within 1e-4 over the elements whose gradient is signal. After several
steps, first moments within 3e-4 and parameters within 2e-3: Adam's first
step is lr * g / (|g| + eps), so an element whose gradient is pure f32
cancellation noise (GPT-2 untied, DeviceLog session 8: g = -1.35e-8 on the
CPU, -0.97e-8 on the GPU, 1e-5 of its tensor's largest) moves up to lr
apart on the two machines, and the next steps' gradients, all of them,
are taken at slightly different parameters (there, step 2's first moments
differ by 1.2e-4 of their largest, step 5's by 1.7e-4, where step 1's
differ by 5.5e-7). Why not 1e-4 for parameters: Adam divides the first
moment by the root of the second, so an element whose gradient is small
relative to its tensor's carries a relative rounding difference of 1e-4
or more between any two f32 implementations (summation order), and the
division turns it into that relative difference of a full lr-sized step;
over 5 steps the worst element reaches a few 1e-4 of the tensor's largest
value, and up to 1e-3: GPT-2 measured 9.2e-4 with one summation order of
the layer-norm gradient's dgamma/dbeta and 1.17e-3 with another (DeviceLog
session 9, run 3; the one-step case at full sensitivity 3.9e-6 of its
1e-4 either way), so the multi-step bound is 2e-3: it tracks rounding
amplified by Adam, which a kernel's summation order alone moves by a
third, and the gradient kernels are held to the one-step bounds. PyTorch's own f32 AdamW differs from its f64 run by as much
(scripts/gpu/torch_reference_check.sh measures it). A further exception is not the GPU's: Adam divides the first
moment by the root of the second, so a gradient that is exactly zero in
exact arithmetic (the attention key bias: softmax ignores a constant shift
of the scores) and 1e-9 of rounding noise on either machine steps by +-lr
either way. Elements whose CPU first moment is below 1e-5 of its tensor's
largest are therefore left out of the parameter check (and counted in the
table); their first moments are still checked.
Reduced-precision cases (name ends in _bf16, _fp16 or _fp8; state compared only
when the CPU state was kept), against the executor's
bit-exact bf16 emulation, which accumulates in double where the GPU
accumulates in f32: loss and gradient norm within 2e-2 per step, first moments 5e-2,
parameters 1e-1. FP8 cases: loss and gradient norm within 2e-2 per step; with
FP8 attention (name has `attention_fp8`) the gradient norm within 5e-2 after
the first compared step: two formulas of tx.fp8_attention's forward that
both fit cuDNN's kernel within NVIDIA's tolerances (the normalized
probabilities quantized, the executor's; exp(S - running max) quantized per
256-key tile, what cuDNN's codes match best) give gradient norms 1.7-2.2%
apart on the executor itself by steps 5-6 of gpt_head128_attention_fp8
(the first step from the same state 0.2% apart), Adam amplifying what E5M2
dS, dQ and dK round differently (DeviceLog session 32, run 2). Their FP8
scaling state (fp8.* files, kept for the cases prepare_check.sh marks
FP8_STATE_ONLY) is judged in two parts, per FP8 type (e4m3: the forward's
sites, e5m2: the gradients'):
- Each site's scale against its own amax, to f32 rounding: the update
  computes scale = (fp8_max * 2^-margin) / amax, so scale * amax is one
  constant on both machines wherever the amax is non-zero, and the scale
  stays at its previous value (here the initial 1) where it is zero;
  scale_inv is 1/scale. This is exact whatever the amaxes are, so a scale
  update that reads another site's amax (the offset table gpt_deep_fp8
  exists for) fails here even when the two sites' amaxes are close.
- The amaxes themselves against the CPU's, by distribution, since they
  cannot agree element by element: the FP8 GEMMs' bf16 outputs differ in
  the last bit from the executor's (f32 accumulation, Hopper's
  reduced-precision FP8 accumulator, against f64), values near a rounding
  boundary of E4M3 (1/16 relative) or E5M2 (1/8) round the other way, and
  through 80 blocks those flips move a layer's maximum by a few percent
  (the GPU's gradients through 80 bf16 blocks against the f32 executor:
  E5M2 amaxes a median 2% apart, at most 17%; E4M3 at most 6%, DeviceLog
  session 26). Bounds: the median relative difference within 1e-2 (e4m3)
  or 5e-2 (e5m2), every site within one grid step of its type at the
  bottom of a binade (1/8 for e4m3, 1/4 for e5m2), zeros exactly where the
  CPU has zeros. A cast kernel writing its amax into another kind of site
  (a weight's into an activation's slot) is off by far more.
A case whose line in cases.txt names a checkpoint (prepare_check.sh's
CALIBRATE) is compared from the step after it. A case also fails if it did
not train (loss not falling over several steps), if nothing was compared,
or if graph replay and direct execution disagree beyond the loss tolerance.
"""
import os
import re
import sys

import numpy as np

STEP = re.compile(r"^step (\d+)\s+loss (\S+)\s+grad_norm (\S+)")


def losses(path):
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        m = STEP.match(line.strip())
        if m:
            out[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    return out


# FP8 attention's gradient norms after the first compared step (the module
# docstring says why).
FP8_ATTENTION_GRAD_NORM_TOL = 5e-2

# The amax bounds per FP8 type (module docstring): the median relative
# difference over the sites, and the largest at any site.
FP8_AMAX_BOUNDS = {"e4m3": (1e-2, 1 / 8), "e5m2": (5e-2, 1 / 4)}


def compare_fp8_state(cpu_dir, gpu_dir, problems):
    """Judges the fp8.<type>.{amax_history,scale,scale_inv} files of one
    case (module docstring); appends to |problems|. Returns the number of
    tensors compared and the largest amax difference, relative per site."""
    compared, worst = 0, 0.0
    if not os.path.isdir(cpu_dir):
        return compared, worst
    for kind, (median_bound, site_bound) in FP8_AMAX_BOUNDS.items():
        names = [f"fp8.{kind}.{part}.npy" for part in ("amax_history", "scale", "scale_inv")]
        present = [os.path.exists(os.path.join(cpu_dir, n)) for n in names]
        if not any(present):
            continue
        if not all(present):
            problems.append(f"fp8.{kind}: the CPU kept only part of its state")
            continue
        missing = [n for n in names if not os.path.exists(os.path.join(gpu_dir, n))]
        if missing:
            problems.append(f"{missing[0]} not written by txrun")
            continue
        cpu = [np.load(os.path.join(cpu_dir, n)).astype(np.float64) for n in names]
        gpu = [np.load(os.path.join(gpu_dir, n)).astype(np.float64) for n in names]
        if any(c.shape != g.shape for c, g in zip(cpu, gpu)):
            problems.append(f"fp8.{kind}: shapes {[g.shape for g in gpu]} vs {[c.shape for c in cpu]}")
            continue
        compared += 3
        (c_hist, c_scale, c_inv), (g_hist, g_scale, g_inv) = cpu, gpu
        if not all(np.all(np.isfinite(g)) for g in gpu):
            problems.append(f"fp8.{kind}: non-finite values on the GPU")
            continue
        # Zeros where, and only where, the CPU has them (unwritten history
        # slots, sites whose tensor was all zero).
        if np.any((c_hist == 0) != (g_hist == 0)):
            i = np.argwhere((c_hist == 0) != (g_hist == 0))[0]
            problems.append(f"fp8.{kind}.amax_history.npy: site {i[0]} slot {i[1]} is "
                            f"{g_hist[tuple(i)]:.3g} vs the CPU's {c_hist[tuple(i)]:.3g}")
            continue
        # Each site's scale against its own amax under the recipe's rule
        # (the largest history entry, or the newest): the rule is the one
        # under which the CPU's own scales are consistent.
        def products(hist, scale):
            return {rule: (scale * amax, amax) for rule, amax in
                    (("max", hist.max(axis=1)), ("most_recent", hist[:, 0]))}
        c_rules, g_rules = products(c_hist, c_scale), products(g_hist, g_scale)

        def spread(rule):
            product, amax = c_rules[rule]
            live = product[amax > 0]
            return np.ptp(live) / np.median(live) if live.size else 0.0
        rule = min(c_rules, key=spread)
        (c_product, c_amax), (g_product, _) = c_rules[rule], g_rules[rule]
        live = c_amax > 0
        constant = np.median(c_product[live]) if np.any(live) else 1.0
        off = np.zeros_like(g_scale)
        off[live] = np.abs(g_product[live] - constant) / constant
        off[~live] = np.abs(g_scale[~live] - c_scale[~live]) / np.abs(c_scale[~live])
        off = np.maximum(off, np.abs(g_inv * g_scale - 1.0))
        if np.max(off) > 2.5e-7:
            i = int(np.argmax(off))
            problems.append(f"fp8.{kind}.scale.npy: site {i}'s scale is not its own amax's "
                            f"(scale*amax off by {off[i]:.2e}, f32 rounding is 1.2e-7)")
        # The amaxes against the CPU's, by distribution.
        nonzero = c_hist != 0
        rel = np.abs(g_hist[nonzero] - c_hist[nonzero]) / np.abs(c_hist[nonzero])
        if rel.size:
            worst = max(worst, float(rel.max()))
            median = float(np.median(rel))
            if median > median_bound:
                problems.append(f"fp8.{kind}.amax_history.npy: median difference {median:.2e} "
                                f"> {median_bound:.0e}")
            if rel.max() > site_bound:
                i = np.argwhere(nonzero)[int(np.argmax(rel))]
                problems.append(f"fp8.{kind}.amax_history.npy: site {i[0]} differs by "
                                f"{rel.max():.2e} > {site_bound:.3g}")
    return compared, worst


def main():
    cases_dir, results_dir = sys.argv[1], sys.argv[2]
    failed = 0
    rows = []
    for line in open(os.path.join(cases_dir, "cases.txt")):
        # "NAME LAST [CHECKPOINT FROM]": steps FROM+1..LAST were run, from
        # the executor's checkpoint of step FROM (prepare_check.sh).
        fields = line.split()
        name, steps = fields[0], int(fields[1])
        first = int(fields[3]) + 1 if len(fields) > 3 else 1
        low = name.endswith(("_bf16", "_fp16", "_fp8"))
        loss_tol, moment_tol, param_tol = (2e-2, 5e-2, 1e-1) if low else (1e-5, 3e-4, 2e-3)
        if not low and steps - first + 1 == 1:
            # One step from the same state: the gradient kernels alone.
            moment_tol, param_tol = 1e-5, 1e-4
        if name.endswith("_fp8"):
            loss_tol = 2e-2
        cpu = losses(os.path.join(cases_dir, name + ".cpu.log"))
        gpu = losses(os.path.join(results_dir, name + ".gpu.log"))
        nograph = losses(os.path.join(results_dir, name + ".nograph.log"))
        problems = [] if steps >= first else [f"no step to compare (steps {first}..{steps})"]
        worst_loss = 0.0
        for s in range(first, steps + 1):
            if s not in cpu or s not in gpu:
                problems.append(f"step {s} missing")
                break
            for what, c, g in (("loss", cpu[s][0], gpu[s][0]),
                               ("grad_norm", cpu[s][1], gpu[s][1])):
                # txopt-run prints 6 decimals: half a unit of the last one is
                # the CPU figure's own uncertainty (it matters for losses
                # near 0).
                rel = max(abs(g - c) - 5e-7, 0.0) / max(abs(c), 1e-30)
                worst_loss = max(worst_loss, rel)
                tol = loss_tol if (what == "loss" or s == first or low) else 10 * loss_tol
                if "attention_fp8" in name and what == "grad_norm" and s > first:
                    tol = FP8_ATTENTION_GRAD_NORM_TOL
                if not np.isfinite(g) or rel > tol:
                    problems.append(f"step {s} {what} {g!r} vs cpu {c!r}")
        # Atomics (norm and embedding gradients) make the order of a few
        # f32 additions run-dependent, so replay is held to the same bound.
        for s in gpu:
            if s not in nograph or abs(nograph[s][0] - gpu[s][0]) > loss_tol * abs(gpu[s][0]):
                problems.append(f"step {s}: graph replay and direct execution disagree")
                break
        # A step over an empty batch (op_zero_rows) has loss 0 at every step
        # on both machines; its comparison is the state (weight decay alone).
        empty_batch = cpu and all(c[0] == 0.0 for c in cpu.values()) and \
            all(g[0] == 0.0 for g in gpu.values())
        if cpu and gpu and steps > first and not empty_batch and \
                not gpu[max(gpu)][0] < gpu.get(first, (0.0,))[0]:
            problems.append("loss did not fall")
        worst_param, worst_moment, compared, noise = 0.0, 0.0, 0, 0
        cpu_dir = os.path.join(cases_dir, name + ".cpu")
        gpu_dir = os.path.join(results_dir, name + ".gpu")
        for f in sorted(os.listdir(cpu_dir)) if os.path.isdir(cpu_dir) else []:
            if f in ("loss.npy", "grad_norm.npy") or f.startswith("fp8."):
                continue
            gpath = os.path.join(gpu_dir, f)
            if not os.path.exists(gpath):
                problems.append(f"{f} not written by txrun")
                continue
            c = np.load(os.path.join(cpu_dir, f)).astype(np.float64)
            g = np.load(gpath).astype(np.float64)
            if c.shape != g.shape:
                problems.append(f"{f}: shape {g.shape} vs {c.shape}")
                continue
            scale = max(np.max(np.abs(c)) if c.size else 0.0, 1e-30)
            diff = np.abs(g - c)
            moment_path = os.path.join(cpu_dir, f[:-4] + ".exp_avg.npy")
            if not f.endswith(".exp_avg.npy") and os.path.exists(moment_path):
                m = np.abs(np.load(moment_path).astype(np.float64))
                if m.shape == diff.shape and m.size:
                    signal = m >= 1e-5 * max(np.max(m), 1e-30)
                    noise += int(np.sum(~signal))
                    diff = np.where(signal, diff, 0.0)
            err = np.max(diff) / scale if c.size else 0.0
            compared += 1
            moment = f.endswith(".exp_avg.npy")
            tol = moment_tol if moment else param_tol
            if moment:
                worst_moment = max(worst_moment, err)
            else:
                worst_param = max(worst_param, err)
            if not np.all(np.isfinite(g)) or err > tol:
                problems.append(f"{f}: max error {err:.2e} of its largest magnitude")
        fp8_compared, fp8_worst = compare_fp8_state(cpu_dir, gpu_dir, problems)
        compared += fp8_compared
        worst_param = max(worst_param, fp8_worst)
        if compared == 0 and os.path.isdir(cpu_dir):
            problems.append("no state tensor compared")
        ok = not problems
        failed += not ok
        loss_first = gpu.get(first, (float("nan"),))[0]
        loss_last = gpu.get(steps, (float("nan"),))[0]
        rows.append((name, steps, loss_first, loss_last, worst_loss, compared, worst_moment,
                     worst_param, noise, "PASS" if ok else "FAIL", "; ".join(problems[:3])))
    print(f"{'case':24} {'steps':>5} {'loss 1st':>9} {'loss N':>9} "
          f"{'loss,gnorm':>10} {'tensors':>7} {'exp_avg':>9} {'params':>9} {'noise':>6}  result")
    print(f"{'':24} {'':>5} {'':>9} {'':>9} {'max rel':>10} {'':>7} "
          f"{'max err':>9} {'max err':>9} {'elems':>6}")
    for r in rows:
        print(f"{r[0]:24} {r[1]:5d} {r[2]:9.4f} {r[3]:9.4f} {r[4]:10.2e} "
              f"{r[5]:7d} {r[6]:9.2e} {r[7]:9.2e} {r[8]:6d}  {r[9]} {r[10]}")
    print(f"{len(rows) - failed} of {len(rows)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
