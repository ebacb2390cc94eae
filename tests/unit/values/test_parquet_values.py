"""values.py: user values and command-line text -> the physical value a column stores (LogicalTypes.md,
SPEC_NOTES 2). Expected encodings are literal, worked out by hand from the spec."""

from __future__ import annotations

import datetime as dt
import uuid
import zoneinfo
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from secure_bloom.errors import InvalidValueError
from secure_bloom.parquet import ColumnInfo, display_value, encode_value, value_from_text
from secure_bloom.types import PhysicalType
from secure_bloom.values import NanoTimestamp, QueryHashes, hash_for_column, hash_value, maybe_in, query_hashes


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
    (STRING, "hex:00ff", "hex:00ff"),  # a string column's text is literal, prefix or not
    (STRING, "text:x", "text:x"),
    (BINARY, "hex:00ff", b"\x00\xff"),
    (BINARY, "text:hex:00", "hex:00"),
    (BINARY, "hex:", b""),
    (INT32, "-42", -42),
    (INT64, "0x10", 16),
    (INT64, "1_000", 1000),
    (DOUBLE, "2.5", 2.5),
    (FLOAT, "nan", None),
    (DATE, "2024-02-29", dt.date(2024, 2, 29)),
    (DATE, "19782", 19782),
    (TS_MICROS, "2024-01-01T00:00:00Z", dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)),
    (TS_MICROS, "2024-01-01T02:00:00.25+02:00", dt.datetime(2024, 1, 1, 0, 0, 0, 250_000, tzinfo=dt.timezone.utc)),
    (TS_NANOS, "2024-01-01", dt.datetime(2024, 1, 1)),  # a wall-clock column takes naive text as it is
    (TS_NANOS, "1970-01-01T00:00:00.123456789", NanoTimestamp(dt.datetime(1970, 1, 1, 0, 0, 0, 123456), 789)),
    (INT96, "hex:" + "00" * 12, b"\x00" * 12),
    (INT96, "2020-02-02 10:00:00Z", dt.datetime(2020, 2, 2, 10, tzinfo=dt.timezone.utc)),
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


# --- query semantics (query_hashes): SQL equality, not bit equality ----------------------------

TS_US_LOCAL = col("INT64", "TIMESTAMP", time_unit="micros", is_adjusted_to_utc=False)
TIME_US = col("INT64", "TIME", time_unit="micros")
TIME_NS = col("INT64", "TIME", time_unit="nanos")
DOUBLE_NEG_NAN = np.array([0xFFF8000000000000], dtype=np.uint64).view(np.float64)[0]
DOUBLE_PAYLOAD_NAN = np.array([0x7FF0000000000001], dtype=np.uint64).view(np.float64)[0]
FLOAT_NEG_NAN = np.array([0xFFC00000], dtype=np.uint32).view(np.float32)[0]


def h(physical: Any, column: ColumnInfo) -> int:
    return hash_value(physical, column.physical_type, type_length=column.type_length)


@pytest.mark.parametrize("column,value,zeros", [
    (DOUBLE, 0.0, [0.0, -0.0]), (DOUBLE, -0.0, [0.0, -0.0]), (DOUBLE, 0, [0.0, -0.0]),
    (FLOAT, -0.0, [np.float32(0.0), np.float32(-0.0)]), (FLOAT, np.float32(0.0), [np.float32(0.0), np.float32(-0.0)]),
    (F16, 0.0, [b"\x00\x00", b"\x00\x80"]), (F16, b"\x00\x80", [b"\x00\x00", b"\x00\x80"]),
])
def test_a_zero_asks_for_both_zeros(column: ColumnInfo, value: Any, zeros: list[Any]) -> None:
    assert query_hashes(value, column) == QueryHashes(hashes=tuple(h(z, column) for z in zeros))
    assert hash_for_column(value, column) == h(zeros[1] if str(value).startswith("-") or value == b"\x00\x80"
                                               else zeros[0], column)  # the bit-exact API keeps the sign


