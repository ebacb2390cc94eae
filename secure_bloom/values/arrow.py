"""pyarrow arrays: their stored form, and their hashes straight from their buffers.

Spec: Parquet BloomFilter.md "Hashing of values" plus LogicalTypes.md for how Arrow types land on
physical types (what pyarrow and Spark write):

* int8/16/32, uint8/16/32, date32, time32 -> INT32 (sign- or zero-extended to 32 bits);
* int64, uint64, timestamp[*], date64, time64, duration -> INT64 (the stored integer);
* float32 -> FLOAT, float64 -> DOUBLE;
* string / binary / ``large_*`` / ``*_view`` -> BYTE_ARRAY (raw bytes, no length prefix);
* fixed_size_binary(w) -> FIXED_LEN_BYTE_ARRAY(w); timestamp[*] -> legacy INT96 when asked;
* decimal128/256 -> INT32, INT64 (unscaled value) or big-endian two's complement FLBA of the
  column's width / minimal BYTE_ARRAY.

Dictionary arrays are decoded when hashed; nulls are dropped (never hashed). :func:`stored_form`
keeps a dictionary array dictionary-encoded (its dictionary converted): a writer may take a
chunk's statistics from the dictionary rather than from the values.

What a file reader hands back is not always the stored form: :func:`leaf_values` finds a leaf
in the array of its top-level field and normalises it (extension types to storage, FLOAT16 to its
2 little-endian bytes, the column's own time unit, date64 to date32); :func:`int96_from_reads`
rebuilds the 12 stored INT96 bytes from a nanosecond and a second read of the same column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .. import kernels
from ..errors import InvalidValueError, UnsupportedParquetFeatureError
from ..spec import NANOS_PER_DAY, NANOS_PER_SECOND, SECONDS_PER_DAY, UNITS_PER_SECOND
from ..types import PhysicalType
from .column_type import ColumnType
from .logical import int96_rows, minimal_twos_complement

__all__ = ["hash_arrow", "is_plain", "plain_chunks", "leaf_array", "leaf_values", "stored_form", "in_column_unit", "timestamps_in_unit",
           "int96_from_reads", "float16_bytes", "ARROW_UNIT"]

#: Parquet TIMESTAMP / TIME units -> Arrow's unit names.
ARROW_UNIT = {"millis": "ms", "micros": "us", "nanos": "ns"}
_ARROW_UNITS_PER_SECOND = {"s": 1, **{ARROW_UNIT[unit]: per for unit, per in UNITS_PER_SECOND.items()}}


def is_plain(typ: pa.DataType, ptype: PhysicalType, width: int | None) -> bool:
    """Whether an Arrow array of ``typ`` stores each value's plain encoding for a ``ptype``
    column as it is (so the kernels hash its buffers directly): 32-bit integers, date32 and
    time32 for INT32; 64-bit integers, timestamps, date64, time64 and durations for INT64;
    float32 / float64 for FLOAT / DOUBLE; binary-like types for BYTE_ARRAY; fixed_size_binary of
    the column's width for FIXED_LEN_BYTE_ARRAY and INT96.

    Parameters
    ----------
    typ : pyarrow.DataType
        The array's type.
    ptype : PhysicalType
        The column's physical type.
    width : int or None
        FIXED_LEN_BYTE_ARRAY's width (12 for INT96).

    Returns
    -------
    bool
        Whether the kernels can hash its buffers as they are.

    Raises
    ------
    None
        Nothing of its own.
    """
    if ptype is PhysicalType.BYTE_ARRAY:
        return _is_binary_like(typ)
    if ptype in (PhysicalType.FIXED_LEN_BYTE_ARRAY, PhysicalType.INT96):
        return bool(pa.types.is_fixed_size_binary(typ) and typ.byte_width == width)
    if ptype is PhysicalType.FLOAT:
        return bool(pa.types.is_float32(typ))
    if ptype is PhysicalType.DOUBLE:
        return bool(pa.types.is_float64(typ))
    bits = {PhysicalType.INT32: 32, PhysicalType.INT64: 64}.get(ptype)
    if bits is None or pa.types.is_decimal(typ) or pa.types.is_floating(typ):
        return False
    return bool((pa.types.is_integer(typ) or pa.types.is_temporal(typ)) and typ.bit_width == bits)


def plain_chunks(values: Any, ptype: PhysicalType, width: int | None) -> list[pa.Array] | None:
    """The chunks of a pyarrow Array / ChunkedArray (dictionaries decoded, all-null chunks left
    out) if every chunk :func:`is_plain`, else None.

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        The values.
    ptype : PhysicalType
        The column's physical type.
    width : int or None
        FIXED_LEN_BYTE_ARRAY's width (12 for INT96).

    Returns
    -------
    list of pyarrow.Array or None
        The plain chunks, or None.

    Raises
    ------
    None
        Nothing of its own.
    """
    if isinstance(values, pa.ChunkedArray):
        chunks = list(values.chunks)
    elif isinstance(values, pa.Array):
        chunks = [values]
    else:
        return None
    out = []
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_decode()
        if not is_plain(chunk.type, ptype, width):
            return None
        if chunk.null_count < len(chunk):
            out.append(chunk)
    return out


def hash_arrow(values: Any, ptype: PhysicalType, width: int | None) -> npt.NDArray[np.uint64]:
    """XXH64 of every non-null value of a pyarrow Array or ChunkedArray.

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        The values.
    ptype : PhysicalType
        The column's physical type.
    width : int or None
        FIXED_LEN_BYTE_ARRAY's width (12 for INT96).

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The array's type does not fit the column.
    """
    if kernels.BACKEND == "native":
        chunks = plain_chunks(values, ptype, width)
        if chunks is not None:
            return kernels.concat_parts([kernels.xxh64_array(chunk) for chunk in chunks], np.uint64)
    if isinstance(values, pa.ChunkedArray):
        return kernels.concat_parts([hash_arrow(chunk, ptype, width) for chunk in values.chunks], np.uint64)
    if not isinstance(values, pa.Array):
        raise InvalidValueError(f"expected a pyarrow Array, got {type(values).__name__}")
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_string_view(values.type) or pa.types.is_binary_view(values.type):
        values = values.cast(pa.large_binary())  # drop_null has no kernel for view types
    if values.null_count:
        values = pc.drop_null(values)
    typ = values.type
    if pa.types.is_decimal(typ):
        return _hash_decimal(values, ptype, width)
    if ptype in (PhysicalType.BYTE_ARRAY,) and _is_binary_like(typ):
        return _hash_binary(values)
    if ptype is PhysicalType.INT96 and pa.types.is_timestamp(typ):
        return _hash_rows(_int96_matrix(values))
    if ptype in (PhysicalType.FIXED_LEN_BYTE_ARRAY, PhysicalType.INT96):
        assert width is not None  # _resolve gives FIXED_LEN_BYTE_ARRAY and INT96 their width
        if pa.types.is_fixed_size_binary(typ):
            if typ.byte_width != width:
                raise InvalidValueError(f"{ptype.name}({width}) column given fixed_size_binary({typ.byte_width})")
            return _hash_rows(_fixed_matrix(values, width))
        if _is_binary_like(typ):
            return _hash_fixed_from_binary(values, ptype, width)
    if ptype is PhysicalType.INT32 and (pa.types.is_integer(typ) or pa.types.is_date32(typ)
                                        or pa.types.is_time32(typ)):
        if pa.types.is_uint64(typ):  # a cast to int64 would raise pyarrow's error above 2^63
            arr = values.to_numpy(zero_copy_only=False)
            if arr.size and arr.max() >= (1 << 32):
                raise InvalidValueError("value does not fit INT32")
        else:
            ints = values.cast(pa.int64()) if pa.types.is_integer(typ) else values.cast(pa.int32())
            arr = ints.to_numpy(zero_copy_only=False)
        if typ.bit_width == 64 or typ == pa.uint32():
            lo, hi = -(1 << 31), (1 << 32)
            if arr.size and (arr.min() < lo or arr.max() >= hi):
                raise InvalidValueError("value does not fit INT32")
        return _hash_fixed(4, arr.astype(np.int64).astype(np.uint32))
    if ptype is PhysicalType.INT64 and (pa.types.is_integer(typ) or pa.types.is_temporal(typ)):
        if pa.types.is_uint64(typ):
            arr = values.to_numpy(zero_copy_only=False).view(np.uint64)
        elif pa.types.is_integer(typ):
            arr = values.cast(pa.int64()).to_numpy(zero_copy_only=False).view(np.uint64)
        else:
            arr = values.view(pa.int64()) if typ.bit_width == 64 else values.cast(pa.int64())
            arr = arr.to_numpy(zero_copy_only=False).view(np.uint64)
        return _hash_fixed(8, arr)
    if ptype is PhysicalType.FLOAT and pa.types.is_floating(typ):
        return _hash_fixed(4, values.cast(pa.float32()).to_numpy(zero_copy_only=False).view(np.uint32))
    if ptype is PhysicalType.DOUBLE and pa.types.is_floating(typ):
        return _hash_fixed(8, values.cast(pa.float64()).to_numpy(zero_copy_only=False).view(np.uint64))
    raise InvalidValueError(f"cannot hash Arrow type {typ} as {ptype.name}")


def _is_binary_like(typ: pa.DataType) -> bool:
    return bool(pa.types.is_string(typ) or pa.types.is_binary(typ) or pa.types.is_large_string(typ)
                or pa.types.is_large_binary(typ) or pa.types.is_string_view(typ)
                or pa.types.is_binary_view(typ))


def _binary_buffers(values: pa.Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    typ = values.type
    if pa.types.is_string_view(typ) or pa.types.is_binary_view(typ):
        values = values.cast(pa.large_binary())
        typ = values.type
    large = pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)
    _, offsets_buf, data_buf = values.buffers()
    off_dtype = np.int64 if large else np.int32
    raw_offsets = np.frombuffer(offsets_buf, dtype=off_dtype, count=len(values) + 1 + values.offset)
    offsets: npt.NDArray[np.int64] = raw_offsets[values.offset:].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    return offsets, data


def _hash_binary(values: pa.Array) -> npt.NDArray[np.uint64]:
    offsets, data = _binary_buffers(values)
    return kernels.xxh64_binary(offsets, data, 8)


def _hash_fixed(width: int, arr: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """XXH64 of each ``width``-byte item of a 1-D array."""
    return kernels.xxh64_fixed(np.ascontiguousarray(arr), width)


def _hash_rows(rows: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """XXH64 of each row of an (n, w) uint8 matrix."""
    return kernels.xxh64_fixed(np.ascontiguousarray(rows), rows.shape[1])


def _hash_fixed_from_binary(values: pa.Array, ptype: PhysicalType, width: int | None) -> npt.NDArray[np.uint64]:
    offsets, data = _binary_buffers(values)
    lengths = np.diff(offsets)
    if lengths.size and (lengths != width).any():
        raise InvalidValueError(f"{ptype.name}({width}) values must all be {width} bytes")
    starts = offsets[:-1]
    assert width is not None
    return _hash_rows(data[starts[:, None] + np.arange(width)])


def _int96_matrix(values: pa.Array) -> npt.NDArray[np.uint8]:
    """Legacy INT96 timestamps (Spark's default) from the array's own unit, in integer arithmetic:
    a cast to nanoseconds would overflow outside 1677-2262 (0001-01-01, 9999-12-31)."""
    per_second = _ARROW_UNITS_PER_SECOND[values.type.unit]
    counts = values.view(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)
    days, units_of_day = np.divmod(counts, SECONDS_PER_DAY * per_second)  # floor: of-day >= 0
    nanos_of_day = units_of_day.astype(np.uint64) * np.uint64(NANOS_PER_SECOND // per_second)
    return int96_rows(days, nanos_of_day)


def _fixed_matrix(values: pa.Array, width: int) -> npt.NDArray[np.uint8]:
    data_buf = values.buffers()[1]
    raw = np.frombuffer(data_buf, dtype=np.uint8)
    start = values.offset * width
    return raw[start:start + len(values) * width].reshape(len(values), width)


def _hash_decimal(values: pa.Array, ptype: PhysicalType, width: int | None) -> npt.NDArray[np.uint64]:
    typ = values.type
    nbytes = typ.byte_width  # 4, 8, 16 or 32 (decimal32 .. decimal256): little-endian two's complement
    le = _fixed_matrix(values, nbytes)
    if ptype is PhysicalType.INT64 and nbytes < 8:
        le = _sign_extend(le, 8)
    if ptype is PhysicalType.INT32:
        low = np.ascontiguousarray(le[:, :4]).view("<i4").reshape(-1)
        _check_sign_extension(le, 4)
        return _hash_fixed(4, low.view(np.uint32))
    if ptype is PhysicalType.INT64:
        _check_sign_extension(le, 8)
        return _hash_fixed(8, np.ascontiguousarray(le[:, :8]).view("<u8").reshape(-1).astype(np.uint64))
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        assert width is not None
        if width > nbytes:
            le = _sign_extend(le, width)
        else:
            _check_sign_extension(le, width)
        return _hash_rows(le[:, :width][:, ::-1])
    if ptype is PhysicalType.BYTE_ARRAY:
        # Minimal two's complement big-endian bytes, as Java BigInteger.toByteArray().
        raw = [minimal_twos_complement(int.from_bytes(bytes(row), "little", signed=True)) for row in le]
        return _hash_binary(pa.array(raw, type=pa.large_binary()))
    raise InvalidValueError(f"cannot hash a decimal as {ptype.name}")


def _sign_extend(le: npt.NDArray[np.uint8], width: int) -> npt.NDArray[np.uint8]:
    """Widen little-endian two's complement rows to ``width`` bytes."""
    sign = np.where(le[:, -1:] >= 0x80, 0xFF, 0x00).astype(np.uint8)
    return np.hstack([le, np.repeat(sign, width - le.shape[1], axis=1)])


def _check_sign_extension(le: npt.NDArray[np.uint8], keep: int) -> None:
    """The bytes dropped when narrowing must be pure sign extension, else the value overflows."""
    if le.shape[0] == 0 or keep >= le.shape[1]:
        return
    sign = np.where(le[:, keep - 1] >= 0x80, 0xFF, 0x00).astype(np.uint8)
    if (le[:, keep:] != sign[:, None]).any():
        raise InvalidValueError(f"decimal value does not fit {keep} bytes")


# ------------------------------------------------------------------- stored form of what was read


def _fixed(raw: npt.NDArray[np.uint8], width: int) -> pa.Array:
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), raw.shape[0],
                                                [None, pa.py_buffer(np.ascontiguousarray(raw).tobytes())])


