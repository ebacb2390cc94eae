"""Which row groups of which files can hold rows matching a filter: statistics, then Bloom filters.

A row group is dropped only on proof that pyarrow's own evaluation of the filter
(``pyarrow.dataset(...).to_table(filter=...)``) matches none of its rows. Per file, the
filter's tree (:mod:`.predicate`) is evaluated to "may match" or "cannot match" for every
candidate row group at once by the one evaluator, :mod:`.evaluate`, over the file's
:class:`~.facts.ReaderFacts`, in two passes: first with min/max statistics and null counts alone
(:mod:`.statistics`, decrypting encrypted ColumnMetaData with the column's key), then, for the
row groups that survive, with the Bloom filters of the ``==`` / ``in`` columns (encrypted or not;
each column's read in one batch, only for the row groups still in question). AND
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
worker and the small per-file results. The local files a :class:`~.prune_cache.PruneCache`
answers alone (a warm lookup) are judged together first, by the same evaluator over their
joined facts (:class:`~.facts.FilesFacts`): one evaluation of the tree for all of them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ... import thrift_codec
from ..file.identity import Identity, identity_size, open_identified, pinned_identity
from ..file.keys import KeyAccess
from ..file.reader import ParquetBloomReader
from ..file.schema import ColumnInfo
from ..file.sources import is_local_source
from .evaluate import RowGroupFacts, TreePlan, TreeVerdicts, tree_plan
from .facts import FilesFacts, Grants, ReaderFacts
from .outcome import FilePrune, PruneReport
from .predicate import Node, columns_of, leaves
from .prune_cache import FileFacts, PruneCache, filesystem_key

__all__ = ["FilePrune", "PruneReport", "PruneCache", "prune_reader", "prune_files", "DEFAULT_PRUNE_THREADS",
           "default_prune_threads", "open_pruning_reader"]

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


def open_pruning_reader(path: str, keys: KeyAccess | None, filesystem: Any, opened: Any = None) -> ParquetBloomReader:
    """The reader :func:`prune_files` prunes ``path`` with (what a caller opening it first hands
    over in ``prune_files(opened=...)``).

    Parameters
    ----------
    path : str
        The file on ``filesystem``.
    keys : KeyAccess or None
        The caller's keys.
    filesystem : pyarrow.fs.FileSystem or None
        Its filesystem.
    opened : pyarrow.NativeFile, optional
        The file already opened (``ParquetBloomReader(opened=)``).

    Returns
    -------
    ParquetBloomReader
        Open; the caller closes it.

    Raises
    ------
    secure_bloom.errors.SecureBloomError, OSError
        As ``ParquetBloomReader``.
    """
    return ParquetBloomReader(path, keys, filesystem=filesystem, filter_cache_bytes=_PRUNE_FILTER_CACHE, opened=opened)


# ---------------------------------------------------------------- one file


def _judge(facts: RowGroupFacts, path: str, tree: Node, schema: pa.Schema | None, row_groups: Iterable[int] | None,
           memo: dict[Any, Any]) -> FilePrune:
    """The one evaluator (:mod:`.evaluate`) over one file's facts: its row groups among
    ``row_groups`` (default all) kept, pruned by statistics, pruned by Bloom filters."""
    candidates = range(facts.num_row_groups) if row_groups is None else list(row_groups)
    plan = tree_plan(tree, tuple(facts.columns), schema, memo)
    return FilePrune(path, facts.num_row_groups, *TreeVerdicts(plan, facts, candidates).judge())


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
    secure_bloom.errors.ParquetFileError, MalformedInputError, AuthenticationError
        A file is not Parquet (``NotParquetError``), is damaged, or a footer, metadata or filter fails authentication.
    OSError
        A file cannot be read.
    """
    return _judge(ReaderFacts(None, lambda: reader), reader.path, tree, schema, row_groups, {})


OnReader = Callable[[str, ParquetBloomReader, FilePrune], None]


@dataclass(frozen=True)
class _CacheUse:
    cache: PruneCache
    scope: int
    filesystem_key: str | None
    #: This lookup's rechecks of the keys cached facts were derived with (each granted key once).
    grants: Grants


