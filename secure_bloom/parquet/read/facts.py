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
from typing import Any, cast

from ...errors import MissingKeyError, SecureBloomError
from ...filter import SplitBlockBloomFilter
from ...kms import KeyGrant
from ..file.arrow_source import shared_format_opens
from ..file.reader import ParquetBloomReader
from ..file.schema import ColumnInfo
from .prune_cache import FileFacts
from .statistics import Bounds, chunk_bounds, stat_kind

__all__ = ["ReaderFacts", "FilesFacts", "Grants", "probe_filters", "still_granted"]


def still_granted(recheck: Callable[[KeyGrant], None] | None, grant: KeyGrant) -> bool:
    """Whether the caller still gets the key ``grant`` names: ``recheck`` (the lookup's
    ``KeyUnwrapper.rechecker()``) gives it again. Facts derived with a key not granted are not
    used: the file is read as without a cache (its error is then the caller's).

    Parameters
    ----------
    recheck : callable or None
        The lookup's recheck (None: no keys given, nothing is granted).
    grant : KeyGrant
        The key the facts were derived with.

    Returns
    -------
    bool
        True when the key is granted now.

    Raises
    ------
    None
        A refusal (any :class:`~secure_bloom.errors.SecureBloomError`) is False.
    """
    if recheck is None:
        return False
    try:
        recheck(grant)
    except SecureBloomError:
        return False
    return True


class Grants:
    """What one lookup found of the keys cached facts were derived with (:func:`still_granted`):
    each key is rechecked once per lookup, whichever files its facts come from. A refusal is
    kept too, for the lookup: the files whose facts came with that key are read as without a
    cache (which asks the KMS for the key itself), so a dead or refusing KMS is not asked again
    first for every such file.

    Parameters
    ----------
    recheck : callable or None
        The lookup's recheck (``KeyUnwrapper.rechecker()``; None: no keys given).
    """

    __slots__ = ("recheck", "_known")

    def __init__(self, recheck: Callable[[KeyGrant], None] | None) -> None:
        self.recheck = recheck
        self._known: dict[bytes, bool] = {}

    def __call__(self, grant: KeyGrant) -> bool:
        """Whether the caller still gets the key ``grant`` names.

        Parameters
        ----------
        grant : KeyGrant
            The key some cached facts were derived with.

        Returns
        -------
        bool
            True when granted, as first asked in this lookup.

        Raises
        ------
        None
            A refusal is False.
        """
        known = self._known.get(grant.key_metadata)
        if known is None:
            known = self._known[grant.key_metadata] = still_granted(self.recheck, grant)
        return known


#: At most this many (filter, hash) checks are made one by one with
#: :meth:`~secure_bloom.filter.SplitBlockBloomFilter.check_hash` (0.6 us each, stopping at a
#: filter's first hit), more in one kernel call (5 us for one check, 2 us of it the call's own).
SMALL_PROBE_CHECKS = 8


def probe_filters(filters: Sequence[SplitBlockBloomFilter | None], hashes: Sequence[int]) -> list[bool]:
    """Per filter, whether it may hold any of ``hashes`` (None: no filter, "may"): every filter
    probed with every hash in one kernel call (:meth:`~secure_bloom.filter.SplitBlockBloomFilter.check_many`),
    or, for at most :data:`SMALL_PROBE_CHECKS` checks, one by one (the same answers).

    Parameters
    ----------
    filters : sequence of SplitBlockBloomFilter or None
        The filters (of any sizes).
    hashes : sequence of int
        A query's xxHash64 values.

    Returns
    -------
    list of bool
        One per filter: False only where the filter rules out every hash.

    Raises
    ------
    ValueError
        A hash outside the unsigned 64-bit range.
    """
    present = [bf for bf in filters if bf is not None]
    if not present:
        return [True] * len(filters)
    if len(present) * len(hashes) <= SMALL_PROBE_CHECKS:  # a few checks: no kernel call's fixed cost
        return [bf is None or any(bf.check_hash(h) for h in hashes) for bf in filters]
    hits = iter(cast("list[bool]", SplitBlockBloomFilter.check_many(present, hashes).any(axis=1).tolist()))
    return [True if bf is None else next(hits) for bf in filters]



