"""The split-block Bloom filter's block arithmetic on numpy arrays: the portable insert and check.

Spec: Parquet BloomFilter.md, "Technical Approach". A bitset is ``z`` blocks of eight
little-endian 32-bit words; for a 64-bit hash ``h``::

    block = ((h >> 32) * z) >> 32            # 64-bit product, so block < z
    key   = h & 0xFFFFFFFF
    for i in 0..7:  word[i] of block  |=  1 << ((key * SALT[i]) mod 2^32 >> 27)

This module is the numpy fallback of :mod:`secure_bloom.kernels` and the reference the compiled
kernel is held to; :class:`secure_bloom.filter.SplitBlockBloomFilter` reaches it through the
kernels. It works in place on a 1-D ``uint32`` array of whole blocks and knows nothing of values,
files or sizing. Plain fancy-index ``|=`` alone drops repeated indices, so :func:`insert_hashes`
picks one of two strategies (:func:`insert_strategy`):

* ``"scatter"`` - big batches on filters up to 512 KiB: set bytes of an unpacked bit array, one
  word lane at a time (each lane's bits stay cache-sized), then pack it back;
* ``"blocks"`` - everything else: in cache-sized chunks, gather each value's 32-byte block, OR its
  eight masks in, write the blocks back, then re-check; values whose block another value of the
  chunk overwrote go round again (a few rounds at most for real hashes), and whatever is left
  after ``BLOCK_ROUNDS`` rounds goes through ``np.bitwise_or.at``.

:func:`check_hashes` gathers each value's block with one ``np.take`` and compares the eight masks
at once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .spec import BYTES_PER_BLOCK

__all__ = ["SALT", "insert_strategy", "insert_hashes", "check_hashes", "BLOCK_ROUNDS"]

#: BloomFilter.md "Technical Approach": the eight odd salt constants.
SALT = (0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31)
_SALT_COLUMN = np.array(SALT, dtype=np.uint32)[:, None].copy()
_CHUNK = 1 << 14            # values per numpy step: keeps every temporary in the CPU cache
_SCATTER_MAX_BYTES = 512 << 10  # each lane of unpacked bits (= the filter size) stays cache-sized
_BLOCK_CHUNK = 8192         # values per round of the "blocks" strategy (also <= blocks / 2)
#: Rounds of the "blocks" strategy before np.bitwise_or.at takes the values still colliding.
BLOCK_ROUNDS = 8
_BLOCK = np.dtype((np.void, BYTES_PER_BLOCK))

Words = npt.NDArray[np.uint32]
Hashes = npt.NDArray[np.uint64]


def insert_strategy(num_bytes: int, count: int) -> str:
    """Which insert :func:`insert_hashes` uses for ``count`` hashes into ``num_bytes`` of whole
    blocks: ``"scatter"`` or ``"blocks"`` (module docstring).

    Parameters
    ----------
    num_bytes : int
        The bitset size.
    count : int
        Hashes to insert.

    Returns
    -------
    str
        ``"scatter"`` or ``"blocks"``.

    Raises
    ------
    None
        Nothing of its own.
    """
    if num_bytes <= _SCATTER_MAX_BYTES and count * 8 >= num_bytes // 4:
        return "scatter"
    return "blocks"


def _blocks_of(h: Hashes, z: int) -> npt.NDArray[np.intp]:
    """``((h >> 32) * z) >> 32``; for z = 2^k that is ``h >> (64 - k)``, one operation."""
    if z & (z - 1) == 0:
        if z == 1:
            return np.zeros(h.shape[0], dtype=np.intp)
        return (h >> np.uint64(65 - z.bit_length())).astype(np.intp)
    return (((h >> np.uint64(32)) * np.uint64(z)) >> np.uint64(32)).astype(np.intp)


def _masks_of(h: Hashes) -> Words:
    """The word masks ``1 << ((key * SALT[i]) mod 2^32 >> 27)``, key = low 32 bits, as an
    (8, n) array: row i holds word i's masks (long rows vectorise far better than (n, 8))."""
    masks = np.multiply(_SALT_COLUMN, h.astype(np.uint32))
    np.right_shift(masks, np.uint32(27), out=masks)
    np.left_shift(np.uint32(1), masks, out=masks)
    return masks


