#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counts, in a --gpu-plan listing, the amax kernels and those of them that
read a value an elementwise kernel stored for them alone: written by a
launch (its first argument) of a kernel that is not a row, reduction,
optimizer, scatter or FP8 kernel, and read by no other command. Such a
value is a weight's bf16 copy or a GELU output that the amax kernel could
have computed itself (Grouping.cpp, isQuantizedWithItsAmax). The norms'
outputs and the column sums' gradient copies do not count: their kernels
cannot hand the amax kernel anything cheaper.

Usage: amax_inputs.py PLAN.txt
"""
import re
import sys


def main():
    commands = [line for line in open(sys.argv[1])
                if re.match(r"(launch|gemm|memset|attention|attention_grad|copy) ", line)]
    reads = []  # per command, the slots it names
    for line in commands:
        body = line.split("//")[0]
        args = re.search(r"args=\[([^\]]*)\]", body)
        slots = [int(x) for x in args.group(1).split(",")] if args else []
        slots += [int(x) for x in re.findall(r"(?:slot|a|b|d|lse|do|q|k|v|o)=(\d+)", body)]
        through = re.search(r"through=\[([^\]]*)\]", body)
        if through:
            slots += [int(x) for x in through.group(1).split(",")]
        reads.append(slots)
    not_elementwise = re.compile(
        r"(layer_norm|rms_norm|softmax|reduce_|column_sums|sum_of_squares|_grad$|adam|sgd"
        r"|amax|quantize|transpose|gather|scatter|fp8_|sqrt)")
    cast_output = {}
    for i, line in enumerate(commands):
        m = re.match(r"launch k\d+_(\w+) .*args=\[(\d+)", line)
        if m and not not_elementwise.search(m.group(1)):
            cast_output[int(m.group(2))] = i
    amaxes = stored_for_amax = 0
    for i, line in enumerate(commands):
        if not re.match(r"launch k\d+_amax ", line):
            continue
        amaxes += 1
        for slot in reads[i]:
            writer = cast_output.get(slot)
            if writer is None or writer > i:
                continue
            readers = [j for j, r in enumerate(reads) if slot in r and j != writer]
            if readers == [i]:
                stored_for_amax += 1
                break
    print(f"amax kernels {amaxes}, reading a value only they read: {stored_for_amax}")


if __name__ == "__main__":
    main()
