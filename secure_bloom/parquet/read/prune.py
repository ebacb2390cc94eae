"""Which row groups of which files can hold rows matching a filter: statistics, then Bloom filters.

A row group is dropped only on proof that pyarrow's own evaluation of the filter
(``pyarrow.dataset(...).to_table(filter=...)``) matches none of its rows. Per row group, the
filter's tree (:mod:`.predicate`) is evaluated to "may match" or "cannot match" in two passes:
first with min/max statistics and null counts alone (:mod:`.statistics`, decrypting encrypted
ColumnMetaData with the column's key), then, for the row groups that survive, with the Bloom
filters of the ``==`` / ``in`` columns (encrypted or not; read lazily, only where needed). AND
needs every part to may-match, OR one. Whatever is missing or doubtful (no statistics, no filter, a
key that is not available, NaN) means "may match". The caller applies the exact filter to what is
read.

Which path decides a leaf (:mod:`.compare`, one :class:`~.compare.LeafPlan` per leaf and column
layout, built once per prune and shared by the files that store the column alike):

* ``fast``: Arrow compares in the column's own type with a literal the column could store exactly
  (same types, integer literals that fit, float literals exact in the column's float type, decimal
  literals exact at its scale, bytes, timestamps exact in its unit, ``is_in`` value sets Arrow casts
  to the column's type): statistics against Python keys of those literals, then Bloom filters
  probed with their hashes.
* ``bounds``: Arrow casts the column (float32 -> float64, integer / decimal -> float64, date ->
  timestamp, schema evolution): Arrow's own Expression evaluation on a tiny array of the chunk's
  min and max (:func:`~.compare.bounds_verdicts`); never a Bloom filter.
* ``raise`` (or an evaluation on the bounds that raises, or a part of the filter pyarrow may raise
  on): the row group is kept whatever the rest of the filter says, so pyarrow meets the values and
  raises as it would. ``keep``: the leaf decides nothing.

Bloom queries follow SQL equality (:func:`~secure_bloom.values.query_hashes` semantics): 0.0
asks for both zeros, a NaN is always "maybe".

:func:`prune_files` runs over many files concurrently (threads: footers and filters are range
reads, the kernels release the GIL), with a progress bar on a TTY, holding only one reader per
worker and the small per-file results.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ...errors import MissingKeyError, SecureBloomError
from ...filter import SplitBlockBloomFilter
from ...kms import KeyGrant
from ...types import PhysicalType
from ...values import QueryHashes
from ...values.arrow import hash_arrow, stored_form
from ..file.arrow_source import shared_format_opens
from ..file.identity import Identity, identity_size, open_identified, pinned_identity
from ..file.keys import NO_KEYS, KeyAccess
from ..file.reader import FilterReadAhead, ParquetBloomReader
from ..file.schema import ColumnInfo
from ..file.sources import is_local_source
from .compare import (
    MAY,
    NO,
    RAISES,
    LeafPlan,
    binds,
    bounds_array,
    bounds_verdicts,
    plan_leaf,
    set_check_raises,
    value_type,
)
from .fast_prune import (
    BitsetProbe,
    Declined,
    FastSource,
    FilterPending,
    LookupKeys,
    ProbedFilter,
    close_source,
    fast_source,
)
from .predicate import (
    AllOf,
    AnyOf,
    Leaf,
    Node,
    Unknown,
    columns_of,
    hidden_leaves,
    leaves,
    raising_unknowns,
)
from .prune_cache import CacheStats, FileFacts, PruneCache, filesystem_key
from .statistics import Bounds, arrow_type_of, chunk_bounds, literal_keys, stat_kind

__all__ = ["FilePrune", "PruneReport", "PruneCache", "prune_reader", "prune_files", "DEFAULT_PRUNE_THREADS",
           "default_prune_threads"]

#: Files pruned at once on an object store (a few range requests each: latency dominates).
DEFAULT_PRUNE_THREADS = 16


def default_prune_threads(paths: Sequence[str], filesystem: Any) -> int:
    """Threads :func:`prune_files` uses unless told: one for local files (pruning them is
    CPU-bound work that mostly holds the GIL: the native reads, decrypts and probes are about a
    tenth of it, and every GIL release hands it over, so threads only contend: 50 encrypted files
    x 5 row groups took 12.5 ms on one thread, 16 ms on two, on 2 cores), else
    :data:`DEFAULT_PRUNE_THREADS` (latency-bound range requests).

    Parameters
    ----------
    paths : sequence of str
        The files.
    filesystem : pyarrow.fs.FileSystem or None
        Their filesystem.

    Returns
    -------
    int
        The thread count.

    Raises
    ------
    None
        Nothing of its own.
    """
    if paths and not is_local_source(paths[0], filesystem):  # one filesystem for all the paths
        return DEFAULT_PRUNE_THREADS
    return 1
#: Filter bytes cached per reader while pruning (one filter is usually read once).
_PRUNE_FILTER_CACHE = 8 << 20


@dataclass(frozen=True)
class FilePrune:
    """One file's outcome: the row groups to read and why the others were skipped.

    Parameters
    ----------
    path : str
        The file.
    num_row_groups : int
        Its row groups.
    row_groups : tuple of int
        The row groups to read.
    pruned_by_statistics, pruned_by_bloom : tuple of int
        The row groups skipped, and why.
    metadata_bytes_read, metadata_requests : int
        Footer and filter bytes read, in how many requests.
    file_size : int, optional
        The file's size.
    from_cache : bool, optional
        None: no cache; True: answered from a :class:`PruneCache`; False: a miss.
    identity : tuple, optional
        The version of the file these row groups were chosen from.
    shared_format_opens : bool, default False
        pyarrow's shared format opens this version (a cached answer).
    """

    path: str
    num_row_groups: int
    row_groups: tuple[int, ...]
    pruned_by_statistics: tuple[int, ...] = ()
    pruned_by_bloom: tuple[int, ...] = ()
    metadata_bytes_read: int = 0
    metadata_requests: int = 0
    file_size: int | None = None
    #: None: no cache; True: answered (at least partly) from a :class:`PruneCache`; False: a miss.
    from_cache: bool | None = None
    #: The version of the file these row groups were chosen from (:mod:`.identity`; None: unknown).
    identity: Identity | None = field(default=None, repr=False, compare=False)
    #: Answered from a :class:`PruneCache` whose facts say pyarrow's shared format opens this
    #: version: ``on_reader`` was not called (``prune_files(on_reader_unless_shared=True)``).
    shared_format_opens: bool = field(default=False, repr=False, compare=False)
    #: What a scan checks when it opens this version, when ``identity`` alone does not prove it
    #: (:func:`~secure_bloom.parquet.file.identity.pinned_identity`; None: ``identity``).
    pinned: Identity | None = field(default=None, repr=False, compare=False)

    @property
    def scan_identity(self) -> Identity | None:
        """The identity a scan of this version's row groups pins (:mod:`.identity`)."""
        return self.pinned if self.pinned is not None else self.identity

    def to_dict(self) -> dict[str, Any]:
        """The file's outcome as JSON-able values.

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"path": self.path, "num_row_groups": self.num_row_groups, "row_groups": list(self.row_groups),
                "pruned_by_statistics": list(self.pruned_by_statistics),
                "pruned_by_bloom": list(self.pruned_by_bloom), "metadata_bytes_read": self.metadata_bytes_read,
                "metadata_requests": self.metadata_requests, "from_cache": self.from_cache}


@dataclass
class PruneReport:
    """What a pruned read did: files, row groups (total / skipped by statistics / skipped by Bloom
    filters / read) and bytes read (footers and filters by the pruner; ``data_bytes_read``: what
    pyarrow's scan read, its dataset discovery's footer read included).

    Parameters
    ----------
    files : list of FilePrune
        One per file considered.
    files_skipped_by_partition : int
        Files a partition filter ruled out.
    data_bytes_read, data_requests : int, optional
        What pyarrow's scan read (when reads are counted).
    rows : int, optional
        Rows returned (once read).
    cache : CacheStats, optional
        The cache's counts after pruning, when one was used.
    """

    files: list[FilePrune] = field(default_factory=list)
    files_skipped_by_partition: int = 0
    data_bytes_read: int | None = None
    data_requests: int | None = None
    rows: int | None = None
    #: The :class:`PruneCache` after pruning (counts only), when one was used.
    cache: CacheStats | None = None

    @property
    def cache_hits(self) -> int:
        """Files answered (at least partly) from the cache."""
        return sum(1 for f in self.files if f.from_cache)

    @property
    def cache_misses(self) -> int:
        """Files a cache was used for but did not hold (or held for another version)."""
        return sum(1 for f in self.files if f.from_cache is False)

    @property
    def row_groups_total(self) -> int:
        """Row groups in the files considered."""
        return sum(f.num_row_groups for f in self.files)

    @property
    def row_groups_pruned_by_statistics(self) -> int:
        """Row groups skipped by their min/max statistics."""
        return sum(len(f.pruned_by_statistics) for f in self.files)

    @property
    def row_groups_pruned_by_bloom(self) -> int:
        """Row groups skipped by their Bloom filters."""
        return sum(len(f.pruned_by_bloom) for f in self.files)

    @property
    def row_groups_read(self) -> int:
        """Row groups left to read."""
        return sum(len(f.row_groups) for f in self.files)

    @property
    def metadata_bytes_read(self) -> int:
        """Bytes of footers and filters read while pruning."""
        return sum(f.metadata_bytes_read for f in self.files)

    @property
    def bytes_read(self) -> int:
        """Metadata bytes plus data bytes read (data: when reads are counted)."""
        return self.metadata_bytes_read + (self.data_bytes_read or 0)

    @property
    def files_read(self) -> int:
        """Files with at least one row group to read."""
        return sum(1 for f in self.files if f.row_groups)

    def to_dict(self, *, with_files: bool = True) -> dict[str, Any]:
        """The report as JSON-able values (``query --explain --format json``).

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
        out: dict[str, Any] = {
            "files": len(self.files) + self.files_skipped_by_partition,
            "files_skipped_by_partition": self.files_skipped_by_partition,
            "files_read": self.files_read,
            "row_groups_total": self.row_groups_total,
            "row_groups_pruned_by_statistics": self.row_groups_pruned_by_statistics,
            "row_groups_pruned_by_bloom": self.row_groups_pruned_by_bloom,
            "row_groups_read": self.row_groups_read,
            "metadata_bytes_read": self.metadata_bytes_read,
            "data_bytes_read": self.data_bytes_read,
            "bytes_read": self.bytes_read,
            "rows": self.rows,
        }
        if self.cache is not None:
            out["cache_hits"] = self.cache_hits
            out["cache_misses"] = self.cache_misses
            out["cache"] = self.cache.to_dict()
        if with_files:
            out["per_file"] = [f.to_dict() for f in self.files]
        return out

    def summary(self) -> str:
        """A few lines for a person (``query --explain``).

        Returns
        -------
        str
            Files, row groups (total / by statistics / by Bloom filters / read), bytes, rows.

        Raises
        ------
        None
            Nothing of its own.
        """
        files = len(self.files) + self.files_skipped_by_partition
        lines = [f"files: {files} ({self.files_skipped_by_partition} skipped by partition, {self.files_read} read)",
                 f"row groups: {self.row_groups_total} total, {self.row_groups_pruned_by_statistics} pruned by "
                 f"statistics, {self.row_groups_pruned_by_bloom} pruned by Bloom filters, "
                 f"{self.row_groups_read} read",
                 f"bytes read: {self.metadata_bytes_read} footer/filter"
                 + (f" + {self.data_bytes_read} by pyarrow (schema, data) = {self.bytes_read}" if self.data_bytes_read is not None else "")]
        if self.cache is not None:
            lines.append(f"cache: {self.cache_hits} files hit, {self.cache_misses} missed; holds {self.cache.files} "
                         f"files, {self.cache.bytes} of {self.cache.max_bytes} bytes")
        if self.rows is not None:
            lines.append(f"rows: {self.rows}")
        return "\n".join(lines)


