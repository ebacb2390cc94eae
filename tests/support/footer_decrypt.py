"""Test helper: the smallest reader of an encrypted-footer Parquet file ("PARE"), for the tests.

SPEC_NOTES 5: the tail of such a file is::

    FileCryptoMetaData (plaintext Thrift) | footer module (GCM, type 0) | len (4 bytes LE) | "PARE"

``len`` counts the FileCryptoMetaData and the footer module. The footer module's AAD is
``file_aad | 0x00`` with ``file_aad = aad_prefix | aad_file_unique`` (SPEC_NOTES 4). Columns with
their own key carry their ColumnMetaData only inside ``encrypted_column_metadata``, a GCM module
of type 1 whose AAD has the row-group and column ordinals.

Only what the tests need: it reads bytes already in memory and knows nothing about KMSs (keys are
passed in). The library's full file reader (``secure_bloom.parquet``) replaces this helper.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from secure_bloom import thrift_codec
from secure_bloom.crypto.modules import ModuleType, decrypt_module, footer_aad, module_aad

MAGIC_ENCRYPTED = b"PARE"


@dataclass(frozen=True)
class EncryptedFooter:
    """The decrypted footer of a file, and the file AAD every other module of it uses."""

    file_aad: bytes
    crypto_metadata: Any
    file_metadata: Any


def decrypt_encrypted_footer(data: bytes, footer_key: bytes, aad_prefix: bytes = b"") -> EncryptedFooter:
    """Parse FileCryptoMetaData and decrypt the FileMetaData of a whole "PARE" file in ``data``.

    ``aad_prefix`` is needed only when the file does not store its prefix (supply_aad_prefix).
    """
    if len(data) < 12 or data[:4] != MAGIC_ENCRYPTED or data[-4:] != MAGIC_ENCRYPTED:
        raise ValueError("not an encrypted-footer Parquet file (no PARE magic)")
    (tail_len,) = struct.unpack_from("<I", data, len(data) - 8)
    tail_start = len(data) - 8 - tail_len
    if tail_start < 4:
        raise ValueError(f"footer length {tail_len} does not fit a {len(data)}-byte file")
    tail = data[tail_start:len(data) - 8]
    m = thrift_codec.idl()
    crypto, used = thrift_codec.parse(m.FileCryptoMetaData, tail)
    algorithm = crypto.encryption_algorithm.AES_GCM_V1 or crypto.encryption_algorithm.AES_GCM_CTR_V1
    prefix = algorithm.aad_prefix if algorithm.aad_prefix is not None else aad_prefix
    file_aad = bytes(prefix) + bytes(algorithm.aad_file_unique or b"")
    plaintext, consumed = decrypt_module(tail[used:], footer_key, footer_aad(file_aad),
                                         module_type=ModuleType.FOOTER)
    if used + consumed != len(tail):
        raise ValueError(f"{len(tail) - used - consumed} stray bytes after the footer module")
    file_metadata, _ = thrift_codec.parse(m.FileMetaData, plaintext)
    return EncryptedFooter(file_aad=file_aad, crypto_metadata=crypto, file_metadata=file_metadata)


def decrypt_column_metadata(footer: EncryptedFooter, row_group: int, column: int, column_key: bytes) -> Any:
    """The ColumnMetaData of one chunk, from its encrypted_column_metadata (module type 1)."""
    chunk = footer.file_metadata.row_groups[row_group].columns[column]
    if chunk.encrypted_column_metadata is None:
        if chunk.meta_data is None:
            raise ValueError(f"column chunk rg{row_group}/col{column} has no metadata")
        return chunk.meta_data
    aad = module_aad(footer.file_aad, ModuleType.COLUMN_META_DATA, row_group, column)
    plaintext, _ = decrypt_module(chunk.encrypted_column_metadata, column_key, aad,
                                  module_type=ModuleType.COLUMN_META_DATA)
    meta, _ = thrift_codec.parse(thrift_codec.idl().ColumnMetaData, plaintext)
    return meta
