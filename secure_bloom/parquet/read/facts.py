"""The facts of one file for the evaluator (:class:`~.evaluate.RowGroupFacts`), from a reader
and, where a :class:`~.prune_cache.PruneCache` holds them, from the cache.

:class:`ReaderFacts` answers from the cached :class:`~.prune_cache.FileFacts` first and opens the
file's :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader` (``open_reader``) only for
what they do not hold, recording what it computes (:meth:`ReaderFacts.learned`). Without cached
facts it is the file read for this lookup. A missing key is "unavailable" for this evaluation
only: it is never recorded. Facts derived with a key are used only once ``recheck`` (the caller's
``KeyUnwrapper.recheck``) gives the key again; when it does not, they are read from the file as
without a cache (which raises what an uncached read raises).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...errors import MissingKeyError, SecureBloomError
from ...filter import SplitBlockBloomFilter
from ...kms import KeyGrant
from ..file.arrow_source import shared_format_opens
from ..file.reader import ParquetBloomReader
from ..file.schema import ColumnInfo
from .prune_cache import FileFacts
from .statistics import Bounds, chunk_bounds, stat_kind

__all__ = ["ReaderFacts"]


class ReaderFacts:
    """One file's :class:`~.evaluate.RowGroupFacts`: cached facts first, then its reader.

    Parameters
    ----------
    facts : FileFacts or None
        What a cache holds of this version of the file (None: nothing).
    open_reader : callable
        Opens the file's reader (called at most once, on first need).
    recheck : callable, optional
        The caller's key recheck (``KeyUnwrapper.recheck``) for facts derived with a key.
    """

    def __init__(self, facts: FileFacts | None, open_reader: Callable[[], ParquetBloomReader],
                 recheck: Callable[[KeyGrant], None] | None = None) -> None:
        self._open = open_reader
        self._recheck = recheck
        self._granted: dict[bytes, bool] = {}
        self._reader: ParquetBloomReader | None = None
        self._bounds: dict[tuple[int, int], Bounds | None] = {}
        self._filters: dict[tuple[int, int], SplitBlockBloomFilter | None] = {}
        if facts is not None and facts.footer_grant is not None and not self._still_granted(facts.footer_grant):
            facts = None
        self.facts = facts
        if facts is None:
            reader = self.reader
            orders = getattr(reader.footer.metadata, "column_orders", None) or []
            self.num_row_groups = reader.num_row_groups
            self.columns: tuple[ColumnInfo, ...] = reader.leaves
            self.type_order = frozenset(i for i, o in enumerate(orders) if getattr(o, "TYPE_ORDER", None) is not None)
        else:
            self.num_row_groups, self.columns, self.type_order = facts.num_row_groups, facts.columns, facts.type_order

    def _still_granted(self, grant: KeyGrant) -> bool:
        """Whether the caller still gets the key ``grant`` names (asked once per evaluation)."""
        known = self._granted.get(grant.key_metadata)
        if known is None:
            known = self._recheck is not None
            if self._recheck is not None:
                try:
                    self._recheck(grant)
                except SecureBloomError:
                    known = False  # the file is read as without a cache: its error is the caller's
            self._granted[grant.key_metadata] = known
        return known

    def _held(self, at: tuple[int, int], held: Mapping[tuple[int, int], Any]) -> bool:
        """Whether ``held`` (the cached bounds or filters) may answer for ``at``."""
        if self.facts is None or at not in held:
            return False
        grant = self.facts.grants.get(at)
        return grant is None or self._still_granted(grant)

    def _all_cached(self, row_groups: Sequence[int], ordinal: int, held: Mapping[tuple[int, int], Any]) -> bool:
        """Whether the cache (``held``: its bounds or filters) answers for column ``ordinal`` in
        every one of ``row_groups``, every key its facts of that column were derived with still
        granted: the warm lookup's case, answered without a check per row group."""
        facts = self.facts
        if facts is None:
            return False
        for rg in row_groups:  # loops, not any() / all(): this runs for every file of a warm lookup
            if (rg, ordinal) not in held:
                return False
        for grant in facts.column_grants.get(ordinal, ()):
            if not self._still_granted(grant):
                return False
        return True

    def _unknown(self, row_groups: Sequence[int], ordinal: int, held: Mapping[tuple[int, int], Any],
                 computed: Mapping[tuple[int, int], Any]) -> list[int]:
        """The row groups of ``row_groups`` whose fact of column ``ordinal`` neither the cache
        (``held``, its key still granted) nor this evaluation (``computed``) has: what to read."""
        return [rg for rg in row_groups if not self._held((rg, ordinal), held) and (rg, ordinal) not in computed]

    @property
    def reader(self) -> ParquetBloomReader:
        """The file's reader, opened on first use."""
        if self._reader is None:
            self._reader = self._open()
        return self._reader

    @property
    def opened(self) -> ParquetBloomReader | None:
        """The reader if it was opened (None: everything came from the cache)."""
        return self._reader

    def bounds(self, info: ColumnInfo, row_groups: Sequence[int]) -> list[Bounds | None]:
        """Each row group's statistics of ``info`` (None: none usable, or the key is missing).

        Parameters
        ----------
        info : ColumnInfo
            The column.
        row_groups : sequence of int
            The row groups.

        Returns
        -------
        list of Bounds or None
            One per row group.

        Raises
        ------
        secure_bloom.errors.MalformedInputError, AuthenticationError
            Damaged column metadata, or encrypted metadata failing authentication.
        secure_bloom.errors.KeyManagementError
            The column's key cannot be obtained (a missing key gives None).
        """
        ordinal = info.ordinal
        if self.facts is not None and self._all_cached(row_groups, ordinal, self.facts.bounds):
            cached = self.facts.bounds
            return [cached[(rg, ordinal)] for rg in row_groups]
        to_read = self._unknown(row_groups, ordinal, self.facts.bounds if self.facts is not None else {}, self._bounds)
        if to_read:
            reader = self.reader
            try:
                metas = reader.column_metadata_many(ordinal, to_read)
            except MissingKeyError:  # some chunk's key is not given: each on its own
                metas = None
            if metas is not None:
                typed, kind = ordinal in self.type_order, stat_kind(info)
                for rg, meta in zip(to_read, metas):
                    self._bounds[(rg, ordinal)] = chunk_bounds(meta, info, typed, kind)
        return [self._bound(rg, info) for rg in row_groups]

    def _bound(self, rg: int, info: ColumnInfo) -> Bounds | None:
        at = (rg, info.ordinal)
        if self.facts is not None and self._held(at, self.facts.bounds):
            return self.facts.bounds[at]
        if at not in self._bounds:
            reader = self.reader
            try:
                meta = reader.column_metadata(reader.chunk(rg, info.ordinal))
            except MissingKeyError:
                return None  # unavailable for this evaluation only: never recorded
            self._bounds[at] = chunk_bounds(meta, info, info.ordinal in self.type_order)
        return self._bounds[at]

    def may_contain(self, info: ColumnInfo, row_groups: Sequence[int], hashes: Sequence[int]) -> list[bool]:
        """Per row group, whether its filter of ``info`` may hold any of ``hashes``. The filters
        not cached are read together (:meth:`~secure_bloom.parquet.file.reader.ParquetBloomReader.bloom_filters`:
        one read per run of filters side by side, opened in one call per key).

        Parameters
        ----------
        info : ColumnInfo
            The column.
        row_groups : sequence of int
            The row groups.
        hashes : sequence of int
            The query's xxHash64 values.

        Returns
        -------
        list of bool
            One per row group: True when it may (no filter, or its key is missing, included).

        Raises
        ------
        secure_bloom.errors.MalformedInputError, AuthenticationError
            A damaged filter, or one failing authentication.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        secure_bloom.errors.KeyManagementError
            The column's key cannot be obtained (a missing key gives True).
        """
        ordinal = info.ordinal
        held = self.facts.filters if self.facts is not None else {}
        if self._all_cached(row_groups, ordinal, held):
            return [bf is None or any(bf.check_hash(h) for h in hashes)
                    for bf in (held[(rg, ordinal)] for rg in row_groups)]
        to_read = self._unknown(row_groups, ordinal, held, self._filters)
        if to_read:
            try:
                read = self.reader.bloom_filters(ordinal, to_read)
            except MissingKeyError:  # some chunk's key is not given: each on its own
                read = None
            if read is not None:
                self._filters.update(((rg, ordinal), bf) for rg, bf in zip(to_read, read))
        out = []
        for rg in row_groups:
            at = (rg, ordinal)
            if self._held(at, held):
                bf = held[at]
            elif at in self._filters:
                bf = self._filters[at]
            else:
                try:
                    bf = self._filters[at] = self.reader.bloom_filter(rg, ordinal)
                except MissingKeyError:
                    out.append(True)  # unavailable for this evaluation only: never recorded
                    continue
            out.append(bf is None or any(bf.check_hash(h) for h in hashes))
        return out

    def learned(self, path: str) -> FileFacts | None:
        """The facts to keep: the cached ones plus what this evaluation computed, each derived
        with a key kept with its grant (None: nothing new).

        Parameters
        ----------
        path : str
            The file, as reports name it.

        Returns
        -------
        FileFacts or None
            The facts to cache.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            A key grant cannot be told (from the reader).
        """
        if self.facts is not None and not self._bounds and not self._filters:
            return None
        reader = self.reader  # something was computed: the file was read
        old = self.facts
        bounds = dict(old.bounds) if old is not None else {}
        filters = dict(old.filters) if old is not None else {}
        grants = dict(old.grants) if old is not None else {}
        for at in {*self._bounds, *self._filters}:
            chunk = reader.chunk(*at)
            grant = reader.key_grant(chunk) if chunk.encrypted else None
            if chunk.encrypted and grant is None:  # derived with a key that cannot be rechecked: not kept
                bounds.pop(at, None)
                filters.pop(at, None)
                continue
            if at in self._bounds:
                bounds[at] = self._bounds[at]
            if at in self._filters:
                filters[at] = self._filters[at]
            if grant is not None:
                grants[at] = grant
        footer_grant = old.footer_grant if old is not None else reader.footer_grant
        shared = old.shared_format_opens if old is not None else shared_format_opens(reader)
        return FileFacts(path, self.num_row_groups, self.columns, self.type_order, bounds, filters,
                         footer_grant, grants, shared)
