#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads `ptxas -v` output on stdin and prints one line per kernel, sorted
by name: `NAME registers=R stack=F spill_stores=S spill_loads=L`, so a
test can check each kernel's resources without depending on the order in
which ptxas reports them. Exits 1 if no kernel was reported."""
import re
import sys

kernels, name = {}, None
for line in sys.stdin:
    if m := re.search(r"Compiling entry function '([^']+)'", line):
        name = m.group(1)
        kernels[name] = {}
    elif name and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                                  r"(\d+) bytes spill loads", line)):
        kernels[name].update(stack=m.group(1), spill_stores=m.group(2), spill_loads=m.group(3))
    elif name and (m := re.search(r"Used (\d+) registers", line)):
        kernels[name]["registers"] = m.group(1)
if not kernels:
    sys.exit("ptxas_resources.py: no kernel in the input")
for name in sorted(kernels):
    k = kernels[name]
    print(f"{name} registers={k.get('registers', '?')} stack={k.get('stack', '?')} "
          f"spill_stores={k.get('spill_stores', '?')} spill_loads={k.get('spill_loads', '?')}")
