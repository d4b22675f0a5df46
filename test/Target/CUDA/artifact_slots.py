#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads a step.txa's slots (field 6 of the FlatBuffers root table, a vector
of {offset: ulong, bytes: ulong}; see runtime/include/txrt/artifact.fbs) by
hand and checks that the slots PART... lie inside slot WHOLE, each at its
own offset: the packed amaxes (packAmaxes) inside the block one memset
zeroes. Prints how many do, and the largest power of two (up to 256) that
divides every part's offset.
artifact_slots.py STEP.txa WHOLE PART..."""
import struct
import sys

data = open(sys.argv[1], "rb").read()
root = struct.unpack_from("<I", data, 0)[0]
vtable = root - struct.unpack_from("<i", data, root)[0]
vtable_bytes = struct.unpack_from("<H", data, vtable)[0]
field = 6
at = struct.unpack_from("<H", data, vtable + 4 + 2 * field)[0] if 4 + 2 * field < vtable_bytes else 0
if not at:
    sys.exit("the artifact has no slots")
vector = root + at + struct.unpack_from("<I", data, root + at)[0]
count = struct.unpack_from("<I", data, vector)[0]
slots = [struct.unpack_from("<QQ", data, vector + 4 + 16 * i) for i in range(count)]
# FlatBuffers aligns a vector of 8-byte structs so that its elements are
# 8-aligned: the length word sits 4 bytes before the first one.
whole = int(sys.argv[2])
parts = [int(p) for p in sys.argv[3:]]
w_off, w_bytes = slots[whole]
inside = [p for p in parts if w_off <= slots[p][0] and slots[p][0] + slots[p][1] <= w_off + w_bytes]
distinct = len({slots[p][0] for p in parts}) == len(parts)
aligned = 256
while aligned > 1 and any(slots[p][0] % aligned for p in parts):
    aligned //= 2
print(f"{len(inside)} of {len(parts)} parts inside slot {whole} ({w_bytes} bytes), "
      f"offsets {'distinct' if distinct else 'SHARED'}, aligned {aligned}")