# ---------------------------------------------------------------- one file


def _arrow_type(schema: pa.Schema | None, name: str) -> pa.DataType | None:
    if schema is None or schema.get_field_index(name) < 0:
        return None
    typ = schema.field(name).type
    return typ.value_type if pa.types.is_dictionary(typ) else typ


class _LeafView:
    """A leaf bound to one column layout: its :class:`~.compare.LeafPlan`, and for the ``fast``
    plan its literals as the column orders them and its Bloom queries. ``None`` parts mean "not
    usable" (the row group is kept)."""

    def __init__(self, leaf: Leaf, info: ColumnInfo | None, schema: pa.Schema | None) -> None:
        self.leaf = leaf
        self.info = info
        self.keys: list[Any] | None = None
        self.query: QueryHashes | None = None
        self.nan = False
        self.own: pa.DataType | None = None
        #: pyarrow's statistics pass compares this ``is_in`` value set with the bounds (may raise)
        self.set_check = False
        typ = _arrow_type(schema, leaf.column)
        if info is None:  # not in this file: pyarrow reads nulls, which raise nothing once bound
            unbound = leaf.values is not None and typ is not None and not binds(leaf.op, leaf.values, value_type(typ))
            self.plan = LeafPlan("raise" if unbound else "keep", reason="column not in the file")
            return
        self.own = arrow_type_of(info)
        self.plan = plan_leaf(leaf.op, leaf.values, self.own, typ)
        self.set_check = (leaf.op in ("in", "not in") and leaf.values is not None and self.plan.typ is not None
                          and self.plan.mode in ("fast", "bounds") and not leaf.values.type.equals(self.plan.typ))
        if self.plan.mode != "fast" or self.plan.values is None:
            return
        values = self.plan.values
        floats = info.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE)
        if floats:
            self.nan = any(v is not None and math.isnan(v) for v in values.to_pylist())
        kind = stat_kind(info)
        if kind is not None and not self.nan:
            try:
                self.keys = literal_keys(values, info, kind)
            except (pa.ArrowException, ValueError, TypeError, ArithmeticError):
                self.keys = None
        if leaf.op in ("==", "in") and info.physical_type not in (PhysicalType.INT96, PhysicalType.BOOLEAN):
            self.query = self._bloom_query(values, info, floats)

    @staticmethod
    def _bloom_query(values: pa.Array, info: ColumnInfo, floats: bool) -> QueryHashes | None:
        """Hashes of exactly the values the column would store for the literals (the ``fast``
        plan: equality decided in the column's own type)."""
        try:
            plain = values.drop_null()
            hashes = hash_arrow(stored_form(plain, info), info.physical_type, info.type_length).tolist()
            nan = False
            if floats:
                py = plain.to_pylist()
                nan = any(math.isnan(v) for v in py)
                if any(v == 0 for v in py):  # SQL: 0.0 = -0.0; the filter holds whichever was written
                    zeros = pa.array([0.0, -0.0], type=plain.type)
                    hashes += hash_arrow(zeros, info.physical_type, info.type_length).tolist()
            return QueryHashes(hashes=tuple(dict.fromkeys(int(h) for h in hashes)), always_maybe=nan)
        except (pa.ArrowException, SecureBloomError, ValueError, TypeError, OverflowError):
            return None


