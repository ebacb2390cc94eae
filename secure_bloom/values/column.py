"""User values -> the physical values a column stores (and a Bloom filter hashes), per column type.

Spec: LogicalTypes.md and BloomFilter.md "Hashing of values" (SPEC_NOTES 2). By physical type
and logical annotation of a :class:`~secure_bloom.values.column_type.ColumnType` (such as
:class:`~secure_bloom.parquet.file.schema.ColumnInfo`):

=====================  =====================================================================
STRING, ENUM, JSON     ``str`` (UTF-8) or ``bytes``
BYTE_ARRAY (binary)    ``bytes`` (``str`` is taken as UTF-8)
DECIMAL                ``Decimal``, ``int`` or ``str`` -> INT32 / INT64 unscaled, big-endian
                       two's complement FLBA of the column's width, minimal BYTE_ARRAY
DATE                   ``date`` (or ISO text) -> INT32 days; ``int`` is the stored day count
TIMESTAMP              ``datetime``, :class:`NanoTimestamp`, ``numpy.datetime64`` (taken as UTC)
                       -> INT64 in the column's unit; ``int`` is the stored count
TIME                   ``datetime.time``, ``datetime.timedelta`` / ``numpy.timedelta64`` since
                       midnight -> INT32 millis / INT64 micros or nanos; ``int`` raw. A
                       time with a UTC offset is converted to UTC (wrapping within the day)
                       for isAdjustedToUTC and refused for a local TIME column
INT96 (legacy)         ``datetime`` / :class:`NanoTimestamp` / ``numpy.datetime64`` -> nanos of
                       day + Julian day; ``bytes`` (12)
INTEGER / plain ints   ``int`` within the column's width and signedness
FLOAT / DOUBLE         ``float`` or ``int`` (FLOAT is rounded to float32)
UUID, FLOAT16          ``uuid.UUID`` / text; ``float`` -> IEEE half, little-endian
=====================  =====================================================================

A value finer than the column's unit (a nanosecond for a micros column) is refused, never
truncated. :func:`encode_value` and :func:`hash_for_column` are bit-exact (the hash the writer
inserted; a naive ``datetime`` is taken as UTC): that is what ``attach`` builds filters with.

Queries use :func:`query_hashes` instead: the SQL meaning of a value, as a set of hashes any of
which means "maybe" (:func:`maybe_in` checks a filter):

* FLOAT, DOUBLE, FLOAT16: ``0.0`` asks for both +0.0 and -0.0; a NaN (any payload) answers "maybe"
  always: writers hash whichever NaN bits they saw, and parquet-java hashes the raw bits of a NaN
  but stores the canonical NaN, so no NaN pattern can ever be ruled out.
* Columns holding UTC instants (TIMESTAMP with isAdjustedToUTC, and INT96, Spark's instants) refuse a
  naive ``datetime``/``date`` or naive ISO text unless ``timezone`` names the zone it is local to
  (both instants are asked where a wall-clock time repeats or is skipped at a DST change); PySpark's
  ``collect()`` returns naive LOCAL times, so guessing UTC would answer "absent" for stored rows.
  ``numpy.datetime64`` carries no zone and is taken as UTC. Wall-clock TIMESTAMP columns (not
  adjusted to UTC) take naive values as they are.

:func:`value_from_text` parses command-line text for a column (:mod:`secure_bloom.values.text`)
and checks it as a query, so that bad input fails there, naming the column and its type.
"""

from __future__ import annotations

import datetime as dt
import uuid
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import numpy as np

from ..errors import InvalidValueError
from ..spec import NANOS_PER_DAY, NANOS_PER_SECOND, NANOS_PER_UNIT
from ..types import PhysicalType
from .column_type import ColumnType, column_error
from .logical import (
    NanoTimestamp,
    TimeUnit,
    encode_date,
    encode_decimal,
    encode_int96,
    encode_timestamp,
    int96_bytes,
    time_of_day_nanos,
)
from .. import kernels
from .physical import hash_value, hash_values, plain_bytes
from .text import parse_text, parse_time_text

