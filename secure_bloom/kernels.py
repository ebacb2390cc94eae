"""Hash, insert and check kernels: compiled C where available, numpy otherwise, equal bit for bit.

Spec: Parquet BloomFilter.md (XXH64 seed 0 over the plain bytes of a value; the split-block
filter). :mod:`secure_bloom.native_kernels` (``secure_bloom/_native/kernels.c``, an optional extension
built at ``pip install``) does the work in one pass with the GIL released; where it is not built,
or ``SECURE_BLOOM_KERNEL=numpy`` is set, each function runs the package's numpy code instead
(:mod:`secure_bloom.xxh64`, :func:`secure_bloom.xxh64.hash_binary_arrays`,
:class:`secure_bloom.filter.SplitBlockBloomFilter`). :data:`BACKEND` says which one is in use and
:func:`kernel_info` why.

Values come as raw buffers (anything with the buffer protocol, C-contiguous):

* fixed width: ``data`` holds consecutive ``width``-byte values (INT32/FLOAT 4, INT64/DOUBLE 8,
  INT96 12, FIXED_LEN_BYTE_ARRAY any width);
* Arrow binary/string (``offset_width=4``) and large_* (``8``): ``offsets`` (n + 1 little-endian
  offsets) into ``data``; value i is ``data[offsets[i]:offsets[i + 1]]``;
* Arrow binary_view/string_view: ``views`` (16 bytes each: length, then the value inline when it
  is at most 12 bytes, else a 4-byte prefix, a buffer index and an offset) into ``data_buffers``.

``validity`` (an Arrow validity bitmap, bit ``validity_offset + i`` set = value i present) makes
every function skip nulls: outputs then hold one entry per non-null value. Every offset, view and
length is validated against the buffer sizes before any value is read: malformed buffers raise
:class:`~secure_bloom.errors.MalformedInputError`, a bitset outside [32 B, 128 MiB]
:class:`~secure_bloom.errors.MalformedBitsetError`. The bitset is ``floor(numBytes / 32)`` blocks;
tail bytes of a bitset that is not whole blocks are left untouched (as parquet-java does).

:func:`xxh64_arrow`, :func:`sbbf_insert_arrow` and :func:`sbbf_check_arrow` take a pyarrow array
of a binary-like, fixed_size_binary or 32/64-bit primitive type and hash the bytes Arrow stores
(mapping logical types to Parquet physical types is the caller's job).

Threads: the native functions release the GIL. Another thread may write to the buffers a call reads:
each offset, view and hash is read once and checked where it is used, so that gives other hashes or
MalformedInputError ("... changed while being read"), never an access outside a buffer. Calls on
distinct bitsets run in parallel, and checks alongside an insert; concurrent inserts into ONE bitset
race (plain read-modify-write, no atomics) and can lose bits: serialise them, as
:class:`~secure_bloom.filter.SplitBlockBloomFilter` does.

``python -m secure_bloom.kernels --bench`` prints ns/value for native and numpy.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from . import sbbf_numpy
from .errors import MalformedBitsetError, MalformedInputError
from .extensions import load_extension
from .xxh64 import hash_binary_arrays, xxh64_rows, xxh64_u32, xxh64_u64
from .spec import MIN_BITSET_BYTES, SPEC_MAX_BITSET_BYTES

__all__ = [
    "BACKEND",
    "kernel_info",
    "kernel_summary",
    "forced_backend",
    "xxh64_fixed",
    "xxh64_binary",
    "xxh64_binary_view",
    "sbbf_insert",
    "sbbf_check",
    "sbbf_check_many",
    "sbbf_insert_fixed",
    "sbbf_check_fixed",
    "sbbf_insert_binary",
    "sbbf_check_binary",
    "sbbf_insert_binary_view",
    "sbbf_check_binary_view",
    "count_distinct_hashes",
    "xxh64_arrow",
    "sbbf_insert_arrow",
    "sbbf_check_arrow",
    "xxh64_array",
    "sbbf_insert_array",
    "sbbf_check_array",
]

ENV_VAR = "SECURE_BLOOM_KERNEL"
#: Bitset sizes the kernels accept (Parquet's limits, secure_bloom.spec).
MAX_BITSET_BYTES = SPEC_MAX_BITSET_BYTES
_MAX_WIDTH = 1 << 31
_U64_MASK = (1 << 64) - 1

Hashes = npt.NDArray[np.uint64]
Flags = npt.NDArray[np.bool_]


_loaded, _why_not = load_extension("native_kernels", ENV_VAR, "numpy", fallback_text="the numpy kernels")
_native = _loaded
#: "native" (the C kernels) or "numpy" (the fallback).
BACKEND = "native" if _native is not None else "numpy"


@contextmanager
def forced_backend(name: str) -> Iterator[None]:
    """Run the block on one backend, ``"numpy"`` or ``"native"`` (where it loaded), whatever
    :data:`BACKEND` was: for benchmarks and tests that compare them in one process. Process-wide
    and not thread-safe: other threads see the switch too.

    Parameters
    ----------
    name : str
        ``"numpy"`` or ``"native"``.

    Yields
    ------
    None
        Inside the block, the backend is ``name``.

    Raises
    ------
    ValueError
        An unknown backend, or ``native`` where it did not load.
    """
    global _native, BACKEND
    if name not in ("native", "numpy"):
        raise ValueError(f"backend must be native or numpy, got {name!r}")
    if name == "native" and _loaded is None:
        raise ImportError(f"the native kernel is not available: {_why_not}")
    saved = _native, BACKEND
    _native, BACKEND = (_loaded, "native") if name == "native" else (None, "numpy")
    try:
        yield
    finally:
        _native, BACKEND = saved


def kernel_info() -> dict[str, Any]:
    """Which backend runs, why the native one does not (if so), and how it was built.

    Returns
    -------
    dict
        ``backend``, ``reason``, build details.

    Raises
    ------
    None
        Nothing of its own.
    """
    why = _why_not if _loaded is None or _native is not None else "forced_backend('numpy')"
    info: dict[str, Any] = {"backend": BACKEND, "unavailable_reason": why}
    if _native is not None:
        info.update(_native.info())
    return info


def kernel_summary() -> str:
    """One line naming the backend in use, e.g. ``native (avx2; gcc 12.2.0 -O3)`` or
    ``numpy fallback (SECURE_BLOOM_KERNEL=numpy)`` (for ``--version`` and benchmark output).

    Returns
    -------
    str
        The line.

    Raises
    ------
    None
        Nothing of its own.
    """
    info = kernel_info()
    if info["backend"] == "native":
        return f"native ({info.get('simd')}; {info.get('compiler')} {info.get('flags')})"
    return f"numpy fallback ({info['unavailable_reason']})"


# ---------------------------------------------------------------------- argument checks (both backends)

def _bytes_view(obj: Any, name: str, *, writable: bool = False) -> memoryview:
    """A flat byte view of a C-contiguous buffer (TypeError otherwise)."""
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"{name} must be a bytes-like object (buffer protocol), got {type(obj).__name__}") from None
    if not view.c_contiguous:
        raise TypeError(f"{name} must be C-contiguous")
    if writable and view.readonly:
        raise TypeError(f"{name} must be writable")
    if view.nbytes == 0:  # memoryview.cast refuses a shape with a zero in it, e.g. (0, 12)
        return memoryview(bytearray())
    return view.cast("B") if view.ndim != 1 or view.format != "B" else view


def _bitset_view(bitset: Any, *, writable: bool) -> memoryview:
    view = _bytes_view(bitset, "bitset", writable=writable)
    if not MIN_BITSET_BYTES <= view.nbytes <= MAX_BITSET_BYTES:
        raise MalformedBitsetError(
            f"bitset of {view.nbytes} bytes is outside [{MIN_BITSET_BYTES}, {MAX_BITSET_BYTES}] bytes")
    return view


def _whole(nbytes: int, size: int, what: str, item: str) -> int:
    if nbytes % size:
        raise MalformedInputError(f"{what} of {nbytes} bytes is not a whole number of {size}-byte {item}")
    return nbytes // size


def _count(kind: str, src: tuple[Any, ...]) -> int:
    """Number of values (nulls included) of a source; O(1) checks of its parameters and sizes."""
    if kind == "fixed":
        data, width = src
        if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or not 1 <= width <= _MAX_WIDTH:
            raise ValueError(f"width must be an int in [1, 2^31], got {width!r}")
        return _whole(_bytes_view(data, "data").nbytes, int(width), "data", "values")
    if kind == "binary":
        offsets, data, offset_width = src
        if offset_width not in (4, 8):
            raise ValueError(f"offset_width must be 4 (binary/string) or 8 (large_*), got {offset_width!r}")
        _bytes_view(data, "data")
        count = _whole(_bytes_view(offsets, "offsets").nbytes, offset_width, "offsets buffer", "offsets")
        return max(count - 1, 0)
    views, data_buffers = src
    if isinstance(data_buffers, (str, bytes)) or not isinstance(data_buffers, Sequence):
        raise TypeError("data_buffers must be a sequence of buffers")
    for i, buf in enumerate(data_buffers):
        _bytes_view(buf, f"data_buffers[{i}]")
    return _whole(_bytes_view(views, "views").nbytes, 16, "views buffer", "views")


def _check_validity(validity: Any, offset: int, n: int) -> None:
    if validity is None:
        return
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
        raise ValueError(f"validity_offset must be an int >= 0, got {offset!r}")
    nbytes = _bytes_view(validity, "validity").nbytes
    if nbytes * 8 < offset + n:
        raise MalformedInputError(
            f"validity bitmap of {nbytes} bytes is too short for {n} values at bit offset {offset}")


def _as_hashes(hashes: Any) -> Hashes:
    """uint64 hashes from a uint64/int64 array, a buffer of native uint64, or a sequence of ints."""
    if isinstance(hashes, np.ndarray):
        if hashes.dtype not in (np.uint64, np.int64):
            raise TypeError(f"hashes must be a uint64 (or int64) array, got dtype {hashes.dtype}")
        return np.ascontiguousarray(hashes.reshape(-1)).view(np.uint64)
    if isinstance(hashes, (list, tuple)):
        if any(isinstance(h, bool) or not isinstance(h, (int, np.integer)) for h in hashes):
            raise TypeError("hashes must be integers")
        if any(not -(1 << 63) <= int(h) <= _U64_MASK for h in hashes):
            raise ValueError("hashes must be 64-bit integers")
        return np.array([int(h) & _U64_MASK for h in hashes], dtype=np.uint64)
    view = _bytes_view(hashes, "hashes")
    _whole(view.nbytes, 8, "hashes buffer", "hashes")
    return np.frombuffer(view, dtype=np.uint64)


@contextmanager
def _malformed() -> Iterator[None]:
    """The C module raises ValueError for malformed buffers: re-raise as the library's class."""
    try:
        yield
    except MalformedInputError:
        raise
    except ValueError as e:
        raise MalformedInputError(str(e)) from None


