"""parquet-java's own reader checks the filters ``attach`` writes, for every Parquet type pyarrow
writes, at the extremes of each type (issue 15 item 27).

The ground truth is what parquet-java reads from the data pages: ``BloomVerify`` decrypts each
chunk, reads its values with parquet-java's ColumnReader, hashes them with parquet-java's own
``BloomFilter.hash`` and looks each one up with ``findHash`` in the filter parquet-java reads with
``readBloomFilter``. Nothing depends on our value conversion: a wrong block formula, swapped
module types, a lossy cast or a hash of the wrong bytes shows up as a "missing" value. The test
also checks that parquet-java really read the extreme values: the plain encodings it reports are
compared with encodings computed here with struct / int.to_bytes. Key material is stored inside
the files (pyarrow's internal key material), so pyarrow wraps it and parquet-java unwraps it.
Needs Java 17 and pyspark.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from support.parquet_files import read_encrypted, vector_kms, write_encrypted, write_plain
from secure_bloom.parquet import KeyAccess, attach_bloom_filters
from support.parquet_java_checks import bloom_verify
from support.extreme_table import (I64_MAX, I64_MIN, NDV, READ_CONF, ROWS_PER_GROUP, assert_same_table,
                                   check_all_found, extreme_table, le)

pytestmark = pytest.mark.interop

KEYS = KeyAccess(kms=vector_kms())


@pytest.mark.parametrize("plaintext_footer,decimals_as_integer", [(False, False), (True, True)],
                         ids=["encrypted-footer-flba-decimals", "plaintext-footer-integer-decimals"])
def test_parquet_java_finds_every_stored_value_of_every_type(
        tmp_path: Path, plaintext_footer: bool, decimals_as_integer: bool) -> None:
    table, expected = extreme_table(decimals_as_integer)
    names = list(table.column_names)
    keyed = {"kc1": names[: len(names) // 2], "kc2": names[len(names) // 2:]}  # every column encrypted
    src = write_encrypted(tmp_path / "src.parquet", table, plaintext_footer=plaintext_footer,
                          column_keys=keyed, row_group_size=ROWS_PER_GROUP, coerce_timestamps=None,
                          store_decimal_as_integer=decimals_as_integer)
    dst = tmp_path / "dst.parquet"
    report = attach_bloom_filters(src, dst, list(expected), KEYS, ndv=NDV)
    assert {(f.encrypted, f.num_bytes) for f in report.filters} == {(True, 4096)}
    assert len(report.filters) == 2 * len(expected)
    assert_same_table(read_encrypted(dst), read_encrypted(src))  # pyarrow unwraps the stored key material
    result = bloom_verify(dst, READ_CONF, list_values=True)
    types = {c: result["columns"][c]["type"] for c in ("dec9", "dec18", "u32", "f16", "t_s", "ts_s", "date64")}
    physical = "int32" if decimals_as_integer else "fixed_len_byte_array(4)"
    assert types["dec9"].startswith(f"optional {physical} dec9 (DECIMAL(9,2))")
    assert types["u32"] == "optional int32 u32 (INTEGER(32,false))"
    assert types["f16"] == "optional fixed_len_byte_array(2) f16 (FLOAT16)"
    assert "TIME(MILLIS" in types["t_s"] and "TIMESTAMP(MILLIS" in types["ts_s"] and "DATE" in types["date64"]
    check_all_found(result, expected)


def test_parquet_java_finds_every_value_of_a_plaintext_file(tmp_path: Path) -> None:
    table, expected = extreme_table(False)
    src = write_plain(tmp_path / "src.parquet", table, row_group_size=ROWS_PER_GROUP, coerce_timestamps=None)
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, list(expected), ndv=NDV)
    check_all_found(bloom_verify(dst, list_values=True), expected)


def test_a_missing_value_is_reported(tmp_path: Path) -> None:
    """The check can fail: with the attached bitset zeroed, parquet-java finds none of the stored
    values and reports each one's plain encoding."""
    from secure_bloom.parquet import ParquetBloomReader

    src = write_plain(tmp_path / "src.parquet", pa.table({"x": pa.array([1, 2, 3, None, 4], pa.int32())}))
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["x"], ndv=NDV)
    with ParquetBloomReader(dst) as r:
        bf = r.bloom_filter(0, "x")
    assert bf is not None and bf.bits_set() > 0
    data = dst.read_bytes()
    at = data.index(bf.bitset)
    zeroed = tmp_path / "zeroed.parquet"
    zeroed.write_bytes(data[:at] + bytes(len(bf.bitset)) + data[at + len(bf.bitset):])
    (rg,) = bloom_verify(zeroed, columns=["x"])["columns"]["x"]["row_groups"]
    assert (rg["num_values"], rg["num_distinct"], rg["has_bloom_filter"], rg["missing"]) == (4, 4, True, 4)
    assert rg["missing_values"] == [struct.pack("<i", v).hex() for v in (1, 2, 3, 4)]
    assert "values" not in rg


