#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists a step.txa's rank variants (txopt --data-parallel=N1,N2,...; see
Artifact.rank_variants in runtime/include/txrt/artifact.fbs) and says
whether each is byte for byte the artifact compiled for its rank count
alone.

    artifact_variants.py MULTI.txa [SINGLE.txa ...]

prints the root's rank count, then one line per variant: its rank count,
whether its bytes start on a 16-byte boundary, and "identical to F" /
"differs from F" for the SINGLE artifact of the same rank count (or "no
artifact to compare")."""
import os
import struct
import sys

RANKS_FIELD = 21          # Artifact.ranks
RANK_VARIANTS_FIELD = 22  # Artifact.rank_variants


def table(data, pos):
    """The table at |pos|: a function from field index to the field's
    absolute position (None when absent)."""
    vtable = pos - struct.unpack_from("<i", data, pos)[0]
    vsize = struct.unpack_from("<H", data, vtable)[0]

    def field(k):
        entry = 4 + 2 * k
        if entry + 2 > vsize:
            return None
        off = struct.unpack_from("<H", data, vtable + entry)[0]
        return pos + off if off else None
    return field


def deref(data, pos):
    return pos + struct.unpack_from("<I", data, pos)[0]


def root_ranks(data):
    ranks = table(data, deref(data, 0))(RANKS_FIELD)
    return struct.unpack_from("<I", data, ranks)[0] if ranks else 0


def main():
    data = open(sys.argv[1], "rb").read()
    singles = {}
    for path in sys.argv[2:]:
        single = open(path, "rb").read()
        singles[root_ranks(single)] = (os.path.basename(path), single)
    print("root:", root_ranks(data), "ranks")
    variants = table(data, deref(data, 0))(RANK_VARIANTS_FIELD)
    if variants is None:
        print("no rank variants")
        return
    vector = deref(data, variants)
    count = struct.unpack_from("<I", data, vector)[0]
    for i in range(count):
        variant = table(data, deref(data, vector + 4 + 4 * i))
        ranks = struct.unpack_from("<I", data, variant(0))[0] if variant(0) else 0
        nested = deref(data, variant(1))
        size = struct.unpack_from("<I", data, nested)[0]
        start = nested + 4
        nested_bytes = data[start:start + size]
        aligned = "16-byte aligned" if start % 16 == 0 else "not 16-byte aligned"
        if ranks in singles:
            name, single = singles[ranks]
            same = ("identical to " if single == nested_bytes else "differs from ") + name
        else:
            same = "no artifact to compare"
        print(f"variant {i}: {ranks} ranks, {size} bytes, {aligned}, {same}")


if __name__ == "__main__":
    main()
