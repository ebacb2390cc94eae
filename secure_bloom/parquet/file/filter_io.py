"""One chunk's Bloom filter on disk: read it, classify its stored bytes, serialise it for writing.

Spec: BloomFilter.md "File Format" (plaintext: Thrift ``BloomFilterHeader`` then the bitset;
without ``bloom_filter_length``, in files before parquet-java 1.14, the header says how much
follows) and Encryption.md "Encrypted module serialization" (header module type 8, bitset module
type 9: ``len | nonce | ciphertext | tag`` each, GCM with the column's key and AAD
``file_aad | type | rg ordinal | column ordinal``; SPEC_NOTES 3-5).

* :func:`read_chunk_filter` / :func:`read_chunk_filter_num_bytes`: a chunk's filter (or its size
  from the header alone) from an open file, after checking it lies inside the data region; with
  ``bloom_filter_length`` (up to :data:`~secure_bloom.encrypted_filter.COALESCED_FILTER_BYTES`)
  header and bitset come in one read (one request on an object store); an encrypted chunk whose bytes are a *plaintext* filter raises
  :class:`~secure_bloom.errors.PlaintextFilterOnEncryptedColumnError` (the leak arrow-rs writes).
* :func:`classify_filter_bytes` / :func:`read_filter_storage`: plaintext, encrypted or garbage,
  judged from the framing alone (no key), for the audit and ``inspect``.
* :func:`serialize_chunk_filter`: the bytes attach writes; never a plaintext filter for an
  encrypted column.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

from ...encrypted_filter import (
    COALESCED_FILTER_BYTES,
    encrypt_bloom_filter,
    read_encrypted_bloom_filter,
    read_encrypted_filter_num_bytes,
)
from ...errors import (
    MalformedBitsetError,
    MalformedHeaderError,
    MalformedInputError,
    MalformedModuleError,
    MalformedThriftError,
    PlaintextFilterOnEncryptedColumnError,
)
from ...fileio import RecordingFile
from ...filter import SplitBlockBloomFilter
from ...crypto.context import ChunkCryptoContext
from ...header import parse_header, validate_num_bytes
from ...spec import LENGTH_PREFIX, MAX_HEADER_BYTES, MIN_BITSET_BYTES, NONCE_LENGTH, SPEC_MAX_BITSET_BYTES, TAG_LENGTH
from ...types import FilterForm
from .chunk import ColumnChunk, FilterLocation

__all__ = ["FilterStorage", "classify_filter_bytes", "read_filter_storage", "read_chunk_filter",
           "read_chunk_filter_num_bytes", "read_exact", "check_filter_region", "check_plaintext_header",
           "serialize_chunk_filter"]

_GCM_OVERHEAD = NONCE_LENGTH + TAG_LENGTH
_HEAD_READ = MAX_HEADER_BYTES + LENGTH_PREFIX
_FIRST_HEADER_READ = 32
_R = TypeVar("_R")


@dataclass(frozen=True)
class FilterStorage:
    """How a filter is stored, from its framing alone (no key needed).

    ``form`` is :attr:`FilterForm.PLAINTEXT` (Thrift header + bitset), ``ENCRYPTED`` (two GCM
    modules with plausible length prefixes) or ``GARBAGE`` (neither, or outside the data region);
    ``num_bytes`` is the bitset size the framing implies (None for garbage); ``stored_bytes``
    the bytes header and bitset take in the file (both length prefixes included when
    encrypted): with ``num_bytes``, everything about the filter's size anyone can see.

    Parameters
    ----------
    form : FilterForm
        Plaintext, encrypted or garbage.
    num_bytes : int, optional
        The bitset size the framing implies.
    detail : str, default ""
        Why it is garbage.
    """

    form: FilterForm
    num_bytes: int | None = None
    detail: str = ""
    stored_bytes: int | None = None


def classify_filter_bytes(head: bytes, length: int | None, available: int,
                          read_at: Callable[[int, int], bytes]) -> FilterStorage:
    """Is the filter at some offset stored in plaintext, as two GCM modules, or neither?

    ``head`` holds the first bytes at the offset (up to ``MAX_HEADER_BYTES + 4``), ``length`` is
    ``bloom_filter_length`` (None in files before parquet-java 1.14), ``available`` the bytes from
    the offset to the footer, ``read_at(relative_offset, n)`` reads more. A plaintext header must
    parse and its bitset fit exactly; modules must be a header module of plausible size followed
    by a bitset module of ``28 + numBytes`` for a valid numBytes. The two forms cannot be
    confused: a plaintext header's first four bytes, read as a length prefix, exceed any header
    module, and a module's length prefix is not valid header Thrift.

    Parameters
    ----------
    head : bytes
        The first bytes at the offset.
    length : int or None
        ``bloom_filter_length``.
    available : int
        Bytes from the offset to the footer.
    read_at : callable
        ``read_at(relative_offset, n)`` reads more.

    Returns
    -------
    FilterStorage
        Plaintext, modules, or neither (with sizes).

    Raises
    ------
    OSError
        ``read_at`` failed.
    """
    limit = min(length, available) if length is not None else available
    try:
        header, used = parse_header(head)
    except MalformedInputError:
        pass
    else:
        total = used + header.num_bytes
        if (length is None and total <= available) or total == length:
            return FilterStorage(FilterForm.PLAINTEXT, header.num_bytes, stored_bytes=total)
    if len(head) < LENGTH_PREFIX:
        return FilterStorage(FilterForm.GARBAGE, detail="too short")
    (first,) = struct.unpack_from("<I", head, 0)
    if not _GCM_OVERHEAD < first <= _GCM_OVERHEAD + MAX_HEADER_BYTES:
        return FilterStorage(FilterForm.GARBAGE, detail="neither a plaintext filter header nor an encrypted module")
    second_at = LENGTH_PREFIX + first
    if second_at + LENGTH_PREFIX > limit:
        return FilterStorage(FilterForm.GARBAGE, detail="the bitset module is missing")
    (second,) = struct.unpack_from("<I", read_at(second_at, LENGTH_PREFIX), 0)
    num_bytes = second - _GCM_OVERHEAD
    if not MIN_BITSET_BYTES <= num_bytes <= SPEC_MAX_BITSET_BYTES:
        return FilterStorage(FilterForm.GARBAGE, detail=f"the bitset module's length prefix {second} is invalid")
    end = second_at + LENGTH_PREFIX + second
    if (length is not None and end != length) or end > available:
        return FilterStorage(FilterForm.GARBAGE,
                             detail=f"the modules take {end} bytes, bloom_filter_length is {length}")
    return FilterStorage(FilterForm.ENCRYPTED, num_bytes, stored_bytes=end)


def read_filter_storage(raw: BinaryIO | RecordingFile, offset: int, length: int | None, data_end: int) -> FilterStorage:
    """:func:`classify_filter_bytes` for the filter at ``offset`` of the open file ``raw``, whose
    data region ends (the footer starts) at ``data_end``.

    Parameters
    ----------
    raw : binary file
        The open Parquet file.
    offset : int
        The filter's offset.
    length : int or None
        ``bloom_filter_length``.
    data_end : int
        Where the footer starts.

    Returns
    -------
    FilterStorage
        How the filter is stored.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    available = data_end - offset
    if offset < 4 or available <= 0 or (length is not None and not 0 < length <= available):
        return FilterStorage(FilterForm.GARBAGE,
                             detail=f"offset {offset} / length {length} lies outside the data region")

    def read_at(at: int, n: int) -> bytes:
        raw.seek(offset + at)
        return raw.read(n)

    head = read_at(0, min(_HEAD_READ, available, length if length is not None else available))
    return classify_filter_bytes(head, length, available, read_at)