class _FileSource:
    """What the evaluator asks of one file: the facts a :class:`PruneCache` holds first, the
    reader (opened on first need by ``open_reader``) for the rest, recording what it computes.
    A missing key is "unavailable" for this evaluation only: it is never recorded. Facts derived
    with a key are used only once ``recheck`` (the caller's ``KeyUnwrapper.recheck``) gives the
    key again; when it does not, they are read from the file as without a cache (which raises
    what an uncached read raises)."""

    def __init__(self, facts: FileFacts | None, open_reader: Callable[[], ParquetBloomReader],
                 recheck: Callable[[KeyGrant], None] | None = None) -> None:
        self._open = open_reader
        self._recheck = recheck
        self._granted: dict[bytes, bool] = {}
        self._reader: ParquetBloomReader | None = None
        self._bounds: dict[tuple[int, int], Bounds | None] = {}
        self._filters: dict[tuple[int, int], SplitBlockBloomFilter | None] = {}
        self._unavailable: set[tuple[int, int]] = set()
        #: Row groups whose filters the Bloom pass may ask for (:meth:`plan_filters`, with their
        #: positions), and per column the read-ahead of those row groups' filters.
        self._planned: tuple[int, ...] = ()
        self._ahead: dict[int, tuple[FilterReadAhead, dict[int, int]]] = {}
        if facts is not None and facts.footer_grant is not None and not self._still_granted(facts.footer_grant):
            facts = None
        self.facts = facts
        if facts is None:
            reader = self.reader
            orders = getattr(reader.footer.metadata, "column_orders", None) or []
            self.num_row_groups = reader.num_row_groups
            self.columns: tuple[ColumnInfo, ...] = tuple(reader.columns)
            self.type_order = frozenset(i for i, o in enumerate(orders)
                                        if getattr(o, "TYPE_ORDER", None) is not None)
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

    def _cached(self, at: tuple[int, int], held: Mapping[tuple[int, int], Any]) -> bool:
        """Whether ``held`` (the cached bounds or filters) may answer for ``at``."""
        if self.facts is None or at not in held:
            return False
        grant = self.facts.grants.get(at)
        return grant is None or self._still_granted(grant)

    @property
    def reader(self) -> ParquetBloomReader:
        if self._reader is None:
            self._reader = self._open()
        return self._reader

    @property
    def opened(self) -> ParquetBloomReader | None:
        return self._reader

    def bounds(self, rg: int, info: ColumnInfo) -> Bounds | None:
        at = (rg, info.ordinal)
        if self.facts is not None and self._cached(at, self.facts.bounds):
            return self.facts.bounds[at]
        if at not in self._bounds:
            if at in self._unavailable:
                return None
            try:
                meta = self.reader.column_metadata(self.reader.chunk(rg, info.ordinal))
            except MissingKeyError:
                self._unavailable.add(at)
                return None
            self._bounds[at] = chunk_bounds(meta, info, info.ordinal in self.type_order)
        return self._bounds[at]

    def plan_filters(self, row_groups: Sequence[int]) -> None:
        """The row groups the Bloom pass will consult (those the statistics left): the first
        filter asked of a column fetches that column's filters of all of them (not held in the
        cache) at once (one request on an object store when they lie side by side:
        :meth:`ParquetBloomReader.prefetch_filters`)."""
        self._planned = tuple(dict.fromkeys(row_groups))

    def _read_ahead(self, column: int) -> tuple[FilterReadAhead, dict[int, int]]:
        """The read-ahead of ``column``'s filters of the planned row groups (those the cache
        holds left out) and each row group's position in it."""
        found = self._ahead.get(column)
        if found is None:
            held = self.facts.filters if self.facts is not None else {}
            rgs = [rg for rg in self._planned if (rg, column) not in held]
            found = self._ahead[column] = (self.reader.read_ahead([self.reader.chunk(rg, column) for rg in rgs]),
                                           {rg: i for i, rg in enumerate(rgs)})
        return found

    def bloom_filter(self, rg: int, info: ColumnInfo) -> SplitBlockBloomFilter | None:
        """The chunk's filter, None when it has none; MissingKeyError when its key is missing."""
        at = (rg, info.ordinal)
        if self.facts is not None and self._cached(at, self.facts.filters):
            return self.facts.filters[at]
        if at not in self._filters:
            if self._planned:
                ahead, positions = self._read_ahead(info.ordinal)
                position = positions.get(rg)
                if position is not None:
                    ahead.before(position)
            self._filters[at] = self.reader.bloom_filter(rg, info.ordinal)
        return self._filters[at]

    def learned(self, path: str) -> FileFacts | None:
        """The facts to keep: the cached ones plus what this evaluation computed, each derived
        with a key kept with its grant (None: nothing new)."""
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


