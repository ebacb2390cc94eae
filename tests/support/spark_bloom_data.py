"""A standard set of Parquet files with encrypted Bloom filters, written by Spark / parquet-java.

Used by the ``spark_bloom_files`` fixture (tests/conftest.py) so that our Python reader can be
checked against files it did not write. One DataFrame of 3,000 rows in row order, written as one
file per variant with ``parquet.block.row.count.limit`` = 1,000, so row group g holds rows
[1000 g, 1000 (g + 1)). Columns (physical type; master key):

  i32 INT32; kc1          i64 INT64; kc1          f32 FLOAT; kc1          f64 DOUBLE; kc1
  nested.x INT64; kc1     s BYTE_ARRAY (UTF-8); kc2                       dec DECIMAL(25,2) ->
  FIXED_LEN_BYTE_ARRAY(11); kc2                   day DATE -> INT32; kc2  ts TIMESTAMP_MICROS ->
  INT64; kc2              cat BYTE_ARRAY, 3 distinct values; kc2          pub INT64; plaintext

Every column asks for a Bloom filter (ndv 1000, fpp 0.01 -> 2048-byte bitsets). ``cat`` gets none:
its chunks are all dictionary encoded and parquet-java skips the filter (SPEC_NOTES 6). ``pub`` is
not encrypted, so its filter is plaintext inside an encrypted file. The footer key is kf.

Variants: gcm_footer (AES_GCM_V1, encrypted footer, double wrapping, 128-bit keys),
gcm_plaintext_footer, ctr_footer (AES_GCM_CTR_V1, single wrapping, 256-bit data keys) and
ctr_plaintext_footer. Master keys are random per test session.

Expected values are in the Parquet physical form a Bloom filter hashes (SPEC_NOTES 2): ints,
floats (float32 values exactly representable as Python floats), str for strings, bytes (big-endian
two's complement, 11 bytes) for the decimal, epoch days for the date, epoch microseconds for the
timestamp.
"""

from __future__ import annotations

import base64
import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from secure_bloom.spark.policy import (
    BloomFilterSpec,
    EncryptionPolicy,
    HadoopConf,
    KeyListKmsConfig,
)
from secure_bloom.spark.session import applied_policy

NUM_ROWS = 3000
ROWS_PER_ROW_GROUP = 1000
NUM_ABSENT = 200
DECIMAL_BYTES = 11  # Spark: fewest bytes b with 2^(8b-1) >= 10^25
_EPOCH = dt.date(1970, 1, 1)
_TS_BASE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
_TS_BASE_MICROS = int(_TS_BASE.timestamp()) * 1_000_000
_CATEGORIES = ("red", "green", "blue")


@dataclass(frozen=True)
class ExpectedColumn:
    """What one column holds. ``row_groups[g]`` = the values of row group g, physical form."""

    path: str
    physical_type: str  # as parquet-java names it: INT32, INT64, FLOAT, DOUBLE, BINARY, ...
    value_type: str  # BloomProbe's --value-type
    master_key: str | None  # None: plaintext column
    has_filter: bool
    row_groups: tuple[tuple[Any, ...], ...]
    absent: tuple[Any, ...]


@dataclass(frozen=True)
class SparkBloomFile:
    name: str
    path: Path
    policy: EncryptionPolicy

    @property
    def plaintext_footer(self) -> bool:
        return self.policy.plaintext_footer

    @property
    def algorithm(self) -> str:
        return self.policy.algorithm

    def hadoop_conf(self) -> HadoopConf:
        """Hadoop properties to read this file with parquet-java (secrets included)."""
        return self.policy.hadoop_conf()


@dataclass(frozen=True)
class SparkBloomFiles:
    """The files, the key list that opens them ("kf:b64, kc1:b64, kc2:b64") and the expectations."""

    key_list: str = field(repr=False)
    files: Mapping[str, SparkBloomFile]
    columns: Mapping[str, ExpectedColumn]
    num_rows: int = NUM_ROWS
    rows_per_row_group: int = ROWS_PER_ROW_GROUP


