"""The physical floor of a cold lookup (issue 29): the least any reader of these files must do.

For one lookup over encrypted files, per file: ``os.pread`` of exactly the byte ranges our
pruner reads (the tail with the footer, then the filters outside it), AES-GCM decryption
(cryptography's ``AESGCM``) of the same modules (the footer, each consulted chunk's
ColumnMetaData, each filter's header and bitset), and the two key unwraps (footer key and column
key: the key list KMS unwraps the KEK, then the KEK unwraps the data key). For a key whose
filters say "maybe", also the pread of the surviving row groups' column chunks and the AES-GCM of
the encrypted chunk's pages (decompression and decoding are not counted: no floor of theirs).

Everything the floor needs to know (the ranges, where each module lies, its AAD, the wrapped
keys) is prepared from the file's footer outside the timed region, through the public
:class:`~secure_bloom.parquet.ParquetBloomReader` API; the timed :meth:`Floor.run` does the
physical work alone, in one thread.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["FilePlan", "Floor", "plan_file", "batched_byte_work"]

_PREFIX = 4  # a module's length prefix
_NONCE = 12


@dataclass
class _Unwrap:
    """One double-wrapped key: the KMS unwraps ``wrapped_kek`` under ``master``; the KEK opens
    ``wrapped_dek`` (nonce | ciphertext | tag, AAD: the raw KEK id)."""

    master: str
    wrapped_kek: str
    wrapped_dek: bytes = field(repr=False)
    kek_id: bytes


@dataclass
class _Module:
    """A module in read ``read`` at ``start`` (its length prefix), of ``length`` body bytes,
    under key ``key`` (0: footer key, 1: column key)."""

    read: int
    start: int
    length: int
    key: int
    aad: bytes = field(repr=False)


@dataclass
class FilePlan:
    """What the floor does for one file: its reads, modules and unwraps (metadata), and per row
    group the data reads and page modules a surviving row group adds."""

    path: str
    reads: list[tuple[int, int]]
    modules: list[_Module]
    #: ColumnMetaData modules (copies of the bytes inside the decrypted footer) and their AADs
    metadata: list[tuple[bytes, bytes]]
    unwraps: list[_Unwrap]
    #: row group -> (reads, modules over those reads, indexed from 0)
    row_groups: dict[int, tuple[list[tuple[int, int]], list[_Module]]] = field(default_factory=dict)


def _unwrap_of(key_metadata: bytes) -> _Unwrap:
    from secure_bloom.kms.material import KeyMetadata

    material = KeyMetadata.from_bytes(bytes(key_metadata)).material
    if material is None or not material.double_wrapping:
        raise ValueError("the floor expects internal, double-wrapped key material (pyarrow's default)")
    return _Unwrap(material.master_key_id, str(material.wrapped_kek), base64.b64decode(material.wrapped_dek),
                   base64.b64decode(str(material.kek_id)))


def _locate(reads: Sequence[tuple[int, int]], offset: int, n: int) -> tuple[int, int]:
    """(index of the read holding [offset, offset + n), offset within it)."""
    for i, (start, length) in enumerate(reads):
        if start <= offset and offset + n <= start + length:
            return i, offset - start
    raise ValueError(f"no read holds bytes {offset}..{offset + n}")


def _modules_at(fd: int, reads: list[tuple[int, int]], offset: int, count: int, key: int,
                aads: Sequence[bytes]) -> tuple[list[_Module], int]:
    """``count`` consecutive modules from ``offset`` (prefixes read from the file); returns them
    and the offset after the last."""
    out = []
    for i in range(count):
        length = int.from_bytes(os.pread(fd, _PREFIX, offset), "little")
        read, start = _locate(reads, offset, _PREFIX + length)
        out.append(_Module(read, start, length, key, aads[i]))
        offset += _PREFIX + length
    return out, offset


def _chunk_pages(fd: int, reader: Any, chunk: Any, reads: list[tuple[int, int]]) -> list[_Module]:
    """The page modules of an encrypted chunk (dictionary page header and page, then data page
    header and page per page), walked by their length prefixes over the chunk's bytes."""
    from secure_bloom.crypto.modules import ModuleType

    meta = reader.column_metadata(chunk)
    ctx = reader.crypto_context(chunk)
    offset, length = _chunk_span(meta)
    end, out = offset + length, []
    if meta.dictionary_page_offset is not None:
        mods, offset = _modules_at(fd, reads, offset, 2, 1, [ctx.aad(ModuleType.DICTIONARY_PAGE_HEADER),
                                                            ctx.aad(ModuleType.DICTIONARY_PAGE)])
        out += mods
    page = 0
    while offset < end:
        mods, offset = _modules_at(fd, reads, offset, 2, 1, [ctx.aad(ModuleType.DATA_PAGE_HEADER, page),
                                                            ctx.aad(ModuleType.DATA_PAGE, page)])
        out += mods
        page += 1
    return out


