#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Decodes an RGB PNG written by `txrun plot` (8-bit, filter 0 rows, any
zlib stream) with the standard library, checking every chunk's CRC, and
prints its size and how many pixels carry each curve's colour:

  check_png.py FILE.png

prints `WIDTHxHEIGHT blue N orange M black K`; exit 1 on a malformed file."""
import struct
import sys
import zlib

data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("not a PNG signature")
at, idat, width = 8, b"", None
while at < len(data):
    (length,) = struct.unpack(">I", data[at:at + 4])
    kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
    (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
    if zlib.crc32(kind + body) != crc:
        sys.exit(f"bad CRC in chunk {kind!r}")
    if kind == b"IHDR":
        width, height, depth, color = struct.unpack(">IIBB", body[:10])
        if (depth, color) != (8, 2):
            sys.exit("expected 8-bit RGB")
    elif kind == b"IDAT":
        idat += body
    at += 12 + length
raw = zlib.decompress(idat)
stride = width * 3 + 1
if len(raw) != stride * height or any(raw[y * stride] != 0 for y in range(height)):
    sys.exit("unexpected scanlines")
pixels = b"".join(raw[y * stride + 1:(y + 1) * stride] for y in range(height))
count = lambda rgb: sum(pixels[i:i + 3] == bytes(rgb) for i in range(0, len(pixels), 3))
print(f"{width}x{height} blue {count((31, 119, 180))} orange {count((230, 120, 20))} "
      f"black {count((0, 0, 0))}")
