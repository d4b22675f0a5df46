#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks cuDNN's FP8 attention as the runtime runs it (txrt-fp8-attention-probe
--dump) against the formulas of tx.fp8_attention / tx.fp8_attention_grad,
the reference executor's semantics (TxPrecisionOps.td; the numpy version is
test/Reference/fp8_attention_oracle.py's), on the same FP8 inputs and
scales. What it settles is what GPU.md lists as unconfirmed: how close the
kernel is to the graph's normalized-P formula, and to the model of NVIDIA's
own reference (exp(S - running max) quantized per block of 128 keys before
normalizing), and what its amaxes are of.

Tolerances in real (descaled) units, NVIDIA's own for its FP8 tests: the
output within 0.08 absolute + 0.2 relative, the gradients within 0.04 +
0.2 or one code of their FP8 type (an element that rounds the other way:
one E5M2 code at 1.0 is 0.25, beyond 0.04 + 0.2; sessions 31-32 saw one
such dV element in 65,536); lse within 1e-3 absolute (lse's error is the
row sum's relative error, so the bound is absolute: 0.1% of the sum,
whatever lse's size; a relative bound fails rows whose lse is near 0); the
amaxes within 5% (Amax_S, Amax_O, Amax_dQ/dK/dV), Amax_dP printed only.
Prints one line per comparison and exits 1 when the graph formula misses
(the tile model is informative).

check_fp8_attention.py DUMP_DIR
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "test", "Reference"))
import fp8_attention_oracle as oracle  # noqa: E402


def forward_tiled(q, k, v, d, s, attn_scale, causal, fp8, block=128):
    """NVIDIA's reference model of the kernel: online softmax over blocks
    of |block| keys, the unnormalized exp(S - running max) quantized."""
    h = q.shape[1]
    kk, vv = oracle.expand_heads(k, h), oracle.expand_heads(v, h)
    scores = np.einsum("bhid,bhjd->bhij", q, kk) * (attn_scale * d["q"] * d["k"])
    t_q, t_k = scores.shape[-2:]
    if causal:
        scores = np.where(np.triu(np.ones((t_q, t_k), dtype=bool), 1), -np.inf, scores)
    m = np.full(scores.shape[:-1] + (1,), -np.inf)
    l = np.zeros_like(m)
    o = np.zeros(q.shape[:-1] + (v.shape[-1],))
    for j0 in range(0, t_k, block):
        sb = scores[..., j0:j0 + block]
        m_new = np.maximum(m, sb.max(axis=-1, keepdims=True))
        c = np.where(np.isinf(m), 0.0, np.exp(m - m_new))
        p = np.exp(sb - m_new)
        l = l * c + p.sum(axis=-1, keepdims=True)
        o = o * c + np.einsum("bhij,bhje->bhie", oracle.cast(p, s["s"], fp8),
                              vv[:, :, j0:j0 + block]) * d["s"] * d["v"]
        m = m_new
    return o / np.maximum(l, 1e-30)


def within(got, want, atol, rtol):
    err = np.abs(got - want)
    bad = err > atol + rtol * np.abs(want)
    return int(bad.sum()), float(err.max())


def signed_code_index(values, fp8):
    """Each FP8 value's position among the type's codes, signed: its
    magnitude's bit pattern (consecutive codes in magnitude order) with the
    value's sign, so one code apart is a difference of 1, across a binade
    boundary too, and +-0 are both 0."""
    dtype, _ = oracle.FP8[fp8]
    index = np.abs(values).astype(dtype).view(np.uint8).astype(np.int64)
    return np.where(values < 0, -index, index)


def gradient_within(got_codes, want_codes, scale, fp8):
    """NVIDIA's gradient bound in real units, or one FP8 code apart (never
    against a saturated code, which would hide saturation): the elements
    beyond both, the largest real difference, and how many only the
    one-code rule accepts."""
    got, want = got_codes / scale, want_codes / scale
    err = np.abs(got - want)
    nvidia = err <= 0.04 + 0.2 * np.abs(want)
    _, fmax = oracle.FP8[fp8]
    saturated = (np.abs(got_codes) >= fmax) | (np.abs(want_codes) >= fmax)
    apart = np.abs(signed_code_index(got_codes, fp8) - signed_code_index(want_codes, fp8))
    one_code = (apart <= 1) & ~(saturated & (apart != 0))
    return int((~(nvidia | one_code)).sum()), float(err.max()), int((one_code & ~nvidia).sum())