__all__ = ["encode_value", "value_from_text", "hash_for_column", "query_hashes", "QueryHashes", "maybe_in",
           "QueryBatch", "query_batch", "TimeZoneLike"]

# numpy datetime64/timedelta64 units -> nanoseconds per tick (negative: ticks per nanosecond)
_NP_UNIT_NANOS = {"W": 7 * NANOS_PER_DAY, "D": NANOS_PER_DAY, "h": 3600 * NANOS_PER_SECOND,
                  "m": 60 * NANOS_PER_SECOND, "s": NANOS_PER_SECOND, "ms": 10**6, "us": 10**3, "ns": 1,
                  "ps": -(10**3), "fs": -(10**6), "as": -(10**9)}
_NAIVE_HELP = ("is a naive date/time, but the column holds UTC instants (isAdjustedToUTC or INT96): give "
               "its time zone (an aware datetime, an offset in the text, timezone= in the API, "
               "--timezone in the CLI)")

TimeZoneLike = dt.tzinfo | str
"""A ``tzinfo`` or an IANA zone name (``"UTC"``, ``"Europe/Paris"``) for :mod:`zoneinfo`."""


def _is_int(value: Any) -> bool:
    # numpy.timedelta64 is a numpy.signedinteger: a duration, not a count of the column's unit
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_, np.timedelta64))


def _as_bytes(value: Any) -> bytes | None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return None


def _numpy_nanos(value: np.datetime64 | np.timedelta64) -> int:
    """Nanoseconds (since the epoch for datetime64) as an exact Python int: no numpy cast, which
    would wrap silently outside years 1677..2262; a tick finer than a nanosecond must be whole."""
    if np.isnat(value):
        raise InvalidValueError("is NaT (not a time)")
    unit, count = np.datetime_data(value.dtype)
    if unit in ("Y", "M"):
        if isinstance(value, np.timedelta64):
            raise InvalidValueError("is in years or months, which have no fixed length")
        value, unit, count = value.astype("datetime64[D]"), "D", 1
    if unit not in _NP_UNIT_NANOS:
        raise InvalidValueError(f"has no time unit ({unit})")
    ticks = int(value.astype(np.int64)) * int(count)
    per = _NP_UNIT_NANOS[unit]
    if per > 0:
        return ticks * per
    if ticks % -per:
        raise InvalidValueError("is finer than a nanosecond")
    return ticks // -per


def _timestamp(value: Any, column: ColumnType) -> int:
    unit: TimeUnit = column.time_unit or "micros"  # type: ignore[assignment]
    if _is_int(value):
        return int(value)
    if isinstance(value, np.datetime64):
        total = _numpy_nanos(value)
        if total % NANOS_PER_UNIT[unit]:
            raise InvalidValueError(f"{value} is finer than the column's {unit} precision")
        count = total // NANOS_PER_UNIT[unit]
    elif isinstance(value, NanoTimestamp):
        count = encode_timestamp(value.datetime, unit, nanos=value.nanosecond)
    elif isinstance(value, (dt.datetime, str)):
        count = encode_timestamp(value, unit, nanos=int(getattr(value, "nanosecond", 0)))
    elif isinstance(value, dt.date):
        count = encode_timestamp(dt.datetime(value.year, value.month, value.day), unit)
    else:
        raise InvalidValueError("is not a timestamp (datetime, NanoTimestamp, numpy.datetime64, ISO text or int)")
    if not -(1 << 63) <= count < (1 << 63):
        span = " (years 1677..2262)" if unit == "nanos" else ""
        raise InvalidValueError(f"is outside the {unit[:-1]}second timestamp range{span} of INT64")
    return count