@pytest.mark.parametrize("arrow_type,values,encode", [
    pytest.param(pa.time64("ns"), [0, 86_399_999_999_999, 1], le("q"), id="time_ns"),
    pytest.param(pa.timestamp("s"), [I64_MAX // 1000, -(I64_MAX // 1000)], lambda v: struct.pack("<q", v * 1000).hex(),
                 id="timestamp_s_int64_extremes"),
    pytest.param(pa.timestamp("ms"), [I64_MAX, -I64_MAX, I64_MIN], le("q"), id="timestamp_ms_int64_extremes"),
    pytest.param(pa.timestamp("us", tz="UTC"), [I64_MAX, -I64_MAX], le("q"), id="timestamp_us_int64_extremes"),
    pytest.param(pa.string_view(), ["", "x" * 100, "a"], lambda v: v.encode().hex(), id="string_view"),
    pytest.param(pa.binary_view(), [b"", b"\x00" * 100, b"a"], lambda v: v.hex(), id="binary_view"),
    pytest.param(pa.uuid(), [b"\x00" * 16, b"\xff" * 16, bytes(range(16))], lambda v: v.hex(), id="uuid"),
])
def test_parquet_java_finds_values_of_one_column(tmp_path: Path, arrow_type: pa.DataType, values: list[Any],
                                                 encode: Callable[[Any], str]) -> None:
    """Types and values that once failed (issue 15 items 1 and 14), one column each: two row groups
    holding ``values``. Sized from the chunk's own distinct count, as a user's attach is: one-block
    filters, so the hash is checked here and the block index by the tests above."""
    table = pa.table({"v": pa.array(values * 2, arrow_type)})
    src = write_encrypted(tmp_path / "src.parquet", table, column_keys={"kc1": ["v"]}, row_group_size=len(values),
                          coerce_timestamps=None)
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["v"], KEYS)
    check_all_found(bloom_verify(dst, READ_CONF, list_values=True), {"v": [{encode(v) for v in values}] * 2})


@pytest.mark.parametrize("values", [
    pytest.param([dt.datetime(2024, 3, 1, 12, 0, 0, 1), dt.datetime(1970, 1, 1), dt.datetime(1677, 9, 22),
                  dt.datetime(2262, 4, 11, 23, 47, 16, 854775)], id="nanosecond-range"),
    pytest.param([dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)], id="years-1-and-9999"),
])
def test_int96_extremes(tmp_path: Path, values: list[dt.datetime]) -> None:
    """Legacy INT96 timestamps: parquet-java reads the 12 stored bytes and hashes them as they are."""
    table = pa.table({"t": pa.array(values * 2, pa.timestamp("us"))})
    n = len(values)
    src = write_encrypted(tmp_path / "src.parquet", table, column_keys={"kc1": ["t"]}, row_group_size=n,
                          use_deprecated_int96_timestamps=True)
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["t"], KEYS, ndv=NDV)
    check_all_found(bloom_verify(dst, READ_CONF, list_values=True), {"t": [{_int96(v) for v in values}] * 2})


def _int96(t: dt.datetime) -> str:
    """8 bytes LE nanoseconds of the day, then 4 bytes LE Julian day (SPEC_NOTES 2)."""
    day = t.toordinal() + 1_721_425  # Julian day number of the proleptic Gregorian date
    nanos = (t - dt.datetime.combine(t.date(), dt.time())) // dt.timedelta(microseconds=1) * 1000
    return (struct.pack("<q", nanos) + struct.pack("<i", day)).hex()