def main():
    dump = sys.argv[1]
    load = lambda n: np.load(os.path.join(dump, n + ".npy")).astype(np.float64)
    sc = json.load(open(os.path.join(dump, "scales.json")))
    q, k, v, do, o, lse = (load(n) for n in ("q", "k", "v", "do", "o", "lse"))
    fp8, fp8_grad = "f8E4M3FN", sc["grad_type"]
    attn = sc["attn_scale"]
    d = {"q": sc["descale_q"], "k": sc["descale_k"], "v": sc["descale_v"], "s": sc["descale_s"],
         "o": sc["descale_o"], "do": sc["descale_do"], "dp": sc["descale_dp"]}
    s = {"s": sc["scale_s"], "o": sc["scale_o"], "dq": sc["scale_dq"], "dk": sc["scale_dk"],
         "dv": sc["scale_dv"], "dp": sc["scale_dp"]}
    ok = True

    want, p = oracle.forward(q, k, v, d, s, attn, sc["causal"], fp8)
    o_real = o * d["o"]
    o_want = want["o"] * d["o"]
    bad, worst = within(o_real, o_want, 0.08, 0.2)
    print(f"o vs the graph formula (normalized P quantized): {bad} elements beyond "
          f"0.08 + 0.2 rel, largest difference {worst:.4g} {'ok' if not bad else 'MISS'}")
    ok &= bad == 0
    tiled = forward_tiled(q, k, v, d, s, attn, sc["causal"], fp8)
    bad_t, worst_t = within(o_real, oracle.cast(tiled, s["o"], fp8) * d["o"], 0.08, 0.2)
    print(f"o vs the tile model (exp(S - running max) quantized per 128 keys): {bad_t} "
          f"beyond, largest difference {worst_t:.4g} (informative)")
    err = np.max(np.abs(lse - want["lse"]))
    print(f"lse absolute error {err:.3g} {'ok' if err <= 1e-3 else 'MISS'}")
    ok &= err <= 1e-3
    for name, ref in (("amax_s", want["s_amax"]), ("amax_o", want["o_amax"])):
        r = abs(sc[name] - ref) / max(abs(ref), 1e-30)
        print(f"{name}: cuDNN {sc[name]:.6g}, formula {ref:.6g} ({100 * r:.2f}%) "
              f"{'ok' if r <= 0.05 else 'MISS'}")
        ok &= r <= 0.05

    # The backward from the GPU's own output and lse, as the step runs it.
    p_gpu = np.exp(np.log(np.maximum(p, 1e-300)) + want["lse"][..., None] - lse[..., None])
    p_gpu = np.where(p == 0.0, 0.0, p_gpu)
    want_b = oracle.backward(do, q, k, v, o, p_gpu, d, s, attn, fp8, fp8_grad)
    for name in ("dq", "dk", "dv"):
        bad, worst, one_code = gradient_within(load(name), want_b[name], s[name], fp8_grad)
        print(f"{name} vs the formula: {bad} elements beyond 0.04 + 0.2 rel and one code "
              f"({one_code} one code apart only), largest difference {worst:.4g} "
              f"{'ok' if not bad else 'MISS'}")
        ok &= bad == 0
        r = abs(sc["amax_" + name] - want_b[name + "_amax"]) / max(want_b[name + "_amax"], 1e-30)
        print(f"amax_{name}: cuDNN {sc['amax_' + name]:.6g}, formula "
              f"{want_b[name + '_amax']:.6g} ({100 * r:.2f}%) {'ok' if r <= 0.05 else 'MISS'}")
        ok &= r <= 0.05
    print(f"amax_dp: cuDNN {sc['amax_dp']:.6g}, formula (max |dS|, attn scale included) "
          f"{want_b['dp_amax']:.6g} (informative: no NVIDIA test checks it)")
    print("fp8 attention probe: " + ("ok" if ok else "MISS"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
