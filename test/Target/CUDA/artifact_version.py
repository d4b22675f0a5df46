#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints a step.txa's format_version (field 0 of the FlatBuffers root
table; see runtime/include/txrt/artifact.fbs). artifact_version.py FILE"""
import struct
import sys

data = open(sys.argv[1], "rb").read()
root = struct.unpack_from("<I", data, 0)[0]
vtable = root - struct.unpack_from("<i", data, root)[0]
field0 = struct.unpack_from("<H", data, vtable + 4)[0]
print("format_version", struct.unpack_from("<I", data, root + field0)[0] if field0 else 0)
