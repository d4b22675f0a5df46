#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Copies a step.txa with its format_version set to VERSION, by walking the
FlatBuffers root table by hand (field 0 of the root table; see
runtime/include/txrt/artifact.fbs). patch_artifact_version.py IN OUT VERSION"""
import struct
import sys

src, dst, version = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(src, "rb").read())
root = struct.unpack_from("<I", data, 0)[0]
vtable = root - struct.unpack_from("<i", data, root)[0]
field0 = struct.unpack_from("<H", data, vtable + 4)[0]
if field0 == 0:
    sys.exit("format_version is absent (default 0): cannot patch in place")
struct.pack_into("<I", data, root + field0, version)
open(dst, "wb").write(bytes(data))
