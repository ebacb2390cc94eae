"""User values -> the physical values a column stores (and a Bloom filter hashes), per column type.

Spec: LogicalTypes.md and BloomFilter.md "Hashing of values" (SPEC_NOTES 2). By physical type
and logical annotation of a :class:`~secure_bloom.parquet.schema.ColumnInfo`:

=====================  =====================================================================
STRING, ENUM, JSON     ``str`` (UTF-8) or ``bytes``
BYTE_ARRAY (binary)    ``bytes`` (``str`` is taken as UTF-8)
DECIMAL                ``Decimal``, ``int`` or ``str`` -> INT32 / INT64 unscaled, big-endian
                       two's complement FLBA of the column's width, minimal BYTE_ARRAY
DATE                   ``date`` (or ISO text) -> INT32 days; ``int`` is the stored day count
TIMESTAMP              ``datetime`` (naive = UTC), ``numpy.datetime64`` -> INT64 in the column's
                       unit; ``int`` is the stored count
TIME                   ``datetime.time`` -> INT32 millis / INT64 micros or nanos; ``int`` raw
INT96 (legacy)         ``datetime`` / ``numpy.datetime64`` -> nanos of day + Julian day;
                       ``bytes`` (12)
INTEGER / plain ints   ``int`` within the column's width and signedness
FLOAT / DOUBLE         ``float`` or ``int`` (FLOAT is rounded to float32)
UUID, FLOAT16          ``uuid.UUID`` / text; ``float`` -> IEEE half, little-endian
=====================  =====================================================================

:func:`value_from_text` parses command-line text for a column: numbers for numeric columns,
decimal text, ISO-8601 dates and timestamps (nanosecond digits kept), ``hex:...`` raw bytes for
any binary, fixed or INT96 column, ``text:...`` to force literal text. Anything that does not
fit raises :class:`InvalidValueError` naming the column and its type.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from ..errors import InvalidValueError
from ..hashing import PhysicalType, hash_value, plain_bytes
from ..logical import TimeUnit, encode_date, encode_decimal, encode_int96, encode_timestamp
from .schema import ColumnInfo

__all__ = ["encode_value", "value_from_text", "display_value", "hash_for_column"]

_UNIT_NANOS = {"millis": 10**6, "micros": 10**3, "nanos": 1}
_STRINGY = {"STRING", "ENUM", "JSON"}
_ISO_FRACTION = re.compile(r"^(.*T\d\d:\d\d:\d\d|.* \d\d:\d\d:\d\d)\.(\d+)(.*)$")
_EPOCH_NAIVE = np.datetime64("1970-01-01T00:00:00", "ns")


def _fail(column: ColumnInfo, value: Any, why: str) -> InvalidValueError:
    try:
        shown = repr(value)
    except ValueError:  # an int beyond sys.get_int_max_str_digits() has no decimal repr
        shown = f"<{type(value).__name__} of {value.bit_length()} bits>" if isinstance(value, int) else "<value>"
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InvalidValueError(f"column {column.path!r} ({column.type_name}): {shown} {why}")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _as_bytes(value: Any) -> bytes | None:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return None


def _datetime64_nanos(value: np.datetime64) -> int:
    if np.isnat(value):
        raise InvalidValueError("NaT is not a timestamp")
    nanos = value.astype("datetime64[ns]")
    if nanos.astype(value.dtype) != value:  # numpy wraps silently outside 1677..2262
        raise InvalidValueError("is outside the nanosecond timestamp range (years 1677..2262)")
    return int((nanos - _EPOCH_NAIVE).astype(np.int64))


def _timestamp(value: Any, column: ColumnInfo) -> int:
    unit: TimeUnit = column.time_unit or "micros"  # type: ignore[assignment]
    if _is_int(value):
        return int(value)
    if isinstance(value, np.datetime64):
        total = _datetime64_nanos(value)
        if total % _UNIT_NANOS[unit]:
            raise InvalidValueError(f"{value} is finer than the column's {unit} precision")
        return total // _UNIT_NANOS[unit]
    if isinstance(value, (dt.datetime, str)):
        return encode_timestamp(value, unit, nanos=int(getattr(value, "nanosecond", 0)))
    if isinstance(value, dt.date):
        return encode_timestamp(dt.datetime(value.year, value.month, value.day), unit)
    raise InvalidValueError("is not a timestamp (datetime, numpy.datetime64, ISO text or int)")


def _time_of_day(value: Any, column: ColumnInfo) -> int:
    if _is_int(value):
        return int(value)
    if isinstance(value, str):
        try:
            value = dt.time.fromisoformat(value)
        except ValueError:
            raise InvalidValueError("is not an ISO-8601 time") from None
    if not isinstance(value, dt.time):
        raise InvalidValueError("is not a time of day")
    micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 10**6 + value.microsecond
    unit = column.time_unit or "millis"
    if unit == "millis":
        if micros % 1000:
            raise InvalidValueError("is finer than the column's millis precision")
        return micros // 1000
    return micros if unit == "micros" else micros * 1000


def _int96(value: Any) -> bytes:
    raw = _as_bytes(value)
    if raw is not None:
        return raw
    if isinstance(value, np.datetime64):
        total = _datetime64_nanos(value)
        days, nanos = divmod(total, 86_400 * 10**9)
        base = dt.datetime(1970, 1, 1) + dt.timedelta(days=days)
        return encode_int96(base, nanos=nanos)
    if isinstance(value, (dt.datetime, str)):
        return encode_int96(value, nanos=int(getattr(value, "nanosecond", 0)))
    raise InvalidValueError("is not an INT96 timestamp (datetime, numpy.datetime64, ISO text or 12 bytes)")


def _integer(value: Any, column: ColumnInfo, width: int) -> int:
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


def _physical(value: Any, column: ColumnInfo) -> Any:
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


def encode_value(value: Any, column: ColumnInfo) -> Any:
    """The physical value ``column`` stores for ``value`` (int, float, numpy float32 or bytes)."""
    if value is None:
        raise _fail(column, value, "cannot be probed: Bloom filters do not record nulls")
    try:
        physical = _physical(value, column)
        plain_bytes(physical, column.physical_type, type_length=column.type_length)
    except InvalidValueError as e:
        msg = str(e)
        raise _fail(column, value, msg) from None
    except (ValueError, TypeError, OverflowError) as e:
        raise _fail(column, value, f"cannot be encoded ({type(e).__name__})") from None
    return physical


def hash_for_column(value: Any, column: ColumnInfo) -> int:
    """XXH64 of ``value`` as ``column`` stores it (the hash its Bloom filter holds)."""
    return hash_value(encode_value(value, column), column.physical_type, type_length=column.type_length)


# ------------------------------------------------------------------------------- text input


def _timestamp_text(text: str) -> Any:
    """ISO-8601 text -> datetime (microseconds or coarser) or numpy.datetime64 (nanoseconds, UTC)."""
    body = text.strip().replace("Z", "+00:00").replace("z", "+00:00")
    match = _ISO_FRACTION.match(body)
    extra = 0
    if match and len(match.group(2)) > 6:
        digits = match.group(2)
        if len(digits) > 9:
            raise InvalidValueError("has more than 9 fractional digits")
        digits = digits.ljust(9, "0")
        extra = int(digits[6:])
        body = f"{match.group(1)}.{digits[:6]}{match.group(3)}"
    try:
        value = dt.datetime.fromisoformat(body)
    except ValueError:
        try:
            value = dt.datetime.combine(dt.date.fromisoformat(body), dt.time())
        except ValueError:
            raise InvalidValueError("is not an ISO-8601 timestamp") from None
    if value.tzinfo is not None:
        try:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        except OverflowError:  # e.g. 0001-01-01T00:00+05:00 is before year 1 in UTC
            raise InvalidValueError("is outside the datetime range once converted to UTC") from None
    if not extra:
        return value
    nanos = (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1) * 1000 + extra
    if not -(1 << 63) < nanos < (1 << 63):  # np.datetime64(..., "ns") would wrap silently; -2^63 is NaT
        raise InvalidValueError("is outside the nanosecond timestamp range (years 1677..2262)")
    return np.datetime64(nanos, "ns")


def _int_text(text: str) -> int:
    t = text.strip().replace("_", "")
    try:
        return int(t, 10)
    except ValueError:
        pass
    try:
        return int(t, 0)
    except ValueError:
        raise InvalidValueError("is not an integer") from None


def _from_text(text: str, column: ColumnInfo) -> Any:
    ptype, logical = column.physical_type, column.logical_type
    binary = ptype in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY, PhysicalType.INT96)
    if binary and text.startswith("hex:"):
        try:
            return bytes.fromhex(text[4:].replace(" ", ""))
        except ValueError:
            raise InvalidValueError("is not valid hex after 'hex:'") from None
    if binary and text.startswith("text:"):
        return text[5:]
    if ptype is PhysicalType.BOOLEAN:
        raise InvalidValueError("cannot be probed: BOOLEAN columns have no Bloom filter")
    if logical == "DECIMAL":
        try:
            dec = Decimal(text.strip())
        except InvalidOperation:
            raise InvalidValueError("is not a decimal number") from None
        return dec
    if logical == "DATE":
        if re.fullmatch(r"-?\d+", text.strip()):
            return _int_text(text)  # bounded: int() of >4300 digits raises ValueError
        try:
            return dt.date.fromisoformat(text.strip())
        except ValueError:
            raise InvalidValueError("is not an ISO-8601 date (YYYY-MM-DD)") from None
    if logical == "TIMESTAMP" or ptype is PhysicalType.INT96:
        if ptype is not PhysicalType.INT96 and re.fullmatch(r"-?\d+", text.strip()):
            return _int_text(text)  # bounded: int() of >4300 digits raises ValueError
        return _timestamp_text(text)
    if logical == "TIME":
        if re.fullmatch(r"\d+", text.strip()):
            return _int_text(text)  # bounded: int() of >4300 digits raises ValueError
        try:
            return dt.time.fromisoformat(text.strip())
        except ValueError:
            raise InvalidValueError("is not an ISO-8601 time") from None
    if ptype in (PhysicalType.INT32, PhysicalType.INT64):
        return _int_text(text)
    if ptype in (PhysicalType.FLOAT, PhysicalType.DOUBLE) or logical == "FLOAT16":
        try:
            return float(text.strip())
        except ValueError:
            raise InvalidValueError("is not a number") from None
    if logical == "UUID":
        try:
            return uuid.UUID(text.strip())
        except ValueError:
            raise InvalidValueError("is not a UUID") from None
    return text


def value_from_text(text: str, column: ColumnInfo) -> Any:
    """Parse command-line ``text`` into a value :func:`encode_value` accepts for ``column``.

    The result is validated (encoded once) so that bad input fails here, naming the column.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    try:
        value = _from_text(text, column)
    except InvalidValueError as e:
        raise _fail(column, text, str(e)) from None
    encode_value(value, column)
    return value


def display_value(value: Any) -> str:
    """The key a value gets in a :class:`~secure_bloom.parquet.reader.ProbeResult`."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "hex:" + bytes(value).hex()
    if isinstance(value, (float, np.floating)):
        return str(value) if isinstance(value, np.float32) else repr(float(value))
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return str(value)
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)

