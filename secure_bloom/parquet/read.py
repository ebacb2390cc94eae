"""Read by key: pyarrow reads of Parquet files that skip the row groups a filter rules out.

:func:`read_table` has the shape of ``pyarrow.parquet.read_table`` and returns exactly the rows
pyarrow's own filtered read returns: the row groups are pruned first (:mod:`.prune`: min/max
statistics, then Bloom filters for ``==`` / ``in``, encrypted or not), then pyarrow scans the
surviving row groups with the same filter. :func:`dataset` returns that restricted
``pyarrow.dataset.Dataset`` (filter attached) for Polars (``polars.scan_pyarrow_dataset``),
DuckDB (``duckdb.from_arrow``) or any other Arrow consumer. :func:`scan` gives both, plus the
:class:`~secure_bloom.parquet.prune.PruneReport`.

Sources: a file, a directory (hive partitions: ``year=2024/``), a list of files, or a URI
(``s3://``, ``gs://`` where pyarrow has that filesystem, ``file://``), or paths on a given
``pyarrow.fs`` filesystem (``S3FileSystem(endpoint_override=...)``). Only footers, the Bloom
filters asked for and the surviving row groups' column chunks are fetched.

Encrypted files are decrypted by pyarrow with the same KMS client as ours (``keys.kms``, through
:mod:`secure_bloom.kms.pyarrow_adapter` and pyarrow's key tools): pyarrow reads files with key
tools material (what parquet-java, Spark and pyarrow write); files whose key metadata is a bare
key id (``keys.explicit``) or that need a withheld AAD prefix can be pruned but not scanned by
pyarrow's dataset API.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet.encryption as pe

from ..errors import MissingKeyError
from ..kms.client import is_kms_client
from ..kms.pyarrow_adapter import pyarrow_kms_client_factory
from .keys import KeyAccess
from .predicate import Node, predicate_tree, to_expression
from .prune import DEFAULT_PRUNE_THREADS, PruneReport, prune_files
from .sources import CountingFileSystem, ReadCounter, resolve

__all__ = ["read_table", "dataset", "scan", "open_dataset", "PrunedScan", "parquet_format"]


def parquet_format(keys: KeyAccess | None) -> ds.ParquetFileFormat:
    """pyarrow's Parquet format, with decryption through ``keys.kms`` when it is set."""
    if keys is None or keys.kms is None:
        return ds.ParquetFileFormat()
    kms = keys.kms
    if is_kms_client(kms):
        factory = pyarrow_kms_client_factory(kms)
    else:
        factory = pyarrow_kms_client_factory(lambda config: kms(config.kms_instance_id, config.kms_instance_url))
    config = ds.ParquetDecryptionConfig(
        pe.CryptoFactory(factory), pe.KmsConnectionConfig(),
        pe.DecryptionConfiguration(cache_lifetime=dt.timedelta(seconds=keys.cache_lifetime_s)))
    return ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(decryption_config=config))


@dataclass
class PrunedScan:
    """The surviving row groups as a dataset, the filter, and what pruning did."""

    dataset: ds.Dataset
    expression: Any
    tree: Node
    report: PruneReport
    counter: ReadCounter | None = None

    def to_table(self, columns: Sequence[str] | None = None, *, use_threads: bool = True) -> pa.Table:
        """The matching rows (pyarrow applies the exact filter); fills ``report.rows`` and, when
        reads are counted, ``report.data_bytes_read``."""
        table = self.dataset.to_table(columns=list(columns) if columns is not None else None,
                                      filter=self.expression, use_threads=use_threads)
        self.report.rows = table.num_rows
        if self.counter is not None:
            self.report.data_bytes_read = self.counter.bytes
            self.report.data_requests = self.counter.requests
        return table


