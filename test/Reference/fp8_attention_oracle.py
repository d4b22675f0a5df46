# SPDX-License-Identifier: Apache-2.0
"""tx.fp8_attention and tx.fp8_attention_grad on the reference executor
against an independent numpy version of their formulas (TxPrecisionOps.td,
cuDNN's sdpa_fp8 / sdpa_fp8_backward graphs): whole [B, H, T, T] tensors in
float64, einsum products, the FP8 casts through ml_dtypes (f32 product
first, saturated), grouped-query heads by repeating k and v.

Both sides round at the same points but sum in different orders, so an
FP8 result may land on the other side of a rounding boundary: FP8 outputs
must equal in at least 99.5% of the elements and differ by at most one FP8
step elsewhere; lse and the amaxes within 1e-6 relative. A control that
skips the quantization of P (or of dS) must fail the same comparison.

Prints one line per case and exits 1 on a disagreement.
"""

import argparse
import os
import subprocess
import sys

import numpy as np
import ml_dtypes

F32 = np.float32
FP8 = {"f8E4M3FN": (ml_dtypes.float8_e4m3fn, 448.0), "f8E5M2": (ml_dtypes.float8_e5m2, 57344.0)}


def cast(x, scale, name):
    """fp8(f32(x * scale)), saturating: the ops' quantization."""
    dtype, fmax = FP8[name]
    with np.errstate(over="ignore"):
        scaled = (np.asarray(x, dtype=np.float64) * np.float64(scale)).astype(F32)
    return np.clip(scaled, -fmax, fmax).astype(dtype).astype(np.float64)


def representable(rng, shape, name, spread):
    """Random FP8 values of type |name| (normal, times |spread|)."""
    return cast(rng.standard_normal(shape) * spread, 1.0, name)


def expand_heads(x, heads):
    return np.repeat(x, heads // x.shape[1], axis=1)


def fold_heads(x, kv_heads):
    b, h, t, d = x.shape
    return x.reshape(b, kv_heads, h // kv_heads, t, d).sum(axis=2)


def forward(q, k, v, d, s, attn_scale, causal, fp8, quantize_p=True):
    """|d|: descales q, k, v, s; |s|: scales s, o."""
    h = q.shape[1]
    kk, vv = expand_heads(k, h), expand_heads(v, h)
    scores = np.einsum("bhid,bhjd->bhij", q, kk) * (attn_scale * d["q"] * d["k"])
    t_q, t_k = scores.shape[-2:]
    if causal:
        hidden = np.triu(np.ones((t_q, t_k), dtype=bool), 1)
        scores = np.where(hidden, -np.inf, scores)
    m = scores.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(scores - m).sum(axis=-1, keepdims=True))
    p = np.exp(scores - lse)
    p8 = cast(p, s["s"], fp8) if quantize_p else p * s["s"]
    o_real = np.einsum("bhij,bhje->bhie", p8, vv) * d["s"] * d["v"]
    return {"o": cast(o_real, s["o"], fp8), "lse": lse[..., 0],
            "s_amax": np.abs(p).max(), "o_amax": np.abs(o_real).max()}, p


def backward(do, q, k, v, o, p, d, s, attn_scale, fp8_q, fp8_grad, quantize_ds=True):
    """|d|: descales q, k, v, o, do, s, dp; |s|: scales s, dq, dk, dv, dp."""
    h, kv_heads = q.shape[1], k.shape[1]
    kk, vv = expand_heads(k, h), expand_heads(v, h)
    row = (do * o).sum(axis=-1, keepdims=True) * d["do"] * d["o"]
    p8 = cast(p, s["s"], fp8_q)
    dv_real = fold_heads(np.einsum("bhij,bhie->bhje", p8, do), kv_heads) * d["s"] * d["do"]
    dp_bar = np.einsum("bhie,bhje->bhij", do, vv) * d["do"] * d["v"]
    ds = p * (dp_bar - row) * attn_scale
    ds8 = cast(ds, s["dp"], fp8_grad) if quantize_ds else ds * s["dp"]
    dq_real = np.einsum("bhij,bhjd->bhid", ds8, kk) * d["dp"] * d["k"]
    dk_real = fold_heads(np.einsum("bhij,bhid->bhjd", ds8, q), kv_heads) * d["dp"] * d["q"]
    out = {"dp_amax": np.abs(ds).max()}
    for name, real in (("dq", dq_real), ("dk", dk_real), ("dv", dv_real)):
        out[name] = cast(real, s[name], fp8_grad)
        out[name + "_amax"] = np.abs(real).max()
    return out


def fp8_step(x, name):
    """The FP8 spacing at |x| (the distance to the next larger magnitude)."""
    dtype, _ = FP8[name]
    a = np.abs(x).astype(dtype)
    bits = a.view(np.uint8)
    up = (bits + 1).astype(np.uint8).view(dtype).astype(np.float64)
    return np.abs(up - a.astype(np.float64))


def agree(got, want, name, what):
    """FP8 tensors: equal in >= 99.5% of elements, within one step elsewhere."""
    got = np.asarray(got, dtype=np.float64)
    equal = got == want
    with np.errstate(invalid="ignore"):
        within = equal | (np.abs(got - want) <= fp8_step(want, name) * (1 + 1e-9))
    share = equal.mean()
    if share < 0.995 or not within.all():
        return f"{what}: {share:.4%} equal, {int((~within).sum())} beyond one FP8 step"
    return ""


def close(got, want, what, rel=1e-6):
    got = np.asarray(got, dtype=np.float64)
    err = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30))
    return "" if err <= rel else f"{what}: relative error {err:.3g}"


