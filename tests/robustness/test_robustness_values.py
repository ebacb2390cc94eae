"""Adversarial command-line values: :func:`value_from_text` for every kind of column.

Invariant: any text -> a value that encodes for the column, or InvalidValueError naming the
column; never another exception (OverflowError, ValueError from int limits, numpy wrap-around),
never a silently different value.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.robustness_support import examples

from secure_bloom.errors import InvalidValueError
from secure_bloom.types import PhysicalType as P
from secure_bloom.parquet.file.schema import ColumnInfo
from secure_bloom.values.column import encode_value, hash_for_column, value_from_text


def _col(ptype: P, **kw: object) -> ColumnInfo:
    return ColumnInfo(path="c", path_in_schema=("c",), ordinal=0, physical_type=ptype, **kw)  # type: ignore[arg-type]


COLUMNS = {
    "int32": _col(P.INT32), "int64": _col(P.INT64), "uint8": _col(P.INT32, logical_type="INTEGER", int_bits=8,
                                                                   int_signed=False),
    "float": _col(P.FLOAT), "double": _col(P.DOUBLE), "string": _col(P.BYTE_ARRAY, logical_type="STRING"),
    "binary": _col(P.BYTE_ARRAY), "flba16": _col(P.FIXED_LEN_BYTE_ARRAY, type_length=16),
    "uuid": _col(P.FIXED_LEN_BYTE_ARRAY, type_length=16, logical_type="UUID"),
    "float16": _col(P.FIXED_LEN_BYTE_ARRAY, type_length=2, logical_type="FLOAT16"),
    "dec_i32": _col(P.INT32, logical_type="DECIMAL", scale=2, precision=9),
    "dec_i64": _col(P.INT64, logical_type="DECIMAL", scale=4, precision=18),
    "dec_flba": _col(P.FIXED_LEN_BYTE_ARRAY, type_length=11, logical_type="DECIMAL", scale=2, precision=25),
    "dec_bin": _col(P.BYTE_ARRAY, logical_type="DECIMAL", scale=3, precision=40),
    "date": _col(P.INT32, logical_type="DATE"),
    "ts_ms": _col(P.INT64, logical_type="TIMESTAMP", time_unit="millis", is_adjusted_to_utc=True),
    "ts_us": _col(P.INT64, logical_type="TIMESTAMP", time_unit="micros", is_adjusted_to_utc=True),
    "ts_ns": _col(P.INT64, logical_type="TIMESTAMP", time_unit="nanos", is_adjusted_to_utc=False),
    "time_ms": _col(P.INT32, logical_type="TIME", time_unit="millis"),
    "time_ns": _col(P.INT64, logical_type="TIME", time_unit="nanos"),
    "int96": _col(P.INT96),
    "boolean": _col(P.BOOLEAN),
}

# Text shaped like what each parser looks for, so mutations reach past the first check.
_SHAPED = st.sampled_from([
    "0", "-1", "2147483648", "0x7fffffff", "1_000", "1e308", "1e400", "-0.0", "nan", "inf", "12.345",
    "1E+999999999", "-1e-999999999", "sNaN", "2024-02-29", "0000-01-01", "9999-12-31",
    "2024-01-01T00:00:00Z", "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00",
    "2262-04-12T00:00:00.123456789", "1677-09-21T00:00:00.000000001", "2024-01-01 12:34:56.1234567891",
    "23:59:59.999", "24:00", "hex:00ff", "hex:0g", "text:abc", "hex:" + "ab" * 16,
    "12345678-1234-5678-1234-567812345678", "\udcff", "\x00", "0x" + "f" * 5000, "9" * 5000,
])
TEXT = _SHAPED | st.text(max_size=40) | st.builds(lambda a, b: a + b, _SHAPED, st.text(max_size=8))


@pytest.mark.parametrize("kind", sorted(COLUMNS))
@settings(max_examples=examples(150))
@given(text=TEXT)
def test_any_text_gives_a_value_or_invalid_value_error(kind: str, text: str) -> None:
    column = COLUMNS[kind]
    try:
        value = value_from_text(text, column)
    except InvalidValueError as e:
        assert "'c'" in str(e)
        return
    hash_for_column(value, column)  # accepted text always encodes and hashes


@pytest.mark.parametrize(("kind", "text"), [
    ("ts_us", "0001-01-01T00:00:00+05:00"),        # astimezone: OverflowError before the fix
    ("ts_us", "9999-12-31T23:59:59-05:00"),
    ("int96", "0001-01-01T00:00:00.123456789+01:00"),
    ("int32", "0x" + "f" * 5000),                  # repr of the int in the message: ValueError before
    ("int64", "-0x" + "1" * 5000),
])
def test_regressions_raise_invalid_value(kind: str, text: str) -> None:
    with pytest.raises(InvalidValueError):
        value_from_text(text, COLUMNS[kind])


@pytest.mark.parametrize("text", ["9999-12-31T23:59:59.123456789", "2262-04-12T00:00:00.123456789",
                                  "1677-09-21T00:00:00.000000001"])
def test_nanosecond_text_outside_int64_is_refused_not_wrapped(text: str) -> None:
    """Regression: numpy wrapped these silently (9999-12-31 became 1816-03-30) and the probe
    hashed another instant."""
    with pytest.raises(InvalidValueError, match="nanosecond timestamp range"):
        value_from_text(text, COLUMNS["ts_ns"])


def test_nanosecond_text_at_the_edges_of_int64() -> None:
    assert encode_value(value_from_text("2262-04-11T23:47:16.854775807", COLUMNS["ts_ns"]),
                        COLUMNS["ts_ns"]) == (1 << 63) - 1
    assert encode_value(value_from_text("1677-09-21T00:12:43.145224193", COLUMNS["ts_ns"]),
                        COLUMNS["ts_ns"]) == -(1 << 63) + 1  # -2^63 is numpy's NaT


@pytest.mark.parametrize("value", [np.datetime64("9999-01-01", "D"), np.datetime64("1000-01-01T00:00:00", "s"),
                                   np.datetime64("3000-01-01T00:00:00", "ms")])
def test_numpy_datetimes_outside_the_ns_range_are_refused_only_by_nanosecond_columns(value: np.datetime64) -> None:
    """numpy wraps silently outside 1677..2262 in nanoseconds: an INT64 nanos column cannot hold
    these; micros and INT96 columns can, and get the exact value (no cast through datetime64[ns])."""
    with pytest.raises(InvalidValueError, match="nanosecond timestamp range"):
        encode_value(value, COLUMNS["ts_ns"])
    seconds = int(value.astype("datetime64[s]").astype(np.int64))
    assert encode_value(value, COLUMNS["ts_us"]) == seconds * 10**6
    days, second_of_day = divmod(seconds, 86_400)
    assert encode_value(value, COLUMNS["int96"]) == ((second_of_day * 10**9).to_bytes(8, "little")
                                                    + (days + 2_440_588).to_bytes(4, "little"))


def test_numpy_datetime_inside_the_range_is_exact() -> None:
    assert encode_value(np.datetime64("2200-01-01T00:00:00", "s"), COLUMNS["ts_us"]) == 7258118400 * 10**6


@pytest.mark.parametrize(("kind", "text"), [("float", "1e39"), ("float", "-3.5e38"), ("float16", "65520"),
                                            ("float16", "1e10")])
def test_finite_text_beyond_the_float_width_is_refused_not_made_infinite(kind: str, text: str) -> None:
    """Regression: np.float32(1e39) is inf (a RuntimeWarning only), so the probe hashed +-inf."""
    with pytest.raises(InvalidValueError, match="too large"):
        value_from_text(text, COLUMNS[kind])
    assert value_from_text("inf", COLUMNS[kind]) == float("inf")


@settings(max_examples=examples(100))
@given(value=st.integers())
def test_any_python_int_encodes_or_is_invalid(value: int) -> None:
    for kind in ("int32", "int64", "uint8", "date", "ts_us", "time_ms", "dec_i32", "dec_flba", "double"):
        try:
            encode_value(value, COLUMNS[kind])
        except InvalidValueError:
            pass
