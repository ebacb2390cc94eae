"""Hashing (SPEC_NOTES 2): XXH64 known answers, and the numpy path == the scalar path bit for bit.

The scalar path (:func:`hash_value`, one value through the ``xxhash`` package) is the reference;
:func:`hash_values` (numpy kernels, Arrow buffers) must agree with it for every physical type.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from secure_bloom.errors import InvalidValueError
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.types import PhysicalType
from secure_bloom.values.logical import encode_date, encode_decimal, encode_timestamp
from secure_bloom.values.physical import hash_binary_arrays, hash_value, hash_values, plain_bytes
from secure_bloom.xxh64 import xxh64_rows, xxh64_u32, xxh64_u64

P = PhysicalType
PROPERTY = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])

# SPEC_NOTES 2, "Known XXH64 seed-0 values".
KNOWN = [
    ("", P.BYTE_ARRAY, 0xEF46DB3751D8E999),
    ("hello", P.BYTE_ARRAY, 0x26C7827D889F6DA3),
    ("a", P.BYTE_ARRAY, 0xD24EC4F1A98C6E5B),
    ("abc", P.BYTE_ARRAY, 0x44BC2CF5AD770999),
    (0, P.INT64, 0x34C96ACDCADB1BBB),
    (1, P.INT64, 0x9F29CB17A2A49995),
    (-1, P.INT64, 0x85D136ADB773C6C9),
    (0, P.INT32, 0x3AEFA6FD5CF2DEB4),
    (42, P.INT32, 0xD756D7B62FC50BF1),
    (1.5, P.DOUBLE, 0x49F7B96B6B5CCAF9),
    (1.5, P.FLOAT, 0x4F2D82595C483A0D),
]


@pytest.mark.parametrize(("value", "ptype", "expected"), KNOWN)
def test_known_xxh64_scalar(value: object, ptype: PhysicalType, expected: int) -> None:
    assert hash_value(value, ptype) == expected


@pytest.mark.parametrize(("value", "ptype", "expected"), KNOWN)
def test_known_xxh64_batch(value: object, ptype: PhysicalType, expected: int) -> None:
    out = hash_values([value, value], ptype)
    assert out.dtype == np.uint64
    assert out.tolist() == [expected, expected]


def test_known_xxh64_numpy_and_arrow_inputs() -> None:
    assert xxh64_u64(np.array([0, 1, -1], dtype=np.int64).view(np.uint64)).tolist() == [
        0x34C96ACDCADB1BBB, 0x9F29CB17A2A49995, 0x85D136ADB773C6C9]
    assert xxh64_u32(np.array([0, 42], dtype=np.uint32)).tolist() == [0x3AEFA6FD5CF2DEB4, 0xD756D7B62FC50BF1]
    assert hash_values(np.array([1.5]), "DOUBLE").tolist() == [0x49F7B96B6B5CCAF9]
    assert hash_values(np.array([1.5], dtype=np.float32), "FLOAT").tolist() == [0x4F2D82595C483A0D]
    assert hash_values(pa.array(["", "hello", "a", "abc"]), "BYTE_ARRAY").tolist() == [
        0xEF46DB3751D8E999, 0x26C7827D889F6DA3, 0xD24EC4F1A98C6E5B, 0x44BC2CF5AD770999]


def test_plain_encodings() -> None:
    assert plain_bytes(-1, "INT32") == b"\xff\xff\xff\xff"
    assert plain_bytes(0xFFFFFFFF, "INT32") == b"\xff\xff\xff\xff"  # unsigned logical type, same bits
    assert plain_bytes(1, "INT64") == b"\x01" + b"\x00" * 7
    assert plain_bytes(-0.0, "DOUBLE") == struct.pack("<d", -0.0)
    assert plain_bytes("é", "BYTE_ARRAY") == "é".encode()  # no length prefix
    assert plain_bytes(b"\x00" * 12, "INT96") == b"\x00" * 12
    assert hash_value(0.0, "DOUBLE") != hash_value(-0.0, "DOUBLE")
    assert hash_value(0.0, "FLOAT") != hash_value(-0.0, "FLOAT")


@pytest.mark.parametrize("length", range(0, 101))
def test_rows_kernel_every_length(length: int) -> None:
    """Every tail shape of XXH64 (stripes, 8-byte lanes, 4-byte lane, single bytes)."""
    rng = np.random.default_rng(length)
    mat = rng.integers(0, 256, size=(7, length), dtype=np.uint8)
    expected = [xxhash.xxh64_intdigest(row.tobytes()) for row in mat]
    assert xxh64_rows(mat).tolist() == expected
    offsets = np.arange(8, dtype=np.int64) * length
    assert hash_binary_arrays(offsets, mat.reshape(-1)).tolist() == expected


# ----------------------------------------------------------------------- property: numpy == scalar


def _scalar(values: list[object], ptype: PhysicalType, type_length: int | None = None) -> list[int]:
    return [hash_value(v, ptype, type_length=type_length) for v in values if v is not None]


@PROPERTY
@given(st.lists(st.integers(-(2**31), 2**32 - 1), max_size=300))
def test_int32_paths_agree(values: list[int]) -> None:
    expected = _scalar(values, P.INT32)
    assert hash_values(values, P.INT32).tolist() == expected
    assert hash_values(np.array(values, dtype=np.int64), P.INT32).tolist() == expected
    as_u32 = np.array([v & 0xFFFFFFFF for v in values], dtype=np.uint32)
    assert hash_values(as_u32, P.INT32).tolist() == expected
    assert hash_values(as_u32.view(np.int32), P.INT32).tolist() == expected


@PROPERTY
@given(st.lists(st.integers(-(2**63), 2**64 - 1), max_size=300))
def test_int64_paths_agree(values: list[int]) -> None:
    expected = _scalar(values, P.INT64)
    assert hash_values(values, P.INT64).tolist() == expected
    as_u64 = np.array([v & (2**64 - 1) for v in values], dtype=np.uint64)
    assert hash_values(as_u64, P.INT64).tolist() == expected
    assert hash_values(as_u64.view(np.int64), P.INT64).tolist() == expected


@PROPERTY
@given(st.lists(st.integers(-(2**15), 2**15 - 1), max_size=200))
def test_narrow_int_arrays_sign_extend(values: list[int]) -> None:
    """int8/int16 arrays are sign-extended to 32 bits, as pyarrow and parquet-java store them."""
    expected = _scalar(values, P.INT32)
    assert hash_values(np.array(values, dtype=np.int16), P.INT32).tolist() == expected
    assert hash_values(pa.array(values, type=pa.int16()), P.INT32).tolist() == expected
    expected64 = _scalar(values, P.INT64)
    assert hash_values(np.array(values, dtype=np.int16), P.INT64).tolist() == expected64


def test_int_ranges_refused() -> None:
    for bad in (2**32, -(2**31) - 1):
        with pytest.raises(InvalidValueError):
            hash_value(bad, P.INT32)
        with pytest.raises(InvalidValueError):
            hash_values([bad], P.INT32)
        with pytest.raises(InvalidValueError):
            hash_values(np.array([bad], dtype=np.int64), P.INT32)
    with pytest.raises(InvalidValueError):
        hash_values(np.array([2**32], dtype=np.uint64), P.INT32)
    with pytest.raises(InvalidValueError):
        hash_value(2**64, P.INT64)
    with pytest.raises(InvalidValueError):
        hash_value(True, P.INT64)
    with pytest.raises(InvalidValueError):
        hash_values(["1"], P.INT64)
    with pytest.raises(InvalidValueError):
        hash_values([1], P.BOOLEAN)


float32_bits = st.integers(0, 2**32 - 1)
float64_bits = st.integers(0, 2**64 - 1)
nan32_bits = st.integers(1, 2**23 - 1).flatmap(lambda m: st.sampled_from([0x7F800000 | m, 0xFF800000 | m]))
nan64_bits = st.integers(1, 2**52 - 1).flatmap(
    lambda m: st.sampled_from([0x7FF0000000000000 | m, 0xFFF0000000000000 | m]))


@PROPERTY
@given(st.lists(st.one_of(float32_bits, nan32_bits), max_size=300))
def test_float_paths_agree_on_every_bit_pattern(bits: list[int]) -> None:
    """FLOAT as float32 numbers: -0.0, infinities, quiet and signalling NaN payloads included."""
    arr = np.array(bits, dtype=np.uint32).view(np.float32)
    raw = [xxhash.xxh64_intdigest(struct.pack("<I", b)) for b in bits]
    assert [hash_value(v, P.FLOAT) for v in arr] == raw
    assert hash_values(arr, P.FLOAT).tolist() == raw
    assert hash_values(pa.array(arr, type=pa.float32()), P.FLOAT).tolist() == raw


@PROPERTY
@given(st.lists(st.floats(width=32, allow_nan=True), max_size=300))
def test_float_python_values_agree(values: list[float]) -> None:
    expected = _scalar(values, P.FLOAT)
    assert hash_values(values, P.FLOAT).tolist() == expected
    assert hash_values(np.array(values, dtype=np.float64), P.FLOAT).tolist() == expected


@PROPERTY
@given(st.lists(st.one_of(float64_bits, nan64_bits), max_size=300))
def test_double_paths_agree_on_every_bit_pattern(bits: list[int]) -> None:
    arr = np.array(bits, dtype=np.uint64).view(np.float64)
    raw = [xxhash.xxh64_intdigest(struct.pack("<Q", b)) for b in bits]
    assert [hash_value(v, P.DOUBLE) for v in arr] == raw
    assert hash_values(arr, P.DOUBLE).tolist() == raw
    assert hash_values(pa.array(arr, type=pa.float64()), P.DOUBLE).tolist() == raw


@PROPERTY
@given(st.lists(st.floats(allow_nan=True) | st.integers(-(2**53), 2**53), max_size=300))
def test_double_python_values_agree(values: list[float]) -> None:
    expected = _scalar(values, P.DOUBLE)
    assert hash_values(values, P.DOUBLE).tolist() == expected


def test_float_that_does_not_fit_float32_is_refused_on_both_paths() -> None:
    """A finite double beyond float32's range cannot be a FLOAT value: one error, both paths."""
    for bad in (1e300, -1e39):
        with pytest.raises(InvalidValueError):
            hash_value(bad, P.FLOAT)
        with pytest.raises(InvalidValueError):
            hash_values([bad], P.FLOAT)
        with pytest.raises(InvalidValueError):
            hash_values(np.array([bad]), P.FLOAT)
    assert hash_value(float("inf"), P.FLOAT) == hash_values(np.array([np.inf]), P.FLOAT)[0]


