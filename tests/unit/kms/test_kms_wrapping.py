"""FileKeyWrapper / KeyUnwrapper / ExpiringCache / rewrap_external_key_material with the real
key-list KMS (SPEC_NOTES 7). Call counts go through CountingKms, a labelled test double."""

from __future__ import annotations

import base64
import json
import re
import threading
from pathlib import Path

import pytest

from secure_bloom.errors import (AuthenticationError, KeyManagementError, KeyNotFoundError,
                                 MalformedKeyMaterialError, MissingKeyError)
from secure_bloom.kms import (KeyUnwrapper, FileKeyWrapper, KeyListKms, KeyMaterial,
                              KeyMaterialStore, KeyMetadata, rewrap_external_key_material, sidecar_path)
from secure_bloom.kms.cache import ExpiringCache

from support.kms_support import CountingKms, SettableClock

KEYS = {"footer_key": bytes(range(16)), "pii_key": bytes(range(16, 32)), "finance_key": bytes(range(32, 64))}


@pytest.fixture
def kms() -> CountingKms:
    return CountingKms(KeyListKms(KEYS))


@pytest.mark.parametrize("bits", [128, 192, 256], ids=["dek128", "dek192", "dek256"])
@pytest.mark.parametrize("double", [True, False], ids=["double", "single"])
def test_internal_round_trip(kms: CountingKms, bits: int, double: bool) -> None:
    wrapper = FileKeyWrapper(kms, double_wrapping=double, dek_length_bits=bits)
    footer_dek, footer_md = wrapper.footer_key("footer_key")
    column_dek, column_md = wrapper.column_key("pii_key")
    assert len(footer_dek) == len(column_dek) == bits // 8 and footer_dek != column_dek
    footer = KeyMetadata.from_bytes(footer_md).material
    column = KeyMetadata.from_bytes(column_md).material
    assert footer is not None and column is not None
    assert (footer.is_footer_key, footer.kms_instance_id, footer.kms_instance_url) == (True, "DEFAULT", "DEFAULT")
    assert (column.is_footer_key, column.kms_instance_id, column.master_key_id) == (False, None, "pii_key")
    assert footer.double_wrapping is double and (footer.kek_id is not None) is double
    if double:
        assert len(base64.b64decode(footer.kek_id or "")) == 16
    unwrapper = KeyUnwrapper(KeyListKms(KEYS))
    assert unwrapper.unwrap(footer_md) == footer_dek
    assert unwrapper.unwrap(column_md) == column_dek


def test_double_wrapping_one_kek_per_master_key(kms: CountingKms) -> None:
    wrapper = FileKeyWrapper(kms)
    mds = [wrapper.column_key("pii_key").key_metadata for _ in range(50)]
    mds += [wrapper.column_key("finance_key").key_metadata for _ in range(50)]
    assert kms.wraps == 2
    kek_ids = {json.loads(md)["keyEncryptionKeyID"] for md in mds}
    assert len(kek_ids) == 2
    single = CountingKms(KeyListKms(KEYS))
    for _ in range(5):
        FileKeyWrapper(single, double_wrapping=False).column_key("pii_key")
    assert single.wraps == 5


def test_wrapper_kek_expires_after_lifetime(kms: CountingKms) -> None:
    clock = SettableClock()
    wrapper = FileKeyWrapper(kms, kek_lifetime_s=600, _clock=clock)
    first = json.loads(wrapper.column_key("pii_key").key_metadata)["keyEncryptionKeyID"]
    clock.now += 599.9
    assert json.loads(wrapper.column_key("pii_key").key_metadata)["keyEncryptionKeyID"] == first
    clock.now += 0.1  # exactly the lifetime: never served
    assert json.loads(wrapper.column_key("pii_key").key_metadata)["keyEncryptionKeyID"] != first
    assert kms.wraps == 2


