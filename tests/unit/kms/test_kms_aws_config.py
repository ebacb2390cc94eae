"""How AWS KMS is configured without a server: the Spark policy's AwsKmsConfig (Hadoop properties,
secrets redacted and kept out of writer options, master key ids parquet-java can carry), the
key sources of the CLI (``--kms aws``), the encryption context, and what no repr shows."""

from __future__ import annotations

import pytest

from secure_bloom.errors import ConfigurationError, KeyAccessDeniedError
from secure_bloom.kms.aws import AwsKms, encryption_context
from secure_bloom.parquet.file.keys import KmsService, key_access_from_sources
from secure_bloom.spark.policy import AWS_CLIENT, AwsKmsConfig, EncryptionPolicy

ENV = {"AWS_ACCESS_KEY_ID": "AKIDUNITTEST", "AWS_SECRET_ACCESS_KEY": "unit/Secret+Key", "AWS_SESSION_TOKEN": "unitTok"}


def test_policy_properties_redact_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    policy = EncryptionPolicy(footer_key="alias/footer", kms=AwsKmsConfig("eu-west-1", endpoint="https://vpce.example"),
                              column_keys={"1234abcd-12ab-34cd-56ef-1234567890ab": ["ssn"]})
    conf = policy.hadoop_conf()
    assert conf["parquet.encryption.kms.client.class"] == AWS_CLIENT
    assert conf["secure_bloom.kms.aws.region"] == "eu-west-1"
    assert conf["secure_bloom.kms.aws.endpoint"] == "https://vpce.example"
    assert conf["secure_bloom.kms.aws.secret.access.key"] == ENV["AWS_SECRET_ACCESS_KEY"]
    assert conf["secure_bloom.kms.aws.session.token"] == ENV["AWS_SESSION_TOKEN"]
    for text in (repr(conf), str(conf), repr(policy), repr(policy.write_options())):
        assert all(value not in text for value in ENV.values()), text
    assert "secure_bloom.kms.aws.region" in policy.write_options()


def test_policy_without_credentials_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    policy = EncryptionPolicy(footer_key="alias/f", kms=AwsKmsConfig("us-east-1"))
    with pytest.raises(KeyAccessDeniedError, match="AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        policy.hadoop_conf()
    jvm_env = EncryptionPolicy(footer_key="alias/f", kms=AwsKmsConfig("us-east-1", credentials_env=False)).hadoop_conf()
    assert not any("access" in k or "secret" in k or "token" in k for k in jvm_env)


@pytest.mark.parametrize("key_id", ["arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
                                    "kf", "alias/"])
def test_policy_refuses_ids_parquet_java_cannot_carry(key_id: str) -> None:
    with pytest.raises(ValueError):
        EncryptionPolicy(footer_key="alias/f", kms=AwsKmsConfig("us-east-1"), column_keys={key_id: ["c"]})


@pytest.mark.parametrize("region,endpoint", [("US East", None), ("us-east-1", "kms.example:443")])
def test_policy_refuses_bad_region_or_endpoint(region: str, endpoint: str | None) -> None:
    with pytest.raises(ValueError):
        AwsKmsConfig(region, endpoint=endpoint)


def test_cli_key_sources_for_aws() -> None:
    access = key_access_from_sources(kms="aws", kms_region="eu-central-1", kms_endpoint="http://127.0.0.1:9",
                                     environ={})
    assert isinstance(access.kms, AwsKms) and access.kms.region == "eu-central-1"
    assert access.kms.endpoint_url == "http://127.0.0.1:9"
    assert KmsService("aws") is KmsService.AWS
    with pytest.raises(ConfigurationError, match="--kms aws"):
        key_access_from_sources(kms_region="eu-central-1", environ={})
    with pytest.raises(ConfigurationError, match="--kms-endpoint"):
        key_access_from_sources(kms="aws", kms_region="eu-central-1", kms_url="http://127.0.0.1:8200", environ={})
    with pytest.raises(ConfigurationError, match="not both"):
        key_access_from_sources(kms="aws", kms_region="eu-central-1", key_list="k:AAAAAAAAAAAAAAAAAAAAAA==",
                                environ={})
    with pytest.raises(ConfigurationError, match="--kms must be one of"):
        key_access_from_sources(kms="gcp", environ={})


def test_no_region_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path) + "/none")
    with pytest.raises(ConfigurationError, match="--kms-region"):
        AwsKms()


def test_encryption_context_names_the_master_key_id_and_purpose() -> None:
    assert encryption_context("alias/pii") == {"secure_bloom:master_key_id": "alias/pii",
                                               "secure_bloom:purpose": "parquet-key-wrap"}


def test_worker_keys_for_aws_build_an_aws_kms() -> None:
    import pickle

    from secure_bloom.spark.dataset import WorkerKeys

    spec = WorkerKeys(aws_region="eu-west-1", aws_endpoint="http://127.0.0.1:9")
    assert repr(spec) == "WorkerKeys(aws_region='eu-west-1', aws_endpoint='http://127.0.0.1:9')"
    access = pickle.loads(pickle.dumps(spec)).key_access()
    assert isinstance(access.kms, AwsKms) and access.kms.endpoint_url == "http://127.0.0.1:9"
    assert spec.key_access() is spec.key_access()  # one KeyAccess (one KEK cache) per worker process