def read_exact(raw: BinaryIO | RecordingFile, offset: int, n: int, path: str) -> bytes:
    """``n`` bytes at ``offset``; a short read is :class:`MalformedBitsetError`.

    Parameters
    ----------
    raw : binary file
        The open Parquet file.
    offset : int
        Where to read.
    n : int
        How many bytes.
    path : str
        The file, as messages name it.

    Returns
    -------
    bytes
        Exactly ``n`` bytes.

    Raises
    ------
    secure_bloom.errors.MalformedBitsetError
        Fewer bytes (both numbers in the message).
    OSError
        The file cannot be read.
    """
    if isinstance(raw, RecordingFile):  # one positional read (not pyarrow's read_at(nbytes, offset))
        data = raw.read_at(offset, n)
    else:
        raw.seek(offset)
        data = raw.read(n)
    if len(data) != n:
        raise MalformedBitsetError(f"{path}: short read of {len(data)} bytes, wanted {n} at offset {offset}")
    return data


def check_filter_region(chunk: ColumnChunk, location: FilterLocation, data_end: int, path: str) -> None:
    """A filter must lie inside the data region ``[4, data_end)`` (before the footer).

    Parameters
    ----------
    chunk : ColumnChunk
        The chunk.
    location : FilterLocation
        Where its filter is.
    data_end : int
        Where the footer starts.
    path : str
        The file, as messages name it.

    Raises
    ------
    secure_bloom.errors.MalformedInputError
        The filter is outside ``[4, data_end)``.
    """
    offset, length = location.offset, location.length
    if offset < 4 or offset >= data_end or (length is not None and (length <= 0 or offset + length > data_end)):
        raise MalformedThriftError(
            f"{path}: Bloom filter of {chunk.where} (offset {offset}, length {length}) lies outside the data "
            f"region [4, {data_end})")