def test_unwrapper_kek_cache_and_expiry(kms: CountingKms) -> None:
    wrapper = FileKeyWrapper(KeyListKms(KEYS))
    mds = [wrapper.column_key("pii_key") for _ in range(1000)]  # 1000 "files", one KEK
    clock = SettableClock()
    unwrapper = KeyUnwrapper(kms, cache_lifetime_s=600, _clock=clock)
    assert all(unwrapper.for_file()(md.key_metadata) == md.key for md in mds)
    assert kms.unwraps == 1
    clock.now += 600
    assert unwrapper.unwrap(mds[0].key_metadata) == mds[0].key
    assert kms.unwraps == 2
    unwrapper.clear_caches()
    unwrapper.unwrap(mds[0].key_metadata)
    assert kms.unwraps == 3


def test_unwrapper_kek_entries_hold_their_own_kek_ids(kms: CountingKms) -> None:
    """The KEK cache keeps each KEK with its decoded id (the AAD of the DEKs under it): two KEKs
    of one master key each unwrap their own DEKs, a bad id is refused even with KEKs cached, and
    a DEK named with another KEK's id is checked under that id (its tag fails)."""
    a = FileKeyWrapper(KeyListKms(KEYS)).column_key("pii_key")
    b = FileKeyWrapper(KeyListKms(KEYS)).column_key("pii_key")  # another KEK of the same master key
    unwrapper = KeyUnwrapper(kms)
    assert unwrapper.unwrap(a.key_metadata) == a.key and unwrapper.unwrap(b.key_metadata) == b.key
    assert unwrapper.unwrap(a.key_metadata) == a.key
    assert kms.unwraps == 2
    bad = {**json.loads(a.key_metadata), "keyEncryptionKeyID": "not base64!"}
    with pytest.raises(MalformedKeyMaterialError, match="keyEncryptionKeyID of master key 'pii_key'"):
        unwrapper.unwrap(json.dumps(bad).encode())
    a_id = json.loads(a.key_metadata)["keyEncryptionKeyID"]
    mixed = {**json.loads(b.key_metadata), "keyEncryptionKeyID": a_id}
    with pytest.raises(AuthenticationError, match=re.escape(f"KEK {a_id} of master key 'pii_key'")):
        unwrapper.unwrap(json.dumps(mixed).encode())
    assert kms.unwraps == 2


def test_unwrapper_cache_is_keyed_by_master_key(kms: CountingKms) -> None:
    """A KEK cached for one master key is never served for material naming another."""
    wrapper = FileKeyWrapper(KeyListKms(KEYS))
    dek, md = wrapper.column_key("pii_key")
    unwrapper = KeyUnwrapper(kms)
    assert unwrapper.unwrap(md) == dek
    forged = json.loads(md)
    forged["masterKeyID"] = "finance_key"
    with pytest.raises(AuthenticationError, match="finance_key"):
        unwrapper.unwrap(json.dumps(forged).encode())
    assert kms.unwraps == 2


def test_unwrapper_threads_share_one_kms_call(kms: CountingKms) -> None:
    wrapper = FileKeyWrapper(KeyListKms(KEYS))
    keys = [wrapper.column_key("finance_key") for _ in range(200)]
    unwrapper = KeyUnwrapper(kms)
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(part: int) -> None:
        try:
            barrier.wait()
            for k in keys[part::8]:
                assert unwrapper.unwrap(k.key_metadata) == k.key
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and not any(t.is_alive() for t in threads)
    assert kms.unwraps == 1


