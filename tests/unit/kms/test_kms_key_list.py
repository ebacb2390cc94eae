"""KeyListKms, local AES-GCM wrapping and explicit keys (SPEC_NOTES 7)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from secure_bloom.errors import (AuthenticationError, KeyNotFoundError, MalformedKeyMaterialError,
                                 MissingKeyError)
from secure_bloom.kms import ExplicitKeys, KeyListKms, KeyMaterialStore, parse_key_spec
from secure_bloom.kms.local_wrap import unwrap_locally, wrap_locally

from support.kms_support import DEV_KEY_LIST, EXTERNAL_JAVA_SIDECAR, PARQUET_TESTING_KEYS, key_list_text

K16 = bytes(range(16))


def test_known_answer_parquet_java_wraps_reproduce_byte_for_byte() -> None:
    """Unwrap parquet-java's KEK (under kc1, AAD "kc1") and DEK (under the KEK, AAD = raw KEK id),
    then wrap both again with the nonces from the file: the exact strings come back."""
    material = KeyMaterialStore.load(EXTERNAL_JAVA_SIDECAR).get("columnKey0")
    assert material.wrapped_kek is not None and material.kek_id is not None
    kek = unwrap_locally(material.wrapped_kek, PARQUET_TESTING_KEYS["kc1"], b"kc1", wrapped_under="kc1")
    kek_id = base64.b64decode(material.kek_id)
    dek = unwrap_locally(material.wrapped_dek, kek, kek_id, wrapped_under="KEK")
    assert (len(kek), len(kek_id), len(dek)) == (16, 16, 16)
    nonce_kek = base64.b64decode(material.wrapped_kek)[:12]
    nonce_dek = base64.b64decode(material.wrapped_dek)[:12]
    assert wrap_locally(kek, PARQUET_TESTING_KEYS["kc1"], b"kc1", _nonce=nonce_kek) == material.wrapped_kek
    assert wrap_locally(dek, kek, kek_id, _nonce=nonce_dek) == material.wrapped_dek


def test_key_list_kms_unwraps_parquet_java_kek() -> None:
    kms = KeyListKms(key_list_text(PARQUET_TESTING_KEYS))
    store = KeyMaterialStore.load(EXTERNAL_JAVA_SIDECAR)
    for reference in store.references():
        material = store.get(reference)
        assert material.wrapped_kek is not None
        assert len(kms.unwrap_key(material.wrapped_kek, material.master_key_id)) == 16


@pytest.mark.parametrize("length", [16, 24, 32], ids=["aes128", "aes192", "aes256"])
def test_wrap_unwrap_round_trip(length: int) -> None:
    kms = KeyListKms({"m": bytes(32), "n": bytes(16)})
    key = bytes(range(length))
    wrapped = kms.wrap_key(key, "m")
    blob = base64.b64decode(wrapped)
    assert len(blob) == 12 + length + 16  # nonce | ciphertext | tag, no length prefix
    assert kms.unwrap_key(wrapped, "m") == key
    assert wrapped != kms.wrap_key(key, "m")  # fresh nonce


def test_aad_is_master_key_id() -> None:
    """Same key bytes under two ids: the AAD (the id) makes the wrap fail under the other id."""
    kms = KeyListKms({"a": K16, "b": K16})
    with pytest.raises(AuthenticationError, match="master key 'b'"):
        kms.unwrap_key(kms.wrap_key(K16, "a"), "b")


def test_tampered_wrap_fails_authentication() -> None:
    kms = KeyListKms({"a": K16})
    blob = bytearray(base64.b64decode(kms.wrap_key(K16, "a")))
    blob[20] ^= 1
    with pytest.raises(AuthenticationError, match="master key 'a'"):
        kms.unwrap_key(base64.b64encode(bytes(blob)).decode(), "a")


def test_unknown_master_key_names_it() -> None:
    kms = KeyListKms({"a": K16})
    with pytest.raises(KeyNotFoundError, match="'nope'"):
        kms.wrap_key(K16, "nope")
    with pytest.raises(KeyNotFoundError, match="'nope'"):
        kms.unwrap_key("AAAA", "nope")


def test_key_list_syntax_variants() -> None:
    b64 = base64.b64encode(K16).decode()
    spaced = KeyListKms(f"  a : {b64} ,b:{b64.rstrip('=')}\n# comment line\n\nc:{b64}, ")
    assert spaced.master_key_ids == ("a", "b", "c")
    assert KeyListKms(key_list_text(PARQUET_TESTING_KEYS)).master_key_ids == ("kf", "kc1", "kc2")


@pytest.mark.parametrize("text,message", [
    ("", "no entries"),
    ("a-without-colon", "entry 1 is not 'id:base64key'"),
    ("a:AAAA:BBBB", "entry 1 is not"),
    (":AAAAAAAAAAAAAAAAAAAAAA==", "empty master key id"),
    ("a:!!!notbase64!!!", "not valid Base64"),
    ("a:AAAA", "3 bytes"),
    (f"a:{base64.b64encode(K16).decode()}, a:{base64.b64encode(K16).decode()}", "appears twice"),
], ids=["empty", "no-colon", "two-colons", "empty-id", "bad-base64", "bad-length", "duplicate"])
def test_malformed_key_list(text: str, message: str) -> None:
    with pytest.raises(MalformedKeyMaterialError, match=message) as info:
        KeyListKms(text)
    for part in text.replace(",", ":").split(":")[1:]:
        if len(part.strip()) > 3:
            assert part.strip() not in str(info.value)


def test_dev_key_list_file() -> None:
    kms = KeyListKms.from_file(DEV_KEY_LIST)
    assert set(kms.master_key_ids) >= {"footer_key", "pii_key", "finance_key"}
    assert kms.unwrap_key(kms.wrap_key(K16, "pii_key"), "pii_key") == K16
    readme = (DEV_KEY_LIST.parent / "README.md").read_text()
    assert "DEVELOPMENT AND TEST KEYS ONLY, NEVER FOR PRODUCTION" in readme.splitlines()[0]


def test_key_list_from_file_missing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        KeyListKms.from_file(tmp_path / "none.txt")


# --- explicit keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec,key_id,key", [
    ("kf=text:0123456789012345", "kf", b"0123456789012345"),
    ("kc1=hex:" + K16.hex(), "kc1", K16),
    ("k=base64:" + base64.b64encode(bytes(32)).decode(), "k", bytes(32)),
    (" k = base64:" + base64.b64encode(bytes(24)).decode().rstrip("="), "k", bytes(24)),
], ids=["text", "hex", "base64-256", "base64-192-unpadded-spaces"])
def test_parse_key_spec(spec: str, key_id: str, key: bytes) -> None:
    assert parse_key_spec(spec) == (key_id, key)


@pytest.mark.parametrize("spec,message", [
    ("noequals", "ID=base64"),
    ("=text:0123456789012345", "ID=base64"),
    ("k=raw:0123456789012345", "ID=base64:..., ID=hex:... or ID=text:"),
    ("k=hex:zz", "not valid hex"),
    ("k=base64:@@@@", "not valid Base64"),
    ("k=text:short-secret", "12 bytes"),
], ids=["no-equals", "no-id", "unknown-encoding", "bad-hex", "bad-base64", "bad-length"])
def test_parse_key_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(MalformedKeyMaterialError, match=message) as info:
        parse_key_spec(spec)
    assert "short-secret" not in str(info.value) and "@@@@" not in str(info.value)


def test_explicit_keys_resolve_ids() -> None:
    keys = ExplicitKeys.from_specs(f"{i}=text:{k.decode()}" for i, k in PARQUET_TESTING_KEYS.items())
    assert keys.key_for(b"kc2") == PARQUET_TESTING_KEYS["kc2"]
    assert "kf" in keys and keys.key_ids == ("kf", "kc1", "kc2")
    with pytest.raises(MissingKeyError, match="'kc9'"):
        keys.key_for(b"kc9")
    with pytest.raises(MissingKeyError):
        keys.key_for(b"\xff\xfe")
    with pytest.raises(MalformedKeyMaterialError, match="given twice"):
        ExplicitKeys.from_specs(["a=text:0123456789012345", "a=text:0123456789012345"])
    with pytest.raises(MalformedKeyMaterialError, match="5 bytes"):
        ExplicitKeys({"a": b"12345"})


def test_undecodable_argv_text_is_malformed_not_a_crash() -> None:
    """Lone surrogates (undecodable bytes from argv, surrogateescape) in a key or an id."""
    with pytest.raises(MalformedKeyMaterialError, match="not valid UTF-8"):
        parse_key_spec("k=text:" + "\udcff" * 16)
    with pytest.raises(MalformedKeyMaterialError, match="entry 1 is not valid UTF-8"):
        KeyListKms("id\udcff:" + base64.b64encode(K16).decode())
