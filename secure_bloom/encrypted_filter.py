"""Encrypted Bloom filters: the header and the bitset as two AES-GCM modules.

Spec: Parquet Encryption.md, "Encrypted module serialization" and the module types table;
BloomFilter.md "Encryption". On disk an encrypted filter is::

    len | nonce | GCM(BloomFilterHeader Thrift)  | tag     AAD = file_aad | 8 | rg | col
    len | nonce | GCM(bitset, numBytes bytes)    | tag     AAD = file_aad | 9 | rg | col

Both modules are always AES-GCM (also under AES_GCM_CTR_V1) and use the column's key (the footer
key for columns encrypted with it). The header module carries the exact Thrift bytes we write;
on read, zero padding after the Thrift STOP (parquet-java) is accepted. The bitset module must be
exactly ``28 + numBytes`` long, and its length prefix is checked before the bitset is read.

The public functions take the chunk's key, file AAD and ordinals as parquet-java's API does; each
also accepts them as one :class:`~secure_bloom.crypto.context.ChunkCryptoContext` (``context=``,
with the four positional arguments left out).
"""

from __future__ import annotations

from typing import BinaryIO

from .crypto.context import ChunkCryptoContext
from .crypto.modules import (
    MODULE_OVERHEAD,
    ModuleType,
    ciphertext_length,
    decrypt_module,
    encrypt_module,
    module_aad,
    read_module,
)
from .errors import MalformedBitsetError, MalformedModuleError
from .filter import SplitBlockBloomFilter
from .header import parse_header_plaintext, serialize_header
from .spec import LENGTH_PREFIX, MAX_HEADER_BYTES

__all__ = [
    "encrypt_bloom_filter",
    "decrypt_bloom_filter",
    "decrypt_bloom_filter_with_length",
    "read_encrypted_bloom_filter", "read_encrypted_filter_num_bytes",
    "bloom_filter_aads",
]


def _context(key: bytes | None, file_aad: bytes | None, row_group_ordinal: int | None,
             column_ordinal: int | None, context: ChunkCryptoContext | None) -> ChunkCryptoContext:
    loose = (key, file_aad, row_group_ordinal, column_ordinal)
    if context is not None:
        if any(arg is not None for arg in loose):
            raise TypeError("pass either context= or key, file_aad and both ordinals, not both")
        if not isinstance(context, ChunkCryptoContext):
            raise TypeError(f"context must be a ChunkCryptoContext, got {type(context).__name__}")
        return context
    if key is None or file_aad is None:
        raise TypeError("key and file_aad are required (or context=)")
    return ChunkCryptoContext(key, file_aad, row_group_ordinal, column_ordinal)  # type: ignore[arg-type]


def bloom_filter_aads(file_aad: bytes, row_group_ordinal: int, column_ordinal: int) -> tuple[bytes, bytes]:
    """AADs of the header (type 8) and bitset (type 9) modules of one column chunk."""
    return (module_aad(file_aad, ModuleType.BLOOM_FILTER_HEADER, row_group_ordinal, column_ordinal),
            module_aad(file_aad, ModuleType.BLOOM_FILTER_BITSET, row_group_ordinal, column_ordinal))


def encrypt_bloom_filter(bf: SplitBlockBloomFilter, key: bytes | None = None, file_aad: bytes | None = None,
                         row_group_ordinal: int | None = None, column_ordinal: int | None = None, *,
                         context: ChunkCryptoContext | None = None) -> bytes:
    """Header module followed by bitset module, each with its 4-byte length prefix.

    The result is what ``bloom_filter_offset`` points at; its length is ``bloom_filter_length``.
    """
    if not isinstance(bf, SplitBlockBloomFilter):
        raise TypeError(f"bf must be a SplitBlockBloomFilter, got {type(bf).__name__}")
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    return (encrypt_module(serialize_header(bf.num_bytes), ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_HEADER))
            + encrypt_module(bf.bitset, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_BITSET)))


def _filter_from_plaintexts(header_plain: bytes, bitset: bytes) -> SplitBlockBloomFilter:
    header = parse_header_plaintext(header_plain)
    if len(bitset) != header.num_bytes:
        raise MalformedBitsetError(
            f"decrypted bitset is {len(bitset)} bytes, the header says numBytes={header.num_bytes}")
    return SplitBlockBloomFilter.from_bitset(bitset)


