#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a byte-level token corpus from the Python standard library's
sources, a real text that every machine with Python has:

  make_pystdlib_corpus.py OUT_DIR [--max-mb 32] [--val-files 0.05]

The .py files under sysconfig's stdlib folder, in sorted path order
(site-packages left out), each followed by a blank line; their bytes are the
tokens (vocabulary 256). Whole files go to validation: every 20th file (by
--val-files) goes to OUT_DIR/val.bin, the rest to OUT_DIR/train.bin, both
llm.c token files (256 int32 header: magic 20240520, version 1, count; then
uint16 tokens), until --max-mb megabytes of training text. OUT_DIR/corpus.json
records the Python version, the folder, the files and the token counts, so a
run names exactly what it trained on."""
import argparse
import json
import os
import sys
import sysconfig

import numpy as np


def write_bin(path, data):
    header = np.zeros(256, dtype="<i4")
    header[:3] = [20240520, 1, len(data)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.frombuffer(data, dtype=np.uint8).astype("<u2").tobytes())


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--max-mb", type=float, default=32.0)
    parser.add_argument("--val-files", type=float, default=0.05,
                        help="fraction of the files that go to validation")
    args = parser.parse_args()
    stdlib = sysconfig.get_paths()["stdlib"]
    paths = []
    for folder, dirs, files in os.walk(stdlib):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__"))
        paths += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
    paths.sort()
    if not paths:
        sys.exit(f"make_pystdlib_corpus.py: no .py files under {stdlib}")
    every = max(2, round(1 / args.val_files)) if args.val_files > 0 else 0
    train, val = bytearray(), bytearray()
    limit = int(args.max_mb * 1e6)
    used = 0
    for i, path in enumerate(paths):
        with open(path, "rb") as f:
            text = f.read() + b"\n\n"
        if every and i % every == every - 1:
            val += text
        else:
            train += text
        used += 1
        if len(train) >= limit:
            break
    os.makedirs(args.out, exist_ok=True)
    write_bin(os.path.join(args.out, "train.bin"), bytes(train))
    write_bin(os.path.join(args.out, "val.bin"), bytes(val))
    info = {"python": sys.version.split()[0], "stdlib": stdlib, "files": used,
            "train_tokens": len(train), "val_tokens": len(val), "vocabulary": 256}
    with open(os.path.join(args.out, "corpus.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
