"""Key material, key metadata and the external sidecar (SPEC_NOTES 7): parsing, parquet-java's
exact JSON bytes, strict errors, atomic sidecar writes."""

from __future__ import annotations

import json
import os
import stat

import pytest

from secure_bloom.errors import KeyNotFoundError, MalformedKeyMaterialError
from secure_bloom.kms import KeyMaterial, KeyMaterialStore, KeyMetadata, sidecar_path
from secure_bloom.kms._java_json import _iteration_order, java_hashmap_json

from support.kms_support import DATA, EXTERNAL_JAVA_FILE, EXTERNAL_JAVA_SIDECAR

FOOTER = KeyMaterial(master_key_id="kf", wrapped_dek="d2Q=", is_footer_key=True, double_wrapping=True,
                     kek_id="a2Vr", wrapped_kek="d2s=", kms_instance_id="DEFAULT", kms_instance_url="DEFAULT")
COLUMN_SINGLE = KeyMaterial(master_key_id="kc1", wrapped_dek="vault:v1:abc", is_footer_key=False,
                            double_wrapping=False)


def _java_sidecar() -> dict[str, str]:
    return json.loads(EXTERNAL_JAVA_SIDECAR.read_text())


# --- parquet-java's exact bytes ---------------------------------------------------------------


def test_parquet_java_sidecar_material_reserialises_byte_identical() -> None:
    for reference, text in _java_sidecar().items():
        material = KeyMaterial.from_json(text)
        assert material.to_json() == text, reference
        assert not material.internal_storage


def test_parquet_java_sidecar_reads_as_written() -> None:
    store = KeyMaterialStore.load(EXTERNAL_JAVA_SIDECAR)
    assert store.references() == ("footerKey", "columnKey1", "columnKey0")
    footer = store.get("footerKey")
    assert (footer.master_key_id, footer.is_footer_key, footer.double_wrapping) == ("kf", True, True)
    assert (footer.kms_instance_id, footer.kms_instance_url) == ("DEFAULT", "DEFAULT")
    assert footer.kek_id == "NFkiTmDXYzZMTb+O3b9nSA=="
    assert store.get("columnKey0").master_key_id == "kc1"
    assert store.get("columnKey1").master_key_id == "kc2"
    assert store.get("columnKey1").kms_instance_id is None
    assert store.to_json().encode() == EXTERNAL_JAVA_SIDECAR.read_bytes()


def test_parquet_java_external_key_metadata_bytes() -> None:
    from support.kms_support import footer_key_metadata

    in_file = footer_key_metadata(EXTERNAL_JAVA_FILE.read_bytes())
    metadata = KeyMetadata.from_bytes(in_file)
    assert metadata.key_reference == "footerKey" and not metadata.internal_storage
    assert KeyMetadata(key_reference="footerKey").to_bytes() == in_file


def _golden_orders() -> list[tuple[int, list[str], list[str]]]:
    rows = []
    for line in (DATA / "kms" / "java_hashmap_order.txt").read_text().splitlines():
        capacity, keys, order = line.split("|")
        rows.append((16 if capacity == "default" else int(capacity), keys.split(","), order.split(",")))
    return rows


@pytest.mark.parametrize("capacity,keys,order", _golden_orders(),
                         ids=lambda v: str(v) if isinstance(v, int) else None)
def test_hashmap_order_matches_java(capacity: int, keys: list[str], order: list[str]) -> None:
    """Orders printed by tests/data/kms/JavaHashMapOrder.java (sidecars up to 301 keys: resizes)."""
    assert _iteration_order(keys, capacity) == order


def test_java_json_is_compact_and_unescaped() -> None:
    text = java_hashmap_json([("footerKey", "{\"a\":\"b/c+d=\"}")])
    assert text == '{"footerKey":"{\\"a\\":\\"b/c+d=\\"}"}'
    with pytest.raises(ValueError):
        java_hashmap_json([("a", 1), ("a", 2)])


# --- round trips ----------------------------------------------------------------------------------


@pytest.mark.parametrize("material", [FOOTER, COLUMN_SINGLE], ids=["footer-double", "column-single"])
def test_internal_key_metadata_round_trip(material: KeyMaterial) -> None:
    data = KeyMetadata(material=material).to_bytes()
    obj = json.loads(data)
    assert obj["internalStorage"] is True and obj["keyMaterialType"] == "PKMT1"
    assert ("kmsInstanceID" in obj) == material.is_footer_key
    assert ("wrappedKEK" in obj) == material.double_wrapping
    assert KeyMetadata.from_bytes(data) == KeyMetadata(material=material)


