#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads a PTX module on stdin and prints, for each kernel (.entry) whose
name matches the regex argv[1], one line `NAME OPCODE=N ...` counting the
instructions whose opcode starts with each of the prefixes argv[2:]
(`shfl.sync`, `st.shared`, ...), so a test can check how many of an
instruction a kernel holds. Static counts: an instruction in a loop counts
once. Exits 1 if no kernel matched."""
import re
import sys

if len(sys.argv) < 3:
    sys.exit("usage: ptx_kernel_counts.py KERNEL_REGEX OPCODE_PREFIX... < module.ptx")
pattern, prefixes = re.compile(sys.argv[1]), sys.argv[2:]
counts, name, depth, opened = {}, None, 0, False
for line in sys.stdin:
    if m := re.search(r"\.entry\s+([A-Za-z_$][\w$]*)", line):
        name = m.group(1) if pattern.search(m.group(1)) else None
        if name:
            counts[name] = dict.fromkeys(prefixes, 0)
        depth, opened = 0, False
        continue
    if name is None:
        continue
    text = line.split("//")[0].strip()
    # Instructions, also inside the scoped { ... } blocks of the body:
    # an optional predicate, then the opcode.
    for statement in text.strip("{} ").split(";"):
        if m := re.match(r"\s*(?:@!?%\w+\s+)?([a-z][\w.]*)", statement):
            for p in prefixes:
                if m.group(1).startswith(p):
                    counts[name][p] += 1
    depth += text.count("{") - text.count("}")
    opened = opened or depth > 0
    if opened and depth == 0:
        name = None
if not counts:
    sys.exit(f"ptx_kernel_counts.py: no kernel matches {sys.argv[1]!r}")
for kernel in sorted(counts):
    print(kernel, " ".join(f"{p}={n}" for p, n in counts[kernel].items()))
