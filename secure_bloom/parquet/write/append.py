"""Append Bloom filters to a Parquet file and rewrite its footer: the step attach and the writer share.

Spec: BloomFilter.md "File Format", Encryption.md (SPEC_NOTES 4-6). Given a file opened with
:class:`~secure_bloom.parquet.file.reader.ParquetBloomReader` and one filter per chosen chunk,
:func:`filter_tail` returns what follows the file's pages (``[0, footer_offset)``, kept as
they are)::

    filters     one per chunk: header + bitset, or for an encrypted column the header module
                (type 8) and bitset module (type 9), GCM with the column's key (the footer key
                for a column encrypted with it), AAD = file_aad | type | rg ordinal | column ordinal
    footer      the file's FileMetaData with bloom_filter_offset / _length set: each encrypted
                ColumnMetaData re-encrypted (type 1) with its column key, the footer re-encrypted
                (PARE) or re-signed (plaintext footer) with the footer key
    footer length | magic

Before anything is produced the parsed footer (and each decrypted ColumnMetaData) must
re-serialise to its original bytes: a field this library does not know would otherwise be lost.
:func:`cross_check_statistics` checks a new filter against the chunk's stored min/max, and
:func:`verify_filters` re-opens the written file and reads every new filter back.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ... import thrift_codec
from ...errors import (
    AuthenticationError,
    MalformedInputError,
    NotParquetError,
    ParquetFileError,
    UnsupportedParquetFeatureError,
)
from ...filter import SplitBlockBloomFilter
from ...kms.sidecar import KeyMaterialStore
from ...types import PhysicalType
from ...values.physical import hash_value, hash_values
from ..file.chunk import ColumnChunk
from ..file.crypto_context import encrypt_column_metadata
from ..file.filter_io import serialize_chunk_filter
from ..file.footer import encode_footer
from ..file.keys import KeyAccess
from ..file.reader import ParquetBloomReader
from ..file.schema import ColumnInfo

__all__ = ["NewFilter", "FilterTail", "filter_tail", "check_round_trip", "cross_check_statistics",
           "dictionary_hashes", "stored_bounds", "verify_filters", "sample_of", "SAMPLE_SIZE"]

#: Hashes of inserted values kept per filter, looked up again in the filter read back.
SAMPLE_SIZE = 64


@dataclass(frozen=True)
class NewFilter:
    """A filter to write for ``chunk``; ``sample`` holds hashes of values it must contain.

    Parameters
    ----------
    chunk : ColumnChunk
        The column chunk the filter belongs to, as the reader describes it (its metadata gets
        the filter's offset and length).
    bf : SplitBlockBloomFilter
        The filter, built from every value of the chunk.
    sample : numpy.ndarray of uint64
        Up to :data:`SAMPLE_SIZE` of those hashes (:func:`sample_of`): the written filter is
        read back and each must be found in it before the file is published.
    """

    chunk: ColumnChunk
    bf: SplitBlockBloomFilter
    sample: npt.NDArray[np.uint64]


def sample_of(hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """Up to :data:`SAMPLE_SIZE` hashes spread over ``hashes``.

    Parameters
    ----------
    hashes : numpy.ndarray of uint64
        A chunk's hashes.

    Returns
    -------
    numpy.ndarray of uint64
        The sample.

    Raises
    ------
    None
        Nothing of its own.
    """
    step = max(1, hashes.size // SAMPLE_SIZE)
    return np.ascontiguousarray(hashes[::step][:SAMPLE_SIZE])


@dataclass(frozen=True)
class FilterTail:
    """What follows the pages: ``blobs[i]`` (the i-th filter) at ``offsets[i]``, then ``tail``
    (footer, its 4-byte length, magic). ``start`` is where the first filter goes (the old
    footer's offset) and ``size`` the whole file's size.

    Parameters
    ----------
    start : int
        Where the first filter goes: the old footer's offset.
    blobs : tuple of bytes
        The filters as stored (header and bitset; each module with its length prefix when
        encrypted), in file order.
    offsets : tuple of int
        Where each blob starts (the ``bloom_filter_offset`` the new footer records).
    tail : bytes
        The new footer (encrypted or signed as the file's was), its 4-byte length and the magic.
    """

    start: int
    blobs: tuple[bytes, ...]
    offsets: tuple[int, ...]
    tail: bytes

    @property
    def size(self) -> int:
        """The size of the file once the filters and the footer are appended."""
        return self.start + sum(len(b) for b in self.blobs) + len(self.tail)

    def chunks(self) -> list[bytes]:
        """The bytes to write from :attr:`start` on, in order.

        Returns
        -------
        list of bytes
            The blobs, then the tail.

        Raises
        ------
        None
            Nothing of its own.
        """
        return [*self.blobs, self.tail]



def check_round_trip(thrift_obj: Any, original: bytes, what: str) -> None:
    """Refuse a structure that does not re-serialise to ``original`` (unknown fields would be lost).

    Parameters
    ----------
    thrift_obj : object
        A parsed Thrift struct.
    original : bytes
        The bytes it was parsed from.
    what : str
        What messages call it.

    Raises
    ------
    secure_bloom.errors.UnsupportedParquetFeatureError
        It does not re-serialise to ``original``.
    """
    if thrift_codec.serialize(thrift_obj) != bytes(original):
        raise UnsupportedParquetFeatureError(
            f"{what} does not re-serialise to its original bytes (it holds fields this version does not "
            "know); rewriting it would drop them, so nothing was written")


def _new_metadata(reader: ParquetBloomReader, filters: Sequence[NewFilter], offsets: Sequence[int],
                  lengths: Sequence[int]) -> Any:
    """A fresh FileMetaData with every new filter's offset and length set."""
    m = thrift_codec.idl()
    footer = reader.footer
    # every struct decoded (the reader's footer keeps each ColumnMetaData as its bytes until read)
    metadata, _ = thrift_codec.parse(m.FileMetaData, footer.metadata_thrift)
    check_round_trip(metadata, footer.metadata_thrift, "the footer FileMetaData")
    for new, offset, length in zip(filters, offsets, lengths):
        chunk = new.chunk
        cc = metadata.row_groups[chunk.row_group].columns[chunk.column.ordinal]
        if cc.encrypted_column_metadata is not None:
            full = reader.column_metadata(chunk)
            original = reader.column_metadata_thrift(chunk) or b""
            check_round_trip(full, original, f"the encrypted ColumnMetaData of {chunk.where}")
            meta, _ = thrift_codec.parse(m.ColumnMetaData, original)
            meta.bloom_filter_offset, meta.bloom_filter_length = offset, length
            cc.encrypted_column_metadata = encrypt_column_metadata(meta, reader.crypto_context(chunk))
        if cc.meta_data is not None:
            # The plaintext (or, beside encrypted_column_metadata, redacted) metadata: parquet-java
            # keeps the filter's offset and length visible there.
            cc.meta_data.bloom_filter_offset, cc.meta_data.bloom_filter_length = offset, length
    return metadata


def filter_tail(reader: ParquetBloomReader, filters: Sequence[NewFilter]) -> FilterTail:
    """The filters (encrypted where their column is) and the rewritten footer that replace
    ``reader``'s footer; needs the footer key of an encrypted or signed footer and the key of
    every encrypted chunk in ``filters``.

    Parameters
    ----------
    reader : ParquetBloomReader
        The source, open.
    filters : sequence of NewFilter
        The filters to add.

    Returns
    -------
    FilterTail
        What replaces the footer.

    Raises
    ------
    secure_bloom.errors.MissingKeyError
        A footer or chunk key is not available.
    secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
        A plaintext filter for an encrypted column.
    """
    footer = reader.footer
    start = offset = reader.tail.footer_offset
    blobs: list[bytes] = []
    offsets: list[int] = []
    for new in filters:
        chunk = new.chunk
        blob = serialize_chunk_filter(
            new.bf, column=chunk.column.path, encrypted=chunk.encrypted,
            key=reader.key_for(chunk) if chunk.encrypted else None,
            file_aad=footer.file_aad, row_group_ordinal=chunk.row_group_ordinal, column_ordinal=chunk.column.ordinal)
        blobs.append(blob)
        offsets.append(offset)
        offset += len(blob)
    footer_bytes = encode_footer(footer, _new_metadata(reader, filters, offsets, [len(b) for b in blobs]))
    tail = footer_bytes + struct.pack("<I", len(footer_bytes)) + reader.tail.magic
    return FilterTail(start=start, blobs=tuple(blobs), offsets=tuple(offsets), tail=tail)


_STORED_WIDTH = {PhysicalType.INT32: 4, PhysicalType.INT64: 8, PhysicalType.FLOAT: 4, PhysicalType.DOUBLE: 8,
                 PhysicalType.INT96: 12}


def stored_bounds(statistics: Any, info: ColumnInfo) -> list[bytes]:
    """The chunk's min and max as the file stores them (plain encoding, no length prefix): values
    the chunk holds, read without pyarrow. Left out: inexact (truncated) bounds, values of the
    wrong width, and floating-point zeros and NaN (writers put -0.0 / +0.0 in bounds in place of
    either zero, and leave NaN out).

    Parameters
    ----------
    statistics : Statistics
        The chunk's footer statistics.
    info : ColumnInfo
        The column.

    Returns
    -------
    list of bytes
        Exact stored bounds.

    Raises
    ------
    None
        Nothing of its own.
    """
    if statistics is None:
        return []
    width = _STORED_WIDTH.get(info.physical_type, info.type_length)
    is_float = info.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE) or info.logical_type == "FLOAT16"
    out: list[bytes] = []
    for raw, exact in ((statistics.min_value, statistics.is_min_value_exact),
                       (statistics.max_value, statistics.is_max_value_exact),
                       (statistics.min, None), (statistics.max, None)):
        if raw is None or exact is False or (width is not None and len(raw) != width):
            continue
        raw = bytes(raw)
        if is_float:
            number = np.frombuffer(raw, dtype={2: "<f2", 4: "<f4", 8: "<f8"}[len(raw)])[0]
            if number == 0 or np.isnan(number):
                continue
        out.append(raw)
    return out


def dictionary_hashes(arrays: Sequence[pa.Array | pa.ChunkedArray], info: ColumnInfo) -> npt.NDArray[np.uint64] | None:
    """The hashes of the dictionary values of those ``arrays`` (stored form,
    :func:`~secure_bloom.values.arrow.stored_form`) that are dictionary-encoded, distinct and
    sorted; None if none is.

    Parameters
    ----------
    arrays : sequence of pyarrow.Array or pyarrow.ChunkedArray
        A chunk's leaf values, as hashed into its filter.
    info : ColumnInfo
        The column (physical type and width).

    Returns
    -------
    numpy.ndarray of uint64 or None
        What :func:`cross_check_statistics` takes as ``dictionary``.

    Raises
    ------
    InvalidValueError
        A dictionary value that cannot be hashed for the column.
    """
    chunks = [c for a in arrays for c in (a.chunks if isinstance(a, pa.ChunkedArray) else [a])]
    parts = [hash_values(c.dictionary, info.physical_type, type_length=info.type_length)
             for c in chunks if pa.types.is_dictionary(c.type)]
    return np.unique(np.concatenate(parts)) if parts else None


def cross_check_statistics(bf: SplitBlockBloomFilter, statistics: Any, info: ColumnInfo, error: type[ParquetFileError],
                           source: str = "the values pyarrow read", *,
                           dictionary: npt.NDArray[np.uint64] | None = None) -> None:
    """The chunk's stored min and max (footer statistics: the physical bytes as written) must be
    "maybe" in the new filter: a guard, independent of the Arrow values hashed, against a
    conversion that does not give back what the file holds.

    A bound may be wider than the values: pyarrow gives a dictionary-encoded chunk that holds
    nulls the bounds of its whole dictionary, values no row of the chunk may hold. A bound
    missing from the filter is accepted when it is one of those dictionary values
    (``dictionary``: their hashes, :func:`dictionary_hashes`, made by the same conversion as the
    filter's: a conversion that does not give back the stored bytes matches neither).

    Parameters
    ----------
    bf : SplitBlockBloomFilter
        The new filter of the chunk.
    statistics : Statistics or None
        The chunk's footer statistics (Thrift).
    info : ColumnInfo
        The column.
    error : type
        The error to raise.
    source : str
        What the filter was built from, for the message.
    dictionary : numpy.ndarray of uint64, optional
        Sorted hashes of the dictionary values the chunk was encoded with.

    Raises
    ------
    ParquetFileError
        ``error``: a stored bound is in neither the filter nor the dictionary.
    """
    for raw in stored_bounds(statistics, info):
        hashed = hash_value(raw, PhysicalType.BYTE_ARRAY)
        if not bf.check_hash(hashed) and not _among(dictionary, hashed):
            raise error(f"column {info.path!r} ({info.type_name}): a value the chunk stores (its statistics' "
                        f"min or max, 0x{raw.hex()[:64]}) is not in the filter built from {source}; "
                        "refusing to write a wrong filter")


def _among(sorted_hashes: npt.NDArray[np.uint64] | None, hashed: int) -> bool:
    if sorted_hashes is None or not sorted_hashes.size:
        return False
    at = int(np.searchsorted(sorted_hashes, np.uint64(hashed)))
    return at < sorted_hashes.size and int(sorted_hashes[at]) == hashed


def verify_filters(path: str | Path, keys: KeyAccess, key_material_file: str | KeyMaterialStore,
                   filters: Sequence[NewFilter],
                   kept: Mapping[tuple[int, int], SplitBlockBloomFilter], error: type[ParquetFileError]) -> int:
    """Re-open the written file (its external key material beside ``key_material_file``, or
    that store itself): every new filter must read back identical and contain its
    sample, every kept filter must be unchanged. Returns the number of sample hashes checked.

    Any failure raises ``error`` naming what failed, also bytes that no longer parse or
    authenticate (the footer, a filter): then with no exception chained, so nothing met while
    decrypting rides along. A key that cannot be had (KMS down, access denied) is raised as is.

    Parameters
    ----------
    path : str or pathlib.Path
        The file written.
    keys : KeyAccess
        Keys that open it.
    key_material_file : str or KeyMaterialStore
        Its external key material.
    filters : sequence of NewFilter
        The filters added.
    kept : mapping
        (row group, column) -> the filters kept.
    error : type
        The error class to raise.

    Returns
    -------
    int
        Sample hashes checked.

    Raises
    ------
    secure_bloom.errors.ParquetFileError
        ``error`` (the class given), naming what failed.
    """
    checked, part = 0, "the footer"
    try:
        store, beside = (key_material_file, None) if isinstance(key_material_file, KeyMaterialStore) \
            else (None, key_material_file)
        with ParquetBloomReader(path, keys, key_material_file=beside, key_material=store) as check:
            for new in filters:
                chunk = new.chunk
                part = f"the filter of row group {chunk.row_group}, column {chunk.column.path!r}"
                got = check.bloom_filter(chunk.row_group, chunk.column.ordinal)
                if got is None or got != new.bf:
                    raise error(f"verification failed: {part} did not read back identical")
                if new.sample.size and not bool(got.check_hashes(new.sample).all()):
                    raise error(f"verification failed: inserted values of column {chunk.column.path!r} "
                                f"are not found in row group {chunk.row_group}")
                checked += int(new.sample.size)
            for (rg, col), bf in kept.items():
                part = f"the existing filter of row group {rg}, column {col}"
                if check.bloom_filter(rg, col) != bf:
                    raise error(f"verification failed: {part} changed")
            return checked
    except (MalformedInputError, AuthenticationError, NotParquetError, UnsupportedParquetFeatureError) as e:
        detail = str(e).replace(os.fspath(path), "the file written")  # not the temporary file's /proc path
        failure = f"{part} of the file written does not read back: {type(e).__name__}: {detail}"
    raise error(f"verification failed: {failure}; nothing was published")  # outside except: nothing chained