def decrypt_bloom_filter_with_length(data: bytes | memoryview, key: bytes | None = None,
                                     file_aad: bytes | None = None, row_group_ordinal: int | None = None,
                                     column_ordinal: int | None = None, *,
                                     context: ChunkCryptoContext | None = None
                                     ) -> tuple[SplitBlockBloomFilter, int]:
    """Decrypt an encrypted filter at the start of ``data``; returns ``(filter, bytes consumed)``."""
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    view = memoryview(data).cast("B")
    header_plain, used = decrypt_module(view, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_HEADER),
                                        module_type=ModuleType.BLOOM_FILTER_HEADER, max_plaintext=MAX_HEADER_BYTES)
    header = parse_header_plaintext(header_plain)
    rest = view[used:]
    expected = ciphertext_length(header.num_bytes)
    if len(rest) >= LENGTH_PREFIX:
        declared = int.from_bytes(rest[:LENGTH_PREFIX], "little")
        if declared != expected:
            raise MalformedModuleError(
                f"BLOOM_FILTER_BITSET: length prefix {declared}, expected {expected} for numBytes={header.num_bytes}")
    bitset, used2 = decrypt_module(rest, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_BITSET),
                                   module_type=ModuleType.BLOOM_FILTER_BITSET, max_plaintext=header.num_bytes)
    return _filter_from_plaintexts(header_plain, bitset), used + used2


def decrypt_bloom_filter(data: bytes | memoryview, key: bytes | None = None, file_aad: bytes | None = None,
                         row_group_ordinal: int | None = None, column_ordinal: int | None = None, *,
                         context: ChunkCryptoContext | None = None) -> SplitBlockBloomFilter:
    """Decrypt an encrypted filter that fills ``data`` exactly (trailing bytes are an error)."""
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    bf, used = decrypt_bloom_filter_with_length(data, context=ctx)
    if used != len(memoryview(data).cast("B")):
        raise MalformedModuleError(f"{len(data) - used} trailing bytes after the encrypted Bloom filter")
    return bf


def _read_header_module(stream: BinaryIO, offset: int, ctx: ChunkCryptoContext,
                        length: int | None) -> tuple[bytes, int]:
    """Decrypt the header module at ``offset``; ``(header plaintext, numBytes)``. Checks
    ``length`` against numBytes and leaves the stream at the bitset module."""
    if offset < 0:
        raise MalformedModuleError(f"negative Bloom filter offset {offset}")
    if length is not None and length < 2 * MODULE_OVERHEAD:
        raise MalformedModuleError(f"bloom_filter_length {length} is too small for two encrypted modules")
    stream.seek(offset)
    header_plain, used = read_module(stream, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_HEADER),
                                     module_type=ModuleType.BLOOM_FILTER_HEADER, max_plaintext=MAX_HEADER_BYTES)
    header = parse_header_plaintext(header_plain)
    expected = ciphertext_length(header.num_bytes)
    if length is not None and length != used + LENGTH_PREFIX + expected:
        raise MalformedModuleError(
            f"bloom_filter_length {length} does not match the modules ({used} + {LENGTH_PREFIX + expected} bytes)")
    return header_plain, header.num_bytes


def read_encrypted_filter_num_bytes(stream: BinaryIO, offset: int, key: bytes | None = None,
                                    file_aad: bytes | None = None, row_group_ordinal: int | None = None,
                                    column_ordinal: int | None = None, *, length: int | None = None,
                                    context: ChunkCryptoContext | None = None) -> int:
    """numBytes of an encrypted filter, from its authenticated header module alone (the bitset is
    not read: sizes for ``inspect`` cost a few bytes per chunk, not the bitset)."""
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    return _read_header_module(stream, offset, ctx, length)[1]


def read_encrypted_bloom_filter(stream: BinaryIO, offset: int, key: bytes | None = None,
                                file_aad: bytes | None = None, row_group_ordinal: int | None = None,
                                column_ordinal: int | None = None, *, length: int | None = None,
                                context: ChunkCryptoContext | None = None) -> SplitBlockBloomFilter:
    """Read an encrypted filter from a seekable binary file at ``offset``, reading no more than needed.

    The header module is read first; the bitset module's length prefix must then be exactly
    ``28 + numBytes`` before its body is read. ``length`` (``bloom_filter_length``, absent in files
    before parquet-java 1.14) must, if given, equal the bytes the two modules take.
    """
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    header_plain, num_bytes = _read_header_module(stream, offset, ctx, length)
    bitset, _ = read_module(stream, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_BITSET),
                            module_type=ModuleType.BLOOM_FILTER_BITSET, max_plaintext=num_bytes,
                            expected_length=ciphertext_length(num_bytes))
    return _filter_from_plaintexts(header_plain, bitset)
