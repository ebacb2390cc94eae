"""The published conformance vectors (specs/vectors): every COMMITTED file against our reader -
layout, key material, bitset digests and every expected probe answer (false positives included),
and every negative vector's outcome. parquet-java checks the same files in
tests/interop/test_vectors_java.py."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import xxhash

from secure_bloom import errors
from secure_bloom.kms import KeyListKms, KeyMaterialStore, KeyMetadata
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.values.column import hash_for_column
from support.paths import REPO_DIR

VECTORS = REPO_DIR / "specs" / "vectors"
MANIFEST: dict[str, Any] = json.loads((VECTORS / "manifest.json").read_text())
POSITIVE = {e["file"]: e for e in MANIFEST["positive"]}
NEGATIVE = {e["file"]: e for e in MANIFEST["negative"]}


def keys() -> KeyAccess:
    return KeyAccess(kms=KeyListKms(MANIFEST["keys"]["key_list"]))


def test_the_manifest_covers_every_combination_type_and_writer() -> None:
    ours = {(e["plaintext_footer"], e["algorithm_requested"], e["double_wrapping"], e["internal_key_material"])
            for e in POSITIVE.values() if e["writer"].startswith("secure_bloom")}
    assert len(ours) == 16  # footer mode x GCM/GCM_CTR x single/double x internal/external
    assert {e["writer"] for e in POSITIVE.values()} == {"secure_bloom attach (data: pyarrow)", "parquet-java (Spark)"}
    types = {c["physical_type"] for c in MANIFEST["columns"].values()}
    assert types == {"INT32", "INT64", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY", "INT96"}
    assert all(c["has_filter"] for e in POSITIVE.values() for rg in e["row_groups"] for c in rg["columns"].values())
    assert {e["expected_outcome"] for e in NEGATIVE.values()} == \
        {"authentication_error", "malformed", "refused_plaintext_filter"}
    false_positives = sum(c["false_positives"] for e in POSITIVE.values() for rg in e["row_groups"]
                          for c in rg["columns"].values())
    assert false_positives > 100  # the absent probes do exercise false positives
    sizes = {c["num_bytes"] for e in POSITIVE.values() for rg in e["row_groups"] for c in rg["columns"].values()}
    assert min(sizes) == 32 and max(sizes) > 32  # one-block and multi-block filters
    files = [p for p in VECTORS.iterdir() if p.is_file() and p.name not in ("manifest.json", "README.md", "generate.py")]
    assert sum(p.stat().st_size for p in files) == MANIFEST["total_bytes"]
    assert {p.name for p in files if p.name.endswith(".parquet.encrypted")} == set(POSITIVE) | set(NEGATIVE)


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_positive_vector_with_our_reader(name: str) -> None:
    entry = POSITIVE[name]
    path = VECTORS / name
    with ParquetBloomReader(path, keys=keys()) as reader:
        assert (str(reader.footer.mode), reader.footer.params.algorithm) == (entry["footer_mode"], entry["algorithm"])  # type: ignore[union-attr]
        assert entry["algorithm"] == entry["algorithm_requested"]
        assert entry["footer_mode"] == ("plaintext_signed" if entry["plaintext_footer"] else "encrypted")
        assert {c.path: c.key_id for c in reader.columns} == entry["column_master_keys"]
        assert reader.footer_key_id == entry["footer_master_key"] == "kf"
        metadata = KeyMetadata.from_bytes(bytes(reader.footer.footer_key_metadata or b""))
        assert metadata.internal_storage == entry["internal_key_material"]
        material = metadata.material or KeyMaterialStore.for_data_file(path).footer_material
        assert material is not None and material.double_wrapping == entry["double_wrapping"]
        for rg in entry["row_groups"]:
            for column, expected in rg["columns"].items():
                bf = reader.bloom_filter(rg["row_group"], column)
                assert (bf is not None) == expected["has_filter"]
                if bf is None:
                    continue
                chunk = reader.chunk(rg["row_group"], column)
                assert expected["stored"] == "encrypted_column_key" and chunk.encryption.value == "column_key"
                assert bf.num_bytes == expected["num_bytes"]
                assert hashlib.sha256(bf.bitset).hexdigest() == expected["bitset_sha256"]
                values = MANIFEST["probe_values"][column]
                assert len(expected["expected"]) == len(values)
                for probe, answer in zip(values, expected["expected"]):
                    h = xxhash.xxh64_intdigest(bytes.fromhex(probe["plain_hex"]))
                    assert f"{h:016x}" == probe["xxh64"]
                    assert bf.check_hash(h) is (answer == "1"), (column, probe["value"])
                    if probe["row_group"] == rg["row_group"]:
                        assert answer == "1"  # a stored value is always "maybe"


def test_probe_values_encode_as_their_columns_store_them() -> None:
    """The manifest's plain bytes are what our value encoder makes of each probe value."""
    with ParquetBloomReader(VECTORS / "ours_enc_gcm_double_internal.parquet.encrypted", keys=keys()) as reader:
        for column, values in MANIFEST["probe_values"].items():
            info = reader.column(column)
            for probe in values[:3]:
                if info.physical_type.name in ("INT32", "INT64", "FLOAT", "DOUBLE", "BYTE_ARRAY"):
                    value = probe["value"] if not isinstance(probe["value"], str) or column == "s" \
                        else float(probe["value"])
                    assert f"{hash_for_column(value, info):016x}" == probe["xxh64"]


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_negative_vector_with_our_reader(name: str) -> None:
    entry = NEGATIVE[name]
    error = getattr(errors, entry["secure_bloom_error"])
    category = {"authentication_error": errors.AuthenticationError, "malformed": errors.MalformedInputError,
                "refused_plaintext_filter": errors.PlaintextFilterOnEncryptedColumnError}[entry["expected_outcome"]]
    assert issubclass(error, category)
    with ParquetBloomReader(VECTORS / name, keys=keys()) as reader:
        with pytest.raises(error, match=r"\S"):
            reader.bloom_filter(entry["row_group"], entry["column"])
        # the other row group's filter of the same column is intact (only one chunk was damaged),
        # except where the damage moved it there
        if name not in ("neg_swapped_row_groups.parquet.encrypted",):
            assert reader.bloom_filter(1, entry["column"]) is not None


def test_negative_vectors_differ_from_their_base_only_where_they_say() -> None:
    for entry in NEGATIVE.values():
        base = (VECTORS / entry["derived_from"]).read_bytes()
        data = (VECTORS / entry["file"]).read_bytes()
        assert len(data) == len(base)
        with ParquetBloomReader(VECTORS / entry["derived_from"], keys=keys()) as reader:
            info = reader.chunk_info(reader.chunk(0, "i32"), with_sizes=False)
            start = info.bloom_filter_offset
            end = start + info.bloom_filter_length  # type: ignore[operator]
            other = {reader.chunk_info(reader.chunk(rg, col), with_sizes=False).bloom_filter_offset
                     for rg, col in ((1, "i32"), (0, "f32"))}
        changed = [i for i, (a, b) in enumerate(zip(base, data)) if a != b]
        assert changed, entry["file"]
        assert all(start <= i < end or any(o is not None and o <= i < o + (end - start) for o in other)
                   for i in changed), entry["file"]


def test_the_readme_documents_the_manifest() -> None:
    text = (VECTORS / "README.md").read_text()
    for word in ("manifest.json", "key_list", "plain_hex", "expected_outcome", "authentication_error",
                 "refused_plaintext_filter", "Apache-2.0", "benchmarks.vectors"):
        assert word in text, word
