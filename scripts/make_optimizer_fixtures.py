#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Exports the small optimizer-step models tx-fuse-optimizer's tests read.

    python3 scripts/make_optimizer_fixtures.py test/Inputs/models

Needs torch (CPU is enough) and onnx. Both models are TorchScript exports
(opset 17) of one optimizer step over explicit tensors, with no weights:

* sgd_groups_op17.onnx: torch.optim.SGD's own update code
  (torch.optim.sgd.sgd, foreach=False) for three parameter groups:
  nesterov + weight decay (p0, p1), momentum with dampening (p2), and plain
  SGD without momentum (p3). lr is a constant, as torch reads it with
  .item(). Fuses into three tx.sgd ops.
* adamw_conststep_op17.onnx: AdamW with the step baked in as a constant,
  in the two forms exporters write. Group 1 (p0, p1) as
  scripts/export_heldout_models.py writes it: lr an input, m / (1 - b1^10)
  and v / (1 - b2^10) with the corrections folded to constants. Group 2
  (p2) as torch's _single_tensor_adamw does it with a constant lr and step
  5: lr / (1 - b1^5) folded into one factor and sqrt(v) divided by the
  folded sqrt(1 - b2^5). Fuses into two tx.adam ops.

The exporter records the torch version in producer_version; everything
else is deterministic.
"""

import math
import os
import sys

import torch
from torch import nn
from torch.optim.sgd import sgd

SGD_SHAPES = [(16, 8), (8,), (4, 4), (6,)]
SGD_GROUPS = [  # (parameter indices, torch.optim.SGD hyper-parameters)
    ([0, 1], dict(lr=0.01, momentum=0.9, dampening=0.0, nesterov=True,
                  weight_decay=5e-4)),
    ([2], dict(lr=0.05, momentum=0.9, dampening=0.1, nesterov=False,
               weight_decay=0.0)),
    ([3], dict(lr=0.1, momentum=0.0, dampening=0.0, nesterov=False,
               weight_decay=0.0)),
]


class SGDStep(nn.Module):
    """forward(p0, g0, b0, ..., p3, g3) -> (p0', b0', ..., p3'): no buffer
    for the group without momentum."""

    def forward(self, *flat):
        params, grads, bufs, outs, i = {}, {}, {}, [], 0
        for indices, hp in SGD_GROUPS:
            for k in indices:
                params[k], grads[k] = flat[i].clone(), flat[i + 1]
                i += 2
                if hp["momentum"]:
                    bufs[k] = flat[i].clone()
                    i += 1
        for indices, hp in SGD_GROUPS:
            ps = [params[k] for k in indices]
            bs = [bufs.get(k) for k in indices]
            sgd(ps, [grads[k] for k in indices], bs, foreach=False,
                maximize=False, **hp)
            for k, p, b in zip(indices, ps, bs):
                outs.append(p)
                if hp["momentum"]:
                    outs.append(b)
        return tuple(outs)


def sgd_io():
    inputs, names, outputs = [], [], []
    for indices, hp in SGD_GROUPS:
        for k in indices:
            n = math.prod(SGD_SHAPES[k])
            x = torch.arange(n, dtype=torch.float32).reshape(SGD_SHAPES[k])
            inputs += [torch.sin(0.1 * x + k), 0.1 * torch.cos(0.07 * x + k)]
            names += [f"p{k}", f"g{k}"]
            outputs.append(f"p{k}_out")
            if hp["momentum"]:
                inputs.append(0.01 * torch.sin(0.05 * x + k))
                names.append(f"b{k}")
                outputs.append(f"b{k}_out")
    return tuple(inputs), names, outputs


ADAM_SHAPES = [(16, 8), (8,), (2, 3, 4)]
BETA1, BETA2, EPS, WD = 0.9, 0.999, 1e-8, 0.01


class AdamWConstStep(nn.Module):
    """forward(p0, g0, m0, v0, ..., p2, g2, m2, v2, lr) -> (p0', m0', v0', ...)."""

    def forward(self, *flat):
        lr, outs = flat[-1], []
        for k in range(len(ADAM_SHAPES)):
            p, g, m, v = flat[4 * k: 4 * k + 4]
            m = BETA1 * m + (1 - BETA1) * g
            v = BETA2 * v + (1 - BETA2) * g * g
            if k < 2:  # lr an input, step 10 folded into the corrections
                step = 10
                p = p - lr * WD * p
                m_hat = m / (1 - BETA1 ** step)
                v_hat = v / (1 - BETA2 ** step)
                p = p - lr * m_hat / (torch.sqrt(v_hat) + EPS)
            else:  # torch's _single_tensor_adamw, constant lr and step 5
                step, const_lr = 5, 1e-3
                p = p * (1 - const_lr * WD)
                step_size = const_lr / (1 - BETA1 ** step)
                denom = v.sqrt() / math.sqrt(1 - BETA2 ** step) + EPS
                p = p + (m / denom) * -step_size
            outs += [p, m, v]
        return tuple(outs)


def adam_io():
    inputs, names = [], []
    for k, shape in enumerate(ADAM_SHAPES):
        x = torch.arange(math.prod(shape), dtype=torch.float32).reshape(shape)
        inputs += [torch.sin(0.1 * x + k), 0.1 * torch.cos(0.07 * x + 2 * k),
                   0.01 * torch.sin(0.05 * x + 3 * k),
                   1e-4 * torch.cos(0.03 * x + k) ** 2]
        names += [f"p{k}", f"g{k}", f"m{k}", f"v{k}"]
    inputs.append(torch.tensor(1e-3))
    names.append("lr")
    outputs = [f"{t}{k}_out" for k in range(len(ADAM_SHAPES)) for t in "pmv"]
    return tuple(inputs), names, outputs


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    for name, module, (inputs, names, outputs) in [
            ("sgd_groups_op17.onnx", SGDStep(), sgd_io()),
            ("adamw_conststep_op17.onnx", AdamWConstStep(), adam_io())]:
        path = os.path.join(out_dir, name)
        torch.onnx.export(module, inputs, path, dynamo=False, opset_version=17,
                          input_names=names, output_names=outputs)
        print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
