"""Logical values -> the physical values Parquet stores (SPEC_NOTES 2, LogicalTypes.md)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

from secure_bloom.errors import InvalidValueError
from secure_bloom.values.logical import (
    encode_date,
    encode_decimal,
    encode_int96,
    encode_string,
    encode_timestamp,
    minimal_twos_complement,
)

PROPERTY = settings(max_examples=examples(100), deadline=None)


def test_string() -> None:
    assert encode_string("héllo") == "héllo".encode("utf-8")
    assert encode_string("") == b""
    with pytest.raises(InvalidValueError):
        encode_string(b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "expected"), [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x00\x80"), (255, b"\x00\xff"), (256, b"\x01\x00"),
    (-1, b"\xff"), (-127, b"\x81"), (-128, b"\x80"), (-129, b"\xff\x7f"), (-256, b"\xff\x00"),
    (-32768, b"\x80\x00"), (-32769, b"\xff\x7f\xff"), (2**63, b"\x00\x80" + b"\x00" * 7),
])
def test_minimal_twos_complement_matches_java_biginteger(value: int, expected: bytes) -> None:
    """Java ``BigInteger.valueOf(value).toByteArray()`` (checked with jshell for the negatives)."""
    assert minimal_twos_complement(value) == expected


@PROPERTY
@given(st.integers(-(2**200), 2**200))
def test_minimal_twos_complement_is_minimal_and_exact(value: int) -> None:
    raw = minimal_twos_complement(value)
    assert int.from_bytes(raw, "big", signed=True) == value
    if len(raw) > 1:  # one byte fewer cannot hold it
        with pytest.raises(OverflowError):
            value.to_bytes(len(raw) - 1, "big", signed=True)


def test_decimal_physical_types() -> None:
    assert encode_decimal(Decimal("123.45"), "INT32", scale=2, precision=9) == 12345
    assert encode_decimal("-0.01", "INT64", scale=2, precision=18) == -1
    assert encode_decimal(5, "INT32", scale=3) == 5000
    assert encode_decimal(Decimal("-1.00"), "FIXED_LEN_BYTE_ARRAY", scale=2, type_length=4) == b"\xff\xff\xff\x9c"
    assert encode_decimal(Decimal("1.28"), "BYTE_ARRAY", scale=2) == b"\x00\x80"
    assert encode_decimal(Decimal("-1.28"), "BYTE_ARRAY", scale=2) == b"\x80"


def test_decimal38_is_exact() -> None:
    """More digits than the default 28-digit decimal context: no silent rounding."""
    value = Decimal("12345678901234567890123456789012.345678")
    expected = (12345678901234567890123456789012345678).to_bytes(16, "big", signed=True)
    assert encode_decimal(value, "FIXED_LEN_BYTE_ARRAY", scale=6, precision=38, type_length=16) == expected
    negative = Decimal("-12345678901234567890123456789012.345678")  # (-value would round: 28 digits)
    assert encode_decimal(negative, "BYTE_ARRAY", scale=6, precision=38) == \
        minimal_twos_complement(-12345678901234567890123456789012345678)


@PROPERTY
@given(st.decimals(min_value=-(10**37), max_value=10**37, places=0, allow_nan=False, allow_infinity=False),
       st.integers(0, 10))
def test_decimal_matches_arrow_unscaled(unscaled: Decimal, scale: int) -> None:
    """Arrow's decimal128 stores the same unscaled integer we compute."""
    value = unscaled.scaleb(-scale, context=__import__("decimal").Context(prec=60))
    stored = pa.array([value], type=pa.decimal128(38, scale))
    little = stored.buffers()[1].to_pybytes()[:16]
    assert encode_decimal(value, "FIXED_LEN_BYTE_ARRAY", scale=scale, type_length=16) == little[::-1]


