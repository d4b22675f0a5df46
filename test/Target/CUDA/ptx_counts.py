#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints, for each kernel of a PTX file whose name contains SUBSTRING
(and not "grad"), how many bar.sync and shfl.sync instructions it has:
`NAME bar.sync=N shfl.sync=M`. Exit status 1 if no kernel matches.

Usage: ptx_counts.py FILE.ptx SUBSTRING
"""
import re
import sys


def main():
    path, part = sys.argv[1], sys.argv[2]
    text = open(path).read()
    found = 0
    for m in re.finditer(r"\.entry (\w+)\((.*?)\n\}\n", text, re.S):
        name, body = m.group(1), m.group(2)
        if part in name and "grad" not in name:
            found += 1
            print("%s bar.sync=%d shfl.sync=%d" % (name, body.count("bar.sync"), body.count("shfl.sync")))
    if not found:
        print("ptx_counts.py: no kernel named like '%s' in %s" % (part, path), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
