"""OpenBaoTransitKms against a real OpenBao dev server (SPEC_NOTES 9): wrap/unwrap, rotation and
re-wrapping, permissions, unknown keys, and a KMS that is down, hung or sealed."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

from secure_bloom.errors import (AuthenticationError, KeyAccessDeniedError, KeyNotFoundError,
                                 KmsUnavailableError, MalformedKeyMaterialError)
from secure_bloom.kms import (KeyUnwrapper, FileKeyWrapper, KeyMaterialStore, OpenBaoTransitKms,
                              pyarrow_kms_client_factory, rewrap_external_key_material, sidecar_path)

from support.kms_support import CountingKms, SettableClock, call_outcome, decrypt_footer, footer_key_metadata
from support.openbao_server import OpenBaoServer

pytestmark = pytest.mark.kms

KEY = bytes(range(16))
# A liveness bound, not a performance assertion: far above the worst case the client promises.


def _kms(server: OpenBaoServer, **kwargs: Any) -> OpenBaoTransitKms:
    return OpenBaoTransitKms(server.url, server.token, **kwargs)


@pytest.fixture(scope="module")
def master_keys(openbao: OpenBaoServer) -> OpenBaoServer:  # noqa: F811
    kms = _kms(openbao)
    for name in ("footer_key", "pii_key", "finance_key", "rotating"):
        kms.create_key(name)
    kms.create_key("footer_key")  # exists: no-op
    return openbao


# --- the happy path ----------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [16, 24, 32], ids=["aes128", "aes192", "aes256"])
def test_wrap_unwrap(master_keys: OpenBaoServer, length: int) -> None:
    kms = _kms(master_keys)
    key = bytes(range(length))
    wrapped = kms.wrap_key(key, "pii_key")
    assert wrapped.startswith("vault:v1:")
    assert kms.unwrap_key(wrapped, "pii_key") == key
    with pytest.raises(AuthenticationError, match="'finance_key'"):
        kms.unwrap_key(wrapped, "finance_key")


def test_proxy_and_ca_environment_read_when_the_client_is_made(master_keys: OpenBaoServer,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The client reads the proxy and CA bundle variables once, when it makes its session (not on
    every request, as requests would): a proxy set then is used, NO_PROXY is honoured, and
    REQUESTS_CA_BUNDLE is the bundle verify=True means."""
    from secure_bloom.kms._openbao_http import new_client

    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    wrapped = _kms(master_keys).wrap_key(KEY, "pii_key")
    dead = "http://127.0.0.1:9"  # the discard port: nothing answers there
    monkeypatch.setenv("HTTP_PROXY", dead)
    through_proxy = _kms(master_keys, retries=0, deadline_s=5)
    with pytest.raises(KmsUnavailableError):
        through_proxy.unwrap_key(wrapped, "pii_key")  # the proxy of the environment is used
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert _kms(master_keys).unwrap_key(wrapped, "pii_key") == KEY  # NO_PROXY bypasses it
    monkeypatch.delenv("NO_PROXY")
    monkeypatch.delenv("HTTP_PROXY")
    assert _kms(master_keys).unwrap_key(wrapped, "pii_key") == KEY
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/tmp/example-bundle.pem")
    client = new_client("https://kms.example:8200", "token-not-real", (1.0, 1.0), True)
    assert client.adapter._kwargs["verify"] == "/tmp/example-bundle.pem"
    assert new_client("https://kms.example:8200", "token-not-real", (1.0, 1.0), False).adapter._kwargs["verify"] is False
    # a CA bundle given is the one used (hvac sends the session's verify: it was always True)
    given = new_client("https://kms.example:8200", "token-not-real", (1.0, 1.0), "/tmp/private-ca.pem")
    assert given.adapter._kwargs["verify"] == "/tmp/private-ca.pem"


