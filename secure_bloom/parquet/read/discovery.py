"""Dataset discovery for the reads by key: pyarrow's dataset of a source (its schema and
fragments), the filesystem the scans read through and the format shared by the files pyarrow's
KMS path opens (:func:`discover_dataset`).

A single directory is listed once (:func:`_directory_factory`: pyarrow's own recursive listing,
no second check that it is a directory); on an object store, the first file's schema is read from
the tail the pruning reader reads of it (:func:`_tail_schema_dataset`), so its footer is fetched
once. Files pyarrow's KMS path cannot open (explicit key ids, a withheld AAD prefix) get the
schema through our reader (:func:`_discovery_format`); encrypted files without keys are
:class:`~secure_bloom.errors.MissingKeyError` naming the key.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from ...errors import KmsUnavailableError, MissingKeyError, SecureBloomError, StorageUnavailableError
from ..file.keys import KeyAccess
from ..file.lifetime import retain
from ..file.reader import ParquetBloomReader
from ..file.read_counting import CountingFileSystem, ReadCounter
from ..file.sources import (
    Resolved,
    StoreTimeouts,
    display_path,
    resolve,
    storage_error,
)
from .prune import open_pruning_reader
from .restrict import file_format, parquet_format

__all__ = ["discover_dataset", "scan_filesystem"]


def _discovery_format(target: Any, fs: pafs.FileSystem, keys: KeyAccess | None) -> ds.ParquetFileFormat | None:
    """A format that opens the footer of the first file pyarrow inspects for the schema, when
    pyarrow's KMS path cannot (explicit key ids, a withheld AAD prefix); None when that is not
    why the inspection failed."""
    if keys is None or (not keys.has_keys and keys.aad_prefix is None):
        return None
    first = _first_file(target, fs)
    if first is None:
        return None
    with ParquetBloomReader(first, keys, filesystem=fs) as reader:
        shared = ds.ParquetFileFormat()
        fmt = file_format(reader, keys, shared, columns=())  # the footer only: the schema
    return None if fmt is shared else fmt


def _first_file(target: Any, fs: pafs.FileSystem) -> str | None:
    """The first file pyarrow would inspect for the schema (listed, not opened). Listed without
    the partitioning, which does not change the files listed: field names (``["year"]``) are
    not in the empty schema a listing is made with (ArrowInvalid "No match for FieldRef")."""
    listing = ds.dataset(target, filesystem=fs, format=ds.ParquetFileFormat(), schema=pa.schema([]))
    first = next(iter(listing.get_fragments()), None)
    return first.path if first is not None else None


def discover_dataset(source: Any, keys: KeyAccess | None, filesystem: Any, counter: ReadCounter | None,
                     partitioning: Any, timeouts: StoreTimeouts | None = None,
                     opened: dict[str, ParquetBloomReader] | None = None,
                     ) -> tuple[ds.FileSystemDataset, pafs.FileSystem, pafs.FileSystem, ds.ParquetFileFormat]:
    """pyarrow's dataset of ``source`` (the schema, the fragments), the files' filesystem, the one
    scans read through, and the format shared by the files pyarrow opens with ``keys.kms``.

    Parameters
    ----------
    source : str, os.PathLike or list
        Files, a directory or a URI (:func:`~secure_bloom.parquet.file.sources.resolve`).
    keys : KeyAccess or None
        The caller's keys.
    filesystem : pyarrow.fs.FileSystem or None
        The filesystem of the paths.
    counter : ReadCounter or None
        Counts what scans read (None: nothing counted).
    partitioning : str, list, Partitioning or None
        As ``pyarrow.dataset.dataset`` takes it.
    timeouts : StoreTimeouts, optional
        For a URI's filesystem.
    opened : dict, optional
        Where the pruning reader of the first file goes when the discovery opened one for the
        schema (:func:`_tail_schema_dataset`); the caller closes it or hands it to pruning.

    Returns
    -------
    (pyarrow.dataset.FileSystemDataset, pyarrow.fs.FileSystem, pyarrow.fs.FileSystem, pyarrow.dataset.ParquetFileFormat)
        The dataset, the files' filesystem, the filesystem scans read through, the shared format.

    Raises
    ------
    secure_bloom.errors.MissingKeyError
        The files are encrypted and no key or KMS given opens them (named by our reader).
    secure_bloom.errors.StorageUnavailableError
        The store does not answer.
    OSError, pyarrow.ArrowInvalid
        The source cannot be listed or its schema read (pyarrow's own errors).
    """
    resolved = resolve(source, filesystem, timeouts)
    try:
        return _open_base(resolved, keys, counter, partitioning, opened)
    except OSError as e:  # a store that cannot be reached says so (STORAGE_UNAVAILABLE)
        error = storage_error(e, display_path(None if resolved.local else resolved.filesystem, resolved.paths[0]))
        if error is e:
            raise
        raise error from None


def scan_filesystem(fs: pafs.FileSystem, keys: KeyAccess | None, counter: ReadCounter | None,
                    ) -> tuple[pafs.FileSystem, ds.ParquetFileFormat]:
    """The filesystem scans read through (counting into ``counter`` when given) and the format
    shared by the files pyarrow opens with ``keys.kms``.

    Parameters
    ----------
    fs : pyarrow.fs.FileSystem
        The files' filesystem.
    keys : KeyAccess or None
        The caller's keys.
    counter : ReadCounter or None
        Counts the requests and bytes scans read (None: ``fs`` itself).

    Returns
    -------
    (pyarrow.fs.FileSystem, pyarrow.dataset.ParquetFileFormat)
        The filesystem and the format, both retained
        (:func:`~secure_bloom.parquet.file.lifetime.retain`: they may call back into Python).

    Raises
    ------
    None
        Nothing of its own.
    """
    scan_fs = pafs.PyFileSystem(CountingFileSystem(fs, counter)) if counter is not None else fs
    fmt = parquet_format(keys)
    retain(scan_fs, fmt)  # both may call back into Python when destroyed (see .lifetime)
    return scan_fs, fmt


def _directory_factory(directory: str, scan_fs: pafs.FileSystem, fmt: ds.ParquetFileFormat,
                       partitioning: Any) -> ds.FileSystemDatasetFactory | None:
    """The factory ``pyarrow.dataset.dataset(directory, partitioning=partitioning)`` makes (its
    one recursive listing), for a path known to be a directory: pyarrow does not check it again
    (on an object store, a HEAD and a listing less). None for a partitioning pyarrow's own call
    is left to judge (it raises its error)."""
    if isinstance(partitioning, str):
        partitioning = ds.partitioning(flavor=partitioning)
    elif isinstance(partitioning, list):
        partitioning = ds.partitioning(field_names=partitioning)
    elif partitioning is not None and not isinstance(partitioning, (ds.Partitioning, ds.PartitioningFactory)):
        return None
    return ds.FileSystemDatasetFactory(scan_fs, pafs.FileSelector(scan_fs.normalize_path(directory), recursive=True),
                                       fmt, ds.FileSystemFactoryOptions(partitioning=partitioning))


def _tail_schema_dataset(factory: ds.FileSystemDatasetFactory, fs: pafs.FileSystem, fmt: ds.ParquetFileFormat,
                         keys: KeyAccess | None, opened: dict[str, ParquetBloomReader]) -> ds.FileSystemDataset:
    """``factory.finish()`` on an object store, the first file's schema read from the tail our
    pruning reader reads of it (left in ``opened`` for the pruning): the footer pyarrow would
    fetch for the schema is answered from that tail. Whatever fails there is left to pyarrow's
    own inspection (its errors), except a store or a KMS that does not answer (asked again, it
    would wait again)."""
    partition = factory.inspect(fragments=0)  # the partition fields alone: from the paths, nothing opened
    files = factory.finish(partition).files
    if not files:
        return factory.finish()
    try:
        reader = open_pruning_reader(files[0], keys, fs)
    except OSError as e:
        if isinstance(storage_error(e, ""), StorageUnavailableError):
            raise
        return factory.finish()  # pyarrow's inspection says what is wrong, as without this
    except KmsUnavailableError:
        raise  # asked again, it would wait again: the error pyarrow's inspection leads to (_open_base)
    except SecureBloomError:
        return factory.finish()
    try:
        held = reader.tail.held()
        if held is None:
            raise ValueError("no tail held")
        with CountingFileSystem(fs).open_held(files[0], reader.tail.file_size, held) as tail:
            schema = fmt.inspect(tail)
        base = factory.finish(pa.unify_schemas([schema, partition]))  # pyarrow's inspection: the same order
    except (OSError, ValueError, pa.ArrowException):
        reader.close()
        return factory.finish()
    opened[files[0]] = reader
    return base


def _open_base(resolved: Resolved, keys: KeyAccess | None, counter: ReadCounter | None, partitioning: Any,
               opened: dict[str, ParquetBloomReader] | None = None,
               ) -> tuple[ds.FileSystemDataset, pafs.FileSystem, pafs.FileSystem, ds.ParquetFileFormat]:
    fs = resolved.filesystem
    scan_fs, fmt = scan_filesystem(fs, keys, counter)
    single_dir = len(resolved.paths) == 1 and fs.get_file_info(resolved.paths[0]).type == pafs.FileType.Directory
    target = resolved.paths[0] if single_dir else list(resolved.paths)
    parts = partitioning if single_dir else None
    try:
        factory = _directory_factory(resolved.paths[0], scan_fs, fmt, parts) if single_dir else None
        if factory is None:
            base = ds.dataset(target, filesystem=scan_fs, format=fmt, partitioning=parts)
        elif opened is not None and not resolved.local:
            base = _tail_schema_dataset(factory, fs, fmt, keys, opened)
        else:
            base = factory.finish()
    except (pa.ArrowInvalid, OSError) as e:
        if isinstance(e, OSError) and isinstance(storage_error(e, ""), StorageUnavailableError):
            raise  # not a decryption problem: the store does not answer (asked again, it would wait again)
        inspect = _discovery_format(target, fs, keys)
        if inspect is not None:
            base = ds.dataset(target, filesystem=scan_fs, format=inspect, partitioning=parts)
        elif "decryption" in str(e) and (keys is None or keys.kms is None):
            first = _first_file(target, fs)
            if first is not None:  # our reader says which key is missing, as the CLI does
                with ParquetBloomReader(first, keys, filesystem=fs):
                    pass
            raise MissingKeyError(f"{e}. The files are encrypted: pass keys=KeyAccess(kms=...) with the KMS "
                                  "client their key material was wrapped with (or explicit=... for key ids)") from None
        else:
            raise
    return base, fs, scan_fs, fmt