class FilesFacts:
    """Several files' facts as one :class:`~.evaluate.RowGroupFacts`: their row groups numbered
    one after another, file by file, so one evaluation judges them all column-wise (one array
    of bounds per leaf, one probe of every filter). Made of :class:`ReaderFacts` that
    :meth:`~ReaderFacts.answers` the evaluation from the cache alone (a warm lookup), of files
    sharing one column layout: nothing is read, and what each file is told is what judging it
    alone tells (the evaluator judges every row group on its own facts).

    Parameters
    ----------
    parts : sequence of ReaderFacts
        The files, each answering from its cached facts; one ``columns`` tuple shared by all.

    Raises
    ------
    ValueError
        No parts, parts of two layouts, or a part without cached facts.
    """

    def __init__(self, parts: Sequence[ReaderFacts]) -> None:
        if not parts or any(part.columns is not parts[0].columns or part.facts is None for part in parts):
            raise ValueError("FilesFacts joins one or more files of one column layout, each with cached facts")
        self.parts = list(parts)
        self._facts = [part.facts for part in parts if part.facts is not None]
        self.columns = parts[0].columns
        self.type_order = parts[0].type_order
        #: where each file's row groups start in the joined numbering (and, last, their count)
        self.starts = [0]
        for part in parts:
            self.starts.append(self.starts[-1] + part.num_row_groups)
        self.num_row_groups = self.starts[-1]

    def split(self, row_groups: Sequence[int]) -> list[list[int]]:
        """Joined row group numbers (ascending) as each file's own, one list per file.

        Parameters
        ----------
        row_groups : sequence of int
            Joined numbers, ascending.

        Returns
        -------
        list of list of int
            Per file, its row groups among ``row_groups``.

        Raises
        ------
        None
            Nothing of its own.
        """
        out: list[list[int]] = [[] for _ in self.parts]
        starts, part = self.starts, 0
        for rg in row_groups:
            while rg >= starts[part + 1]:
                part += 1
            out[part].append(rg - starts[part])
        return out

    def bounds(self, info: ColumnInfo, row_groups: Sequence[int]) -> list[Bounds | None]:
        """:meth:`ReaderFacts.bounds` of each file, for its row groups among ``row_groups``.

        Parameters
        ----------
        info : ColumnInfo
            The column.
        row_groups : sequence of int
            Joined numbers, ascending.

        Returns
        -------
        list of Bounds or None
            One per row group.

        Raises
        ------
        None
            The parts answer from their caches.
        """
        ordinal, out = info.ordinal, []
        for facts, local in zip(self._facts, self.split(row_groups)):
            held = facts.bounds  # every part answers() from its cache alone: they are all there
            out.extend([held[(rg, ordinal)] for rg in local])
        return out

    def may_contain(self, info: ColumnInfo, row_groups: Sequence[int], hashes: Sequence[int]) -> list[bool]:
        """Whether each row group's filter of ``info`` may hold any of ``hashes``: the cached
        filters of every file probed together (:func:`probe_filters`).

        Parameters
        ----------
        info : ColumnInfo
            The column.
        row_groups : sequence of int
            Joined numbers, ascending.
        hashes : sequence of int
            The query's xxHash64 values.

        Returns
        -------
        list of bool
            One per row group (no filter: True).

        Raises
        ------
        None
            The parts answer from their caches.
        """
        ordinal, filters = info.ordinal, []
        for facts, local in zip(self._facts, self.split(row_groups)):
            held = facts.filters
            filters.extend([held[(rg, ordinal)] for rg in local])
        return probe_filters(filters, hashes)


class ReaderFacts:
    """One file's :class:`~.evaluate.RowGroupFacts`: cached facts first, then its reader.

    Parameters
    ----------
    facts : FileFacts or None
        What a cache holds of this version of the file (None: nothing).
    open_reader : callable
        Opens the file's reader (called at most once, on first need).
    grants : Grants, optional
        The lookup's rechecks of the keys cached facts were derived with (None: no keys given).
    """

    def __init__(self, facts: FileFacts | None, open_reader: Callable[[], ParquetBloomReader],
                 grants: Grants | None = None) -> None:
        self._open = open_reader
        self._grants = grants
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
        """Whether the caller still gets the key ``grant`` names (asked once per lookup: :class:`Grants`)."""
        return self._grants is not None and self._grants(grant)

    def answers(self, asked: Sequence[tuple[ColumnInfo, bool]], row_groups: Sequence[int]) -> bool:
        """Whether the cached facts alone answer everything ``asked`` (:meth:`.TreePlan.asked`:
        columns, each with whether its filters are asked too) for ``row_groups``, every key they
        were derived with still granted: then :meth:`bounds` and :meth:`may_contain` read nothing.

        Parameters
        ----------
        asked : sequence of (ColumnInfo, bool)
            The columns an evaluation may ask of, and whether their filters too.
        row_groups : sequence of int
            The row groups it judges.

        Returns
        -------
        bool
            True when nothing would be read from the file.

        Raises
        ------
        None
            A key no longer granted is False (asked once per evaluation).
        """
        facts = self.facts
        if facts is None:
            return False
        bounds, held_filters, column_grants = facts.bounds, facts.filters, facts.column_grants
        for info, filters in asked:  # loops, not any() / all(): this runs for every file of a warm lookup
            ordinal = info.ordinal
            for rg in row_groups:
                at = (rg, ordinal)
                if at not in bounds or filters and at not in held_filters:
                    return False
            for grant in column_grants.get(ordinal, ()):
                if not self._still_granted(grant):
                    return False
        return True

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
                metas = reader.column_facts_many(ordinal, to_read)
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
            return probe_filters([held[(rg, ordinal)] for rg in row_groups], hashes)
        to_read = self._unknown(row_groups, ordinal, held, self._filters)
        if to_read:
            try:
                read = self.reader.bloom_filters(ordinal, to_read)
            except MissingKeyError:  # some chunk's key is not given: each on its own
                read = None
            if read is not None:
                self._filters.update(((rg, ordinal), bf) for rg, bf in zip(to_read, read))
        found: list[SplitBlockBloomFilter | None] = []
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
                    bf = None  # unavailable for this evaluation only, never recorded: "may"
            found.append(bf)
        return probe_filters(found, hashes)  # every filter of the column in one kernel call

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
