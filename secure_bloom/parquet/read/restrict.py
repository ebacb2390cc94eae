"""One pruning of a discovered dataset: the files and row groups a filter leaves, as a dataset
pyarrow scans (:func:`restrict`), and the format pyarrow decrypts each surviving file with
(:func:`file_format`). :mod:`.api` (``read_table``, ``scan``, ``dataset``) and
:mod:`.pruning_dataset` (the engines' Dataset) share it.

A file pyarrow's KMS path opens (plaintext, or key tools material for the footer and every column
key, the AAD prefix stored) is scanned with the dataset's one format; any other is scanned with a
format holding the footer key secure_bloom resolved
(:func:`~secure_bloom.parquet.file.arrow_source.direct_decryption_properties`). The scan reads
exactly the file versions the row groups were chosen from (:class:`~secure_bloom.parquet.file.identity.PinnedFileSystem`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from ...errors import ColumnNotFoundError
from ...types import ChunkEncryption
from ..file.arrow_source import direct_decryption_properties, shared_format_opens
from ..file.identity import PinnedFileSystem, opens_natively
from ..file.keys import KeyAccess
from ..file.lifetime import retain
from ..file.reader import ParquetBloomReader
from ..file.read_counting import ReadCounter
from ..file.tail import FileTail
from .known import Listed, listed_files
from .partitions import partition_tree
from .predicate import Node, columns_of, predicate_tree
from .prune import FilePrune, PruneReport, prune_files
from .prune_cache import PruneCache
from .scan_keys import ScanKeys, reads_leaf, scan_keys_for

__all__ = ["restrict", "restrict_located", "parquet_format", "file_format", "native_open_budget", "HELD_TAIL_BYTES",
           "NATIVE_OPENS_MAX"]

#: Tail bytes of surviving files a restricted dataset keeps for its scan's first open of each
#: (:class:`~secure_bloom.parquet.file.identity.PinnedFileSystem` ``held``): 64 files' 64 KiB
#: tails. Files beyond it have their footer fetched again by the scan (one request each).
HELD_TAIL_BYTES = 4 << 20
#: The most surviving files a scan made with ``open_now`` opens when it is made.
NATIVE_OPENS_MAX = 4096


def native_open_budget() -> int:
    """How many surviving files one scan opens at once when it is made (``open_now``): a
    quarter of the process's soft open-file limit, at most :data:`NATIVE_OPENS_MAX`.

    Returns
    -------
    int
        The file count (files beyond it open when the scan reaches them, through the pinning
        filesystem).

    Raises
    ------
    None
        Reads a limit.
    """
    try:
        import resource
    except ImportError:  # not a Unix
        return 256
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return NATIVE_OPENS_MAX if soft == resource.RLIM_INFINITY else max(0, min(NATIVE_OPENS_MAX, soft // 4))


def parquet_format(keys: KeyAccess | None) -> ds.ParquetFileFormat:
    """pyarrow's Parquet format, with decryption through ``keys.kms`` when it is set (KMS
    answers shared with every scan of ``keys``: :mod:`.scan_keys`).

    Parameters
    ----------
    keys : KeyAccess or None
        The caller's keys.

    Returns
    -------
    pyarrow.dataset.ParquetFileFormat
        The format.

    Raises
    ------
    None
        Nothing of its own.
    """
    if keys is None or keys.kms is None:
        return ds.ParquetFileFormat()
    return ScanKeys(keys, keys.cache_lifetime_s).format


def _direct_format(decryption: Any) -> ds.ParquetFileFormat:
    """pyarrow's Parquet format for one file, holding that file's decryption properties."""
    return ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(decryption_properties=decryption))


def file_format(reader: ParquetBloomReader, keys: KeyAccess | None, shared: ds.ParquetFileFormat,
                columns: Sequence[str] | None = None) -> ds.ParquetFileFormat:
    """The format pyarrow scans the open file with: ``shared`` (plaintext, or pyarrow's KMS path)
    or, for a file that path cannot open, one holding its footer key. ``columns`` (None: all)
    are what the scan reads, filter columns included: the columns that need keys of their own
    pyarrow cannot be given make it :class:`UnsupportedParquetFeatureError` here.

    Parameters
    ----------
    reader : ParquetBloomReader
        The open file.
    keys : KeyAccess or None
        The caller's keys.
    shared : pyarrow.dataset.ParquetFileFormat
        The dataset's shared format.
    columns : sequence of str, optional
        What the scan reads.

    Returns
    -------
    pyarrow.dataset.ParquetFileFormat
        The format for this file.

    Raises
    ------
    secure_bloom.errors.UnsupportedParquetFeatureError
        Columns under keys of their own that pyarrow cannot be given.
    """
    if shared_format_opens(reader):
        return shared
    footer = reader.footer
    own_keys = [c for c in reader.column_chunks() if c.encryption is ChunkEncryption.COLUMN_KEY]
    read = [c for c in own_keys if reads_leaf(c.column.path_in_schema, columns)]
    return _direct_format(direct_decryption_properties(
        footer, [c.key_metadata for c in read], keys if keys is not None else KeyAccess(), reader.path,
        columns=list(dict.fromkeys(c.column.path for c in read))))




def restrict(base: ds.FileSystemDataset, fs: pafs.FileSystem, fmt: ds.ParquetFileFormat,
             expression: Any, *, keys: KeyAccess | None, columns: Sequence[str] | None = None,
             threads: int | None = None, progress: bool | None = None,
             cache: PruneCache | None = None,
             counter: ReadCounter | None = None, open_now: bool = False,
             ) -> tuple[ds.FileSystemDataset, Node, PruneReport]:
    """The row groups of ``base`` (from :func:`~.discovery.discover_dataset`) that ``expression`` (None: all) may
    match, as a dataset read through a filesystem that pins each file's pruned version (and
    counts reads into ``counter``); the pruning tree; the report. ``columns`` (None: all) are the
    columns the scan reads: see :func:`scan`.

    Parameters
    ----------
    base : pyarrow.dataset.FileSystemDataset
        The discovered dataset.
    fs : pyarrow.fs.FileSystem
        Its filesystem.
    fmt : pyarrow.dataset.ParquetFileFormat
        The shared format.
    expression : pyarrow.compute.Expression or None
        The filter.
    keys : KeyAccess or None
        The caller's keys.
    columns : sequence of str, optional
        The columns the scan reads.
    threads : int, optional
        Pruning threads.
    progress : bool, optional
        A progress bar.
    cache : PruneCache, optional
        Kept across lookups.
    counter : ReadCounter, optional
        Counts the scan's reads.
    open_now : bool, default False
        Open the surviving files now, each checked to be the version pruned, and make their
        fragments of the open files (:meth:`~secure_bloom.parquet.file.identity.PinnedFileSystem.open_native`,
        up to :func:`native_open_budget` files; not with a ``counter``, nor on a filesystem
        written in Python, a ``pyarrow.fs.PyFileSystem``): a scan of them never
        calls Python from Arrow's threads, which ``Scanner.to_reader()`` needs (it keeps the GIL
        while it starts the scan). pyarrow names such a fragment ``<Buffer>`` (``__filename``); on
        an object store the scan fetches its footer again (no tail is held for it).

    Returns
    -------
    (pyarrow.dataset.FileSystemDataset, Node, PruneReport)
        The restricted dataset, the pruning tree, the report.

    Raises
    ------
    secure_bloom.errors.UnsupportedParquetFeatureError
        A surviving file pyarrow cannot decrypt ``columns`` in.
    secure_bloom.errors.KeyManagementError
        A key cannot be obtained.
    secure_bloom.errors.ParquetFileError, MalformedInputError, AuthenticationError
        A file is not Parquet (``NotParquetError``), is damaged, or fails authentication.
    """
    restricted, tree, report, _ = restrict_located(base, fs, fmt, expression, keys=keys, columns=columns, threads=threads,
                                            progress=progress, cache=cache, counter=counter, open_now=open_now)
    return restricted, tree, report


def _kept(base: ds.FileSystemDataset, listed: Listed, expression: Any) -> list[tuple[str, Any]]:
    """The files (path, partition expression or None) of ``listed`` that pyarrow's
    ``base.get_fragments(filter=expression)`` keeps: its own evaluation of the partition
    expressions (ColumnNotFoundError for a filter naming no column of the dataset). Files without
    partition fields are all kept or none: one of them decides for all (``base`` need not hold
    them then)."""
    paths, partitions = listed
    if expression is None:
        return list(zip(paths, partitions if partitions is not None else [None] * len(paths)))
    try:
        if partitions is None:
            probe = base if not paths else ds.FileSystemDataset(
                [base.format.make_fragment(paths[0], base.filesystem)], base.schema, base.format, base.filesystem)
            return [(path, None) for path in paths] if any(True for _ in probe.get_fragments(filter=expression)) else []
        return [(f.path, f.partition_expression) for f in base.get_fragments(filter=expression)]
    except pa.ArrowInvalid as e:
        missing = re.search(r"No match for FieldRef\.(?:Name|Nested)\((.*?)\) in ", str(e))
        if missing is None:
            raise
        raise ColumnNotFoundError(f"the filter names column {missing.group(1)!r}, which the dataset does not have "
                                  f"(columns: {', '.join(base.schema.names)})") from None


def restrict_located(base: ds.FileSystemDataset, fs: pafs.FileSystem, fmt: ds.ParquetFileFormat, expression: Any, *,
                     keys: KeyAccess | None, columns: Sequence[str] | None, threads: int | None,
                     progress: bool | None, cache: PruneCache | None, counter: ReadCounter | None,
                     listed: Listed | None = None, opened: dict[str, ParquetBloomReader] | None = None,
                     open_now: bool = False) -> tuple[ds.FileSystemDataset, Node, PruneReport, dict[str, int]]:
    """:func:`restrict`, and where each file pruned is in the report.

    Parameters
    ----------
    base, fs, fmt, expression, keys, columns, threads, progress, cache, counter, open_now
        As :func:`restrict` takes them.
    listed : Listed, optional
        The files of ``base`` (:func:`~.known.listed_files`) when the caller knows them (a kept
        discovery).
    opened : dict of str to ParquetBloomReader, optional
        Readers of some files opened already (the discovery's of the first file), handed to
        :func:`~.prune.prune_files` (which closes them).

    Returns
    -------
    (pyarrow.dataset.FileSystemDataset, Node, PruneReport, dict)
        As :func:`restrict`, and each pruned file's position in the report's files, by path.

    Raises
    ------
    secure_bloom.errors.ColumnNotFoundError
        The filter names a column the dataset does not have.
    secure_bloom.errors.UnsupportedParquetFeatureError
        A surviving file pyarrow cannot decrypt ``columns`` in.
    secure_bloom.errors.KeyManagementError
        A key cannot be obtained.
    secure_bloom.errors.MalformedInputError
        A damaged file (``AuthenticationError`` for a tampered one).
    """
    tree = predicate_tree(expression, base.schema)
    if listed is None:
        listed = listed_files(base)
    kept = _kept(base, listed, expression)
    read = None if columns is None else list(dict.fromkeys([*columns, *columns_of(tree)]))
    formats: dict[str, ds.ParquetFileFormat] = {}
    #: the tails pruning read of the surviving files: pyarrow's footer reads come from them
    tails: dict[str, FileTail] = {}
    # this scan's own KMS format: its keys are unwrapped before anyone scans it (.scan_keys)
    scan_keys = scan_keys_for(keys) if keys is not None and keys.kms is not None else None
    shared = scan_keys.format if scan_keys is not None else fmt

    def choose_format(path: str, reader: ParquetBloomReader, result: FilePrune) -> None:
        if result.row_groups:  # only the files scanned need pyarrow to decrypt them
            formats[path] = file_format(reader, keys, shared, read)
            if reader.tail.window:  # an object store's speculative read: the footer pyarrow reads again
                tails[path] = reader.tail

    trees = None
    if listed[1] is not None:
        unpartitioned = pc.scalar(True)  # a file outside partitions: the tree as it is
        trees = [tree if part.equals(unpartitioned) else partition_tree(tree, part, base.schema) for _, part in kept]
    pruned = prune_files([path for path, _ in kept], tree, keys=keys, filesystem=fs, schema=base.schema,
                         threads=threads, progress=progress, on_reader=choose_format, cache=cache, trees=trees,
                         on_reader_unless_shared=True, opened=opened)
    # pyarrow scans exactly the versions the row groups were chosen from, or raises FileChangedError
    identities = {path: result.scan_identity for (path, _), result in zip(kept, pruned)
                  if result.row_groups and result.scan_identity is not None}
    held: dict[str, tuple[int, bytes]] = {}
    # the files are opened now (open_now) where that reads them without Python: not through a
    # counter, nor a filesystem written in Python (whose files call Python whoever opens them)
    opening = open_now and counter is None and opens_natively(fs)
    # what of them waits for the scan's opens; none when the files are opened now, so that an
    # object store's open here is the store's own file: its footer is fetched again
    budget = HELD_TAIL_BYTES if not opening else 0
    for path in identities:  # in the files' order
        tail = tails.get(path)
        region = tail.held() if tail is not None else None
        if region is not None and len(region[1]) <= budget:
            held[path] = region
            budget -= len(region[1])
    handler = PinnedFileSystem(fs, identities, counter, held)
    pinned = pafs.PyFileSystem(handler)
    if scan_keys is not None:  # the footers read again for it are the scan's metadata reads
        for i, ((path, _), result) in enumerate(zip(kept, pruned)):
            if result.row_groups and (result.shared_format_opens or formats[path] is shared):
                n, requests = scan_keys.unwrap_before_scan(path, fs, read, result.scan_identity, tails.get(path))
                pruned[i] = replace(result, metadata_bytes_read=result.metadata_bytes_read + n,
                                    metadata_requests=result.metadata_requests + requests)
    chosen = [(path, part, result, shared if result.shared_format_opens else formats[path])
              for (path, part), result in zip(kept, pruned) if result.row_groups]
    opens = native_open_budget() if opening else 0  # the first files the scan reaches, opened now
    fragments: list[ds.Fragment] = []
    for path, part, result, chosen_format in chosen:
        native = handler.open_native(path) if len(fragments) < opens else None
        fragments.append(chosen_format.make_fragment(path if native is None else native,
                                                     filesystem=pinned if native is None else None,
                                                     partition_expression=part, row_groups=list(result.row_groups),
                                                     file_size=result.file_size))
    restricted = ds.FileSystemDataset(fragments, schema=base.schema, format=shared, filesystem=pinned)
    # an Arrow thread finishing the scan after to_table returns must never be the one destroying
    # these (its destructor takes the GIL: fatal while the interpreter exits; see .lifetime)
    retain(pinned, shared)
    report = PruneReport(files=pruned, files_skipped_by_partition=len(listed[0]) - len(kept),
                         cache=cache.stats if cache is not None else None)
    return restricted, tree, report, {path: i for i, (path, _) in enumerate(kept)}