def _time_of_day(value: Any, column: ColumnType) -> int:
    if _is_int(value):
        return int(value)
    if isinstance(value, str):
        value = parse_time_text(value, adjusted_to_utc=column.is_adjusted_to_utc)
    if isinstance(value, dt.time):
        nanos = time_of_day_nanos(value, adjusted_to_utc=column.is_adjusted_to_utc)
    elif isinstance(value, dt.timedelta):
        nanos = value // dt.timedelta(microseconds=1) * 1000
    elif isinstance(value, np.timedelta64):
        nanos = _numpy_nanos(value)
    else:
        raise InvalidValueError("is not a time of day (datetime.time, a timedelta since midnight, text or int)")
    if not 0 <= nanos < NANOS_PER_DAY:
        raise InvalidValueError("is not within one day (00:00 .. 24:00)")
    unit = column.time_unit or "millis"
    if nanos % NANOS_PER_UNIT[unit]:
        raise InvalidValueError(f"is finer than the column's {unit} precision")
    return nanos // NANOS_PER_UNIT[unit]


def _int96(value: Any) -> bytes:
    raw = _as_bytes(value)
    if raw is not None:
        return raw
    if isinstance(value, np.datetime64):
        return int96_bytes(*divmod(_numpy_nanos(value), NANOS_PER_DAY))
    if isinstance(value, NanoTimestamp):
        return encode_int96(value.datetime, nanos=value.nanosecond)
    if isinstance(value, (dt.datetime, str)):
        return encode_int96(value, nanos=int(getattr(value, "nanosecond", 0)))
    raise InvalidValueError("is not an INT96 timestamp (datetime, NanoTimestamp, numpy.datetime64, ISO text "
                            "or 12 bytes)")


def _integer(value: Any, column: ColumnType, width: int) -> int:
    if not _is_int(value):
        raise InvalidValueError("is not an integer")
    v = int(value)
    bits = column.int_bits or width
    signed = True if column.int_signed is None else column.int_signed
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not low <= v <= high:
        raise InvalidValueError(f"is outside {'INT' if signed else 'UINT'}{bits} [{low}, {high}]")
    return v


def _narrow(value: Any, dtype: type[np.floating[Any]], name: str) -> Any:
    """``dtype(value)``, refusing a finite value that would silently become infinite."""
    with np.errstate(over="ignore"):
        out = dtype(value)
    if np.isinf(out) and np.isfinite(float(value)):
        raise InvalidValueError(f"is too large for {name}")
    return out


def _physical(value: Any, column: ColumnType) -> Any:
    ptype, logical = column.physical_type, column.logical_type
    if ptype is PhysicalType.BOOLEAN:
        raise InvalidValueError("cannot be probed: BOOLEAN columns have no Bloom filter")
    if logical == "DECIMAL" and not isinstance(value, (bytes, bytearray, memoryview)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Decimal, int, str, float, np.integer)):
            raise InvalidValueError("is not a decimal number")
        return encode_decimal(value if not isinstance(value, np.integer) else int(value), ptype,
                              scale=column.scale or 0, precision=column.precision,
                              type_length=column.type_length)
    if ptype is PhysicalType.INT32:
        if logical == "DATE":
            if isinstance(value, np.datetime64):
                days, rest = divmod(_numpy_nanos(value), NANOS_PER_DAY)
                if rest:
                    raise InvalidValueError("is not a whole day")
                return days
            return int(value) if _is_int(value) else encode_date(value)
        if logical == "TIME":
            return _time_of_day(value, column)
        return _integer(value, column, 32)
    if ptype is PhysicalType.INT64:
        if logical == "TIMESTAMP":
            return _timestamp(value, column)
        if logical == "TIME":
            return _time_of_day(value, column)
        return _integer(value, column, 64)
    if ptype is PhysicalType.INT96:
        return _int96(value)
    if ptype in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise InvalidValueError("is not a number")
        if ptype is PhysicalType.FLOAT:
            return _narrow(value, np.float32, "FLOAT (float32)")
        return float(value)
    # BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY
    raw = _as_bytes(value)
    if raw is not None:
        return raw
    if logical == "UUID" and isinstance(value, (uuid.UUID, str)):
        try:
            return (value if isinstance(value, uuid.UUID) else uuid.UUID(value)).bytes
        except ValueError:
            raise InvalidValueError("is not a UUID") from None
    if logical == "FLOAT16" and isinstance(value, (int, float, np.integer, np.floating)) \
            and not isinstance(value, (bool, np.bool_)):
        return _narrow(value, np.float16, "FLOAT16").astype("<f2").tobytes()
    if isinstance(value, str):
        return value.encode("utf-8")
    raise InvalidValueError("is not bytes or text")