def _chunk_span(meta: Any) -> tuple[int, int]:
    start = meta.dictionary_page_offset if meta.dictionary_page_offset is not None else meta.data_page_offset
    return int(start), int(meta.total_compressed_size)


def plan_file(path: str, keys: Any, column: str) -> FilePlan:
    """The floor's plan of a lookup on ``column`` in ``path``: every filter of the column read
    and decrypted (a lookup the statistics cannot prune), as the pruner reads them
    (``reader.read_ranges``); each row group's data reads for when it survives."""
    from secure_bloom.crypto.modules import ModuleType, footer_aad
    from secure_bloom.parquet import ParquetBloomReader

    with ParquetBloomReader(path, keys) as reader:
        chunks = reader.column_chunks(column)
        for chunk in chunks:
            reader.bloom_filter(chunk.row_group, column)
        reads = [(int(o), int(n)) for o, n in reader.read_ranges]
        footer = reader.footer
        size = os.path.getsize(path)
        fd = os.open(path, os.O_RDONLY)
        try:
            tail = os.pread(fd, 8, size - 8)
            if tail[4:] != b"PARE":
                raise ValueError(f"{path}: the floor is for files with an encrypted footer")
            region = int.from_bytes(tail[:4], "little")
            body = os.pread(fd, region, size - 8 - region)
            # the encrypted footer module ends the region, after the plaintext FileCryptoMetaData
            at = next(p for p in range(region - _PREFIX)
                      if int.from_bytes(body[p:p + _PREFIX], "little") == region - p - _PREFIX)
            footer_offset = size - 8 - region + at
            read, start = _locate(reads, footer_offset, region - at)
            modules = [_Module(read, start, region - at - _PREFIX, 0, footer_aad(footer.require_file_aad()))]
            metadata = []
            for chunk in chunks:
                ctx = reader.crypto_context(chunk)
                if chunk.encrypted_metadata is not None:
                    metadata.append((bytes(chunk.encrypted_metadata), ctx.aad(ModuleType.COLUMN_META_DATA)))
                location = reader.filter_location(chunk)
                if location is not None:
                    mods, _ = _modules_at(fd, reads, location.offset, 2, 1,
                                          [ctx.aad(ModuleType.BLOOM_FILTER_HEADER),
                                           ctx.aad(ModuleType.BLOOM_FILTER_BITSET)])
                    modules += mods
            unwraps = [_unwrap_of(footer.footer_key_metadata), _unwrap_of(chunks[0].key_metadata)]
            plan = FilePlan(path, reads, modules, metadata, unwraps)
            for rg in range(reader.num_row_groups):
                spans = [_chunk_span(reader.column_metadata(c)) for c in reader.column_chunks() if c.row_group == rg]
                rg_reads = sorted(spans)
                pages = _chunk_pages(fd, reader, chunks[rg], rg_reads) if chunks[rg].encrypted else []
                plan.row_groups[rg] = (rg_reads, pages)
        finally:
            os.close(fd)
    return plan


