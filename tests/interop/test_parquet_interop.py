"""Our reader against Spark / parquet-java files, and parquet-java / Spark against our attach output
(SPEC_NOTES 4-8). Needs Java 17 and pyspark."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from support.parquet_files import (
    ROWS_PER_GROUP,
    TESTING_KEY_LIST,
    read_encrypted,
    ssn,
    vector_kms,
    write_encrypted,
    write_plain,
)
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import MAYBE, KeyAccess, ParquetBloomReader, attach_bloom_filters
from benchmarks.parquet_java import ColumnProbe, bloom_probe, format_value
from secure_bloom.spark.policy import EncryptionPolicy, KeyListKmsConfig
from secure_bloom.spark.session import applied_policy
from support.spark_bloom_data import SparkBloomFiles, make_policy, random_key_list, standard_dataframe, write_parquet

pytestmark = pytest.mark.interop

KEYS = KeyAccess(kms=vector_kms())
READ_CONF = {"parquet.crypto.factory.class": "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory",
             "parquet.encryption.kms.client.class": "io.securebloom.KeyListKmsClient",
             "parquet.encryption.key.list": TESTING_KEY_LIST}


# --- our reader on Spark's files ---------------------------------------------------------------


@pytest.mark.parametrize("variant", ["gcm_footer", "gcm_plaintext_footer", "ctr_footer", "ctr_plaintext_footer"])
def test_reader_finds_every_spark_value_in_its_row_group(spark_bloom_files: SparkBloomFiles, variant: str) -> None:
    f = spark_bloom_files.files[variant]
    keys = KeyAccess(kms=KeyListKms(spark_bloom_files.key_list))
    with ParquetBloomReader(f.path, keys) as r:
        assert r.footer.mode == ("plaintext_signed" if f.plaintext_footer else "encrypted")
        assert r.footer.params is not None and r.footer.params.algorithm == f.algorithm
        if f.plaintext_footer:
            assert r.footer.signature_verified is True
        assert r.num_row_groups == 3
        for col in spark_bloom_files.columns.values():
            info = r.column(col.path)
            assert info.encrypted == (col.master_key is not None), col.path
            for g, values in enumerate(col.row_groups):
                bf = r.bloom_filter(g, col.path)
                assert (bf is not None) == col.has_filter, (col.path, g)
            result = r.probe(col.path, [v for group in col.row_groups for v in group] + list(col.absent))
            n = len(col.row_groups[0])
            for g, rg in enumerate(result.row_groups):
                answers = [a for _, a in rg.values]
                assert rg.has_bloom_filter == col.has_filter and rg.encrypted == (col.master_key is not None)
                assert all(a == MAYBE for a in answers[g * n:(g + 1) * n]), (col.path, g)  # no false negative
                if col.has_filter:
                    others = answers[:g * n] + answers[(g + 1) * n:]
                    assert sum(a == MAYBE for a in others) <= len(others) * 0.05, (col.path, g)
                else:
                    assert set(answers) == {MAYBE}  # no filter: never "absent"


def test_reader_uses_parquet_java_filters_capped_at_a_max_that_is_no_multiple_of_32(spark: Any,
                                                                                     tmp_path: Path) -> None:
    """Issue 15 item 23: with parquet.bloom.filter.max.bytes=1000 parquet-java writes 1000-byte
    bitsets (31 blocks and 8 unused bytes); they were refused ("not a multiple of 32"). Every
    value is found in its own row group, and the bitset keeps all 1000 bytes."""
    key_list = random_key_list()
    policy = make_policy(KeyListKmsConfig(key_list), bloom_filter_max_bytes=1000)
    path = write_parquet(spark, standard_dataframe(spark), tmp_path / "max1000", policy)
    from support.spark_bloom_data import expected_columns

    columns = {name: col for name, col in expected_columns().items() if col.has_filter}
    with ParquetBloomReader(path, KeyAccess(kms=KeyListKms(key_list))) as r:
        for col in columns.values():
            n = len(col.row_groups[0])
            result = r.probe(col.path, [v for group in col.row_groups for v in group])
            for g, rg in enumerate(result.row_groups):
                bf = r.bloom_filter(g, col.path)
                assert bf is not None and (bf.num_bytes, bf.num_blocks, len(bf.bitset)) == (1000, 31, 1000), col.path
                assert [a for _, a in rg.values][g * n:(g + 1) * n] == [MAYBE] * n, (col.path, g)


def test_reader_takes_logical_values_for_spark_types(spark_bloom_files: SparkBloomFiles) -> None:
    """DECIMAL(25,2) as Decimal, DATE as date, TIMESTAMP as datetime: the same hashes Spark wrote."""
    from support.spark_bloom_data import decimal_unscaled

    f = spark_bloom_files.files["gcm_footer"]
    keys = KeyAccess(kms=KeyListKms(spark_bloom_files.key_list))
    with ParquetBloomReader(f.path, keys) as r:
        assert r.column("dec").type_name == "FIXED_LEN_BYTE_ARRAY(11)/DECIMAL(25,2)"
        for i in (0, 1, 1234, 2999):
            g = i // ROWS_PER_GROUP
            assert g in r.row_groups_maybe_containing("dec", Decimal(decimal_unscaled(i)).scaleb(-2))
            assert g in r.row_groups_maybe_containing("day", dt.date(2000, 1, 1) + dt.timedelta(days=i))
            ts = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=i * 1_000_037)
            assert g in r.row_groups_maybe_containing("ts", ts)
            assert g in r.row_groups_maybe_containing("nested.x", i * 11)


def test_our_bitsets_equal_parquet_javas(spark_bloom_files: SparkBloomFiles) -> None:
    import hashlib

    f = spark_bloom_files.files["ctr_plaintext_footer"]
    java = bloom_probe(f.path, [ColumnProbe("s", "string"), ColumnProbe("pub", "int64")], f.hadoop_conf(),
                       bitset_sha256=True)
    keys = KeyAccess(kms=KeyListKms(spark_bloom_files.key_list))
    with ParquetBloomReader(f.path, keys) as r:
        for column in ("s", "pub"):
            ours = [hashlib.sha256(r.bloom_filter(g, column).bitset).hexdigest()  # type: ignore[union-attr]
                    for g in range(3)]
            assert ours == [rg["bitset_sha256"] for rg in java["columns"][column]["row_groups"]]


# --- parquet-java and Spark on our attach output --------------------------------------------------


def _java_probes() -> list[ColumnProbe]:
    rows = list(range(0, 3000, 50))
    amount = [(i).to_bytes(6, "big", signed=True).hex() for i in rows]  # DECIMAL(12,2) unscaled, FLBA(6)
    return [ColumnProbe("ssn", "string", tuple(ssn(i) for i in rows) + ("nobody",)),
            ColumnProbe("id", "int64", tuple(rows)),
            ColumnProbe("amount", "binary-hex", tuple(bytes.fromhex(a) for a in amount))]


@pytest.mark.parametrize("plaintext_footer", [False, True])
def test_parquet_java_reads_filters_we_attached(tmp_path: Path, plaintext_footer: bool) -> None:
    src = write_encrypted(tmp_path / "src.parquet", plaintext_footer=plaintext_footer)
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["ssn", "id", "amount"], KEYS)
    result = bloom_probe(dst, _java_probes(), READ_CONF)
    assert result["encryption"] == ("PLAINTEXT_FOOTER" if plaintext_footer else "ENCRYPTED_FOOTER")
    for probe in _java_probes():
        got = result["columns"][probe.column]
        assert got["encrypted"] == (probe.column != "id")
        for g, rg in enumerate(got["row_groups"]):
            assert rg["has_bloom_filter"]
            for i, value in zip(range(0, 3000, 50), probe.values):
                if i // ROWS_PER_GROUP == g:
                    assert rg["found"][format_value(value, probe.value_type)] is True, (probe.column, g, i)
    assert result["columns"]["ssn"]["row_groups"][0]["found"]["nobody"] is False


def test_parquet_java_reads_filters_attached_to_a_plaintext_file(tmp_path: Path) -> None:
    src = write_plain(tmp_path / "plain.parquet")
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["ssn", "id"])
    result = bloom_probe(dst, [ColumnProbe("ssn", "string", (ssn(5), ssn(1005))),
                               ColumnProbe("id", "int64", (5, 2005))])
    ssn_rgs = result["columns"]["ssn"]["row_groups"]
    assert ssn_rgs[0]["found"][ssn(5)] and ssn_rgs[1]["found"][ssn(1005)]
    assert result["columns"]["id"]["row_groups"][2]["found"]["2005"] is True


def test_spark_reads_the_attached_file(spark: Any, tmp_path: Path) -> None:
    src = write_encrypted(tmp_path / "src.parquet")
    dst_dir = tmp_path / "out"
    dst_dir.mkdir()
    attach_bloom_filters(src, dst_dir / "part-0.parquet", ["ssn", "amount", "ts"], KEYS)
    policy = EncryptionPolicy(footer_key="kf", kms=KeyListKmsConfig(TESTING_KEY_LIST),
                              column_keys={"kc1": ["ssn", "amount"], "kc2": ["ts"]})
    expected = read_encrypted(src)
    with applied_policy(spark, policy):
        df = spark.read.parquet(str(dst_dir))
        rows = df.where(df.ssn == ssn(1234)).select("id", "amount").collect()
        count = df.count()
    assert count == expected.num_rows
    assert [(r["id"], r["amount"]) for r in rows] == [(1234, Decimal("12.34"))]


@pytest.mark.parametrize("variant", ["gcm_plaintext_footer", "ctr_footer"])
def test_attach_to_a_spark_file(spark_bloom_files: SparkBloomFiles, tmp_path: Path, variant: str) -> None:
    """parquet-java's footer survives a rewrite: the dictionary-only column ``cat`` (no filter from
    Spark) gets one, Spark's other filters are kept, and parquet-java reads them all back."""
    from secure_bloom import thrift_codec

    f = spark_bloom_files.files[variant]
    keys = KeyAccess(kms=KeyListKms(spark_bloom_files.key_list))
    with ParquetBloomReader(f.path, keys) as r:
        assert thrift_codec.serialize(r.footer.metadata) == r.footer.metadata_thrift
        for chunk in r.column_chunks():
            meta = r.column_metadata(chunk)
            thrift = r.column_metadata_thrift(chunk)
            if thrift is not None:
                assert thrift_codec.serialize(meta) == thrift
    dst = tmp_path / "attached.parquet"
    report = attach_bloom_filters(f.path, dst, ["cat"], keys)
    assert report.kept_filters == 3 * 10  # every other column's filter, in every row group
    assert all(x.encrypted for x in report.filters) and all(x.ndv == 3 for x in report.filters)
    columns = spark_bloom_files.columns
    with ParquetBloomReader(dst, keys) as r:
        for g in range(3):
            assert r.probe("cat", ["red", "green", "blue"]).row_groups[g].has_bloom_filter
            assert g in r.row_groups_maybe_containing("s", columns["s"].row_groups[g][7])
    result = bloom_probe(dst, [ColumnProbe("cat", "string", ("red", "green", "blue", "purple")),
                               ColumnProbe("i64", "int64", (columns["i64"].row_groups[2][5],))], f.hadoop_conf())
    for rg in result["columns"]["cat"]["row_groups"]:
        assert rg["has_bloom_filter"] and rg["found"]["red"] and rg["found"]["blue"]
        assert rg["found"]["purple"] is False
    assert result["columns"]["i64"]["row_groups"][2]["found"][str(columns["i64"].row_groups[2][5])] is True


