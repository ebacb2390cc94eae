"""Read by key: pyarrow reads of Parquet files that skip the row groups a filter rules out.

:func:`read_table` has the shape of ``pyarrow.parquet.read_table`` and returns exactly the rows
pyarrow's own filtered read returns: the row groups are pruned first (:mod:`.prune`: min/max
statistics, then Bloom filters for ``==`` / ``in``, encrypted or not), then pyarrow scans the
surviving row groups with the same filter. :func:`dataset` returns that restricted
``pyarrow.dataset.Dataset`` (filter attached) for Polars (``polars.scan_pyarrow_dataset``),
DuckDB (``duckdb.from_arrow``) or any other Arrow consumer. :func:`scan` gives both, plus the
:class:`~secure_bloom.parquet.read.prune.PruneReport`.

Partitions: a filter on a partition field is decided per file on its partition value, as
pyarrow's dataset decides it (:mod:`.partitions`), never on a same-named column inside the file.
Changed files: the restricted dataset scans only the file versions its row groups were chosen
from (:mod:`.identity`); one modified or replaced since pruning is
:class:`~secure_bloom.errors.FileChangedError` when pyarrow opens it.

Sources: a file, a directory (hive partitions: ``year=2024/``), a list of files, or a URI
(``s3://``, ``gs://`` where pyarrow has that filesystem, ``file://``), or paths on a given
``pyarrow.fs`` filesystem (``S3FileSystem(endpoint_override=...)``). Only footers, the Bloom
filters asked for and the surviving row groups' column chunks are fetched.

Encrypted files are decrypted by pyarrow with the same KMS client as ours (``keys.kms``, through
:mod:`secure_bloom.kms.pyarrow_adapter` and pyarrow's key tools) when they hold key tools material
(what parquet-java, Spark and pyarrow write). Files that path cannot open - key metadata that is a
bare key id (``keys.explicit``), or a withheld AAD prefix (``keys.aad_prefix``) - are scanned with
the footer key our key access resolved while pruning, given to pyarrow per file
(``create_decryption_properties``: one ParquetFileFormat per such file, fragments of one
dataset). pyarrow takes a single key that way (uniform encryption): a surviving file whose columns
to read have keys of their own is :class:`~secure_bloom.errors.UnsupportedParquetFeatureError`
before anything is scanned (:func:`~secure_bloom.parquet.file.arrow_source.direct_decryption_properties`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from ..file.keys import KeyAccess, as_key_access
from ..file.lifetime import scanning
from ..file.reader import ParquetBloomReader
from ..file.read_counting import ReadCounter
from ..file.sources import StoreTimeouts
from .discovery import discover_dataset, scan_filesystem
from .known import KnownSource
from .predicate import Node, to_expression
from .prune import PruneReport
from .prune_cache import PruneCache
from .pruning_dataset import PruningDataset
from .restrict import file_format, parquet_format, restrict, restrict_located

__all__ = ["read_table", "dataset", "scan", "open_dataset", "restrict", "PrunedScan", "PruningDataset", "parquet_format",
           "file_format"]


@dataclass
class PrunedScan:
    """The surviving row groups as a dataset, the filter, and what pruning did.

    Parameters
    ----------
    dataset : pyarrow.dataset.Dataset
        The surviving row groups (each file pinned to the version pruned).
    expression : pyarrow.compute.Expression or None
        The filter pyarrow applies when reading.
    tree : Node
        The predicate tree the pruner evaluated.
    report : PruneReport
        What pruning did.
    counter : ReadCounter, optional
        Counts the scan's reads (``count_reads=True``).
    columns : tuple of str, optional
        The columns the scan was made for.
    """

    dataset: ds.Dataset
    expression: Any
    tree: Node
    report: PruneReport
    counter: ReadCounter | None = None
    columns: tuple[str, ...] | None = None

    def to_table(self, columns: Sequence[str] | None = None, *, use_threads: bool = True) -> pa.Table:
        """The matching rows (pyarrow applies the exact filter); fills ``report.rows`` and, when
        reads are counted, ``report.data_bytes_read``.

        Parameters
        ----------
        columns : list of str, optional
            The columns to return (default: the scan's; a scan made for some columns,
            ``scan(columns=...)``, reads only those).
        use_threads : bool, default True
            pyarrow's reading threads.

        Returns
        -------
        pyarrow.Table
            The rows pyarrow's own filtered read returns.

        Raises
        ------
        ValueError
            ``columns`` asks for columns the scan was not made for.
        secure_bloom.errors.FileChangedError
            A file was modified or replaced since it was pruned.
        OSError
            pyarrow cannot read a file.
        """
        if columns is None:
            columns = self.columns
        elif self.columns is not None and not set(columns) <= set(self.columns):
            raise ValueError(f"this scan was made for the columns {list(self.columns)}, not "
                             f"{sorted(set(columns) - set(self.columns))}: pass them to scan(columns=...)")
        selected = list(columns) if columns is not None else None
        with scanning():  # the interpreter's exit waits for it
            table = self._read(selected, use_threads)
        self.report.rows = table.num_rows
        if self.counter is not None:
            self.report.data_bytes_read = self.counter.bytes
            self.report.data_requests = self.counter.requests
        return table

    def _read(self, selected: list[str] | None, use_threads: bool) -> pa.Table:
        if isinstance(self.dataset, ds.FileSystemDataset) and not self.dataset.files:
            # nothing survived: pyarrow's answer (the columns and the filter bound as a scan binds
            # them, same errors) without starting a scan
            scanner = ds.Scanner.from_dataset(self.dataset, columns=selected, filter=self.expression,
                                              use_threads=use_threads)
            return pa.Table.from_batches([], schema=scanner.projected_schema)
        return self.dataset.to_table(columns=selected, filter=self.expression, use_threads=use_threads)


def open_dataset(source: Any, *, keys: KeyAccess | None = None, filesystem: Any = None,
                 partitioning: Any = "hive", timeouts: StoreTimeouts | None = None,
                 ) -> tuple[ds.FileSystemDataset, pafs.FileSystem]:
    """pyarrow's whole dataset of ``source`` and the filesystem of its files: the schema, the
    fragments, before any pruning. Decryption is configured for the files pyarrow's KMS path
    opens; scan files with explicit keys through :func:`scan`, which gives each its own.

    Parameters
    ----------
    source : str, os.PathLike or list
        Files, a directory or a URI.
    keys : KeyAccess, optional
        The caller's keys.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem.
    partitioning : str, list, Partitioning or None
        As :func:`scan` takes it.
    timeouts : StoreTimeouts, optional
        For a URI's filesystem.

    Returns
    -------
    (pyarrow.dataset.FileSystemDataset, pyarrow.fs.FileSystem)
        The dataset and its files' filesystem.

    Raises
    ------
    secure_bloom.errors.KeyManagementError
        A footer's key cannot be obtained.
    OSError
        The source cannot be listed or read.
    """
    base, fs, _, _ = discover_dataset(source, as_key_access(keys), filesystem, None, partitioning, timeouts)
    return base, fs


def scan(source: Any, *, filters: Any = None, keys: KeyAccess | None = None, filesystem: Any = None,
         count_reads: bool = False, threads: int | None = None, progress: bool | None = None,
         partitioning: Any = "hive", columns: Sequence[str] | None = None,
         cache: PruneCache | None = None, timeouts: StoreTimeouts | None = None) -> PrunedScan:
    """Prune ``source`` with ``filters`` and return the restricted dataset.

    The restricted dataset scans only the file versions its row groups were chosen from: a file
    modified or replaced since pruning raises :class:`~secure_bloom.errors.FileChangedError`
    when pyarrow opens it (:mod:`.identity`), never reads another version's row groups.

    ``timeouts``: a :class:`~secure_bloom.parquet.file.sources.StoreTimeouts` for the filesystem of a
    URI ``source`` (default: those of ``store_timeouts``).

    The interpreter's exit waits for a scan running in a daemon thread (and its ``to_table``)
    to end: :func:`~secure_bloom.parquet.file.lifetime.scanning`.

    Parameters
    ----------
    source : str, os.PathLike or list
        A file, a directory (hive partitions by default), a list of files, or an object-store URI
        (``s3://bucket/prefix``); paths on ``filesystem`` when it is given.
    filters : list or pyarrow.compute.Expression, optional
        pyarrow's filter: a DNF list (``[("email", "==", "x")]``, ``("ssn", "in", [...])``) or an
        Expression (``pc.field("email") == "x"``). Row groups are skipped only on proof that
        pyarrow's own evaluation matches none of their rows.
    keys : KeyAccess, optional
        The caller's key sources, for encrypted files (footers, statistics, Bloom filters, data).
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem ``source`` is on.
    count_reads : bool, default False
        Route pyarrow's reads through a
        :class:`~secure_bloom.parquet.file.read_counting.CountingFileSystem` (for reports and benchmarks).
    threads : int, optional
        Threads pruning files (default: 1 for local files, 16 for object stores).
    progress : bool, optional
        A progress bar on stderr (default: when stderr is a terminal).
    partitioning : str, list, Partitioning or None, default "hive"
        A directory source's partitioning, as pyarrow takes it. A filter on a partition field is
        decided per file on the file's partition value, as pyarrow decides it (:mod:`.partitions`),
        never on a column of that name inside the file.
    columns : list of str, optional
        The columns that will be read (None: all): a surviving file pyarrow cannot decrypt them
        in raises :class:`~secure_bloom.errors.UnsupportedParquetFeatureError` here, before any scan.
    cache : PruneCache, optional
        Kept across lookups: footers and filters of unchanged files are not read again, and
        pyarrow's discovery of the source is kept while the source lists the same and its first
        file is unchanged (:mod:`.known`).
    timeouts : StoreTimeouts, optional
        For the filesystem of a URI ``source`` (default: those of ``store_timeouts``).

    Returns
    -------
    PrunedScan
        The surviving row groups as a dataset, the filter, and the prune report.

    Raises
    ------
    TypeError
        ``keys`` is not a :class:`~secure_bloom.parquet.file.keys.KeyAccess`, or ``columns`` is a str.
    ValueError
        ``filters`` is malformed (an unknown operator, a value of the wrong shape).
    secure_bloom.errors.ColumnNotFoundError
        A filtered column is in no file.
    secure_bloom.errors.KeyManagementError
        A key that is needed cannot be obtained (``MissingKeyError``, ``KeyAccessDeniedError``,
        ``KmsUnavailableError``).
    secure_bloom.errors.UnsupportedParquetFeatureError
        pyarrow could not decrypt the columns to read in a surviving file (explicit keys of
        their own: see Known limits).
    secure_bloom.errors.ParquetFileError, MalformedInputError, AuthenticationError
        A file is not Parquet (``NotParquetError``), is damaged, or fails authentication.
    OSError
        A file cannot be read (``StorageUnavailableError`` for a store that does not answer).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import KeyAccess, write_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> table = pa.table({"email": [f"user{i:04}@example.com" for i in range(3_000)][::-1], "n": range(3_000)})
    >>> _ = write_table(table, tmp / "users.parquet", kms=kms, row_group_size=1_000,
    ...                 encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                       column_keys={"pii_key": ["email"]}),
    ...                 bloom_filter_options={"email": True})
    >>> keys = KeyAccess(kms=kms)
    >>> from secure_bloom.parquet import scan
    >>> found = scan(tmp / "users.parquet", filters=[("email", "in", ["user0007@example.com", "nobody@example.com"])],
    ...              keys=keys)
    >>> found.to_table().column("n").to_pylist()
    [2992]
    >>> found.report.row_groups_total, found.report.row_groups_read
    (3, 1)
    """
    keys = as_key_access(keys)  # a KMS client or factory too, as write_table(kms=...) takes
    with scanning():
        return _scan(source, filters, keys, filesystem, count_reads, threads, progress, partitioning, columns, cache,
                     timeouts)


def _scan(source: Any, filters: Any, keys: KeyAccess | None, filesystem: Any, count_reads: bool, threads: int | None,
          progress: bool | None, partitioning: Any, columns: Sequence[str] | None, cache: PruneCache | None,
          timeouts: StoreTimeouts | None) -> PrunedScan:
    if isinstance(columns, str):
        raise TypeError("columns must be a sequence of column names, not a str")
    selected = tuple(columns) if columns is not None else None
    known = KnownSource.of(cache, source, keys, filesystem, partitioning, timeouts) if cache is not None else None
    listing = None
    if known is not None:
        done = _scan_known(known, filters, keys, count_reads, threads, progress, columns)
        if done is not None:
            return done
        listing = known.listing()  # before discovery: what is kept must not be newer than it
    counter = ReadCounter() if count_reads else None
    opened: dict[str, ParquetBloomReader] = {}  # the first file's, when discovery read its schema with it
    try:
        base, fs, scan_fs, fmt = discover_dataset(source, keys, filesystem, counter, partitioning, timeouts,
                                           opened if cache is None else None)
        expression = to_expression(filters)
        restricted, tree, report, kept = restrict_located(base, fs, fmt, expression, keys=keys, columns=columns,
                                                          threads=threads, progress=progress, cache=cache,
                                                          counter=counter, opened=opened)
    finally:
        for reader in opened.values():  # not handed to the pruning (it closes those it gets)
            reader.close()
    if known is not None and listing is not None:
        known.remember(listing, base, {path: report.files[i].identity for path, i in kept.items()})
    return PrunedScan(restricted, expression, tree, report, counter, selected)


def _scan_known(known: KnownSource, filters: Any, keys: KeyAccess | None, count_reads: bool, threads: int | None,
                progress: bool | None, columns: Sequence[str] | None) -> PrunedScan | None:
    """:func:`scan` from the discovery ``cache`` keeps for this source (:mod:`.known`), or None
    when it keeps none, or the source changed, or anything fails: :func:`scan` then discovers
    and prunes as without it, so every answer and every error is that path's."""
    facts = known.facts()
    if facts is None:
        return None
    if facts.first is not None and known.identity_of(facts.first) != facts.first_identity:
        known.forget()  # the first file changed: its schema may have
        return None
    try:
        counter = ReadCounter() if count_reads else None
        fs = known.filesystem
        scan_fs, fmt = scan_filesystem(fs, keys, counter)
        base = facts.names if facts.names is not None else ds.FileSystemDataset([], facts.schema, fmt, scan_fs)
        expression = to_expression(filters)
        restricted, tree, report, kept = restrict_located(base, fs, fmt, expression, keys=keys, columns=columns,
                                                   threads=threads, progress=progress, cache=known.cache,
                                                   counter=counter, listed=(facts.paths, facts.partitions))
        if facts.first is not None:
            at = kept.get(facts.first)
            identity = report.files[at].identity if at is not None else known.identity_of(facts.first)
            if identity != facts.first_identity:
                known.forget()  # replaced while this lookup pruned: discovered again
                return None
    except Exception:  # noqa: BLE001 - the discovering path answers, or raises what it raises
        return None
    return PrunedScan(restricted, expression, tree, report, counter, tuple(columns) if columns is not None else None)




