"""Distributed Bloom filter build == single-process build, bit for bit (issue 6)."""

from __future__ import annotations

import datetime as dt
import math
import struct
import sys
from decimal import Decimal

import pytest

from secure_bloom import SplitBlockBloomFilter
from secure_bloom.types import PhysicalType
from secure_bloom.values.logical import encode_decimal, encode_int96

pytestmark = pytest.mark.interop

ROWS = 50_000


@pytest.fixture(scope="module")
def frame(spark):  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    return (spark.range(0, ROWS, numPartitions=5)
            .select(F.col("id"),
                    F.concat(F.lit("user-"), F.col("id").cast("string"), F.lit("@example.com")).alias("email"),
                    F.when(F.col("id") % 7 == 0, None).otherwise(F.col("id") * 3).alias("with_nulls"),
                    (F.col("id") * 0.25).alias("amount"),
                    F.col("id").cast("int").alias("small"),
                    (F.col("id") / 100).cast("decimal(25,2)").alias("big_decimal"),
                    F.timestamp_seconds(F.col("id") * 61).alias("ts")))


@pytest.mark.parametrize("column,ptype", [
    ("id", PhysicalType.INT64),
    ("email", PhysicalType.BYTE_ARRAY),
    ("with_nulls", PhysicalType.INT64),
    ("amount", PhysicalType.DOUBLE),
    ("small", PhysicalType.INT32),
])
def test_distributed_equals_local(frame, column, ptype):  # type: ignore[no-untyped-def]
    from secure_bloom.spark.build import build_bloom_filter

    distributed = build_bloom_filter(frame, column, num_bytes=1 << 15)
    local = SplitBlockBloomFilter(1 << 15)
    inserted = local.insert(frame.select(column).toArrow().column(0), ptype)
    assert inserted == frame.where(frame[column].isNotNull()).count()
    assert distributed == local
    assert distributed.bits_set() > 0


def test_sized_from_approx_distinct_like_parquet_java(frame):  # type: ignore[no-untyped-def]
    from secure_bloom.filter import optimal_num_bytes
    from secure_bloom.spark.build import build_bloom_filter

    bf = build_bloom_filter(frame, "email", fpp=0.01, bloom_filter_max_bytes=1 << 20)
    # approx_count_distinct is within a few percent of 50k; parquet-java sizes 50k at 1% to 64 KiB.
    assert bf.num_bytes == optimal_num_bytes(ROWS, 0.01) == 1 << 16
    assert bf.might_contain("user-123@example.com", "BYTE_ARRAY")


def test_spark_types_hash_what_spark_stores(frame):  # type: ignore[no-untyped-def]
    from secure_bloom.spark.build import build_bloom_filter, decimal_flba_width

    width = decimal_flba_width(25)
    assert width == 11
    dec = build_bloom_filter(frame, "big_decimal", num_bytes=1 << 15)
    for i in range(0, ROWS, 997):
        raw = encode_decimal(Decimal(i) / 100, "FIXED_LEN_BYTE_ARRAY", scale=2, type_length=width)
        assert dec.might_contain(raw, "FIXED_LEN_BYTE_ARRAY", type_length=width)
    # Spark's default timestamp type is legacy INT96. 128 KiB for 50k values: ~21 bits per value.
    ts = build_bloom_filter(frame, "ts", num_bytes=1 << 17)
    epoch = dt.datetime(1970, 1, 1)
    for i in range(0, ROWS, 997):
        assert ts.might_contain(encode_int96(epoch + dt.timedelta(seconds=61 * i)), "INT96")
    absent = sum(ts.might_contain(encode_int96(epoch + dt.timedelta(seconds=61 * i + 30)), "INT96")
                 for i in range(1000))
    assert absent < 20  # expected false-positive rate ~0.1 %


def test_empty_frame_gives_empty_filter(frame):  # type: ignore[no-untyped-def]
    from secure_bloom.spark.build import build_bloom_filter

    bf = build_bloom_filter(frame.limit(0), "id", num_bytes=64)
    assert bf == SplitBlockBloomFilter(64)


def test_boolean_column_refused(spark):  # type: ignore[no-untyped-def]
    from secure_bloom.errors import InvalidValueError
    from secure_bloom.spark.build import build_bloom_filter

    df = spark.range(3).selectExpr("id % 2 = 0 as flag")
    with pytest.raises(InvalidValueError, match="no Parquet Bloom filter"):
        build_bloom_filter(df, "flag", num_bytes=64)


# --- the Spark-side build against parquet-java's own filter (issue 15 item 27) ---------------------

_EXTREME_ROWS = 12
_F32_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
_F32_MIN_SUB = struct.unpack("<f", struct.pack("<I", 1))[0]
_UTC = dt.timezone.utc
_TS_EXTREMES = [dt.datetime(1, 1, 1, tzinfo=_UTC), dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=_UTC),
                dt.datetime(1970, 1, 1, tzinfo=_UTC), dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=_UTC)]


def _extreme_frame(spark, columns):  # type: ignore[no-untyped-def]
    """One row per index, each column cycling through its values (a column of fewer values repeats)."""
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(name, data_type) for name, (data_type, _) in columns.items()])
    rows = [tuple(values[i % len(values)] for _, values in columns.values()) for i in range(_EXTREME_ROWS)]
    return spark.createDataFrame(rows, schema).coalesce(1)


