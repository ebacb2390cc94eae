"""XXH64 (seed 0) vectorised over numpy arrays of equal-length inputs.

Spec: the xxHash specification (github.com/Cyan4973/xxHash, doc/xxhash_spec.md), as used by
Parquet BloomFilter.md "Technical Approach" (XXH64, seed 0). For inputs of one length L the hash is
a fixed straight-line sequence of 64-bit multiply / rotate / xor steps, so it runs on ``uint64``
arrays with numpy's wrap-around arithmetic:

* L >= 32: 32-byte stripes fold into four accumulators, which are then merged;
* the tail: 8-byte lanes, then one 4-byte lane, then single bytes;
* a final avalanche.

:func:`xxh64_rows` hashes each row of an ``(n, L)`` uint8 matrix; :func:`xxh64_u32` and
:func:`xxh64_u64` are the 4- and 8-byte special cases used for INT32/FLOAT and INT64/DOUBLE;
:func:`xxh64_short` hashes variable-length inputs under 32 bytes without grouping them by length;
:func:`hash_binary_arrays` hashes any variable-length inputs given Arrow-style offsets.
The scalar ``xxhash`` package is the reference; a property test holds them together bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["xxh64_u32", "xxh64_u64", "xxh64_rows", "xxh64_short", "hash_binary_arrays"]

U64 = np.uint64
P1 = U64(0x9E3779B185EBCA87)
P2 = U64(0xC2B2AE3D27D4EB4F)
P3 = U64(0x165667B19E3779F9)
P4 = U64(0x85EBCA77C2B2AE63)
P5 = U64(0x27D4EB2F165667C5)
_MASK = 0xFFFFFFFFFFFFFFFF

ArrayU64 = npt.NDArray[np.uint64]


def _rotl(x: ArrayU64, r: int) -> ArrayU64:
    return (x << U64(r)) | (x >> U64(64 - r))


def _round(acc: ArrayU64, lane: ArrayU64) -> ArrayU64:
    acc = acc + lane * P2
    return _rotl(acc, 31) * P1


def _avalanche(h: ArrayU64) -> ArrayU64:
    h = h ^ (h >> U64(33))
    h = h * P2
    h = h ^ (h >> U64(29))
    h = h * P3
    return h ^ (h >> U64(32))


def _start(n: int, length: int) -> ArrayU64:
    return np.full(n, (int(P5) + length) & _MASK, dtype=np.uint64)


# In-place helpers for the fixed-width kernels: they work on cache-sized chunks with no temporaries
# but one scratch array, which is several times faster than whole-array expressions.
_CHUNK = 1 << 14


def _rotl_inplace(h: ArrayU64, r: int, scratch: ArrayU64) -> None:
    np.left_shift(h, U64(r), out=scratch)
    np.right_shift(h, U64(64 - r), out=h)
    np.bitwise_or(h, scratch, out=h)


def _avalanche_inplace(h: ArrayU64, scratch: ArrayU64) -> None:
    for shift, prime in ((33, P2), (29, P3)):
        np.right_shift(h, U64(shift), out=scratch)
        np.bitwise_xor(h, scratch, out=h)
        np.multiply(h, prime, out=h)
    np.right_shift(h, U64(32), out=scratch)
    np.bitwise_xor(h, scratch, out=h)


def xxh64_u64(lanes: npt.NDArray[np.uint64]) -> ArrayU64:
    """XXH64 of each 8-byte little-endian value (the uint64 view of INT64 / DOUBLE plain bytes).

    Parameters
    ----------
    lanes : numpy.ndarray of uint64
        The values.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per value.

    Raises
    ------
    None
        Nothing of its own.
    """
    lanes = np.ascontiguousarray(lanes, dtype=np.uint64)
    out = np.empty(lanes.shape[0], dtype=np.uint64)
    scratch = np.empty(min(lanes.shape[0], _CHUNK), dtype=np.uint64)
    start = U64((int(P5) + 8) & _MASK)
    for i in range(0, lanes.shape[0], _CHUNK):
        h = out[i:i + _CHUNK]
        t = scratch[:h.shape[0]]
        np.multiply(lanes[i:i + _CHUNK], P2, out=h)   # round(0, lane) = rotl(lane * P2, 31) * P1
        _rotl_inplace(h, 31, t)
        np.multiply(h, P1, out=h)
        np.bitwise_xor(h, start, out=h)                # h = (P5 + 8) ^ round
        _rotl_inplace(h, 27, t)
        np.multiply(h, P1, out=h)
        np.add(h, P4, out=h)
        _avalanche_inplace(h, t)
    return out


def xxh64_u32(lanes: npt.NDArray[np.uint32]) -> ArrayU64:
    """XXH64 of each 4-byte little-endian value (the uint32 view of INT32 / FLOAT plain bytes).

    Parameters
    ----------
    lanes : numpy.ndarray of uint32
        The values.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per value.

    Raises
    ------
    None
        Nothing of its own.
    """
    lanes = np.ascontiguousarray(lanes, dtype=np.uint32)
    out = np.empty(lanes.shape[0], dtype=np.uint64)
    scratch = np.empty(min(lanes.shape[0], _CHUNK), dtype=np.uint64)
    start = U64((int(P5) + 4) & _MASK)
    for i in range(0, lanes.shape[0], _CHUNK):
        h = out[i:i + _CHUNK]
        t = scratch[:h.shape[0]]
        np.copyto(h, lanes[i:i + _CHUNK])
        np.multiply(h, P1, out=h)
        np.bitwise_xor(h, start, out=h)
        _rotl_inplace(h, 23, t)
        np.multiply(h, P2, out=h)
        np.add(h, P3, out=h)
        _avalanche_inplace(h, t)
    return out


_WINDOW = np.dtype((np.void, 32))


def _windows(data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], out: npt.NDArray[np.uint64]) -> None:
    """Copy the 32 bytes from each start into the rows of ``out`` (m, 4), zero past the data's end.

    One fixed-size gather per row (an unaligned 32-byte "void" view of ``data``); only rows within
    32 bytes of the end go through a small zero-padded copy of the tail.
    """
    size = data.shape[0]
    rows = out.view(_WINDOW).reshape(-1)
    limit = size - 32
    if limit >= 0:
        view = np.ndarray((limit + 1,), dtype=_WINDOW, buffer=data, strides=(1,))
        if starts.shape[0] == 0 or starts.max() <= limit:
            rows[:] = view[starts]
            return
        main = starts <= limit
        rows[main] = view[starts[main]]
    tail_base = max(limit, 0)
    tail = np.zeros(size - tail_base + 32, dtype=np.uint8)
    tail[:size - tail_base] = data[tail_base:]
    tail_view = np.ndarray((tail.shape[0] - 31,), dtype=_WINDOW, buffer=tail, strides=(1,))
    rest = starts > limit
    rows[rest] = tail_view[starts[rest] - tail_base]


def _merge_step(h: ArrayU64, term: ArrayU64, scratch: ArrayU64, use: npt.NDArray[np.bool_], rot: int,
                prime: np.uint64, add: np.uint64 | None) -> None:
    """``h = rotl(h ^ term, rot) * prime (+ add)`` for the rows in ``use``, computed in ``term``;
    when every row of the chunk has this step (similar lengths) it runs in ``h`` directly."""
    every = bool(use.all())
    dst = h if every else term
    np.bitwise_xor(term, h, out=dst)
    _rotl_inplace(dst, rot, scratch)
    np.multiply(dst, prime, out=dst)
    if add is not None:
        np.add(dst, add, out=dst)
    if not every:
        np.copyto(h, term, where=use)


def xxh64_short(data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64],
                lengths: npt.NDArray[np.int64]) -> ArrayU64:
    """XXH64 of variable-length inputs shorter than 32 bytes: ``data[starts[i]:starts[i] + lengths[i]]``.

    Below 32 bytes XXH64 is: up to three 8-byte lanes, at most one 4-byte lane, up to three single
    bytes, then the avalanche. Each row's 32-byte window is gathered once; every row then runs every
    step and keeps the result only where its length has that step (``np.copyto(..., where=)``), so
    no grouping by length is needed.

    Parameters
    ----------
    data : numpy.ndarray of uint8
        The bytes.
    starts : numpy.ndarray of int64
        Where each input starts.
    lengths : numpy.ndarray of int64
        Each input's length (< 32).

    Returns
    -------
    numpy.ndarray of uint64
        One hash per input.

    Raises
    ------
    None
        Nothing of its own.
    """
    n = starts.shape[0]
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    if lengths.max(initial=0) >= 32 or lengths.min(initial=0) < 0:
        raise ValueError("xxh64_short handles inputs of 0..31 bytes")
    data = np.ascontiguousarray(data, dtype=np.uint8)
    chunk = min(n, _CHUNK)
    win = np.empty((chunk, 4), dtype=np.uint64)
    t = np.empty(chunk, dtype=np.uint64)
    k = np.empty(chunk, dtype=np.uint64)
    row32 = np.arange(chunk, dtype=np.int64) * 8    # row offsets in the (m, 8) uint32 view
    row8 = np.arange(chunk, dtype=np.int64) * 32    # row offsets in the (m, 32) uint8 view
    for i in range(0, n, _CHUNK):
        h = out[i:i + _CHUNK]
        m = h.shape[0]
        length = lengths[i:i + _CHUNK].astype(np.int64)
        w, tm, km = win[:m], t[:m], k[:m]
        _windows(data, starts[i:i + _CHUNK].astype(np.int64), w)
        np.add(length.astype(np.uint64), P5, out=h)
        lanes = length >> 3
        for j in range(3):                       # 8-byte lanes: h = rotl(h ^ round(0, lane), 27) * P1 + P4
            use = lanes > j
            if not use.any():
                break
            np.multiply(w[:, j], P2, out=km)
            _rotl_inplace(km, 31, tm)
            np.multiply(km, P1, out=km)
            _merge_step(h, km, tm, use, 27, P1, P4)
        pos = lanes * 8                          # byte offset of the tail within the window
        rest = length & 7
        use = rest >= 4
        if use.any():                            # 4-byte lane: h = rotl(h ^ word * P1, 23) * P2 + P3
            np.copyto(km, np.take(w.view(np.uint32).reshape(-1), row32[:m] + (pos >> 2)))
            np.multiply(km, P1, out=km)
            _merge_step(h, km, tm, use, 23, P2, P3)
            pos += use * 4
            rest &= 3
        flat = w.view(np.uint8).reshape(-1)
        for j in range(3):                       # single bytes: h = rotl(h ^ byte * P5, 11) * P1
            use = rest > j
            if not use.any():
                break
            np.copyto(km, np.take(flat, row8[:m] + pos + j))
            np.multiply(km, P5, out=km)
            _merge_step(h, km, tm, use, 11, P1, None)
        _avalanche_inplace(h, tm)
    return out


def _lanes64(mat: npt.NDArray[np.uint8], start: int, count: int) -> ArrayU64:
    """``count`` consecutive little-endian uint64 lanes per row, from byte ``start``."""
    block = np.ascontiguousarray(mat[:, start:start + 8 * count])
    return block.view("<u8").astype(np.uint64, copy=False).reshape(mat.shape[0], count)


def xxh64_rows(mat: npt.NDArray[np.uint8]) -> ArrayU64:
    """XXH64 of each row of an ``(n, L)`` uint8 matrix (all inputs of length L).

    Parameters
    ----------
    mat : numpy.ndarray of uint8, shape (n, L)
        One input per row.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per row.

    Raises
    ------
    None
        Nothing of its own.
    """
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


def hash_binary_arrays(offsets: npt.NDArray[np.integer[Any]], data: npt.NDArray[np.uint8]) -> ArrayU64:
    """XXH64 of variable-length values given Arrow-style ``offsets`` (n+1) into ``data``.

    Values under 32 bytes go through :func:`xxh64_short` in one pass; longer ones are grouped by
    length and each group is hashed as a ``(count, length)`` matrix.

    Parameters
    ----------
    offsets : numpy.ndarray of int
        n + 1 offsets into ``data``.
    data : numpy.ndarray of uint8
        The values' bytes.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per value.

    Raises
    ------
    None
        Nothing of its own.
    """
    offs: npt.NDArray[np.int64] = np.asarray(offsets, dtype=np.int64)
    n = offs.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    if n == 0:
        return out
    starts = offs[:-1]
    lengths = offs[1:] - starts
    long_rows = np.flatnonzero(lengths >= 32)
    if long_rows.size == 0:
        return xxh64_short(data, starts, lengths)
    short_rows = np.flatnonzero(lengths < 32)
    if short_rows.size:
        out[short_rows] = xxh64_short(data, starts[short_rows], lengths[short_rows])
    long_lengths = lengths[long_rows]
    order = np.argsort(long_lengths, kind="stable")
    bounds = np.flatnonzero(np.diff(long_lengths[order])) + 1
    for group in np.split(long_rows[order], bounds):
        length = int(lengths[group[0]])
        out[group] = xxh64_rows(data[starts[group, None] + np.arange(length)])
    return out