def int96_from_reads(nanos: pa.Array, seconds: pa.Array) -> pa.Array:
    """The 12 stored INT96 bytes of each value, from two pyarrow reads of the same column.

    pyarrow turns INT96 into ``(julian_day - 2440588) * units_per_day + nanos_of_day / nanos_per_unit``
    in 64-bit wrap-around arithmetic: in seconds that is exact for every Julian day, in nanoseconds
    it is exact modulo 2^64 (it wraps outside 1677-2262). The day comes from the seconds, the
    nanoseconds of the day from the difference, so the bytes are the stored ones whenever the
    nanoseconds of the day are below one day (as every writer stores them). Nulls dropped.

    Parameters
    ----------
    nanos : pyarrow.Array
        The column read as timestamp[ns].
    seconds : pyarrow.Array
        The same column read as timestamp[s].

    Returns
    -------
    pyarrow.Array
        fixed_size_binary(12): the stored bytes.

    Raises
    ------
    ValueError
        The two reads hold different numbers of values.
    """
    secs = pc.drop_null(seconds).view(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)
    wrapped = pc.drop_null(nanos).view(pa.int64()).to_numpy(zero_copy_only=False).view(np.uint64)
    days = np.floor_divide(secs, SECONDS_PER_DAY)
    with np.errstate(over="ignore"):
        of_day = wrapped - days.view(np.uint64) * np.uint64(NANOS_PER_DAY)
    return _fixed(int96_rows(days, of_day), 12)