def _spark_columns():  # type: ignore[no-untyped-def]
    from pyspark.sql import types as T

    top = 10**38 - 1
    return {
        "b8": (T.ByteType(), [-128, 127, 0, -1]),
        "i16": (T.ShortType(), [-(2**15), 2**15 - 1, 0]),
        "i32": (T.IntegerType(), [-(2**31), 2**31 - 1, 0, -1]),
        "i64": (T.LongType(), [-(2**63), 2**63 - 1, 0, -1]),
        "f32": (T.FloatType(), [0.0, -0.0, math.inf, -math.inf, math.nan, _F32_MIN_SUB, _F32_MAX, -_F32_MAX]),
        "f64": (T.DoubleType(), [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, sys.float_info.max,
                                 -sys.float_info.min]),
        "s": (T.StringType(), ["", "\u00e9" * 50_000, "\x00", "\U0001f600"]),
        "bin": (T.BinaryType(), [b"", bytes(range(256)) * 300, b"\x00"]),
        "day": (T.DateType(), [dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1), dt.date(1969, 12, 31)]),
        "ts": (T.TimestampType(), _TS_EXTREMES),
        "ntz": (T.TimestampNTZType(), [t.replace(tzinfo=None) for t in _TS_EXTREMES]),
        "d9": (T.DecimalType(9, 2), [Decimal("9999999.99"), Decimal("-9999999.99"), Decimal("0.01")]),
        "d18": (T.DecimalType(18, 2), [Decimal(10**18 - 1).scaleb(-2), Decimal(1 - 10**18).scaleb(-2), Decimal(0)]),
        "d38": (T.DecimalType(38, 0), [Decimal(top), Decimal(-top), Decimal(0), Decimal(1)]),
    }


def _parquet_java_bitsets(spark, frame, tmp_path, timestamp_type):  # type: ignore[no-untyped-def]
    """Spark writes ``frame`` (one row group, no dictionary: every chunk gets a filter of 128 bytes,
    ndv 64 at fpp 0.01); returns {column: (numBytes, bitset SHA-256)} as parquet-java reads them."""
    from support.spark_bloom_data import write_parquet

    from benchmarks.parquet_java import bloom_probe

    options = {"parquet.enable.dictionary": "false"}
    for name in frame.columns:
        options[f"parquet.bloom.filter.enabled#{name}"] = "true"
        options[f"parquet.bloom.filter.expected.ndv#{name}"] = "64"
    path = write_parquet(spark, frame, tmp_path / "spark", None, timestamp_type=timestamp_type, **options)
    result = bloom_probe(path, all_columns=True, bitset_sha256=True)
    out = {}
    for name, col in result["columns"].items():
        (rg,) = col["row_groups"]
        assert rg["has_bloom_filter"], name
        out[name] = (rg["num_bytes"], rg["bitset_sha256"])
    return out


def _our_bitsets(spark, frame, sizes, timestamp_type):  # type: ignore[no-untyped-def]
    import hashlib

    from secure_bloom.spark.build import build_bloom_filter

    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType", timestamp_type)
    try:
        return {name: (size, hashlib.sha256(build_bloom_filter(frame, name, num_bytes=size).bitset).hexdigest())
                for name, (size, _) in sizes.items()}
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", previous)


def test_build_equals_parquet_javas_filter_for_every_spark_type(spark, tmp_path):  # type: ignore[no-untyped-def]
    """build_bloom_filter gives the bitset parquet-java wrote for the same column, bit for bit, for
    each Spark type at its extremes (timestamps as TIMESTAMP_MICROS)."""
    frame = _extreme_frame(spark, _spark_columns()).cache()
    java = _parquet_java_bitsets(spark, frame, tmp_path, "TIMESTAMP_MICROS")
    assert {size for size, _ in java.values()} == {128}
    assert _our_bitsets(spark, frame, java, "TIMESTAMP_MICROS") == java
    frame.unpersist()


@pytest.mark.parametrize("timestamp_type,values", [
    ("TIMESTAMP_MILLIS", _TS_EXTREMES[:1] + [_TS_EXTREMES[1].replace(microsecond=999000)] + _TS_EXTREMES[2:3]),
    ("INT96", [dt.datetime(1677, 9, 22, tzinfo=_UTC), dt.datetime(2262, 4, 11, tzinfo=_UTC),
               dt.datetime(1970, 1, 1, tzinfo=_UTC), dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=_UTC)]),
    pytest.param("INT96", _TS_EXTREMES[:2], id="INT96-years-1-9999"),  # issue 15 item 1
])
def test_build_equals_parquet_javas_timestamp_filter(spark, tmp_path, timestamp_type, values):  # type: ignore[no-untyped-def]
    from pyspark.sql import types as T

    frame = _extreme_frame(spark, {"ts": (T.TimestampType(), values)})
    java = _parquet_java_bitsets(spark, frame, tmp_path, timestamp_type)
    assert _our_bitsets(spark, frame, java, timestamp_type) == java
