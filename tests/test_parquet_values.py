"""values.py: user values and command-line text -> the physical value a column stores (LogicalTypes.md,
SPEC_NOTES 2). Expected encodings are literal, worked out by hand from the spec."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from secure_bloom.errors import InvalidValueError
from secure_bloom.hashing import PhysicalType, hash_value
from secure_bloom.parquet import ColumnInfo, display_value, encode_value, value_from_text
from secure_bloom.parquet.values import hash_for_column


def col(ptype: str, logical: str | None = None, **kw: Any) -> ColumnInfo:
    return ColumnInfo(path=kw.pop("path", "c"), path_in_schema=("c",), ordinal=0,
                      physical_type=PhysicalType[ptype], logical_type=logical, **kw)


STRING = col("BYTE_ARRAY", "STRING")
BINARY = col("BYTE_ARRAY")
INT32 = col("INT32")
INT64 = col("INT64")
UINT8 = col("INT32", "INTEGER", int_bits=8, int_signed=False)
FLOAT = col("FLOAT")
DOUBLE = col("DOUBLE")
DATE = col("INT32", "DATE")
TS_MICROS = col("INT64", "TIMESTAMP", time_unit="micros", is_adjusted_to_utc=True)
TS_MILLIS = col("INT64", "TIMESTAMP", time_unit="millis", is_adjusted_to_utc=True)
TS_NANOS = col("INT64", "TIMESTAMP", time_unit="nanos", is_adjusted_to_utc=False)
INT96 = col("INT96")
DEC32 = col("INT32", "DECIMAL", scale=2, precision=9)
DEC64 = col("INT64", "DECIMAL", scale=3, precision=18)
DEC_FLBA = col("FIXED_LEN_BYTE_ARRAY", "DECIMAL", scale=2, precision=25, type_length=11)
DEC_BA = col("BYTE_ARRAY", "DECIMAL", scale=1, precision=30)
UUID_COL = col("FIXED_LEN_BYTE_ARRAY", "UUID", type_length=16)
F16 = col("FIXED_LEN_BYTE_ARRAY", "FLOAT16", type_length=2)
TIME_MS = col("INT32", "TIME", time_unit="millis")
BOOL = col("BOOLEAN")

U = "12345678-1234-5678-1234-567812345678"

ENCODINGS = [
    (STRING, "héllo", "héllo".encode()),
    (STRING, b"\xff", b"\xff"),
    (BINARY, b"\x00\x01", b"\x00\x01"),
    (BINARY, "abc", b"abc"),
    (INT32, -5, -5),
    (INT64, 2**40, 2**40),
    (INT64, np.int64(-1), -1),
    (UINT8, 255, 255),
    (FLOAT, 1.5, np.float32(1.5)),
    (DOUBLE, 3, 3.0),
    (DATE, dt.date(2000, 1, 1), 10957),
    (DATE, 10957, 10957),
    (TS_MICROS, dt.datetime(1970, 1, 1, 0, 0, 1, 5), 1_000_005),
    (TS_MICROS, dt.datetime(1970, 1, 1, 1, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), 1_000_000),
    (TS_MILLIS, dt.datetime(1970, 1, 2), 86_400_000),
    (TS_NANOS, np.datetime64("1970-01-01T00:00:00.000000007"), 7),
    (TS_MICROS, 42, 42),
    (INT96, dt.datetime(1970, 1, 1, 0, 0, 1), (10**9).to_bytes(8, "little") + (2440588).to_bytes(4, "little")),
    (INT96, np.datetime64("1970-01-02T00:00:00.000000003"), (3).to_bytes(8, "little") + (2440589).to_bytes(4, "little")),
    (DEC32, Decimal("1.23"), 123),
    (DEC32, "-0.5", -50),
    (DEC64, 7, 7000),
    (DEC_FLBA, Decimal("-1.00"), (-100).to_bytes(11, "big", signed=True)),
    (DEC_BA, Decimal("12.8"), b"\x00\x80"),
    (UUID_COL, U, uuid.UUID(U).bytes),
    (UUID_COL, uuid.UUID(U), uuid.UUID(U).bytes),
    (F16, 1.0, b"\x00\x3c"),
    (TIME_MS, dt.time(0, 0, 1, 500_000), 1500),
]


@pytest.mark.parametrize("column,value,expected", ENCODINGS)
def test_encode_value(column: ColumnInfo, value: Any, expected: Any) -> None:
    got = encode_value(value, column)
    assert type(got) is type(expected) and got == expected
    assert hash_for_column(value, column) == hash_value(expected, column.physical_type,
                                                        type_length=column.type_length)


@pytest.mark.parametrize("column,value,why", [
    (INT32, 2**32, "INT32"),
    (UINT8, 256, "UINT8"),
    (UINT8, -1, "UINT8"),
    (INT32, "5", "integer"),
    (INT64, True, "integer"),
    (DOUBLE, "1.0", "number"),
    (DATE, "01/02/2003", "ISO-8601"),
    (TS_MILLIS, dt.datetime(1970, 1, 1, 0, 0, 0, 1), "millis"),
    (DEC32, Decimal("1.234"), "fractional"),
    (DEC32, Decimal("10000000.00"), "precision"),
    (DEC_FLBA, 10**30, "precision"),
    (UUID_COL, "not-a-uuid", "UUID"),
    (UUID_COL, b"short", "16 bytes"),
    (BOOL, True, "BOOLEAN"),
    (STRING, None, "null"),
    (STRING, 5, "bytes or text"),
])
def test_invalid_values_name_column_and_type(column: ColumnInfo, value: Any, why: str) -> None:
    with pytest.raises(InvalidValueError, match=why) as err:
        encode_value(value, column)
    assert "'c'" in str(err.value) and column.type_name in str(err.value)


@pytest.mark.parametrize("column,text,expected", [
    (STRING, "hello", "hello"),
    (STRING, "hex:00ff", b"\x00\xff"),
    (STRING, "text:hex:00", "hex:00"),
    (BINARY, "hex:", b""),
    (INT32, "-42", -42),
    (INT64, "0x10", 16),
    (INT64, "1_000", 1000),
    (DOUBLE, "2.5", 2.5),
    (FLOAT, "nan", None),
    (DATE, "2024-02-29", dt.date(2024, 2, 29)),
    (DATE, "19782", 19782),
    (TS_MICROS, "2024-01-01T00:00:00Z", dt.datetime(2024, 1, 1)),
    (TS_MICROS, "2024-01-01T02:00:00.25+02:00", dt.datetime(2024, 1, 1, 0, 0, 0, 250_000)),
    (TS_MICROS, "2024-01-01", dt.datetime(2024, 1, 1)),
    (TS_NANOS, "1970-01-01T00:00:00.123456789", np.datetime64("1970-01-01T00:00:00.123456789", "ns")),
    (INT96, "hex:" + "00" * 12, b"\x00" * 12),
    (INT96, "2020-02-02 10:00:00", dt.datetime(2020, 2, 2, 10)),
    (DEC_FLBA, "-12.50", Decimal("-12.50")),
    (DEC_FLBA, "hex:" + "ff" * 11, b"\xff" * 11),
    (UUID_COL, U, uuid.UUID(U)),
    (TIME_MS, "00:00:01.5", dt.time(0, 0, 1, 500_000)),
])
def test_value_from_text(column: ColumnInfo, text: str, expected: Any) -> None:
    got = value_from_text(text, column)
    if expected is None:
        assert np.isnan(got)
    else:
        assert got == expected and type(got) is type(expected)
    encode_value(got, column)


def test_nanosecond_text_keeps_every_digit() -> None:
    got = value_from_text("2024-05-06T07:08:09.987654321Z", TS_NANOS)
    assert encode_value(got, TS_NANOS) % 10**9 == 987_654_321
    with pytest.raises(InvalidValueError, match="micros"):
        value_from_text("2024-05-06T07:08:09.987654321Z", TS_MICROS)


@pytest.mark.parametrize("column,text", [
    (INT32, "4.5"), (INT32, "ten"), (INT32, "99999999999"), (DOUBLE, "x"), (DATE, "2024-13-01"),
    (TS_MICROS, "yesterday"), (DEC32, "1.2.3"), (DEC32, "1.001"), (BINARY, "hex:zz"), (INT96, "hex:00"),
    (BOOL, "true"), (UUID_COL, "xyz"), (TS_NANOS, "2024-01-01T00:00:00.1234567891"),
])
def test_bad_text_is_invalid_value_error(column: ColumnInfo, text: str) -> None:
    with pytest.raises(InvalidValueError, match="'c'"):
        value_from_text(text, column)


def test_display_value() -> None:
    assert display_value("x") == "x"
    assert display_value(b"\x01\xab") == "hex:01ab"
    assert display_value(0.1) == "0.1" and display_value(np.float32(0.25)) == "0.25"
    assert display_value(Decimal("1.50")) == "1.50"
    assert display_value(dt.date(2024, 1, 2)) == "2024-01-02"
    assert display_value(np.int32(7)) == "7"
