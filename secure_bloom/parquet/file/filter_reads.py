"""The Bloom filters of one open file: located, read in coalesced runs, opened, and cached.

Spec: BloomFilter.md "File Format" (header then bitset at ``bloom_filter_offset``, and
``bloom_filter_length`` when the writer stored it) and Encryption.md (BloomFilterHeader and
bitset as modules 8 and 9, SPEC_NOTES 4-5). Filters lying side by side are read in one request,
encrypted ones opened together, one native call per key; on an object store a
:class:`FilterReadAhead` fetches them a step of about :data:`COALESCE_MAX_BYTES` ahead. Single
filters and the framing checks are :mod:`.filter_io`'s. Filters read are cached up to a byte
bound (least recently used dropped first): plaintext ones by location (chunks sharing a filter
share a copy), encrypted ones by chunk (their AAD binds them to it).
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import cast

from ...encrypted_filter import COALESCED_FILTER_BYTES, decrypt_bloom_filters
from ...errors import SecureBloomError
from ...fileio import RecordingFile
from ...filter import SplitBlockBloomFilter
from ...crypto.modules import ModuleType
from ...types import FilterForm
from .chunk import ColumnChunk, FilterLocation
from .chunk_keys import ChunkKeys
from .chunk_metadata import ChunkMetadata, gc_pause_for
from .filter_io import (
    check_filter_region,
    check_plaintext_header,
    read_chunk_filter,
    read_chunk_filter_num_bytes,
    read_exact,
)

__all__ = ["FilterReads", "FilterReadAhead", "DEFAULT_FILTER_CACHE_BYTES", "COALESCE_GAP_BYTES",
           "COALESCE_MAX_BYTES", "coalesce"]

#: Filter spans at most this many bytes apart are fetched in one request on an object store
#: (:meth:`FilterReads.prefetch`). 0: only filters side by side are merged, so a lookup never
#: reads a byte more than it did filter by filter (a column's filters interleaved with other
#: columns' filters are then read one by one); a larger gap trades bytes for requests (Arrow C++
#: reads holes up to 8 KiB).
COALESCE_GAP_BYTES = 0
#: No coalesced read is longer than this (Arrow C++'s range_size_limit), and a reader holds at most
#: this much read ahead (older reads ahead are dropped first).
COALESCE_MAX_BYTES = 32 << 20
#: Default bound on the filter bytes one reader keeps cached (least recently used go first). A
#: legal filter is at most 128 MiB; whatever the footer claims, a reader holds at most this much
#: plus the filter being read.
DEFAULT_FILTER_CACHE_BYTES = 256 << 20

_CacheKey = tuple[str, int, "int | None"]


def coalesce(spans: Iterable[tuple[int, int]], gap: int, limit: int = COALESCE_MAX_BYTES) -> list[tuple[int, int]]:
    """The (start, end) ``spans`` merged where they overlap or lie at most ``gap`` bytes apart,
    as long as the merged span stays within ``limit`` bytes (a longer span stays alone).

    Parameters
    ----------
    spans : iterable of (int, int)
        Byte ranges, start inclusive, end exclusive, in any order.
    gap : int
        The largest hole between two spans read as one (0: only touching or overlapping spans).
    limit : int, default COALESCE_MAX_BYTES
        The longest merged span.

    Returns
    -------
    list of (int, int)
        The merged spans, sorted by start.

    Raises
    ------
    None
        Arithmetic on the spans given.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start - merged[-1][1] <= gap and max(merged[-1][1], end) - merged[-1][0] <= limit:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class FilterReadAhead:
    """Fetches the filters of ``chunks`` (in the order they will be read) ahead of their reads, a
    step of about :data:`COALESCE_MAX_BYTES` at a time (:meth:`FilterReads.prefetch`): call
    :meth:`before` with a chunk's index before reading its filter. A chunk the steps so far went
    past is never fetched again (it is held, cached, or read on its own as without read-ahead),
    so the work is linear in the chunks whatever the order of the calls. Made by
    :meth:`FilterReads.read_ahead`.

    Parameters
    ----------
    filters : FilterReads
        The open file's filter reads.
    chunks : sequence of ColumnChunk
        The file's chunks, in the order their filters will be read.
    """

    def __init__(self, filters: FilterReads, chunks: Sequence[ColumnChunk]) -> None:
        self._filters = filters
        self._chunks = chunks
        self._covered = 0

    def before(self, index: int) -> None:
        """Fetch the next step of filters if ``chunks[index]`` lies beyond what was fetched so far
        (a local file: nothing is read).

        Parameters
        ----------
        index : int
            The position in ``chunks`` of the chunk whose filter is read next.

        Raises
        ------
        OSError
            A read ahead fails (``StorageUnavailableError`` on an object store); a chunk whose
            filter cannot be located is left out, not raised.
        """
        if index >= self._covered:
            self._covered = self._filters.prefetch_step(self._chunks, index)[1]


