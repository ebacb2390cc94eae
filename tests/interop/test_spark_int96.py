"""Spark's default timestamp type, legacy INT96, with Bloom filters (SPEC_NOTES 6, issue 15 item 25).

parquet-java DOES write Bloom filters for INT96 columns: on every chunk of a high-cardinality column.
Like any column, a chunk whose pages are all dictionary encoded gets none (parquet-java skips the
filter there): a small or low-cardinality INT96 column written by Spark may have no filter at all,
which is what an earlier fixture here showed and wrongly took for "no INT96 filters". Both cases are
tested: our reader and parquet-java's reader find every stored value in Spark's own INT96 filters;
our attach replaces them (bit for bit the same filter when sized the same) and adds filters where
there were none; audit passes; Spark reads the result.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.spark_bloom_data import random_key_list

from secure_bloom.kms import KeyListKms
from secure_bloom.values.logical import encode_int96
from secure_bloom.parquet import ABSENT, MAYBE, KeyAccess, ParquetBloomReader
from secure_bloom.parquet.write.attach import attach_bloom_filters
from secure_bloom.parquet.audit.auditor import audit
from benchmarks.parquet_java import ColumnProbe, bloom_probe
from support.parquet_java_checks import bloom_verify
from secure_bloom.spark.policy import BloomFilterSpec, EncryptionPolicy, KeyListKmsConfig
from secure_bloom.spark.session import applied_policy

pytestmark = pytest.mark.interop

BASE = dt.datetime(2024, 3, 1, 12, 0, 0)
ROWS_PER_GROUP = 100_000  # distinct values: parquet-java's dictionary falls back to plain pages
STEP = 61  # seconds between rows


def row_time(i: int) -> dt.datetime:
    return BASE + dt.timedelta(seconds=STEP * i)


@dataclass(frozen=True)
class SparkInt96File:
    path: Path
    policy: EncryptionPolicy
    keys: KeyAccess
    rows: int


def _write(spark: Any, out: Path, rows: int, rows_per_group: int, bloom_ndv: int) -> SparkInt96File:
    """Spark writes ``id`` (plaintext INT64, no filter) and ``ts`` (INT96, encrypted with kc1, a
    filter requested with ``bloom_ndv``), one file, ``rows_per_group`` rows per row group."""
    from pyspark.sql import functions as F

    key_list = random_key_list(("kf", "kc1"))
    policy = EncryptionPolicy(footer_key="kf", kms=KeyListKmsConfig(key_list), column_keys={"kc1": ["ts"]},
                              bloom_filters={"ts": BloomFilterSpec(ndv=bloom_ndv, fpp=0.01)})
    df = spark.range(0, rows, numPartitions=1).select(
        F.col("id"), (F.lit(BASE).cast("timestamp") + F.make_interval(secs=F.col("id") * STEP)).alias("ts"))
    with applied_policy(spark, policy):
        assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"
        df.coalesce(1).write.options(**policy.write_options()).option(
            "parquet.block.row.count.limit", str(rows_per_group)).parquet(str(out))
    (data_file,) = [p for p in out.iterdir() if p.suffix == ".parquet"]
    return SparkInt96File(data_file, policy, KeyAccess(kms=KeyListKms(key_list)), rows)


@pytest.fixture(scope="module")
def spark_int96(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> SparkInt96File:
    """200,000 distinct INT96 timestamps in two row groups, filters sized for 100,000 values."""
    return _write(spark, tmp_path_factory.mktemp("spark-int96") / "spark", 2 * ROWS_PER_GROUP, ROWS_PER_GROUP,
                  bloom_ndv=ROWS_PER_GROUP)


def _check_our_reader(path: Path, keys: KeyAccess, rows: int) -> None:
    """A sample of stored values answers "maybe" in its row group, and values between them are
    mostly absent everywhere."""
    sample = list(range(0, rows, 37))
    with ParquetBloomReader(path, keys=keys) as reader:
        result = reader.probe("ts", [row_time(i) for i in sample], timezone="UTC")
        for g, rg in enumerate(result.row_groups):
            assert rg.has_bloom_filter and rg.encrypted
            mine = [a for i, (_, a) in zip(sample, rg.values) if i // ROWS_PER_GROUP == g]
            assert mine and set(mine) == {MAYBE}, g
        between = reader.probe("ts", [row_time(i) + dt.timedelta(seconds=30) for i in sample], timezone="UTC")
        answers = [a for rg in between.row_groups for _, a in rg.values]
        assert sum(a == ABSENT for a in answers) >= 0.97 * len(answers)


def _check_parquet_java_finds_every_value(path: Path, conf: dict[str, str], columns: list[str]) -> None:
    result = bloom_verify(path, conf, columns)
    for column in columns:
        got = [(rg["num_values"], rg["num_distinct"], rg["has_bloom_filter"], rg["missing"])
               for rg in result["columns"][column]["row_groups"]]
        assert got == [(ROWS_PER_GROUP, ROWS_PER_GROUP, True, 0)] * 2, column


def test_parquet_java_writes_int96_filters_we_read(spark_int96: SparkInt96File) -> None:
    f = spark_int96
    with ParquetBloomReader(f.path, keys=f.keys) as reader:
        assert reader.column("ts").type_name == "INT96"
        assert [(c.column, c.has_bloom_filter) for c in reader.chunks()] == [("id", False), ("ts", True)] * 2
        assert reader.row_groups_maybe_containing("ts", row_time(150_000), timezone="UTC") == [1]
    _check_our_reader(f.path, f.keys, f.rows)
    _check_parquet_java_finds_every_value(f.path, f.policy.hadoop_conf(), ["ts"])


def test_attach_replaces_sparks_int96_filters(spark_int96: SparkInt96File, tmp_path: Path) -> None:
    """attach rebuilds the ts filters (the same bits as parquet-java's: same size, same values) and
    adds filters to id; parquet-java finds every stored value of both; audit passes."""
    f = spark_int96
    attached = tmp_path / "attached.parquet"
    report = attach_bloom_filters(f.path, attached, ["ts", "id"], keys=f.keys, fpp=0.01)
    assert sorted((x.column, x.row_group, x.replaced, x.encrypted) for x in report.filters) == [
        ("id", 0, False, False), ("id", 1, False, False), ("ts", 0, True, True), ("ts", 1, True, True)]
    conf = f.policy.hadoop_conf()
    raw = encode_int96(row_time(150_000))
    probes = [ColumnProbe("ts", "binary-hex", (raw,))]
    before = bloom_probe(f.path, probes, conf, bitset_sha256=True)["columns"]["ts"]["row_groups"]
    after = bloom_probe(attached, probes, conf, bitset_sha256=True)["columns"]["ts"]["row_groups"]
    assert [rg["found"][raw.hex()] for rg in after] == [False, True]
    assert [(rg["num_bytes"], rg["bitset_sha256"]) for rg in after] == \
        [(rg["num_bytes"], rg["bitset_sha256"]) for rg in before]
    assert after[0]["bloom_filter_offset"] != before[0]["bloom_filter_offset"]  # a new module, not a copy
    _check_our_reader(attached, f.keys, f.rows)
    _check_parquet_java_finds_every_value(attached, conf, ["ts", "id"])
    result = audit([f.path, attached], ["ts"], keys=f.keys)
    assert result.is_compliant and result.exit_code == 0
    assert [c.filters_checked for r in result.files for c in r.columns] == [2, 2]


def test_dictionary_only_int96_chunks_have_no_filter_until_attached(spark: Any, tmp_path: Path) -> None:
    """1,000 rows per row group: every page of ts is dictionary encoded, so parquet-java writes no
    filter (as for any dictionary-only chunk) and we answer "maybe"; attach adds encrypted INT96
    filters that parquet-java and Spark use."""
    from pyspark.sql import functions as F

    f = _write(spark, tmp_path / "spark", 2000, 1000, bloom_ndv=1000)
    present = row_time(1500)
    with ParquetBloomReader(f.path, keys=f.keys) as reader:
        assert all(not c.has_bloom_filter for c in reader.chunks())
        assert reader.row_groups_maybe_containing("ts", present, timezone="UTC") == [0, 1]

    attached = tmp_path / "attached.parquet"
    attach_bloom_filters(f.path, attached, ["ts"], keys=f.keys)
    with ParquetBloomReader(attached, keys=f.keys) as reader:
        assert all(c.has_bloom_filter and c.encrypted for c in reader.chunks() if c.column == "ts")
        assert reader.row_groups_maybe_containing("ts", present, timezone="UTC") == [1]
        assert reader.row_groups_maybe_containing("ts", BASE - dt.timedelta(days=3), timezone="UTC") == []
    raw = encode_int96(present)
    result = bloom_probe(attached, [ColumnProbe("ts", "binary-hex", (raw,))], f.policy.hadoop_conf())
    assert [g["found"][raw.hex()] for g in result["columns"]["ts"]["row_groups"]] == [False, True]
    verified = bloom_verify(attached, f.policy.hadoop_conf(), ["ts"])["columns"]["ts"]["row_groups"]
    assert [(rg["num_values"], rg["has_bloom_filter"], rg["missing"]) for rg in verified] == [(1000, True, 0)] * 2
    with applied_policy(spark, f.policy):
        rows = spark.read.parquet(str(attached)).where(F.col("ts") == F.lit(present)).collect()
    assert [r.id for r in rows] == [1500]