@PROPERTY
@given(st.lists(st.binary(max_size=100) | st.none(), max_size=200))
def test_byte_array_paths_agree(values: list[bytes | None]) -> None:
    expected = [xxhash.xxh64_intdigest(v) for v in values if v is not None]
    assert _scalar(values, P.BYTE_ARRAY) == expected
    assert hash_values(values, P.BYTE_ARRAY).tolist() == expected
    for typ in (pa.binary(), pa.large_binary(), pa.binary_view()):
        assert hash_values(pa.array(values, type=typ), P.BYTE_ARRAY).tolist() == expected


@PROPERTY
@given(st.lists(st.text(max_size=40) | st.none(), max_size=200))
def test_strings_paths_agree(values: list[str | None]) -> None:
    expected = _scalar(values, P.BYTE_ARRAY)
    assert hash_values(values, P.BYTE_ARRAY).tolist() == expected
    for typ in (pa.string(), pa.large_string(), pa.string_view()):
        assert hash_values(pa.array(values, type=typ), P.BYTE_ARRAY).tolist() == expected


@st.composite
def fixed_width(draw: st.DrawFn, widths: st.SearchStrategy[int]) -> tuple[int, list[bytes]]:
    width = draw(widths)
    return width, draw(st.lists(st.binary(min_size=width, max_size=width), max_size=200))