class _Uncached(Exception):
    """The cached facts do not hold what this evaluation asks: the file is pruned by reading it
    (control flow inside :func:`_prune_one`, never raised out of it)."""


_NOT_HELD = object()


class _CachedSource:
    """What the evaluator asks of one file, answered from its cached facts alone, every key they
    were derived with already rechecked for this lookup (:func:`_granted`): plain lookups, no
    reader. Anything the facts do not hold raises :class:`_Uncached`."""

    __slots__ = ("num_row_groups", "columns", "type_order", "held_bounds", "held_filters")

    def __init__(self, facts: FileFacts) -> None:
        self.num_row_groups, self.columns, self.type_order = facts.num_row_groups, facts.columns, facts.type_order
        self.held_bounds = facts.bounds
        self.held_filters = facts.filters

    def bounds(self, rg: int, info: ColumnInfo) -> Bounds | None:
        found = self.held_bounds.get((rg, info.ordinal), _NOT_HELD)
        if found is _NOT_HELD:
            raise _Uncached
        return found  # type: ignore[return-value]

    def bloom_filter(self, rg: int, info: ColumnInfo) -> SplitBlockBloomFilter | None:
        found = self.held_filters.get((rg, info.ordinal), _NOT_HELD)
        if found is _NOT_HELD:
            raise _Uncached
        return found  # type: ignore[return-value]


def _granted(facts: FileFacts, recheck: Callable[[KeyGrant], None] | None) -> bool:
    """Whether the caller still gets every key ``facts`` were derived with (None: no keys to ask)."""
    grants = facts.distinct_grants
    if not grants:
        return True
    if recheck is None:
        return False
    try:
        for grant in grants:
            recheck(grant)
    except SecureBloomError:
        return False  # the reading path asks grant by grant and raises what an uncached read raises
    return True


#: Leaf views already built in one prune, by (leaf, the file's column): files that store a
#: column alike share its literals' casts, bounds keys and Bloom hashes; and, by ("plan", tree),
#: the last column layout's views of the whole tree (:class:`_Plan`).
_ViewMemo = dict[Any, Any]


@dataclass(frozen=True)
class _Plan:
    """A tree's leaf views over one column layout (``columns``, held so that the layout compared
    by identity cannot be another one at the same address), what they make the evaluator keep,
    and the Bloom hashes of each column (by column ordinal)."""

    columns: tuple[ColumnInfo, ...]
    views: dict[int, _LeafView]
    raising: bool
    checked: list[_LeafView]
    hashes: dict[int, tuple[int, ...]]


def _leaf_view(leaf: Leaf, columns: Sequence[ColumnInfo], schema: pa.Schema | None, memo: _ViewMemo) -> _LeafView:
    info = next((c for c in columns if c.path_in_schema == (leaf.column,)), None)
    key = (id(leaf), info)
    view = memo.get(key)
    if view is None:
        view = memo[key] = _LeafView(leaf, info, schema)
    return view


def _plan(tree: Node, columns: tuple[ColumnInfo, ...], schema: pa.Schema | None, memo: _ViewMemo) -> _Plan:
    """The :class:`_Plan` of ``tree`` over ``columns``: the memo's when it is of the same layout
    (the files of one schema share one ``columns`` tuple: :meth:`LookupKeys.leaf_columns`)."""
    key = ("plan", id(tree))
    plan = memo.get(key)
    if plan is not None and plan.columns is columns:
        return plan  # type: ignore[no-any-return]
    views = {id(leaf): _leaf_view(leaf, columns, schema, memo) for leaf in hidden_leaves(tree)}
    hashes: dict[int, dict[int, None]] = {}
    for view in views.values():
        if view.info is not None and view.query is not None:
            hashes.setdefault(view.info.ordinal, {}).update(dict.fromkeys(view.query.hashes))
    plan = memo[key] = _Plan(columns, views,
                             raising_unknowns(tree) or any(v.plan.mode == "raise" for v in views.values()),
                             [v for v in views.values() if v.plan.mode == "bounds" or v.set_check],
                             {ordinal: tuple(hs) for ordinal, hs in hashes.items()})
    return plan


