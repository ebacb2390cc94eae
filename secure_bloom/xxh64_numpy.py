"""XXH64 (seed 0) vectorised over numpy arrays of equal-length inputs.

Spec: the xxHash specification (github.com/Cyan4973/xxHash, doc/xxhash_spec.md), as used by
Parquet BloomFilter.md "Technical Approach" (XXH64, seed 0). For inputs of one length L the hash is
a fixed straight-line sequence of 64-bit multiply / rotate / xor steps, so it runs on ``uint64``
arrays with numpy's wrap-around arithmetic:

* L >= 32: 32-byte stripes fold into four accumulators, which are then merged;
* the tail: 8-byte lanes, then one 4-byte lane, then single bytes;
* a final avalanche.

:func:`xxh64_rows` hashes each row of an ``(n, L)`` uint8 matrix; :func:`xxh64_u32` and
:func:`xxh64_u64` are the 4- and 8-byte special cases used for INT32/FLOAT and INT64/DOUBLE.
The scalar ``xxhash`` package is the reference; a property test holds them together bit for bit.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["xxh64_u32", "xxh64_u64", "xxh64_rows"]

U64 = np.uint64
P1 = U64(0x9E3779B185EBCA87)
P2 = U64(0xC2B2AE3D27D4EB4F)
P3 = U64(0x165667B19E3779F9)
P4 = U64(0x85EBCA77C2B2AE63)
P5 = U64(0x27D4EB2F165667C5)
_MASK = 0xFFFFFFFFFFFFFFFF

ArrayU64 = npt.NDArray[np.uint64]


def _rotl(x: ArrayU64, r: int) -> ArrayU64:
    return (x << U64(r)) | (x >> U64(64 - r))  # type: ignore[no-any-return]


def _round(acc: ArrayU64, lane: ArrayU64) -> ArrayU64:
    acc = acc + lane * P2
    return _rotl(acc, 31) * P1  # type: ignore[no-any-return]


def _avalanche(h: ArrayU64) -> ArrayU64:
    h = h ^ (h >> U64(33))
    h = h * P2
    h = h ^ (h >> U64(29))
    h = h * P3
    return h ^ (h >> U64(32))  # type: ignore[no-any-return]


def _start(n: int, length: int) -> ArrayU64:
    return np.full(n, (int(P5) + length) & _MASK, dtype=np.uint64)


def xxh64_u64(lanes: npt.NDArray[np.uint64]) -> ArrayU64:
    """XXH64 of each 8-byte little-endian value (the uint64 view of INT64 / DOUBLE plain bytes)."""
    lanes = np.ascontiguousarray(lanes, dtype=np.uint64)
    h = _start(lanes.shape[0], 8)
    h ^= _round(np.zeros_like(lanes), lanes)
    h = _rotl(h, 27) * P1 + P4
    return _avalanche(h)


def xxh64_u32(lanes: npt.NDArray[np.uint32]) -> ArrayU64:
    """XXH64 of each 4-byte little-endian value (the uint32 view of INT32 / FLOAT plain bytes)."""
    wide = np.asarray(lanes, dtype=np.uint32).astype(np.uint64)
    h = _start(wide.shape[0], 4)
    h ^= wide * P1
    h = _rotl(h, 23) * P2 + P3
    return _avalanche(h)


def _lanes64(mat: npt.NDArray[np.uint8], start: int, count: int) -> ArrayU64:
    """``count`` consecutive little-endian uint64 lanes per row, from byte ``start``."""
    block = np.ascontiguousarray(mat[:, start:start + 8 * count])
    return block.view("<u8").astype(np.uint64, copy=False).reshape(mat.shape[0], count)


def xxh64_rows(mat: npt.NDArray[np.uint8]) -> ArrayU64:
    """XXH64 of each row of an ``(n, L)`` uint8 matrix (all inputs of length L)."""
    if mat.ndim != 2:
        raise ValueError("xxh64_rows expects a 2-D (n, L) uint8 matrix")
    n, length = mat.shape
    offset = 0
    if length >= 32:
        stripes = length // 32
        lanes = _lanes64(mat, 0, stripes * 4).reshape(n, stripes, 4)
        v1 = np.full(n, (int(P1) + int(P2)) & _MASK, dtype=np.uint64)
        v2 = np.full(n, int(P2), dtype=np.uint64)
        v3 = np.zeros(n, dtype=np.uint64)
        v4 = np.full(n, (-int(P1)) & _MASK, dtype=np.uint64)
        for s in range(stripes):
            v1 = _round(v1, lanes[:, s, 0])
            v2 = _round(v2, lanes[:, s, 1])
            v3 = _round(v3, lanes[:, s, 2])
            v4 = _round(v4, lanes[:, s, 3])
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        zeros = np.zeros(n, dtype=np.uint64)
        for v in (v1, v2, v3, v4):
            h = (h ^ _round(zeros, v)) * P1 + P4
        h = h + U64(length)
        offset = stripes * 32
    else:
        h = _start(n, length)
    rest = length - offset
    if rest >= 8:
        count = rest // 8
        lanes8 = _lanes64(mat, offset, count)
        zeros = np.zeros(n, dtype=np.uint64)
        for j in range(count):
            h = h ^ _round(zeros, lanes8[:, j])
            h = _rotl(h, 27) * P1 + P4
        offset += 8 * count
        rest -= 8 * count
    if rest >= 4:
        word = np.ascontiguousarray(mat[:, offset:offset + 4]).view("<u4").reshape(n)
        h = h ^ (word.astype(np.uint64) * P1)
        h = _rotl(h, 23) * P2 + P3
        offset += 4
        rest -= 4
    for j in range(rest):
        h = h ^ (mat[:, offset + j].astype(np.uint64) * P5)
        h = _rotl(h, 11) * P1
    return _avalanche(h)