def float16_bytes(values: pa.Array) -> pa.Array:
    """halffloat -> its 2 little-endian bytes (FLOAT16 is FIXED_LEN_BYTE_ARRAY(2)). Nulls dropped.

    Parameters
    ----------
    values : pyarrow.Array
        halffloat values.

    Returns
    -------
    pyarrow.Array
        fixed_size_binary(2).

    Raises
    ------
    None
        Nothing of its own.
    """
    halves = pc.drop_null(values).to_numpy(zero_copy_only=False)
    return _fixed(np.asarray(halves, dtype="<f2").view(np.uint8).reshape(-1, 2), 2)


def timestamps_in_unit(values: Any, unit: str) -> Any:
    """A timestamp array (Array or ChunkedArray) cast to the Arrow ``unit`` (``"ms"``, ``"us"``,
    ``"ns"``) if it has another one, zone kept; anything else unchanged.

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        The values.
    unit : str
        ``"ms"``, ``"us"`` or ``"ns"``.

    Returns
    -------
    pyarrow.Array or pyarrow.ChunkedArray
        The values in ``unit``.

    Raises
    ------
    None
        Nothing of its own.
    """
    typ = values.type
    if pa.types.is_timestamp(typ) and typ.unit != unit:
        return values.cast(pa.timestamp(unit, tz=typ.tz))
    return values


