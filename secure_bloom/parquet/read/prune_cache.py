"""A bounded, in-memory cache of what pruning derived from each file: :class:`PruneCache`.

Warm lookups (a service answering many key lookups over the same files) need not re-read and
re-decrypt the same footers and Bloom filters: per file, the cache keeps the number of row
groups, the leaf columns and their type orders, per (row group, column) the statistics
:class:`~secure_bloom.parquet.read.statistics.Bounds` (or "unavailable") and the Bloom filter (or
"none"). It never holds key bytes, a KMS client or a reader (only the wrapped key material
files store, to recheck access: below). A lookup whose answers are all
cached only checks the file's identity (``os.stat`` locally, one HEAD (an open) on an object
store) and does not open it.

Entries are scoped by the file's path AND identity (:mod:`.identity`: local: device, inode,
size, mtime_ns and ctime_ns; S3: size, ETag, VersionId, Last-Modified; other filesystems: size,
mtime and a digest of the tail, which proves the version only for an encrypted footer): a file
that changed is read again, never answered from what an older version held; a file whose
version cannot be proven (no identity; a plaintext footer on a filesystem telling no inode,
ETag or version: :func:`~secure_bloom.parquet.file.identity.reusable`) is not cached. Facts are stored under the identity of
the descriptor they were read from, and facts kept for one version are never combined with what
a reader of another version finds (:func:`~secure_bloom.parquet.read.prune.prune_files` then prunes
that version afresh). They
are also scoped by the :class:`~secure_bloom.parquet.KeyAccess` object they were read with (by
identity, without holding it): a caller with other keys, or none, never gets answers derived
with keys it was not given. Outcomes of a missing key ("maybe") are not cached, so keys given
later are used.

Facts derived with a key (a decrypted or verified footer; the statistics and filter of an
encrypted chunk) live no longer than the caller's access to that key: each keeps the key's
:class:`~secure_bloom.kms.KeyGrant` (key metadata and wrapped key material, never a key), and a
lookup answers from them only after asking for the key again
(:meth:`~secure_bloom.kms.KeyUnwrapper.recheck`, through the same KEK cache as a read: with
``KeyAccess(cache_lifetime_s=0)`` that is one KMS call per key per lookup; by default a KEK
unwrapped in the last ``cache_lifetime_s`` seconds answers without one). When the KMS refuses,
the file is read as without a cache, so the caller gets the same error as an uncached read
(:class:`~secure_bloom.errors.KeyAccessDeniedError`), never an answer.

The cache also keeps, for :func:`~secure_bloom.parquet.read.api.scan` and ``read_table``, the
dataset discoveries of up to :data:`MAX_DATASETS` sources (:class:`DatasetFacts`: a schema, file
names, partition expressions, the listing they were found in; no data, outside ``max_bytes``),
used only while the source lists the same and its first file is unchanged (:mod:`.known`).

Security: the cache holds decrypted Bloom filters and decrypted statistics (min/max values) of
encrypted columns in process memory, as the process holding the keys could recompute them at
any time; bounded by ``max_bytes``, never persisted, dropped by :meth:`PruneCache.clear` or with
the object. ``repr`` shows counts only.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow.fs as pafs

from ...filter import SplitBlockBloomFilter
from ...kms import KeyGrant
from ..file.identity import Identity, file_identity, identity_size, reusable
from ..file.schema import ColumnInfo
from .statistics import Bounds

__all__ = ["PruneCache", "CacheStats", "FileFacts", "DatasetFacts", "MAX_DATASETS", "filesystem_key", "file_identity", "identity_size", "DEFAULT_PRUNE_CACHE_BYTES"]

DEFAULT_PRUNE_CACHE_BYTES = 256 << 20
#: Bytes counted for a file entry, for each column of it, and for each cached item besides bitsets.
_FILE_BYTES = 1024
_COLUMN_BYTES = 256
_ITEM_BYTES = 160
#: Dataset discoveries a cache keeps (schemas and file lists: see :class:`DatasetFacts`).
MAX_DATASETS = 64
#: Distinct column layouts remembered for sharing (beyond it, the memory of them starts afresh).
_MAX_LAYOUTS = 256


@dataclass(frozen=True)
class FileFacts:
    """What pruning derived from one version of one file (``path``: as reports name it). ``bounds``: (row group, ordinal) ->
    Bounds, or None when the chunk has no usable statistics; ``filters``: (row group, ordinal) ->
    the filter, or None when the chunk has none. Missing keys are never recorded.
    ``footer_grant``: the footer key the file-level facts were read with (None: none needed);
    ``grants``: (row group, ordinal) -> the key an encrypted chunk's facts were derived with;
    ``shared_format_opens``: a scan of it needs no format of its own (no reader to choose one).

    Parameters
    ----------
    path : str
        The file, as reports name it.
    num_row_groups : int
        Its row groups.
    columns : tuple of ColumnInfo
        Its leaf columns.
    type_order : frozenset of int
        Ordinals of the leaves whose statistics follow the column's type order (TypeDefinedOrder).
    bounds : mapping of (int, int) to Bounds or None
        Statistics per (row group, ordinal) read so far.
    filters : mapping of (int, int) to SplitBlockBloomFilter or None
        Filters per (row group, ordinal) read so far.
    footer_grant : KeyGrant, optional
        The footer key's grant.
    grants : mapping of (int, int) to KeyGrant, optional
        The column keys' grants.
    shared_format_opens : bool, default False
        pyarrow's one dataset format opens this version.
    """

    path: str
    num_row_groups: int
    columns: tuple[ColumnInfo, ...]
    type_order: frozenset[int]
    bounds: Mapping[tuple[int, int], Bounds | None]
    filters: Mapping[tuple[int, int], SplitBlockBloomFilter | None]
    footer_grant: KeyGrant | None = None
    grants: Mapping[tuple[int, int], KeyGrant] = field(default_factory=dict)
    #: pyarrow's one format for a dataset opens this version (plaintext footer, or its KMS path
    #: decrypts every key: :func:`~secure_bloom.parquet.file.arrow_source.shared_format_opens`).
    shared_format_opens: bool = False

    @functools.cached_property
    def distinct_grants(self) -> tuple[KeyGrant, ...]:
        """The keys these facts were derived with, each once (a lookup rechecks them all)."""
        grants = {} if self.footer_grant is None else {self.footer_grant.key_metadata: self.footer_grant}
        for grant in self.grants.values():
            grants.setdefault(grant.key_metadata, grant)
        return tuple(grants.values())

    @functools.cached_property
    def column_grants(self) -> Mapping[int, tuple[KeyGrant, ...]]:
        """Per leaf ordinal, the keys its chunks' facts were derived with, each once (a lookup
        that still gets them all may answer from every cached fact of that column at once)."""
        out: dict[int, dict[bytes, KeyGrant]] = {}
        for (_, ordinal), grant in self.grants.items():
            out.setdefault(ordinal, {}).setdefault(grant.key_metadata, grant)
        return {ordinal: tuple(grants.values()) for ordinal, grants in out.items()}

    @property
    def nbytes(self) -> int:
        """The estimate the cache bounds: bitsets plus fixed sizes per file, column and item."""
        return (_FILE_BYTES + _COLUMN_BYTES * len(self.columns) + _ITEM_BYTES * (len(self.bounds) + len(self.filters))
                + sum(f.num_bytes for f in self.filters.values() if f is not None))

    def __repr__(self) -> str:
        return (f"FileFacts(row_groups={self.num_row_groups}, columns={len(self.columns)}, "
                f"bounds={len(self.bounds)}, filters={len(self.filters)})")


@dataclass(frozen=True)
class DatasetFacts:
    """What pyarrow's dataset discovery of one source found, for lookups that find the same
    listing: ``listing``, every entry the source had when it was discovered (names and kinds,
    hidden files and partition directories included: any change means discovering again);
    the dataset's ``schema``; ``paths`` and their ``partitions`` (partition expressions; None
    when the dataset has no partition fields), in pyarrow's order; ``first``, the file pyarrow
    read the schema from, and ``first_identity``, the version the schema is of (a lookup finding
    another version discovers again); ``names``, for a partitioned dataset, a pyarrow dataset of
    the paths and their partition expressions alone (a plain format, a filesystem never read
    through) that pyarrow's own ``get_fragments(filter=...)`` prunes by partition.

    Parameters
    ----------
    listing : tuple
        :func:`~.known.listing` of the source at discovery.
    schema : pyarrow.Schema
        The dataset's schema.
    paths : tuple of str
        Its files.
    partitions : tuple of pyarrow.dataset.Expression, optional
        Their partition expressions.
    first : str, optional
        The file the schema was read from.
    first_identity : Identity, optional
        Its version.
    names : pyarrow.dataset.FileSystemDataset, optional
        The paths and partition expressions alone (partitioned datasets).
    """

    listing: tuple[Any, ...]
    schema: Any
    paths: tuple[str, ...]
    partitions: tuple[Any, ...] | None
    first: str | None
    first_identity: Identity | None
    names: Any = None

    def __repr__(self) -> str:
        return f"DatasetFacts(files={len(self.paths)}, columns={len(self.schema)})"


@dataclass(frozen=True)
class CacheStats:
    """Counts since creation (or :meth:`PruneCache.clear`): files answered at least partly from
    the cache (hits), files not found or changed (misses), files whose identity could not be
    determined (uncacheable), entries dropped to stay within the bound, and the current size.

    Parameters
    ----------
    hits, misses, uncacheable, evictions : int
        The counts.
    files, bytes : int
        What the cache holds now.
    max_bytes : int
        Its bound.
    """

    hits: int = 0
    misses: int = 0
    uncacheable: int = 0
    evictions: int = 0
    files: int = 0
    bytes: int = 0
    max_bytes: int = 0

    def to_dict(self) -> dict[str, int]:
        """The counts as a dict.

        Returns
        -------
        dict of str to int
            The counts.

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"hits": self.hits, "misses": self.misses, "uncacheable": self.uncacheable,
                "evictions": self.evictions, "files": self.files, "bytes": self.bytes, "max_bytes": self.max_bytes}


