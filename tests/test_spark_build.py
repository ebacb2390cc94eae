"""Distributed Bloom filter build == single-process build, bit for bit (issue 6)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from secure_bloom import SplitBlockBloomFilter
from secure_bloom.hashing import PhysicalType
from secure_bloom.logical import encode_decimal, encode_int96

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

    bf = build_bloom_filter(frame, "email", fpp=0.01, max_bytes=1 << 20)
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