class _FileEvaluator:
    def __init__(self, source: _FileSource | FastSource | _CachedSource, tree: Node, schema: pa.Schema | None, memo: _ViewMemo,
                 candidates: Sequence[int]) -> None:
        self.source = source
        self.tree = tree
        self.candidates = candidates
        plan = _plan(tree, tuple(source.columns), schema, memo)
        self.views, self.raising, self.checked, self.hashes = plan.views, plan.raising, plan.checked, plan.hashes
        self._verdicts: dict[int, dict[int, str]] = {}
        #: The ``fast`` leaves' verdicts on the bounds alone, by (leaf, row group).
        self._by_bounds: dict[tuple[int, int], bool] = {}
        #: The column of the first filter an evaluation without filters passed by (None: none):
        #: the first filter the same evaluation with filters reads.
        self.first_filter: ColumnInfo | None = None

    def must_keep(self, rg: int) -> bool:
        """Whether pyarrow's evaluation may raise on this row group's values: it is then kept
        whatever the rest of the filter says, so pyarrow raises as it would."""
        return self.raising or any(self._verdict(view, rg) == RAISES for view in self.checked)

    def _verdict(self, view: _LeafView, rg: int) -> str:
        """The ``bounds`` plan's verdict (:func:`~.compare.bounds_verdicts`), for every candidate
        row group of this file at once."""
        done = self._verdicts.get(id(view))
        if done is None:
            done = self._verdicts[id(view)] = self._bounds_verdicts(view)
        return done.get(rg, MAY)

    def _bounds_verdicts(self, view: _LeafView) -> dict[int, str]:
        info, own, leaf = view.info, view.own, view.leaf
        kind = stat_kind(info) if info is not None else None
        if info is None or own is None or kind is None or leaf.values is None:
            return {rg: RAISES for rg in self.candidates}  # no bounds to judge a cast by
        bounded = view.plan.mode == "bounds"
        rgs, lows, highs = [], [], []
        unknown: dict[int, str] = {}
        for rg in self.candidates:
            b = self.source.bounds(rg, info)
            if b is not None and b.all_null:
                continue  # all null: no values to compare or to raise on
            if b is None or b.low is None or b.high is None:
                if bounded:
                    unknown[rg] = RAISES  # values nobody can see: pyarrow's cast may raise on them
                continue
            rgs.append(rg)
            lows.append(b.low)
            highs.append(b.high)
        if not rgs:
            return unknown
        try:
            low_array, high_array = bounds_array(lows, own, kind), bounds_array(highs, own, kind)
        except (pa.ArrowException, ValueError, TypeError, OverflowError):
            return {**unknown, **{rg: RAISES for rg in rgs}}
        verdicts = bounds_verdicts(view.plan, leaf.op, leaf.values, low_array, high_array,
                                   pa.types.is_floating(own)) if bounded else [MAY] * len(rgs)
        if view.set_check and view.plan.typ is not None:
            raises = set_check_raises(leaf.values, view.plan.typ, low_array, high_array)
            verdicts = [RAISES if r else v for v, r in zip(verdicts, raises)]
        return {**unknown, **dict(zip(rgs, verdicts))}

    def may(self, node: Node, rg: int, bloom: bool) -> bool:
        view = self.views.get(id(node))  # a leaf's (only leaves have views)
        if view is None:
            if isinstance(node, Unknown):
                return True
            if isinstance(node, AllOf):
                return all(self.may(p, rg, bloom) for p in node.parts)
            if isinstance(node, AnyOf):
                return any(self.may(p, rg, bloom) for p in node.parts)
            view = self.views[id(node)]
        info = view.info
        mode = view.plan.mode
        if info is None or mode == "keep" or mode == "raise":
            return True
        if mode == "bounds":
            bounds = self.source.bounds(rg, info)
            if bounds is not None and bounds.all_null and view.leaf.op != "not in":
                return False  # every comparison with a null is null: no row matches
            return self._verdict(view, rg) != NO
        at = (id(node), rg)
        by_bounds = self._by_bounds.get(at)
        if by_bounds is None:  # the statistics pass and the Bloom pass ask alike: judged once
            bounds = self.source.bounds(rg, info)
            by_bounds = self._by_bounds[at] = bounds is None or _may_by_bounds(view.leaf.op, view, bounds)
        if not by_bounds:
            return False
        if view.query is not None:
            if bloom:
                try:
                    bf = self.source.bloom_filter(rg, info)
                except MissingKeyError:
                    return True
                return _may_hold(bf, view.query)
            if self.first_filter is None:
                self.first_filter = info
        return True

    def bloom_rounds(self, pending: Sequence[int]) -> dict[int, bool]:
        """``may(tree, rg, bloom=True)`` for each row group of ``pending`` over a
        :class:`FastSource`, its filters fetched together: the first filter of each (noted by the
        statistics pass) is fetched before the first round; each round evaluates every row group
        still waiting, the source noting each filter not fetched yet (:class:`FilterPending` stops
        that row group's evaluation there), then fetches them all at once. A row group asks in
        each round for exactly the filter the one-by-one evaluation would read next, so the same
        filters are read (most trees: one round)."""
        source = self.source
        assert isinstance(source, FastSource)
        column_hashes = self.hashes
        decided: dict[int, bool] = {}
        todo = list(pending)
        if source.wants():
            source.fetch_filters(column_hashes)
        while todo:
            waiting = []
            for rg in todo:
                try:
                    decided[rg] = self.may(self.tree, rg, bloom=True)
                except FilterPending:
                    waiting.append(rg)
            if waiting:
                source.fetch_filters(column_hashes)
            todo = waiting
        return decided


def _may_hold(bf: SplitBlockBloomFilter | BitsetProbe | ProbedFilter | None, query: QueryHashes) -> bool:
    """:func:`~secure_bloom.values.maybe_in` for one query, probed hash by hash (a query holds
    one to a few hashes: cheaper than a batch through numpy)."""
    if bf is None or query.always_maybe:
        return True
    hashes = query.hashes
    if len(hashes) == 1:  # a lookup's usual query: one value
        return bf.check_hash(hashes[0])
    return any(bf.check_hash(h) for h in hashes)


def _may_by_bounds(op: str, view: _LeafView, b: Bounds) -> bool:
    if op == "is_null":
        return b.null_count is None or b.null_count > 0
    if op == "is_valid":
        return not b.all_null
    if op == "not in" and (b.null_count is None or b.null_count > 0):
        return True  # not(is_in): is_in answers false (not null) for a null, so null rows match
    if b.all_null:
        return False  # every comparison with a null is null: no row matches
    keys = view.keys
    if keys is None or view.nan:
        return True
    low, high = b.low, b.high
    if op in ("==", "in"):
        return any((low is None or low <= k) and (high is None or k <= high) for k in keys)
    if op in ("!=", "not in"):
        if view.info is not None and view.info.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
            return True  # a NaN is != everything and has no bound
        return not (b.exact and low == high and low in keys)
    k = keys[0]
    if op == "<":
        return low is None or low < k
    if op == "<=":
        return low is None or low <= k
    if op == ">":
        return high is None or high > k
    if op == ">=":
        return high is None or high >= k
    return True


#: A row group's verdict on the warm path: ruled out by statistics, by a Bloom filter, or kept.
_BY_STATS, _BY_BLOOM, _KEPT = 0, 1, 2