def check_plaintext_header(head: bytes | memoryview, length: int | None, limit: int, path: str) -> tuple[Any, int]:
    """Parse the header at the start of ``head``; numBytes must fit ``limit`` (and, with a
    ``bloom_filter_length``, header + bitset must take exactly that).

    Parameters
    ----------
    head : bytes-like
        Bytes starting at the header.
    length : int or None
        ``bloom_filter_length``.
    limit : int
        The most bitset bytes that fit.
    path : str
        The file, as messages name it.

    Returns
    -------
    (BloomFilterHeader, int)
        The header and its size in bytes.

    Raises
    ------
    secure_bloom.errors.MalformedHeaderError
        The header does not parse or names an unsupported algorithm.
    secure_bloom.errors.MalformedBitsetError
        numBytes does not fit ``limit`` or ``length``.
    """
    header, used = parse_header(head)
    validate_num_bytes(header.num_bytes, available=limit - used)
    if length is not None and used + header.num_bytes != length:
        raise MalformedBitsetError(
            f"{path}: bloom_filter_length {length} but header + bitset take {used + header.num_bytes} bytes")
    return header, used


def _plaintext_header(raw: BinaryIO | RecordingFile, chunk: ColumnChunk, location: FilterLocation, data_end: int,
                      path: str) -> tuple[Any, int]:
    """The plaintext filter's header and its size; numBytes checked against the length (or,
    without one, against the data region) before any bitset byte is read."""
    offset, length = location.offset, location.length
    _check_plaintext_length(chunk, length, path)
    limit = data_end - offset if length is None else length
    want = min(_FIRST_HEADER_READ, limit)
    while True:
        head = read_exact(raw, offset, want, path)
        try:
            return check_plaintext_header(head, length, limit, path)
        except MalformedHeaderError:
            if want >= min(MAX_HEADER_BYTES, limit):
                raise
            want = min(want * 4, MAX_HEADER_BYTES, limit)


def _check_plaintext_length(chunk: ColumnChunk, length: int | None, path: str) -> None:
    if length is not None and length > MAX_HEADER_BYTES + SPEC_MAX_BITSET_BYTES:  # refused before reading
        raise MalformedBitsetError(
            f"{path}: bloom_filter_length {length} of {chunk.where} exceeds the largest filter "
            f"({MAX_HEADER_BYTES + SPEC_MAX_BITSET_BYTES} bytes)")


def _read_plaintext_filter(raw: BinaryIO | RecordingFile, chunk: ColumnChunk, location: FilterLocation, data_end: int,
                           path: str) -> SplitBlockBloomFilter:
    """A plaintext filter: header and bitset in one read when ``bloom_filter_length`` is known
    and at most :data:`COALESCED_FILTER_BYTES`, else the header first, then the bitset."""
    offset, length = location.offset, location.length
    _check_plaintext_length(chunk, length, path)
    if length is not None and length <= COALESCED_FILTER_BYTES:
        data = read_exact(raw, offset, length, path)
        _, used = check_plaintext_header(data, length, length, path)
        return SplitBlockBloomFilter.from_bitset(memoryview(data)[used:])
    header, used = _plaintext_header(raw, chunk, location, data_end, path)
    return SplitBlockBloomFilter.from_bitset(read_exact(raw, offset + used, header.num_bytes, path))


def _read_encrypted(raw: BinaryIO | RecordingFile, chunk: ColumnChunk, location: FilterLocation, data_end: int,
                    context: ChunkCryptoContext | None, read: Callable[..., _R]) -> _R:
    """``read(file, offset, length=, context=)`` for an encrypted chunk; broken framing that is a
    plaintext filter is reported as the leak it is."""
    if context is None:
        raise ValueError(f"{chunk.where} is encrypted: its crypto context (key, file AAD) is needed")
    try:
        return read(raw, location.offset, length=location.length, context=context)
    except MalformedModuleError:
        storage = read_filter_storage(raw, location.offset, location.length, data_end)
        if storage.form is FilterForm.PLAINTEXT:
            raise PlaintextFilterOnEncryptedColumnError(
                f"{chunk.where}: the column is encrypted but its Bloom filter is stored in plaintext (it "
                "reveals the column's values)") from None
        raise