# ---------------------------------------------------------------------- numpy fallback

def _np_mask(validity: Any, offset: int, n: int) -> npt.NDArray[np.bool_] | None:
    if validity is None:
        return None
    bits = np.unpackbits(np.frombuffer(_bytes_view(validity, "validity"), dtype=np.uint8), bitorder="little")
    return bits[offset:offset + n].astype(bool)


def _np_fixed(data: Any, width: int, mask: npt.NDArray[np.bool_] | None) -> Hashes:
    rows = np.frombuffer(_bytes_view(data, "data"), dtype=np.uint8).reshape(-1, width)
    if mask is not None:
        rows = rows[mask]
    if width == 4:
        return xxh64_u32(np.ascontiguousarray(rows).view("<u4").reshape(-1).astype(np.uint32, copy=False))
    if width == 8:
        return xxh64_u64(np.ascontiguousarray(rows).view("<u8").reshape(-1).astype(np.uint64, copy=False))
    return xxh64_rows(rows)


def _np_offsets(offsets: Any, offset_width: int, data_len: int) -> npt.NDArray[np.int64]:
    """Arrow offsets as int64, validated as the C kernel validates them (same messages)."""
    raw = np.frombuffer(_bytes_view(offsets, "offsets"), dtype="<i4" if offset_width == 4 else "<i8")
    offs = raw.astype(np.int64)
    if offs.shape[0] < 2:
        return np.zeros(1, dtype=np.int64)
    if offs[0] < 0:
        raise MalformedInputError(f"offset 0 is negative ({offs[0]})")
    down = np.flatnonzero(offs[1:] < offs[:-1])
    if down.size:
        i = int(down[0])
        raise MalformedInputError(f"offsets decrease at value {i} ({offs[i + 1]} after {offs[i]})")
    if offs[-1] > data_len:
        raise MalformedInputError(
            f"last offset (value {offs.shape[0] - 2}) is {offs[-1]}, past the {data_len}-byte data buffer")
    return offs