def in_column_unit(values: pa.Array, column: ColumnType) -> pa.Array:
    """pyarrow restores the Arrow type of its schema (timestamp[s], time32[s], date64), which may
    differ from the unit the file stores: cast back to the stored unit before hashing.

    Parameters
    ----------
    values : pyarrow.Array
        A leaf array, as read.
    column : ColumnType
        The leaf column.

    Returns
    -------
    pyarrow.Array
        The values in the stored unit.

    Raises
    ------
    None
        Nothing of its own.
    """
    typ = values.type
    unit = ARROW_UNIT.get(column.time_unit or "")
    if pa.types.is_timestamp(typ) and unit and column.physical_type is PhysicalType.INT64:
        return timestamps_in_unit(values, unit)
    if (pa.types.is_time32(typ) or pa.types.is_time64(typ)) and unit and typ.unit != unit:
        return values.cast(pa.time32(unit) if unit == "ms" else pa.time64(unit))
    if pa.types.is_date64(typ):
        return values.cast(pa.date32())
    return values


def stored_form(values: pa.Array, column: ColumnType) -> pa.Array:
    """A leaf array as the column stores it, ready for :func:`hash_arrow` (not for INT96 columns:
    see :func:`int96_from_reads`). A dictionary array stays one, its dictionary in stored form:
    the same values, and the dictionary a writer may have taken the chunk's bounds from.

    Parameters
    ----------
    values : pyarrow.Array
        A leaf array, as read.
    column : ColumnType
        The leaf column.

    Returns
    -------
    pyarrow.Array
        The values as the column stores them: an extension type's storage, view types as
        ``large_binary``, float16 as its two bytes, times and timestamps in the stored unit,
        date64 as date32.

    Raises
    ------
    pyarrow.ArrowInvalid
        A cast to the stored unit would lose data (never for values read from the column: they
        go back to the unit they were stored in).
    """

    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    if pa.types.is_dictionary(values.type):
        return pa.DictionaryArray.from_arrays(values.indices, stored_form(values.dictionary, column))
    if pa.types.is_string_view(values.type) or pa.types.is_binary_view(values.type):
        values = values.cast(pa.large_binary())  # count_distinct has no kernel for view types
    if pa.types.is_float16(values.type):
        return float16_bytes(values)
    return in_column_unit(values, column)