def _open(aead: AESGCM, buffer: memoryview, module: _Module) -> None:
    body = buffer[module.start + _PREFIX:module.start + _PREFIX + module.length]
    aead.decrypt(body[:_NONCE], body[_NONCE:], module.aad)


class Floor:
    """The physical floor of lookups over ``plans`` (one per file), with ``kms`` (the key list
    KMS the files' keys are wrapped under)."""

    def __init__(self, plans: Sequence[FilePlan], kms: Any) -> None:
        self.plans = list(plans)
        self.kms = kms

    def run(self, surviving: Sequence[Sequence[int]] | None = None) -> int:
        """One lookup's physical work; ``surviving``: per file, the row groups whose data is read
        too. Returns the bytes read."""
        total = 0
        for i, plan in enumerate(self.plans):
            aeads = []
            for unwrap in plan.unwraps:
                kek = self.kms.unwrap_key(unwrap.wrapped_kek, unwrap.master)
                dek = AESGCM(kek).decrypt(unwrap.wrapped_dek[:_NONCE], unwrap.wrapped_dek[_NONCE:], unwrap.kek_id)
                aeads.append(AESGCM(dek))
            fd = os.open(plan.path, os.O_RDONLY)
            try:
                buffers = [memoryview(os.pread(fd, n, offset)) for offset, n in plan.reads]
                for group in (surviving[i] if surviving is not None else ()):
                    rg_reads, pages = plan.row_groups[group]
                    data = [memoryview(os.pread(fd, n, offset)) for offset, n in rg_reads]
                    for module in pages:
                        _open(aeads[module.key], data[module.read], module)
                    total += sum(n for _, n in rg_reads)
            finally:
                os.close(fd)
            for module in plan.modules:
                _open(aeads[module.key], buffers[module.read], module)
            column = aeads[1]
            for module, aad in plan.metadata:
                column.decrypt(module[_PREFIX:_PREFIX + _NONCE], module[_PREFIX + _NONCE:], aad)
            total += sum(n for _, n in plan.reads)
        return total


def batched_byte_work(plan: FilePlan, kms: Any) -> Any:
    """The AES-GCM of ``plan``'s modules (footer, ColumnMetaData, filters) in one native batch per
    key (:func:`secure_bloom.crypto.gcm.decrypt_many`, the extension's call), the bytes read and the
    keys unwrapped beforehand: what the byte work of one file's lookup costs once no Python runs
    per module. Returns a callable doing it once; None when the native AES-GCM is not built or a
    module does not open (a failed tag: no figure of work that fails)."""
    from secure_bloom.crypto.gcm import GcmKey, decrypt_many

    keys = []
    for unwrap in plan.unwraps:
        kek = kms.unwrap_key(unwrap.wrapped_kek, unwrap.master)
        keys.append(GcmKey(AESGCM(kek).decrypt(unwrap.wrapped_dek[:_NONCE], unwrap.wrapped_dek[_NONCE:],
                                               unwrap.kek_id)))
    fd = os.open(plan.path, os.O_RDONLY)
    try:
        buffers = [os.pread(fd, n, offset) for offset, n in plan.reads]
    finally:
        os.close(fd)
    batches: dict[int, tuple[list[bytes], list[bytes]]] = {0: ([], []), 1: ([], [])}
    for module in plan.modules:
        start = module.start
        batches[module.key][0].append(buffers[module.read][start:start + _PREFIX + module.length])
        batches[module.key][1].append(module.aad)
    for module_bytes, aad in plan.metadata:
        batches[1][0].append(module_bytes)
        batches[1][1].append(aad)
    work = [(keys[k], mods, aads) for k, (mods, aads) in batches.items() if mods]
    if any(decrypt_many(key, mods, aads, 1 << 27) is None for key, mods, aads in work):
        return None

    def run() -> None:
        for key, mods, aads in work:
            decrypt_many(key, mods, aads, 1 << 27)
    return run
