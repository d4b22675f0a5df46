#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Evaluates ai.onnx.preview.training.Adam as the ONNX spec writes it (in
float64) on the inputs of preview-training-adam.onnxtxt and compares
txopt-run's outputs (relative 1e-5): check_preview_adam.py INPUTS OUT."""
import sys

import numpy as np

inputs, out = sys.argv[1], sys.argv[2]
load = lambda name: np.load("%s/%s.npy" % (inputs, name)).astype(np.float64)
R, T = load("adam_r"), load("adam_t")
alpha, beta, eps, nc, ncp = 0.9, 0.99, 1e-3, 0.01, 0.1
worst = 0.0
for i in "12":
    X, G, V, H = (load("adam_%s%s" % (k, i)) for k in "xgvh")
    Gr = nc * X + G
    V1 = alpha * V + (1 - alpha) * Gr
    H1 = beta * H + (1 - beta) * Gr * Gr
    Ra = R * np.sqrt(1 - beta ** T) / (1 - alpha ** T) if T > 0 else R
    X1 = (1 - ncp) * (X - Ra * V1 / (np.sqrt(H1) + eps))
    for name, want in (("X%s_new" % i, X1), ("V%s_new" % i, V1), ("H%s_new" % i, H1)):
        got = np.load("%s/%s.npy" % (out, name)).astype(np.float64)
        worst = max(worst, float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-3))))
print("max rel err %.2g" % worst)
if worst > 1e-5:
    sys.exit("preview Adam differs from the ONNX spec")
print("preview Adam matches the ONNX spec")