@PROPERTY
@given(fixed_width(st.integers(1, 40)))
def test_flba_paths_agree(case: tuple[int, list[bytes]]) -> None:
    width, values = case
    expected = [xxhash.xxh64_intdigest(v) for v in values]
    assert _scalar(values, P.FIXED_LEN_BYTE_ARRAY, width) == expected
    assert hash_values(values, P.FIXED_LEN_BYTE_ARRAY, type_length=width).tolist() == expected
    mat = np.frombuffer(b"".join(values), dtype=np.uint8).reshape(len(values), width)
    assert hash_values(mat, P.FIXED_LEN_BYTE_ARRAY, type_length=width).tolist() == expected
    arrow = pa.array(values, type=pa.binary(width))
    assert hash_values(arrow, P.FIXED_LEN_BYTE_ARRAY, type_length=width).tolist() == expected
    assert hash_values(pa.array(values, type=pa.binary()), P.FIXED_LEN_BYTE_ARRAY,
                       type_length=width).tolist() == expected
    if values:
        sliced = arrow.slice(1)
        assert hash_values(sliced, P.FIXED_LEN_BYTE_ARRAY, type_length=width).tolist() == expected[1:]


@PROPERTY
@given(fixed_width(st.just(12)))
def test_int96_paths_agree(case: tuple[int, list[bytes]]) -> None:
    _, values = case
    expected = [xxhash.xxh64_intdigest(v) for v in values]
    assert _scalar(values, P.INT96) == expected
    assert hash_values(values, P.INT96).tolist() == expected
    assert hash_values(pa.array(values, type=pa.binary(12)), P.INT96).tolist() == expected