def test_pyarrow_field_order_is_accepted() -> None:
    """Arrow C++ writes fields in insertion order; order must not matter when reading."""
    text = ('{"keyMaterialType":"PKMT1","internalStorage":true,"isFooterKey":true,"kmsInstanceID":"DEFAULT",'
            '"kmsInstanceURL":"DEFAULT","masterKeyID":"kf","wrappedDEK":"d2Q=","doubleWrapping":true,'
            '"keyEncryptionKeyID":"a2Vr","wrappedKEK":"d2s="}')
    assert KeyMetadata.from_bytes(text.encode()).material == FOOTER


def test_plain_key_id_is_not_key_tools() -> None:
    assert not KeyMetadata.looks_like_key_tools(b"kf")
    assert KeyMetadata.looks_like_key_tools(b' {"keyMaterialType":"PKMT1"}')


# --- strict errors ----------------------------------------------------------------------------------


_FOOTER_OBJ = json.loads(KeyMetadata(material=FOOTER).to_bytes())


def _without(field: str) -> str:
    return json.dumps({k: v for k, v in _FOOTER_OBJ.items() if k != field})


def _with(**fields: object) -> str:
    return json.dumps({**_FOOTER_OBJ, **fields})


@pytest.mark.parametrize("text,message", [
    ("not json", "not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    (_with(keyMaterialType="PKMT2"), "keyMaterialType"),
    (_without("keyMaterialType"), "keyMaterialType"),
    (_without("masterKeyID"), "'masterKeyID' is missing"),
    (_without("wrappedDEK"), "'wrappedDEK' is missing"),
    (_without("isFooterKey"), "'isFooterKey' is missing"),
    (_without("doubleWrapping"), "'doubleWrapping' is missing"),
    (_without("wrappedKEK"), "'wrappedKEK' is missing"),
    (_without("keyEncryptionKeyID"), "'keyEncryptionKeyID' is missing"),
    (_without("internalStorage"), "'internalStorage' is missing"),
    (_with(isFooterKey="true"), "'isFooterKey' must be bool"),
    (_with(masterKeyID=7), "'masterKeyID' must be str"),
    ('{"keyMaterialType":"PKMT1","internalStorage":false}', "'keyReference' is missing"),
    ("x" * (1 << 21), "characters, over"),
    (_with(masterKeyID=""), "master_key_id must be a non-empty str"),
    ('{"keyMaterialType":"PKMT1","internalStorage":false,"keyReference":""}', "key_reference"),
    ('{"keyMaterialType":"PKMT1","n":' + "9" * 5000 + "}", "not valid JSON"),  # int-digit limit: ValueError
])
def test_malformed_key_metadata(text: str, message: str) -> None:
    with pytest.raises(MalformedKeyMaterialError, match=message):
        KeyMetadata.from_bytes(text.encode())


def test_invalid_material_values_are_refused() -> None:
    with pytest.raises(ValueError, match="double_wrapping"):
        KeyMaterial(master_key_id="k", wrapped_dek="x", is_footer_key=False, double_wrapping=True)
    with pytest.raises(ValueError, match="footer"):
        KeyMaterial(master_key_id="k", wrapped_dek="x", is_footer_key=False, double_wrapping=False,
                    kms_instance_id="DEFAULT")
    with pytest.raises(ValueError, match="exactly one"):
        KeyMetadata()


# --- the sidecar store ------------------------------------------------------------------------------


def test_sidecar_path_naming() -> None:
    assert sidecar_path("/data/t/part-0.parquet").as_posix() == "/data/t/_KEY_MATERIAL_FOR_part-0.parquet.json"


def test_store_assigns_parquet_java_references() -> None:
    store = KeyMaterialStore()
    assert store.add(COLUMN_SINGLE) == "columnKey0"
    assert store.add(FOOTER) == "footerKey"
    assert store.add(COLUMN_SINGLE) == "columnKey1"
    with pytest.raises(ValueError, match="footerKey"):
        store.add(FOOTER)
    assert store.footer_material is not None and not store.footer_material.internal_storage
    with pytest.raises(KeyNotFoundError, match="columnKey9"):
        store.get("columnKey9")


def test_store_continues_column_numbering_after_load(tmp_path: os.PathLike[str]) -> None:
    store = KeyMaterialStore.load(EXTERNAL_JAVA_SIDECAR)
    assert store.add(COLUMN_SINGLE) == "columnKey2"


def test_store_save_is_atomic_and_keeps_mode(tmp_path: os.PathLike[str]) -> None:
    from pathlib import Path

    path = Path(tmp_path) / "_KEY_MATERIAL_FOR_x.parquet.json"
    store = KeyMaterialStore({"footerKey": FOOTER, "columnKey0": COLUMN_SINGLE})
    store.save(path)
    assert KeyMaterialStore.load(path).to_json() == store.to_json()
    assert "internalStorage" not in path.read_text()
    os.chmod(path, 0o640)
    KeyMaterialStore({"footerKey": FOOTER}).save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert KeyMaterialStore.load(path).references() == ("footerKey",)
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == [path.name]  # no temporary left


def test_store_errors(tmp_path: os.PathLike[str]) -> None:
    from pathlib import Path

    with pytest.raises(KeyNotFoundError, match="does not exist"):
        KeyMaterialStore.load(Path(tmp_path) / "missing.json")
    bad = Path(tmp_path) / "bad.json"
    for text, message in [("{", "not valid JSON"), ('{"footerKey": {}}', "material JSON strings"),
                          ('{"footerKey": "{}"}', "reference 'footerKey'"), ('{"a": ' + "9" * 5000 + "}", "not valid JSON")]:
        bad.write_text(text)
        with pytest.raises(MalformedKeyMaterialError, match=message):
            KeyMaterialStore.load(bad)


# --- well-typed fields checked at once: the same verdicts and messages as field by field -------------


_COLUMN_OBJ = json.loads(KeyMetadata(material=KeyMaterial(
    master_key_id="pii", wrapped_dek="d2Vr", is_footer_key=False, double_wrapping=True, kek_id="a2Vr",
    wrapped_kek="d2tlaw==")).to_bytes())


@pytest.mark.parametrize("base", [_FOOTER_OBJ, _COLUMN_OBJ], ids=["footer", "column"])
@pytest.mark.parametrize("field,value", [
    ("keyMaterialType", "PKMT2"), ("internalStorage", 1), ("internalStorage", "true"), ("isFooterKey", 1),
    ("isFooterKey", None), ("doubleWrapping", 0), ("doubleWrapping", "false"), ("masterKeyID", 7),
    ("masterKeyID", None), ("masterKeyID", ""), ("wrappedDEK", ["x"]), ("wrappedDEK", None),
    ("keyEncryptionKeyID", 1), ("keyEncryptionKeyID", None), ("wrappedKEK", True), ("wrappedKEK", None),
    ("kmsInstanceID", 5), ("kmsInstanceURL", False), ("kmsInstanceID", None), ("kmsInstanceURL", None),
])
def test_material_fields_checked_at_once_as_one_by_one(base: dict[str, object], field: str, value: object) -> None:
    """KeyMaterial.from_dict accepts exactly what the field-by-field check accepts (the fields a
    kind of material does not read, e.g. a column key's kmsInstanceID, are not read) and its
    errors name the same field in doubt."""
    obj = {**base, field: value}
    try:
        expected: object = KeyMaterial._from_dict_named(obj)
    except MalformedKeyMaterialError as e:
        expected = str(e)
    try:
        got: object = KeyMaterial.from_dict(obj)
    except MalformedKeyMaterialError as e:
        got = str(e)
    assert got == expected
    if isinstance(expected, str):  # the key metadata path names it too
        with pytest.raises(MalformedKeyMaterialError):
            KeyMetadata.from_bytes(json.dumps(obj).encode())


def test_key_metadata_is_parsed_once_per_distinct_blob() -> None:
    """Issue 29: a file's key label, its unwrap and a lookup's recheck each parsed the same JSON;
    now the same bytes give the same immutable object (from any buffer type), a failure is
    raised every time (never cached), and the cache is bounded."""
    from secure_bloom.kms import material as material_module

    data = KeyMetadata(material=FOOTER).to_bytes()
    first = KeyMetadata.from_bytes(data)
    assert KeyMetadata.from_bytes(bytearray(data)) is first
    assert KeyMetadata.from_bytes(memoryview(data)) is first and first == KeyMetadata(material=FOOTER)
    broken = data.replace(b'"internalStorage":true', b'"internalStorage":"yes"')
    for _ in range(2):
        with pytest.raises(MalformedKeyMaterialError, match="internalStorage"):
            KeyMetadata.from_bytes(broken)
    info = material_module._parsed_key_metadata.cache_info()
    assert info.maxsize == material_module.PARSED_KEY_METADATA and info.currsize <= info.maxsize