@pytest.mark.parametrize("column,value", [
    (DOUBLE, float("nan")), (DOUBLE, DOUBLE_NEG_NAN), (DOUBLE, DOUBLE_PAYLOAD_NAN), (DOUBLE, np.float32("nan")),
    (FLOAT, float("nan")), (FLOAT, FLOAT_NEG_NAN), (FLOAT, DOUBLE_NEG_NAN),
    (F16, float("nan")), (F16, b"\x01\xfe"),
])
def test_every_nan_is_always_maybe(column: ColumnInfo, value: Any) -> None:
    query = query_hashes(value, column)
    assert query.always_maybe is True

    class NothingInside:
        def check_hashes(self, hashes: Any) -> Any:
            return np.zeros(len(hashes), dtype=bool)

    assert maybe_in(NothingInside(), [query]) == [True]


def test_maybe_in_any_hit_means_maybe() -> None:
    from secure_bloom.filter import SplitBlockBloomFilter

    bf = SplitBlockBloomFilter(1024)
    bf.insert_hash(h(-0.0, DOUBLE))
    queries = [query_hashes(v, DOUBLE) for v in (0.0, -0.0, 1.5, float("nan"))]
    assert maybe_in(bf, queries) == [True, True, bf.check_hash(h(1.5, DOUBLE)), True]
    assert bf.check_hash(h(0.0, DOUBLE)) is False  # the filter itself stays bit-exact
    assert maybe_in(None, queries) == [True] * 4 and maybe_in(bf, []) == []


def test_time_nanos_text_keeps_every_digit() -> None:
    nanos = ((12 * 60 + 34) * 60 + 56) * 10**9 + 123_456_789
    assert encode_value(value_from_text("12:34:56.123456789", TIME_NS), TIME_NS) == nanos
    assert encode_value(np.timedelta64(nanos, "ns"), TIME_NS) == nanos
    assert encode_value(dt.time(12, 34, 56, 123456), TIME_NS) == nanos - 789  # a time's micros are exact
    assert encode_value(value_from_text("12:34:56.123456000", TIME_US), TIME_US) == nanos // 1000 - 0
    with pytest.raises(InvalidValueError, match="finer than the column's micros precision"):
        value_from_text("12:34:56.123456789", TIME_US)
    with pytest.raises(InvalidValueError, match="finer than the column's micros precision"):
        encode_value(np.timedelta64(1, "ns"), TIME_US)
    with pytest.raises(InvalidValueError, match="within one day"):
        encode_value(np.timedelta64(25, "h"), TIME_NS)


TIME_US_UTC = col("INT64", "TIME", time_unit="micros", is_adjusted_to_utc=True)
TIME_NS_UTC = col("INT64", "TIME", time_unit="nanos", is_adjusted_to_utc=True)
TIME_MS_LOCAL = col("INT32", "TIME", time_unit="millis", is_adjusted_to_utc=False)
TEN_UTC_US = 10 * 3600 * 10**6


@pytest.mark.parametrize("text,micros", [
    ("12:00:00+02:00", TEN_UTC_US),           # the offset applied: 10:00 UTC
    ("05:30:00-04:30", TEN_UTC_US),
    ("10:00:00Z", TEN_UTC_US), ("10:00:00+00:00", TEN_UTC_US), ("10:00:00", TEN_UTC_US),  # naive: as written
    ("01:00:00+02:00", 23 * 3600 * 10**6),     # wraps within the day, as java.time.OffsetTime does
    ("23:30:00-01:00", 30 * 60 * 10**6),
    ("12:00:00.000001+02:00", TEN_UTC_US + 1),
])
def test_time_text_offset_is_converted_for_a_utc_adjusted_column(text: str, micros: int) -> None:
    value = value_from_text(text, TIME_US_UTC)
    assert encode_value(value, TIME_US_UTC) == micros
    assert query_hashes(text, TIME_US_UTC) == QueryHashes(hashes=(h(micros, TIME_US_UTC),))