def _discover(source: Any, keys: KeyAccess | None, filesystem: Any, counter: ReadCounter | None,
              partitioning: Any) -> tuple[ds.FileSystemDataset, pafs.FileSystem, pafs.FileSystem]:
    resolved = resolve(source, filesystem)
    fs = resolved.filesystem
    scan_fs = pafs.PyFileSystem(CountingFileSystem(fs, counter)) if counter is not None else fs
    fmt = parquet_format(keys)
    single_dir = len(resolved.paths) == 1 and fs.get_file_info(resolved.paths[0]).type == pafs.FileType.Directory
    try:
        base = ds.dataset(resolved.paths[0] if single_dir else list(resolved.paths), filesystem=scan_fs,
                          format=fmt, partitioning=partitioning if single_dir else None)
    except (pa.ArrowInvalid, OSError) as e:
        if "decryption" in str(e) and (keys is None or keys.kms is None):
            raise MissingKeyError(f"{e}. The files are encrypted: pass keys=KeyAccess(kms=...) with the KMS "
                                  "client their key material was wrapped with") from None
        raise
    return base, fs, scan_fs


def open_dataset(source: Any, *, keys: KeyAccess | None = None, filesystem: Any = None,
                 partitioning: Any = "hive") -> tuple[ds.FileSystemDataset, pafs.FileSystem]:
    """pyarrow's whole dataset of ``source`` (decryption configured) and the filesystem of its
    files: the schema, the fragments, before any pruning."""
    base, fs, _ = _discover(source, keys, filesystem, None, partitioning)
    return base, fs


def scan(source: Any, *, filters: Any = None, keys: KeyAccess | None = None, filesystem: Any = None,
         count_reads: bool = False, threads: int = DEFAULT_PRUNE_THREADS, progress: bool | None = None,
         partitioning: Any = "hive") -> PrunedScan:
    """Prune ``source`` with ``filters`` (pyarrow DNF list or Expression) and return the
    restricted dataset. ``count_reads`` routes pyarrow's reads through a
    :class:`~secure_bloom.parquet.sources.CountingFileSystem` (for reports and benchmarks)."""
    if keys is not None and not isinstance(keys, KeyAccess):
        raise TypeError(f"keys must be a KeyAccess, got {type(keys).__name__}")
    counter = ReadCounter() if count_reads else None
    base, fs, scan_fs = _discover(source, keys, filesystem, counter, partitioning)
    fmt = base.format
    expression = to_expression(filters)
    tree = predicate_tree(expression, base.schema)
    every = list(base.get_fragments())
    kept = list(base.get_fragments(filter=expression)) if expression is not None else every
    pruned = prune_files([f.path for f in kept], tree, keys=keys, filesystem=fs, schema=base.schema,
                         threads=threads, progress=progress)
    fragments = [fmt.make_fragment(frag.path, filesystem=scan_fs, partition_expression=frag.partition_expression,
                                   row_groups=list(result.row_groups), file_size=result.file_size)
                 for frag, result in zip(kept, pruned) if result.row_groups]
    restricted = ds.FileSystemDataset(fragments, schema=base.schema, format=fmt, filesystem=scan_fs)
    report = PruneReport(files=pruned, files_skipped_by_partition=len(every) - len(kept))
    return PrunedScan(restricted, expression, tree, report, counter)


def read_table(source: Any, *, columns: Sequence[str] | None = None, filters: Any = None,
               keys: KeyAccess | None = None, filesystem: Any = None, use_threads: bool = True) -> pa.Table:
    """``pyarrow.parquet.read_table(source, columns=, filters=, filesystem=)`` that skips the row
    groups whose statistics or Bloom filters rule the filter out. Same rows, same order within
    a file, as pyarrow's own filtered read."""
    return scan(source, filters=filters, keys=keys, filesystem=filesystem).to_table(columns, use_threads=use_threads)


def dataset(source: Any, *, filters: Any = None, keys: KeyAccess | None = None,
            filesystem: Any = None) -> ds.Dataset:
    """A ``pyarrow.dataset.Dataset`` of the surviving row groups with ``filters`` attached
    (``Dataset.filter``): Polars' ``scan_pyarrow_dataset`` and DuckDB's ``from_arrow`` query it
    as they query any pyarrow dataset, and see exactly the matching rows."""
    pruned = scan(source, filters=filters, keys=keys, filesystem=filesystem)
    return pruned.dataset.filter(pruned.expression) if pruned.expression is not None else pruned.dataset
