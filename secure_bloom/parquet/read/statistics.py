"""Column chunk statistics as bounds a pruner can trust, and filter literals in the same order.

Spec: parquet.thrift ``Statistics`` and ``ColumnOrder``. Only what is safe is used:

* ``min_value`` / ``max_value`` only when the footer declares the column's ``TYPE_ORDER``
  (``column_orders``), compared in that order: signed integers, unsigned for UINT logical types,
  IEEE order for FLOAT/DOUBLE (a NaN bound is dropped), unsigned lexicographic bytes for
  BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY strings and binary, signed big-endian integers for DECIMAL.
  An inexact (truncated) bound is still a bound: ``min_value`` <= every value <= ``max_value``.
* the deprecated ``min`` / ``max`` only for signed INT32 / INT64 and BOOLEAN (their old signed
  order is the right one there; for bytes and unsigned integers it is not).
* INT96, FLOAT16, INTERVAL and other types: no bounds (the row group is kept).

Nothing here decides to skip: :mod:`.prune` does, and keeps a row group whenever a bound or a
literal is missing or doubtful.
"""

from __future__ import annotations

import math
import struct
from typing import Any, NamedTuple

import pyarrow as pa

from ...types import PhysicalType
from ...values.arrow import stored_form
from ..file.schema import ColumnInfo

__all__ = ["Bounds", "stat_kind", "chunk_bounds", "literal_keys", "arrow_type_of"]

_BYTES_LOGICAL = (None, "STRING", "ENUM", "JSON", "BSON", "UUID")


class Bounds(NamedTuple):
    """What a chunk's statistics guarantee (immutable; a named tuple, made once per row group
    and column a lookup judges: a third of a frozen dataclass's cost). ``low``/``high``: bounds of the non-null values in the
    column's order (None: unknown); ``exact``: both are values that occur; ``null_count`` (None:
    unknown) of ``num_values`` leaf entries; ``all_null`` only for a top-level, non-repeated column.
    Made by :func:`chunk_bounds`.

    Parameters
    ----------
    low, high : object, optional
        The bounds as plain Python keys in the column's order (:func:`stat_kind`).
    exact : bool, default False
        Both are values that occur (``min_value`` / ``max_value``, not the deprecated ``min`` / ``max``).
    null_count : int, optional
        Nulls in the chunk.
    num_values : int, optional
        Leaf entries in the chunk.
    top_level : bool, default False
        The column is top-level and not repeated (so ``null_count == num_values`` means every row is null).
    all_null : bool, default False
        Every value of the (top-level) chunk is null: ``top_level`` and ``null_count ==
        num_values`` (:func:`chunk_bounds` computes it once; False only keeps row groups).
    """

    low: Any = None
    high: Any = None
    exact: bool = False
    null_count: int | None = None
    num_values: int | None = None
    top_level: bool = False
    all_null: bool = False


#: :func:`chunk_bounds` without a ``kind``: it finds it.
_UNKNOWN = "?"


def stat_kind(column: ColumnInfo) -> str | None:
    """How the column's statistics compare: int, uint, float, bool, bytes, decimal_bytes, or None
    (no usable order).

    Parameters
    ----------
    column : ColumnInfo
        The leaf column.

    Returns
    -------
    str or None
        The kind.

    Raises
    ------
    None
        Nothing of its own.
    """
    ptype, logical = column.physical_type, column.logical_type
    if ptype in (PhysicalType.INT32, PhysicalType.INT64):
        if logical == "INTEGER" and column.int_signed is False:
            return "uint"
        if logical in (None, "INTEGER", "DECIMAL", "DATE", "TIME", "TIMESTAMP"):
            return "int"
        return None
    if ptype in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        return "float"
    if ptype is PhysicalType.BOOLEAN:
        return "bool"
    if ptype in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
        if logical == "DECIMAL":
            return "decimal_bytes"
        if logical in _BYTES_LOGICAL:
            return "bytes"
    return None


def _decode(raw: bytes | None, column: ColumnInfo, kind: str) -> Any:
    if raw is None:
        return None
    raw = bytes(raw)
    ptype = column.physical_type
    if kind in ("int", "uint"):
        width = 4 if ptype is PhysicalType.INT32 else 8
        if len(raw) != width:
            return None
        code = {4: "i", 8: "q"}[width]
        return struct.unpack("<" + (code.upper() if kind == "uint" else code), raw)[0]
    if kind == "float":
        width = 4 if ptype is PhysicalType.FLOAT else 8
        if len(raw) != width:
            return None
        value = struct.unpack("<f" if width == 4 else "<d", raw)[0]
        return None if math.isnan(value) else value
    if kind == "bool":
        return None if len(raw) != 1 else raw[0] != 0
    if kind == "decimal_bytes":
        return int.from_bytes(raw, "big", signed=True) if raw else None
    return raw


def chunk_bounds(meta: Any, column: ColumnInfo, type_order: bool, kind: str | None = _UNKNOWN) -> Bounds:
    """The bounds of one chunk from its ColumnMetaData (decrypted if it was encrypted); ``kind``:
    :func:`stat_kind` of ``column`` when the caller knows it.

    Parameters
    ----------
    meta : ColumnMetaData
        The chunk's metadata.
    column : ColumnInfo
        The leaf column.
    type_order : bool
        Use the column order the file declares.
    kind : str, optional
        The column's :func:`stat_kind`.

    Returns
    -------
    Bounds
        Min, max, null count; unusable bounds dropped.

    Raises
    ------
    None
        Nothing of its own.
    """
    if kind is _UNKNOWN:
        kind = stat_kind(column)
    stats = getattr(meta, "statistics", None)
    top = len(column.path_in_schema) == 1 and column.repetition != "REPEATED"
    num_values = getattr(meta, "num_values", None)
    if stats is None:
        return Bounds(num_values=num_values, top_level=top)  # no null count: never all null
    null_count = stats.null_count if stats.null_count is not None and stats.null_count >= 0 else None
    low = high = None
    exact = False
    if kind is not None:
        if type_order and (stats.min_value is not None or stats.max_value is not None):
            low, high = _decode(stats.min_value, column, kind), _decode(stats.max_value, column, kind)
            exact = kind != "bytes" or (stats.is_min_value_exact is True and stats.is_max_value_exact is True)
        elif kind in ("int", "bool"):
            low, high = _decode(stats.min, column, kind), _decode(stats.max, column, kind)
            exact = True
    if low is not None and high is not None and low > high:  # inconsistent statistics: trust nothing
        low = high = None
    return Bounds(low, high, exact and low is not None and high is not None, null_count, num_values, top,
                  top and null_count is not None and null_count == num_values)