def test_fixed_width_wrong_length_refused() -> None:
    with pytest.raises(InvalidValueError):
        hash_value(b"abc", P.FIXED_LEN_BYTE_ARRAY, type_length=4)
    with pytest.raises(InvalidValueError):
        hash_values([b"abcd", b"abc"], P.FIXED_LEN_BYTE_ARRAY, type_length=4)
    with pytest.raises(InvalidValueError):
        hash_values(pa.array([b"abcd", b"abc"]), P.FIXED_LEN_BYTE_ARRAY, type_length=4)
    with pytest.raises(InvalidValueError):
        hash_values(pa.array([b"abcd"], type=pa.binary(4)), P.FIXED_LEN_BYTE_ARRAY, type_length=5)
    with pytest.raises(InvalidValueError):
        hash_value(b"\x00" * 11, P.INT96)
    with pytest.raises(ValueError):
        hash_value(b"abc", P.FIXED_LEN_BYTE_ARRAY)


# ----------------------------------------------------------------------- pyarrow inputs


@PROPERTY
@given(st.lists(st.text(max_size=30) | st.none(), max_size=120), st.integers(0, 20), st.integers(0, 20))
def test_arrow_strings_dictionary_chunked_slices(values: list[str | None], lo: int, cut: int) -> None:
    expected = _scalar(values, P.BYTE_ARRAY)
    arr = pa.array(values, type=pa.string())
    assert hash_values(arr.dictionary_encode(), P.BYTE_ARRAY).tolist() == expected
    cut = min(cut, len(values))
    chunked = pa.chunked_array([values[:cut], values[cut:]], type=pa.large_string())
    assert hash_values(chunked, P.BYTE_ARRAY).tolist() == expected
    lo = min(lo, len(values))
    sliced = arr.slice(lo, max(0, len(values) - lo - 1))
    assert hash_values(sliced, P.BYTE_ARRAY).tolist() == _scalar(sliced.to_pylist(), P.BYTE_ARRAY)
    dict_sliced = arr.dictionary_encode().slice(lo)
    assert hash_values(dict_sliced, P.BYTE_ARRAY).tolist() == _scalar(values[lo:], P.BYTE_ARRAY)


