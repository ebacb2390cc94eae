"""AwsKms against a real KMS API server (moto's server mode on 127.0.0.1; support/aws_kms_server.py):
wrap and unwrap under key ids, ARNs and aliases; the encryption context binding a wrapped key to
its master key id; disabled and deleted keys, refusals, throttling and a server that never
answers; then the whole library: pyarrow's CryptoFactory, write_table / read_table / attach /
audit, the CLI, master key rotation, and the KMS requests the KEK cache saves.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from support.aws_kms_server import ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, AwsKmsService
from support.kms_support import call_outcome

from secure_bloom.errors import (AuthenticationError, ConfigurationError, KeyAccessDeniedError, KeyDisabledError,
                                 KeyNotFoundError, KmsUnavailableError, MalformedKeyMaterialError)
from secure_bloom.kms import AwsKms, FileKeyWrapper, KeyUnwrapper, pyarrow_kms_client_factory
from secure_bloom.kms.aws import encryption_context

pytestmark = pytest.mark.aws_kms
pytest_plugins = ["pytester"]

KEY = bytes(range(16))
SECRETS = (SECRET_KEY, SESSION_TOKEN)


def _no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


@pytest.fixture
def keys(aws_kms: AwsKmsService) -> dict[str, str]:
    """Two fresh keys with aliases: {"footer": alias, "pii": alias, "footer_id": id, "pii_arn": arn}."""
    footer_alias, pii_alias = aws_kms.unique_alias("footer"), aws_kms.unique_alias("pii")
    footer_id, _ = aws_kms.create_key(footer_alias)
    pii_id, pii_arn = aws_kms.create_key(pii_alias)
    return {"footer": f"alias/{footer_alias}", "pii": f"alias/{pii_alias}", "footer_id": footer_id,
            "pii_id": pii_id, "pii_arn": pii_arn}


def test_wrap_and_unwrap_under_key_id_arn_and_alias(aws_kms: AwsKmsService, keys: dict[str, str]) -> None:
    kms = aws_kms.kms()
    aws_kms.reset()
    for master in (keys["pii_id"], keys["pii_arn"], keys["pii"]):
        wrapped = kms.wrap_key(KEY, master)
        assert base64.b64decode(wrapped) and KEY not in base64.b64decode(wrapped)
        assert kms.unwrap_key(wrapped, master) == KEY
    assert aws_kms.counts() == {"Encrypt": 3, "Decrypt": 3}
    _no_secret(repr(kms))
    assert repr(kms) == f"AwsKms(region='us-east-1', endpoint_url='{aws_kms.endpoint}')"


def test_a_wrapped_key_moved_to_another_master_key_id_does_not_unwrap(aws_kms: AwsKmsService,
                                                                       keys: dict[str, str]) -> None:
    """The encryption context names the master key id: the same KMS key under another name (its
    key id, its ARN, a second alias) refuses it as it refuses a tampered one, and so does
    another key."""
    kms = aws_kms.kms()
    second_alias = f"alias/{aws_kms.unique_alias('second')}"
    aws_kms.admin().create_alias(AliasName=second_alias, TargetKeyId=keys["pii_id"])
    wrapped = kms.wrap_key(KEY, keys["pii"])
    for other in (keys["pii_id"], keys["pii_arn"], second_alias, keys["footer"]):
        with pytest.raises(AuthenticationError, match="does not authenticate"):
            kms.unwrap_key(wrapped, other)
    blob = bytearray(base64.b64decode(wrapped))
    blob[-1] ^= 1
    with pytest.raises(AuthenticationError):
        kms.unwrap_key(base64.b64encode(bytes(blob)).decode(), keys["pii"])
    with pytest.raises(MalformedKeyMaterialError, match="not Base64"):
        kms.unwrap_key("not base64!", keys["pii"])
    # A ciphertext of another key made with this key id's context is refused by the KeyId check:
    # moto answers AccessDeniedException (AWS: IncorrectKeyException, an AuthenticationError).
    forged = aws_kms.admin().encrypt(KeyId=keys["footer_id"], Plaintext=KEY,
                                     EncryptionContext=encryption_context(keys["pii_id"]))["CiphertextBlob"]
    with pytest.raises(KeyAccessDeniedError, match="access denied .AccessDeniedException"):
        kms.unwrap_key(base64.b64encode(forged).decode(), keys["pii_id"])


def test_unknown_disabled_and_deleted_keys_are_named_errors(aws_kms: AwsKmsService, keys: dict[str, str]) -> None:
    kms = aws_kms.kms()
    with pytest.raises(KeyNotFoundError, match="not found"):
        kms.wrap_key(KEY, "alias/no-such-key")
    wrapped = kms.wrap_key(KEY, keys["pii"])
    aws_kms.disable(keys["pii_id"])
    try:
        for call in (lambda: kms.wrap_key(KEY, keys["pii"]), lambda: kms.unwrap_key(wrapped, keys["pii"])):
            with pytest.raises(KeyDisabledError, match="disabled or pending deletion") as raised:
                call()
            assert "DisabledException" in str(raised.value)
    finally:
        aws_kms.enable(keys["pii_id"])
    assert kms.unwrap_key(wrapped, keys["pii"]) == KEY
    aws_kms.schedule_deletion(keys["pii_id"])
    with pytest.raises(KeyDisabledError, match="KMSInvalidStateException"):
        kms.unwrap_key(wrapped, keys["pii"])


def test_no_credentials_is_access_denied(aws_kms: AwsKmsService, keys: dict[str, str], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    kms = AwsKms("us-east-1", endpoint_url=aws_kms.endpoint)
    with pytest.raises(KeyAccessDeniedError, match="no AWS credentials"):
        kms.wrap_key(KEY, keys["pii"])
    with pytest.raises(ConfigurationError, match="region"):
        monkeypatch.delenv("AWS_REGION", raising=False)
        monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
        AwsKms(endpoint_url=aws_kms.endpoint)


def test_throttling_is_retried_then_unavailable(aws_kms: AwsKmsService, keys: dict[str, str]) -> None:
    kms = aws_kms.kms(retries=3, backoff_s=0.01)
    aws_kms.reset()
    aws_kms.throttle_next(2)
    wrapped = kms.wrap_key(KEY, keys["pii"])
    assert aws_kms.counts() == {"Encrypt": 3}
    aws_kms.reset()
    aws_kms.throttle_next(10)
    try:
        with pytest.raises(KmsUnavailableError, match="after 4 attempts: ThrottlingException"):
            kms.unwrap_key(wrapped, keys["pii"])
    finally:
        aws_kms.throttle_next(0)
    assert aws_kms.counts() == {"Decrypt": 4}


def test_a_server_that_never_answers_fails_within_the_deadline(blackhole: Any) -> None:
    import boto3

    session = boto3.session.Session(aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                                    region_name="us-east-1")
    kms = AwsKms("us-east-1", endpoint_url=f"http://{blackhole.endpoint}", session=session, read_timeout=0.5,
                 deadline_s=2.0, backoff_s=0.01)
    started = time.monotonic()
    error = call_outcome(lambda: kms.wrap_key(KEY, "alias/any"))
    elapsed = time.monotonic() - started
    assert isinstance(error, KmsUnavailableError), error
    assert "read timeout" in str(error) and blackhole.connections() >= 1
    assert elapsed < kms.deadline_s + 1.0, elapsed  # the deadline bounds the call, retries included


def test_kek_cache_keeps_kms_requests_per_file_constant(aws_kms: AwsKmsService, keys: dict[str, str]) -> None:
    """Double wrapping: one Encrypt per master key for all files a wrapper writes within the
    KEK lifetime, one Decrypt per KEK for all files an unwrapper reads; single wrapping: one call
    per data key."""
    kms = aws_kms.kms()
    aws_kms.reset()
    wrapper = FileKeyWrapper(kms)
    metadata = [(wrapper.footer_key(keys["footer"]), wrapper.column_key(keys["pii"])) for _ in range(20)]
    assert aws_kms.counts() == {"Encrypt": 2}
    aws_kms.reset()
    unwrapper = KeyUnwrapper(kms)
    for footer, column in metadata:
        assert unwrapper.unwrap(footer.key_metadata) == footer.key
        assert unwrapper.unwrap(column.key_metadata) == column.key
    assert aws_kms.counts() == {"Decrypt": 2}
    aws_kms.reset()
    single = FileKeyWrapper(kms, double_wrapping=False)
    for _ in range(5):
        single.footer_key(keys["footer"])
    assert aws_kms.counts() == {"Encrypt": 5}


def _config(keys: dict[str, str], **kwargs: Any) -> pe.EncryptionConfiguration:
    return pe.EncryptionConfiguration(footer_key=keys["footer"], column_keys={keys["pii"]: ["email"]}, **kwargs)


def _table(rows: int = 3000) -> pa.Table:
    return pa.table({"email": [f"person{i:05d}@example.com" for i in range(rows)],
                     "n": pa.array(range(rows), pa.int64())})


def test_pyarrow_write_table_read_table_attach_and_audit(aws_kms: AwsKmsService, keys: dict[str, str],
                                                         tmp_path: Path) -> None:
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters, read_table, write_table
    from secure_bloom.parquet.audit.auditor import audit

    kms = aws_kms.kms()
    table = _table()
    # pyarrow's own writer, keys wrapped by AWS KMS through our factory
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
    src = tmp_path / "pyarrow.parquet"
    pq.write_table(table, src, row_group_size=1000,
                   encryption_properties=factory.file_encryption_properties(pe.KmsConnectionConfig(), _config(keys)))
    access = KeyAccess(kms=kms)
    attached = tmp_path / "attached.parquet"
    attach_bloom_filters(src, attached, ["email"], keys=access)
    written = tmp_path / "written.parquet"
    report = write_table(table, written, encryption=_config(keys), kms=kms, bloom_filter_options={"email": True},
                         row_group_size=1000)
    assert [(f.row_group, f.encrypted) for f in report.filters] == [(g, True) for g in range(3)]
    for path in (attached, written):
        with ParquetBloomReader(path, keys=access) as reader:
            assert reader.row_groups_maybe_containing("email", "person01500@example.com") == [1]
            assert reader.row_groups_maybe_containing("email", "nobody@example.com") == []
        pruned = read_table(path, filters=[("email", "=", "person02999@example.com")], keys=access)
        assert pruned.to_pylist() == [{"email": "person02999@example.com", "n": 2999}]
        assert read_table(path, keys=access).equals(table)
        assert audit([str(path)], ["email"], keys=access).is_compliant
    # pyarrow reads what secure_bloom wrote, with our client in its factory
    props = factory.file_decryption_properties(pe.KmsConnectionConfig())
    assert pq.read_table(written, decryption_properties=props).equals(table)


def test_write_with_a_disabled_key_leaves_nothing_and_reads_fail_named(aws_kms: AwsKmsService, keys: dict[str, str],
                                                                        tmp_path: Path) -> None:
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader, write_table

    kms = aws_kms.kms()
    good = tmp_path / "good.parquet"
    write_table(_table(), good, encryption=_config(keys), kms=kms, bloom_filter_options={"email": True},
                row_group_size=1000)
    aws_kms.disable(keys["pii_id"])
    try:
        target = tmp_path / "out" / "refused.parquet"
        target.parent.mkdir()
        with pytest.raises(KeyDisabledError):
            write_table(_table(), target, encryption=_config(keys), kms=aws_kms.kms(),
                        bloom_filter_options={"email": True}, row_group_size=1000)
        assert list(target.parent.iterdir()) == []
        with pytest.raises(KeyDisabledError):
            with ParquetBloomReader(good, keys=KeyAccess(kms=aws_kms.kms())) as reader:
                reader.bloom_filter(0, "email")
    finally:
        aws_kms.enable(keys["pii_id"])


def test_rotation_rewraps_external_key_material_under_the_aliased_new_key(aws_kms: AwsKmsService, tmp_path: Path) -> None:
    """Rotation by alias: point the alias at a new key, re-wrap the sidecar (data file untouched),
    disable the old key: the file still reads, through the new key only."""
    from secure_bloom.kms import rewrap_external_key_material, sidecar_path
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader, write_table

    alias = aws_kms.unique_alias("rotating")
    old_id, _ = aws_kms.create_key(alias)
    new_id, new_arn = aws_kms.create_key()
    kms = aws_kms.kms()
    path = tmp_path / "rotated.parquet"
    config = pe.EncryptionConfiguration(footer_key=f"alias/{alias}", column_keys={f"alias/{alias}": ["email"]},
                                        internal_key_material=False)
    write_table(_table(), path, encryption=config, kms=kms, bloom_filter_options={"email": True}, row_group_size=1000)
    data_before = path.read_bytes()
    aws_kms.point_alias(alias, new_id)
    assert rewrap_external_key_material(sidecar_path(path), kms) >= 2
    assert path.read_bytes() == data_before
    aws_kms.disable(old_id)
    try:
        with ParquetBloomReader(path, keys=KeyAccess(kms=aws_kms.kms())) as reader:
            assert reader.row_groups_maybe_containing("email", "person00042@example.com") == [0]
        for material in json.loads(sidecar_path(path).read_text()).values():
            wrapped = json.loads(material)["wrappedKEK"] if "wrappedKEK" in material else json.loads(material)["wrappedDEK"]
            decrypted = aws_kms.admin().decrypt(CiphertextBlob=base64.b64decode(wrapped),
                                                EncryptionContext=encryption_context(f"alias/{alias}"))
            assert decrypted["KeyId"] == new_arn
    finally:
        aws_kms.enable(old_id)


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "secure_bloom.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def test_cli_audit_probe_and_encrypt_with_kms_aws(aws_kms: AwsKmsService, keys: dict[str, str], tmp_path: Path) -> None:
    from secure_bloom.parquet import write_table

    path = tmp_path / "cli.parquet"
    write_table(_table(), path, encryption=_config(keys), kms=aws_kms.kms(), bloom_filter_options={"email": True},
                row_group_size=1000)
    env = {**os.environ, **aws_kms.hadoop_credentials()}
    env.pop("AWS_REGION", None)
    kms_args = ["--kms", "aws", "--kms-region", aws_kms.region, "--kms-endpoint", aws_kms.endpoint]
    done = _cli(["audit", str(path), "--sensitive", "email", "--json", *kms_args], env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["compliant"] is True
    probed = _cli(["probe", str(path), "--column", "email", "--value", "person01500@example.com", "--json",
                   *kms_args], env)
    assert probed.returncode == 0, probed.stderr
    encrypted = tmp_path / "reencrypted.parquet"
    again = _cli(["encrypt", str(path), str(encrypted), "--footer-key", keys["footer"], "--column-key",
                  f"{keys['pii']}:email", "--bloom", "email", *kms_args], env)
    assert again.returncode == 0, again.stderr
    assert encrypted.is_file()
    aws_kms.disable(keys["footer_id"])
    try:
        refused = _cli(["audit", str(path), "--sensitive", "email", "--json", *kms_args], env)
        probe_refused = _cli(["probe", str(path), "--column", "email", "--value", "x", "--json", *kms_args], env)
    finally:
        aws_kms.enable(keys["footer_id"])
    assert refused.returncode == 2, refused.stderr  # audit: the file could not be checked
    assert "KEY_DISABLED" in refused.stdout
    assert probe_refused.returncode == 3, probe_refused.stderr  # a KMS failure, not the caller's to fix
    assert "is disabled or pending deletion" in probe_refused.stderr
    usage = _cli(["audit", str(path), "--sensitive", "email", "--kms-region", "us-east-1"], env)
    assert usage.returncode == 2 and "--kms aws" in usage.stderr
    for out in (done, probed, again, refused, probe_refused, usage):
        _no_secret(out.stdout + out.stderr)


def test_debug_logs_carry_no_key_or_credential(aws_kms: AwsKmsService, keys: dict[str, str],
                                               caplog: pytest.LogCaptureFixture) -> None:
    """botocore's DEBUG records of a request show its parameters (the key, Base64), headers
    (the session token), canonical request and response body (the key again): none of them is
    emitted during an AwsKms call, and the key's every form stays out of the logs."""
    kms = aws_kms.kms(retries=1, backoff_s=0.01)
    key = os.urandom(16)
    forms = {key.hex(), base64.b64encode(key).decode(), base64.b64encode(key).decode().rstrip("=")}
    with caplog.at_level(logging.DEBUG):
        aws_kms.throttle_next(1)  # a retry's records too
        wrapped = kms.wrap_key(key, keys["pii"])
        assert kms.unwrap_key(wrapped, keys["pii"]) == key
    text = caplog.text + "".join(str(r.args) for r in caplog.records)
    assert "retry 1 of 1" in text  # our own records are kept
    for secret in (*forms, *SECRETS):
        assert secret not in text

def test_pytest_plugin_audits_with_aws_kms(pytester: pytest.Pytester, aws_kms: AwsKmsService, keys: dict[str, str],
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from secure_bloom.parquet import write_table

    for name, value in aws_kms.hadoop_credentials().items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "lake" / "part-0.parquet"
    path.parent.mkdir()
    write_table(_table(), path, encryption=_config(keys), kms=aws_kms.kms(), bloom_filter_options={"email": True},
                row_group_size=1000)
    result = pytester.runpytest("-p", "secure_bloom.pytest_plugin", "--secure-bloom-audit", str(path.parent),
                                "--secure-bloom-sensitive", "email", "--secure-bloom-kms", "aws",
                                "--secure-bloom-kms-region", aws_kms.region, "--secure-bloom-kms-endpoint",
                                aws_kms.endpoint, "-v")
    result.assert_outcomes(passed=2)  # the file, the policy coverage
    result.stdout.fnmatch_lines([f"*secure_bloom_audit[[]{path}[]] PASSED*"])
    _no_secret(str(result.stdout) + str(result.stderr))
