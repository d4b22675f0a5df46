#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Session 45, run 2 of the branch s44-pad-classes (pack s44c): s44run4.sh's
# first two parts again. Pack s44c was prepared as gpu-pack/s44c/check, so
# its .txa files name their weights under gpu-pack/s44c/; run_begin unpacks
# the pack at ./s44c. A link puts the weights where the .txa files say.
set -uo pipefail
source scripts/gpu/sessions/lib.sh
run_begin s45run1 s44c
mkdir -p gpu-pack && ln -sfn "$pack" gpu-pack/s44c

run_cases_check "$pack/check"
sanitize_case "$pack/check" bert_vocab1030_bf16 memcheck
stamp "done"
save
