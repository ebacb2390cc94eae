"""Dataset discovery kept in a :class:`~.prune_cache.PruneCache`, for warm lookups.

``pyarrow.dataset.dataset(source)`` lists the source and opens (and decrypts) the footer of the
first file for the schema: at every lookup, a cost of its own. What it finds is a function of
the listing (the names and kinds of the entries under the directory: pyarrow's rules for hidden
``.``/``_`` files and partition directories apply to names), of the partitioning argument and of
the version of the first file. So a cache keeps what discovery found (:class:`DatasetFacts`)
with the complete listing it was made from - every entry, hidden files included, recursively -
and the identity of the first file's version; a lookup lists the source again (one
``os.scandir`` per directory, or one ``FileSelector`` listing on a ``pyarrow.fs`` filesystem, as
pyarrow does) and uses the kept discovery only if the listing is the same, entry for entry, and
the first file is the same version. Anything else (a file added, removed or renamed, a hidden
file, a partition directory, a first file replaced) is discovered afresh by pyarrow.

Kept only where the discovery is a function of those alone: the partitioning is None, a flavor
name (``"hive"``) or a list of field names (not a Partitioning object, whose identity a key
cannot name); the filesystem can be named (:func:`~.prune_cache.filesystem_key`); a local
directory holding no symbolic link. The first file's version is the one whose schema pyarrow
gave: after discovery its identity is taken (by the prune that follows, or a ``stat``), its
schema read again by pyarrow, and the identity taken again; the discovery is kept only if both
identities agree and the schema is the one discovered (on an object store: one more footer read
and one more HEAD, when a discovery is kept).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from ..file.identity import Identity, file_identity
from ...errors import StorageUnavailableError
from ..file.sources import Resolved, StoreTimeouts, display_path, resolve, storage_error
from .prune_cache import DatasetFacts, PruneCache, filesystem_key

__all__ = ["KnownSource", "Listed", "listed_files", "listing"]


#: Files of a dataset: (paths, their partition expressions; None where every file's is true).
Listed = tuple[Sequence[str], Sequence[Any] | None]


def listed_files(base: ds.FileSystemDataset) -> Listed:
    """The files of ``base`` and their partition expressions, in pyarrow's order.

    Parameters
    ----------
    base : pyarrow.dataset.FileSystemDataset
        A dataset pyarrow discovered.

    Returns
    -------
    Listed
        (paths, partition expressions); the expressions are None for a dataset pyarrow
        discovered without partition fields (every file's is true).

    Raises
    ------
    None
        Reads the discovered dataset in memory.
    """
    partitioning = getattr(base, "partitioning", None)
    if partitioning is not None and len(partitioning.schema) == 0:
        return base.files, None
    fragments = list(base.get_fragments())
    return [f.path for f in fragments], [f.partition_expression for f in fragments]


def _partitioning_key(partitioning: Any) -> Hashable | None:
    """``partitioning`` in a cache key (None: one that cannot be named)."""
    if partitioning is None:
        return ("none",)
    if isinstance(partitioning, str):
        return ("flavor", partitioning)
    if isinstance(partitioning, (list, tuple)) and all(isinstance(n, str) for n in partitioning):
        return ("fields", *partitioning)
    return None


def _local_tree(root: str) -> list[tuple[str, bool]] | None:
    """Every entry under the local directory ``root`` (path, is a directory), recursively;
    None when one is a symbolic link (what it names can change without the listing changing)."""
    entries: list[tuple[str, bool]] = []
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as found:
            for entry in found:
                if entry.is_symlink():
                    return None
                is_dir = entry.is_dir(follow_symlinks=False)
                entries.append((entry.path, is_dir))
                if is_dir:
                    pending.append(entry.path)
    return entries


def listing(resolved: Resolved) -> tuple[Any, ...] | None:
    """What pyarrow's discovery of ``resolved`` depends on besides the files' contents: the
    kind of each source path and, for a directory, every entry under it (sorted; one
    ``os.scandir`` per local directory, one recursive ``FileSelector`` listing elsewhere).

    Parameters
    ----------
    resolved : Resolved
        The source's filesystem and paths (:func:`~secure_bloom.parquet.file.sources.resolve`).

    Returns
    -------
    tuple or None
        ``("files", ...)``, ``("file", path)`` or ``("directory", path, entries...)``; None when
        it cannot be told (not a file or directory, a local symbolic link, an error): the
        discovery is then not kept.

    Raises
    ------
    secure_bloom.errors.StorageUnavailableError
        The store does not answer (raised at once: a second wait would double the call's).
    """
    fs = resolved.filesystem
    try:
        if len(resolved.paths) > 1:
            return ("files", *resolved.paths)  # pyarrow lists nothing: it opens these
        path = resolved.paths[0]
        kind = fs.get_file_info(path).type
        if kind == pafs.FileType.File:
            return ("file", path)
        if kind != pafs.FileType.Directory:
            return None
        if isinstance(fs, pafs.LocalFileSystem):
            tree = _local_tree(path)
            if tree is None:
                return None
            return ("directory", path, *sorted(tree))
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
        return ("directory", path, *sorted((i.path, int(i.type)) for i in infos))
    except (OSError, ValueError, pa.ArrowException) as e:
        # a store that does not answer now would keep the discovery waiting as long again:
        # the call ends after one request's tries, not two (StoreTimeouts)
        unreachable = storage_error(e, display_path(fs, resolved.paths[0])) if isinstance(e, OSError) else None
        if isinstance(unreachable, StorageUnavailableError):
            raise unreachable from None
        return None


class KnownSource:
    """One source as a :class:`PruneCache` keeps its discovery: :meth:`of` names it, :meth:`facts`
    gives the kept discovery while the source lists the same, :meth:`remember` keeps one.

    Parameters
    ----------
    cache : PruneCache
        The cache that keeps the discovery.
    resolved : Resolved
        The source's filesystem and paths.
    key : tuple
        Its cache key: (key scope, filesystem key, paths, partitioning key).
    """

    def __init__(self, cache: PruneCache, resolved: Resolved, key: tuple[Any, ...]) -> None:
        self.cache = cache
        self.resolved = resolved
        self.key = key

    @classmethod
    def of(cls, cache: PruneCache, source: Any, keys: Any, filesystem: Any, partitioning: Any,
           timeouts: StoreTimeouts | None) -> KnownSource | None:
        """The source, or None when its discovery cannot be kept (see the module docstring).

        Parameters
        ----------
        cache : PruneCache
            The cache to keep it in.
        source : str, os.PathLike or list of them
            What ``pyarrow.dataset.dataset`` is given.
        keys : KeyAccess or None
            The caller's keys (entries are scoped by them, :meth:`PruneCache.scope`).
        filesystem : pyarrow.fs.FileSystem or None
            The filesystem ``source`` is on.
        partitioning : None, str or list of str
            The ``partitioning`` argument (a Partitioning object cannot be named: None is returned).
        timeouts : StoreTimeouts or None
            For a filesystem built from a URI.

        Returns
        -------
        KnownSource or None
            None when the partitioning or filesystem cannot be named, or the source does not
            resolve (the discovery then raises the error).

        Raises
        ------
        None
            Errors resolving the source give None.
        """
        parts = _partitioning_key(partitioning)
        if parts is None:
            return None
        try:
            resolved = resolve(source, filesystem, timeouts)
        except (OSError, ValueError, TypeError, pa.ArrowException):
            return None  # the discovery raises it
        fs_key = filesystem_key(resolved.filesystem)
        if fs_key is None:
            return None
        return cls(cache, resolved, (cache.scope(keys), fs_key, resolved.paths, parts))

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The filesystem the source resolved to."""
        return self.resolved.filesystem

    def listing(self) -> tuple[Any, ...] | None:
        """:func:`listing` of this source now.

        Returns
        -------
        tuple or None
            None when it cannot be told.

        Raises
        ------
        secure_bloom.errors.StorageUnavailableError
            The store does not answer.
        """
        return listing(self.resolved)

    def facts(self) -> DatasetFacts | None:
        """The kept discovery if the source still lists as it did (a listing that differs forgets it).

        Returns
        -------
        DatasetFacts or None
            None: discover it.

        Raises
        ------
        secure_bloom.errors.StorageUnavailableError
            The store does not answer the listing.
        """
        kept = self.cache.dataset(self.key)
        if kept is None:
            return None
        if self.listing() != kept.listing:
            self.cache.keep_dataset(self.key, None)
            return None
        return kept

    def forget(self) -> None:
        """Drop the discovery kept for this source.

        Raises
        ------
        None
            Removes an entry in memory.
        """
        self.cache.keep_dataset(self.key, None)

    def identity_of(self, path: str) -> Identity | None:
        """The identity of ``path`` on this source's filesystem now (:func:`~..file.identity.file_identity`).

        Parameters
        ----------
        path : str
            A file of the source.

        Returns
        -------
        Identity or None
            None when it cannot be determined.

        Raises
        ------
        None
            Errors give None.
        """
        return file_identity(path, self.filesystem)

    def remember(self, before: tuple[Any, ...], base: ds.FileSystemDataset,
                 seen: Mapping[str, Identity | None] | None = None) -> None:
        """Keep ``base`` (pyarrow's discovery, made after the source listed as ``before``) when
        the source still lists so and its first file is provably the version its schema is of:
        its identity taken, its schema read again by pyarrow, its identity taken again. Nothing
        is kept otherwise.

        Parameters
        ----------
        before : tuple
            :meth:`listing` taken before the discovery.
        base : pyarrow.dataset.FileSystemDataset
            The discovery.
        seen : mapping of str to Identity or None, optional
            Identities of files taken after the discovery (by the prune that followed it).

        Raises
        ------
        secure_bloom.errors.StorageUnavailableError
            The store does not answer the second listing.
        """
        fs = self.filesystem
        paths, partitions = listed_files(base)
        first = paths[0] if paths else None
        identity = None
        if first is not None:
            identity = (seen or {}).get(first) or file_identity(first, fs)
            if identity is None:
                return
            try:
                inspected = base.format.inspect(first, fs)
            except (OSError, pa.ArrowException):
                return
            if file_identity(first, fs) != identity:
                return  # replaced since the discovery: which version the schema is of cannot be told
            partitioning = base.partitioning
            expected = inspected if partitioning is None else pa.unify_schemas([inspected, partitioning.schema])
            if not expected.equals(base.schema, check_metadata=True):
                return
        if self.listing() != before:
            return
        names = None
        if partitions is not None:  # files and partition expressions only: no filesystem, no keys
            names = ds.FileSystemDataset.from_paths(list(paths), schema=base.schema, format=ds.ParquetFileFormat(),
                                                    filesystem=pafs.LocalFileSystem(), partitions=list(partitions))
        self.cache.keep_dataset(self.key, DatasetFacts(
            before, base.schema, tuple(paths), None if partitions is None else tuple(partitions), first, identity,
            names))
