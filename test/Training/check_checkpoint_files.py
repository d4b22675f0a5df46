#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads a checkpoint folder independently of txrt: the safetensors file
(u64 little-endian header length, JSON header, contiguous raw tensors) with
numpy, and the manifest's FNV-1a 64 checksums (tensors up to 256 KiB; pure
Python is slow), and checks that the tensors are the step's state arguments.

check_checkpoint_files.py DIR STEP.mlir"""
import json
import os
import re
import sys

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4",
          "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


folder, step_mlir = sys.argv[1], sys.argv[2]
manifest = json.load(open(os.path.join(folder, "checkpoint.json")))
path = os.path.join(folder, manifest["file"])
raw = open(path, "rb").read()
n = int.from_bytes(raw[:8], "little")
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__")
assert meta["format"] == "txopt-checkpoint" and meta["step"] == str(manifest["step"]), meta
data = raw[8 + n:]
end = 0
tensors = {}
for name, entry in header.items():  # contiguous, in order (the safetensors rule)
    begin, stop = entry["data_offsets"]
    assert begin == end, (name, begin, end)
    end = stop
    array = np.frombuffer(data[begin:stop], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
    tensors[name] = array
assert end == len(data), (end, len(data))
assert len(raw) == manifest["file_bytes"]

# The state arguments of the step: those a result's tx.next feeds.
text = open(step_mlir).read()
signature = text[text.index("@train_step("):]
signature = signature[:signature.index("{\n")]
names = re.findall(r'tx\.name = "([^"]+)"', signature.split(") -> (")[0])
next_targets = {int(i) for i in re.findall(r"tx\.next = (\d+)", signature)}
state = [names[i] for i in sorted(next_targets)]
assert list(tensors) == state, (list(tensors)[:5], state[:5])
w = tensors["g.wte.weight"]
print(f"safetensors ok: {len(tensors)} tensors, step {manifest['step']}, "
      f"g.wte.weight {w.dtype} {w.shape}")

checked = 0
assert manifest["format_version"] == 1 and manifest["format"] == "txopt-checkpoint"
for entry in manifest["tensors"]:
    t = tensors[entry["name"]]
    assert entry["dtype"] == header[entry["name"]]["dtype"] and list(t.shape) == entry["shape"]
    if t.nbytes <= 256 * 1024:
        got = "%016x" % fnv1a64(t.tobytes())
        assert got == entry["fnv1a64"], (entry["name"], got, entry["fnv1a64"])
        checked += 1
assert checked > 0
print(f"manifest ok: format_version {manifest['format_version']}, step {manifest['step']}, "
      f"seed {manifest['seed']}, data offset {manifest['data']['offset']}, "
      f"fnv1a64 checksums match ({checked} checked)")