def test_time_offset_keeps_nanoseconds_and_applies_to_api_times() -> None:
    got = value_from_text("12:00:00.123456789+02:00", TIME_NS_UTC)
    assert encode_value(got, TIME_NS_UTC) == TEN_UTC_US * 1000 + 123_456_789
    aware = dt.time(12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert encode_value(aware, TIME_US_UTC) == TEN_UTC_US
    assert hash_for_column(aware, TIME_US_UTC) == h(TEN_UTC_US, TIME_US_UTC)


@pytest.mark.parametrize("value", ["10:00:00+02:00", "10:00:00Z", "10:00:00.123456789+00:00",
                                   dt.time(10, tzinfo=dt.timezone.utc)])
def test_time_offset_is_refused_for_a_local_column(value: Any) -> None:
    for column in (TIME_MS_LOCAL, TIME_MS):  # not adjusted, and not known to be
        with pytest.raises(InvalidValueError, match="has a UTC offset, but the column holds local times of day"):
            query_hashes(value, column)
    with pytest.raises(InvalidValueError, match="has a UTC offset, but the column holds local times of day"):
        value_from_text("10:00:00+02:00", TIME_MS_LOCAL)


def test_time_with_a_named_zone_is_refused() -> None:
    paris = dt.time(12, tzinfo=zoneinfo.ZoneInfo("Europe/Paris"))  # its offset depends on the date
    with pytest.raises(InvalidValueError, match="whose UTC offset depends on a date"):
        encode_value(paris, TIME_US_UTC)


def test_timestamp_nanos_text_and_numpy_are_exact() -> None:
    want = int(np.datetime64("2024-01-02T03:04:05.123456789", "ns").astype(np.int64))
    got = value_from_text("2024-01-02T03:04:05.123456789", TS_NANOS)
    assert got == NanoTimestamp(dt.datetime(2024, 1, 2, 3, 4, 5, 123456), 789)
    assert encode_value(got, TS_NANOS) == want
    assert encode_value(np.datetime64("2024-01-02T03:04:05.123456789", "ns"), TS_NANOS) == want
    assert encode_value(value_from_text("2024-01-02T03:04:05.1234567890", TS_NANOS), TS_NANOS) == want
    assert encode_value(np.datetime64("2000-01-01", "D"), DATE) == 10957
    with pytest.raises(InvalidValueError, match="whole day"):
        encode_value(np.datetime64("2000-01-01T12", "h"), DATE)


# Naive date/times on columns of UTC instants: refused without a zone (PySpark collect() gives LOCAL times).

@pytest.mark.parametrize("column", [TS_MICROS, TS_MILLIS, INT96])
@pytest.mark.parametrize("value", [dt.datetime(2024, 5, 1, 12), dt.date(2024, 5, 1), "2024-05-01T12:00:00",
                                   "2024-05-01"])
def test_naive_values_for_utc_columns_need_a_time_zone(column: ColumnInfo, value: Any) -> None:
    with pytest.raises(InvalidValueError, match=r"'c' .*naive.*timezone=.*--timezone"):
        query_hashes(value, column)
    if isinstance(value, str):
        with pytest.raises(InvalidValueError, match="naive"):
            value_from_text(value, column)
    aware = dt.datetime(2024, 5, 1, 12 if "12" in str(value) else 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    want = {hash_for_column(aware, column)}
    assert set(query_hashes(value, column, timezone="Europe/Paris").hashes) == want
    assert set(query_hashes(value, column, timezone=zoneinfo.ZoneInfo("Europe/Paris")).hashes) == want


def test_naive_values_for_wall_clock_columns_are_taken_as_they_are() -> None:
    naive = dt.datetime(2024, 5, 1, 12)
    assert query_hashes(naive, TS_US_LOCAL).hashes == (hash_for_column(naive, TS_US_LOCAL),)
    assert query_hashes(naive, TS_US_LOCAL, timezone="Asia/Tokyo").hashes == (hash_for_column(naive, TS_US_LOCAL),)
    aware = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    assert query_hashes(aware, TS_MICROS, timezone="Asia/Tokyo").hashes == (hash_for_column(aware, TS_MICROS),)
    assert query_hashes(np.datetime64("2024-05-01T12:00:00", "us"), TS_MICROS).hashes == (
        hash_for_column(aware, TS_MICROS),)  # numpy carries no zone: UTC


def test_a_local_time_that_repeats_at_a_dst_change_asks_for_both_instants() -> None:
    got = set(query_hashes("2024-10-27T02:30:00", TS_MICROS, timezone="Europe/Paris").hashes)
    utc = dt.timezone.utc
    assert got == {hash_for_column(dt.datetime(2024, 10, 27, 0, 30, tzinfo=utc), TS_MICROS),
                   hash_for_column(dt.datetime(2024, 10, 27, 1, 30, tzinfo=utc), TS_MICROS)}
    nanos = query_hashes("2024-10-27T02:30:00.000000001", col("INT64", "TIMESTAMP", time_unit="nanos",
                                                               is_adjusted_to_utc=True), timezone="Europe/Paris")
    assert len(nanos.hashes) == 2


def test_unknown_time_zone_is_an_invalid_value() -> None:
    with pytest.raises(InvalidValueError, match="unknown time zone 'Mars/Olympus'"):
        query_hashes(dt.datetime(2024, 1, 1), TS_MICROS, timezone="Mars/Olympus")


def test_display_value_tells_nans_apart() -> None:
    assert display_value(float("nan")) == "nan"
    assert display_value(DOUBLE_NEG_NAN) == "nan(0xfff8000000000000)"
    assert display_value(-0.0) == "-0.0"
    assert display_value(NanoTimestamp(dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc), 7)) == \
        "2024-01-02T03:04:05.000006007+00:00"


def test_int96_numpy_datetime64_uses_the_julian_range_not_datetimes() -> None:
    """One INT96 implementation: a datetime64 beyond year 9999 is encoded (its Julian day fits
    4 bytes) instead of failing in a detour through ``datetime``; outside the Julian range it is refused."""
    days = (np.datetime64("10000-01-01", "D") - np.datetime64("1970-01-01", "D")).astype(int)
    assert encode_value(np.datetime64("10000-01-01T00:00:05", "s"), INT96) == \
        (5 * 10**9).to_bytes(8, "little") + int(days + 2440588).to_bytes(4, "little")
    with pytest.raises(InvalidValueError, match=r"outside the INT96 range \(Julian day 0\.\.2\^32-1\)"):
        encode_value(np.datetime64(-2440589, "D"), INT96)


@dataclass(frozen=True)
class _BareColumn:
    """Only the type facts of :class:`~secure_bloom.values.ColumnType`: no file layer involved."""

    path: str = "amount"
    path_in_schema: tuple[str, ...] = ("amount",)
    physical_type: PhysicalType = PhysicalType.INT32
    type_length: int | None = None
    logical_type: str | None = "DECIMAL"
    scale: int | None = 2
    precision: int | None = 9
    time_unit: str | None = None
    is_adjusted_to_utc: bool | None = None
    int_bits: int | None = None
    int_signed: bool | None = None
    type_name: str = "INT32/DECIMAL(9,2)"


def test_values_take_any_column_type_not_only_column_info() -> None:
    column = _BareColumn()
    assert encode_value(Decimal("12.34"), column) == 1234
    assert query_hashes("12.34", column).hashes == (hash_value(1234, PhysicalType.INT32),)
    with pytest.raises(InvalidValueError, match=r"^column 'amount' \(INT32/DECIMAL\(9,2\)\): Decimal\('1\.234'\) 1\.234 has more than 2"):
        value_from_text("1.234", column)