def ty(shape, elem):
    return "tensor<" + "x".join(str(x) for x in shape) + "x" + elem + ">"


def model_text(shapes, causal, fp8, fp8_grad, attn_scale):
    q, k, v = shapes
    o = q[:3] + v[3:]
    lse = q[:3]
    c = " causal" if causal else ""
    f32 = "tensor<f32>"
    fwd_scalars = ["q_si", "k_si", "v_si", "s_si", "s_s", "o_s"]
    bwd_scalars = ["q_si", "k_si", "v_si", "o_si", "do_si", "s_si", "dp_si",
                   "s_s", "dq_s", "dk_s", "dv_s", "dp_s"]
    scalar_args = lambda names: ", ".join(f'%{n}: {f32} {{tx.name = "{n}"}}' for n in names)
    return f"""
func.func @fwd(%q: {ty(q, fp8)} {{tx.name = "q"}}, %k: {ty(k, fp8)} {{tx.name = "k"}},
    %v: {ty(v, fp8)} {{tx.name = "v"}}, {scalar_args(fwd_scalars)})
    -> ({ty(o, fp8)} {{tx.name = "o"}}, {ty(lse, "f32")} {{tx.name = "lse"}},
        {f32} {{tx.name = "s_amax"}}, {f32} {{tx.name = "o_amax"}}) {{
  %o, %lse, %sa, %oa = tx.fp8_attention %q, %k, %v scale_inv(%q_si, %k_si, %v_si, %s_si)
      fp8_scale(%s_s, %o_s) scale({attn_scale!r}){c} : {ty(q, fp8)}, {ty(k, fp8)}, {ty(v, fp8)}
  return %o, %lse, %sa, %oa : {ty(o, fp8)}, {ty(lse, "f32")}, {f32}, {f32}
}}
func.func @bwd(%do: {ty(o, fp8_grad)} {{tx.name = "do"}}, %q: {ty(q, fp8)} {{tx.name = "q"}},
    %k: {ty(k, fp8)} {{tx.name = "k"}}, %v: {ty(v, fp8)} {{tx.name = "v"}},
    %o: {ty(o, fp8)} {{tx.name = "o"}}, %lse: {ty(lse, "f32")} {{tx.name = "lse"}},
    {scalar_args(bwd_scalars)})
    -> ({ty(q, fp8_grad)} {{tx.name = "dq"}}, {ty(k, fp8_grad)} {{tx.name = "dk"}},
        {ty(v, fp8_grad)} {{tx.name = "dv"}}, {f32} {{tx.name = "dq_amax"}},
        {f32} {{tx.name = "dk_amax"}}, {f32} {{tx.name = "dv_amax"}}, {f32} {{tx.name = "dp_amax"}}) {{
  %dq, %dk, %dv, %a, %b, %c, %d = tx.fp8_attention_grad %do, %q, %k, %v, %o, %lse
      scale_inv(%q_si, %k_si, %v_si, %o_si, %do_si, %s_si, %dp_si)
      fp8_scale(%s_s, %dq_s, %dk_s, %dv_s, %dp_s) scale({attn_scale!r}){c}
      : {ty(o, fp8_grad)}, {ty(q, fp8)}, {ty(k, fp8)}, {ty(v, fp8)}, {ty(o, fp8)}, {ty(lse, "f32")}
  return %dq, %dk, %dv, %a, %b, %c, %d : {ty(q, fp8_grad)}, {ty(k, fp8_grad)}, {ty(v, fp8_grad)}, {f32}, {f32}, {f32}, {f32}
}}
"""


