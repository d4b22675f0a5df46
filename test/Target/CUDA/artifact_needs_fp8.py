#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints a step.txa's needs_fp8 flag (field 3 of the FlatBuffers root table;
see runtime/include/txrt/artifact.fbs), walking the table by hand, and with
OUT also writes a copy with the flag cleared.
artifact_needs_fp8.py IN [OUT]"""
import struct
import sys

data = bytearray(open(sys.argv[1], "rb").read())
root = struct.unpack_from("<I", data, 0)[0]
vtable = root - struct.unpack_from("<i", data, root)[0]
vtable_bytes = struct.unpack_from("<H", data, vtable)[0]
field = struct.unpack_from("<H", data, vtable + 10)[0] if vtable_bytes > 10 else 0
print("needs_fp8", data[root + field] if field else 0)
if len(sys.argv) > 2:
    if not field:
        sys.exit("needs_fp8 is absent (default false): nothing to clear")
    data[root + field] = 0
    open(sys.argv[2], "wb").write(bytes(data))
