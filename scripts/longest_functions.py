#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the longest C and C++ function bodies git tracks, longest first: the
"ten longest functions" read of issue 14, repeatable. A brace-matching scan
(comments, strings and raw strings blanked), not a parser: a body is a brace
block whose header ends in `name(...)` (with const, override, noexcept or a
trailing return type), not a control statement or a lambda.

Usage: scripts/longest_functions.py [N]   (default 10; run from anywhere in
the repo). Prints `LINES FILE:LINE NAME`."""
import os
import re
import subprocess
import sys

CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
           "alignof", "static_assert"}


def blank(text):
    keep_newlines = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = re.sub(r'R"([^(\s]*)\((.*?)\)\1"', keep_newlines, text, flags=re.S)
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  keep_newlines, text, flags=re.S)


def function_name(code, brace):
    """The name of the function whose body opens at |brace|, or None."""
    i = brace - 1
    tail = ""
    while i >= 0 and code[i] != ")":
        tail = code[i] + tail
        i -= 1
        if len(tail) > 80:
            return None
    if i < 0 or not re.fullmatch(
            r"\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->\s*[\w:<>,\s*&]+)?"
            r"(:[^{};]*)?\s*", tail):
        return None
    depth = 0
    while i >= 0:
        depth += code[i] == ")"
        depth -= code[i] == "("
        if depth == 0:
            break
        i -= 1
    m = re.search(r"([~\w:]+)\s*$", code[:i])
    if not m or m.group(1).split("::")[-1] in CONTROL:
        return None
    before = code[:m.start()].rstrip()
    if before.endswith(("=", "]", ",", "(", "return")):
        return None
    return m.group(1)


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                          text=True, check=True).stdout.strip()
    files = subprocess.run(["git", "ls-files", "*.cpp", "*.cc", "*.c", "*.h"], cwd=root,
                           capture_output=True, text=True, check=True).stdout.split()
    found = []
    for path in files:
        with open(os.path.join(root, path), errors="replace") as f:
            code = blank(f.read())
        stack = []
        for i, c in enumerate(code):
            if c == "{":
                stack.append(i)
            elif c == "}" and stack:
                start = stack.pop()
                name = function_name(code, start)
                if name:
                    first = code.count("\n", 0, start) + 1
                    last = code.count("\n", 0, i) + 1
                    found.append((last - first + 1, path, first, name))
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    for lines, path, line, name in found[:count]:
        print("%5d %s:%d %s" % (lines, path, line, name))


if __name__ == "__main__":
    main()