@pytest.mark.parametrize(("value", "kwargs"), [
    (Decimal("1.234"), {"physical_type": "INT32", "scale": 2}),           # too many fractional digits
    (Decimal("2147483648"), {"physical_type": "INT32", "scale": 0}),      # INT32 overflow
    (Decimal("9223372036854775808"), {"physical_type": "INT64", "scale": 0}),
    (Decimal("128"), {"physical_type": "FIXED_LEN_BYTE_ARRAY", "scale": 0, "type_length": 1}),
    (Decimal("1000"), {"physical_type": "INT32", "scale": 0, "precision": 3}),
    (Decimal("NaN"), {"physical_type": "INT32", "scale": 0}),
    ("Infinity", {"physical_type": "INT64", "scale": 0}),
    ("not a number", {"physical_type": "INT64", "scale": 0}),
    ("1e999999999", {"physical_type": "BYTE_ARRAY", "scale": 2}),         # would need a huge int
    (Decimal(1), {"physical_type": "DOUBLE", "scale": 0}),
])
def test_decimal_refusals(value: object, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidValueError):
        encode_decimal(value, **kwargs)  # type: ignore[arg-type]


def test_date() -> None:
    assert encode_date(dt.date(1970, 1, 1)) == 0
    assert encode_date("1970-01-02") == 1
    assert encode_date(dt.date(1969, 12, 31)) == -1
    assert encode_date(dt.datetime(2000, 1, 1, 23, 59)) == 10957
    for bad in ("2020-13-01", 17, None):
        with pytest.raises(InvalidValueError):
            encode_date(bad)  # type: ignore[arg-type]


def test_timestamp_units() -> None:
    t = dt.datetime(2021, 3, 4, 5, 6, 7, 891011, tzinfo=dt.timezone.utc)
    micros = 1614834367891011
    assert encode_timestamp(t) == micros
    assert encode_timestamp(t, "nanos", nanos=5) == micros * 1000 + 5
    assert encode_timestamp(t.replace(microsecond=891000), "millis") == micros // 1000
    assert encode_timestamp("2021-03-04T05:06:07.891011Z") == micros
    assert encode_timestamp(t.replace(tzinfo=None)) == micros  # naive = UTC
    berlin = dt.timezone(dt.timedelta(hours=1))
    assert encode_timestamp(t.astimezone(berlin)) == micros
    assert encode_timestamp(dt.datetime(1969, 12, 31, 23, 59, 59, 999999)) == -1
    with pytest.raises(InvalidValueError):
        encode_timestamp(t, "millis")  # finer than millis
    with pytest.raises(ValueError):
        encode_timestamp(t, "seconds")  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError):
        encode_timestamp("yesterday")


@PROPERTY
@given(st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2300, 1, 1)))
def test_timestamp_matches_arrow(value: dt.datetime) -> None:
    stored = pa.array([value], type=pa.timestamp("us")).cast(pa.int64()).to_pylist()[0]
    assert encode_timestamp(value) == stored


def test_int96_layout() -> None:
    """8 bytes LE nanoseconds of the day, then 4 bytes LE Julian day (2440588 = 1970-01-01)."""
    assert encode_int96(dt.datetime(1970, 1, 1)) == (0).to_bytes(8, "little") + (2440588).to_bytes(4, "little")
    one = encode_int96(dt.datetime(1970, 1, 2, 0, 0, 1), nanos=7)
    assert one == (10**9 + 7).to_bytes(8, "little") + (2440589).to_bytes(4, "little")
    before = encode_int96(dt.datetime(1969, 12, 31, 23, 59, 59))
    assert before == (86_399 * 10**9).to_bytes(8, "little") + (2440587).to_bytes(4, "little")
    assert len(encode_int96("2024-02-29T12:00:00+02:00")) == 12


@pytest.mark.parametrize("nanos", [-1, 1000])
def test_timestamp_nanos_out_of_range(nanos: int) -> None:
    with pytest.raises(ValueError, match="0..999"):
        encode_timestamp(dt.datetime(2024, 1, 1), "nanos", nanos=nanos)


def test_timestamp_nanos_in_range() -> None:
    base = encode_timestamp(dt.datetime(2024, 1, 1), "nanos")
    assert encode_timestamp(dt.datetime(2024, 1, 1), "nanos", nanos=999) == base + 999