def _unscaled(values: pa.Array, column: ColumnInfo) -> list[int]:
    """The unscaled integers of a decimal array at the column's scale, read exactly from the
    array's little-endian two's-complement values (no decimal context, no rounding)."""
    typ = values.type
    if column.scale is None or typ.scale != column.scale:
        raise ValueError("decimal scale differs from the column's")
    width = typ.byte_width
    data = values.buffers()[1]
    if data is None:
        return []
    raw = data.to_pybytes()
    return [int.from_bytes(raw[(values.offset + i) * width:(values.offset + i + 1) * width], "little", signed=True)
            for i in range(len(values)) if values[i].is_valid]


def literal_keys(values: pa.Array, column: ColumnInfo, kind: str) -> list[Any]:
    """The non-null literals ``values`` (already cast to the column's Arrow type) in the order of
    :func:`chunk_bounds`. Raises ``ValueError`` / ``pyarrow.ArrowException`` when unsure.

    Parameters
    ----------
    values : pyarrow.Array
        The literals, cast to the column's Arrow type.
    column : ColumnInfo
        The leaf column.
    kind : str
        The column's :func:`stat_kind`.

    Returns
    -------
    list
        Comparable keys.

    Raises
    ------
    ValueError, pyarrow.ArrowException
        When unsure (the caller then prunes nothing).
    """
    stored = stored_form(values.drop_null(), column)
    typ = stored.type
    if kind in ("int", "uint"):
        if pa.types.is_decimal(typ):
            return _unscaled(stored, column)
        if pa.types.is_date32(typ) or pa.types.is_time32(typ):
            return list(stored.view(pa.int32()).to_pylist())
        if pa.types.is_temporal(typ):
            return list(stored.view(pa.int64()).to_pylist())
        if pa.types.is_integer(typ):
            return list(stored.to_pylist())
        raise ValueError(f"Arrow type {typ} on an integer column")
    if kind == "float":
        if not pa.types.is_floating(typ):
            raise ValueError(f"Arrow type {typ} on a floating-point column")
        return [float(v) for v in stored.to_pylist()]
    if kind == "bool":
        if not pa.types.is_boolean(typ):
            raise ValueError(f"Arrow type {typ} on a boolean column")
        return list(stored.to_pylist())
    if kind == "decimal_bytes":
        if not pa.types.is_decimal(typ):
            raise ValueError(f"Arrow type {typ} on a decimal column")
        return _unscaled(stored, column)
    if kind == "bytes":
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            return [v.encode("utf-8") for v in stored.to_pylist()]
        if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
            return [bytes(v) for v in stored.to_pylist()]
        raise ValueError(f"Arrow type {typ} on a byte-array column")
    raise ValueError(f"no order for {kind}")


_UNITS = {"millis": "ms", "micros": "us", "nanos": "ns"}


def arrow_type_of(column: ColumnInfo) -> pa.DataType | None:
    """The Arrow type pyarrow reads a leaf as, from its Parquet type alone (None where unsure).

    Parameters
    ----------
    column : ColumnInfo
        The leaf column.

    Returns
    -------
    pyarrow.DataType or None
        The type.

    Raises
    ------
    None
        Nothing of its own.
    """
    ptype, logical = column.physical_type, column.logical_type
    if logical == "DECIMAL" and column.precision is not None and column.scale is not None:
        return pa.decimal128(column.precision, column.scale) if column.precision <= 38 else \
            pa.decimal256(column.precision, column.scale)
    if ptype is PhysicalType.BOOLEAN:
        return pa.bool_()
    if ptype is PhysicalType.FLOAT:
        return pa.float32()
    if ptype is PhysicalType.DOUBLE:
        return pa.float64()
    if ptype is PhysicalType.INT96:
        return pa.timestamp("ns")
    unit = _UNITS.get(column.time_unit or "")
    if ptype in (PhysicalType.INT32, PhysicalType.INT64):
        if logical == "DATE" and ptype is PhysicalType.INT32:
            return pa.date32()
        if logical == "TIMESTAMP" and unit and ptype is PhysicalType.INT64:
            return pa.timestamp(unit, tz="UTC" if column.is_adjusted_to_utc else None)
        if logical == "TIME" and unit:
            return pa.time32(unit) if ptype is PhysicalType.INT32 else pa.time64(unit)
        if logical == "INTEGER" and column.int_bits in (8, 16, 32, 64):
            return getattr(pa, f"{'' if column.int_signed is not False else 'u'}int{column.int_bits}")()
        if logical is None:
            return pa.int32() if ptype is PhysicalType.INT32 else pa.int64()
        return None
    if ptype is PhysicalType.BYTE_ARRAY:
        if logical in ("STRING", "ENUM", "JSON"):
            return pa.string()
        return pa.binary() if logical in (None, "BSON") else None
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY and logical is None and column.type_length:
        return pa.binary(column.type_length)
    return None