#: pyarrow's own decryption arguments, and what to give secure_bloom instead.
_PYARROW_DECRYPTION = ("decryption_properties", "decryption_config", "crypto_factory", "kms_connection_config")


def _refuse_pyarrow_options(function: str, options: dict[str, Any]) -> None:
    """A clear TypeError for pyarrow's decryption arguments (and any other unknown one)."""
    for name in options:
        if name in _PYARROW_DECRYPTION:
            raise TypeError(f"{function}({name}=...) is pyarrow's: give keys=KeyAccess(kms=...) (a KMS client or "
                            "pyarrow KmsClient factory; explicit={key id: key} for bare key ids) and secure_bloom "
                            "decrypts the data and the Bloom filters with it")
    if options:
        raise TypeError(f"{function}() got an unexpected keyword argument {next(iter(options))!r}")


def read_table(source: Any, *, columns: Sequence[str] | None = None, filters: Any = None,
               keys: KeyAccess | None = None, filesystem: Any = None, use_threads: bool = True,
               cache: PruneCache | None = None, partitioning: Any = "hive",
               timeouts: StoreTimeouts | None = None, **pyarrow_options: Any) -> pa.Table:
    """``pyarrow.parquet.read_table(source, columns=, filters=, filesystem=)`` that skips the row
    groups whose statistics or Bloom filters rule the filter out. Same rows, same order within
    a file, as pyarrow's own filtered read (``pyarrow.dataset.dataset(source,
    partitioning=partitioning)``). ``cache``, ``partitioning``, ``timeouts``: see :func:`scan`.
    ``keys``: a :class:`KeyAccess`, or a KMS client or pyarrow ``KmsClient`` factory (what
    ``write_table(kms=...)`` takes). pyarrow's ``decryption_properties=`` is refused with a
    pointer to ``keys=``.

    Parameters
    ----------
    source : str, os.PathLike or list
        A file, a directory (hive partitions by default), a list of files, or an object-store URI
        (``s3://bucket/prefix``); paths on ``filesystem`` when it is given.
    filters : list or pyarrow.compute.Expression, optional
        pyarrow's filter: a DNF list (``[("email", "==", "x")]``, ``("ssn", "in", [...])``) or an
        Expression (``pc.field("email") == "x"``). Row groups are skipped only on proof that
        pyarrow's own evaluation matches none of their rows.
    keys : KeyAccess, optional
        The caller's key sources, for encrypted files (footers, statistics, Bloom filters, data).
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem ``source`` is on.
    columns : list of str, optional
        The columns to return (default: all).
    use_threads : bool, default True
        pyarrow's reading threads.
    cache, partitioning, timeouts
        As for :func:`scan`.
    **pyarrow_options
        Refused (``decryption_properties=``: use ``keys=``).

    Returns
    -------
    pyarrow.Table
        The matching rows.

    Raises
    ------
    TypeError
        ``keys`` is not a :class:`~secure_bloom.parquet.file.keys.KeyAccess`, or ``columns`` is a str.
    ValueError
        ``filters`` is malformed (an unknown operator, a value of the wrong shape).
    secure_bloom.errors.ColumnNotFoundError
        A filtered column is in no file.
    secure_bloom.errors.KeyManagementError
        A key that is needed cannot be obtained (``MissingKeyError``, ``KeyAccessDeniedError``,
        ``KmsUnavailableError``).
    secure_bloom.errors.UnsupportedParquetFeatureError
        pyarrow could not decrypt the columns to read in a surviving file (explicit keys of
        their own: see Known limits).
    secure_bloom.errors.ParquetFileError, MalformedInputError, AuthenticationError
        A file is not Parquet (``NotParquetError``), is damaged, or fails authentication.
    OSError
        A file cannot be read (``StorageUnavailableError`` for a store that does not answer).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import KeyAccess, write_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> table = pa.table({"email": [f"user{i:04}@example.com" for i in range(3_000)][::-1], "n": range(3_000)})
    >>> _ = write_table(table, tmp / "users.parquet", kms=kms, row_group_size=1_000,
    ...                 encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                       column_keys={"pii_key": ["email"]}),
    ...                 bloom_filter_options={"email": True})
    >>> keys = KeyAccess(kms=kms)
    >>> from secure_bloom.parquet import read_table
    >>> read_table(tmp / "users.parquet", filters=[("email", "==", "user0042@example.com")], keys=keys).to_pylist()
    [{'email': 'user0042@example.com', 'n': 2957}]
    """
    _refuse_pyarrow_options("read_table", pyarrow_options)
    with scanning():  # the scan's pyarrow objects are dropped inside it, too (see .lifetime)
        return scan(source, filters=filters, keys=keys, filesystem=filesystem, partitioning=partitioning,
                    columns=columns, cache=cache, timeouts=timeouts).to_table(columns, use_threads=use_threads)


