#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the runtime's fused attention with dropout (txrt-attention-bench
--causal --dropout P --dump DIR) against PyTorch on the GPU.

cuDNN draws the dropout mask itself (Philox), so no reference can draw the
same one; the bench recovers the mask it applied instead (pdrop: the dropped
probabilities / (1 - p), read through identity blocks of v), and this
script checks, on causal bf16 attention:
  1. the mask is a dropout of rate p: every visible probability is either
     dropped (0) or kept and scaled to P / (1 - p) (within 2e-2 of the row's
     largest); the dropped share is p within 5 standard deviations; two
     heads' masks are not the same one;
  2. the forward and backward used that mask: o, dq, dk, dv within 2e-2 of
     an f32 autograd reference that applies the recovered mask (relative to
     the largest reference magnitude), lse within 1e-3 (dropout leaves it);
  3. the key drives it: the same key gives the same o to the bit, the next
     key a different o.

check_attention_dropout.py DUMP_DIR P      (exit 1 on a miss)
"""
import sys

import numpy as np
import torch


def main():
    dump, p = sys.argv[1], float(sys.argv[2])
    load = lambda n: torch.from_numpy(np.load(f"{dump}/{n}.npy")).cuda()
    q, k, v, do, pdrop = (load(n) for n in ("q", "k", "v", "do", "pdrop"))
    b, h, t, d = q.shape
    n = h // k.shape[1]
    i = torch.arange(t, device="cuda")[:, None]
    j = torch.arange(t, device="cuda")[None, :]
    visible = (j <= i).expand(b, h, t, t)
    mask = torch.where(j <= i, 0.0, float("-inf"))
    ok = True

    def verdict(good, text):
        nonlocal ok
        ok &= bool(good)
        print(f"{'ok' if good else 'MISMATCH'} {text}")

    # 1. The recovered mask.
    kk, vv = k.repeat_interleave(n, 1), v.repeat_interleave(n, 1)
    probs = torch.softmax(q @ kk.transpose(-1, -2) / d ** 0.5 + mask, -1)
    kept = (pdrop != 0) & visible
    verdict(((pdrop != 0) & ~visible).sum().item() == 0,
            "nothing above the causal diagonal is kept")
    scaled = probs / (1 - p)
    row_max = scaled.amax(-1, keepdim=True)
    err = ((pdrop - scaled).abs() / row_max)[kept].max().item()
    verdict(err <= 2e-2, f"kept probabilities are P / (1 - p): {err:.2e} of the row's "
                         f"largest (tolerance 2e-2)")
    count = visible.sum().item()
    dropped = (visible & ~kept).sum().item() / count
    sigma = (p * (1 - p) / count) ** 0.5
    verdict(abs(dropped - p) <= 5 * sigma,
            f"dropped share {dropped:.4f} of {count} visible probabilities, p = {p} "
            f"(5 sigma = {5 * sigma:.4f})")
    if h > 1:
        same = (kept[:, 0] == kept[:, 1])[visible[:, 0]].float().mean().item()
        expected = p * p + (1 - p) * (1 - p)
        verdict(abs(same - expected) < 0.05,
                f"heads 0 and 1 agree on {same:.3f} of the positions (independent masks: "
                f"{expected:.3f})")

    # 2. Forward and backward with that mask, f32 autograd.
    keep = kept.float() / (1 - p)
    qr, kr, vr = (x.clone().requires_grad_() for x in (q, k, v))
    kk, vv = kr.repeat_interleave(n, 1), vr.repeat_interleave(n, 1)
    s = qr @ kk.transpose(-1, -2) / d ** 0.5 + mask
    o_ref = (torch.softmax(s, -1) * keep) @ vv
    o_ref.backward(do)
    ours = {"o": load("o"), "dq": load("dq"), "dk": load("dk"), "dv": load("dv")}
    ref = {"o": o_ref, "dq": qr.grad, "dk": kr.grad, "dv": vr.grad}
    for name in ("o", "dq", "dk", "dv"):
        scale = ref[name].abs().max().item()
        err = (ours[name] - ref[name]).abs().max().item() / scale
        verdict(err <= 2e-2, f"{name}: {err:.2e} of the largest reference magnitude "
                             f"(tolerance 2e-2)")
    lse_ref = torch.logsumexp(s, -1)
    lse_err = (load("lse").reshape(lse_ref.shape) - lse_ref).abs().max().item()
    verdict(lse_err <= 1e-3, f"lse: {lse_err:.2e} absolute (tolerance 1e-3)")
    # Must be able to fail: without the mask the reference is far off.
    plain = torch.softmax(s.detach(), -1) @ vv.detach()
    off = (ours["o"] - plain).abs().max().item() / plain.abs().max().item()
    verdict(off > 0.1, f"o is not the attention without dropout ({off:.2e} away)")

    # 3. The key.
    again, key2 = load("o_again"), load("o_key2")
    verdict(torch.equal(again, ours["o"]), "the same key gives the same o to the bit")
    moved = (key2 - ours["o"]).abs().max().item() / ours["o"].abs().max().item()
    verdict(moved > 0.1, f"the next key gives another o ({moved:.2e} away)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
