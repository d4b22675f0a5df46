#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints a step.txa's format_version, grad_accum and whether it has a
micro_step, an eval and a logits function (fields 0, 15, 16, 17 and 18 of
the FlatBuffers root table; see
runtime/include/txrt/artifact.fbs), walking the table by hand. With
--drop-micro OUT writes a copy whose micro_step field is absent; with
--set-accum K OUT a copy with grad_accum K (the field must be stored).
artifact_accum.py IN [--drop-micro OUT | --set-accum K OUT]"""
import struct
import sys

data = bytearray(open(sys.argv[1], "rb").read())
root = struct.unpack_from("<I", data, 0)[0]
vtable = root - struct.unpack_from("<i", data, root)[0]
vtable_bytes = struct.unpack_from("<H", data, vtable)[0]


def entry(field):
    """The vtable slot of |field| and the field's offset in the table (0: absent)."""
    slot = vtable + 4 + 2 * field
    return slot, (struct.unpack_from("<H", data, slot)[0] if 4 + 2 * field < vtable_bytes else 0)


_, version_at = entry(0)
_, accum_at = entry(15)
micro_slot, micro_at = entry(16)
_, eval_at = entry(17)
_, logits_at = entry(18)
version = struct.unpack_from("<I", data, root + version_at)[0] if version_at else 0
accum = struct.unpack_from("<I", data, root + accum_at)[0] if accum_at else 1
print(f"format_version {version} grad_accum {accum} micro_step {'yes' if micro_at else 'no'}"
      f" eval {'yes' if eval_at else 'no'} logits {'yes' if logits_at else 'no'}")
if len(sys.argv) > 2:
    if sys.argv[2] == "--drop-micro":
        struct.pack_into("<H", data, micro_slot, 0)
        out = sys.argv[3]
    elif sys.argv[2] == "--set-accum":
        if not accum_at:
            sys.exit("grad_accum is absent (default 1): nothing to patch in place")
        struct.pack_into("<I", data, root + accum_at, int(sys.argv[3]))
        out = sys.argv[4]
    else:
        sys.exit(f"unknown option {sys.argv[2]}")
    open(out, "wb").write(bytes(data))
