"""Logical values -> the physical values Parquet stores (and therefore hashes).

Spec: Parquet LogicalTypes.md. These let users probe what Spark / parquet-java wrote:

* STRING: UTF-8 bytes;
* DECIMAL(precision, scale): the unscaled integer, as INT32, INT64, or big-endian two's complement
  in FIXED_LEN_BYTE_ARRAY of the column's width, or minimal-width BYTE_ARRAY;
* DATE: INT32 days since 1970-01-01;
* TIMESTAMP: INT64 millis / micros / nanos since the epoch (naive datetimes are taken as UTC);
* TIME: nanoseconds after midnight (:func:`time_of_day_nanos`; a UTC offset is applied or refused
  per isAdjustedToUTC, never dropped);
* legacy INT96 timestamps (Spark's default): 8 bytes LE nanoseconds of the day, then 4 bytes LE
  Julian day number: :func:`int96_bytes` for one value, :func:`int96_rows` for a numpy batch (the
  one INT96 implementation; :func:`encode_int96` and :mod:`secure_bloom.values.arrow` use them).

:class:`NanoTimestamp` is a ``datetime`` plus the nanoseconds ``datetime`` cannot hold.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..errors import InvalidValueError
from ..spec import JULIAN_DAY_OF_UNIX_EPOCH, NANOS_PER_DAY, NANOS_PER_SECOND, SECONDS_PER_DAY, UNITS_PER_SECOND
from ..types import PhysicalType

__all__ = [
    "encode_string",
    "encode_decimal",
    "encode_date",
    "encode_timestamp",
    "encode_int96",
    "time_of_day_nanos",
    "int96_bytes",
    "int96_rows",
    "minimal_twos_complement",
    "NanoTimestamp",
    "TimeUnit",
]

TimeUnit = Literal["millis", "micros", "nanos"]
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_MAX_DECIMAL_DIGITS = 4096  # far beyond DECIMAL(76) of a 32-byte FLBA; bounds hostile exponents
_INT96_RANGE = "outside the INT96 range (Julian day 0..2^32-1)"


@dataclass(frozen=True)
class NanoTimestamp:
    """A ``datetime`` plus the nanoseconds below its microsecond (0..999), without pandas: what
    timestamp text with seven to nine fractional digits parses to. Naive or aware like ``datetime``.

    Parameters
    ----------
    datetime : datetime.datetime
        The instant to the microsecond.
    nanosecond : int, default 0
        The nanoseconds below it (0..999).

    Raises
    ------
    ValueError
        ``nanosecond`` outside 0..999.
    """

    datetime: dt.datetime
    nanosecond: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.nanosecond <= 999:
            raise ValueError(f"nanosecond must be 0..999, got {self.nanosecond}")

    def isoformat(self) -> str:
        """ISO 8601 text with nine fractional digits (``2024-01-02T03:04:05.123456789+00:00``).

        Returns
        -------
        str
            ``datetime.isoformat(timespec="microseconds")`` with the three nanosecond digits
            inserted before any UTC offset.

        Raises
        ------
        None
            Nothing of its own.
        """
        text = self.datetime.isoformat(timespec="microseconds")
        cut = len(self.datetime.replace(tzinfo=None).isoformat(timespec="microseconds"))
        return f"{text[:cut]}{self.nanosecond:03d}{text[cut:]}"


def encode_string(value: str) -> bytes:
    """STRING / UTF8 / ENUM / JSON: the UTF-8 bytes.

    Parameters
    ----------
    value : str
        The text.

    Returns
    -------
    bytes
        Its UTF-8 encoding (what the column stores and the filter hashes).

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The value has the wrong type, does not parse, or is out of the type's range.
    """
    if not isinstance(value, str):
        raise InvalidValueError(f"expected str, got {type(value).__name__}")
    return value.encode("utf-8")


def minimal_twos_complement(unscaled: int) -> bytes:
    """Big-endian two's complement in the fewest bytes (Java ``BigInteger.toByteArray()``).

    Parameters
    ----------
    unscaled : int
        A DECIMAL's unscaled value.

    Returns
    -------
    bytes
        The fewest bytes.

    Raises
    ------
    None
        Nothing of its own.
    """
    magnitude = unscaled if unscaled >= 0 else ~unscaled  # Java bitLength(): -128 fits one byte
    length = max(1, (magnitude.bit_length() + 8) // 8)
    return unscaled.to_bytes(length, "big", signed=True)


def _unscaled(value: Decimal | int | str | float, scale: int) -> int:
    try:
        dec = value if isinstance(value, Decimal) else Decimal(str(value))
        if not dec.is_finite():
            raise InvalidValueError(f"decimal value {value!r} is not finite")
        # Exact: the default 28-digit context would round DECIMAL(38) values silently.
        unscaled = dec.scaleb(scale, context=Context(prec=len(dec.as_tuple().digits) + 1,
                                                     Emax=MAX_EMAX, Emin=MIN_EMIN))
        if unscaled.adjusted() > _MAX_DECIMAL_DIGITS:  # int() of it would take unbounded memory
            raise InvalidValueError(f"decimal value {value!r} is too large for any DECIMAL column")
        if unscaled != unscaled.to_integral_value():
            raise InvalidValueError(f"{value} has more than {scale} fractional digits")
        return int(unscaled)
    except InvalidOperation:
        raise InvalidValueError(f"{value!r} is not a decimal number") from None


def encode_decimal(value: Decimal | int | str | float, physical_type: PhysicalType | str, *, scale: int,
                   precision: int | None = None, type_length: int | None = None) -> int | bytes:
    """DECIMAL(precision, scale) value -> what the column stores for ``physical_type``.

    Parameters
    ----------
    value : Decimal, int, str or float
        The number (a float must be exact at ``scale``).
    physical_type : PhysicalType or str
        INT32, INT64 (the unscaled value), FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY (big-endian two's
        complement).
    scale : int
        The column's scale.
    precision : int, optional
        The column's precision (checked when given).
    type_length : int, optional
        FIXED_LEN_BYTE_ARRAY's width.

    Returns
    -------
    int or bytes
        The unscaled integer, or its two's complement bytes.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The value has the wrong type, does not parse, or is out of the type's range.

    Examples
    --------
    >>> from decimal import Decimal
    >>> from secure_bloom.values.logical import encode_decimal
    >>> encode_decimal(Decimal("12.34"), "INT32", scale=2), encode_decimal("-1.5", "FIXED_LEN_BYTE_ARRAY", scale=1, type_length=4)
    (1234, b'\\xff\\xff\\xff\\xf1')
    """
    ptype = PhysicalType.coerce(physical_type)
    unscaled = _unscaled(value, scale)
    if precision is not None and len(str(abs(unscaled))) > precision:
        raise InvalidValueError(f"{value} exceeds DECIMAL precision {precision}")
    if ptype is PhysicalType.INT32:
        if not -(1 << 31) <= unscaled < (1 << 31):
            raise InvalidValueError(f"{value} does not fit an INT32 decimal")
        return unscaled
    if ptype is PhysicalType.INT64:
        if not -(1 << 63) <= unscaled < (1 << 63):
            raise InvalidValueError(f"{value} does not fit an INT64 decimal")
        return unscaled
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        if type_length is None:
            raise ValueError("FIXED_LEN_BYTE_ARRAY decimals need type_length")
        try:
            return unscaled.to_bytes(type_length, "big", signed=True)
        except OverflowError:
            raise InvalidValueError(f"{value} does not fit {type_length} bytes") from None
    if ptype is PhysicalType.BYTE_ARRAY:
        return minimal_twos_complement(unscaled)
    raise InvalidValueError(f"DECIMAL cannot be stored as {ptype.name}")


def encode_date(value: dt.date | str) -> int:
    """DATE -> INT32 days since 1970-01-01 (ISO-8601 strings accepted).

    Parameters
    ----------
    value : datetime.date or str
        The date (a datetime is refused: it is not a date).

    Returns
    -------
    int
        Days since 1970-01-01.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The value has the wrong type, does not parse, or is out of the type's range.

    Examples
    --------
    >>> from secure_bloom.values.logical import encode_date
    >>> encode_date("2024-02-29")
    19782
    """
    if isinstance(value, str):
        try:
            value = dt.date.fromisoformat(value)
        except ValueError:
            raise InvalidValueError(f"{value!r} is not an ISO-8601 date") from None
    if isinstance(value, dt.datetime):
        value = value.date()
    if not isinstance(value, dt.date):
        raise InvalidValueError(f"expected a date, got {type(value).__name__}")
    return (value - _EPOCH_DATE).days


def _as_utc(value: dt.datetime | str) -> dt.datetime:
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise InvalidValueError(f"{value!r} is not an ISO-8601 timestamp") from None
    if not isinstance(value, dt.datetime):
        raise InvalidValueError(f"expected a datetime, got {type(value).__name__}")
    if value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    return value.astimezone(dt.timezone.utc)


def _epoch_nanos(value: dt.datetime | str, extra_nanos: int) -> int:
    delta = _as_utc(value) - _EPOCH
    return (delta.days * SECONDS_PER_DAY + delta.seconds) * NANOS_PER_SECOND + delta.microseconds * 1000 + extra_nanos


def encode_timestamp(value: dt.datetime | str, unit: TimeUnit = "micros", *, nanos: int = 0) -> int:
    """TIMESTAMP -> INT64 count of ``unit`` since the epoch (UTC; naive means UTC).

    ``nanos`` adds sub-microsecond nanoseconds (0..999) that ``datetime`` cannot hold.

    Parameters
    ----------
    value : datetime.datetime or str
        The instant (ISO-8601 text accepted; naive means UTC).
    unit : {"millis", "micros", "nanos"}, default "micros"
        The column's unit.
    nanos : int, default 0
        Nanoseconds below the microsecond (0..999).

    Returns
    -------
    int
        The count of ``unit`` since 1970-01-01T00:00Z.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The value has the wrong type, does not parse, or is out of the type's range.
    ValueError
        ``unit`` is not millis, micros or nanos.
    """
    if unit not in UNITS_PER_SECOND:
        raise ValueError(f"unit must be millis, micros or nanos, got {unit!r}")
    if not 0 <= nanos <= 999:
        raise ValueError(f"nanos must be 0..999 (sub-microsecond part), got {nanos}")
    total = _epoch_nanos(value, nanos)
    divisor = NANOS_PER_SECOND // UNITS_PER_SECOND[unit]
    if total % divisor:
        raise InvalidValueError(f"{value} is finer than the column's {unit} precision")
    return total // divisor


def time_of_day_nanos(value: dt.time, *, adjusted_to_utc: bool | None, nanos: int = 0) -> int:
    """TIME: nanoseconds after midnight of ``value`` (plus ``nanos``, 0..999, below its
    microsecond) as a TIME column stores it.

    A naive time is stored as written. A time with a UTC offset is a time of day in UTC only once
    the offset is applied: a UTC-adjusted column (``adjusted_to_utc``) gets it converted to UTC,
    wrapping within the day as ``java.time.OffsetTime.withOffsetSameInstant(ZoneOffset.UTC)``
    does (``01:00+02:00`` is ``23:00``); a local column (not adjusted, or not known to be) refuses
    it. A time zone without a fixed offset (a named zone, whose offset depends on a date a time
    of day does not have) is refused: either is :class:`InvalidValueError`, never a dropped offset.

    Parameters
    ----------
    value : datetime.time
        The time of day, naive or with a fixed UTC offset.
    adjusted_to_utc : bool or None
        The column's ``isAdjustedToUTC`` (None: not known).
    nanos : int, default 0
        Nanoseconds below the microsecond (0..999).

    Returns
    -------
    int
        Nanoseconds after midnight, 0 .. 86_399_999_999_999 (UTC for an adjusted column given an
        offset).

    Raises
    ------
    ValueError
        ``nanos`` outside 0..999.
    secure_bloom.errors.InvalidValueError
        An offset on a column not adjusted to UTC, or a zone without a fixed offset.
    """

    if not 0 <= nanos <= 999:
        raise ValueError(f"nanos must be 0..999 (sub-microsecond part), got {nanos}")
    total = (((value.hour * 60 + value.minute) * 60 + value.second) * 10**6 + value.microsecond) * 1000 + nanos
    if value.tzinfo is None:
        return total
    offset = value.utcoffset()
    if offset is None:
        raise InvalidValueError(f"has the time zone {str(value.tzinfo)[:60]!r}, whose UTC offset depends on a date "
                                "a time of day does not have: give a fixed offset (+02:00) or none")
    if not adjusted_to_utc:
        raise InvalidValueError("has a UTC offset, but the column holds local times of day (TIME with "
                                "isAdjustedToUTC=false): give the time without an offset")
    return (total - offset // dt.timedelta(microseconds=1) * 1000) % NANOS_PER_DAY


def encode_int96(value: dt.datetime | str, *, nanos: int = 0) -> bytes:
    """Legacy INT96 timestamp: 8 bytes LE nanoseconds of the day + 4 bytes LE Julian day.

    Parameters
    ----------
    value : datetime.datetime or str
        The instant (naive means UTC).
    nanos : int, default 0
        Nanoseconds below the microsecond (0..999).

    Returns
    -------
    bytes
        The 12 stored bytes (what Spark writes and the filter hashes).

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The value has the wrong type, does not parse, or is out of the type's range.
    """
    try:
        return int96_bytes(*divmod(_epoch_nanos(value, nanos), NANOS_PER_DAY))
    except InvalidValueError:
        raise InvalidValueError(f"{value} is {_INT96_RANGE}") from None


def int96_bytes(days: int, nanos_of_day: int) -> bytes:
    """The 12 INT96 bytes of (days since 1970-01-01, nanoseconds of that day, 0..86399999999999):
    8 bytes LE nanoseconds of the day, then 4 bytes LE Julian day.

    Parameters
    ----------
    days : int
        Days since 1970-01-01.
    nanos_of_day : int
        Nanoseconds of that day.

    Returns
    -------
    bytes
        12 bytes.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        The value has the wrong type, does not parse, or is out of the type's range.
    """
    julian = days + JULIAN_DAY_OF_UNIX_EPOCH
    if not 0 <= julian < (1 << 32):
        raise InvalidValueError(f"timestamp is {_INT96_RANGE}")
    return nanos_of_day.to_bytes(8, "little") + julian.to_bytes(4, "little")


def int96_rows(days: npt.NDArray[np.int64], nanos_of_day: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """:func:`int96_bytes` of many values, as an ``(n, 12)`` uint8 matrix.

    Parameters
    ----------
    days : numpy.ndarray of int64
        Days since 1970-01-01.
    nanos_of_day : numpy.ndarray of uint64
        Nanoseconds of each day.

    Returns
    -------
    numpy.ndarray of uint8, shape (n, 12)
        The stored bytes.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        A Julian day outside the 32-bit range.
    """
    julian = days.astype(np.int64) + JULIAN_DAY_OF_UNIX_EPOCH
    if julian.size and (julian.min() < 0 or julian.max() >= (1 << 32)):
        raise InvalidValueError(f"timestamp is {_INT96_RANGE}")
    out = np.empty((julian.shape[0], 12), dtype=np.uint8)
    out[:, :8] = nanos_of_day.astype("<u8").view(np.uint8).reshape(-1, 8)
    out[:, 8:] = julian.astype("<u4").view(np.uint8).reshape(-1, 4)
    return out
