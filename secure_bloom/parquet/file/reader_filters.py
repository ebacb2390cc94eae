"""The Bloom filters of an open Parquet file, read, probed and described: the third part of
:class:`~secure_bloom.parquet.file.reader.ParquetBloomReader`.

Spec: BloomFilter.md "File Format", Encryption.md "Encrypted module serialization" (module types
8 and 9; SPEC_NOTES 4-5). Filters are read and cached by :class:`~.filter_reads.FilterReads` and
probed by :mod:`.probe`: the values hashed once, every row group's filter probed with all of them
in one kernel call. A chunk with no filter answers "maybe"; a chunk whose key is missing raises
:class:`~secure_bloom.errors.MissingKeyError`, never "absent".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ...errors import SecureBloomError
from ...filter import SplitBlockBloomFilter
from ...values import TimeZoneLike, maybe_in, query_hashes
from .chunk import ChunkInfo, ColumnChunk, FilterLocation
from .filter_reads import FilterReadAhead, FilterReads
from .probe import ProbeResult, ProbeValues, probe_row_groups
from .reader_keys import ReaderKeys
from .schema import ColumnRef

__all__ = ["ReaderFilters"]


class ReaderFilters(ReaderKeys):
    """Bloom filters of the open file's chunks: read, probed, described (a part of
    :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader`; not made on its own)."""

    #: The chunks' Bloom filters, read and cached (:class:`~.filter_reads.FilterReads`).
    filter_reads: FilterReads


    def bloom_filter(self, row_group: int, column: ColumnRef) -> SplitBlockBloomFilter | None:
        """The chunk's filter, decrypted if needed; None if the chunk has none.

        Parameters
        ----------
        row_group : int
            The row group's position.
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.

        Returns
        -------
        SplitBlockBloomFilter or None
            The filter (cached up to ``filter_cache_bytes``).

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        secure_bloom.errors.KeyManagementError
            The column's key cannot be obtained.
        secure_bloom.errors.AuthenticationError
            A filter fails authentication (tampered, or moved from another chunk).
        secure_bloom.errors.MalformedInputError
            A filter is damaged.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        return self.filter_reads.one(self.chunk(row_group, column))

    def bloom_filters(self, column: ColumnRef, row_groups: Sequence[int]) -> list[SplitBlockBloomFilter | None]:
        """:meth:`bloom_filter` of the column's chunk in each of ``row_groups``, read together
        (:meth:`.FilterReads.many`): filters side by side in one read (one request on an object
        store), the encrypted ones opened together, one call per key (in C, the GIL released,
        where the extension is built). Same answers and errors as :meth:`bloom_filter`.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.
        row_groups : sequence of int
            The row groups.

        Returns
        -------
        list of SplitBlockBloomFilter or None
            The filters (None: the chunk has none), in order.

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.KeyManagementError
            A chunk's key cannot be obtained (``MissingKeyError`` when it is not given).
        secure_bloom.errors.AuthenticationError
            A filter fails authentication.
        secure_bloom.errors.MalformedInputError
            A filter is damaged.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        return self.filter_reads.many(self.chunks_of(column, row_groups))

    def prefetch_filters(self, chunks: Sequence[ColumnChunk]) -> int:
        """On an object store, read the filters of ``chunks`` (in the order they will be asked
        for) ahead, in as few requests as their layout allows, and hold them
        (:meth:`.FilterReads.prefetch`, which says what is left out). Local files read nothing.

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
        return self.filter_reads.prefetch(chunks)

    def read_ahead(self, chunks: Sequence[ColumnChunk]) -> FilterReadAhead:
        """A :class:`~.filter_reads.FilterReadAhead` over ``chunks`` (in the order their filters
        will be read): what :meth:`iter_filters` and the lookups read through on an object store.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file, in read order.

        Returns
        -------
        FilterReadAhead
            Nothing is read until its :meth:`~.filter_reads.FilterReadAhead.before` is called.

        Raises
        ------
        None
            Nothing is read here.
        """
        return self.filter_reads.read_ahead(chunks)

    def filter_num_bytes(self, chunk: ColumnChunk) -> int | None:
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
        secure_bloom.errors.MissingKeyError
            The chunk is encrypted and its key or the file AAD is not available.
        secure_bloom.errors.KeyManagementError
            The KMS failed otherwise.
        secure_bloom.errors.AuthenticationError
            The header (or the encrypted ColumnMetaData) fails authentication.
        secure_bloom.errors.MalformedInputError
            The header or the metadata is damaged, or the filter lies outside the data.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        OSError
            The file cannot be read.
        """
        return self.filter_reads.num_bytes(chunk)

    def chunks(self, *, with_sizes: bool = True) -> list[ChunkInfo]:
        """Every (row group, column) chunk; ``with_sizes`` reads each filter's header (and
        authenticates it, if encrypted) to report its size; bitsets are not read.

        Parameters
        ----------
        with_sizes : bool, default True
            Read each filter's header for its size.

        Returns
        -------
        list of ChunkInfo
            In row group, then column order.

        Raises
        ------
        OSError
            The file cannot be read.
        """
        return [self.chunk_info(chunk, with_sizes=with_sizes) for chunk in self.column_chunks()]

    def chunk_info(self, chunk: ColumnChunk, *, with_sizes: bool = True) -> ChunkInfo:
        """:class:`ChunkInfo` of one chunk; a chunk whose metadata or filter cannot be read
        reports why in ``filter_error`` instead of raising.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk.
        with_sizes : bool, default True
            Read the filter's header (authenticating it) for its size.

        Returns
        -------
        ChunkInfo
            Its Bloom filter facts.

        Raises
        ------
        OSError
            The file cannot be read.
        """
        available = self.key_available(chunk)
        error = None
        try:
            meta = self.column_metadata(chunk) if self.metadata_readable(chunk) else chunk.visible_metadata
        except SecureBloomError as e:
            meta, error = chunk.visible_metadata, f"{type(e).__name__}: {e}"
        location = FilterLocation.of(meta)
        num_bytes = None
        if location is not None and with_sizes and available and error is None:
            try:
                num_bytes = self.filter_num_bytes(chunk)
            except SecureBloomError as e:
                error = f"{type(e).__name__}: {e}"
        return ChunkInfo(
            row_group=chunk.row_group, row_group_ordinal=chunk.row_group_ordinal, column=chunk.column.path,
            column_ordinal=chunk.column_ordinal, encrypted=chunk.encrypted, encryption=chunk.encryption,
            key_id=self.key_id(chunk), key_available=available,
            has_bloom_filter=None if meta is None else location is not None,
            bloom_filter_offset=None if location is None else location.offset,
            bloom_filter_length=None if location is None else location.length,
            filter_num_bytes=num_bytes, filter_error=error)


    def probe(self, column: ColumnRef, values: Iterable[Any] | Any, *,
              labels: Sequence[str] | None = None, timezone: TimeZoneLike | None = None) -> ProbeResult:
        """Ask every row group's filter of ``column`` whether each of ``values`` may be there.

        Query semantics (:func:`~secure_bloom.values.column.query_hashes`): 0.0 finds -0.0 too,
        a NaN is always "maybe", and a naive date/time for a column of UTC instants is refused
        unless ``timezone`` names its zone. ``labels`` (one per value) name the answers; by
        default each value's text. One answer per value, in order, duplicates kept.

        The values are hashed once, and every row group's filter is probed with all of them in
        one kernel call. Probing many files: give a :class:`~secure_bloom.parquet.file.probe.ProbeValues`
        as ``values`` (it carries its own labels and time zone) and it is hashed once for all.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            The leaf column (as :meth:`~.ReaderChunks.column` takes it).
        values : value, iterable of values, or ProbeValues
            What to look up.
        labels : sequence of str, optional
            One label per value (not with a ProbeValues).
        timezone : tzinfo or str, optional
            The zone of naive date/time values (not with a ProbeValues).

        Returns
        -------
        ProbeResult

        Raises
        ------
        InvalidValueError
            A value the column cannot hold.
        MissingKeyError
            An encrypted chunk whose key is not available (never "absent").
        ValueError
            ``labels`` or ``timezone`` given with a ProbeValues, or not one label per value.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> from secure_bloom.parquet import ParquetBloomReader, attach_bloom_filters
        >>> tmp = pathlib.Path(tempfile.mkdtemp())
        >>> pq.write_table(pa.table({"id": list(range(2_000))}), tmp / "ids.parquet", row_group_size=1_000)
        >>> _ = attach_bloom_filters(tmp / "ids.parquet", tmp / "ids.bloom.parquet", ["id"])
        >>> with ParquetBloomReader(tmp / "ids.bloom.parquet") as reader:
        ...     result = reader.probe("id", [7, 1999, -5])
        >>> [[str(verdict) for _, verdict in rg.values] for rg in result.row_groups]
        [['maybe', 'absent', 'absent'], ['absent', 'maybe', 'absent']]
        """
        info = self.column(column)
        if isinstance(values, ProbeValues):
            if labels is not None or timezone is not None:
                raise ValueError("labels= and timezone= are the ProbeValues' own: give them to ProbeValues")
            prepared = values
        else:
            if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Iterable):
                values = [values]
            prepared = ProbeValues(values, labels=labels, timezone=timezone)
        batch = prepared.batch(info)  # bad values fail before any filter is read
        filters = [bf for _, bf in self.iter_filters(info)]
        encrypted = [chunk.encrypted for chunk in self.column_chunks(info)]
        return probe_row_groups(self.path, info.path, filters, encrypted, batch, prepared.labels)

    def row_groups_maybe_containing(self, column: ColumnRef, value: Any, *,
                                    timezone: TimeZoneLike | None = None) -> list[int]:
        """Row groups whose filter may hold ``value`` (every group without a filter is included);
        query semantics as :meth:`probe`.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.
        value : object
            The value looked for.
        timezone : str or tzinfo, optional
            The zone of a naive date/time for a column of UTC instants.

        Returns
        -------
        list of int
            The row groups to read, in order.

        Raises
        ------
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        secure_bloom.errors.InvalidValueError
            ``value`` cannot be stored in the column.
        secure_bloom.errors.KeyManagementError
            The column's key cannot be obtained.
        secure_bloom.errors.AuthenticationError
            A filter fails authentication (tampered, or moved from another chunk).
        secure_bloom.errors.MalformedInputError
            A filter is damaged.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        info = self.column(column)
        query = [query_hashes(value, info, timezone=timezone)]
        return [rg for rg, bf in self.iter_filters(info) if maybe_in(bf, query)[0]]

    def iter_filters(self, column: ColumnRef) -> Iterator[tuple[int, SplitBlockBloomFilter | None]]:
        """(row group, filter or None) for every row group of ``column``.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.

        Yields
        ------
        (int, SplitBlockBloomFilter or None)
            Each row group and its filter.

        Raises
        ------
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        secure_bloom.errors.KeyManagementError
            The column's key cannot be obtained.
        secure_bloom.errors.AuthenticationError
            A filter fails authentication (tampered, or moved from another chunk).
        secure_bloom.errors.MalformedInputError
            A filter is damaged.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        info = self.column(column)
        ahead = self.read_ahead(self.column_chunks(info))  # object stores: filters side by side in one read
        for rg in range(self.num_row_groups):
            ahead.before(rg)
            yield rg, self.bloom_filter(rg, info.ordinal)
