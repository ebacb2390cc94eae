"""EncryptionPolicy -> Hadoop properties for parquet-java (SPEC_NOTES 7); no JVM needed."""

from __future__ import annotations

import base64

import pytest

from secure_bloom.errors import KeyAccessDeniedError, KeyNotFoundError, MalformedKeyMaterialError
from secure_bloom.spark.policy import (
    BloomFilterSpec,
    EncryptionPolicy,
    KeyListKmsConfig,
    TransitKmsConfig,
)

KF = base64.b64encode(b"F" * 16).decode()
KC = base64.b64encode(b"C" * 32).decode()
KEY_LIST = f"kf:{KF}, kc1:{KC}"


def _policy(**kw: object) -> EncryptionPolicy:
    args: dict[str, object] = dict(
        footer_key="kf", kms=KeyListKmsConfig(KEY_LIST),
        column_keys={"kc1": ["ssn", "a.b"], "kf": ["email"]},
        bloom_filters={"ssn": BloomFilterSpec(ndv=5000, fpp=0.001), "a.b": BloomFilterSpec()})
    args.update(kw)
    return EncryptionPolicy(**args)  # type: ignore[arg-type]


def test_hadoop_conf_exact() -> None:
    conf = _policy(plaintext_footer=True, algorithm="AES_GCM_CTR_V1", double_wrapping=False,
                   data_key_length_bits=256, bloom_filter_max_bytes=65536).hadoop_conf()
    assert dict(conf) == {
        "parquet.crypto.factory.class": "org.apache.parquet.crypto.keytools.PropertiesDrivenCryptoFactory",
        "parquet.encryption.kms.client.class": "io.securebloom.KeyListKmsClient",
        "parquet.encryption.key.list": KEY_LIST,
        "parquet.encryption.footer.key": "kf",
        "parquet.encryption.column.keys": "kc1:ssn,a.b;kf:email",
        "parquet.encryption.plaintext.footer": "true",
        "parquet.encryption.algorithm": "AES_GCM_CTR_V1",
        "parquet.encryption.double.wrapping": "false",
        "parquet.encryption.data.key.length.bits": "256",
        "parquet.bloom.filter.enabled#ssn": "true",
        "parquet.bloom.filter.expected.ndv#ssn": "5000",
        "parquet.bloom.filter.fpp#ssn": "0.001",
        "parquet.bloom.filter.enabled#a.b": "true",
        "parquet.bloom.filter.max.bytes": "65536",
    }


def test_defaults_and_uniform_encryption() -> None:
    conf = EncryptionPolicy(footer_key="kf", kms=KeyListKmsConfig(KEY_LIST),
                            bloom_filters=["x"]).hadoop_conf()
    assert conf["parquet.encryption.uniform.key"] == "kf"
    assert "parquet.encryption.footer.key" not in conf
    assert "parquet.encryption.column.keys" not in conf
    assert conf["parquet.encryption.plaintext.footer"] == "false"
    assert conf["parquet.encryption.algorithm"] == "AES_GCM_V1"
    assert conf["parquet.encryption.double.wrapping"] == "true"
    assert conf["parquet.encryption.data.key.length.bits"] == "128"
    assert conf["parquet.bloom.filter.enabled#x"] == "true"


def test_key_list_is_normalised_for_the_jvm() -> None:
    messy = f"# dev keys\nkf : {KF}\n\nkc1:{KC},"
    conf = _policy(kms=KeyListKmsConfig(messy)).hadoop_conf()
    assert conf["parquet.encryption.key.list"] == KEY_LIST


def test_secrets_stay_out_of_repr_and_write_options(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = _policy()
    for text in (repr(policy), str(policy), repr(policy.hadoop_conf()), str(policy.hadoop_conf())):
        assert KF not in text and KC not in text
    assert "kc1" in repr(policy)
    options = policy.write_options()
    assert "parquet.encryption.key.list" not in options
    assert options["parquet.encryption.column.keys"] == "kc1:ssn,a.b;kf:email"

    monkeypatch.setenv("SB_TEST_TOKEN", "s.very-secret-token")
    transit = _policy(kms=TransitKmsConfig("http://127.0.0.1:8200", token_env="SB_TEST_TOKEN",
                                           mount="keys/transit"))
    conf = transit.hadoop_conf()
    assert conf["parquet.encryption.key.access.token"] == "s.very-secret-token"
    assert conf["parquet.encryption.kms.client.class"] == "io.securebloom.VaultTransitKmsClient"
    assert conf["parquet.encryption.kms.instance.url"] == "http://127.0.0.1:8200"
    assert conf["secure_bloom.kms.transit.mount"] == "keys/transit"
    for text in (repr(transit), repr(conf), repr(transit.write_options())):
        assert "very-secret" not in text
    assert "SB_TEST_TOKEN" in repr(transit)


def test_transit_token_env_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SB_TEST_TOKEN", raising=False)
    policy = _policy(kms=TransitKmsConfig("http://127.0.0.1:8200", token_env="SB_TEST_TOKEN"))
    with pytest.raises(KeyAccessDeniedError, match="SB_TEST_TOKEN"):
        policy.hadoop_conf()


@pytest.mark.parametrize("kwargs,error,match", [
    ({"footer_key": "nope"}, KeyNotFoundError, "nope"),
    ({"column_keys": {"missing": ["c"]}}, KeyNotFoundError, "missing"),
    ({"algorithm": "AES_CBC"}, ValueError, "algorithm"),
    ({"data_key_length_bits": 64}, ValueError, "128, 192 or 256"),
    ({"column_keys": {"kf": ["a,b"]}}, ValueError, "column"),
    ({"column_keys": {"kf": ["x"], "kc1": ["x"]}}, ValueError, "two keys"),
    ({"bloom_filters": {"c;d": BloomFilterSpec()}}, ValueError, "column"),
    ({"bloom_filter_max_bytes": 0}, ValueError, "positive"),
])
def test_invalid_policies(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        _policy(**kwargs)


@pytest.mark.parametrize("spec", [{"ndv": 0}, {"fpp": 0.0}, {"fpp": 1.0}])
def test_invalid_bloom_specs(spec: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BloomFilterSpec(**spec)  # type: ignore[arg-type]


def test_bad_key_list_names_no_key_bytes() -> None:
    with pytest.raises(MalformedKeyMaterialError, match="16, 24 or 32") as err:
        KeyListKmsConfig(f"kf:{base64.b64encode(b'short').decode()}")
    assert "c2hvcnQ" not in str(err.value) and "short" not in str(err.value)


def test_policy_is_immutable() -> None:
    policy = _policy()
    with pytest.raises(AttributeError):
        policy.footer_key = "kc1"  # type: ignore[misc]
    with pytest.raises(TypeError):
        policy.column_keys["x"] = ["kf"]  # type: ignore[index]
