#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Recomputes a step's model FLOPs from its --gpu-plan listing (the step's
commands, before any micro-step, evaluation or logits list) and compares
them with the --report's model_flops: every GEMM's 2*m*n*k*batch, each
attention's 4*b*h*tq*tk*d forward and twice that backward, halved when
causal. plan_flops.py PLAN REPORT; exit 1 on a mismatch."""
import json
import re
import sys

plan, report = sys.argv[1], sys.argv[2]
gemm = attention = 0.0
for line in open(plan):
    if re.match(r"(micro-step|evaluation|logits) '", line):
        break
    if line.startswith("gemm "):
        f = {k: int(v) for k, v in re.findall(r"\b(m|n|k|batch)=(\d+)", line)}
        gemm += 2.0 * f["m"] * f["n"] * f["k"] * f["batch"]
    elif line.startswith("attention"):
        f = {k: int(v) for k, v in re.findall(r"\b(b|h|tq|tk|d)=(\d+)", line)}
        forward = 4.0 * f["b"] * f["h"] * f["tq"] * f["tk"] * f["d"]
        attention += (2 * forward if line.startswith("attention_grad") else forward) * (
            0.5 if " causal" in line else 1.0)
expected = gemm + attention
got = json.load(open(report))["model_flops"]
ok = attention > 0 and abs(got - expected) <= 1e-9 * expected
print(f"model_flops {'matches' if ok else 'DIFFERS FROM'} the plan: {got:.0f} "
      f"(plan: gemm {gemm:.0f} + attention {attention:.0f})")
sys.exit(0 if ok else 1)