def filesystem_key(filesystem: Any) -> str | None:
    """Names ``filesystem`` in cache keys.

    Parameters
    ----------
    filesystem : pyarrow.fs.FileSystem or None
        The filesystem files are read from.

    Returns
    -------
    str or None
        ``local`` (None or a ``LocalFileSystem``), a SHA-256 of its pickled options (no
        credentials kept), or None when it cannot be named (its files are then not cached).

    Raises
    ------
    None
        A filesystem that does not pickle gives None.
    """
    if filesystem is None or isinstance(filesystem, pafs.LocalFileSystem):
        return "local"
    try:
        return hashlib.sha256(pickle.dumps(filesystem)).hexdigest()
    except Exception:  # noqa: BLE001 - any filesystem that does not pickle is simply not cached
        return None


def _forget(gone: list[int], scope: int) -> Callable[[Any], None]:
    """The weakref callback marking ``scope`` gone (holds the list, not the cache)."""
    return lambda _: gone.append(scope)


class PruneCache:
    """An opt-in, bounded (``max_bytes``, least recently used files dropped first), thread-safe
    cache of what pruning derived from files, for warm lookups: pass it as ``cache=`` to
    :func:`~secure_bloom.parquet.read.api.read_table`, ``scan``, ``dataset`` or ``prune_files``.

    It holds decrypted Bloom filters and statistics of encrypted columns in process memory (what
    the process holding the keys could recompute), never key bytes; it is never persisted and is
    emptied by :meth:`clear` or by dropping the object. An entry answers only after the caller's
    access to its keys is rechecked (a revoked caller gets ``KeyAccessDeniedError``, never a
    cached answer). See :mod:`.prune_cache`.

    Parameters
    ----------
    max_bytes : int, default 256 MiB
        The bound on what is kept; 0 keeps nothing.

    Raises
    ------
    ValueError
        ``max_bytes`` is not an int >= 0.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from secure_bloom.parquet import PruneCache, attach_bloom_filters, read_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> pq.write_table(pa.table({"id": list(range(2_000))}), tmp / "ids.parquet", row_group_size=500)
    >>> _ = attach_bloom_filters(tmp / "ids.parquet", tmp / "ids.bloom.parquet", ["id"])
    >>> cache = PruneCache(max_bytes=64 << 20)
    >>> for key in (7, 8, 9):  # the first lookup reads footers and filters, the others do not
    ...     rows = read_table(tmp / "ids.bloom.parquet", filters=[("id", "==", key)], cache=cache)
    >>> cache.stats.hits >= 2
    True
    """

    def __init__(self, max_bytes: int = DEFAULT_PRUNE_CACHE_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes must be an int >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[int, str], tuple[Identity, FileFacts]] = OrderedDict()
        self._bytes = 0
        self._scopes: dict[int, weakref.ref[Any]] = {}
        self._gone: list[int] = []  # scopes whose KeyAccess was collected (appended by weakref callbacks)
        self._hits = self._misses = self._uncacheable = self._evictions = 0
        #: Dataset discoveries by (scope, filesystem, source paths, partitioning), least recent first.
        self._datasets: OrderedDict[tuple[Any, ...], DatasetFacts] = OrderedDict()
        #: One tuple per distinct column layout, shared by the facts of every file storing it
        #: (a lookup builds its plan once per layout, found by identity).
        self._layouts: dict[tuple[ColumnInfo, ...], tuple[ColumnInfo, ...]] = {}

    def scope(self, keys: Any) -> int:
        """The scope of entries read with ``keys`` (a KeyAccess or None): its id, held without
        holding the object. When a KeyAccess is collected its entries are dropped at the cache's
        next use, before its id can name another object.

        Parameters
        ----------
        keys : KeyAccess or None
            The caller's keys.

        Returns
        -------
        int
            The scope.

        Raises
        ------
        None
            Nothing of its own.
        """
        if keys is None:
            return 0
        scope = id(keys)
        with self._lock:
            self._purge_locked()
            ref = self._scopes.get(scope)
            if ref is None or ref() is not keys:
                self._drop_scope_locked(scope)
                self._scopes[scope] = weakref.ref(keys, _forget(self._gone, scope))
        return scope

    def _purge_locked(self) -> None:
        while self._gone:
            self._drop_scope_locked(self._gone.pop())

    def _drop_scope_locked(self, scope: int) -> None:
        for key in [k for k in self._entries if k[0] == scope]:
            self._bytes -= self._entries.pop(key)[1].nbytes
        for found in [k for k in self._datasets if k[0] == scope]:
            del self._datasets[found]
        self._scopes.pop(scope, None)

    def get(self, scope: int, path: str, identity: Identity | None) -> FileFacts | None:
        """The facts of this version of the file, or None (counted as a miss, or as uncacheable
        when ``identity`` is None). An entry of another version of the file is dropped.

        Parameters
        ----------
        scope : int
            A :meth:`scope`.
        path : str
            The file.
        identity : tuple or None
            The version of the file (None: unknown, never cached).

        Returns
        -------
        FileFacts or None
            What pruning derived from that version.

        Raises
        ------
        None
            Nothing of its own.
        """
        with self._lock:
            self._purge_locked()
            return self._get_locked(scope, path, identity)

    def get_many(self, scope: int, paths: Sequence[str], identities: Sequence[Identity | None]) -> list[FileFacts | None]:
        """:meth:`get` of each file, under one hold of the lock (a warm lookup asks for every file).

        Parameters
        ----------
        scope : int
            A :meth:`scope`.
        paths : sequence of str
            The files.
        identities : sequence of tuple or None
            Their versions, one per path.

        Returns
        -------
        list of FileFacts or None
            One per path, as :meth:`get` answers.

        Raises
        ------
        ValueError
            Not one identity per path.
        """
        if len(paths) != len(identities):
            raise ValueError(f"get_many needs one identity per path: {len(identities)} for {len(paths)} paths")
        with self._lock:
            self._purge_locked()
            return [self._get_locked(scope, path, identity) for path, identity in zip(paths, identities)]

    def _get_locked(self, scope: int, path: str, identity: Identity | None) -> FileFacts | None:
        if not reusable(identity):  # unknown, or a digest that does not prove the version
            self._uncacheable += 1
            return None
        entry = self._entries.get((scope, path))
        if entry is None or entry[0] != identity:
            if entry is not None:
                self._bytes -= self._entries.pop((scope, path))[1].nbytes
            self._misses += 1
            return None
        self._entries.move_to_end((scope, path))
        self._hits += 1
        return entry[1]

    def put(self, scope: int, path: str, identity: Identity | None, facts: FileFacts) -> None:
        """Keep ``facts`` for this version of the file (replacing what was kept), then drop the
        least recently used files beyond ``max_bytes``; facts larger than the bound are not kept.

        Parameters
        ----------
        scope : int
            A :meth:`scope`.
        path : str
            The file.
        identity : tuple or None
            The version of the file (None: unknown, never cached).
        facts : FileFacts
            What pruning derived from it.

        Raises
        ------
        None
            Nothing of its own.
        """
        if identity is None or not reusable(identity):
            return
        size = facts.nbytes
        with self._lock:
            if len(self._layouts) >= _MAX_LAYOUTS:
                self._layouts.clear()
            layout = self._layouts.setdefault(facts.columns, facts.columns)
            if layout is not facts.columns:
                facts = replace(facts, columns=layout)
            old = self._entries.pop((scope, path), None)
            if old is not None:
                self._bytes -= old[1].nbytes
            if size > self.max_bytes:
                return
            self._entries[(scope, path)] = (identity, facts)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped.nbytes
                self._evictions += 1

    def dataset(self, key: tuple[Any, ...]) -> DatasetFacts | None:
        """The discovery kept under ``key`` (its first part: a :meth:`scope`), or None.

        Parameters
        ----------
        key : tuple
            The source's key.

        Returns
        -------
        DatasetFacts or None
            pyarrow's discovery of the source.

        Raises
        ------
        None
            Nothing of its own.
        """
        with self._lock:
            self._purge_locked()
            found = self._datasets.get(key)
            if found is not None:
                self._datasets.move_to_end(key)
            return found

    def keep_dataset(self, key: tuple[Any, ...], facts: DatasetFacts | None) -> None:
        """Keep a discovery under ``key`` (None: forget it), the least recently used beyond
        :data:`MAX_DATASETS` dropped.

        Parameters
        ----------
        key : tuple
            The source's key.
        facts : DatasetFacts or None
            The discovery.

        Raises
        ------
        None
            Nothing of its own.
        """
        with self._lock:
            self._datasets.pop(key, None)
            if facts is None:
                return
            self._datasets[key] = facts
            while len(self._datasets) > MAX_DATASETS:
                self._datasets.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry (the filters and statistics they hold) and reset the counts.

        Raises
        ------
        None
            Nothing of its own.
        """
        with self._lock:
            self._entries.clear()
            self._scopes.clear()
            self._layouts.clear()
            self._datasets.clear()
            self._bytes = 0
            self._hits = self._misses = self._uncacheable = self._evictions = 0

    @property
    def stats(self) -> CacheStats:
        """Hits, misses, evictions, files and bytes held (a snapshot)."""
        with self._lock:
            self._purge_locked()
            return CacheStats(self._hits, self._misses, self._uncacheable, self._evictions, len(self._entries),
                              self._bytes, self.max_bytes)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        s = self.stats
        return (f"PruneCache(files={s.files}, bytes={s.bytes}, max_bytes={s.max_bytes}, hits={s.hits}, "
                f"misses={s.misses})")

    __str__ = __repr__