def test_arrow_empty_and_all_null() -> None:
    assert hash_values(pa.array([], type=pa.string()), P.BYTE_ARRAY).size == 0
    assert hash_values(pa.array([None, None], type=pa.string()), P.BYTE_ARRAY).size == 0
    assert hash_values(pa.chunked_array([], type=pa.int64()), P.INT64).size == 0
    assert hash_values(pa.array(["", ""]), P.BYTE_ARRAY).tolist() == [0xEF46DB3751D8E999] * 2


@PROPERTY
@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.none(), max_size=200), st.integers(0, 10))
def test_arrow_int64_with_nulls_and_offsets(values: list[int | None], lo: int) -> None:
    arr = pa.array(values, type=pa.int64()).slice(min(lo, len(values)))
    assert hash_values(arr, P.INT64).tolist() == _scalar(arr.to_pylist(), P.INT64)
    assert hash_values(arr.to_pylist(), P.INT64).tolist() == _scalar(arr.to_pylist(), P.INT64)


@PROPERTY
@given(st.lists(st.integers(0, 2**64 - 1), max_size=100), st.lists(st.integers(0, 2**32 - 1), max_size=100))
def test_arrow_unsigned(values64: list[int], values32: list[int]) -> None:
    assert hash_values(pa.array(values64, type=pa.uint64()), P.INT64).tolist() == _scalar(values64, P.INT64)
    assert hash_values(pa.array(values32, type=pa.uint32()), P.INT32).tolist() == _scalar(values32, P.INT32)


decimals = st.decimals(min_value=Decimal("-99999.9999"), max_value=Decimal("99999.9999"), places=4,
                       allow_nan=False, allow_infinity=False)


@PROPERTY
@given(st.lists(decimals | st.none(), max_size=100), st.integers(9, 20))
def test_arrow_decimal128_every_physical_type(values: list[Decimal | None], flba_width: int) -> None:
    """decimal128(9, 4) as INT32, INT64, FLBA(w) and BYTE_ARRAY == encode_decimal + the scalar path."""
    arr = pa.array(values, type=pa.decimal128(9, 4))
    present = [v for v in values if v is not None]
    for ptype, width in ((P.INT32, None), (P.INT64, None), (P.FIXED_LEN_BYTE_ARRAY, flba_width),
                         (P.FIXED_LEN_BYTE_ARRAY, 4), (P.BYTE_ARRAY, None)):
        expected = [hash_value(encode_decimal(v, ptype, scale=4, precision=9, type_length=width), ptype,
                               type_length=width) for v in present]
        assert hash_values(arr, ptype, type_length=width).tolist() == expected, (ptype, width)
        assert hash_values(arr.slice(1), ptype, type_length=width).tolist() == expected[
            1 if values and values[0] is not None else 0:], (ptype, width)


def test_arrow_decimal_negative_powers_of_two_as_byte_array() -> None:
    """Java's BigInteger.toByteArray() writes -128 as the single byte 0x80."""
    values = [Decimal(-128), Decimal(-32768), Decimal(-129), Decimal(127), Decimal(0)]
    arr = pa.array(values, type=pa.decimal128(10, 0))
    expected = [xxhash.xxh64_intdigest(b) for b in
                (b"\x80", b"\x80\x00", b"\xff\x7f", b"\x7f", b"\x00")]
    assert hash_values(arr, P.BYTE_ARRAY).tolist() == expected


