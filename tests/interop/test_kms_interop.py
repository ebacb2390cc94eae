"""Key tools interoperability (SPEC_NOTES 7, 10): parquet-java's external key material vector, and
pyarrow's CryptoFactory in both directions. Unwrapped keys are proven by decrypting the file's
footer and encrypted ColumnMetaData modules with them."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from secure_bloom.errors import AuthenticationError
from secure_bloom.kms import (KeyUnwrapper, KeyListKms, KeyMaterialStore, KeyMetadata,
                              pyarrow_kms_client_factory, rewrap_external_key_material, sidecar_path)

from support.kms_support import (EXTERNAL_JAVA_FILE, EXTERNAL_JAVA_SIDECAR, PARQUET_TESTING_KEYS, CountingKms,
                         decrypt_footer, footer_key_metadata, key_list_text)

TABLE = pa.table({"id": pa.array(range(20), pa.int64()), "ssn": [f"{i:03d}-00-0000" for i in range(20)],
                  "salary": pa.array([float(i) for i in range(20)])})


class IndependentKeyListClient(pe.KmsClient):
    """A real pyarrow KmsClient subclass implementing parquet-java's key-list wrap on its own
    (AES-GCM, AAD = master key id), sharing no code with secure_bloom."""

    def __init__(self, keys: dict[str, bytes]) -> None:
        super().__init__()
        self.keys = keys

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        nonce = bytes(range(12))[::-1]  # deterministic is fine here: a test client, unique plaintexts
        sealed = AESGCM(self.keys[master_key_identifier]).encrypt(nonce, key_bytes, master_key_identifier.encode())
        return base64.b64encode(nonce + sealed).decode()

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        blob = base64.b64decode(wrapped_key)
        return AESGCM(self.keys[master_key_identifier]).decrypt(blob[:12], blob[12:], master_key_identifier.encode())


def _java_copy(tmp_path: Path) -> Path:
    data_file = tmp_path / EXTERNAL_JAVA_FILE.name
    shutil.copy(EXTERNAL_JAVA_FILE, data_file)
    shutil.copy(EXTERNAL_JAVA_SIDECAR, sidecar_path(data_file))
    return data_file


def _pyarrow_read(data_file: Path, client_factory: object) -> pa.Table:
    factory = pe.CryptoFactory(client_factory)
    props = factory.file_decryption_properties(pe.KmsConnectionConfig(), pe.DecryptionConfiguration(),
                                               parquet_file_path=str(data_file))
    return pq.read_table(data_file, decryption_properties=props)


# --- parquet-java -----------------------------------------------------------------------------------


def test_parquet_java_external_material_unwraps_to_the_file_keys() -> None:
    kms = CountingKms(KeyListKms(key_list_text(PARQUET_TESTING_KEYS)))
    retriever = KeyUnwrapper(kms).for_file(EXTERNAL_JAVA_FILE)
    data = EXTERNAL_JAVA_FILE.read_bytes()
    footer_key = retriever(footer_key_metadata(data))
    footer = decrypt_footer(data, footer_key)  # GCM: only the right key authenticates
    assert footer.metadata.num_rows == 100
    columns = footer.column_key_metadata()
    assert sorted(columns) == ["integers", "strings"]
    masters = {"integers": "kc1", "strings": "kc2"}
    for column, key_metadata in columns.items():
        key = retriever(key_metadata)
        assert KeyMaterialStore.load(EXTERNAL_JAVA_SIDECAR).get(
            KeyMetadata.from_bytes(key_metadata).key_reference or "").master_key_id == masters[column]
        meta = footer.column_metadata(column, key)
        assert meta.path_in_schema == [column] and meta.num_values == 100
    assert kms.unwraps == 3  # one KEK per master key kf, kc1, kc2


def test_parquet_java_file_wrong_master_key_fails_authentication() -> None:
    wrong = dict(PARQUET_TESTING_KEYS, kf=b"0123456789012346")
    retriever = KeyUnwrapper(KeyListKms(wrong)).for_file(EXTERNAL_JAVA_FILE)
    with pytest.raises(AuthenticationError, match="master key 'kf'"):
        retriever(footer_key_metadata(EXTERNAL_JAVA_FILE.read_bytes()))


def test_pyarrow_reads_parquet_java_file_through_our_key_list(tmp_path: Path) -> None:
    data_file = _java_copy(tmp_path)
    table = _pyarrow_read(data_file, pyarrow_kms_client_factory(KeyListKms(key_list_text(PARQUET_TESTING_KEYS))))
    assert table.num_rows == 100 and table.column_names == ["integers", "strings"]
    assert table.slice(0, 2).to_pylist() == [{"integers": 0, "strings": "a0"}, {"integers": 1, "strings": "b1"}]


def test_our_rewrap_of_parquet_java_material_reads_in_pyarrow(tmp_path: Path) -> None:
    """Our re-wrapped sidecar (fresh KEKs, our JSON) is read by pyarrow; the data file is untouched."""
    data_file = _java_copy(tmp_path)
    kms = KeyListKms(key_list_text(PARQUET_TESTING_KEYS))
    original = data_file.read_bytes()
    before = KeyMaterialStore.load(sidecar_path(data_file))
    assert rewrap_external_key_material(sidecar_path(data_file), kms) == 3
    after = KeyMaterialStore.load(sidecar_path(data_file))
    assert data_file.read_bytes() == original
    for reference in before.references():
        assert after.get(reference).kek_id != before.get(reference).kek_id
        assert after.get(reference).master_key_id == before.get(reference).master_key_id
    table = _pyarrow_read(data_file, pyarrow_kms_client_factory(kms))
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    assert table.num_rows == 100
    assert table.equals(_pyarrow_read(_java_copy(pristine), pyarrow_kms_client_factory(kms)))


# --- pyarrow writes, we read -------------------------------------------------------------------------


def _pyarrow_write(path: Path, client_factory: object, *, double: bool = True, internal: bool = True) -> None:
    config = pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["ssn"], "kc2": ["salary"]},
                                        double_wrapping=double, internal_key_material=internal)
    props = pe.CryptoFactory(client_factory).file_encryption_properties(
        pe.KmsConnectionConfig(), config, parquet_file_path=None if internal else str(path))
    pq.write_table(TABLE, path, encryption_properties=props)


def _check_our_unwrap(path: Path, unwrapper: KeyUnwrapper) -> None:
    data = path.read_bytes()
    retriever = unwrapper.for_file(path)
    footer = decrypt_footer(data, retriever(footer_key_metadata(data)))
    assert footer.metadata.num_rows == 20
    columns = footer.column_key_metadata()
    assert sorted(columns) == ["salary", "ssn"]
    for column, key_metadata in columns.items():
        assert footer.column_metadata(column, retriever(key_metadata)).path_in_schema == [column]


@pytest.mark.parametrize("double", [True, False], ids=["double", "single"])
def test_pyarrow_with_our_key_list_then_our_unwrapper(tmp_path: Path, double: bool) -> None:
    kms = KeyListKms(key_list_text(PARQUET_TESTING_KEYS))
    path = tmp_path / "pa.parquet"
    _pyarrow_write(path, pyarrow_kms_client_factory(kms), double=double)
    assert KeyMetadata.from_bytes(footer_key_metadata(path.read_bytes())).internal_storage  # pyarrow default
    _check_our_unwrap(path, KeyUnwrapper(kms))
    assert _pyarrow_read(path, pyarrow_kms_client_factory(kms)).equals(TABLE)


def test_pyarrow_kms_client_subclass_plugs_into_our_unwrapper(tmp_path: Path) -> None:
    client = IndependentKeyListClient(PARQUET_TESTING_KEYS)
    path = tmp_path / "pa.parquet"
    _pyarrow_write(path, lambda config: IndependentKeyListClient(PARQUET_TESTING_KEYS))
    _check_our_unwrap(path, KeyUnwrapper(client))  # the pyarrow instance, unchanged
    _check_our_unwrap(path, KeyUnwrapper(KeyListKms(PARQUET_TESTING_KEYS)))  # same wrap format


def test_pyarrow_external_material_then_ours_then_pyarrow(tmp_path: Path) -> None:
    kms = KeyListKms(key_list_text(PARQUET_TESTING_KEYS))
    path = tmp_path / "ext.parquet"
    _pyarrow_write(path, pyarrow_kms_client_factory(kms), double=False, internal=False)
    assert not KeyMetadata.from_bytes(footer_key_metadata(path.read_bytes())).internal_storage
    _check_our_unwrap(path, KeyUnwrapper(kms))
    rewrap_external_key_material(sidecar_path(path), kms, double_wrapping=True)
    assert all(m.double_wrapping for _, m in KeyMaterialStore.load(sidecar_path(path)).items())
    _check_our_unwrap(path, KeyUnwrapper(kms))
    assert _pyarrow_read(path, pyarrow_kms_client_factory(kms)).equals(TABLE)


@pytest.mark.interop
def test_parquet_java_unwraps_key_material_we_wrote(tmp_path: Path, spark: object) -> None:
    """Our FileKeyWrapper re-wraps the sidecar (fresh KEKs and KEK ids, our JSON); parquet-java's
    own key tools then unwrap it to open the file, and Spark reads every row."""
    from benchmarks.parquet_java import bloom_probe
    from secure_bloom.spark.policy import EncryptionPolicy, KeyListKmsConfig
    from secure_bloom.spark.session import applied_policy

    data_file = _java_copy(tmp_path)
    kms = KeyListKms(key_list_text(PARQUET_TESTING_KEYS))
    before = KeyMaterialStore.load(sidecar_path(data_file))
    assert rewrap_external_key_material(sidecar_path(data_file), kms) == 3
    after = KeyMaterialStore.load(sidecar_path(data_file))
    assert all(after.get(r).kek_id != before.get(r).kek_id for r in before.references())
    policy = EncryptionPolicy(footer_key="kf", kms=KeyListKmsConfig(key_list_text(PARQUET_TESTING_KEYS)))
    result = bloom_probe(data_file, [], policy.hadoop_conf(), all_columns=True)
    assert result["encryption"] == "ENCRYPTED_FOOTER"
    assert result["columns"]["integers"]["encrypted"] is True and result["columns"]["strings"]["encrypted"] is True
    with applied_policy(spark, policy):
        assert spark.read.parquet(str(data_file)).count() == 100  # type: ignore[attr-defined]
    # parquet-java really used our material: with the pristine KEKs gone from the sidecar, a
    # wrong master key list cannot open it.
    wrong = EncryptionPolicy(footer_key="kf", kms=KeyListKmsConfig(
        key_list_text({k: bytes(16) for k in PARQUET_TESTING_KEYS})))
    from secure_bloom.errors import JvmError

    with pytest.raises(JvmError, match="BloomProbe exited with 1: .*ParquetCryptoRuntimeException: Unwrapping with "
                       "master key 'kf' failed authentication"):
        bloom_probe(data_file, [], wrong.hadoop_conf(), all_columns=True)