class _WarmPlan:
    """One tree over one column layout, for the files a lookup answers from the cache: the
    evaluator's leaf views, built once per lookup, and whether the tree can be judged leaf by
    leaf over all row groups at once (``simple``: no part pyarrow may raise on, no ``bounds``
    plan, so :meth:`_FileEvaluator.must_keep` is false for every row group). Its verdicts are
    :meth:`_FileEvaluator.may`'s, both passes in one: AND takes the lowest of its parts', OR the
    highest (:data:`_BY_STATS` < :data:`_BY_BLOOM` < :data:`_KEPT`)."""

    def __init__(self, tree: Node, columns: Sequence[ColumnInfo], schema: pa.Schema | None, memo: _ViewMemo) -> None:
        self.tree = tree
        self.columns = columns  # held: the plan is found by its id
        self.views = {id(leaf): _leaf_view(leaf, columns, schema, memo) for leaf in hidden_leaves(tree)}
        self.simple = not raising_unknowns(tree) and not any(
            v.plan.mode in ("raise", "bounds") or v.set_check for v in self.views.values())

    def verdicts(self, node: Node, source: _CachedSource, rgs: Sequence[int]) -> list[int]:
        if isinstance(node, Leaf):
            return self._leaf(self.views[id(node)], source, rgs)
        if isinstance(node, (AllOf, AnyOf)):
            pick = min if isinstance(node, AllOf) else max
            out = [_KEPT if isinstance(node, AllOf) else _BY_STATS] * len(rgs)
            for part in node.parts:
                out = [pick(a, b) for a, b in zip(out, self.verdicts(part, source, rgs))]
            return out
        return [_KEPT] * len(rgs)  # Unknown

    @staticmethod
    def _leaf(view: _LeafView, source: _CachedSource, rgs: Sequence[int]) -> list[int]:
        """:meth:`_FileEvaluator.may` of one leaf for each row group (both passes)."""
        info = view.info
        if info is None or view.plan.mode in ("keep", "raise"):
            return [_KEPT] * len(rgs)
        op, query, ordinal = view.leaf.op, view.query, info.ordinal
        held_bounds, held_filters = source.held_bounds, source.held_filters
        out = []
        for rg in rgs:
            at = (rg, ordinal)
            bounds = held_bounds.get(at, _NOT_HELD)
            if bounds is _NOT_HELD:
                raise _Uncached
            if bounds is not None and not _may_by_bounds(op, view, bounds):  # type: ignore[arg-type]
                out.append(_BY_STATS)
                continue
            if query is not None:
                bf = held_filters.get(at, _NOT_HELD)
                if bf is _NOT_HELD:
                    raise _Uncached
                if not _may_hold(bf, query):  # type: ignore[arg-type]
                    out.append(_BY_BLOOM)
                    continue
            out.append(_KEPT)
        return out


#: Warm plans of one lookup, by (id of the tree, id of the column layout).
_PlanMemo = dict[tuple[int, int], _WarmPlan]


def _prune_cached(facts: FileFacts, tree: Node, schema: pa.Schema | None, row_groups: Iterable[int] | None,
                  memo: _ViewMemo, plans: _PlanMemo) -> FilePrune:
    """The file pruned from its cached facts alone (every key rechecked): :func:`_prune_source`'s
    answer, judged over all row groups at once when the tree allows it; :class:`_Uncached` when
    the facts lack something asked."""
    source = _CachedSource(facts)
    key = (id(tree), id(facts.columns))
    plan = plans.get(key)
    if plan is None or plan.tree is not tree or plan.columns is not facts.columns:
        plan = plans[key] = _WarmPlan(tree, facts.columns, schema, memo)
    if not plan.simple:
        return _prune_source(source, facts.path, tree, schema, row_groups, memo)
    candidates = list(range(source.num_row_groups)) if row_groups is None else list(row_groups)
    parted: tuple[list[int], list[int], list[int]] = ([], [], [])  # by statistics, by Bloom filters, kept
    for rg, verdict in zip(candidates, plan.verdicts(tree, source, candidates)):
        parted[verdict].append(rg)
    return FilePrune(facts.path, source.num_row_groups, tuple(parted[_KEPT]), tuple(parted[_BY_STATS]),
                     tuple(parted[_BY_BLOOM]))


def _uses_bloom(tree: Node) -> bool:
    return any(leaf.op in ("==", "in") for leaf in leaves(tree))


def prune_reader(reader: ParquetBloomReader, tree: Node, schema: pa.Schema | None = None,
                 row_groups: Iterable[int] | None = None) -> FilePrune:
    """The row groups of an open file that may hold matching rows (among ``row_groups``, default
    all), and those skipped by statistics and by Bloom filters.

    Parameters
    ----------
    reader : ParquetBloomReader
        The open file.
    tree : Node
        The predicate tree (:func:`~secure_bloom.parquet.read.predicate.predicate_tree`).
    schema : pyarrow.Schema, optional
        The dataset's schema (the type Arrow compares in).
    row_groups : iterable of int, optional
        The row groups to consider (default all).

    Returns
    -------
    FilePrune
        The outcome.

    Raises
    ------
    secure_bloom.errors.KeyManagementError
        A key cannot be obtained.
    secure_bloom.errors.ParquetFileError
        A damaged file, or a filter that fails authentication.
    OSError
        A file cannot be read.
    """
    return _prune_source(_FileSource(None, lambda: reader), reader.path, tree, schema, row_groups, {})


def _prune_source(source: _FileSource | FastSource | _CachedSource, path: str, tree: Node, schema: pa.Schema | None,
                  row_groups: Iterable[int] | None, memo: _ViewMemo) -> FilePrune:
    if isinstance(source, FastSource):
        return FilePrune(path, source.num_row_groups, *_fast_verdicts(source, tree, schema, row_groups, memo))
    candidates = list(range(source.num_row_groups)) if row_groups is None else list(row_groups)
    if isinstance(tree, AllOf) and not tree.parts:
        return FilePrune(path, source.num_row_groups, tuple(candidates))
    evaluator = _FileEvaluator(source, tree, schema, memo, candidates)
    bloom = _uses_bloom(tree)
    # statistics first for every row group, then Bloom filters for those left: their filters
    # are known before the first is read, and fetched together (_FileSource.plan_filters)
    must = [evaluator.must_keep(rg) for rg in candidates]
    left = [m or evaluator.may(tree, rg, bloom=False) for rg, m in zip(candidates, must)]
    by_stats = [rg for rg, ok in zip(candidates, left) if not ok]
    consult = [rg for rg, m, ok in zip(candidates, must, left) if ok and bloom and not m]
    if isinstance(source, _FileSource):
        source.plan_filters(consult)
    ruled_out = {rg for rg in consult if not evaluator.may(tree, rg, bloom=True)}
    by_bloom = [rg for rg in consult if rg in ruled_out]
    keep = [rg for rg, ok in zip(candidates, left) if ok and rg not in ruled_out]
    return FilePrune(path, source.num_row_groups, tuple(keep), tuple(by_stats), tuple(by_bloom))


