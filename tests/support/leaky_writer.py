"""Test helper: add Bloom filters to an encrypted Parquet file the ways real writers get it wrong.

The library refuses to write a plaintext filter for an encrypted column
(:class:`PlaintextFilterOnEncryptedColumnError`), so the audit's hostile inputs are built here,
from public building blocks only (thrift_codec, filter, encrypted_filter, the footer layer):

* ``"plaintext"``: header + bitset in the clear, as arrow-rs writes them for encrypted columns;
* ``"column_key"``: the correct form (two GCM modules under the column key);
* ``"footer_key"``: encrypted, but with the footer key instead of the column key;
* ``"tampered"``: correct, then one ciphertext byte of the bitset module flipped.

The filters go after the last row group (where parquet-java puts them); the chunk's
ColumnMetaData gets ``bloom_filter_offset``/``length`` (re-encrypted with the column key and its
AAD when the column has its own key, and also in the redacted plaintext copy parquet-java keeps in
plaintext-footer files); then the footer is re-encrypted or re-signed with the footer key.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow.parquet as pq

from secure_bloom import thrift_codec
from secure_bloom.crypto.context import ChunkCryptoContext
from secure_bloom.encrypted_filter import encrypt_bloom_filter
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.parquet.file.crypto_context import decrypt_column_metadata, encrypt_column_metadata
from secure_bloom.parquet.file.footer import encode_footer, open_footer
from secure_bloom.parquet.file.keys import KeyAccess
from secure_bloom.parquet.file.tail import read_tail
from secure_bloom.types import PhysicalType

MODES = ("plaintext", "column_key", "footer_key", "tampered")


def _filter_for(values: Sequence[Any], ptype: PhysicalType) -> SplitBlockBloomFilter:
    bf = SplitBlockBloomFilter.for_ndv(max(len(values), 1), 0.01)
    bf.insert([v for v in values if v is not None], ptype)
    return bf


def inject_filters(src: str | os.PathLike[str], dst: str | os.PathLike[str], modes: Mapping[str, str],
                   keys: KeyAccess, *, values: Mapping[str, Sequence[Sequence[Any]]] | None = None) -> None:
    """Copy ``src`` to ``dst`` with a filter, written as ``modes[column]``, on every row group of
    each named column. ``values[column][rg]`` are the inserted values (default: the file's own,
    read with pyarrow, which needs ``keys`` to decrypt... so pass them for encrypted files)."""
    src, dst = os.fspath(src), os.fspath(dst)
    with open(src, "rb") as f:
        data = f.read()
        tail = read_tail(f, src)
    footer = open_footer(tail, keys, keys.retriever(src))
    md = footer.metadata
    names = [".".join(cc.meta_data.path_in_schema) if cc.meta_data is not None
             else ".".join(cc.crypto_metadata.ENCRYPTION_WITH_COLUMN_KEY.path_in_schema)
             for cc in md.row_groups[0].columns]
    if values is None:
        table = pq.read_table(src, columns=list(modes))
        values = {}
        offsets = [0]
        for rg in md.row_groups:
            offsets.append(offsets[-1] + rg.num_rows)
        for col in modes:
            column = table.column(col).to_pylist()
            values[col] = [column[offsets[i]:offsets[i + 1]] for i in range(len(md.row_groups))]
    out = bytearray(data[:tail.footer_offset])
    file_aad = footer.file_aad
    retriever = keys.retriever(src)
    for rg_index, rg in enumerate(md.row_groups):
        for col, mode in modes.items():
            if mode not in MODES:
                raise ValueError(f"mode must be one of {MODES}")
            ordinal = names.index(col)
            cc = rg.columns[ordinal]
            crypto = cc.crypto_metadata
            col_key = None
            if crypto is not None and crypto.ENCRYPTION_WITH_COLUMN_KEY is not None:
                col_key = retriever(crypto.ENCRYPTION_WITH_COLUMN_KEY.key_metadata)
            elif crypto is not None:
                col_key = footer.footer_key
            cmd = cc.meta_data
            if cc.encrypted_column_metadata is not None:
                cmd, _ = decrypt_column_metadata(
                    thrift_codec.idl().ColumnMetaData, cc.encrypted_column_metadata,
                    ChunkCryptoContext(col_key, file_aad, rg_index, ordinal), what="ColumnMetaData")
            bf = _filter_for(values[col][rg_index], PhysicalType(cmd.type))
            if mode == "plaintext":
                blob = bf.to_bytes()
            else:
                key = footer.footer_key if mode == "footer_key" else col_key
                blob = bytearray(encrypt_bloom_filter(bf, key, file_aad, rg_index, ordinal))
                if mode == "tampered":
                    blob[-20] ^= 0x01
                blob = bytes(blob)
            offset = len(out)
            out += blob
            cmd.bloom_filter_offset, cmd.bloom_filter_length = offset, len(blob)
            if cc.encrypted_column_metadata is not None:
                cc.encrypted_column_metadata = encrypt_column_metadata(
                    cmd, ChunkCryptoContext(col_key, file_aad, rg_index, ordinal))
                if cc.meta_data is not None:  # parquet-java's redacted plaintext copy
                    cc.meta_data.bloom_filter_offset = offset
                    cc.meta_data.bloom_filter_length = len(blob)
            else:
                cc.meta_data = cmd
    footer_bytes = encode_footer(footer, md)
    out += footer_bytes + struct.pack("<I", len(footer_bytes)) + tail.magic
    with open(dst, "wb") as f:
        f.write(out)


# --- source files written by pyarrow (which refuses Bloom filters on encrypted files) -----------

#: Master keys of the files below: the parquet-testing keys (SPEC_NOTES 10).
MASTER_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}
ROWS = 100
ROWS_PER_GROUP = 50


def key_list() -> str:
    import base64

    return ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in MASTER_KEYS.items())


def key_access() -> Any:
    """A KeyAccess opening the files this module writes (key-list KMS of :data:`MASTER_KEYS`)."""
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess

    return KeyAccess(kms=KeyListKms(key_list()))


def table_values() -> dict[str, list[list[Any]]]:
    """``values[column][row_group]`` of :func:`write_pyarrow_encrypted` files."""
    cols = {"id": list(range(ROWS)), "ssn": [f"ssn-{i:04d}" for i in range(ROWS)],
            "email": [f"user{i}@example.com" for i in range(ROWS)], "city": [f"city-{i % 7}" for i in range(ROWS)]}
    return {name: [v[g:g + ROWS_PER_GROUP] for g in range(0, ROWS, ROWS_PER_GROUP)] for name, v in cols.items()}


def write_pyarrow_encrypted(path: str | os.PathLike[str], *, plaintext_footer: bool = False,
                            uniform: bool = False, kms: Any = None) -> None:
    """id, ssn (key kc1), email (kc2), city: 100 rows in two row groups, footer key kf; ``id`` and
    ``city`` stay plaintext unless ``uniform`` (every column under the footer key). ``kms``
    wraps the keys (default: the key-list KMS of :func:`key_list`)."""
    import pyarrow as pa
    import pyarrow.parquet.encryption as pe

    from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory

    values = table_values()
    table = pa.table({name: pa.array([v for group in groups for v in group]) for name, groups in values.items()})
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms if kms is not None else KeyListKms(key_list())))
    if uniform:
        config = pe.EncryptionConfiguration(footer_key="kf", uniform_encryption=True,
                                            plaintext_footer=plaintext_footer)
    else:
        config = pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["ssn"], "kc2": ["email"]},
                                            plaintext_footer=plaintext_footer)
    props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config)
    pq.write_table(table, os.fspath(path), encryption_properties=props, row_group_size=ROWS_PER_GROUP)


def rekey_column_metadata(src: str | os.PathLike[str], dst: str | os.PathLike[str], column: str,
                          keys: KeyAccess, old_key: bytes, new_key: bytes) -> None:
    """Copy ``src`` with ``column``'s encrypted ColumnMetaData re-encrypted from ``old_key`` to
    ``new_key`` in every row group (``keys`` open the footer), as a writer that reused another
    key for the column would have written it."""
    src, dst = os.fspath(src), os.fspath(dst)
    with open(src, "rb") as f:
        tail = read_tail(f, src)
        f.seek(0)
        body = f.read(tail.footer_offset)
    footer = open_footer(tail, keys, keys.retriever(src))
    for rg_index, rg in enumerate(footer.metadata.row_groups):
        for ordinal, cc in enumerate(rg.columns):
            crypto = cc.crypto_metadata
            if crypto is None or crypto.ENCRYPTION_WITH_COLUMN_KEY is None \
                    or ".".join(crypto.ENCRYPTION_WITH_COLUMN_KEY.path_in_schema) != column:
                continue
            cmd, _ = decrypt_column_metadata(
                thrift_codec.idl().ColumnMetaData, cc.encrypted_column_metadata,
                ChunkCryptoContext(old_key, footer.file_aad, rg_index, ordinal), what="ColumnMetaData")
            cc.encrypted_column_metadata = encrypt_column_metadata(
                cmd, ChunkCryptoContext(new_key, footer.file_aad, rg_index, ordinal))
    footer_bytes = encode_footer(footer, footer.metadata)
    with open(dst, "wb") as f:
        f.write(body + footer_bytes + struct.pack("<I", len(footer_bytes)) + tail.magic)