def leaf_array(array: pa.ChunkedArray | pa.Array, column: ColumnType) -> pa.Array:
    """The leaf ``column`` inside the array of its top-level field, as read (not normalised).

    Struct fields are followed by name (parent nulls applied); a standard three-level list
    (``<name>.list.element``) is flattened. Other nesting raises
    :class:`UnsupportedParquetFeatureError`.

    Parameters
    ----------
    array : pyarrow.Array or pyarrow.ChunkedArray
        The top-level field's array.
    column : ColumnType
        The leaf column.

    Returns
    -------
    pyarrow.Array
        The leaf's values, as read.

    Raises
    ------
    secure_bloom.errors.UnsupportedParquetFeatureError
        A nesting or type the reader does not take apart.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    parts = list(column.path_in_schema[1:])
    while parts:
        typ = array.type
        if pa.types.is_struct(typ):
            index = typ.get_field_index(parts[0])
            if index < 0:
                break
            array = array.flatten()[index]
            parts.pop(0)
        elif (pa.types.is_list(typ) or pa.types.is_large_list(typ)) and len(parts) >= 2 and parts[0] == "list":
            array = array.flatten()
            parts = parts[2:] if parts[1] in ("element", "item") else parts[1:]
        else:
            break
    if parts:
        raise UnsupportedParquetFeatureError(
            f"column {column.path!r}: nesting of Arrow type {array.type} is not supported for attach")
    if pa.types.is_nested(array.type):
        raise UnsupportedParquetFeatureError(f"column {column.path!r} is not a primitive leaf in Arrow ({array.type})")
    return array


def leaf_values(array: pa.ChunkedArray | pa.Array, column: ColumnType) -> pa.Array:
    """The leaf values of ``column`` from the array of its top-level field, in stored form
    (:func:`leaf_array`, then :func:`stored_form`). INT96 columns need two reads:
    :func:`int96_from_reads`.

    Parameters
    ----------
    array : pyarrow.Array or pyarrow.ChunkedArray
        The top-level field's array.
    column : ColumnType
        The leaf column.

    Returns
    -------
    pyarrow.Array
        The leaf's values in stored form.

    Raises
    ------
    secure_bloom.errors.UnsupportedParquetFeatureError
        A nesting or type the reader does not take apart.
    """
    return stored_form(leaf_array(array, column), column)
