"""Adversarial key material: PKMT1 JSON (internal key_metadata and the external sidecar), key
lists, key specs, explicit key ids and locally wrapped keys, seeded from the parquet-testing
sidecar and the key material of real files, mutated as bytes and as JSON structure.

Invariant: parsing raises only MalformedKeyMaterialError; resolving a key (unwrapping through the
key-list KMS) raises only SecureBloomError subclasses; a resolved key is 16, 24 or 32 bytes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.robustness_support import DATA, TESTING_KEYS, examples, mutated

from secure_bloom.errors import MalformedKeyMaterialError, SecureBloomError
from secure_bloom.kms import (ExplicitKeys, KeyUnwrapper, FileKeyWrapper, KeyListKms, KeyMaterial,
                              KeyMaterialStore, KeyMetadata, parse_key_spec)
from secure_bloom.kms.key_list import parse_key_list
from secure_bloom.kms.local_wrap import unwrap_locally
from secure_bloom.parquet import KeyAccess, ParquetBloomReader

SIDECAR = (DATA / "_KEY_MATERIAL_FOR_external_key_material_java.parquet.encrypted.json").read_bytes()
KMS = KeyListKms(TESTING_KEYS)


def _real_key_metadata() -> list[bytes]:
    out = []
    wrapper = FileKeyWrapper(KMS)
    for master in TESTING_KEYS:
        out.append(wrapper.footer_key(master).key_metadata)
        out.append(wrapper.column_key(master).key_metadata)
    single = FileKeyWrapper(KMS, double_wrapping=False)
    out.append(single.column_key("kc1").key_metadata)
    with ParquetBloomReader(DATA / "external_key_material_java.parquet.encrypted", KeyAccess(kms=KMS)) as reader:
        out.append(bytes(reader.footer.footer_key_metadata or b""))
        out += [bytes(c.key_metadata) for c in reader.column_chunks() if c.key_metadata]
    return out


KEY_METADATA = _real_key_metadata()
MATERIAL_JSON = [m.to_json().encode() for _, m in KeyMaterialStore.from_json(SIDECAR).items()]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=6)


@st.composite
def json_mutations(draw: Any, seed: bytes) -> bytes:
    """Structure-aware: drop, retype or add fields of a real JSON object, then maybe byte edits."""
    obj = json.loads(seed)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("drop", "retype", "add", "empty")))
        keys = sorted(obj)
        if kind == "drop" and keys:
            obj.pop(draw(st.sampled_from(keys)))
        elif kind == "retype" and keys:
            obj[draw(st.sampled_from(keys))] = draw(JSON_VALUES)
        elif kind == "empty" and keys:
            obj[draw(st.sampled_from(keys))] = ""
        else:
            obj[draw(st.text(max_size=12))] = draw(JSON_VALUES)
    text = json.dumps(obj, allow_nan=True).encode()
    return draw(mutated(text, max_edits=2)) if draw(st.booleans()) else text


def _resolve(key_metadata: bytes) -> None:
    """Parse and unwrap; only library errors; a key that comes back is an AES key."""
    store = KeyMaterialStore.from_json(SIDECAR)
    try:
        key = KeyUnwrapper(KMS, explicit_keys=TESTING_KEYS).unwrap(key_metadata, store=store)
    except SecureBloomError:
        return
    assert len(key) in (16, 24, 32)


@settings(max_examples=examples(400))
@given(data=st.data())
def test_mutated_key_metadata(data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(KEY_METADATA))
    blob = data.draw(mutated(seed) | json_mutations(seed))
    try:
        KeyMetadata.from_bytes(blob)
    except MalformedKeyMaterialError:
        pass
    _resolve(blob)


@settings(max_examples=examples(150))
@given(data=st.data())
def test_mutated_material_json(data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(MATERIAL_JSON))
    blob = data.draw(json_mutations(seed) | mutated(seed))
    try:
        material = KeyMaterial.from_json(blob)
    except MalformedKeyMaterialError:
        return
    try:
        KeyUnwrapper(KMS).unwrap_material(material)
    except SecureBloomError:
        pass


@settings(max_examples=examples(150))
@given(data=st.data())
def test_mutated_sidecar(data: st.DataObject) -> None:
    blob = data.draw(mutated(SIDECAR) | json_mutations(SIDECAR))
    try:
        store = KeyMaterialStore.from_json(blob)
    except MalformedKeyMaterialError:
        return
    for reference in store.references():
        try:
            KeyUnwrapper(KMS).unwrap_material(store.get(reference), footer_material=store.footer_material)
        except SecureBloomError:
            pass


@settings(max_examples=examples(150))
@given(blob=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_random_bytes_as_key_material(blob: bytes) -> None:
    for parse in (KeyMetadata.from_bytes, KeyMaterial.from_json, KeyMaterialStore.from_json):
        try:
            parse(blob)
        except MalformedKeyMaterialError:
            pass
    _resolve(blob)


KEY_LIST = ", ".join(f"{k}:{__import__('base64').b64encode(v).decode()}" for k, v in TESTING_KEYS.items())


@settings(max_examples=examples(200))
@given(text=st.text(max_size=120) | mutated(KEY_LIST.encode()).map(lambda b: b.decode("utf-8", "surrogateescape")))
def test_key_lists(text: str) -> None:
    try:
        keys = parse_key_list(text)
    except MalformedKeyMaterialError:
        return
    assert all(len(k) in (16, 24, 32) for k in keys.values())
    KeyListKms(text)


SPECS = ["kf=text:0123456789012345", "kc1=hex:31323334353637383930313233343530",
         "kc2=base64:MTIzNDU2Nzg5MDEyMzQ1MQ=="]


@settings(max_examples=examples(200))
@given(text=st.text(max_size=80) | st.sampled_from(SPECS).flatmap(
    lambda s: mutated(s.encode())).map(lambda b: b.decode("utf-8", "surrogateescape")))
def test_key_specs(text: str) -> None:
    try:
        key_id, key = parse_key_spec(text)
    except MalformedKeyMaterialError:
        return
    assert key_id and len(key) in (16, 24, 32)


@settings(max_examples=examples(100))
@given(key_id=st.binary(max_size=80))
def test_explicit_key_ids(key_id: bytes) -> None:
    try:
        key = ExplicitKeys(TESTING_KEYS).key_for(key_id)
    except SecureBloomError:
        return
    assert key_id.decode() in TESTING_KEYS and key == TESTING_KEYS[key_id.decode()]


@settings(max_examples=examples(150))
@given(data=st.data())
def test_mutated_locally_wrapped_keys(data: st.DataObject) -> None:
    wrapped = KMS.wrap_key(b"\x07" * 16, "kc1")
    bad = data.draw(mutated(wrapped.encode())).decode("utf-8", "surrogateescape")
    try:
        key = unwrap_locally(bad, TESTING_KEYS["kc1"], b"kc1", wrapped_under="master key 'kc1'")
    except SecureBloomError:
        return
    assert key == b"\x07" * 16  # only an equivalent encoding (e.g. padding) of the same blob


@pytest.mark.parametrize("blob", [
    b'{"keyMaterialType":"PKMT1","internalStorage":true,"isFooterKey":false,"masterKeyID":"",'
    b'"wrappedDEK":"x","doubleWrapping":false}',
    b'{"keyMaterialType":"PKMT1","internalStorage":false,"keyReference":""}',
    b'{"keyMaterialType":"PKMT1","internalStorage":true,"n":' + b"1" * 5000 + b"}",
    b'{"keyMaterialType":"PKMT1","internalStorage":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
])
def test_regressions_are_malformed_key_material(blob: bytes) -> None:
    """Empty ids/references (a bare ValueError from the dataclass checks) and >4300-digit JSON
    ints (ValueError from json) escaped before the fix in 63bdf69."""
    with pytest.raises(MalformedKeyMaterialError):
        KeyMetadata.from_bytes(blob)
    with pytest.raises(MalformedKeyMaterialError):
        KeyMaterialStore.from_json(b'{"footerKey": ' + json.dumps(blob.decode()).encode() + b"}")


def test_lone_surrogates_from_argv_are_malformed() -> None:
    with pytest.raises(MalformedKeyMaterialError):
        parse_key_spec("kf=text:" + "\udcff" * 16)
    with pytest.raises(MalformedKeyMaterialError):
        parse_key_list("k\udcff:MDEyMzQ1Njc4OTAxMjM0NQ==")
