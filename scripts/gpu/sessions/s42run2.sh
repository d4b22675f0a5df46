#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 42, run 2 (carry gpu-pack/s42b.tar.xz): check.sh on branch
# s42-norm-occupancy's compiler (the forward norms' block bound, the norm
# gradients reloading their rows; run 1's "reload" kernels, now as rules
# instead of environment hooks): every op case against the CPU executor
# (op_empty_inner, session 41's GEMM with k = 0 and a C, among them), the
# precision curves, the sanitizers, PyTorch.
# Results: $OUT/s42run2.tgz, $OUT/summary.txt.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s42run2 s42b
run_check "$pack/check" 480
stamp "done"
save