def test_arrow_decimal_overflow_refused() -> None:
    arr = pa.array([Decimal("99999999999")], type=pa.decimal128(11, 0))
    with pytest.raises(InvalidValueError):
        hash_values(arr, P.INT32)
    with pytest.raises(InvalidValueError):
        hash_values(arr, P.FIXED_LEN_BYTE_ARRAY, type_length=4)


datetimes = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1))


@PROPERTY
@given(st.lists(datetimes | st.none(), max_size=100))
def test_arrow_timestamps_and_dates(values: list[dt.datetime | None]) -> None:
    present = [v for v in values if v is not None]
    for unit, name in (("us", "micros"), ("ms", None), ("ns", "nanos")):
        arr = pa.array(values, type=pa.timestamp("us")).cast(pa.timestamp(unit), safe=False)
        stored = [v for v in arr.cast(pa.int64()).to_pylist() if v is not None]
        if name is not None:
            assert stored == [encode_timestamp(v, name) for v in present]  # type: ignore[arg-type]
        assert hash_values(arr, P.INT64).tolist() == _scalar(stored, P.INT64)
    tz = pa.array(values, type=pa.timestamp("us", tz="UTC"))
    assert hash_values(tz, P.INT64).tolist() == _scalar([encode_timestamp(v) for v in present], P.INT64)
    dates = pa.array([None if v is None else v.date() for v in values], type=pa.date32())
    assert hash_values(dates, P.INT32).tolist() == _scalar([encode_date(v.date()) for v in present], P.INT32)


def test_arrow_type_mismatch_refused() -> None:
    with pytest.raises(InvalidValueError):
        hash_values(pa.array(["a"]), P.INT64)
    with pytest.raises(InvalidValueError):
        hash_values(pa.array([1.5]), P.INT32)
    with pytest.raises(InvalidValueError):
        hash_values(pa.array([True]), P.INT32)
    with pytest.raises(InvalidValueError):
        hash_values(pa.array([2**40], type=pa.int64()), P.INT32)


def test_physical_type_coercion() -> None:
    assert PhysicalType.coerce("int64") is P.INT64
    assert PhysicalType.coerce(6) is P.BYTE_ARRAY
    assert PhysicalType.coerce(P.FLOAT) is P.FLOAT
    with pytest.raises(ValueError):
        PhysicalType.coerce("VARCHAR")


def test_python_list_fast_paths_keep_the_scalar_semantics() -> None:
    """Lists of str/bytes go through pyarrow and lists of ints through numpy; what those would
    accept differently falls back to the per-value path and its errors."""
    mixed = ["é", b"\xff\x00", "", b"", None, "x" * 40]
    assert hash_values(mixed, P.BYTE_ARRAY).tolist() == _scalar(mixed, P.BYTE_ARRAY)
    with pytest.raises(InvalidValueError):
        hash_value("\ud800", P.BYTE_ARRAY)
    with pytest.raises(InvalidValueError):
        hash_values(["ok", "\ud800"], P.BYTE_ARRAY)
    with pytest.raises(InvalidValueError):
        hash_values(["ok", 1], P.BYTE_ARRAY)
    with pytest.raises(InvalidValueError):
        hash_values([1, True], P.INT64)
    big = [2**64 - 1, -(2**63), 0]
    assert hash_values(big, P.INT64).tolist() == _scalar(big, P.INT64)
    assert hash_values(iter([1, None, 2]), P.INT32).tolist() == _scalar([1, 2], P.INT32)


def _int96_from_calendar(when: dt.datetime) -> bytes:
    """INT96 bytes from the calendar, independently of the library (Julian day of 1970-01-01 is 2440588)."""
    of_day = ((when.hour * 60 + when.minute) * 60 + when.second) * 10**9 + when.microsecond * 1000
    julian = (when.date() - dt.date(1970, 1, 1)).days + 2440588
    return of_day.to_bytes(8, "little") + julian.to_bytes(4, "little")