def test_external_storage_round_trip(tmp_path: Path, kms: CountingKms) -> None:
    data_file = tmp_path / "part-0.parquet"
    data_file.write_bytes(b"PAR1")
    store = KeyMaterialStore()
    wrapper = FileKeyWrapper(kms, kms_instance_id="kms-a", kms_instance_url="https://kms.example")
    footer = wrapper.footer_key("footer_key", store=store)
    columns = [wrapper.column_key(m, store=store) for m in ("pii_key", "finance_key")]
    store.save(sidecar_path(data_file))
    assert [json.loads(c.key_metadata)["keyReference"] for c in columns] == ["columnKey0", "columnKey1"]
    assert KeyMetadata.from_bytes(footer.key_metadata).key_reference == "footerKey"
    seen: list[tuple[str, str]] = []

    def factory(kms_instance_id: str, kms_instance_url: str) -> KeyListKms:
        seen.append((kms_instance_id, kms_instance_url))
        return KeyListKms(KEYS)

    retriever = KeyUnwrapper(factory).for_file(data_file)
    assert retriever(columns[1].key_metadata) == columns[1].key  # column first: the sidecar's footer names the KMS
    assert retriever(footer.key_metadata) == footer.key
    assert retriever(columns[0].key_metadata) == columns[0].key
    assert seen == [("kms-a", "https://kms.example")]


def test_kms_instance_resolution() -> None:
    wrapper = FileKeyWrapper(KeyListKms(KEYS), kms_instance_id="inst-1", kms_instance_url="url-1")
    footer, column = wrapper.footer_key("footer_key"), wrapper.column_key("pii_key")
    seen: list[tuple[str, str]] = []

    def factory(kms_instance_id: str, kms_instance_url: str) -> KeyListKms:
        seen.append((kms_instance_id, kms_instance_url))
        return KeyListKms(KEYS)

    retriever = KeyUnwrapper(factory).for_file()
    retriever(footer.key_metadata)
    retriever(column.key_metadata)  # remembers the footer's instance
    KeyUnwrapper(factory).unwrap(column.key_metadata)  # no footer seen: DEFAULT
    KeyUnwrapper(factory, kms_instance_id="override", kms_instance_url="u").unwrap(footer.key_metadata)
    assert seen == [("inst-1", "url-1"), ("DEFAULT", "DEFAULT"), ("override", "u")]


def test_explicit_key_ids_and_missing_sources(tmp_path: Path) -> None:
    unwrapper = KeyUnwrapper(explicit_keys={"kf": b"0123456789012345"})
    assert unwrapper.unwrap(b"kf") == b"0123456789012345"
    with pytest.raises(MissingKeyError, match="'kx'"):
        unwrapper.unwrap(b"kx")
    md = FileKeyWrapper(KeyListKms(KEYS)).column_key("pii_key").key_metadata
    with pytest.raises(MissingKeyError, match="no KMS|has none"):
        unwrapper.unwrap(md)
    with pytest.raises(MissingKeyError, match="plain key id"):
        KeyUnwrapper(KeyListKms(KEYS)).unwrap(b"kf")
    external = KeyMetadata(key_reference="columnKey0").to_bytes()
    with pytest.raises(MissingKeyError, match="columnKey0"):
        KeyUnwrapper(KeyListKms(KEYS)).unwrap(external)
    with pytest.raises(KeyNotFoundError, match="does not exist"):
        KeyUnwrapper(KeyListKms(KEYS)).for_file(tmp_path / "f.parquet")(external)


def test_tampered_material_is_refused() -> None:
    wrapper = FileKeyWrapper(KeyListKms(KEYS))
    md = json.loads(wrapper.column_key("pii_key").key_metadata)
    blob = bytearray(base64.b64decode(md["wrappedDEK"]))
    blob[-1] ^= 1
    with pytest.raises(AuthenticationError, match=r"KEK .* of master key 'pii_key'"):
        KeyUnwrapper(KeyListKms(KEYS)).unwrap(json.dumps({**md, "wrappedDEK": base64.b64encode(bytes(blob)).decode()}).encode())
    with pytest.raises(MalformedKeyMaterialError):
        KeyUnwrapper(KeyListKms(KEYS)).unwrap(json.dumps({**md, "keyEncryptionKeyID": "@@"}).encode())
    with pytest.raises(KeyNotFoundError, match="'nope'"):
        KeyUnwrapper(KeyListKms(KEYS)).unwrap(json.dumps({**md, "masterKeyID": "nope"}).encode())


