"""Spark and Python share master keys in a real OpenBao transit engine (issues 4 and 6).

Spark (parquet-java + our Java VaultTransitKmsClient) writes encrypted Bloom filters; secure_bloom
(OpenBaoTransitKms) reads them. Then pyarrow writes an encrypted file whose data keys OpenBao
wraps, secure_bloom attaches encrypted filters, and Spark and parquet-java read them back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.openbao_server import OpenBaoServer
from support.spark_bloom_data import expected_columns, make_policy, standard_dataframe, write_parquet

from secure_bloom.kms import OpenBaoTransitKms
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.spark.policy import BloomFilterSpec, EncryptionPolicy, TransitKmsConfig
from secure_bloom.spark.session import applied_policy

pytestmark = [pytest.mark.interop, pytest.mark.kms]

TOKEN_ENV = "SB_TEST_ROUNDTRIP_BAO_TOKEN"


def _create_keys(server: OpenBaoServer, *names: str) -> None:
    for name in names:
        status, _ = server.request("POST", f"transit/keys/{name}", {})
        assert status in (200, 204), status


def test_python_reads_filters_spark_wrote_through_openbao(spark: Any, openbao: OpenBaoServer, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from secure_bloom.parquet.audit.auditor import audit

    _create_keys(openbao, "kf", "kc1", "kc2")
    monkeypatch.setenv(TOKEN_ENV, openbao.token)
    policy = make_policy(TransitKmsConfig(openbao.url, token_env=TOKEN_ENV), ("i32", "s", "pub"))
    path = write_parquet(spark, standard_dataframe(spark).select("i32", "s", "pub"), tmp_path / "spark", policy)
    keys = KeyAccess(kms=OpenBaoTransitKms(openbao.url, token=openbao.token))
    expected = expected_columns()
    with ParquetBloomReader(path, keys=keys) as reader:
        assert reader.num_row_groups == 3
        for column in ("i32", "s", "pub"):
            for group, values in enumerate(expected[column].row_groups):
                for value in values[::97]:
                    assert group in reader.row_groups_maybe_containing(column, value), (column, value)
            false_hits = sum(bool(reader.row_groups_maybe_containing(column, v)) for v in expected[column].absent)
            assert false_hits <= 10  # ~1 % of 200 absent values per row group, three row groups
    report = audit([str(path)], ["i32", "s"], keys=keys)
    assert report.is_compliant
    assert not audit([str(path)], ["pub"], keys=keys).is_compliant  # stored unencrypted
    # A token OpenBao refuses opens nothing.
    denied = KeyAccess(kms=OpenBaoTransitKms(openbao.url, token="not-a-token", retries=0))
    from secure_bloom.errors import KeyManagementError

    with pytest.raises(KeyManagementError):
        with ParquetBloomReader(path, keys=denied) as reader:
            reader.bloom_filter(0, "i32")


def test_spark_and_parquet_java_read_filters_python_attached_with_openbao_keys(
        spark: Any, openbao: OpenBaoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyarrow.parquet.encryption as pe

    from secure_bloom.kms import pyarrow_kms_client_factory
    from secure_bloom.parquet.write.attach import attach_bloom_filters
    from benchmarks.parquet_java import ColumnProbe, bloom_probe

    _create_keys(openbao, "footer_mk", "pii_mk")
    kms = OpenBaoTransitKms(openbao.url, token=openbao.token)
    emails = [f"person{i:05d}@example.com" for i in range(3000)]
    table = pa.table({"email": emails, "n": pa.array(range(3000), pa.int64())})
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
    props = factory.file_encryption_properties(
        pe.KmsConnectionConfig(kms_instance_url=openbao.url),
        pe.EncryptionConfiguration(footer_key="footer_mk", column_keys={"pii_mk": ["email"]}))
    src, dst = tmp_path / "pyarrow.parquet", tmp_path / "attached.parquet"
    pq.write_table(table, src, encryption_properties=props, row_group_size=1000)
    attach_bloom_filters(src, dst, ["email"], keys=KeyAccess(kms=kms))

    monkeypatch.setenv(TOKEN_ENV, openbao.token)
    policy = EncryptionPolicy(footer_key="footer_mk", kms=TransitKmsConfig(openbao.url, token_env=TOKEN_ENV),
                              column_keys={"pii_mk": ["email"]}, bloom_filters={"email": BloomFilterSpec()})
    probe = ["person00010@example.com", "person01500@example.com", "person02999@example.com", "nobody@example.com"]
    result = bloom_probe(dst, [ColumnProbe("email", "string", tuple(probe))], policy.hadoop_conf())
    groups = result["columns"]["email"]["row_groups"]
    assert [g["found"]["person00010@example.com"] for g in groups] == [True, False, False]
    assert [g["found"]["person01500@example.com"] for g in groups] == [False, True, False]
    assert [g["found"]["person02999@example.com"] for g in groups] == [False, False, True]
    assert not any(g["found"]["nobody@example.com"] for g in groups)
    with applied_policy(spark, policy):
        rows = spark.read.parquet(str(dst)).where("email = 'person01500@example.com'").collect()
    assert [(r.email, r.n) for r in rows] == [("person01500@example.com", 1500)]