@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_int96_from_arrow_timestamps_beyond_the_nanosecond_range(unit: str) -> None:
    """Issue 15 item 1: insert(timestamp[us] array, "INT96") raised pyarrow's ArrowInvalid for
    9999-12-31 / 0001-01-01 (a cast through nanoseconds); the hashes come from the array's own unit."""
    keep = {"s": 0, "ms": 1000, "us": 1}[unit]
    whens = [dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1, 1, 1), dt.datetime(1677, 9, 21),
             dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2262, 4, 12, 1)]
    whens = [w.replace(microsecond=w.microsecond // keep * keep if keep else 0) for w in whens]
    expected = [xxhash.xxh64_intdigest(_int96_from_calendar(w)) for w in whens]
    for typ in (pa.timestamp(unit), pa.timestamp(unit, tz="Europe/Paris")):  # tz-aware arrays hold UTC counts
        arr = pa.array(whens + [None], pa.timestamp(unit)).cast(typ)
        assert hash_values(arr, P.INT96).tolist() == expected
    bf = SplitBlockBloomFilter(1024)
    assert bf.insert(pa.array(whens, pa.timestamp(unit)), "INT96") == len(whens)
    assert bf.might_contain(_int96_from_calendar(whens[0]), "INT96")


def test_int96_outside_the_julian_day_range_is_refused() -> None:
    """A timestamp[s] far beyond year 9999 has no 4-byte Julian day: a clear error, not a wrapped day."""
    with pytest.raises(InvalidValueError, match="outside the INT96 range"):
        hash_values(pa.array([(1 << 62)], pa.timestamp("s")), P.INT96)


@pytest.mark.parametrize("typ", [pa.decimal32(9, 2), pa.decimal64(18, 2)])
def test_narrow_arrow_decimals_widen_exactly(typ: pa.DataType) -> None:
    """Audit of issue 15 item 1: decimal32 as INT64 crashed in a numpy view; every physical type
    of a narrow decimal hashes as the same values in decimal128."""
    arr = pa.array([Decimal("-1.23"), Decimal("4.56"), None, Decimal("-0.01")], typ)
    wide = arr.cast(pa.decimal128(18, 2))
    for ptype, width in ((P.INT32, None), (P.INT64, None), (P.FIXED_LEN_BYTE_ARRAY, 16), (P.BYTE_ARRAY, None)):
        assert hash_values(arr, ptype, type_length=width).tolist() == \
            hash_values(wide, ptype, type_length=width).tolist() == \
            [hash_value(encode_decimal(v, ptype, scale=2, type_length=width), ptype, type_length=width)
             for v in ("-1.23", "4.56", "-0.01")]


def test_uint64_arrow_values_beyond_int32_are_our_error() -> None:
    """A uint64 array for an INT32 column: our InvalidValueError, not pyarrow's cast error."""
    assert hash_values(pa.array([7, 2**32 - 1], pa.uint64()), P.INT32).tolist() == \
        [hash_value(7, P.INT32), hash_value(2**32 - 1, P.INT32)]
    with pytest.raises(InvalidValueError, match="does not fit INT32"):
        hash_values(pa.array([2**63 + 5], pa.uint64()), P.INT32)


def test_numpy_bytes_arrays_fixed_width_hash_every_byte() -> None:
    values = [b"ab\x00\x00", b"\x00\x00\x00\x00", b"cdef"]
    arr = np.array(values, dtype="S4")
    got = hash_values(arr, "FIXED_LEN_BYTE_ARRAY", type_length=4)
    assert list(got) == [hash_value(v, "FIXED_LEN_BYTE_ARRAY", type_length=4) for v in values]


def test_numpy_bytes_arrays_are_refused_for_byte_array() -> None:
    # b"a\x00" would silently become b"a": refuse rather than hash the wrong bytes.
    with pytest.raises(InvalidValueError, match="trailing NUL"):
        hash_values(np.array([b"a\x00"], dtype="S2"), "BYTE_ARRAY")