def test_kms_returning_bad_values_is_caught() -> None:
    class WrongTypes:  # TEST DOUBLE: a broken KMS client
        def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
            return b"not-a-str"  # type: ignore[return-value]

        def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
            return b"short"

    with pytest.raises(KeyManagementError, match="must return a non-empty str"):
        FileKeyWrapper(WrongTypes()).column_key("m")
    md = FileKeyWrapper(KeyListKms({"m": bytes(16)}), double_wrapping=False).column_key("m").key_metadata
    with pytest.raises(MalformedKeyMaterialError, match="5-byte key"):
        KeyUnwrapper(WrongTypes()).unwrap(md)


def test_wrapper_argument_checks() -> None:
    with pytest.raises(ValueError, match="dek_length_bits"):
        FileKeyWrapper(KeyListKms(KEYS), dek_length_bits=64)
    with pytest.raises(TypeError):
        FileKeyWrapper(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="16, 24 or 32"):
        FileKeyWrapper(KeyListKms(KEYS)).wrap(b"short", "pii_key", is_footer_key=False)


# --- the cache -----------------------------------------------------------------------------------------


def test_expiring_cache_never_serves_expired_entries() -> None:
    clock = SettableClock()
    cache: ExpiringCache[str, int] = ExpiringCache(10, clock)
    calls = []
    assert cache.get_or_create("a", lambda: calls.append(1) or 1) == 1
    clock.now += 9.999
    assert cache.get_or_create("a", lambda: calls.append(2) or 2) == 1
    clock.now += 0.001
    assert len(cache) == 0
    assert cache.get_or_create("a", lambda: calls.append(3) or 3) == 3
    assert calls == [1, 3]
    with pytest.raises(RuntimeError):
        cache.get_or_create("b", lambda: (_ for _ in ()).throw(RuntimeError("kms down")))
    assert cache.get_or_create("b", lambda: 4) == 4  # a failure cached nothing
    zero: ExpiringCache[str, int] = ExpiringCache(0, clock)
    assert zero.get_or_create("a", lambda: 1) == 1 and zero.get_or_create("a", lambda: 2) == 2
    with pytest.raises(ValueError):
        ExpiringCache(-1)


def test_expiring_cache_get_serves_only_fresh_entries_and_computes_nothing() -> None:
    clock = SettableClock()
    cache: ExpiringCache[str, int] = ExpiringCache(10, clock)
    assert cache.get("a") is None and len(cache) == 0  # a miss stores nothing
    cache.get_or_create("a", lambda: 1)
    clock.now += 9.999
    assert cache.get("a") == 1
    clock.now += 0.001
    assert cache.get("a") is None  # expired: as get_or_create would compute again
    zero: ExpiringCache[str, int] = ExpiringCache(0, clock)
    zero.get_or_create("a", lambda: 1)
    assert zero.get("a") is None


def test_expiring_cache_lifetime_counts_from_request_start() -> None:
    """The creation time is taken before the (slow) KMS call."""
    clock = SettableClock()
    cache: ExpiringCache[str, int] = ExpiringCache(10, clock)

    def slow() -> int:
        clock.now += 6
        return 1

    cache.get_or_create("a", slow)
    clock.now += 4
    assert cache.get_or_create("a", lambda: 2) == 2


class _CountedTime(float):
    """A clock reading that counts the ages computed from it (``now - created``)."""

    ages = 0

    def __sub__(self, other: float) -> float:
        _CountedTime.ages += 1
        return float(self) - float(other)