def _fast_verdicts(source: FastSource, tree: Node, schema: pa.Schema | None, row_groups: Iterable[int] | None,
                   memo: _ViewMemo) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """:func:`_prune_source` over a :class:`FastSource`: (row groups kept, pruned by statistics,
    pruned by Bloom filters). Statistics first for every row group, then filters together."""
    candidates = range(source.num_row_groups) if row_groups is None else list(row_groups)
    if isinstance(tree, AllOf) and not tree.parts:
        return tuple(candidates), (), ()
    evaluator = _FileEvaluator(source, tree, schema, memo, candidates)
    bloom = memo.get(("bloom", id(tree)))
    if bloom is None:
        bloom = memo[("bloom", id(tree))] = _uses_bloom(tree)
    keep, by_stats, by_bloom = [], [], []
    kept = {rg for rg in candidates if evaluator.must_keep(rg)} if evaluator.raising or evaluator.checked else set()
    stats: dict[int, bool] = {}
    for rg in candidates:
        evaluator.first_filter = None
        stats[rg] = rg in kept or evaluator.may(tree, rg, bloom=False)
        if bloom and stats[rg] and rg not in kept and evaluator.first_filter is not None:
            source.want(rg, evaluator.first_filter)  # what the first round asks: fetched before it
    bloomed = evaluator.bloom_rounds([rg for rg in candidates if stats[rg] and rg not in kept]) if bloom else {}
    for rg in candidates:
        if not stats[rg]:
            by_stats.append(rg)
        elif bloomed.get(rg, True):
            keep.append(rg)
        else:
            by_bloom.append(rg)
    return tuple(keep), tuple(by_stats), tuple(by_bloom)


OnReader = Callable[[str, ParquetBloomReader, FilePrune], None]


@dataclass(frozen=True)
class _CacheUse:
    cache: PruneCache
    scope: int
    filesystem_key: str | None
    #: This lookup's recheck of the keys cached facts were derived with (None: no keys given).
    recheck: Callable[[KeyGrant], None] | None
    plans: _PlanMemo = field(default_factory=dict)


def _prune_fast(path: str, filesystem: Any, tree: Node, schema: pa.Schema | None,
                row_groups: Sequence[int] | None, on_reader: OnReader | None, memo: _ViewMemo,
                lookup: LookupKeys, unless_shared: bool = False) -> FilePrune | None:
    """The file pruned through :mod:`.fast_prune` (same evaluator, same decisions), or None when
    the fast path declines it (the reference path then answers, or names the error). A file
    with row groups to read while ``on_reader`` waits for its reader gets that reader opened
    (its tail is read a second time, and counted), unless ``unless_shared`` and pyarrow's
    shared format opens it (its result then says ``shared_format_opens``)."""
    try:
        source = fast_source(path, filesystem, lookup.keys, lookup)
    except Declined:
        return None
    try:
        keep, by_stats, by_bloom = _fast_verdicts(source, tree, schema, row_groups, memo)
        shared = bool(keep) and on_reader is not None and unless_shared and source.shared_format_opens()
    except Exception:  # noqa: BLE001 - Declined, or any doubt: the reference path answers
        return None
    finally:
        close_source(source)
    reads = source.reads
    if shared:
        return FilePrune(source.path, source.num_row_groups, keep, by_stats, by_bloom, sum(n for _, n in reads),
                         len(reads), source.file_size, identity=source.identity, shared_format_opens=True)
    if keep and on_reader is not None:
        reads = list(reads)
        with ParquetBloomReader(path, lookup.keys, filesystem=filesystem, filter_cache_bytes=0) as reader:
            if reader.identity != source.identity:
                return None  # replaced since the fast source read it: the reference path prunes one version
            on_reader(path, reader, FilePrune(source.path, source.num_row_groups, keep, by_stats, by_bloom))
            reads += reader.read_ranges
    return FilePrune(source.path, source.num_row_groups, keep, by_stats, by_bloom, sum(n for _, n in reads),
                     len(reads), source.file_size, identity=source.identity)


def _prune_one(path: str, filesystem: Any, keys: KeyAccess | None, tree: Node, schema: pa.Schema | None,
               row_groups: Sequence[int] | None, on_reader: OnReader | None,
               cache: _CacheUse | None, memo: _ViewMemo, lookup: LookupKeys | None = None,
               fast: bool = False, unless_shared: bool = False) -> FilePrune:
    if fast and cache is None and lookup is not None:
        done = _prune_fast(path, filesystem, tree, schema, row_groups, on_reader, memo, lookup, unless_shared)
        if done is not None:
            return done
    identity = facts = None
    with contextlib.ExitStack() as stack:
        # the open that tells an object's identity (its HEAD) is the one a cache miss reads through
        handles: list[Any] = []
        if cache is not None and cache.filesystem_key is not None:
            handle, identity = open_identified(path, filesystem)
            if handle is not None:
                stack.callback(handle.close)
                handles.append(handle)
        if cache is not None:
            name = f"{cache.filesystem_key}:{path}"
            facts = cache.cache.get(cache.scope, name, identity)
            if facts is not None and identity is not None and _granted(facts, cache.recheck):
                try:  # everything asked is cached and still granted: no reader, unless one is wanted
                    result = _prune_cached(facts, tree, schema, row_groups, memo, cache.plans)
                except _Uncached:
                    pass
                else:
                    shared = bool(result.row_groups) and unless_shared and facts.shared_format_opens
                    if on_reader is None or not result.row_groups or shared:
                        return FilePrune(result.path, result.num_row_groups, result.row_groups,
                                         result.pruned_by_statistics, result.pruned_by_bloom, 0, 0,
                                         identity_size(identity), True, identity, shared)

        def open_reader() -> ParquetBloomReader:
            return stack.enter_context(ParquetBloomReader(path, keys, filesystem=filesystem,
                                                          filter_cache_bytes=_PRUNE_FILTER_CACHE,
                                                          opened=handles.pop() if handles else None))

        source = _FileSource(facts, open_reader, cache.recheck if cache is not None else None)
        facts = source.facts  # None when a key the facts were derived with is no longer given
        display = facts.path if facts is not None else source.reader.path
        result = _prune_source(source, display, tree, schema, row_groups, memo)
        reader = source.reader if on_reader is not None and result.row_groups else source.opened
        if facts is not None and reader is not None and reader.identity != identity:
            # The file changed after the cache was consulted: what the cache held and what this
            # reader reads are of two versions. Prune the version opened, from it alone.
            opened = reader
            facts, source = None, _FileSource(None, lambda: opened)
            display = reader.path
            result = _prune_source(source, display, tree, schema, row_groups, memo)
        if reader is not None:
            identity = reader.identity
        if on_reader is not None and (reader is not None or result.row_groups):
            on_reader(path, source.reader, result)
        if cache is not None:
            learned = source.learned(display)
            if learned is not None:
                cache.cache.put(cache.scope, name, identity, learned)
        ranges = reader.read_ranges if reader is not None else ()
        size = reader.tail.file_size if reader is not None else identity_size(identity) if identity else None
        pinned = pinned_identity(identity, ranges, reader.read_digest) if reader is not None else None
    return FilePrune(result.path, result.num_row_groups, result.row_groups, result.pruned_by_statistics,
                     result.pruned_by_bloom, sum(n for _, n in ranges), len(ranges), size,
                     None if cache is None else facts is not None, identity, pinned=pinned)