COLUMN_KEYS = {"i32": "kc1", "i64": "kc1", "f32": "kc1", "f64": "kc1", "nested.x": "kc1",
               "s": "kc2", "dec": "kc2", "day": "kc2", "ts": "kc2", "cat": "kc2"}
VARIANTS = {
    "gcm_footer": dict(algorithm="AES_GCM_V1", plaintext_footer=False),
    "gcm_plaintext_footer": dict(algorithm="AES_GCM_V1", plaintext_footer=True),
    "ctr_footer": dict(algorithm="AES_GCM_CTR_V1", plaintext_footer=False, double_wrapping=False,
                       data_key_length_bits=256),
    "ctr_plaintext_footer": dict(algorithm="AES_GCM_CTR_V1", plaintext_footer=True),
}


def decimal_unscaled(i: int) -> int:
    """Unscaled value (scale 2) of row i's decimal: above 2^64 for i >= 1, negative when i % 3 == 0."""
    return (i * 10**20 + i) * (-1 if i % 3 == 0 else 1)


def decimal_bytes(unscaled: int) -> bytes:
    return unscaled.to_bytes(DECIMAL_BYTES, "big", signed=True)


def _physical_rows(i: int) -> dict[str, Any]:
    return {
        "i32": i * 7 - 10_000,
        "i64": i * 1_000_000_007 + 3,
        "f32": i + 0.25,
        "f64": i + 0.5,
        "nested.x": i * 11,
        "s": f"user-{i:05d}-\u00e9",
        "dec": decimal_bytes(decimal_unscaled(i)),
        "day": 10_957 + i,  # 2000-01-01 + i days
        "ts": _TS_BASE_MICROS + i * 1_000_037,
        "cat": _CATEGORIES[i % 3],
        "pub": i * 3,
    }


def _absent(i: int) -> dict[str, Any]:
    """Values no row holds (each differs from every present value of its column)."""
    return {
        "i32": i * 7 - 10_000 + 3,
        "i64": i * 1_000_000_007 + 4,
        "f32": i + 0.75,
        "f64": i + 0.75,
        "nested.x": i * 11 + 5,
        "s": f"absent-{i:05d}",
        "dec": decimal_bytes(i * 10**20 + i + 7),
        "day": 10_957 - 1 - i,
        "ts": _TS_BASE_MICROS + i * 1_000_037 + 1,
        "cat": f"absent-{i}",
        "pub": i * 3 + 1,
    }


_TYPES = {  # column -> (parquet-java physical type name, probe value type)
    "i32": ("INT32", "int32"), "i64": ("INT64", "int64"), "f32": ("FLOAT", "float"),
    "f64": ("DOUBLE", "double"), "nested.x": ("INT64", "int64"), "s": ("BINARY", "string"),
    "dec": ("FIXED_LEN_BYTE_ARRAY", "binary-hex"), "day": ("INT32", "int32"),
    "ts": ("INT64", "int64"), "cat": ("BINARY", "string"), "pub": ("INT64", "int64"),
}


def expected_columns() -> dict[str, ExpectedColumn]:
    rows = [_physical_rows(i) for i in range(NUM_ROWS)]
    absent = [_absent(i) for i in range(NUM_ABSENT)]
    out = {}
    for name, (physical, value_type) in _TYPES.items():
        groups = tuple(
            tuple(r[name] for r in rows[g:g + ROWS_PER_ROW_GROUP])
            for g in range(0, NUM_ROWS, ROWS_PER_ROW_GROUP))
        out[name] = ExpectedColumn(name, physical, value_type, COLUMN_KEYS.get(name),
                                   has_filter=name != "cat", row_groups=groups,
                                   absent=tuple(a[name] for a in absent))
    return out


