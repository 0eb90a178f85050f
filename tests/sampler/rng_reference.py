#!/usr/bin/env python3
"""Independent reference for latentq's noise mapping (src/sampler/rng.h).

Written from the mapping's text, not from rng.c: Philox4x32-10 as published
(Salmon et al., SC'11 / Random123), Box-Muller in Python floats (IEEE
float64, the same C library log/cos/sin), one rounding to float32 through
struct.  Prints the pinned values test-rng.c checks:
    seed purpose index float32-bits
Run: python3 tests/sampler/rng_reference.py
"""
import math
import struct

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0 = (k0 + W0) & MASK
            k1 = (k1 + W1) & MASK
        p0 = M0 * c0
        p1 = M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & MASK, p1 & MASK, \
            ((p0 >> 32) ^ c3 ^ k1) & MASK, p0 & MASK
    return [c0, c1, c2, c3]


def normal(seed, purpose, index):
    j, lane = index >> 2, index & 3
    x = philox4x32_10([j & MASK, j >> 32, purpose, 0],
                      [seed & MASK, seed >> 32])
    a, b = x[lane & 2], x[(lane & 2) + 1]
    u1 = (a + 1) * 2.0 ** -32
    u2 = (b + 1) * 2.0 ** -32
    r = math.sqrt(-2.0 * math.log(u1))
    theta = 6.283185307179586 * u2
    z = r * (math.sin(theta) if lane & 1 else math.cos(theta))
    return struct.unpack('<I', struct.pack('<f', z))[0]


CASES = [(0, 1, i) for i in range(8)] + [
    (0xFFFFFFFFFFFFFFFF, 2, (1 << 40) + 3),
    (1234567890123, 0x105, 5),
    (42, 1, 1000001),
    (1 << 63, 0x100, 6),
]

if __name__ == '__main__':
    # Random123 known answers, to show the block function is the real one.
    assert philox4x32_10([0] * 4, [0, 0]) == \
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    for seed, purpose, index in CASES:
        print('{ 0x%016xull, 0x%x, 0x%xull, 0x%08x },' %
              (seed, purpose, index, normal(seed, purpose, index)))
