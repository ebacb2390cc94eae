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
from secure_bloom.encrypted_filter import encrypt_bloom_filter
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.hashing import PhysicalType
from secure_bloom.modules import ModuleType
from secure_bloom.parquet.crypto_context import column_metadata_aad, decrypt_thrift_module, encrypt_thrift_module
from secure_bloom.parquet.footer import encode_footer, open_footer
from secure_bloom.parquet.keys import KeyAccess
from secure_bloom.parquet.tail import read_tail

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
                cmd, _, _ = decrypt_thrift_module(
                    thrift_codec.idl().ColumnMetaData, cc.encrypted_column_metadata, col_key,
                    column_metadata_aad(file_aad, rg_index, ordinal), ModuleType.COLUMN_META_DATA,
                    what="ColumnMetaData")
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
                cc.encrypted_column_metadata = encrypt_thrift_module(
                    cmd, col_key, column_metadata_aad(file_aad, rg_index, ordinal))
                if cc.meta_data is not None:  # parquet-java's redacted plaintext copy
                    cc.meta_data.bloom_filter_offset = offset
                    cc.meta_data.bloom_filter_length = len(blob)
            else:
                cc.meta_data = cmd
    footer_bytes = encode_footer(footer, md)
    out += footer_bytes + struct.pack("<I", len(footer_bytes)) + tail.magic
    with open(dst, "wb") as f:
        f.write(out)