def _progress_wanted(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("SECURE_BLOOM_NO_PROGRESS")


def prune_files(paths: Sequence[str], tree: Node, *, keys: KeyAccess | None = None, filesystem: Any = None,
                schema: pa.Schema | None = None, row_groups: Sequence[Sequence[int] | None] | None = None,
                threads: int | None = None, progress: bool | None = None,
                on_done: Callable[[FilePrune], None] | None = None,
                on_reader: OnReader | None = None, cache: PruneCache | None = None,
                trees: Sequence[Node] | None = None, fast_path: bool = True,
                on_reader_unless_shared: bool = False) -> list[FilePrune]:
    """:func:`prune_reader` for every file (in order), ``threads`` at a time (None:
    :func:`default_prune_threads`); a progress bar on stderr when it is a TTY
    (``progress=None``). Errors (a missing key for the footer, a damaged file) propagate: a file
    that cannot be checked is never silently dropped. ``on_reader(path, reader, result)`` is
    called (on the worker thread) while each file's reader is still open, its footer resolved;
    what it raises propagates too. With a ``cache`` (:class:`PruneCache`), a file answered from
    it is not opened unless it has row groups to read (then ``on_reader`` gets it opened).
    ``trees``: one tree per path instead of ``tree`` (a dataset's fragments whose partition
    fields decide some leaves: :mod:`.partitions`). Each result carries the ``identity`` of the
    file version its row groups were chosen from.

    ``fast_path`` (without a cache): local files are pruned through :mod:`.fast_prune` (no
    reader object; each distinct key unwrapped once per call and one AES-GCM context per key),
    with the same decisions; a file it declines (anything unusual, any error) is pruned by the
    reference path, which gives the same answer or raises the named error. ``on_reader`` is
    then called only for files with row groups to read (their reader opened for it: one more
    tail read, counted). False: the reference path for all.

    ``on_reader_unless_shared``: a file answered from the cache whose facts say pyarrow's shared
    format opens it, or pruned by the fast path from a footer that says so, is not opened for
    ``on_reader`` (its result says ``shared_format_opens``).

    Parameters
    ----------
    paths : sequence of str
        The files.
    tree : Node
        The predicate tree.
    keys : KeyAccess, optional
        The caller's keys.
    filesystem : pyarrow.fs.FileSystem, optional
        The files' filesystem.
    schema : pyarrow.Schema, optional
        The dataset's schema.
    row_groups : sequence, optional
        Per file, the row groups to consider.
    threads : int, optional
        Threads (default :func:`default_prune_threads`).
    progress : bool, optional
        A progress bar (default: on a TTY).
    on_done : callable, optional
        Called with each result.
    on_reader : callable, optional
        ``on_reader(path, reader, result)`` while the reader is open.
    cache : PruneCache, optional
        Kept across lookups.
    trees : sequence of Node, optional
        One tree per path.
    fast_path : bool, default True
        Prune local files through :mod:`.fast_prune`.
    on_reader_unless_shared : bool, default False
        Skip ``on_reader`` for files pyarrow's shared format opens.

    Returns
    -------
    list of FilePrune
        One per path, in order.

    Raises
    ------
    secure_bloom.errors.KeyManagementError
        A key cannot be obtained.
    secure_bloom.errors.ParquetFileError
        A damaged file, or a filter that fails authentication.
    OSError
        A file cannot be read.
    """
    if cache is not None and not isinstance(cache, PruneCache):
        raise TypeError(f"cache must be a PruneCache, got {type(cache).__name__}")
    use = (_CacheUse(cache, cache.scope(keys), filesystem_key(filesystem),
                     keys.unwrapper.rechecker() if keys is not None else None) if cache is not None else None)
    if threads is None:
        threads = default_prune_threads(paths, filesystem)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    groups = list(row_groups) if row_groups is not None else [None] * len(paths)
    if trees is not None and len(trees) != len(paths):
        raise ValueError(f"trees must have one tree per path: {len(trees)} for {len(paths)} paths")
    memo: _ViewMemo = {}
    fast = fast_path and cache is None
    lookup = LookupKeys(keys if keys is not None else NO_KEYS) if fast else None
    bar = None
    if _progress_wanted(progress) and len(paths) > 1:
        from tqdm import tqdm

        bar = tqdm(total=len(paths), desc="pruning", unit="file", file=sys.stderr, leave=False)

    def work(i: int) -> FilePrune:
        result = _prune_one(paths[i], filesystem, keys, tree if trees is None else trees[i], schema, groups[i],
                            on_reader, use, memo, lookup, fast, on_reader_unless_shared)
        if bar is not None:
            bar.update(1)
        if on_done is not None:
            on_done(result)
        return result

    try:
        if threads == 1 or len(paths) <= 1:
            return [work(i) for i in range(len(paths))]
        with ThreadPoolExecutor(max_workers=min(threads, len(paths)), thread_name_prefix="secure-bloom-prune") as pool:
            return list(pool.map(work, range(len(paths))))
    finally:
        if bar is not None:
            bar.close()


def bloom_columns(tree: Node) -> list[str]:
    """Columns whose Bloom filters the tree may consult."""
    return [c for c in columns_of(tree) if any(l.column == c and l.op in ("==", "in") for l in leaves(tree))]