def test_expiring_cache_miss_cost_does_not_grow_with_the_entries() -> None:
    """Issue 29: each miss aged every cached entry, so N distinct keys (N files, each with its own
    KEK) cost O(N^2). Now a miss ages O(1) entries (amortised): well under 10 per miss."""
    clock = SettableClock()
    cache: ExpiringCache[int, int] = ExpiringCache(600, lambda: _CountedTime(clock.now))
    n = 2000
    _CountedTime.ages = 0
    for i in range(n):
        clock.now += 0.001
        assert cache.get_or_create(i, lambda i=i: i) == i
    assert _CountedTime.ages < 10 * n, _CountedTime.ages
    assert len(cache) == n


def test_expiring_cache_purges_exactly_the_expired_entries() -> None:
    """Entries made at different times expire at their own times; a replaced entry's old
    creation time never drops its successor; clear() forgets the expiry order too."""
    clock = SettableClock()
    cache: ExpiringCache[str, int] = ExpiringCache(10, clock)
    cache.get_or_create("a", lambda: 1)
    clock.now += 4
    cache.get_or_create("b", lambda: 2)
    clock.now += 6                                    # a: 10 s old (expired), b: 6 s
    assert len(cache) == 1
    assert cache.get_or_create("b", lambda: 20) == 2
    assert cache.get_or_create("a", lambda: 10) == 10  # made again at t=10
    clock.now += 4                                    # b expired, the new a is 4 s old
    assert cache.get_or_create("c", lambda: 3) == 3
    assert len(cache) == 2
    assert cache.get_or_create("a", lambda: 100) == 10
    cache.clear()
    assert len(cache) == 0
    assert cache.get_or_create("a", lambda: 5) == 5
    clock.now += 9.999
    assert len(cache) == 1 and cache.get_or_create("a", lambda: 6) == 5
    clock.now += 0.001
    assert cache.get_or_create("a", lambda: 7) == 7


# --- rotation ------------------------------------------------------------------------------------------


def test_rewrap_external_key_material(tmp_path: Path) -> None:
    data_file = tmp_path / "f.parquet"
    data_file.write_bytes(b"data bytes stay as they are")
    store = KeyMaterialStore()
    wrapper = FileKeyWrapper(KeyListKms(KEYS), double_wrapping=False)
    deks = {ref: k.key for ref, k in (("footerKey", wrapper.footer_key("footer_key", store=store)),
                                      ("columnKey0", wrapper.column_key("pii_key", store=store)))}
    path = store.save(sidecar_path(data_file))
    before = path.read_text()
    new_keys = {k: bytes(reversed(v)) for k, v in KEYS.items()}  # "rotated" master keys
    old_kms, new_kms = KeyListKms(KEYS), KeyListKms(new_keys)
    assert rewrap_external_key_material(path, new_kms, unwrap_kms=old_kms, double_wrapping=True) == 2
    assert path.read_text() != before
    assert data_file.read_bytes() == b"data bytes stay as they are"
    rewrapped = KeyMaterialStore.load(path)
    assert all(m.double_wrapping for _, m in rewrapped.items())
    assert rewrapped.footer_material is not None and rewrapped.footer_material.kms_instance_id == "DEFAULT"
    retriever = KeyUnwrapper(new_kms).for_file(data_file)
    for reference, dek in deks.items():
        assert retriever(KeyMetadata(key_reference=reference).to_bytes()) == dek
    with pytest.raises(AuthenticationError):
        KeyUnwrapper(old_kms).for_file(data_file)(KeyMetadata(key_reference="footerKey").to_bytes())


def test_rewrap_leaves_sidecar_alone_on_failure(tmp_path: Path) -> None:
    store = KeyMaterialStore()
    FileKeyWrapper(KeyListKms(KEYS)).footer_key("footer_key", store=store)
    store.add(KeyMaterial(master_key_id="gone", wrapped_dek="AAAA", is_footer_key=False, double_wrapping=False))
    path = store.save(tmp_path / "_KEY_MATERIAL_FOR_f.parquet.json")
    before = path.read_bytes()
    with pytest.raises(KeyNotFoundError, match="'gone'"):
        rewrap_external_key_material(path, KeyListKms(KEYS))
    assert path.read_bytes() == before