def test_token_from_environment(master_keys: OpenBaoServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VAULT_TOKEN", raising=False)
    monkeypatch.setenv("BAO_TOKEN", master_keys.token)
    kms = OpenBaoTransitKms(master_keys.url)
    assert kms.unwrap_key(kms.wrap_key(KEY, "pii_key"), "pii_key") == KEY
    monkeypatch.delenv("BAO_TOKEN")
    with pytest.raises(KeyAccessDeniedError, match="VAULT_TOKEN or BAO_TOKEN"):
        OpenBaoTransitKms(master_keys.url)


def test_rotation_old_wraps_still_unwrap_new_wraps_use_v2(master_keys: OpenBaoServer) -> None:
    kms = _kms(master_keys)
    old = kms.wrap_key(KEY, "rotating")
    assert old.startswith("vault:v1:") and kms.latest_version("rotating") == 1
    assert kms.rotate_key("rotating") == 2
    new = kms.wrap_key(KEY, "rotating")
    assert new.startswith("vault:v2:")
    assert kms.unwrap_key(old, "rotating") == kms.unwrap_key(new, "rotating") == KEY


def test_pyarrow_external_material_rotation_rewrap(master_keys: OpenBaoServer, tmp_path: Path) -> None:
    """pyarrow writes through OpenBao; the master keys rotate; we re-wrap the sidecar with v2;
    the data file is untouched and pyarrow and we still read it."""
    kms = _kms(master_keys)
    for name in ("rot_footer", "rot_col"):
        kms.create_key(name)
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    path = tmp_path / "t.parquet"
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
    config = pe.EncryptionConfiguration(footer_key="rot_footer", column_keys={"rot_col": ["b"]},
                                        internal_key_material=False)
    pq.write_table(table, path, encryption_properties=factory.file_encryption_properties(
        pe.KmsConnectionConfig(), config, parquet_file_path=str(path)))
    data = path.read_bytes()
    before = KeyMaterialStore.load(sidecar_path(path))
    assert all((m.wrapped_kek or "").startswith("vault:v1:") for _, m in before.items())
    for name in ("rot_footer", "rot_col"):
        kms.rotate_key(name)
    assert rewrap_external_key_material(sidecar_path(path), kms) == 2
    after = KeyMaterialStore.load(sidecar_path(path))
    assert all((m.wrapped_kek or "").startswith("vault:v2:") for _, m in after.items())
    assert path.read_bytes() == data
    decryption = factory.file_decryption_properties(pe.KmsConnectionConfig(), parquet_file_path=str(path))
    assert pq.read_table(path, decryption_properties=decryption).equals(table)
    retriever = KeyUnwrapper(kms).for_file(path)
    footer = decrypt_footer(data, retriever(footer_key_metadata(data)))
    (column_md,) = footer.column_key_metadata().values()
    assert footer.column_metadata("b", retriever(column_md)).path_in_schema == ["b"]


def test_unwrapper_calls_openbao_once_for_1000_files(master_keys: OpenBaoServer) -> None:
    kms = CountingKms(_kms(master_keys))
    wrapper = FileKeyWrapper(kms)
    files = [wrapper.column_key("finance_key") for _ in range(1000)]  # 1000 files' key_metadata
    assert kms.wraps == 1
    clock = SettableClock()
    unwrapper = KeyUnwrapper(kms, _clock=clock)
    assert all(unwrapper.for_file()(f.key_metadata) == f.key for f in files)
    assert kms.unwraps == 1
    clock.now += 600  # the KEK's cache lifetime is over
    assert unwrapper.unwrap(files[0].key_metadata) == files[0].key
    assert kms.unwraps == 2


# --- refusals --------------------------------------------------------------------------------------------


def test_wrong_token_is_access_denied(master_keys: OpenBaoServer) -> None:
    good = _kms(master_keys).wrap_key(KEY, "pii_key")
    bad = OpenBaoTransitKms(master_keys.url, "not-the-token-f00d")
    with pytest.raises(KeyAccessDeniedError, match="'pii_key'") as info:
        bad.unwrap_key(good, "pii_key")
    assert "f00d" not in str(info.value)
    with pytest.raises(KeyAccessDeniedError):
        bad.wrap_key(KEY, "pii_key")


def test_least_privilege_token(master_keys: OpenBaoServer) -> None:
    """A token allowed only encrypt/decrypt on pii_key: wrapping works without reading key
    metadata; other keys are refused."""
    master_keys.put_policy("pii-only", 'path "transit/encrypt/pii_key" { capabilities = ["update"] }\n'
                                       'path "transit/decrypt/pii_key" { capabilities = ["update"] }')
    kms = OpenBaoTransitKms(master_keys.url, master_keys.create_token(["pii-only"]))
    assert kms.unwrap_key(kms.wrap_key(KEY, "pii_key"), "pii_key") == KEY
    with pytest.raises(KeyAccessDeniedError, match="'finance_key'"):
        kms.wrap_key(KEY, "finance_key")
    with pytest.raises(KeyAccessDeniedError, match="'no_such_key'"):
        kms.wrap_key(KEY, "no_such_key")


def test_unknown_key_is_not_created(master_keys: OpenBaoServer) -> None:
    kms = _kms(master_keys)
    with pytest.raises(KeyNotFoundError, match="'typo_key'"):
        kms.wrap_key(KEY, "typo_key")
    status, _ = master_keys.request("GET", "transit/keys/typo_key")
    assert status == 404  # transit would have created it on encrypt
    wrapped = kms.wrap_key(KEY, "pii_key")
    with pytest.raises(KeyNotFoundError, match="'typo_key'"):
        kms.unwrap_key(wrapped, "typo_key")
    with pytest.raises(KeyNotFoundError, match="'typo_key'"):
        kms.rotate_key("typo_key")


@pytest.mark.parametrize("name", ["../sys/seal", "a/b", "", "key with space"])
def test_invalid_key_names_never_reach_the_url(master_keys: OpenBaoServer, name: str) -> None:
    with pytest.raises(KeyNotFoundError, match="not a valid transit key name"):
        _kms(master_keys).wrap_key(KEY, name)


def test_bad_wrapped_keys(master_keys: OpenBaoServer) -> None:
    kms = _kms(master_keys)
    wrapped = kms.wrap_key(KEY, "pii_key")
    tampered = wrapped[:-6] + ("AAAA==" if not wrapped.endswith("AAAA==") else "BBBB==")
    with pytest.raises(AuthenticationError, match="'pii_key'"):
        kms.unwrap_key(tampered, "pii_key")
    with pytest.raises(MalformedKeyMaterialError, match="no prefix"):
        kms.unwrap_key("garbage", "pii_key")


# --- a KMS that is down, hung or sealed ---------------------------------------------------------------------


def test_server_stopped_mid_run(openbao_fresh: OpenBaoServer, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    kms = _kms(openbao_fresh, retries=2, backoff_s=0.05)
    kms.create_key("k")
    wrapped = kms.wrap_key(KEY, "k")
    openbao_fresh.stop()
    caplog.set_level(logging.WARNING, logger="secure_bloom.kms.openbao")
    error = call_outcome(lambda: kms.unwrap_key(wrapped, "k"))
    assert isinstance(error, KmsUnavailableError) and "after 3 attempts" in str(error)
    assert len([r for r in caplog.records if "retry" in r.getMessage()]) == 2


def test_hung_server_times_out(openbao_fresh: OpenBaoServer) -> None:  # noqa: F811
    kms = _kms(openbao_fresh, timeout=(1.0, 1.0), retries=3)
    kms.create_key("k")
    wrapped = kms.wrap_key(KEY, "k")
    openbao_fresh.pause()  # accepts connections (kernel backlog), never answers
    try:
        error = call_outcome(lambda: kms.unwrap_key(wrapped, "k"))
    finally:
        openbao_fresh.resume()
    assert isinstance(error, KmsUnavailableError) and "read timeout" in str(error)
    # The same client recovers once the server answers again. A just-resumed server may first work
    # through its backlog, slower than the 1 s read timeout on a loaded machine: poll, bounded.
    deadline = time.monotonic() + 30
    while True:
        try:
            assert kms.unwrap_key(wrapped, "k") == KEY
            break
        except KmsUnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_sealed_server_503_is_retried_then_unavailable(openbao_fresh: OpenBaoServer,  # noqa: F811
                                                       caplog: pytest.LogCaptureFixture) -> None:
    kms = _kms(openbao_fresh, retries=2, backoff_s=0.05)
    kms.create_key("k")
    wrapped = kms.wrap_key(KEY, "k")
    status, _ = openbao_fresh.request("PUT", "sys/seal")
    assert status == 204
    caplog.set_level(logging.WARNING, logger="secure_bloom.kms.openbao")
    error = call_outcome(lambda: kms.unwrap_key(wrapped, "k"))
    assert isinstance(error, KmsUnavailableError) and "VaultDown" in str(error)
    assert len([r for r in caplog.records if "retry" in r.getMessage()]) == 2