def _whole_blocks(words: Words) -> int:
    if words.ndim != 1 or words.dtype != np.uint32 or words.size % 8 or words.size == 0:
        raise ValueError("words must be a 1-D uint32 array of whole 8-word blocks")
    return int(words.size // 8)


def insert_hashes(words: Words, hashes: Hashes) -> None:
    """Insert every uint64 hash into ``words`` in place (repeats and shared blocks handled).

    Parameters
    ----------
    words : numpy.ndarray of uint32
        The bitset's words (writable).
    hashes : numpy.ndarray of uint64
        The hashes.

    Raises
    ------
    None
        Nothing of its own.
    """
    _whole_blocks(words)
    if hashes.size == 0:
        return
    if insert_strategy(words.nbytes, hashes.size) == "scatter":
        _insert_scatter(words, hashes)
    else:
        _insert_blocks(words, hashes)


def _insert_scatter(words: Words, h: Hashes) -> None:
    """Bit i of word w of block b is byte ``b * 32 + bit`` of lane w's unpacked bits."""
    z = words.size // 8
    lanes = np.ascontiguousarray(words.reshape(z, 8).T)                   # (8, z)
    bits = np.unpackbits(lanes.view(np.uint8), axis=1, bitorder="little")  # (8, 32 z)
    salts = [np.uint32(s) for s in SALT]
    for start in range(0, h.size, _CHUNK):
        chunk = h[start:start + _CHUNK]
        base = _blocks_of(chunk, z) * 32
        key = chunk.astype(np.uint32)
        bit = np.empty_like(key)
        idx = np.empty_like(base)
        for i in range(8):
            np.multiply(key, salts[i], out=bit)
            np.right_shift(bit, np.uint32(27), out=bit)
            np.add(base, bit, out=idx, casting="unsafe")
            bits[i][idx] = 1
    packed = np.packbits(bits, axis=1, bitorder="little").view("<u4")    # (8, z)
    words.reshape(z, 8)[:] = packed.T


def _insert_blocks(words: Words, h: Hashes) -> None:
    """Gather blocks, OR the masks in, scatter back, re-check; see the module docstring.

    A "stamp" per block (the last row of the chunk that wrote it) finds the rows another row
    may have overwritten; only those are re-read, and only those whose bits really went
    missing (a different value in the same block) go round again.
    """
    z = words.size // 8
    blocks = words.reshape(-1, 8)
    as_void = words.view(_BLOCK)
    step = max(1, min(_BLOCK_CHUNK, z // 2))
    stamp = np.empty(z, dtype=np.int32)
    rows = np.arange(step, dtype=np.int32)
    for start in range(0, h.size, step):
        chunk = h[start:start + step]
        idx = _blocks_of(chunk, z)
        masks = _masks_of(chunk)
        for _ in range(BLOCK_ROUNDS):
            cur = np.take(blocks, idx, axis=0)                 # (m, 8)
            np.bitwise_or(cur.T, masks, out=cur.T)
            as_void[idx] = cur.view(_BLOCK).reshape(-1)  # a repeated block: last write wins
            order = rows[:idx.shape[0]]
            stamp[idx] = order
            overwritten = np.flatnonzero(stamp[idx] != order)
            if overwritten.size == 0:
                break
            idx, masks = idx[overwritten], np.take(masks, overwritten, axis=1)
            got = np.take(blocks, idx, axis=0).T
            lost = np.bitwise_and(got, masks) != masks
            lost = lost.any(axis=0)
            if not lost.any():
                break
            idx, masks = idx[lost], np.compress(lost, masks, axis=1)
        else:
            slots = (idx * 8)[:, None] + np.arange(8, dtype=np.intp)
            np.bitwise_or.at(words, slots.ravel(), masks.T.ravel())


def check_hashes(words: Words, hashes: Hashes) -> npt.NDArray[np.bool_]:
    """For each uint64 hash, whether ``words`` may contain it (False = certainly absent).

    Parameters
    ----------
    words : numpy.ndarray of uint32
        The bitset's words.
    hashes : numpy.ndarray of uint64
        The hashes.

    Returns
    -------
    numpy.ndarray of bool
        One answer per hash.

    Raises
    ------
    None
        Nothing of its own.
    """
    z = _whole_blocks(words)
    out = np.empty(hashes.size, dtype=bool)
    blocks = words.reshape(-1, 8)
    for start in range(0, hashes.size, _CHUNK):
        chunk = hashes[start:start + _CHUNK]
        got = np.take(blocks, _blocks_of(chunk, z), axis=0).T             # (8, m) view
        masks = _masks_of(chunk)
        np.bitwise_and(np.invert(got), masks, out=masks)                  # the bits not set
        np.equal(np.bitwise_or.reduce(masks, axis=0), 0, out=out[start:start + _CHUNK])
    return out