def encode_value(value: Any, column: ColumnType) -> Any:
    """The physical value ``column`` stores for ``value``.

    Parameters
    ----------
    value : object
        A Python value of the column's logical type (int, float, Decimal, date, datetime, str,
        bytes...).
    column : ColumnType
        The column (a :class:`~secure_bloom.parquet.file.schema.ColumnInfo` of a file, or any
        :class:`~secure_bloom.values.column_type.ColumnType`).

    Returns
    -------
    int, float, numpy.float32 or bytes
        The physical value (what the plain encoding encodes).

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        ``value`` is None or cannot be stored in ``column`` (the message names the column).
    """
    if value is None:
        raise column_error(column, value, "cannot be probed: Bloom filters do not record nulls")
    try:
        physical = _physical(value, column)
        plain_bytes(physical, column.physical_type, type_length=column.type_length)
    except InvalidValueError as e:
        msg = str(e)
        raise column_error(column, value, msg) from None
    except (ValueError, TypeError, OverflowError) as e:
        raise column_error(column, value, f"cannot be encoded ({type(e).__name__})") from None
    return physical


def hash_for_column(value: Any, column: ColumnType) -> int:
    """XXH64 of ``value`` as ``column`` stores it (the hash its Bloom filter holds).

    Bit-exact: -0.0 and +0.0, and NaNs with different bits, hash differently, and a naive datetime
    is taken as UTC. To ask whether a value MAY be in a column use :func:`query_hashes`.

    Parameters
    ----------
    value : object
        A Python value of the column's logical type.
    column : ColumnType
        The column (a :class:`~secure_bloom.parquet.file.schema.ColumnInfo` of a file, or any
        :class:`~secure_bloom.values.column_type.ColumnType`).

    Returns
    -------
    int
        The unsigned 64-bit hash.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        ``value`` is None or cannot be stored in ``column`` (the message names the column).
    """
    return hash_value(encode_value(value, column), column.physical_type, type_length=column.type_length)


# ------------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class QueryHashes:
    """What a query for one value asks a filter: "maybe" when ANY of ``hashes`` is in it, and
    always when ``always_maybe`` (a NaN: no filter can rule one out).

    Parameters
    ----------
    hashes : tuple of int
        The hashes to look up.
    always_maybe : bool, default False
        The answer is "maybe" whatever the filter holds.
    """

    hashes: tuple[int, ...]
    always_maybe: bool = False


class _HashChecker(Protocol):
    def check_hashes(self, hashes: Any) -> Any: ...


def _is_instant(column: ColumnType) -> bool:
    """Whether the column holds UTC instants (a naive value does not name one)."""
    return column.physical_type is PhysicalType.INT96 or (
        column.logical_type == "TIMESTAMP" and bool(column.is_adjusted_to_utc))


