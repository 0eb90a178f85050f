#!/usr/bin/env python3
"""Writes the malformed safetensors corpus and EXPECTED (file, code, tensor).

Each file breaks one rule of the format; tests/model/test-st-malformed.c opens
every file listed in EXPECTED and checks the error code and the tensor named.
Run from this directory: python3 gen.py
"""
import json
import struct

cases = []


def raw(name, data, code, field="-"):
    with open(name, "wb") as f:
        f.write(data)
    cases.append((name, code, field))


def st(name, header, data, code, field="-", hlen=None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(text) if hlen is None else hlen
    raw(name, struct.pack("<Q", n) + text + data, code, field)


def f32(name, shape, offs):
    return {name: {"dtype": "F32", "shape": shape, "data_offsets": offs}}


raw("empty.safetensors", b"", "LQ-ST-002")
raw("truncated.safetensors", b"\x10\x00\x00\x00\x00", "LQ-ST-002")
st("header-past-eof.safetensors", f32("a", [1], [0, 4]), b"\0" * 4, "LQ-ST-003",
   hlen=1000)
st("header-len-huge.safetensors", b"{}", b"", "LQ-ST-003", hlen=2**64 - 1)
# a 200 MiB header length in a file that is long enough to hold it would be
# too big to ship; the bound is checked in test-st-malformed.c from memory.
st("header-not-json.safetensors", b'{"a": ', b"", "LQ-ST-004")
st("header-nul.safetensors", b'{}\0      ', b"", "LQ-ST-004")
st("header-array.safetensors", b"[1, 2]  ", b"", "LQ-ST-005")
st("header-string.safetensors", b'"abc"   ', b"", "LQ-ST-005")
st("entry-not-object.safetensors", {"a": 5}, b"", "LQ-ST-006", "a")
st("missing-dtype.safetensors", {"w": {"shape": [1], "data_offsets": [0, 4]}},
   b"\0" * 4, "LQ-ST-006", "w")
st("unknown-dtype.safetensors",
   {"w": {"dtype": "Q4_0", "shape": [1], "data_offsets": [0, 4]}},
   b"\0" * 4, "LQ-ST-007", "w")
st("dtype-not-string.safetensors",
   {"w": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}},
   b"\0" * 4, "LQ-ST-007", "w")
st("shape-negative.safetensors", f32("w", [-1, 2], [0, 8]), b"\0" * 8,
   "LQ-ST-008", "w")
st("shape-fraction.safetensors", f32("w", [1.5], [0, 4]), b"\0" * 4,
   "LQ-ST-008", "w")
st("shape-not-array.safetensors", f32("w", 4, [0, 16]), b"\0" * 16,
   "LQ-ST-008", "w")
st("shape-9-dims.safetensors", f32("w", [1] * 9, [0, 4]), b"\0" * 4,
   "LQ-ST-008", "w")
st("shape-overflow.safetensors", f32("w", [2**32, 2**32, 2], [0, 4]),
   b"\0" * 4, "LQ-ST-009", "w")
st("shape-overflow-bytes.safetensors", f32("w", [2**62], [0, 4]), b"\0" * 4,
   "LQ-ST-009", "w")
st("wrong-byte-count.safetensors", f32("w", [2, 2], [0, 12]), b"\0" * 16,
   "LQ-ST-010", "w")
st("span-past-data.safetensors", f32("w", [4], [0, 16]), b"\0" * 8,
   "LQ-ST-011", "w")
st("offsets-reversed.safetensors", f32("w", [2], [8, 0]), b"\0" * 8,
   "LQ-ST-011", "w")
st("offsets-not-pair.safetensors", f32("w", [2], [0, 8, 9]), b"\0" * 8,
   "LQ-ST-011", "w")
h = f32("a", [4], [0, 16])
h.update(f32("b", [4], [8, 24]))
st("overlap.safetensors", h, b"\0" * 24, "LQ-ST-012", "b")
h = f32("a", [4], [0, 16])
h.update(f32("b", [2], [4, 12]))
st("overlap-inside.safetensors", h, b"\0" * 16, "LQ-ST-012", "b")
st("metadata-not-string.safetensors", {"__metadata__": {"format": 1}},
   b"", "LQ-ST-013", "__metadata__")
st("metadata-not-object.safetensors", {"__metadata__": "pt"},
   b"", "LQ-ST-013", "__metadata__")
st("duplicate-name.safetensors",
   b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
   b'"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
   b"\0" * 8, "LQ-ST-014", "w")

with open("EXPECTED", "w") as f:
    f.write("# file  code  tensor ('-': none); written by gen.py\n")
    for c in cases:
        f.write("%s %s %s\n" % c)
