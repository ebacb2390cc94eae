"""Spark and Python share master keys in AWS KMS (moto's KMS API on 127.0.0.1, support/aws_kms_server.py).

Spark (parquet-java + our JDK-only io.securebloom.AwsKmsClient, SigV4-signed) writes encrypted
Bloom filters that secure_bloom (AwsKms, boto3) reads; secure_bloom writes files that Spark and
parquet-java read; a key wrapped on one side unwraps on the other. A key disabled on the server
fails both sides with the named error (KmsKeyDisabledException / KeyDisabledError) and leaves
nothing written; a server that never answers fails the JVM client within its deadline.
"""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet.encryption as pe
import pytest
from support.aws_kms_server import AwsKmsService
from support.kms_support import call_outcome
from support.parquet_java_checks import kms_unwrap, kms_wrap
from support.spark_bloom_data import expected_columns, standard_dataframe, write_parquet

from secure_bloom.errors import JvmError, KeyDisabledError
from secure_bloom.kms.aws import encryption_context
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, read_table, write_table
from secure_bloom.spark.policy import AwsKmsConfig, BloomFilterSpec, EncryptionPolicy
from secure_bloom.spark.session import applied_policy
from benchmarks.parquet_java import ColumnProbe, bloom_probe

pytestmark = [pytest.mark.interop, pytest.mark.aws_kms]

COLUMNS = ("i32", "i64", "s")