def read_chunk_filter(raw: BinaryIO | RecordingFile, chunk: ColumnChunk, location: FilterLocation, *, data_end: int, path: str,
                      context: ChunkCryptoContext | None = None) -> SplitBlockBloomFilter:
    """The filter of ``chunk`` at ``location`` of the open file ``raw`` (whose footer starts at
    ``data_end``), decrypted with ``context`` if the chunk is encrypted.

    Parameters
    ----------
    raw : binary file
        The open Parquet file.
    chunk : ColumnChunk
        The chunk.
    location : FilterLocation
        Where its filter is.
    data_end : int
        Where the footer starts.
    path : str
        The file, as messages name it.
    context : ChunkCryptoContext, optional
        The chunk's key, file AAD and ordinals (encrypted chunks).

    Returns
    -------
    SplitBlockBloomFilter
        The filter.

    Raises
    ------
    secure_bloom.errors.MalformedInputError
        The filter lies outside the data region, is truncated or does not parse.
    secure_bloom.errors.ModuleAuthenticationError
        An encrypted filter fails authentication.
    secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
        An encrypted chunk's filter is stored in plaintext.
    OSError
        The file cannot be read.
    """
    check_filter_region(chunk, location, data_end, path)
    if not chunk.encrypted:
        return _read_plaintext_filter(raw, chunk, location, data_end, path)
    return _read_encrypted(raw, chunk, location, data_end, context, read_encrypted_bloom_filter)


def read_chunk_filter_num_bytes(raw: BinaryIO | RecordingFile, chunk: ColumnChunk, location: FilterLocation, *, data_end: int,
                                path: str, context: ChunkCryptoContext | None = None) -> int:
    """numBytes of the chunk's filter from its header alone (authenticated if encrypted); the
    bitset is not read.

    Parameters
    ----------
    raw : binary file
        The open Parquet file.
    chunk : ColumnChunk
        The chunk.
    location : FilterLocation
        Where its filter is.
    data_end : int
        Where the footer starts.
    path : str
        The file, as messages name it.
    context : ChunkCryptoContext, optional
        The chunk's key, file AAD and ordinals (encrypted chunks).

    Returns
    -------
    int
        The bitset size.

    Raises
    ------
    secure_bloom.errors.MalformedInputError
        The filter lies outside the data region, is truncated or does not parse.
    secure_bloom.errors.ModuleAuthenticationError
        An encrypted filter fails authentication.
    secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
        An encrypted chunk's filter is stored in plaintext.
    OSError
        The file cannot be read.
    """
    check_filter_region(chunk, location, data_end, path)
    if not chunk.encrypted:
        return int(_plaintext_header(raw, chunk, location, data_end, path)[0].num_bytes)
    return _read_encrypted(raw, chunk, location, data_end, context, read_encrypted_filter_num_bytes)


def serialize_chunk_filter(bf: SplitBlockBloomFilter, *, column: str, encrypted: bool, key: bytes | None,
                           file_aad: bytes | None, row_group_ordinal: int, column_ordinal: int) -> bytes:
    """The on-disk bytes of one chunk's filter: encrypted modules for an encrypted column,
    header + bitset otherwise. Never writes a plaintext filter for an encrypted column.

    Parameters
    ----------
    bf : SplitBlockBloomFilter
        The filter.
    column : str
        The column, for messages.
    encrypted : bool
        The column is encrypted.
    key : bytes or None
        Its data key.
    file_aad : bytes or None
        The file's AAD.
    row_group_ordinal : int
        The row group's ordinal.
    column_ordinal : int
        The column's ordinal.

    Returns
    -------
    bytes
        What the file stores.

    Raises
    ------
    secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
        An encrypted column without its key or AAD.
    """
    if encrypted:
        if key is None or file_aad is None:
            raise PlaintextFilterOnEncryptedColumnError(
                f"column {column!r} is encrypted and its key or file AAD is unavailable; refusing to write "
                "its Bloom filter in plaintext")
        return encrypt_bloom_filter(bf, key, file_aad, row_group_ordinal, column_ordinal)
    return bf.to_bytes()