def run(args, model, function, inputs, out_dir):
    cmd = [args.txopt_run, model, "--function", function, "--output-dir", out_dir,
           "--print-limit", "0"]
    for name, value in inputs.items():
        path = os.path.join(out_dir + ".in", name + ".npy")
        np.save(path, np.asarray(value, dtype=F32))
        cmd += ["--input", f"{name}={path}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return lambda name: np.load(os.path.join(out_dir, name + ".npy")).astype(np.float64)


def check_case(args, rng, work, label, b, h, h_kv, t, d_qk, d_v, causal, fp8, fp8_grad,
               o_scales=(2.0, 20.0), grad_scales=(0.5, 4.0)):
    shapes = ([b, h, t, d_qk], [b, h_kv, t, d_qk], [b, h_kv, t, d_v])
    attn_scale = float(F32(1.0 / np.sqrt(d_qk)))
    model = os.path.join(work, label + ".mlir")
    with open(model, "w") as f:
        f.write(model_text(shapes, causal, fp8, fp8_grad, attn_scale))
    q = representable(rng, shapes[0], fp8, 2.0)
    k = representable(rng, shapes[1], fp8, 2.0)
    v = representable(rng, shapes[2], fp8, 2.0)
    # Scale inverses and scales as a delayed-scaling state would hold them
    # (f32; a scale's inverse is its f32 reciprocal), P's scale below 448.
    f32 = lambda x: float(F32(x))
    fwd_d = {n: f32(rng.uniform(0.25, 1.0)) for n in ("q", "k", "v")}
    s_scale, o_scale = f32(rng.uniform(100.0, 400.0)), f32(rng.uniform(*o_scales))
    fwd_d["s"] = f32(np.float32(1.0) / np.float32(s_scale))
    fwd_s = {"s": s_scale, "o": o_scale}
    inputs = {"q": q, "k": k, "v": v, "q_si": fwd_d["q"], "k_si": fwd_d["k"],
              "v_si": fwd_d["v"], "s_si": fwd_d["s"], "s_s": s_scale, "o_s": o_scale}
    os.makedirs(os.path.join(work, label + "-fwd.in"), exist_ok=True)
    got = run(args, model, "fwd", inputs, os.path.join(work, label + "-fwd"))
    want, p = forward(q, k, v, fwd_d, fwd_s, attn_scale, causal, fp8)
    problems = [agree(got("o"), want["o"], fp8, "o"), close(got("lse"), want["lse"], "lse"),
                close(got("s_amax"), want["s_amax"], "s_amax"),
                close(got("o_amax"), want["o_amax"], "o_amax")]
    # Must be able to fail: without P's quantization the output differs.
    unquantized, _ = forward(q, k, v, fwd_d, fwd_s, attn_scale, causal, fp8, quantize_p=False)
    control_fwd = agree(got("o"), unquantized["o"], fp8, "o") != ""

    o = got("o")
    do = representable(rng, shapes[0][:3] + [d_v], fp8_grad, 1.0)
    bwd_d = dict(fwd_d)
    bwd_d.update({"o": f32(1.0 / o_scale), "do": f32(rng.uniform(0.5, 2.0)),
                  "dp": f32(rng.uniform(0.5, 2.0))})
    bwd_s = {"s": s_scale, "dq": f32(rng.uniform(*grad_scales)),
             "dk": f32(rng.uniform(*grad_scales)), "dv": f32(rng.uniform(*grad_scales)),
             "dp": f32(rng.uniform(50.0, 200.0))}
    inputs = {"do": do, "q": q, "k": k, "v": v, "o": o, "lse": got("lse"),
              "q_si": bwd_d["q"], "k_si": bwd_d["k"], "v_si": bwd_d["v"], "o_si": bwd_d["o"],
              "do_si": bwd_d["do"], "s_si": bwd_d["s"], "dp_si": bwd_d["dp"],
              "s_s": bwd_s["s"], "dq_s": bwd_s["dq"], "dk_s": bwd_s["dk"], "dv_s": bwd_s["dv"],
              "dp_s": bwd_s["dp"]}
    os.makedirs(os.path.join(work, label + "-bwd.in"), exist_ok=True)
    got_b = run(args, model, "bwd", inputs, os.path.join(work, label + "-bwd"))
    # P from the executor's lse, as the op recomputes it.
    p_lse = np.exp(np.log(np.maximum(p, 1e-300)) + want["lse"][..., None] -
                   got("lse")[..., None])
    p_lse = np.where(p == 0.0, 0.0, p_lse)
    want_b = backward(do, q, k, v, o, p_lse, bwd_d, bwd_s, attn_scale, fp8, fp8_grad)
    for name in ("dq", "dk", "dv"):
        problems.append(agree(got_b(name), want_b[name], fp8_grad, name))
    for name in ("dq_amax", "dk_amax", "dv_amax", "dp_amax"):
        problems.append(close(got_b(name), want_b[name], name))
    loose = backward(do, q, k, v, o, p_lse, bwd_d, bwd_s, attn_scale, fp8, fp8_grad,
                     quantize_ds=False)
    control_bwd = all(agree(got_b(n), loose[n], fp8_grad, n) != "" for n in ("dq", "dk"))
    problems = [x for x in problems if x]
    if not control_fwd or not control_bwd:
        problems.append("a control without P's or dS's quantization passed the comparison")
    shape = f"B{b} H{h}/{h_kv} T{t} D{d_qk}/{d_v}{' causal' if causal else ''} {fp8}/{fp8_grad}"
    if problems:
        print(f"FAIL {label} ({shape}): " + "; ".join(problems))
        return False
    equal = (got("o") == want["o"]).mean()
    print(f"{label} ({shape}): forward and backward match, o {equal:.2%} equal, "
          f"controls fail as they must")
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--txopt-run", default="txopt-run")
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    seed = int(os.environ.get("FP8_ATTENTION_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"fp8 attention oracle: seed {seed}")
    rng = np.random.default_rng(seed)
    os.makedirs(args.work, exist_ok=True)
    cases = [
        ("mha-causal", 2, 2, 2, 24, 16, 16, True, "f8E4M3FN", "f8E5M2"),
        ("gqa", 1, 4, 2, 20, 16, 8, False, "f8E4M3FN", "f8E5M2"),
        # The output's scale large enough that some of it saturates at 448.
        ("e4m3-grads", 1, 2, 1, 16, 8, 8, True, "f8E4M3FN", "f8E4M3FN", (300.0, 600.0)),
        # E5M2 gradients scaled past 57344 in part.
        ("e5m2-saturating", 1, 2, 2, 16, 8, 8, True, "f8E4M3FN", "f8E5M2", (2.0, 20.0),
         (2e3, 6e3)),
    ]
    ok = all([check_case(args, rng, args.work, *case) for case in cases])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