def _np_binary(offsets: Any, data: Any, offset_width: int, mask: npt.NDArray[np.bool_] | None) -> Hashes:
    raw = np.frombuffer(_bytes_view(data, "data"), dtype=np.uint8)
    offs = _np_offsets(offsets, offset_width, raw.shape[0])
    hashes = hash_binary_arrays(offs, raw)
    return hashes if mask is None else hashes[mask]


def _np_view(views: Any, data_buffers: Sequence[Any], mask: npt.NDArray[np.bool_] | None) -> Hashes:
    """Validate the views (same checks and messages as the C kernel), gather every value into one
    offsets + data pair, then hash it as Arrow binary."""
    rows = np.frombuffer(_bytes_view(views, "views"), dtype=np.uint8).reshape(-1, 16)
    index = np.arange(rows.shape[0])
    if mask is not None:
        rows, index = rows[mask], index[mask]
    fields = np.ascontiguousarray(rows).view("<i4").astype(np.int64)       # (m, 4) length, prefix, buf, off
    lengths, buf, off = fields[:, 0], fields[:, 2], fields[:, 3]
    bufs = [np.frombuffer(_bytes_view(b, "data_buffers"), dtype=np.uint8) for b in data_buffers]
    sizes = np.array([b.shape[0] for b in bufs] + [0], dtype=np.int64)
    out_of_line = lengths > 12
    bad_buf = out_of_line & ((buf < 0) | (buf >= len(bufs)))
    size = sizes[np.where(out_of_line & ~bad_buf, buf, -1)]   # inline views hold data where buf is
    past = out_of_line & ~bad_buf & ((off < 0) | (off + lengths > size))
    bad = np.flatnonzero((lengths < 0) | bad_buf | past)
    if bad.size:  # the first bad view, in the C kernel's words
        i = int(bad[0])
        j = int(index[i])
        if lengths[i] < 0:
            raise MalformedInputError(f"view {j} has a negative length ({lengths[i]})")
        if bad_buf[i]:
            raise MalformedInputError(f"view {j} names data buffer {buf[i]} of {len(bufs)}")
        raise MalformedInputError(
            f"view {j}: offset {off[i]} + length is past its data buffer of {sizes[buf[i]]} bytes")
    inline = lengths <= 12
    pool = np.concatenate([rows.reshape(-1), *bufs]) if bufs else rows.reshape(-1)
    bases = np.concatenate([[rows.size], rows.size + np.cumsum(sizes[:-1])]).astype(np.int64)
    starts = np.where(inline, np.arange(rows.shape[0], dtype=np.int64) * 16 + 4,
                      bases[np.where(inline, 0, buf)] + np.where(inline, 0, off))
    offs = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=offs[1:])
    gather = np.repeat(starts - offs[:-1], lengths) + np.arange(offs[-1], dtype=np.int64)
    return hash_binary_arrays(offs, pool[gather])


