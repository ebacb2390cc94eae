"""Canary: a recognisable key and token are pushed through every public object of
secure_bloom.kms and its failure paths; no repr, str, exception (as a traceback shows it) or log
line may contain the key in raw, hex or Base64 form, nor the token."""

from __future__ import annotations

import base64
import logging
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from secure_bloom.errors import SecureBloomError
from secure_bloom.kms import (DataKey, ExplicitKeys, KeyUnwrapper, FileKeyWrapper, KeyListKms,
                              KeyMaterialStore, KeyMetadata, OpenBaoTransitKms, PyArrowKmsClient,
                              parse_key_spec, rewrap_external_key_material, sidecar_path)
from secure_bloom.kms.cache import ExpiringCache
from secure_bloom.kms.local_wrap import unwrap_locally, wrap_locally

from support.openbao_server import OpenBaoServer

CANARY = b"CANARY!k3y#16byt"
CANARY_LONG = CANARY + b"\xca\xfe"  # an invalid (18-byte) key the code must refuse without echoing it
CANARY_TOKEN = "s.CANARYTOKEN0123456789abcdef"


def forms(secret: bytes) -> set[str]:
    """Every way key bytes could be spelled in text."""
    out = {secret.hex(), secret.hex().upper(), base64.b64encode(secret).decode(),
           base64.b64encode(secret).decode().rstrip("="), base64.urlsafe_b64encode(secret).decode(),
           repr(secret)[2:-1]}
    if all(32 <= b < 127 for b in secret):
        out.add(secret.decode("ascii"))
    # a prefix long enough to be unmistakable catches truncated dumps too
    out |= {f[:16] for f in list(out) if len(f) >= 16}
    return out


SECRETS = forms(CANARY) | forms(CANARY_LONG) | {CANARY_TOKEN, CANARY_TOKEN[:16]}


def assert_clean(text: str, extra: Iterable[bytes] = ()) -> None:
    leaked = [f for f in SECRETS.union(*(forms(e) for e in extra)) if f in text]
    if leaked:  # report a count only: the failure message must not print the secret either
        pytest.fail(f"secret material leaked in {len(leaked)} forms", pytrace=False)


def rendered(error: BaseException) -> str:
    """What a user sees: str, repr and the formatted traceback with its context chain."""
    return "\n".join([str(error), repr(error), *traceback.format_exception(error)])


def check_raises(call: Callable[[], object], extra: Iterable[bytes] = ()) -> None:
    with pytest.raises((SecureBloomError, ValueError, TypeError)) as info:
        call()
    assert_clean(rendered(info.value), extra)


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def test_repr_and_str_of_every_public_object(tmp_path: Path) -> None:
    kms = KeyListKms({"canary_master": CANARY})
    explicit = ExplicitKeys.from_specs([f"kc=hex:{CANARY.hex()}", f"kb=base64:{_b64(CANARY)}",
                                        f"kt=text:{CANARY.decode()}"])
    wrapper = FileKeyWrapper(kms)
    store = KeyMaterialStore()
    data_key = wrapper.column_key("canary_master", store=store)
    footer_key = wrapper.footer_key("canary_master")
    unwrapper = KeyUnwrapper(kms, explicit_keys=explicit)
    assert unwrapper.unwrap(data_key.key_metadata, store=store) == data_key.key
    cache: ExpiringCache[str, bytes] = ExpiringCache(60)
    cache.get_or_create("k", lambda: CANARY)
    objects = [kms, KeyListKms(f"canary_master:{_b64(CANARY)}"), explicit, wrapper, data_key, footer_key,
               DataKey(CANARY, b"kc", "m"), unwrapper, unwrapper.for_file(tmp_path / "f.parquet"),
               store, cache, PyArrowKmsClient(kms), OpenBaoTransitKms("http://127.0.0.1:9", CANARY_TOKEN),
               KeyMetadata.from_bytes(footer_key.key_metadata)]
    for obj in objects:
        assert_clean(repr(obj) + str(obj), extra=[data_key.key, footer_key.key])


