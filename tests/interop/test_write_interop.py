"""Files written by ``secure_bloom.parquet.write_table`` read by real readers: parquet-java (every
stored value of every type found by its own findHash), Spark with the same keys (key-list KMS and
OpenBao) returning the right rows, pyarrow (the identical table). Needs Java 17 and pyspark; the
OpenBao test needs the bao binary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from support.extreme_table import NDV, READ_CONF, ROWS_PER_GROUP, assert_same_table, check_all_found, extreme_table
from support.openbao_server import OpenBaoServer
from support.parquet_files import TESTING_KEY_LIST, read_encrypted, sample_table, ssn, vector_kms

from secure_bloom.kms import OpenBaoTransitKms
from secure_bloom.parquet import write_table
from secure_bloom.spark.policy import BloomFilterSpec, EncryptionPolicy, KeyListKmsConfig, TransitKmsConfig
from secure_bloom.spark.session import applied_policy
from benchmarks.parquet_java import ColumnProbe, bloom_probe
from support.parquet_java_checks import bloom_verify

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("plaintext_footer,decimals_as_integer", [(False, False), (True, True)],
                         ids=["encrypted-footer-flba-decimals", "plaintext-footer-integer-decimals"])
def test_parquet_java_finds_every_value_written(tmp_path: Path, plaintext_footer: bool,
                                                decimals_as_integer: bool) -> None:
    table, expected = extreme_table(decimals_as_integer)
    names = list(table.column_names)
    keyed = {"kc1": names[: len(names) // 2], "kc2": names[len(names) // 2:]}
    path = tmp_path / "written.parquet"
    report = write_table(table, path, encryption=pe.EncryptionConfiguration(
        footer_key="kf", column_keys=keyed, plaintext_footer=plaintext_footer), kms=vector_kms(),
        bloom_filter_options={c: {"ndv": NDV} for c in expected}, row_group_size=ROWS_PER_GROUP,
        coerce_timestamps=None, store_decimal_as_integer=decimals_as_integer)
    assert {(f.encrypted, f.num_bytes) for f in report.filters} == {(True, 4096)}
    assert len(report.filters) == 2 * len(expected)
    # pyarrow reads back what it reads from its own plaintext write of the table (it restores some
    # types as it stores them: time32[s] as [ms], date64 as date32)
    plain = tmp_path / "pyarrow-plain.parquet"
    pq.write_table(table, plain, coerce_timestamps=None, store_decimal_as_integer=decimals_as_integer)
    assert_same_table(read_encrypted(path), pq.read_table(plain))
    check_all_found(bloom_verify(path, READ_CONF, list_values=True), expected)


def test_parquet_java_finds_int96_and_exact_ndv_filters(tmp_path: Path) -> None:
    """Filters sized from each row group's own distinct count (no ndv), legacy INT96 timestamps."""
    table = sample_table(4000)
    path = tmp_path / "int96.parquet"
    write_table(table, path, encryption=pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["ssn", "ts"]}),
                kms=vector_kms(), bloom_filter_options={"ssn": True, "ts": True, "id": True}, row_group_size=1500,
                use_deprecated_int96_timestamps=True)
    result = bloom_verify(path, READ_CONF, ["ssn", "ts", "id"])
    for column in ("ssn", "ts", "id"):
        groups = result["columns"][column]["row_groups"]
        assert [(g["has_bloom_filter"], g["num_values"], g["missing"]) for g in groups] == \
            [(True, 1500, 0), (True, 1500, 0), (True, 1000, 0)], column


def test_spark_queries_the_written_file_with_the_same_keys(spark: Any, tmp_path: Path) -> None:
    table = sample_table()
    out = tmp_path / "table"
    out.mkdir()
    write_table(table, out / "part-0.parquet",
                encryption=pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["ssn", "amount"],
                                                                                    "kc2": ["ts"]}),
                kms=vector_kms(), bloom_filter_options={"ssn": True, "id": True}, row_group_size=1000)
    policy = EncryptionPolicy(footer_key="kf", kms=KeyListKmsConfig(TESTING_KEY_LIST),
                              column_keys={"kc1": ["ssn", "amount"], "kc2": ["ts"]})
    with applied_policy(spark, policy):
        df = spark.read.parquet(str(out))
        rows = df.where(df.ssn == ssn(1234)).select("id", "ssn").collect()
        none = df.where(df.ssn == "no-such-ssn").count()
        count = df.count()
    assert (count, none) == (3000, 0)
    assert [(r["id"], r["ssn"]) for r in rows] == [(1234, ssn(1234))]
    probe = bloom_probe(out / "part-0.parquet", [ColumnProbe("ssn", "string", (ssn(5), ssn(2999)))],
                        policy.hadoop_conf())
    groups = probe["columns"]["ssn"]["row_groups"]
    assert [g["found"][ssn(5)] for g in groups] == [True, False, False]
    assert [g["found"][ssn(2999)] for g in groups] == [False, False, True]


TOKEN_ENV = "SECURE_BLOOM_TEST_WRITE_TOKEN"


def test_openbao_keys_written_in_python_read_by_spark(spark: Any, openbao: OpenBaoServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import hvac

    client = hvac.Client(url=openbao.url, token=openbao.token)
    for name in ("write_footer_mk", "write_pii_mk"):
        client.secrets.transit.create_key(name=name)
    kms = OpenBaoTransitKms(openbao.url, token=openbao.token)
    emails = [f"person{i:05d}@example.com" for i in range(3000)]
    table = pa.table({"email": emails, "n": pa.array(range(3000), pa.int64())})
    out = tmp_path / "bao"
    out.mkdir()
    write_table(table, out / "part-0.parquet",
                encryption=pe.EncryptionConfiguration(footer_key="write_footer_mk",
                                                      column_keys={"write_pii_mk": ["email"]}),
                kms=kms, kms_connection_config=pe.KmsConnectionConfig(kms_instance_url=openbao.url),
                bloom_filter_options={"email": True}, row_group_size=1000)
    monkeypatch.setenv(TOKEN_ENV, openbao.token)
    policy = EncryptionPolicy(footer_key="write_footer_mk", kms=TransitKmsConfig(openbao.url, token_env=TOKEN_ENV),
                              column_keys={"write_pii_mk": ["email"]}, bloom_filters={"email": BloomFilterSpec()})
    probe = ("person00010@example.com", "person01500@example.com", "nobody@example.com")
    groups = bloom_probe(out / "part-0.parquet", [ColumnProbe("email", "string", probe)],
                         policy.hadoop_conf())["columns"]["email"]["row_groups"]
    assert [g["found"]["person00010@example.com"] for g in groups] == [True, False, False]
    assert [g["found"]["person01500@example.com"] for g in groups] == [False, True, False]
    assert not any(g["found"]["nobody@example.com"] for g in groups)
    with applied_policy(spark, policy):
        rows = spark.read.parquet(str(out)).where("email = 'person01500@example.com'").collect()
    assert [(r.email, r.n) for r in rows] == [("person01500@example.com", 1500)]