class FilterReads:
    """Reads, opens and caches the Bloom filters of one open file.

    Made by :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader` (its
    :attr:`~secure_bloom.parquet.file.reader.ParquetBloomReader.filter_reads`).

    Parameters
    ----------
    file : RecordingFile
        The file's one logged handle.
    path : str
        The file's display path (named in messages).
    data_end : int
        Where the footer starts: no filter lies at or beyond it.
    remote : bool
        Whether each read is a request (an object store): only then are filters read ahead.
    keys : ChunkKeys
        The file's chunk keys.
    metadata : ChunkMetadata
        The file's chunk metadata (where each filter lies).
    cache_bytes : int
        Bitset bytes kept cached; 0 caches nothing.
    """

    def __init__(self, file: RecordingFile, path: str, data_end: int, remote: bool, keys: ChunkKeys,
                 metadata: ChunkMetadata, cache_bytes: int) -> None:
        self._file = file
        self.path = path
        self._data_end = data_end
        self._remote = remote
        self._keys = keys
        self._metadata = metadata
        self._lock = threading.Lock()  # the handle's position and the cache
        self._cache: OrderedDict[_CacheKey, SplitBlockBloomFilter] = OrderedDict()
        self._cache_limit = cache_bytes
        self._cached_bytes = 0

    def __repr__(self) -> str:
        return f"FilterReads({self.path!r}, cached={len(self._cache)}, cached_bytes={self._cached_bytes})"

    def close(self) -> None:
        """Drop every filter cached.

        Raises
        ------
        None
        """
        with self._lock:
            self._cache.clear()
            self._cached_bytes = 0

    def read_at(self, offset: int, n: int) -> bytes:
        """Exactly ``n`` bytes at ``offset``, through the logged handle (bytes read ahead or held
        from the tail are answered from memory).

        Parameters
        ----------
        offset : int
            Where to read.
        n : int
            How many bytes.

        Returns
        -------
        bytes
            ``n`` bytes.

        Raises
        ------
        secure_bloom.errors.MalformedBitsetError, OSError
            As :meth:`~.reader.ParquetBloomReader.read_at`.
        """
        with self._lock:
            return read_exact(self._file, offset, n, self.path)

    # ---------------------------------------------------------------- the cache

    @staticmethod
    def _cache_key(chunk: ColumnChunk, location: FilterLocation) -> _CacheKey:
        """Plaintext filters are keyed by location (shared bytes, one copy); encrypted ones by chunk."""
        if chunk.encrypted:
            return FilterForm.ENCRYPTED, chunk.row_group, chunk.column_ordinal
        return FilterForm.PLAINTEXT, location.offset, location.length

    def _remember(self, key: _CacheKey, bf: SplitBlockBloomFilter) -> None:
        size = bf.num_bytes
        if size > self._cache_limit:
            return
        while self._cache and self._cached_bytes + size > self._cache_limit:
            _, old = self._cache.popitem(last=False)
            self._cached_bytes -= old.num_bytes
        self._cache[key] = bf
        self._cached_bytes += size

    # ---------------------------------------------------------------- filters

    def _located(self, chunk: ColumnChunk) -> FilterLocation | None:
        location = self._metadata.filter_location(chunk)
        if location is not None:
            check_filter_region(chunk, location, self._data_end, self.path)
        return location

    def one(self, chunk: ColumnChunk) -> SplitBlockBloomFilter | None:
        """The chunk's filter, decrypted if needed; None if the chunk has none.

        Parameters
        ----------
        chunk : ColumnChunk
            A chunk of this file.

        Returns
        -------
        SplitBlockBloomFilter or None
            The filter (cached up to the reader's ``filter_cache_bytes``).

        Raises
        ------
        secure_bloom.errors.SecureBloomError, OSError
            As :meth:`~.reader.ParquetBloomReader.bloom_filter`.
        """
        location = self._located(chunk)
        if location is None:
            return None
        cache_key = self._cache_key(chunk, location)
        with self._lock:
            cached = self._cache.get(cache_key)
            if cached is not None:
                self._cache.move_to_end(cache_key)
                return cached
            context = self._keys.crypto_context(chunk) if chunk.encrypted else None
            bf = read_chunk_filter(self._file, chunk, location, data_end=self._data_end, path=self.path,
                                   context=context)
            self._remember(cache_key, bf)
        return bf

    def many(self, chunks: Sequence[ColumnChunk]) -> list[SplitBlockBloomFilter | None]:
        """:meth:`one` of each of ``chunks``, read together: the filters that store
        ``bloom_filter_length`` (at most :data:`~secure_bloom.encrypted_filter.COALESCED_FILTER_BYTES`)
        in one read per run of filters side by side (one request on an object store), the
        encrypted ones opened together, one call per key; the others as :meth:`one` reads them.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file, of one column.

        Returns
        -------
        list of SplitBlockBloomFilter or None
            The filters (None: the chunk has none), in order.

        Raises
        ------
        secure_bloom.errors.KeyManagementError, AuthenticationError, MalformedInputError
            As :meth:`one`, for the first chunk that fails.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        found: dict[int, SplitBlockBloomFilter | None] = {}  # by row group: chunks of one column
        batch: list[tuple[int, ColumnChunk, FilterLocation, _CacheKey]] = []
        # where each filter lies is in its chunk's ColumnMetaData: the encrypted ones not yet
        # opened are opened together (one native call per key), not one by one
        metas = self._metadata.facts_many(chunks)
        cache, data_end, path = self._cache, self._data_end, self.path
        for chunk, meta in zip(chunks, metas):
            rg = chunk.row_group
            if rg in found:
                continue
            location = FilterLocation.of(meta)
            if location is None:
                found[rg] = None
                continue
            check_filter_region(chunk, location, data_end, path)
            cache_key = self._cache_key(chunk, location)
            cached = cache.get(cache_key)
            if cached is not None:
                found[rg] = cached
            elif location.length is None or location.length > COALESCED_FILTER_BYTES:
                found[rg] = self.one(chunk)  # the header first, then the bitset
            else:
                found[rg] = None  # read below
                batch.append((rg, chunk, location, cache_key))
        if batch:
            try:
                found.update(self._read_batch(batch))
            except SecureBloomError:  # named filter by filter, as one() names it
                for _, chunk, _, _ in batch:
                    self.one(chunk)
                raise
        return [found[chunk.row_group] for chunk in chunks]

    def _read_batch(self, batch: list[tuple[int, ColumnChunk, FilterLocation, _CacheKey]]
                    ) -> dict[int, SplitBlockBloomFilter]:
        """The filters of ``batch`` ((row group, chunk, location, cache key), each with
        ``bloom_filter_length``) by row group, read in coalesced runs."""
        data = self._batch_bytes(batch)
        out: dict[int, SplitBlockBloomFilter] = {}
        encrypted: list[ColumnChunk] = []
        for rg, chunk, loc, _ in batch:
            if chunk.encrypted:
                encrypted.append(chunk)
            else:
                _, used = check_plaintext_header(data[rg], loc.length, loc.length or 0, self.path)
                out[rg] = SplitBlockBloomFilter.from_bitset(data[rg][used:])
        for gcm, chunks in self._keys.by_key(encrypted):
            with gc_pause_for(len(chunks)):
                opened = decrypt_bloom_filters([data[chunk.row_group] for chunk in chunks], gcm,
                                               self._keys.aads(chunks, ModuleType.BLOOM_FILTER_HEADER),
                                               self._keys.aads(chunks, ModuleType.BLOOM_FILTER_BITSET))
            out.update((chunk.row_group, bf) for chunk, bf in zip(chunks, opened))
        with self._lock:
            for rg, _, _, cache_key in batch:
                self._remember(cache_key, out[rg])
        return out

    def _batch_bytes(self, batch: list[tuple[int, ColumnChunk, FilterLocation, _CacheKey]]) -> dict[int, memoryview]:
        """Each filter's ``bloom_filter_length`` bytes: one read per run of filters side by side
        (those held in the tail window read from it)."""
        if len(batch) == 1:
            rg, _, loc, _ = batch[0]
            return {rg: memoryview(self.read_at(loc.offset, cast(int, loc.length)))}
        spans = coalesce([(loc.offset, loc.offset + cast(int, loc.length)) for _, _, loc, _ in batch
                          if not self._file.holds(loc.offset, loc.length or 0)], COALESCE_GAP_BYTES)
        starts = [start for start, _ in spans]
        runs = [memoryview(self.read_at(start, end - start)) for start, end in spans]
        data: dict[int, memoryview] = {}
        for rg, _, loc, _ in batch:
            length = cast(int, loc.length)
            at = bisect.bisect_right(starts, loc.offset) - 1  # the run starting at or before it
            if at >= 0 and loc.offset + length <= starts[at] + len(runs[at]):
                begin = loc.offset - starts[at]
                data[rg] = runs[at][begin:begin + length]
            else:
                data[rg] = memoryview(self.read_at(loc.offset, length))  # held in the tail window
        return data

    def num_bytes(self, chunk: ColumnChunk) -> int | None:
        """``numBytes`` of the chunk's filter from its ``BloomFilterHeader`` alone (BloomFilter.md,
        "File Format"): the bitset is neither read nor kept; an encrypted header (module type 8)
        is authenticated. A cached filter answers without a read.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose filter header is read.

        Returns
        -------
        int or None
            The bitset's size in bytes; None when the chunk has no filter.

        Raises
        ------
        secure_bloom.errors.SecureBloomError, OSError
            As :meth:`~.reader.ParquetBloomReader.filter_num_bytes`.
        """
        location = self._located(chunk)
        if location is None:
            return None
        with self._lock:
            cached = self._cache.get(self._cache_key(chunk, location))
            if cached is not None:
                return cached.num_bytes
            context = self._keys.crypto_context(chunk) if chunk.encrypted else None
            return read_chunk_filter_num_bytes(self._file, chunk, location, data_end=self._data_end,
                                               path=self.path, context=context)

    # ---------------------------------------------------------------- reading ahead

    def prefetch(self, chunks: Sequence[ColumnChunk]) -> int:
        """On an object store, read the filters of ``chunks`` (in the order they will be asked
        for) ahead, in as few requests as their layout allows, and hold them: their reads are
        then answered from memory. Spans at most :data:`COALESCE_GAP_BYTES` apart are read as one.
        One call fetches about :data:`COALESCE_MAX_BYTES` (the first chunks' filters; the rest as
        :class:`FilterReadAhead` reaches them). Left out: filters already cached or held (inside
        the tail read), filters longer than
        :data:`~secure_bloom.encrypted_filter.COALESCED_FILTER_BYTES` (their header is checked
        before the rest is fetched), and chunks whose filter cannot be located (no filter,
        missing key, no ``bloom_filter_length``, damaged metadata). Local files read nothing here
        (each read is a cheap ``pread``).

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file, in the order their filters will be read.

        Returns
        -------
        int
            The number of reads (requests) made; 0 for a local file.

        Raises
        ------
        OSError
            A read fails (``StorageUnavailableError`` on an object store).
        """
        return self.prefetch_step(chunks, 0)[0]

    def prefetch_step(self, chunks: Sequence[ColumnChunk], start: int) -> tuple[int, int]:
        """One :meth:`prefetch` step over ``chunks[start:]``: spans are gathered while they stay
        within :data:`COALESCE_MAX_BYTES`.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file, in read order.
        start : int
            The first chunk of the step.

        Returns
        -------
        (int, int)
            The reads made and the index after the last chunk considered.

        Raises
        ------
        OSError
            A read fails (``StorageUnavailableError`` on an object store).
        """
        if not self._remote:
            return 0, len(chunks)
        spans: list[tuple[int, int]] = []
        total = 0
        index = start
        while index < len(chunks):
            span = self._span_to_fetch(chunks[index])
            if span is not None:
                if spans and total + span[1] - span[0] > COALESCE_MAX_BYTES:
                    break  # the next step starts here
                spans.append(span)
                total += span[1] - span[0]
            index += 1
        reads = 0
        with self._lock:
            for begin, end in coalesce(spans, COALESCE_GAP_BYTES, COALESCE_MAX_BYTES):
                self._file.read_ahead(begin, end - begin, keep_bytes=COALESCE_MAX_BYTES)
                reads += 1
        return reads, index

    def _span_to_fetch(self, chunk: ColumnChunk) -> tuple[int, int] | None:
        """(start, end) of the chunk's filter when it is to be fetched ahead (see :meth:`prefetch`
        for what is left out), else None."""
        try:
            location = self._metadata.filter_location(chunk)
            if location is None or location.length is None or location.length > COALESCED_FILTER_BYTES:
                return None
            check_filter_region(chunk, location, self._data_end, self.path)
        except SecureBloomError:
            return None
        if self._cache_key(chunk, location) in self._cache or self._file.holds(location.offset, location.length):
            return None
        return location.offset, location.offset + location.length

    def read_ahead(self, chunks: Sequence[ColumnChunk]) -> FilterReadAhead:
        """A :class:`FilterReadAhead` over ``chunks`` (in the order their filters will be read).

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file, in read order.

        Returns
        -------
        FilterReadAhead
            Nothing is read until its :meth:`~FilterReadAhead.before` is called.

        Raises
        ------
        None
            Nothing is read here.
        """
        return FilterReadAhead(self, chunks)
