"""Runs a command and fails unless it exits with the given status.

Usage: expect_exit.py STATUS COMMAND [ARGS...]
lit's `not` only tells zero from non-zero; txopt promises 1 for compile
errors and 2 for usage errors, so the tests check the exact status.
"""
import subprocess
import sys

want = int(sys.argv[1])
got = subprocess.run(sys.argv[2:]).returncode
if got != want:
    print(f"expect_exit: expected exit status {want}, but got {got}", file=sys.stderr)
    sys.exit(1)