def test_exceptions_never_carry_key_text(tmp_path: Path) -> None:
    kms = KeyListKms({"canary_master": CANARY})
    wrapped = kms.wrap_key(CANARY, "canary_master")
    check_raises(lambda: KeyListKms(f"m:{_b64(CANARY_LONG)}"))
    check_raises(lambda: KeyListKms(f"{_b64(CANARY)}"))  # forgot the id
    check_raises(lambda: KeyListKms(f"{_b64(CANARY)}:kf"))  # key and id swapped
    check_raises(lambda: KeyListKms(f"{_b64(CANARY)}:{_b64(CANARY_LONG)}"))
    check_raises(lambda: KeyListKms(f"m:{_b64(CANARY)}:x"))
    check_raises(lambda: KeyListKms(f"m:{_b64(CANARY)}!"))
    check_raises(lambda: KeyListKms({"m": CANARY_LONG}))
    check_raises(lambda: parse_key_spec(f"k=hex:{CANARY_LONG.hex()}"))
    check_raises(lambda: parse_key_spec(f"k=hex:{CANARY.hex()}zz"))
    check_raises(lambda: parse_key_spec(f"k=text:{CANARY.decode()}xx"))
    check_raises(lambda: parse_key_spec(f"k=b64:{_b64(CANARY)}"))
    check_raises(lambda: parse_key_spec(f"{_b64(CANARY)}"))
    check_raises(lambda: ExplicitKeys({"kc": CANARY}).key_for(b"other"))
    check_raises(lambda: KeyListKms({"other": bytes(16)}).unwrap_key(wrapped, "other"))
    check_raises(lambda: kms.unwrap_key(wrapped, "missing"))
    check_raises(lambda: unwrap_locally(wrapped, bytes(16), b"canary_master", wrapped_under="x"))
    check_raises(lambda: wrap_locally(CANARY_LONG, CANARY, b""))
    check_raises(lambda: wrap_locally(CANARY, CANARY_LONG, b""))
    check_raises(lambda: FileKeyWrapper(kms).wrap(CANARY_LONG, "canary_master", is_footer_key=False))

    class LongKeyKms:  # TEST DOUBLE: a KMS returning an invalid key
        def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
            return "w"

        def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
            return CANARY_LONG

    md = FileKeyWrapper(LongKeyKms(), double_wrapping=False).column_key("m")
    check_raises(lambda: KeyUnwrapper(LongKeyKms()).unwrap(md.key_metadata), extra=[md.key])
    check_raises(lambda: KeyUnwrapper(None, explicit_keys={"kc": CANARY}).unwrap(b"kx"))


def test_logs_of_a_full_flow_are_clean(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    kms = KeyListKms({"canary_master": CANARY})
    data_file = tmp_path / "f.parquet"
    store = KeyMaterialStore()
    wrapper = FileKeyWrapper(kms)
    keys = [wrapper.footer_key("canary_master", store=store), wrapper.column_key("canary_master", store=store)]
    store.save(sidecar_path(data_file))
    rewrap_external_key_material(sidecar_path(data_file), kms)
    retriever = KeyUnwrapper(kms).for_file(data_file)
    assert [retriever(k.key_metadata) for k in keys] == [k.key for k in keys]
    unreachable = OpenBaoTransitKms("http://127.0.0.1:9", CANARY_TOKEN, retries=1, backoff_s=0.01)
    check_raises(lambda: unreachable.unwrap_key("vault:v1:AAAA", "k"))
    text = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    assert "retry 1 of 1" in text  # the logs were captured at all
    assert_clean(text, extra=[k.key for k in keys])
    assert_clean(sidecar_path(data_file).read_text(), extra=[k.key for k in keys])


@pytest.mark.kms
def test_openbao_token_and_keys_stay_out_of_logs_and_errors(openbao: OpenBaoServer,  # noqa: F811
                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    good = OpenBaoTransitKms(openbao.url, openbao.token)
    good.create_key("canary_key")
    wrapped = good.wrap_key(CANARY, "canary_key")
    assert good.unwrap_key(wrapped, "canary_key") == CANARY
    bad = OpenBaoTransitKms(openbao.url, CANARY_TOKEN)
    check_raises(lambda: bad.unwrap_key(wrapped, "canary_key"))
    check_raises(lambda: bad.wrap_key(CANARY, "canary_key"))
    check_raises(lambda: good.unwrap_key(wrapped, "missing_key"))
    check_raises(lambda: good.wrap_key(CANARY_LONG, "canary_key"))
    check_raises(lambda: good.unwrap_key(wrapped[:-4] + "AAA=", "canary_key"))
    assert caplog.records, "expected HTTP debug logs"
    text = caplog.text + "\n".join(r.getMessage() for r in caplog.records)
    assert_clean(text)
    assert openbao.token not in text and openbao.token not in repr(good)