def _prune_one(path: str, filesystem: Any, keys: KeyAccess | None, tree: Node, schema: pa.Schema | None,
               row_groups: Sequence[int] | None, on_reader: OnReader | None,
               cache: _CacheUse | None, memo: dict[Any, Any], unless_shared: bool = False,
               preopened: ParquetBloomReader | None = None,
               looked_up: tuple[Identity | None, FileFacts | None] | None = None) -> FilePrune:
    identity = facts = None
    with contextlib.ExitStack() as stack:
        # the open that tells an object's identity (its HEAD) is the one a cache miss reads through
        handles: list[Any] = []
        if looked_up is not None:  # a local file's identity and cached facts, asked already
            identity, facts = looked_up
        elif cache is not None and cache.filesystem_key is not None:
            handle, identity = open_identified(path, filesystem)
            if handle is not None:
                stack.callback(handle.close)
                handles.append(handle)
        if cache is not None:
            name = f"{cache.filesystem_key}:{path}"
            if looked_up is None:
                facts = cache.cache.get(cache.scope, name, identity)

        if preopened is not None:
            stack.callback(preopened.close)

        def open_reader() -> ParquetBloomReader:
            if preopened is not None:
                return preopened
            return stack.enter_context(open_pruning_reader(path, keys, filesystem, handles.pop() if handles else None))

        source = ReaderFacts(facts, open_reader, cache.grants if cache is not None else None)
        facts = source.facts  # None when a key the facts were derived with is no longer given
        display = facts.path if facts is not None else source.reader.path
        if source.opened is not None and len(source.opened.tail.footer) >= thrift_codec.GC_PAUSE_BYTES:
            # a large footer's objects stay alive while its row groups are judged: collections
            # among the objects the judging makes would walk them again and again (a third of a
            # 2,000-row-group file's pruning); one file's judging is bounded, so pause for it
            stack.enter_context(thrift_codec.gc_paused())
        result = _judge(source, display, tree, schema, row_groups, memo)
        if facts is not None and identity is not None and source.opened is None:
            # answered from the cache alone (facts are only found for a known identity): no reader, unless one is wanted for a scan
            shared = bool(result.row_groups) and unless_shared and facts.shared_format_opens
            if on_reader is None or not result.row_groups or shared:
                return FilePrune(result.path, result.num_row_groups, result.row_groups, result.pruned_by_statistics,
                                 result.pruned_by_bloom, 0, 0, identity_size(identity), True, identity, shared)
        reader = source.reader if on_reader is not None and result.row_groups else source.opened
        if facts is not None and reader is not None and reader.identity != identity:
            # The file changed after the cache was consulted: what the cache held and what this
            # reader reads are of two versions. Prune the version opened, from it alone.
            opened = reader
            facts, source = None, ReaderFacts(None, lambda: opened)
            display = reader.path
            result = _judge(source, display, tree, schema, row_groups, memo)
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


