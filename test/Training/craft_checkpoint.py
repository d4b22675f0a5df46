# SPDX-License-Identifier: Apache-2.0
"""Writes a copy of a txopt checkpoint with one tensor altered, keeping it
well-formed (header, manifest, sizes and checksums agree), so that what a
reader refuses is the content, not a damaged file.

Usage: craft_checkpoint.py IN_DIR OUT_DIR TENSOR (--shape D0,D1,... | --dtype DT | --rename NEW)
  --shape: the same bytes under another shape of as many elements;
  --dtype: the same bytes as another dtype of the same width (F32 -> I32);
  --rename: the tensor under another name;
  --drop: without the tensor (its bytes cut out of the data).
"""
import json
import os
import struct
import sys


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def main():
    src, dst, name, option = sys.argv[1:5]
    value = sys.argv[5] if len(sys.argv) > 5 else ""
    manifest = json.load(open(os.path.join(src, "checkpoint.json")))
    raw = open(os.path.join(src, manifest["file"]), "rb").read()
    (n,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    entry = next(t for t in manifest["tensors"] if t["name"] == name)
    info = header.pop(name)
    if option == "--shape":
        entry["shape"] = info["shape"] = [int(d) for d in value.split(",")]
        header[name] = info
    elif option == "--dtype":
        entry["dtype"] = info["dtype"] = value
        header[name] = info
    elif option == "--rename":
        entry["name"] = value
        header[value] = info
    elif option == "--drop":
        manifest["tensors"].remove(entry)
        begin, end = info["data_offsets"]
        data = data[:begin] + data[end:]
        for t in header.values():
            if "data_offsets" in t and t["data_offsets"][0] >= end:
                t["data_offsets"] = [o - (end - begin) for o in t["data_offsets"]]
    else:
        sys.exit(f"unknown option {option}")
    # Header order is the data order: rebuild it sorted by offset.
    meta = header.pop("__metadata__", None)
    ordered = dict(sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]))
    if meta is not None:
        ordered = {"__metadata__": meta, **ordered}
    text = json.dumps(ordered, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    body = struct.pack("<Q", len(text)) + text + data
    if option != "--drop":
        begin, end = info["data_offsets"]
        entry["fnv1a64"] = fnv1a64(data[begin:end])
    manifest["file_bytes"] = len(body)
    os.makedirs(dst, exist_ok=True)
    open(os.path.join(dst, manifest["file"]), "wb").write(body)
    json.dump(manifest, open(os.path.join(dst, "checkpoint.json"), "w"), indent=2)
    print(f"crafted {dst}: '{name}' {option} {value}")


if __name__ == "__main__":
    main()