def _zone(timezone: TimeZoneLike) -> dt.tzinfo:
    if isinstance(timezone, dt.tzinfo):
        return timezone
    if isinstance(timezone, str):
        try:
            return zoneinfo.ZoneInfo(timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise InvalidValueError(f"unknown time zone {timezone[:60]!r} (expected an IANA name such as "
                                    "'UTC' or 'Europe/Paris')") from None
    raise TypeError(f"timezone must be a tzinfo or a zone name, got {type(timezone).__name__}")


def _instants(value: Any, column: ColumnType, timezone: TimeZoneLike | None) -> list[Any]:
    """``value``, or for a naive date/time on a column of UTC instants the instants it names as a
    wall-clock time in ``timezone``: two where the time repeats or is skipped at a DST change."""
    if not _is_instant(column) or _is_int(value) or isinstance(value, (bytes, bytearray, memoryview)):
        return [value]
    if isinstance(value, NanoTimestamp):
        base: Any = value.datetime
    elif isinstance(value, dt.datetime):
        base = value
    elif isinstance(value, dt.date):
        base = dt.datetime.combine(value, dt.time())
    else:
        return [value]
    if base.utcoffset() is not None:
        return [value]
    if timezone is None:
        raise InvalidValueError(_NAIVE_HELP)
    zone = _zone(timezone)
    local = [base.replace(tzinfo=zone, fold=fold) for fold in (0, 1)]
    if isinstance(value, NanoTimestamp):
        return [NanoTimestamp(t, value.nanosecond) for t in local]
    return local


def _sql_equal(physical: Any, column: ColumnType) -> tuple[list[Any], bool]:
    """The physical values SQL holds equal to ``physical`` (both zeros), and whether it is a NaN."""
    if column.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        if np.isnan(physical):
            return [physical], True
        if physical == 0:
            zero = np.float32(0.0) if column.physical_type is PhysicalType.FLOAT else 0.0
            return [zero, -zero], False
    elif column.logical_type == "FLOAT16" and isinstance(physical, bytes) and len(physical) == 2:
        half = np.frombuffer(physical, dtype="<f2")[0]
        if np.isnan(half):
            return [physical], True
        if half == 0:
            return [b"\x00\x00", b"\x00\x80"], False
    return [physical], False


def query_hashes(value: Any, column: ColumnType, *, timezone: TimeZoneLike | None = None) -> QueryHashes:
    """The hashes to look up for a query ``column = value``; any hit means "maybe".

    Unlike :func:`hash_for_column` this follows SQL equality: both zeros, every NaN ("maybe"
    always), and the instants a naive date/time names in ``timezone`` on a column of UTC instants
    (refused without ``timezone``: :class:`InvalidValueError`). Text for TIMESTAMP, TIME and INT96
    columns is parsed as :func:`value_from_text` does (all nanosecond digits kept).

    Parameters
    ----------
    value : object
        The value queried.
    column : ColumnType
        The column (a :class:`~secure_bloom.parquet.file.schema.ColumnInfo` of a file, or any
        :class:`~secure_bloom.values.column_type.ColumnType`).
    timezone : str or tzinfo, optional
        The zone of a naive date/time on a column of UTC instants.

    Returns
    -------
    QueryHashes
        The hashes any of which means "maybe", and whether the answer is always "maybe" (NaN).

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        ``value`` is None or cannot be stored in ``column`` (the message names the column).
    """
    if isinstance(value, str) and (column.logical_type in ("TIMESTAMP", "TIME")
                                   or column.physical_type is PhysicalType.INT96):
        value = parse_text(value, column)
    try:
        candidates = _instants(value, column, timezone)
    except InvalidValueError as e:
        raise column_error(column, value, str(e)) from None
    hashes: dict[int, None] = {}
    nan = False
    for candidate in candidates:
        equal, is_nan = _sql_equal(encode_value(candidate, column), column)
        nan = nan or is_nan
        for physical in equal:
            hashes[hash_value(physical, column.physical_type, type_length=column.type_length)] = None
    return QueryHashes(hashes=tuple(hashes), always_maybe=nan)


def maybe_in(bloom_filter: _HashChecker | None, queries: Sequence[QueryHashes]) -> list[bool]:
    """For each query, whether ``bloom_filter`` may hold its value (None: no filter, all "maybe").

    All the queries' hashes are checked in one call; a value is "maybe" when any of its hashes
    is (SQL equality can match several stored values: both zeros, the instants a naive time
    names in a zone) or when it is always "maybe" (NaN).

    Parameters
    ----------
    bloom_filter : SplitBlockBloomFilter or None
        Anything with ``check_hashes(uint64 array) -> bool array``; None when the chunk has no
        filter.
    queries : sequence of QueryHashes
        One per value (:func:`query_hashes`).

    Returns
    -------
    list of bool
        One per query, in order: False only where the filter rules the value out.

    Raises
    ------
    None
        Nothing of its own (the hashes were made and checked by :func:`query_hashes`).
    """
    if bloom_filter is None:
        return [True] * len(queries)
    flat = np.array([h for q in queries for h in q.hashes], dtype=np.uint64)
    hits = iter(np.asarray(bloom_filter.check_hashes(flat), dtype=bool).tolist() if flat.size else [])
    return [any([next(hits) for _ in q.hashes]) or q.always_maybe for q in queries]


@dataclass(frozen=True, eq=False)
class QueryBatch:
    """The queries for many values of one column, flat: value ``i`` asks
    ``hashes[starts[i]:starts[i + 1]]`` (at least one hash each) and is "maybe" always when
    ``always_maybe[i]`` (a NaN). Made by :func:`query_batch`; every array is read-only.

    One array of hashes serves every filter of every file whose column has this type: hash
    once, then check all filters (:meth:`SplitBlockBloomFilter.check_many
    <secure_bloom.filter.SplitBlockBloomFilter.check_many>`) and fold with :meth:`answers`.

    Parameters
    ----------
    hashes : numpy.ndarray of uint64
        Every value's hashes, one after another.
    starts : numpy.ndarray of int
        ``len(self) + 1`` offsets into ``hashes``: value ``i``'s run and the end.
    always_maybe : numpy.ndarray of bool
        Per value: it is "maybe" whatever the filter says.
    """


    hashes: np.ndarray
    starts: np.ndarray
    always_maybe: np.ndarray

    def __len__(self) -> int:
        return int(self.always_maybe.size)

    @classmethod
    def of(cls, queries: Sequence[QueryHashes]) -> QueryBatch:
        """The batch of :func:`query_hashes` answers, in order.

        Parameters
        ----------
        queries : sequence of QueryHashes
            One per value; each with at least one hash.

        Returns
        -------
        QueryBatch

        Raises
        ------
        ValueError
            A query without hashes.
        """
        counts = np.fromiter((len(q.hashes) for q in queries), dtype=np.intp, count=len(queries))
        if counts.size and counts.min() < 1:
            raise ValueError("every query asks at least one hash")
        starts = np.zeros(counts.size + 1, dtype=np.intp)
        np.cumsum(counts, out=starts[1:])
        hashes = np.fromiter((h for q in queries for h in q.hashes), dtype=np.uint64, count=int(starts[-1]))
        nan = np.fromiter((q.always_maybe for q in queries), dtype=np.bool_, count=len(queries))
        return cls._frozen(hashes, starts, nan)

    @classmethod
    def _frozen(cls, hashes: np.ndarray, starts: np.ndarray, always_maybe: np.ndarray) -> QueryBatch:
        for array in (hashes, starts, always_maybe):
            array.flags.writeable = False
        return cls(hashes, starts, always_maybe)

    def answers(self, found: np.ndarray) -> np.ndarray:
        """Per value, whether any of its hashes was found (or it is always "maybe").

        Parameters
        ----------
        found : numpy.ndarray of bool, shape ``(..., len(hashes))``
            Per filter (leading axes), whether each hash may be in it.

        Returns
        -------
        numpy.ndarray of bool, shape ``(..., len(self))``

        Raises
        ------
        ValueError
            ``found`` does not have one entry per hash on its last axis.
        """
        found = np.asarray(found, dtype=np.bool_)
        if found.shape[-1:] != self.hashes.shape:
            raise ValueError(f"{found.shape[-1:]} answers for {self.hashes.size} hashes")
        if self.hashes.size == len(self):  # one hash per value (no zero, no DST fold): as found
            same: np.ndarray = found | self.always_maybe
            return same
        if not len(self):
            return np.zeros(found.shape[:-1] + (0,), dtype=np.bool_)
        folded: np.ndarray = np.logical_or.reduceat(found, self.starts[:-1], axis=-1) | self.always_maybe
        return folded


#: BYTE_ARRAY annotations whose ``str`` values are their UTF-8 bytes and ``bytes`` values as given.
_TEXT_LIKE = frozenset({None, "STRING", "ENUM", "JSON", "BSON"})


def _one_hash_each(values: Sequence[Any], column: ColumnType) -> np.ndarray | None:
    """The hashes of ``values`` when each value's query is the one hash of its plain bytes and
    the whole batch can be hashed at once (texts and bytes of a string or binary column, ints of
    a plain signed integer column, all valid); None otherwise (the caller asks each value)."""
    ptype, logical = column.physical_type, column.logical_type
    if ptype is PhysicalType.BYTE_ARRAY and logical in _TEXT_LIKE:
        batch = values if isinstance(values, (list, tuple)) else list(values)
        hashed = kernels.xxh64_objects(batch)  # None on another type or a lone surrogate
        return hashed if hashed is not None and hashed.size == len(values) else None  # fewer: a None
    if ptype in (PhysicalType.INT32, PhysicalType.INT64) and logical in (None, "INTEGER") \
            and column.int_signed in (None, True) and all(type(v) is int for v in values):
        width = 32 if ptype is PhysicalType.INT32 else 64
        bits = column.int_bits or width
        try:
            ints = np.array(values, dtype=np.int64)
        except OverflowError:
            return None
        if ints.size and (ints.min() < -(1 << (bits - 1)) or ints.max() > (1 << (bits - 1)) - 1):
            return None  # asked value by value: the first one out of range is named
        return hash_values(ints.astype(np.int32 if width == 32 else np.int64), ptype)
    return None


def query_batch(values: Sequence[Any], column: ColumnType, *, timezone: TimeZoneLike | None = None) -> QueryBatch:
    """:func:`query_hashes` of every value, as one :class:`QueryBatch` (the same hashes, in order).

    Texts and bytes of string and binary columns and ints of plain signed integer columns are
    hashed in one pass (no Python object per value); any other batch, or one with a value such a
    pass cannot take, is asked value by value, so that the first bad value raises the error
    :func:`query_hashes` names.

    Parameters
    ----------
    values : sequence
        The values (as :func:`query_hashes` takes them).
    column : ColumnType
        The column they are asked of.
    timezone : tzinfo or str, optional
        The zone of naive date/time values for a column of UTC instants.

    Returns
    -------
    QueryBatch

    Raises
    ------
    InvalidValueError
        A value the column cannot hold (as :func:`query_hashes`).
    """
    if type(values) not in (list, tuple):
        values = list(values)
    hashed = _one_hash_each(values, column)
    if hashed is not None:
        n = hashed.size
        return QueryBatch._frozen(np.ascontiguousarray(hashed, dtype=np.uint64), np.arange(n + 1, dtype=np.intp),
                                  np.zeros(n, dtype=np.bool_))
    return QueryBatch.of([query_hashes(v, column, timezone=timezone) for v in values])


def value_from_text(text: str, column: ColumnType, *, timezone: TimeZoneLike | None = None) -> Any:
    """Parse command-line ``text`` into a value :func:`query_hashes` accepts for ``column``.

    Text for strings is taken literally; numbers for numeric columns, decimal strings for
    DECIMAL, ISO-8601 for dates, times and timestamps, ``hex:`` / ``text:`` for binary columns.

    Parameters
    ----------
    text : str
        The value as typed.
    column : ColumnType
        The column (a :class:`~secure_bloom.parquet.file.schema.ColumnInfo` of a file, or any
        :class:`~secure_bloom.values.column_type.ColumnType`).
    timezone : str or tzinfo, optional
        The zone of naive date/time text on a column of UTC instants.

    Returns
    -------
    object
        The parsed value.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The text does not parse for the column, or names a value it cannot store.

    The result is validated as a query (with ``timezone``) so that bad input fails here, naming
    the column: naive date/time text for a column of UTC instants needs ``timezone``. Naive
    values are returned as they are; pass the same ``timezone`` to the probe.
    """
    value = parse_text(text, column)
    query_hashes(value, column, timezone=timezone)
    return value