# --- query semantics on parquet-java's NaN ------------------------------------------------------


def test_probe_of_a_nan_written_by_parquet_java_is_maybe(spark: Any, tmp_path: Path) -> None:
    """Regression (issue 15 item 22): parquet-java hashes a NaN's RAW bits (-NaN 0xfff8...) but
    stores the canonical NaN (0x7ff8...), so a bit-exact probe of the stored NaN answered absent."""
    import numpy as np
    import pyarrow.parquet as pq

    from secure_bloom.values.column import hash_for_column

    neg_nan = -float("nan")  # bits 0xfff8000000000000; Python pickles the bits, the JVM keeps them
    rows = [(neg_nan if i == 7 else i + 0.5, neg_nan if i == 7 else i + 0.25) for i in range(2000)]
    df = spark.createDataFrame(rows, "d double, f float")
    out = tmp_path / "nan"
    (df.coalesce(1).write.option("parquet.bloom.filter.enabled#d", "true")
     .option("parquet.bloom.filter.enabled#f", "true").option("parquet.bloom.filter.expected.ndv#d", "2000")
     .option("parquet.bloom.filter.expected.ndv#f", "2000").parquet(str(out)))
    (path,) = sorted(out.glob("part-*.parquet"))
    stored = pq.read_table(path)
    d_bits = stored.column("d").to_numpy().view(np.uint64)
    f_bits = stored.column("f").to_numpy().view(np.uint32)
    assert (int(d_bits[7]), int(f_bits[7])) == (0x7FF8000000000000, 0x7FC00000)  # canonical on the page
    with ParquetBloomReader(path) as r:
        raws = {"d": np.array([0xFFF8000000000000], dtype=np.uint64).view(np.float64)[0],
                "f": np.array([0xFFC00000], dtype=np.uint32).view(np.float32)[0]}
        for column, raw in raws.items():
            stored_nan, raw_nan = stored.column(column)[7].as_py(), neg_nan
            bf = r.bloom_filter(0, column)
            assert bf is not None
            info = r.column(column)
            # the premise: the filter holds the raw -NaN, not the NaN the page stores
            assert (bf.check_hash(hash_for_column(raw, info)),
                    bf.check_hash(hash_for_column(stored_nan, info))) == (True, False), column
            answers = r.probe(column, [stored_nan, raw_nan, raw, 8.5 if column == "d" else 8.25])
            assert [a for _, a in answers.row_groups[0].values] == [MAYBE] * 4, column
            assert r.row_groups_maybe_containing(column, float("nan")) == [0]