def _np_hashes(kind: str, src: tuple[Any, ...], mask: npt.NDArray[np.bool_] | None) -> Hashes:
    if kind == "fixed":
        return _np_fixed(src[0], int(src[1]), mask)
    if kind == "binary":
        return _np_binary(src[0], src[1], int(src[2]), mask)
    return _np_view(src[0], src[1], mask)


def _np_words(view: memoryview) -> npt.NDArray[np.uint32]:
    """The bitset's whole blocks as uint32 words, sharing its memory (writable if it is)."""
    return np.frombuffer(view[:view.nbytes // 32 * 32], dtype="<u4")


def _np_insert(view: memoryview, hashes: Hashes) -> None:
    sbbf_numpy.insert_hashes(_np_words(view), hashes)


def _np_check(view: memoryview, hashes: Hashes) -> Flags:
    return sbbf_numpy.check_hashes(_np_words(view), hashes)


# ---------------------------------------------------------------------- dispatch

_NATIVE_NAMES = {
    ("hash", "fixed"): "xxh64_fixed", ("hash", "binary"): "xxh64_binary", ("hash", "view"): "xxh64_binary_view",
    ("insert", "fixed"): "sbbf_insert_fixed", ("insert", "binary"): "sbbf_insert_binary",
    ("insert", "view"): "sbbf_insert_view",
    ("check", "fixed"): "sbbf_check_fixed", ("check", "binary"): "sbbf_check_binary",
    ("check", "view"): "sbbf_check_view",
}


def _run(op: str, kind: str, bitset: Any, src: tuple[Any, ...], validity: Any, validity_offset: int,
         native: Any = None) -> Any:
    """Hash a source, or hash it into / against a bitset; ``native`` overrides the backend (bench)."""
    view = _bitset_view(bitset, writable=op == "insert") if op != "hash" else None
    n = _count(kind, src)
    _check_validity(validity, validity_offset, n)
    lib = _native if native is None else native
    if lib is not False and lib is not None:
        fn = getattr(lib, _NATIVE_NAMES[op, kind])
        out: npt.NDArray[Any] | None = None if op == "insert" else np.empty(
            n, dtype=np.uint64 if op == "hash" else np.bool_)
        args = ([view] if view is not None else []) + list(src) + ([out] if out is not None else [])
        with _malformed():
            count = fn(*args, validity=validity, validity_offset=validity_offset)
        return count if out is None else out[:count]
    hashes = _np_hashes(kind, src, _np_mask(validity, validity_offset, n))
    if view is None:
        return hashes
    if op == "insert":
        _np_insert(view, hashes)
        return int(hashes.size)
    return _np_check(view, hashes)


# ---------------------------------------------------------------------- public API

def xxh64_fixed(data: Any, width: int, *, validity: Any = None, validity_offset: int = 0) -> Hashes:
    """XXH64 (seed 0) of each consecutive ``width``-byte value of ``data`` (nulls skipped).

    Parameters
    ----------
    data : buffer
        The values' bytes.
    width : int
        Bytes per value.
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    result: Hashes = _run("hash", "fixed", None, (data, width), validity, validity_offset)
    return result


def xxh64_binary(offsets: Any, data: Any, offset_width: int = 4, *, validity: Any = None,
                 validity_offset: int = 0) -> Hashes:
    """XXH64 of each Arrow binary value ``data[offsets[i]:offsets[i + 1]]`` (``offsets``: n + 1
    little-endian int32, or int64 with ``offset_width=8`` for large_binary / large_string).

    Parameters
    ----------
    offsets : buffer
        n + 1 little-endian offsets into ``data``.
    data : buffer
        The values' bytes.
    offset_width : int, default 4
        4 (int32 offsets) or 8 (large_binary / large_string).
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    result: Hashes = _run("hash", "binary", None, (offsets, data, offset_width), validity, validity_offset)
    return result


def xxh64_binary_view(views: Any, data_buffers: Sequence[Any], *, validity: Any = None,
                      validity_offset: int = 0) -> Hashes:
    """XXH64 of each value of an Arrow binary_view / string_view (16-byte views + data buffers).

    Parameters
    ----------
    views : buffer
        Arrow's 16-byte views.
    data_buffers : sequence of buffers
        The view type's data buffers.
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    result: Hashes = _run("hash", "view", None, (views, data_buffers), validity, validity_offset)
    return result


def xxh64_objects(values: list[Any] | tuple[Any, ...]) -> Hashes | None:
    """XXH64 of the UTF-8 bytes of each ``str`` and the bytes of each ``bytes`` item of a list or
    tuple (``None`` skipped), read from the objects themselves (no Arrow array is built). None
    when another item type or a str without a UTF-8 form (a lone surrogate) is met, or without
    the compiled kernels: the caller then converts the values itself."""
    if _native is None:
        return None
    out = np.empty(len(values), dtype=np.uint64)
    count = _native.xxh64_objects(values, out)
    if count is None:
        return None
    return out if count == out.size else out[:count]


def sbbf_insert(bitset: Any, hashes: Any) -> None:
    """Insert 64-bit hashes into a writable bitset (``floor(len / 32)`` blocks, words little-endian).

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    hashes : array-like of uint64
        64-bit hashes.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    view = _bitset_view(bitset, writable=True)
    h = _as_hashes(hashes)
    if _native is not None:
        _native.sbbf_insert(view, h)
    else:
        _np_insert(view, h)


def sbbf_check(bitset: Any, hashes: Any) -> Flags:
    """For each hash, whether the bitset may contain it (False = certainly absent).

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    hashes : array-like of uint64
        64-bit hashes.

    Returns
    -------
    numpy.ndarray of bool
        One answer per non-null value (False: certainly absent).

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    view = _bitset_view(bitset, writable=False)
    h = _as_hashes(hashes)
    if _native is None:
        return _np_check(view, h)
    out = np.empty(h.size, dtype=np.bool_)
    _native.sbbf_check(view, h, out)
    return out


def sbbf_check_many(bitsets: Sequence[Any], hashes: Any) -> npt.NDArray[np.bool_]:
    """Every hash against every bitset: the filters of a file's row groups probed with one array
    of hashes (hashed once), in one native call with the GIL released once.

    Parameters
    ----------
    bitsets : sequence of bytes-like
        The bitsets (each ``floor(len / 32)`` blocks of little-endian words, 32 B to 128 MiB).
    hashes : uint64 array, buffer of native uint64, or sequence of ints
        The hashes to check.

    Returns
    -------
    numpy.ndarray of bool, shape ``(len(bitsets), len(hashes))``
        Row ``f``: :func:`sbbf_check` of ``bitsets[f]`` (False = certainly absent).

    Raises
    ------
    MalformedBitsetError
        A bitset outside [32 B, 128 MiB].
    TypeError
        ``bitsets`` is not a sequence of buffers, or the hashes are not integers.
    """
    if isinstance(bitsets, (bytes, bytearray, memoryview, str)) or not isinstance(bitsets, Sequence):
        raise TypeError(f"bitsets must be a sequence of bytes-like objects, got {type(bitsets).__name__}")
    h = _as_hashes(hashes)
    if _native is None:
        views = [_bitset_view(b, writable=False) for b in bitsets]
        out = np.empty((len(views), h.size), dtype=np.bool_)
        for row, view in zip(out, views):
            row[:] = _np_check(view, h)
        return out
    items = list(bitsets)  # one snapshot: the C code takes (and checks) each buffer of it once
    out = np.empty((len(items), h.size), dtype=np.bool_)
    try:
        _native.sbbf_check_many(items, h, out)
    except ValueError as e:  # a bitset outside [32 B, 128 MiB], as _bitset_view says it
        raise MalformedBitsetError(str(e)) from None
    return out


def sbbf_insert_fixed(bitset: Any, data: Any, width: int, *, validity: Any = None, validity_offset: int = 0) -> int:
    """Hash each ``width``-byte value and insert it; returns the number inserted (non-null values).

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    data : buffer
        The values' bytes.
    width : int
        Bytes per value.
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    int
        The number of values (non-null) inserted or counted.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    count: int = _run("insert", "fixed", bitset, (data, width), validity, validity_offset)
    return count


def sbbf_check_fixed(bitset: Any, data: Any, width: int, *, validity: Any = None, validity_offset: int = 0) -> Flags:
    """Hash each ``width``-byte value and check it (one flag per non-null value).

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    data : buffer
        The values' bytes.
    width : int
        Bytes per value.
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    numpy.ndarray of bool
        One answer per non-null value (False: certainly absent).

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    flags: Flags = _run("check", "fixed", bitset, (data, width), validity, validity_offset)
    return flags


def sbbf_insert_binary(bitset: Any, offsets: Any, data: Any, offset_width: int = 4, *, validity: Any = None,
                       validity_offset: int = 0) -> int:
    """Hash each Arrow binary value and insert it; returns the number inserted.

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    offsets : buffer
        n + 1 little-endian offsets into ``data``.
    data : buffer
        The values' bytes.
    offset_width : int, default 4
        4 (int32 offsets) or 8 (large_binary / large_string).
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    int
        The number of values (non-null) inserted or counted.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    count: int = _run("insert", "binary", bitset, (offsets, data, offset_width), validity, validity_offset)
    return count


def sbbf_check_binary(bitset: Any, offsets: Any, data: Any, offset_width: int = 4, *, validity: Any = None,
                      validity_offset: int = 0) -> Flags:
    """Hash each Arrow binary value and check it (one flag per non-null value).

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    offsets : buffer
        n + 1 little-endian offsets into ``data``.
    data : buffer
        The values' bytes.
    offset_width : int, default 4
        4 (int32 offsets) or 8 (large_binary / large_string).
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    numpy.ndarray of bool
        One answer per non-null value (False: certainly absent).

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    flags: Flags = _run("check", "binary", bitset, (offsets, data, offset_width), validity, validity_offset)
    return flags


def sbbf_insert_binary_view(bitset: Any, views: Any, data_buffers: Sequence[Any], *, validity: Any = None,
                            validity_offset: int = 0) -> int:
    """Hash each Arrow binary_view value and insert it; returns the number inserted.

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    views : buffer
        Arrow's 16-byte views.
    data_buffers : sequence of buffers
        The view type's data buffers.
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    int
        The number of values (non-null) inserted or counted.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    count: int = _run("insert", "view", bitset, (views, data_buffers), validity, validity_offset)
    return count


def sbbf_check_binary_view(bitset: Any, views: Any, data_buffers: Sequence[Any], *, validity: Any = None,
                           validity_offset: int = 0) -> Flags:
    """Hash each Arrow binary_view value and check it (one flag per non-null value).

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    views : buffer
        Arrow's 16-byte views.
    data_buffers : sequence of buffers
        The view type's data buffers.
    validity : buffer, optional
        Arrow's validity bitmap (nulls are skipped).
    validity_offset : int, default 0
        The first value's bit in ``validity``.

    Returns
    -------
    numpy.ndarray of bool
        One answer per non-null value (False: certainly absent).

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    flags: Flags = _run("check", "view", bitset, (views, data_buffers), validity, validity_offset)
    return flags


def count_distinct_hashes(hashes: Any) -> int:
    """The exact number of distinct 64-bit values (for exact-NDV filter sizing).

    Native: partition by the top bits, then a cache-sized hash table per part (heap sort for a
    part whose probing runs long); extra memory is one copy of the hashes. numpy: ``np.unique``.

    Parameters
    ----------
    hashes : array-like of uint64
        64-bit hashes.

    Returns
    -------
    int
        The number of distinct hashes.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    h = _as_hashes(hashes)
    if _native is not None:
        with _malformed():
            return int(_native.count_distinct(h))
    return int(np.unique(h).size)


# ---------------------------------------------------------------------- pyarrow arrays

def _exact_slice(buf: Any, start: int, stop: int, what: str) -> memoryview:
    """``buf[start:stop]``, refusing a buffer too short for it (memoryview slicing would clamp it
    silently and values would go missing)."""
    view = _bytes_view(buf if buf is not None else b"", what)
    if view.nbytes < stop:
        raise MalformedInputError(f"Arrow {what} buffer of {view.nbytes} bytes is shorter than the "
                                  f"{stop} bytes its array needs")
    return view[start:stop]


def _arrow_source(array: Any) -> tuple[str, tuple[Any, ...], Any, int]:
    """(kind, source, validity, validity_offset) of one pyarrow Array."""
    import pyarrow as pa

    typ, n, off = array.type, len(array), array.offset
    buffers = array.buffers()
    validity = buffers[0] if array.null_count and buffers[0] is not None else None
    if pa.types.is_string(typ) or pa.types.is_binary(typ) or pa.types.is_large_string(typ) \
            or pa.types.is_large_binary(typ):
        width = 8 if pa.types.is_large_string(typ) or pa.types.is_large_binary(typ) else 4
        offsets = _exact_slice(buffers[1], off * width, (off + n + 1) * width, "offsets") if n else b""
        return "binary", (offsets, buffers[2] if buffers[2] is not None else b"", width), validity, off
    if pa.types.is_string_view(typ) or pa.types.is_binary_view(typ):
        views = _exact_slice(buffers[1], off * 16, (off + n) * 16, "views")
        data = [b if b is not None else b"" for b in buffers[2:]]
        return "view", (views, data), validity, off
    if pa.types.is_fixed_size_binary(typ) or (
            (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_temporal(typ)
             or pa.types.is_decimal(typ)) and typ.bit_width in (32, 64)):
        width = typ.byte_width
        return "fixed", (_exact_slice(buffers[1], off * width, (off + n) * width, "data"), width), validity, off
    raise TypeError(f"no kernel for Arrow type {typ} (binary-like, fixed_size_binary and 32/64-bit "
                    "numeric or temporal types only)")


def _arrow_chunks(array: Any) -> list[Any]:
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        return list(array.chunks)
    if isinstance(array, pa.Array):
        return [array]
    raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(array).__name__}")


def concat_parts(parts: Sequence[npt.NDArray[Any]], dtype: Any) -> npt.NDArray[Any]:
    """The parts end to end: the part itself when there is one (no copy: a fresh 8 MB copy per
    million hashes was most of ``hash_values``' time), an empty ``dtype`` array when none."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def _arrow_run(op: str, bitset: Any, array: Any) -> list[Any]:
    results = []
    for chunk in _arrow_chunks(array):
        kind, src, validity, offset = _arrow_source(chunk)
        results.append(_run(op, kind, bitset, src, validity, offset))
    return results


def xxh64_arrow(array: Any) -> Hashes:
    """XXH64 of each non-null value of a pyarrow Array / ChunkedArray (the bytes Arrow stores).

    Parameters
    ----------
    array : pyarrow.Array or pyarrow.ChunkedArray
        The values.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    return concat_parts(_arrow_run("hash", None, array), np.uint64)


def sbbf_insert_arrow(bitset: Any, array: Any) -> int:
    """Hash and insert each non-null value of a pyarrow Array / ChunkedArray; returns the count.

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    array : pyarrow.Array or pyarrow.ChunkedArray
        The values.

    Returns
    -------
    int
        The number of values (non-null) inserted or counted.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    return int(sum(_arrow_run("insert", bitset, array)))


def sbbf_check_arrow(bitset: Any, array: Any) -> Flags:
    """Hash and check each non-null value of a pyarrow Array / ChunkedArray.

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    array : pyarrow.Array or pyarrow.ChunkedArray
        The values.

    Returns
    -------
    numpy.ndarray of bool
        One answer per non-null value (False: certainly absent).

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    return concat_parts(_arrow_run("check", bitset, array), np.bool_)


# ---------------------------------------------------------------------- plain arrays

def _plain_source(part: Any) -> tuple[str, tuple[Any, ...], Any, int]:
    """(kind, source, validity, validity_offset) of a numpy array whose bytes are the values
    (1-D: one value per item; 2-D: one value per row) or of one pyarrow Array."""
    if isinstance(part, np.ndarray):
        if part.ndim not in (1, 2) or part.dtype.hasobject:
            raise TypeError(f"expected a 1-D or 2-D numpy array of fixed-width values, got {part.dtype} "
                            f"with {part.ndim} dimensions")
        width = part.dtype.itemsize * (part.shape[1] if part.ndim == 2 else 1)
        return "fixed", (np.ascontiguousarray(part), width), None, 0
    chunks = _arrow_chunks(part)
    if len(chunks) != 1:
        raise TypeError("expected one pyarrow Array, not a ChunkedArray of several chunks")
    return _arrow_source(chunks[0])


def _run_plain(op: str, bitset: Any, part: Any) -> Any:
    kind, src, validity, offset = _plain_source(part)
    return _run(op, kind, bitset, src, validity, offset)


def xxh64_array(part: Any) -> Hashes:
    """XXH64 of each value of a numpy array (its bytes, one value per item or row) or of each
    non-null value of a pyarrow Array (the bytes Arrow stores).

    Parameters
    ----------
    part : numpy.ndarray or pyarrow.Array
        One part of :func:`~secure_bloom.values.physical.plain_arrays`.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    result: Hashes = _run_plain("hash", None, part)
    return result


def sbbf_insert_array(bitset: Any, part: Any) -> int:
    """:func:`xxh64_array` fused with :func:`sbbf_insert`; returns the number inserted.

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    part : numpy.ndarray or pyarrow.Array
        One part of :func:`~secure_bloom.values.physical.plain_arrays`.

    Returns
    -------
    int
        The number of values (non-null) inserted or counted.

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    count: int = _run_plain("insert", bitset, part)
    return count


def sbbf_check_array(bitset: Any, part: Any) -> Flags:
    """:func:`xxh64_array` fused with :func:`sbbf_check`.

    Parameters
    ----------
    bitset : writable buffer
        The filter's bitset (``floor(len / 32)`` blocks, words little-endian).
    part : numpy.ndarray or pyarrow.Array
        One part of :func:`~secure_bloom.values.physical.plain_arrays`.

    Returns
    -------
    numpy.ndarray of bool
        One answer per non-null value (False: certainly absent).

    Raises
    ------
    TypeError
        A buffer of the wrong type, or a read-only ``bitset``.
    ValueError
        A size that does not add up (width, offsets, bitset shorter than one block).
    secure_bloom.errors.MalformedInputError
        Offsets or views outside their buffers, or input that changed while being read.
    """
    flags: Flags = _run_plain("check", bitset, part)
    return flags


# ---------------------------------------------------------------------- benchmark

def _median_ns(call: Callable[[bytearray], Any], bitset: Callable[[], bytearray], n: int, repeat: int) -> float:
    """Median ns/value of ``call(bitset())`` over ``repeat`` runs (after one warm-up run)."""
    times = []
    for _ in range(repeat + 1):
        target = bitset()
        start = time.perf_counter()
        call(target)
        times.append(time.perf_counter() - start)
    timed = sorted(times[1:])
    return timed[len(timed) // 2] * 1e9 / n


def _bench(n: int, repeat: int) -> list[dict[str, Any]]:
    """ns/value of fused hash+insert and hash+check, native vs numpy, int64 and strings."""
    rng = np.random.default_rng(42)
    ints = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)
    lengths = rng.integers(20, 29, size=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    text = rng.integers(ord("a"), ord("z") + 1, size=int(offsets[-1]), dtype=np.uint8)
    sources = {"int64": ("fixed", (ints, 8)), "string": ("binary", (offsets, text, 4))}
    backends: dict[str, Any] = {"numpy": False}
    if _native is not None:
        backends["native"] = _native
    rows = []
    for size in (1 << 20, 16 << 20):
        for values, (kind, src) in sources.items():
            row: dict[str, Any] = {"values": values, "filter_bytes": size}
            for name, lib in backends.items():
                full = bytearray(size)
                _run("insert", kind, full, src, None, 0, native=lib)
                insert = _median_ns(lambda b: _run("insert", kind, b, src, None, 0, native=lib),
                                    lambda: bytearray(size), n, repeat)
                check = _median_ns(lambda b: _run("check", kind, b, src, None, 0, native=lib),
                                   lambda: full, n, repeat)
                row[f"{name}_insert_ns"] = round(insert, 2)
                row[f"{name}_check_ns"] = round(check, 2)
            rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m secure_bloom.kernels",
                                     description="Kernel backend information and a micro-benchmark.")
    parser.add_argument("--bench", action="store_true", help="time native vs numpy (ns/value)")
    parser.add_argument("-n", type=int, default=1_000_000, help="values per case (default 1M)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per case; the median is shown")
    args = parser.parse_args(argv)
    for key, value in kernel_info().items():
        print(f"{key}: {value}")
    if args.bench:
        for row in _bench(args.n, args.repeat):
            print("  ".join(f"{k}={v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
