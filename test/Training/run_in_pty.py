# SPDX-License-Identifier: Apache-2.0
"""Runs a command with stdout on a pseudo-terminal (stderr to ours) and
prints what it wrote there, with the terminal controls made visible: a
carriage return as <CR>, "erase to end of line" (ESC [ K) as <EL>, and
\\r\\n as a plain newline. Exits with the command's status.

Usage: run_in_pty.py COMMAND [ARGS...]"""
import os
import pty
import subprocess
import sys

master, slave = pty.openpty()
proc = subprocess.Popen(sys.argv[1:], stdout=slave, stdin=subprocess.DEVNULL)
os.close(slave)
chunks = []
while True:
    try:
        data = os.read(master, 65536)
    except OSError:  # EIO: the child closed the terminal
        break
    if not data:
        break
    chunks.append(data)
status = proc.wait()
text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
sys.stdout.write(text.replace("\r", "<CR>").replace("\x1b[K", "<EL>"))
sys.exit(status)