def dataset(source: Any, *, filters: Any = None, keys: KeyAccess | None = None, filesystem: Any = None,
            cache: PruneCache | None = None, partitioning: Any = "hive", threads: int | None = None,
            progress: bool = False, timeouts: StoreTimeouts | None = None,
            **pyarrow_options: Any) -> PruningDataset:
    """A ``pyarrow.dataset.Dataset`` of ``source`` (a :class:`PruningDataset`) whose scans prune
    row groups with their own filter.

    Polars' ``scan_pyarrow_dataset(ds).filter(...)``, DuckDB's ``SELECT ... FROM ds WHERE ...``
    and ``ds.to_table(filter=...)`` read only the row groups the filter may match (statistics,
    then Bloom filters, encrypted or not), and get exactly pyarrow's rows. A cache is useful
    here, since every scan prunes.

    Parameters
    ----------
    source : str, os.PathLike or list
        A file, a directory (hive partitions by default), a list of files, or an object-store URI
        (``s3://bucket/prefix``); paths on ``filesystem`` when it is given.
    filters : list or pyarrow.compute.Expression, optional
        Attached to every scan (``Dataset.filter``): a DNF list (``[("email", "==", "x")]``, ``("ssn", "in", [...])``) or an
        Expression (``pc.field("email") == "x"``). Row groups are skipped only on proof that
        pyarrow's own evaluation matches none of their rows.
    keys : KeyAccess, optional
        The caller's key sources, for encrypted files (footers, statistics, Bloom filters, data).
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem ``source`` is on.
    cache, partitioning, timeouts
        As for :func:`scan`.
    threads : int, optional
        Threads pruning files (default: 1 for local files, 16 for object stores).
    progress : bool, default False
        A progress bar on stderr while pruning.
    **pyarrow_options
        Refused (``decryption_properties=``: use ``keys=``).

    Returns
    -------
    PruningDataset
        A ``pyarrow.dataset.Dataset``; ``last_report`` is the prune report of its latest scan.

    Raises
    ------
    TypeError
        ``keys`` is not a :class:`~secure_bloom.parquet.file.keys.KeyAccess`, or ``columns`` is a str.
    ValueError
        ``filters`` is malformed (an unknown operator, a value of the wrong shape).
    secure_bloom.errors.ColumnNotFoundError
        A filtered column is in no file.
    secure_bloom.errors.KeyManagementError
        A key that is needed cannot be obtained (``MissingKeyError``, ``KeyAccessDeniedError``,
        ``KmsUnavailableError``).
    secure_bloom.errors.UnsupportedParquetFeatureError
        pyarrow could not decrypt the columns to read in a surviving file (explicit keys of
        their own: see Known limits).
    secure_bloom.errors.ParquetFileError, MalformedInputError, AuthenticationError
        A file is not Parquet (``NotParquetError``), is damaged, or fails authentication.
    OSError
        A file cannot be read (``StorageUnavailableError`` for a store that does not answer).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import KeyAccess, write_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> table = pa.table({"email": [f"user{i:04}@example.com" for i in range(3_000)][::-1], "n": range(3_000)})
    >>> _ = write_table(table, tmp / "users.parquet", kms=kms, row_group_size=1_000,
    ...                 encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                       column_keys={"pii_key": ["email"]}),
    ...                 bloom_filter_options={"email": True})
    >>> keys = KeyAccess(kms=kms)
    >>> import pyarrow.compute as pc
    >>> from secure_bloom.parquet import dataset
    >>> ds = dataset(tmp / "users.parquet", keys=keys)
    >>> ds.to_table(filter=pc.field("email") == "user0042@example.com").num_rows
    1
    >>> ds.last_report.row_groups_read
    1
    """
    _refuse_pyarrow_options("dataset", pyarrow_options)
    keys = as_key_access(keys)  # a KMS client or factory too, as write_table(kms=...) takes
    base, fs, _, fmt = discover_dataset(source, keys, filesystem, None, partitioning, timeouts)

    def prune(expression: Any, columns: Sequence[str] | None,
              open_now: bool = False) -> tuple[ds.FileSystemDataset, PruneReport]:
        restricted, _, report = restrict(base, fs, fmt, expression, keys=keys, columns=columns,
                                         threads=threads, progress=progress, cache=cache, open_now=open_now)
        return restricted, report

    expression = to_expression(filters)
    if expression is not None:
        prune(expression, None)  # refuses now what no scan could read (see scan(columns=))
    return PruningDataset(base, prune, expression)