def _answered_from_cache(paths: Sequence[str], tree_of: Callable[[int], Node], groups: Sequence[Sequence[int] | None],
                         keys: KeyAccess | None, filesystem: Any, schema: pa.Schema | None, cache: _CacheUse,
                         memo: dict[Any, Any], on_reader: OnReader | None,
                         unless_shared: bool,
                         ) -> tuple[dict[int, FilePrune], dict[int, tuple[Identity | None, FileFacts | None]]]:
    """The results of the local files whose cached facts answer the evaluation alone (by
    position in ``paths``), and the identity and cached facts looked up of every local file
    (the same positions: :func:`_prune_one` goes on from them), judged together: the files of one tree and column layout as one
    :class:`~.facts.FilesFacts`, in one evaluation (a file is told what judging it alone tells:
    the evaluator judges every row group on its own facts). Nothing is read and nothing raises
    here: a file the cache does not answer, or one with row groups ``on_reader`` must see opened,
    is left out, for :func:`_prune_one` (which reports its errors in file order). On an object
    store each identity is a request whose open the read after a miss goes through: there every
    file is pruned on its own."""
    looked_up: dict[int, tuple[Identity | None, FileFacts | None]] = {}
    if cache.filesystem_key != "local":
        return {}, looked_up
    batches: dict[tuple[int, int], tuple[TreePlan, list[tuple[int, ReaderFacts, list[int], Any]]]] = {}
    identities = [open_identified(path, filesystem)[1] for path in paths]  # locally a stat, no open file
    prefix = f"{cache.filesystem_key}:"
    found = cache.cache.get_many(cache.scope, [prefix + path for path in paths], identities)
    asked_of: dict[int, tuple[TreePlan, list[tuple[ColumnInfo, bool]]]] = {}  # per plan: what it asks
    grants = cache.grants
    for i, (path, identity, facts) in enumerate(zip(paths, identities, found)):
        looked_up[i] = identity, facts
        if facts is None or facts.footer_grant is not None and not grants(facts.footer_grant):
            continue
        source = ReaderFacts(facts, functools.partial(open_pruning_reader, path, keys, filesystem), grants)
        wanted = groups[i]
        candidates = list(range(source.num_row_groups)) if wanted is None else list(wanted)
        if wanted is not None and not all(0 <= a < b < source.num_row_groups
                                          for a, b in zip(candidates, [*candidates[1:], source.num_row_groups])):
            continue  # not ascending row groups of the file: judged (and refused) on its own
        plan = tree_plan(tree_of(i), source.columns, schema, memo)
        planned = asked_of.get(id(plan))
        if planned is None or planned[0] is not plan:
            planned = asked_of[id(plan)] = (plan, plan.asked())
        if source.answers(planned[1], candidates):
            batches.setdefault((id(plan), id(source.columns)), (plan, []))[1].append((i, source, candidates, identity))
    answered: dict[int, FilePrune] = {}
    for plan, members in batches.values():
        joined = FilesFacts([source for _, source, _, _ in members])
        joined_candidates = [joined.starts[k] + rg for k, (_, _, candidates, _) in enumerate(members) for rg in candidates]
        kept, by_stats, by_bloom = (joined.split(rgs) for rgs in TreeVerdicts(plan, joined, joined_candidates).judge())
        for (i, source, _, identity), keep, stats, bloom in zip(members, kept, by_stats, by_bloom):
            facts = source.facts
            assert facts is not None and source.opened is None  # answered from the cache: nothing read
            shared = bool(keep) and unless_shared and facts.shared_format_opens
            if on_reader is not None and keep and not shared:
                continue  # its scan needs a reader: the file is opened, on its own
            answered[i] = FilePrune(facts.path, source.num_row_groups, tuple(keep), tuple(stats), tuple(bloom), 0, 0,
                                    identity_size(identity), True, identity, shared)
    return answered, looked_up


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
                trees: Sequence[Node] | None = None, on_reader_unless_shared: bool = False,
                opened: dict[str, ParquetBloomReader] | None = None) -> list[FilePrune]:
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

    ``on_reader_unless_shared``: a file answered from the cache whose facts say pyarrow's shared
    format opens it is not handed to
    ``on_reader`` (its result says ``shared_format_opens``).

    ``opened``: readers the caller opened already (:func:`open_pruning_reader`), by path, used
    for those files instead of opening them again (without a ``cache``); each is closed here,
    used or not.

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
    on_reader_unless_shared : bool, default False
        Skip ``on_reader`` for files pyarrow's shared format opens.
    opened : dict of str to ParquetBloomReader, optional
        Readers already open, by path (emptied: each is closed here).

    Returns
    -------
    list of FilePrune
        One per path, in order.

    Raises
    ------
    TypeError
        ``cache`` is not a :class:`PruneCache`.
    ValueError
        ``threads`` < 1, or not one tree per path in ``trees``.
    secure_bloom.errors.KeyManagementError
        A key cannot be obtained.
    secure_bloom.errors.ParquetFileError, MalformedInputError, AuthenticationError
        A file is not Parquet (``NotParquetError``), is damaged, or a footer, metadata or filter fails authentication.
    OSError
        A file cannot be read.
    """
    ready = dict(opened or {})
    if opened:
        opened.clear()
    try:
        return _prune_all(paths, tree, keys, filesystem, schema, row_groups, threads, progress, on_done, on_reader,
                          cache, trees, on_reader_unless_shared, ready)
    finally:
        for reader in ready.values():  # not handed to a file (or a cache asked to open it itself)
            reader.close()


def _prune_all(paths: Sequence[str], tree: Node, keys: KeyAccess | None, filesystem: Any, schema: pa.Schema | None,
               row_groups: Sequence[Sequence[int] | None] | None, threads: int | None, progress: bool | None,
               on_done: Callable[[FilePrune], None] | None, on_reader: OnReader | None, cache: PruneCache | None,
               trees: Sequence[Node] | None, on_reader_unless_shared: bool,
               ready: dict[str, ParquetBloomReader]) -> list[FilePrune]:
    if cache is not None and not isinstance(cache, PruneCache):
        raise TypeError(f"cache must be a PruneCache, got {type(cache).__name__}")
    use = (_CacheUse(cache, cache.scope(keys), filesystem_key(filesystem),
                     Grants(keys.unwrapper.rechecker() if keys is not None else None)) if cache is not None else None)
    if threads is None:
        threads = default_prune_threads(paths, filesystem)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    groups = list(row_groups) if row_groups is not None else [None] * len(paths)
    if trees is not None and len(trees) != len(paths):
        raise ValueError(f"trees must have one tree per path: {len(trees)} for {len(paths)} paths")
    memo: dict[Any, Any] = {}
    bar = None
    if _progress_wanted(progress) and len(paths) > 1:
        from tqdm import tqdm

        bar = tqdm(total=len(paths), desc="pruning", unit="file", file=sys.stderr, leave=False)

    answered, looked_up = ({}, {}) if use is None else _answered_from_cache(
        paths, (lambda i: tree) if trees is None else trees.__getitem__, groups, keys, filesystem, schema, use, memo,
        on_reader, on_reader_unless_shared)

    def work(i: int) -> FilePrune:
        result = answered.pop(i, None)
        if result is None:
            preopened = ready.pop(paths[i], None) if use is None else None
            result = _prune_one(paths[i], filesystem, keys, tree if trees is None else trees[i], schema, groups[i],
                                on_reader, use, memo, on_reader_unless_shared, preopened, looked_up.pop(i, None))
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