def _spark_rows() -> list[tuple[Any, ...]]:
    rows = []
    for i in range(NUM_ROWS):
        p = _physical_rows(i)
        rows.append((
            p["i32"], p["i64"], p["f32"], p["f64"], (p["nested.x"],), p["s"],
            Decimal(decimal_unscaled(i)).scaleb(-2), _EPOCH + dt.timedelta(days=p["day"]),
            _TS_BASE + dt.timedelta(microseconds=i * 1_000_037), p["cat"], p["pub"],
        ))
    return rows


def spark_schema() -> Any:
    from pyspark.sql import types as T

    return T.StructType([
        T.StructField("i32", T.IntegerType()), T.StructField("i64", T.LongType()),
        T.StructField("f32", T.FloatType()), T.StructField("f64", T.DoubleType()),
        T.StructField("nested", T.StructType([T.StructField("x", T.LongType())])),
        T.StructField("s", T.StringType()), T.StructField("dec", T.DecimalType(25, 2)),
        T.StructField("day", T.DateType()), T.StructField("ts", T.TimestampType()),
        T.StructField("cat", T.StringType()), T.StructField("pub", T.LongType()),
    ])


def random_key_list(ids: tuple[str, ...] = ("kf", "kc1", "kc2")) -> str:
    return ", ".join(f"{k}:{base64.b64encode(os.urandom(16)).decode()}" for k in ids)


def _by_key(column_keys: dict[str, str]) -> dict[str, list[str]]:
    """{column: key id} in pyarrow's (and EncryptionPolicy's) shape {key id: [columns]}."""
    out: dict[str, list[str]] = {}
    for column, key_id in column_keys.items():
        out.setdefault(key_id, []).append(column)
    return out


def make_policy(kms: Any, columns: tuple[str, ...] | None = None, **variant: Any) -> EncryptionPolicy:
    """The standard policy, restricted to ``columns`` (parquet-java refuses keys for columns a
    file does not have)."""
    keep = set(_TYPES if columns is None else columns)
    return EncryptionPolicy(
        footer_key="kf", kms=kms, column_keys=_by_key({c: k for c, k in COLUMN_KEYS.items() if c in keep}),
        bloom_filters={c: BloomFilterSpec(ndv=1000, fpp=0.01) for c in _TYPES if c in keep},
        **variant)


def standard_dataframe(spark: Any) -> Any:
    """The 3,000 rows in order, in one partition (one file, row groups in row order)."""
    return spark.createDataFrame(_spark_rows(), spark_schema()).coalesce(1)


def write_parquet(spark: Any, df: Any, out_dir: Path, policy: EncryptionPolicy | None,
                  **options: str) -> Path:
    """Write ``df`` with ``policy`` (TIMESTAMP_MICROS, 1,000-row row groups) and return the single
    part file. The session's policy and timestamp type are restored afterwards."""
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType")
    spark.conf.set("spark.sql.parquet.outputTimestampType",
                   options.pop("timestamp_type", "TIMESTAMP_MICROS"))
    try:
        with applied_policy(spark, policy):
            (df.write.mode("overwrite")
             .option("parquet.block.row.count.limit", str(ROWS_PER_ROW_GROUP))
             .options(**options).parquet(str(out_dir)))
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", previous)
    parts = sorted(out_dir.glob("part-*.parquet"))
    if len(parts) != 1:
        raise AssertionError(f"expected one part file in {out_dir}, found {len(parts)}")
    return parts[0]


def write_spark_bloom_files(spark: Any, out_dir: Path) -> SparkBloomFiles:
    key_list = random_key_list()
    kms = KeyListKmsConfig(key_list)
    df = standard_dataframe(spark).cache()
    files = {}
    for name, variant in VARIANTS.items():
        policy = make_policy(kms, **variant)
        files[name] = SparkBloomFile(name, write_parquet(spark, df, out_dir / name, policy), policy)
    df.unpersist()
    return SparkBloomFiles(key_list=key_list, files=files, columns=expected_columns())