@pytest.fixture
def aws_keys(aws_kms: AwsKmsService, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Fresh footer and column keys (aliases), and the AWS credentials in the environment the
    policy reads them from."""
    for name, value in aws_kms.hadoop_credentials().items():
        monkeypatch.setenv(name, value)
    footer, pii = aws_kms.unique_alias("spark-footer"), aws_kms.unique_alias("spark-pii")
    footer_id, _ = aws_kms.create_key(footer)
    pii_id, _ = aws_kms.create_key(pii)
    return {"footer": f"alias/{footer}", "pii": f"alias/{pii}", "footer_id": footer_id, "pii_id": pii_id}


def _policy(aws_kms: AwsKmsService, keys: dict[str, str], columns: dict[str, list[str]],
            blooms: tuple[str, ...]) -> EncryptionPolicy:
    return EncryptionPolicy(footer_key=keys["footer"], kms=AwsKmsConfig(aws_kms.region, endpoint=aws_kms.endpoint),
                            column_keys={keys["pii"]: columns["pii"]} if columns else {},
                            bloom_filters={c: BloomFilterSpec(ndv=1000, fpp=0.01) for c in blooms})


def test_python_reads_what_spark_wrote_and_spark_reads_what_python_wrote(
        spark: Any, aws_kms: AwsKmsService, aws_keys: dict[str, str], tmp_path: Path) -> None:
    policy = _policy(aws_kms, aws_keys, {"pii": ["i32", "s"]}, COLUMNS)
    aws_kms.reset()
    path = write_parquet(spark, standard_dataframe(spark).select(*COLUMNS), tmp_path / "spark", policy)
    spark_write = aws_kms.counts()
    assert spark_write.get("Encrypt", 0) >= 2  # the JVM client reached the server: one KEK per master key
    keys = KeyAccess(kms=aws_kms.kms())
    expected = expected_columns()
    with ParquetBloomReader(path, keys=keys) as reader:
        assert reader.num_row_groups == 3
        for column in COLUMNS:
            for group, values in enumerate(expected[column].row_groups):
                for value in values[::97]:
                    assert group in reader.row_groups_maybe_containing(column, value), (column, value)
            assert sum(bool(reader.row_groups_maybe_containing(column, v)) for v in expected[column].absent) <= 10
    wanted = expected["s"].row_groups[2][5]
    assert read_table(path, filters=[("s", "=", wanted)], keys=keys).column("s").to_pylist() == [wanted]

    # Python writes, parquet-java and Spark read
    emails = [f"person{i:05d}@example.com" for i in range(3000)]
    table = pa.table({"email": emails, "n": pa.array(range(3000), pa.int64())})
    py_path = tmp_path / "python.parquet"
    write_table(table, py_path, encryption=pe.EncryptionConfiguration(
        footer_key=aws_keys["footer"], column_keys={aws_keys["pii"]: ["email"]}), kms=aws_kms.kms(),
        bloom_filter_options={"email": True}, row_group_size=1000)
    read_policy = _policy(aws_kms, aws_keys, {"pii": ["email"]}, ("email",))
    probe = ["person00010@example.com", "person01500@example.com", "person02999@example.com", "nobody@example.com"]
    result = bloom_probe(py_path, [ColumnProbe("email", "string", tuple(probe))], read_policy.hadoop_conf())
    groups = result["columns"]["email"]["row_groups"]
    assert [g["found"]["person00010@example.com"] for g in groups] == [True, False, False]
    assert [g["found"]["person01500@example.com"] for g in groups] == [False, True, False]
    assert [g["found"]["person02999@example.com"] for g in groups] == [False, False, True]
    assert not any(g["found"]["nobody@example.com"] for g in groups)
    with applied_policy(spark, read_policy):
        rows = spark.read.parquet(str(py_path)).where("email = 'person01500@example.com'").collect()
    assert [(r.email, r.n) for r in rows] == [("person01500@example.com", 1500)]


def test_keys_wrapped_on_one_side_unwrap_on_the_other(aws_kms: AwsKmsService, aws_keys: dict[str, str]) -> None:
    import hashlib

    conf = _policy(aws_kms, aws_keys, {}, ()).hadoop_conf()
    key = os.urandom(16)
    for master in (aws_keys["pii"], aws_keys["pii_id"]):
        wrapped_on_jvm = kms_wrap("AwsKmsClient", master, key, conf)
        assert aws_kms.kms().unwrap_key(wrapped_on_jvm, master) == key
        wrapped_in_python = aws_kms.kms().wrap_key(key, master)
        assert kms_unwrap("AwsKmsClient", master, wrapped_in_python, conf) == (16, hashlib.sha256(key).hexdigest())
    # bound to the master key id on the JVM too
    with pytest.raises(JvmError, match="does not authenticate"):
        kms_unwrap("AwsKmsClient", aws_keys["footer"], aws_kms.kms().wrap_key(key, aws_keys["pii"]), conf)
    # AccessDeniedException (moto's answer to a ciphertext of another key under this KeyId)
    forged = aws_kms.admin().encrypt(KeyId=aws_keys["footer_id"], Plaintext=key,
                                     EncryptionContext=encryption_context(aws_keys["pii_id"]))["CiphertextBlob"]
    with pytest.raises(JvmError, match="KeyAccessDeniedException"):
        kms_unwrap("AwsKmsClient", aws_keys["pii_id"], base64.b64encode(forged).decode(), conf)


def test_a_disabled_key_fails_both_sides_and_nothing_is_written(
        spark: Any, aws_kms: AwsKmsService, aws_keys: dict[str, str], tmp_path: Path) -> None:
    policy = _policy(aws_kms, aws_keys, {"pii": ["i32", "s"]}, COLUMNS)
    before = write_parquet(spark, standard_dataframe(spark).select(*COLUMNS), tmp_path / "before", policy)
    aws_kms.disable(aws_keys["pii_id"])
    try:
        out = tmp_path / "refused"
        with pytest.raises(Exception, match="KmsKeyDisabledException"):
            write_parquet(spark, standard_dataframe(spark).select(*COLUMNS), out, policy)
        assert not out.exists() or not list(out.rglob("*.parquet"))
        with applied_policy(spark, policy):
            with pytest.raises(Exception, match="KmsKeyDisabledException"):
                spark.read.parquet(str(before)).where("s = 'x'").collect()
        with pytest.raises(JvmError, match="KmsKeyDisabledException"):
            bloom_probe(before, [ColumnProbe("s", "string", ("x",))], policy.hadoop_conf())
        py_out = tmp_path / "py"
        py_out.mkdir()
        with pytest.raises(KeyDisabledError):
            write_table(pa.table({"s": ["a", "b"]}), py_out / "x.parquet", kms=aws_kms.kms(),
                        encryption=pe.EncryptionConfiguration(footer_key=aws_keys["footer"],
                                                              column_keys={aws_keys["pii"]: ["s"]}),
                        bloom_filter_options={"s": True})
        assert list(py_out.iterdir()) == []
        with pytest.raises(KeyDisabledError):
            with ParquetBloomReader(before, keys=KeyAccess(kms=aws_kms.kms())) as reader:
                reader.bloom_filter(0, "s")
    finally:
        aws_kms.enable(aws_keys["pii_id"])


def test_the_jvm_client_fails_within_its_deadline_when_the_server_never_answers(
        blackhole: Any, aws_keys: dict[str, str]) -> None:
    conf = EncryptionPolicy(footer_key="alias/any", kms=AwsKmsConfig(
        "us-east-1", endpoint=f"http://{blackhole.endpoint}", deadline_s=3.0)).hadoop_conf()
    started = time.monotonic()
    error = call_outcome(lambda: kms_wrap("AwsKmsClient", "alias/any", os.urandom(16), conf))
    elapsed = time.monotonic() - started
    assert isinstance(error, JvmError), error
    assert "no answer within the deadline of 3.0 s" in str(error) or "timed out" in str(error)
    assert blackhole.connections() >= 1
    assert elapsed < 3.0 + 15.0, elapsed  # the deadline plus one JVM start
