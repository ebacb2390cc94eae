"""Parquet Bloom filter hashing: XXH64, seed 0, over the PLAIN encoding of the physical value.

Spec: Parquet BloomFilter.md, "Technical Approach / Hash Function" and "Hashing of values":

* INT32 / INT64: 4 / 8 bytes little-endian (unsigned logical types use the same bits);
* FLOAT / DOUBLE: the IEEE-754 bits, little-endian (+0.0 and -0.0 differ; NaN payloads matter);
* BYTE_ARRAY: the raw bytes, *without* the 4-byte length prefix of PLAIN pages;
* FIXED_LEN_BYTE_ARRAY: the ``type_length`` raw bytes; INT96: the raw 12 bytes;
* BOOLEAN: never hashed (parquet-java skips it, Arrow refuses).

Two paths, equal bit for bit: :func:`hash_value` (one value, the ``xxhash`` package) and
:func:`hash_values` (many values, :mod:`secure_bloom.kernels`: compiled where built, else the numpy
code of :mod:`secure_bloom.xxh64`). :func:`plain_arrays` hands the kernels values whose
buffers already hold their plain encoding, so they are hashed (or inserted) in one pass. ``hash_values`` accepts a
scalar, a sequence, a numpy array, or a pyarrow Array / ChunkedArray; nulls (``None``, Arrow
nulls) are skipped, never hashed, so the result may be shorter than the input.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from .. import kernels
from ..errors import InvalidValueError
from ..types import PhysicalType
from ..xxh64 import hash_binary_arrays

__all__ = ["plain_bytes", "hash_value", "hash_values", "hash_binary_arrays", "plain_arrays"]


_INT_RANGES = {PhysicalType.INT32: 32, PhysicalType.INT64: 64}


def _resolve(physical_type: PhysicalType | str | int, type_length: int | None) -> tuple[PhysicalType, int | None]:
    ptype = PhysicalType.coerce(physical_type)
    if ptype is PhysicalType.BOOLEAN:
        raise InvalidValueError("BOOLEAN columns have no Bloom filter (Parquet BloomFilter.md: "
                                "writers never hash booleans)")
    if ptype is PhysicalType.INT96:
        type_length = 12
    elif ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        if type_length is None or type_length <= 0:
            raise ValueError("FIXED_LEN_BYTE_ARRAY needs its type_length (a positive width)")
    return ptype, type_length


def _int_bits(value: Any, bits: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidValueError(f"INT{bits} value must be an integer, got {type(value).__name__}")
    v = int(value)
    if not -(1 << (bits - 1)) <= v < (1 << bits):
        raise InvalidValueError(f"{v} does not fit INT{bits} (signed or unsigned)")
    return v & ((1 << bits) - 1)


def plain_bytes(value: Any, physical_type: PhysicalType | str | int, *, type_length: int | None = None) -> bytes:
    """The bytes Parquet hashes for ``value``: its PLAIN encoding without a length prefix.

    Parameters
    ----------
    value : object
        One value in the physical type's Python form.
    physical_type : PhysicalType, str or int
        The column's physical type.
    type_length : int, optional
        FIXED_LEN_BYTE_ARRAY's width.

    Returns
    -------
    bytes
        The plain encoding (little-endian numbers, raw bytes).

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The value does not fit the physical type.
    """
    ptype, width = _resolve(physical_type, type_length)
    if ptype in _INT_RANGES:
        bits = _INT_RANGES[ptype]
        return _int_bits(value, bits).to_bytes(bits // 8, "little")
    if ptype in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InvalidValueError(f"{ptype.name} value must be a number, got {type(value).__name__}")
        if ptype is PhysicalType.FLOAT:
            if isinstance(value, np.floating):
                return _to_float32(np.asarray(value)).tobytes()
            try:
                return struct.pack("<f", value)
            except OverflowError:
                raise InvalidValueError(f"{value!r} does not fit FLOAT (float32)") from None
        return struct.pack("<d", float(value))
    if isinstance(value, str):
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidValueError(f"{ptype.name} string is not encodable as UTF-8 (lone surrogate)") from None
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
    else:
        raise InvalidValueError(f"{ptype.name} value must be bytes or str, got {type(value).__name__}")
    if width is not None and len(raw) != width:
        raise InvalidValueError(f"{ptype.name} value must be exactly {width} bytes, got {len(raw)}")
    return raw


def _to_float32(arr: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """``arr`` as float32; a finite value that would become infinite is refused (as struct does)."""
    with np.errstate(over="ignore"):
        out = arr.astype(np.float32)
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 4:
        bad = np.isinf(out) & np.isfinite(arr)
        if bad.any():
            raise InvalidValueError(f"{arr[bad].flat[0]!r} does not fit FLOAT (float32)")
    return out


def hash_value(value: Any, physical_type: PhysicalType | str | int, *, type_length: int | None = None) -> int:
    """XXH64 (seed 0) of one value's plain encoding, as an unsigned 64-bit int.

    Parameters
    ----------
    value : object
        One value in the physical type's Python form (int, float, bytes, str, Decimal...).
    physical_type : PhysicalType, str or int
        The column's Parquet physical type (``"INT64"``, ``"BYTE_ARRAY"``...).
    type_length : int, optional
        The width of a FIXED_LEN_BYTE_ARRAY column.

    Returns
    -------
    int
        The hash Parquet writers insert for the value.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The value does not fit the physical type (wrong type, out of range, wrong width).

    Examples
    --------
    >>> from secure_bloom import hash_value
    >>> hex(hash_value(42, "INT64"))
    '0xb556806fb6d14353'
    """
    return int(xxhash.xxh64_intdigest(plain_bytes(value, physical_type, type_length=type_length)))


# --------------------------------------------------------------------------------- batch path


def _hash_fixed_ints(arr: npt.NDArray[Any], ptype: PhysicalType) -> npt.NDArray[np.uint64]:
    if ptype is PhysicalType.INT32:
        if arr.dtype in (np.int32, np.uint32):
            return _hash_fixed(4, arr.view(np.uint32))
        if arr.dtype.kind in "iu":
            wide = arr.astype(np.int64)
            if arr.dtype == np.uint64:
                bad = arr > np.uint64(0xFFFFFFFF)
            else:
                bad = (wide < -(1 << 31)) | (wide >= (1 << 32))
            if bad.any():
                raise InvalidValueError(f"{arr[bad][0]} does not fit INT32 (signed or unsigned)")
            return _hash_fixed(4, wide.astype(np.uint32))
    else:
        if arr.dtype in (np.int64, np.uint64):
            return _hash_fixed(8, arr.view(np.uint64))
        if arr.dtype.kind in "iu":
            return _hash_fixed(8, arr.astype(np.int64).view(np.uint64))
    raise InvalidValueError(f"{ptype.name} values must be integers, got dtype {arr.dtype}")


def _hash_numpy(arr: npt.NDArray[Any], ptype: PhysicalType, width: int | None) -> npt.NDArray[np.uint64]:
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype.kind == "S":
        # numpy "S" arrays pad with NUL and drop trailing NULs on read: only a fixed width that
        # equals the itemsize is unambiguous.
        if width is not None and arr.dtype.itemsize == width:
            return _hash_rows(arr.view(np.uint8).reshape(-1, width))
        raise InvalidValueError("numpy bytes ('S') arrays cannot hold trailing NUL bytes; pass a list of "
                                "bytes or a pyarrow binary array")
    if arr.dtype == object or arr.dtype.kind == "U":
        return _hash_sequence(arr.tolist(), ptype, width)
    if ptype in _INT_RANGES:
        return _hash_fixed_ints(arr, ptype)
    if ptype is PhysicalType.FLOAT:
        if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
            raise InvalidValueError(f"FLOAT values must be numbers, got dtype {arr.dtype}")
        return _hash_fixed(4, _to_float32(arr).view(np.uint32))
    if ptype is PhysicalType.DOUBLE:
        if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
            raise InvalidValueError(f"DOUBLE values must be numbers, got dtype {arr.dtype}")
        return _hash_fixed(8, arr.astype(np.float64).view(np.uint64))
    if width is not None and arr.dtype == np.uint8:
        raise InvalidValueError(f"pass {ptype.name} values as a (n, {width}) uint8 matrix or bytes")
    raise InvalidValueError(f"cannot hash numpy dtype {arr.dtype} as {ptype.name}")


def _hash_sequence(values: Iterable[Any], ptype: PhysicalType, width: int | None) -> npt.NDArray[np.uint64]:
    present = [v for v in values if v is not None]
    kinds = set(map(type, present))
    if ptype in _INT_RANGES and kinds <= {int}:
        fast = _int_list(present, ptype)
        if fast is not None:
            return fast
    if ptype is PhysicalType.BYTE_ARRAY and kinds <= {str, bytes}:
        fast = _binary_list(present)
        if fast is not None:
            return fast
    if ptype in _INT_RANGES:
        bits = _INT_RANGES[ptype]
        ints = [_int_bits(v, bits) for v in present]
        if bits == 64:
            return _hash_fixed(8, np.array(ints, dtype=np.uint64))
        return _hash_fixed(4, np.array(ints, dtype=np.uint32))
    if ptype in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        for v in present:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise InvalidValueError(f"{ptype.name} value must be a number, got {type(v).__name__}")
        dtype = np.float32 if ptype is PhysicalType.FLOAT else np.float64
        try:
            with np.errstate(over="ignore"):
                arr = np.array(present, dtype=dtype)
        except OverflowError:
            raise InvalidValueError(f"a value does not fit {ptype.name}") from None
        if ptype is PhysicalType.FLOAT and np.isinf(arr).any():
            for v in present:  # refuse finite values beyond float32, as plain_bytes does
                plain_bytes(v, ptype)
        return _hash_numpy(arr, ptype, width)
    raw = [plain_bytes(v, ptype, type_length=width) for v in present]
    if width is not None:
        mat = np.frombuffer(b"".join(raw), dtype=np.uint8).reshape(len(raw), width)
        return _hash_rows(mat)
    lengths = np.fromiter((len(r) for r in raw), dtype=np.int64, count=len(raw))
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return kernels.xxh64_binary(offsets, np.frombuffer(b"".join(raw), dtype=np.uint8), 8)


def _hash_fixed(width: int, arr: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """XXH64 of each ``width``-byte item of a 1-D array (the kernels: native or numpy)."""
    return kernels.xxh64_fixed(np.ascontiguousarray(arr), width)


def _hash_rows(rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """XXH64 of each row of an (n, w) uint8 matrix."""
    return kernels.xxh64_fixed(np.ascontiguousarray(rows), rows.shape[1])


def _int_list(present: list[int], ptype: PhysicalType) -> npt.NDArray[np.uint64] | None:
    """Python ints converted by numpy in C; None (use the per-value path) if one exceeds int64."""
    try:
        arr = np.array(present, dtype=np.int64)
    except OverflowError:
        return None
    return _hash_fixed_ints(arr, ptype)


def _binary_list(present: list[str | bytes]) -> npt.NDArray[np.uint64] | None:
    """str (UTF-8) and bytes converted by pyarrow in C; None (per-value path, which raises the
    library's error) if pyarrow refuses one, e.g. a lone surrogate."""
    import pyarrow as pa

    from .arrow import hash_arrow

    try:
        arr = pa.array(present, type=pa.large_binary())
    except (pa.ArrowException, UnicodeError, TypeError, ValueError):
        return None
    return hash_arrow(arr, PhysicalType.BYTE_ARRAY, None)


#: numpy dtypes whose items are a column's plain encoding, by physical type (little-endian hosts).
_PLAIN_DTYPES = {PhysicalType.INT32: ("<i4", "<u4"), PhysicalType.INT64: ("<i8", "<u8"),
                 PhysicalType.FLOAT: ("<f4",), PhysicalType.DOUBLE: ("<f8",)}


def plain_arrays(values: Any, physical_type: PhysicalType | str | int, *,
                 type_length: int | None = None) -> list[Any] | None:
    """``values`` as arrays whose buffers hold exactly the bytes Parquet hashes, for the kernels
    (:func:`secure_bloom.kernels.xxh64_array` and the fused insert / check), or None when they
    need a conversion first (then :func:`hash_values` converts and checks them).

    Plain: a pyarrow Array / ChunkedArray of a type :func:`secure_bloom.values.arrow.is_plain`
    accepts (dictionaries decoded; nulls stay in the validity bitmap and are skipped); a 1-D numpy
    array of the column's own width (int32 / uint32 for INT32, int64 / uint64 for INT64, float32,
    float64); an ``(n, w)`` uint8 matrix for a fixed width ``w``; a list or tuple that pyarrow
    converts (in C) to int64 for INT64, or to strings or binaries for BYTE_ARRAY where the compiled
    kernels are missing (``None`` as null; with them, :func:`hash_values` hashes str and bytes
    objects in place: ``secure_bloom.kernels.xxh64_objects``).

    Parameters
    ----------
    values : object
        The values.
    physical_type : PhysicalType, str or int
        The column's physical type.
    type_length : int, optional
        FIXED_LEN_BYTE_ARRAY's width.

    Returns
    -------
    list or None
        Arrays the kernels hash as they are, or None.

    Raises
    ------
    None
        Nothing of its own: what it cannot take directly is None.
    """
    ptype, width = _resolve(physical_type, type_length)
    if _is_arrow(values):
        from .arrow import plain_chunks

        return plain_chunks(values, ptype, width)
    if isinstance(values, np.ndarray):
        if width is not None:
            ok = values.ndim == 2 and values.dtype == np.uint8 and values.shape[1] == width
        else:
            ok = values.ndim == 1 and values.dtype.str in _PLAIN_DTYPES.get(ptype, ())
        return [values] if ok and sys.byteorder == "little" else None
    if isinstance(values, (list, tuple)) and ptype is PhysicalType.BYTE_ARRAY and kernels.BACKEND == "native":
        return None  # hash_values hashes str / bytes objects in place (kernels.xxh64_objects)
    if isinstance(values, (list, tuple)) and ptype in (PhysicalType.BYTE_ARRAY, PhysicalType.INT64):
        import pyarrow as pa

        from .arrow import plain_chunks

        try:  # pyarrow infers the type in C: str -> string, bytes -> binary, int -> int64
            arr = pa.array(values)
        except (pa.ArrowException, OverflowError, UnicodeError, TypeError, ValueError):
            return None  # e.g. a lone surrogate or an int beyond int64: hash_values decides
        return plain_chunks(arr, ptype, width)
    return None


def hash_values(values: Any, physical_type: PhysicalType | str | int, *,
                type_length: int | None = None) -> npt.NDArray[np.uint64]:
    """XXH64 of many values (nulls skipped) as a ``uint64`` array; equal to :func:`hash_value`.

    Parameters
    ----------
    values : scalar, sequence, numpy array or pyarrow array
        A numpy array (an ``(n, w)`` uint8 matrix for fixed-width binary), or a pyarrow Array /
        ChunkedArray (see :mod:`secure_bloom.values.arrow`), or Python values.
    physical_type : PhysicalType, str or int
        The column's Parquet physical type (``"INT64"``, ``"BYTE_ARRAY"``...).
    type_length : int, optional
        The width of a FIXED_LEN_BYTE_ARRAY column.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value, in order.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        A value does not fit the physical type.
    """
    ptype, width = _resolve(physical_type, type_length)
    if ptype is PhysicalType.BYTE_ARRAY and type(values) in (list, tuple):
        hashed = kernels.xxh64_objects(values)
        if hashed is not None:
            return hashed
    if kernels.BACKEND == "native" and isinstance(values, (list, tuple, np.ndarray)):
        parts = plain_arrays(values, ptype, type_length=width)
        if parts is not None:
            return kernels.concat_parts([kernels.xxh64_array(part) for part in parts], np.uint64)
    if _is_arrow(values):
        from .arrow import hash_arrow  # pyarrow is imported only when Arrow input arrives

        return hash_arrow(values, ptype, width)
    if isinstance(values, np.ndarray):
        if width is not None and values.ndim == 2 and values.dtype == np.uint8:
            if values.shape[1] != width:
                raise InvalidValueError(f"{ptype.name} rows must be {width} bytes, got {values.shape[1]}")
            return _hash_rows(values)
        return _hash_numpy(values, ptype, width)
    if isinstance(values, (str, bytes, bytearray, memoryview, int, float, np.generic)) or values is None:
        return _hash_sequence([values], ptype, width)
    if isinstance(values, (Sequence, Iterable)):
        return _hash_sequence(values, ptype, width)
    return _hash_sequence([values], ptype, width)


def _is_arrow(values: Any) -> bool:
    mod = type(values).__module__
    return mod.startswith("pyarrow") and type(values).__name__ != "Table"
