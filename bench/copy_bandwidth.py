#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the GPU's copy bandwidth as JSON: the ceiling every memory-bound
kernel of the benchmarks (bench/step, bench/norm) is measured against.
1 GiB of f32 copied 20 times after 3 warm-up copies, CUDA events; a copy
reads and writes, so each counts twice its size."""
import json

import torch

x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
y = torch.empty_like(x)
for _ in range(3):
    y.copy_(x)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(20):
    y.copy_(x)
end.record()
end.synchronize()
print(json.dumps({"copy_gb_per_s": 2 * x.numel() * 4 * 20 / (start.elapsed_time(end) / 1e3) / 1e9,
                  "device": torch.cuda.get_device_name(), "torch": torch.__version__}))
