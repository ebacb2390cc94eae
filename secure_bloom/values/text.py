"""Command-line text -> a value for a column, and a value -> the text that labels it.

Spec: LogicalTypes.md (what each annotation's values are) and ISO 8601 for dates and times.
:func:`parse_text` turns text into a value :func:`secure_bloom.values.column.query_hashes` takes:
numbers for numeric columns, decimal text, ISO-8601 dates, times and timestamps (all nine
nanosecond digits kept: a :class:`~secure_bloom.values.logical.NanoTimestamp`, or a
``numpy.timedelta64`` for a time of day; a time's UTC offset is applied for a UTC-adjusted TIME
column and refused for a local one), ``hex:...`` raw bytes for a binary (non-string),
fixed-length or INT96 column and ``text:...`` to take the rest literally there. Text for STRING,
ENUM and JSON columns is always literal (``hex:ab`` is the 6-character string). Anything that does
not fit raises :class:`InvalidValueError` naming the column and its type.
:func:`display_value` is the label a probe answer gets for a value.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from ..errors import InvalidValueError
from ..spec import NANOS_PER_SECOND
from ..types import PhysicalType
from .column_type import ColumnType, column_error
from .logical import NanoTimestamp, time_of_day_nanos

__all__ = ["parse_text", "parse_timestamp_text", "parse_time_text", "display_value"]

_STRINGY = {"STRING", "ENUM", "JSON"}
_FRACTION = re.compile(r"^(.*\d\d:\d\d:\d\d)\.(\d+)(.*)$")


def _split_nanos(body: str) -> tuple[str, int]:
    """(``body`` with exactly 6 fractional digits of seconds where it has any, the nanoseconds
    beyond them); a 10th digit on is accepted only as a zero (no Parquet unit holds it). Six
    digits: Python 3.10's ``fromisoformat`` reads only 3 or 6 (``.25`` becomes ``.250000``)."""
    match = _FRACTION.match(body)
    if not match:
        return body, 0
    digits = match.group(2)
    if len(digits) <= 6:
        return f"{match.group(1)}.{digits.ljust(6, '0')}{match.group(3)}", 0
    if digits[9:].strip("0"):
        raise InvalidValueError("has more than 9 fractional digits (finer than a nanosecond)")
    digits = digits[:9].ljust(9, "0")
    return f"{match.group(1)}.{digits[:6]}{match.group(3)}", int(digits[6:])


def parse_timestamp_text(text: str) -> Any:
    """ISO-8601 text -> ``datetime``, or :class:`NanoTimestamp` for 7-9 fractional digits; naive
    or aware as written (converted to UTC when encoded).

    Parameters
    ----------
    text : str
        ``2024-01-02T03:04:05.123456789+01:00`` and its shorter forms.

    Returns
    -------
    datetime.datetime or NanoTimestamp
        The instant, every digit kept.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The text does not parse as ISO-8601.
    """
    body, extra = _split_nanos(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    try:
        value = dt.datetime.fromisoformat(body)
    except ValueError:
        try:
            value = dt.datetime.combine(dt.date.fromisoformat(body), dt.time())
        except ValueError:
            raise InvalidValueError("is not an ISO-8601 timestamp") from None
    return NanoTimestamp(value, extra) if extra else value


def parse_time_text(text: str, *, adjusted_to_utc: bool | None) -> Any:
    """ISO-8601 time text -> a naive ``datetime.time``, or ``numpy.timedelta64`` since midnight
    (ns) when it has 7-9 fractional digits. A UTC offset (``12:00+02:00``, ``Z``) is converted to
    UTC for a UTC-adjusted TIME column (``adjusted_to_utc``) and refused for a local one
    (:func:`~secure_bloom.values.logical.time_of_day_nanos`): the result is the time of day the
    column stores.

    Parameters
    ----------
    text : str
        ``12:00``, ``12:00:00.123456789``, with an optional offset.
    adjusted_to_utc : bool or None
        The TIME column's ``isAdjustedToUTC``.

    Returns
    -------
    datetime.time or numpy.timedelta64
        The time of day the column stores.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The text is not an ISO-8601 time, has more than 9 fractional digits, or has a UTC
        offset while the column holds local times (``adjusted_to_utc`` not True).
    """

    # "Z" spelled as an offset: Python 3.10's fromisoformat reads only "+00:00"
    body, extra = _split_nanos(re.sub(r"[Zz]$", "+00:00", text.strip()))
    try:
        value = dt.time.fromisoformat(body)
    except ValueError:
        raise InvalidValueError("is not an ISO-8601 time") from None
    if value.tzinfo is None and not extra:
        return value
    nanos = time_of_day_nanos(value, adjusted_to_utc=adjusted_to_utc, nanos=extra)
    if extra:
        return np.timedelta64(nanos, "ns")
    seconds, sub = divmod(nanos, NANOS_PER_SECOND)
    return dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, sub // 1000)


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


def _from_text(text: str, column: ColumnType) -> Any:
    ptype, logical = column.physical_type, column.logical_type
    binary = ptype in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY, PhysicalType.INT96) \
        and logical not in _STRINGY  # a string column's text is its value, prefix or not
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
        return parse_timestamp_text(text)
    if logical == "TIME":
        if re.fullmatch(r"\d+", text.strip()):
            return _int_text(text)  # bounded: int() of >4300 digits raises ValueError
        return parse_time_text(text, adjusted_to_utc=column.is_adjusted_to_utc)
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


def parse_text(text: str, column: ColumnType) -> Any:
    """Parse ``text`` into a value for ``column`` (not yet checked against the column's range:
    :func:`secure_bloom.values.column.value_from_text` does both).

    Parameters
    ----------
    text : str
        The value as typed.
    column : ColumnType
        The column the text is for.

    Returns
    -------
    object
        A str, int, float, Decimal, date, datetime, time or bytes, as the column's type wants.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The text does not parse for the column.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    try:
        return _from_text(text, column)
    except InvalidValueError as e:
        raise column_error(column, text, str(e)) from None


def display_value(value: Any) -> str:
    """The label a value gets in a :class:`~secure_bloom.parquet.file.probe.ProbeResult`.

    Parameters
    ----------
    value : object
        A probed value.

    Returns
    -------
    str
        Its text (``-nan`` and ``nan`` told apart, bytes as ``hex:...``), safe to show.

    Raises
    ------
    None
        Nothing of its own.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "hex:" + bytes(value).hex()
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):  # NaNs differ by sign and payload; show the bits of any but the canonical
            bits = np.asarray(value).view(f"<u{np.asarray(value).itemsize}").item()
            canonical = {2: 0x7E00, 4: 0x7FC00000, 8: 0x7FF8000000000000}[np.asarray(value).itemsize]
            return "nan" if bits == canonical else f"nan(0x{bits:x})"
        return str(value) if isinstance(value, np.float32) else repr(float(value))
    if isinstance(value, (dt.date, dt.time, NanoTimestamp)):
        return value.isoformat()
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return str(value)
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)

