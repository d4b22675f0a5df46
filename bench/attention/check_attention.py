#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the runtime's fused attention (txrt-attention-bench --dump) against
PyTorch on the GPU: the same bf16 inputs, attention and its gradients
computed in f32 by autograd from an explicit mask (the reference), and
PyTorch's own bf16 SDPA beside it to show what bf16 attention costs.
Passes when txopt's output and gradients are within 2e-2 of the reference,
relative to the largest reference magnitude, and lse within 1e-3 absolute.

check_attention.py DUMP_DIR [--window W]      (exit 1 on a miss)
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F


def main():
    dump = sys.argv[1]
    window = int(sys.argv[sys.argv.index("--window") + 1]) if "--window" in sys.argv else 0
    load = lambda n: torch.from_numpy(np.load(f"{dump}/{n}.npy")).cuda()
    q, k, v, do = (load(n) for n in ("q", "k", "v", "do"))
    b, h, t, d = q.shape
    n = h // k.shape[1]
    i = torch.arange(t, device="cuda")[:, None]
    j = torch.arange(t, device="cuda")[None, :]
    visible = (j <= i) & ((j > i - window) if window else True)
    mask = torch.where(visible, 0.0, float("-inf"))

    def reference(q, k, v):
        kk, vv = k.repeat_interleave(n, 1), v.repeat_interleave(n, 1)
        s = q @ kk.transpose(-1, -2) / d ** 0.5 + mask
        return torch.softmax(s, -1) @ vv, torch.logsumexp(s, -1)

    qr, kr, vr = (x.clone().requires_grad_() for x in (q, k, v))
    o_ref, lse_ref = reference(qr, kr, vr)
    o_ref.backward(do)
    ours = {"o": load("o"), "dq": load("dq"), "dk": load("dk"), "dv": load("dv")}
    ref = {"o": o_ref, "dq": qr.grad, "dk": kr.grad, "dv": vr.grad}
    # PyTorch's bf16 SDPA on the same inputs, for scale.
    qb, kb, vb = (x.bfloat16().requires_grad_() for x in (q, k, v))
    gqa = {"enable_gqa": True} if n > 1 else {}
    if window:
        ob = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask.bfloat16(), **gqa)
    else:
        ob = F.scaled_dot_product_attention(qb, kb, vb, is_causal=True, **gqa)
    ob.backward(do.bfloat16())
    torch_bf16 = {"o": ob.float(), "dq": qb.grad.float(), "dk": kb.grad.float(), "dv": vb.grad.float()}
    ok = True
    for name in ("o", "dq", "dk", "dv"):
        scale = ref[name].abs().max().item()
        err = (ours[name] - ref[name]).abs().max().item() / scale
        err_torch = (torch_bf16[name] - ref[name]).abs().max().item() / scale
        good = err <= 2e-2
        ok &= good
        print(f"{'ok' if good else 'MISMATCH'} {name}: txopt {err:.2e}, torch bf16 SDPA {err_torch:.2e} "
              f"(max |error| / max |reference|, tolerance 2e-2)")
    lse_err = (load("lse").reshape(lse_ref.shape) - lse_ref).abs().max().item()
    good = lse_err <= 1e-3
    ok &= good
    print(f"{'ok' if good else 'MISMATCH'} lse: txopt {lse_err:.2e} absolute (tolerance 1e-3)")
    # The comparison must be able to fail: the reference is not trivially zero.
    assert ref["dq"].abs().max().item() > 0 and ref["o"].abs().max().item() > 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
