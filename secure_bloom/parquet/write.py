"""Write encrypted Parquet with encrypted Bloom filters in one call, with pyarrow's names.

Spec: BloomFilter.md, Encryption.md (SPEC_NOTES 1-7). pyarrow refuses Bloom filters on encrypted
files ("Encryption is not currently supported with bloom filter"); this module is the drop-in:

* :func:`write_table` ``(table, where, *, encryption, kms, kms_connection_config=None,
  bloom_filter_options=None, **kwargs)``, :class:`ParquetWriter` (``write_table``,
  ``write_batch``, ``close``, context manager) and :func:`write_to_dataset` (hive partitions).
  ``encryption`` is pyarrow's ``EncryptionConfiguration``; ``kms`` one of our KMS clients or a
  pyarrow ``KmsClient`` factory (what ``CryptoFactory`` takes); ``bloom_filter_options`` pyarrow's
  ``{"col": {"ndv": N, "fpp": P} | True}``; every other keyword goes to pyarrow's writer.

How (one pass over the data): pyarrow writes the encrypted file without filters into an unnamed
temporary file (``O_TMPFILE``), one row group per slice we hand it, so row-group boundaries are
ours; each slice's Bloom columns are hashed from the same Arrow arrays
(:func:`secure_bloom.values.arrow.leaf_values`, :func:`~secure_bloom.values.physical.hash_values`)
and one filter per row group is sized from the slice's exact distinct count (or ``ndv``) at
``fpp``, capped at ``bloom_filter_max_bytes``. At :meth:`ParquetWriter.close` the file's footer is read back
(the same KMS unwraps pyarrow's key material), every filter is checked against the chunk's stored
min/max, and the footer is replaced in place by the filters and a rewritten footer
(:mod:`.append`, the step attach uses): pyarrow's pages are never touched. The result is
verified (every filter read back and decrypted, the footer opened by pyarrow) and only then
published: fsynced and linked in atomically for a local path (the directory fsynced after),
uploaded in one piece to a pyarrow filesystem (the local spool file of an upload is never
fsynced). A failure at any point (KMS, full disk, bad value, failed fsync, kill) publishes
nothing. External key material (``internal_key_material=False``) is written by pyarrow into
memory (:class:`KeyMaterialSpool`), never to disk before publication, so a killed writer leaves
no key material anywhere; it is published beside the file first (the data file is unreadable
without it) under the :class:`~secure_bloom.parquet.leftovers.PairJournal` attach uses, so a kill
between the two is rolled back by ``secure-bloom doctor --fix`` (an orphaned sidecar removed, the
sidecar an overwrite replaced restored).

Speed: each slice's hashing runs in a second thread while pyarrow encodes and encrypts the slice
(both release the GIL), and pyarrow writes through :class:`SyncingSink`, which starts an fsync in
the background every :data:`SYNC_STEP` bytes: the disk writes overlap the encoding, so the
durable publish waits only for the last few MB instead of the whole file.

Memory: the slice being written (at most ``row_group_size`` rows of the table given to one
``write_table`` call) and pyarrow's buffers for it, 8 bytes per value of one Bloom column of that
slice (its hashes), plus every filter built so far (at most ``max_bytes`` each; kept until
``close``).
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from .. import thrift_codec
from ..errors import (
    ColumnNotFoundError,
    DestinationExistsError,
    SecureBloomError,
    UnsupportedParquetFeatureError,
    WriteError,
)
from ..fileio import AtomicOutput, fsync_dir
from ..filter import SplitBlockBloomFilter, optimal_num_bytes
from ..kernels import count_distinct_hashes
from ..kms.client import is_kms_client
from ..kms.pyarrow_adapter import pyarrow_kms_client_factory
from ..kms.sidecar import KeyMaterialStore, sidecar_path
from ..spec import MIN_BITSET_BYTES, SPEC_MAX_BITSET_BYTES
from ..types import PhysicalType
from ..values.arrow import leaf_values
from ..values.physical import hash_values
from .append import NewFilter, cross_check_statistics, filter_tail, sample_of, verify_filters
from .attach import AttachedFilter
from .keys import KeyAccess
from .leftovers import PairJournal, clean_leftovers
from .options import DEFAULT_FPP, WRITER_DEFAULT_MAX_BYTES, check_fpp, size_cap
from .reader import ParquetBloomReader
from .schema import ColumnInfo, find_column, leaf_columns
from .sources import StoreTimeouts, display_path, filesystem_from_uri, is_store_uri, is_uri

__all__ = ["write_table", "ParquetWriter", "write_to_dataset", "WriteReport", "BloomColumn", "SyncingSink",
           "SYNC_STEP", "DEFAULT_ROW_GROUP_SIZE"]

#: Rows per row group when ``row_group_size`` is not given (pyarrow's default).
DEFAULT_ROW_GROUP_SIZE = 1024 * 1024

#: Options pyarrow's writer must not get from the caller here: set by this module.
_OWN_OPTIONS = ("encryption_properties", "bloom_filter_options")


@dataclass(frozen=True)
class BloomColumn:
    """A leaf column to give Bloom filters: the leaf as pyarrow writes it, the index of its
    top-level Arrow field, and its options (``ndv`` None: each row group's exact distinct count)."""

    info: ColumnInfo
    field: int
    ndv: int | None
    fpp: float


@dataclass(frozen=True)
class WriteReport:
    """What :func:`write_table` / :meth:`ParquetWriter.close` wrote (``filters`` as attach reports
    them: size, distinct values, expected false-positive rate, whether ``max_bytes`` capped it)."""

    path: str
    footer_mode: str
    num_rows: int
    row_groups: int
    filters: tuple[AttachedFilter, ...]
    size: int
    verified_values: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "footer_mode": str(self.footer_mode), "num_rows": self.num_rows,
                "row_groups": self.row_groups, "filters": [vars(f).copy() for f in self.filters],
                "size": self.size, "verified_values": self.verified_values}


# --------------------------------------------------------------------------- checking options


def bloom_specs(options: Any) -> dict[str, tuple[int | None, float]]:
    """pyarrow's ``bloom_filter_options`` -> column path -> (ndv or None, fpp).

    A value is True (defaults), False (no filter) or a mapping with optional ``ndv`` (an int
    >= 1) and ``fpp`` (in (0, 1)); anything else raises before anything is written.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"bloom_filter_options must be a dict of column path -> True or {{'ndv': N, 'fpp': P}}, "
                        f"got {type(options).__name__}")
    out: dict[str, tuple[int | None, float]] = {}
    for path, option in options.items():
        if not isinstance(path, str) or not path:
            raise TypeError(f"bloom_filter_options keys are column paths (str), got {path!r}")
        if option is False:
            continue
        if option is True:
            option = {}
        if not isinstance(option, Mapping):
            raise TypeError(f"bloom_filter_options[{path!r}] must be True or a dict with 'ndv' and/or 'fpp', "
                            f"got {type(option).__name__}")
        unknown = sorted(set(option) - {"ndv", "fpp"})
        if unknown:
            raise ValueError(f"bloom_filter_options[{path!r}]: unknown option {unknown[0]!r} (use 'ndv' and 'fpp')")
        ndv = option.get("ndv")
        if ndv is not None and (isinstance(ndv, bool) or not isinstance(ndv, (int, np.integer)) or ndv < 1):
            raise ValueError(f"bloom_filter_options[{path!r}]: ndv must be an int >= 1, got {ndv!r}")
        try:
            fpp = check_fpp(option.get("fpp", DEFAULT_FPP))
        except ValueError as e:
            raise ValueError(f"bloom_filter_options[{path!r}]: {e}") from None
        out[path] = (None if ndv is None else int(ndv), fpp)
    return out


def _check_max_bytes(max_bytes: Any) -> int:
    if (isinstance(max_bytes, bool) or not isinstance(max_bytes, int)
            or not MIN_BITSET_BYTES <= max_bytes <= SPEC_MAX_BITSET_BYTES):
        raise ValueError(f"bloom_filter_max_bytes must be an int from {MIN_BITSET_BYTES} to {SPEC_MAX_BITSET_BYTES}, "
                         f"got {max_bytes!r}")
    return max_bytes


def parquet_leaves(schema: pa.Schema, writer_options: Mapping[str, Any]) -> list[ColumnInfo]:
    """The leaf columns pyarrow writes for ``schema`` with ``writer_options`` (physical types,
    widths, units), from an empty file written in memory; bad writer options raise here."""
    sink = pa.BufferOutputStream()
    try:
        with pq.ParquetWriter(sink, schema, **writer_options):
            pass
    except pa.ArrowException as e:
        if isinstance(e, (ValueError, TypeError)):
            raise
        raise ValueError(f"pyarrow refuses the writer options: {e}") from None
    data = sink.getvalue().to_pybytes()
    (length,) = struct.unpack("<I", data[-8:-4])
    metadata, _ = thrift_codec.parse(thrift_codec.idl().FileMetaData, data[-8 - length:-8])
    return leaf_columns(metadata.schema)


def bloom_columns(schema: pa.Schema, leaves: Sequence[ColumnInfo],
                  specs: Mapping[str, tuple[int | None, float]]) -> tuple[BloomColumn, ...]:
    """Each requested Bloom column, checked: it exists as a leaf, is not BOOLEAN, and its Arrow
    values can be found and hashed (struct fields and standard lists; not maps)."""
    out: list[BloomColumn] = []
    for path, (ndv, fpp) in specs.items():
        info = find_column(leaves, path, "bloom_filter_options")
        if info.physical_type is PhysicalType.BOOLEAN:
            raise UnsupportedParquetFeatureError(
                f"bloom_filter_options: column {info.path!r} is BOOLEAN; Bloom filters never hold booleans")
        index = schema.get_field_index(info.path_in_schema[0])
        if index < 0:
            raise UnsupportedParquetFeatureError(
                f"bloom_filter_options: column {info.path!r} has no top-level Arrow field named "
                f"{info.path_in_schema[0]!r} (renamed by the writer's flavor?)")
        empty = pa.array([], type=schema.field(index).type)
        try:
            hash_values(leaf_values(empty, info), info.physical_type, type_length=info.type_length)
        except SecureBloomError as e:
            raise UnsupportedParquetFeatureError(f"bloom_filter_options: column {info.path!r}: {e}") from None
        if any(c.info.ordinal == info.ordinal for c in out):
            raise ValueError(f"bloom_filter_options names column {info.path!r} twice")
        out.append(BloomColumn(info=info, field=index, ndv=ndv, fpp=fpp))
    return tuple(out)


def _check_encryption(encryption: Any, leaves: Sequence[ColumnInfo]) -> None:
    """``encryption`` is pyarrow's configuration and each column it names is a leaf path or, as
    pyarrow accepts, a group (a struct, list or map column: every leaf under it)."""
    if not isinstance(encryption, pe.EncryptionConfiguration):
        raise TypeError("encryption must be a pyarrow.parquet.encryption.EncryptionConfiguration, got "
                        f"{type(encryption).__name__}")
    seen: dict[str, str] = {}
    # pyarrow's column_keys getter fails on the empty string it keeps for uniform encryption
    column_keys = {} if encryption.uniform_encryption else (encryption.column_keys or {})
    for master_key, columns in column_keys.items():
        for column in columns:
            covered = [leaf.path for leaf in leaves if leaf.path == column or leaf.path.startswith(column + ".")]
            if not covered:
                find_column(leaves, column, f"encryption.column_keys[{master_key!r}]")  # raises, naming the columns
            for path in covered:
                if seen.setdefault(path, master_key) != master_key:
                    raise ValueError(f"encryption.column_keys gives column {path!r} two keys "
                                     f"({seen[path]!r} and {master_key!r})")


def _key_access(kms: Any, config: Any) -> KeyAccess:
    """Our key access for the files pyarrow writes with ``kms``: the client itself, or the
    pyarrow factory called with ``config`` and the instance named in the key material."""
    if is_kms_client(kms):
        return KeyAccess(kms=kms)
    if not callable(kms):
        raise TypeError("kms must be a KMS client (wrap_key, unwrap_key) or a pyarrow KmsClient factory "
                        "(a callable taking a KmsConnectionConfig)")

    def client(instance_id: str, instance_url: str) -> Any:
        return kms(pe.KmsConnectionConfig(
            kms_instance_id=instance_id, kms_instance_url=instance_url,
            key_access_token=config.key_access_token, custom_kms_conf=dict(config.custom_kms_conf or {})))

    return KeyAccess(kms=client)


@dataclass(frozen=True)
class _Setup:
    """One writer's checked options, shared by the files of a dataset."""

    schema: pa.Schema
    leaves: tuple[ColumnInfo, ...]
    columns: tuple[BloomColumn, ...]
    encryption: Any
    kms_config: Any
    crypto: Any
    keys: KeyAccess
    max_bytes: int
    writer_options: dict[str, Any]


def _setup(schema: Any, encryption: Any, kms: Any, kms_connection_config: Any, bloom_filter_options: Any,
           max_bytes: Any, writer_options: dict[str, Any]) -> _Setup:
    """Every check that needs no KMS call and writes nothing."""
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    for name in _OWN_OPTIONS:
        if name in writer_options:
            raise TypeError(f"{name}=... is pyarrow's; secure_bloom sets it: give encryption= (a "
                            "pyarrow.parquet.encryption.EncryptionConfiguration), kms= (a KMS client or pyarrow "
                            "KmsClient factory) and bloom_filter_options=")
    specs = bloom_specs(bloom_filter_options)
    max_bytes = _check_max_bytes(max_bytes)
    config = kms_connection_config if kms_connection_config is not None else pe.KmsConnectionConfig()
    if not isinstance(config, pe.KmsConnectionConfig):
        raise TypeError("kms_connection_config must be a pyarrow.parquet.encryption.KmsConnectionConfig")
    leaves = tuple(parquet_leaves(schema, writer_options))
    _check_encryption(encryption, leaves)
    columns = bloom_columns(schema, leaves, specs)
    keys = _key_access(kms, config)
    crypto = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
    return _Setup(schema=schema, leaves=leaves, columns=columns, encryption=encryption, kms_config=config,
                  crypto=crypto, keys=keys, max_bytes=max_bytes, writer_options=dict(writer_options))


# --------------------------------------------------------------------------- destinations


@dataclass(frozen=True)
class _Destination:
    """Where the file goes: a local path (``filesystem`` None) or a path on a pyarrow filesystem."""

    path: str
    filesystem: Any = None

    @property
    def local(self) -> bool:
        return self.filesystem is None

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return display_path(self.filesystem, self.path)


def _destination(where: Any, filesystem: Any, timeouts: StoreTimeouts | None = None) -> _Destination:
    """Where ``where`` is: a URI through :func:`~secure_bloom.parquet.sources.filesystem_from_uri`
    (never a local path: ``s3://KEY:SECRET@bucket/out`` creates nothing on the local disk)."""
    from pyarrow import fs as pafs

    if isinstance(where, Path) or (isinstance(where, os.PathLike) and not isinstance(where, str)):
        where = os.fspath(where)
    if not isinstance(where, str) or not where:
        raise TypeError("where must be a path (str or os.PathLike) or a URI; writing to a file object cannot "
                        f"be made atomic, got {type(where).__name__}")
    if filesystem is None and is_store_uri(where):
        filesystem, where = filesystem_from_uri(where, timeouts)
    elif is_uri(where):
        where = where[len("file://"):] if filesystem is None or isinstance(filesystem, pafs.LocalFileSystem) \
            else where.split("://", 1)[1]
    if filesystem is not None and not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(f"filesystem must be a pyarrow.fs.FileSystem, got {type(filesystem).__name__}")
    if filesystem is None or isinstance(filesystem, pafs.LocalFileSystem):
        return _Destination(os.path.abspath(where))
    return _Destination(where, filesystem)


def _check_local_target(target: Path) -> None:
    if not target.parent.is_dir():
        raise FileNotFoundError(f"{target.parent}: the destination directory does not exist")
    if target.is_dir():
        raise IsADirectoryError(f"{target}: is a directory")


# --------------------------------------------------------------------------- the writer


@dataclass
class _Built:
    bf: SplitBlockBloomFilter
    ndv: int
    values: int
    distinct: int
    capped: bool
    sample: npt.NDArray[np.uint64]


@dataclass
class _RowGroup:
    rows: int
    filters: list[_Built] = field(default_factory=list)


def build_filter(hashes: npt.NDArray[np.uint64], ndv: int | None, fpp: float, max_bytes: int) -> _Built:
    """One chunk's filter: sized for ``ndv`` or the exact distinct count of ``hashes``."""
    distinct = count_distinct_hashes(hashes) if hashes.size else 0
    size_for = distinct if ndv is None else ndv
    bf = SplitBlockBloomFilter.for_ndv(size_for, fpp, max_bytes)
    bf.insert_hashes(hashes)
    return _Built(bf=bf, ndv=size_for, values=int(hashes.size), distinct=distinct,
                  capped=optimal_num_bytes(size_for, fpp) > bf.num_bytes, sample=sample_of(hashes))


def _column_hashes(table: pa.Table, column: BloomColumn) -> npt.NDArray[np.uint64]:
    info = column.info
    parts = [hash_values(leaf_values(chunk, info), info.physical_type, type_length=info.type_length)
             for chunk in table.column(column.field).chunks]
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


#: Bytes pyarrow writes between two background syncs of the spooled file (:class:`SyncingSink`).
SYNC_STEP = 8 * 1024 * 1024


class SyncingSink:
    """The raw file pyarrow writes the spooled file through (wrapped in ``pa.PythonFile``): each
    ``write`` goes to ``write``, and once ``step`` bytes have been written since the last sync
    began, ``sync`` (an fsync) starts in ``pool`` while pyarrow goes on encoding. The disk writes
    overlap the encoding, so the fsync that makes the file durable before it is published waits
    only for the last bytes. A failed background sync is raised by the next ``write`` and by
    :meth:`wait` (an fsync error is never retried and forgotten: the file is given up).
    ``sync`` None: never syncs. ``close`` closes nothing (the file is the caller's)."""

    def __init__(self, write: Any, sync: Any | None, pool: ThreadPoolExecutor, step: int = SYNC_STEP) -> None:
        self._write, self._sync, self._pool, self._step = write, sync, pool, step
        self._position = self._synced = 0
        self._pending: Future[None] | None = None
        self.closed = False

    def write(self, data: Any) -> int:
        self._write(data)
        n = memoryview(data).nbytes
        self._position += n
        if self._sync is not None and self._position - self._synced >= self._step:
            pending = self._pending
            if pending is None or pending.done():
                if pending is not None:
                    pending.result()  # a failed sync: raised here, not overwritten
                self._synced = self._position
                self._pending = self._pool.submit(self._sync)
        return n

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True

    def wait(self) -> None:
        """Wait for the sync under way (if any); raise its error."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()


class KeyMaterialSpool(pafs.FileSystemHandler):  # type: ignore[misc]
    """An in-memory ``pyarrow.fs`` filesystem (``PyFileSystem(KeyMaterialSpool())``) that pyarrow
    writes a new file's external key material into: the sidecar exists nowhere on disk until it
    is published, so a killed writer leaves none behind. Holds wrapped keys only."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def get_type_name(self) -> str:
        return "secure-bloom-key-material-spool"

    def normalize_path(self, path: str) -> str:
        return path

    def equals(self, other: Any) -> bool:
        return other is self

    def get_file_info(self, paths: Sequence[str]) -> list[pafs.FileInfo]:
        return [pafs.FileInfo(p, pafs.FileType.File, size=len(self.files[p])) if p in self.files
                else pafs.FileInfo(p, pafs.FileType.NotFound) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = selector.base_dir.rstrip("/") + "/"
        return self.get_file_info([p for p in self.files if p.startswith(base)])

    def create_dir(self, path: str, recursive: bool) -> None:
        pass  # directories are implied by the paths

    def delete_file(self, path: str) -> None:
        if self.files.pop(path, None) is None:
            raise FileNotFoundError(path)

    def move(self, src: str, dest: str) -> None:
        self.files[dest] = self.files.pop(src)

    def copy_file(self, src: str, dest: str) -> None:
        self.files[dest] = self.files[src]

    def open_input_file(self, path: str) -> pa.NativeFile:
        if path not in self.files:
            raise FileNotFoundError(path)
        return pa.BufferReader(self.files[path])

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        files = self.files

        class Spooled(io.BytesIO):
            def close(self) -> None:
                if not self.closed:
                    files[path] = self.getvalue()
                super().close()

        return pa.PythonFile(Spooled(), mode="w")

    def _unsupported(self, *_: Any, **__: Any) -> Any:
        raise OSError("KeyMaterialSpool holds whole files only")

    delete_dir = delete_dir_contents = delete_root_dir_contents = open_append_stream = _unsupported


class ParquetWriter:
    """pyarrow's ``ParquetWriter`` for encrypted files with (encrypted) Bloom filters.

    ``ParquetWriter(where, schema, *, encryption, kms, kms_connection_config=None,
    bloom_filter_options=None, filesystem=None, bloom_filter_max_bytes=1 MiB, timeouts=None, **kwargs)``;
    ``timeouts`` (:class:`~secure_bloom.parquet.sources.StoreTimeouts`) for the filesystem of a
    URI ``where`` (default: those of ``store_timeouts``); ``kwargs`` go to pyarrow's writer
    (``compression``, ``version``, ``use_deprecated_int96_timestamps``, ...).
    Options are checked and the data keys wrapped by the KMS when the writer is made; nothing
    appears at ``where`` until :meth:`close` has verified the complete file. Leaving a ``with``
    block by an exception discards everything (:meth:`abort`).
    """

    def __init__(self, where: Any, schema: pa.Schema, *, encryption: Any, kms: Any, kms_connection_config: Any = None,
                 bloom_filter_options: Any = None, filesystem: Any = None,
                 bloom_filter_max_bytes: int = WRITER_DEFAULT_MAX_BYTES, max_bytes: int | None = None,
                 timeouts: StoreTimeouts | None = None, **kwargs: Any) -> None:
        self._closed = True
        self._dest = _destination(where, filesystem, timeouts)
        self._setup = _setup(schema, encryption, kms, kms_connection_config, bloom_filter_options,
                             size_cap(bloom_filter_max_bytes, max_bytes), kwargs)
        self._open(self._setup, self._dest)

    @classmethod
    def _with_setup(cls, setup: _Setup, dest: _Destination) -> ParquetWriter:
        writer = cls.__new__(cls)
        writer._closed = True
        writer._dest, writer._setup = dest, setup
        writer._open(setup, dest)
        return writer

    def _open(self, setup: _Setup, dest: _Destination) -> None:
        self._row_groups: list[_RowGroup] = []
        self._report: WriteReport | None = None
        self._spool: KeyMaterialSpool | None = None
        self._spool_fs: Any = None
        self._out: AtomicOutput | None = None
        self._sink: Any = None
        self._writer: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._syncing: SyncingSink | None = None
        if dest.local:
            target = Path(dest.path)
            _check_local_target(target)
            spool_dir = target.parent
        else:
            spool_dir = Path(tempfile.gettempdir())
        try:
            key_file = spool_fs = None
            if not setup.encryption.internal_key_material:
                # pyarrow writes the sidecar when the keys are made: into memory, under the final
                # file's name; it is published with the file (nothing is on disk before).
                self._spool = KeyMaterialSpool()
                spool_fs = pafs.PyFileSystem(self._spool)
                key_file = f"/spool/{dest.name}"
            properties = setup.crypto.file_encryption_properties(setup.kms_config, setup.encryption,
                                                                 parquet_file_path=key_file, filesystem=spool_fs)
            self._key_file, self._spool_fs = key_file, spool_fs
            self._out = AtomicOutput(spool_dir / f".{dest.name}.{os.urandom(6).hex()}.write.tmp",
                                     0o666 if dest.local else 0o600)
            # two threads: one hashes a row group while pyarrow writes it, one syncs what is written
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="secure-bloom-write")
            # a local file is made durable before it is linked in; a spool file for an upload
            # is only read back (the object store makes the upload durable): never synced
            self._syncing = SyncingSink(self._out.write, self._out.sync if dest.local else None, self._pool)
            self._sink = pa.PythonFile(self._syncing, mode="w")
            self._writer = pq.ParquetWriter(self._sink, setup.schema, encryption_properties=properties,
                                            **setup.writer_options)
        except BaseException:
            self._discard()
            raise
        self._closed = False

    # ------------------------------------------------------------------ writing

    @property
    def schema(self) -> pa.Schema:
        return self._setup.schema

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def report(self) -> WriteReport | None:
        """What :meth:`close` wrote (None before)."""
        return self._report

    def write(self, table_or_batch: pa.Table | pa.RecordBatch, row_group_size: int | None = None) -> None:
        """Write a Table or RecordBatch (see :meth:`write_table`)."""
        if isinstance(table_or_batch, pa.RecordBatch):
            self.write_batch(table_or_batch, row_group_size)
        elif isinstance(table_or_batch, pa.Table):
            self.write_table(table_or_batch, row_group_size)
        else:
            raise TypeError(f"expected a pyarrow Table or RecordBatch, got {type(table_or_batch).__name__}")

    def write_batch(self, batch: pa.RecordBatch, row_group_size: int | None = None) -> None:
        """Write one RecordBatch (as pyarrow: at least one row group of its own)."""
        self.write_table(pa.Table.from_batches([batch], schema=batch.schema), row_group_size)

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
        """Write ``table`` as row groups of at most ``row_group_size`` rows (default 1 Mi rows),
        each with its Bloom filters; pyarrow's ``write_table`` semantics (an empty table is one
        empty row group)."""
        if self._closed:
            raise ValueError("write to a closed ParquetWriter")
        if not isinstance(table, pa.Table):
            raise TypeError(f"expected a pyarrow Table, got {type(table).__name__}")
        if not table.schema.equals(self.schema, check_metadata=False):
            raise ValueError(f"table schema does not match the writer's schema:\n{table.schema}\nvs\n{self.schema}")
        size = _check_row_group_size(row_group_size)
        try:
            for start in range(0, max(table.num_rows, 1), size):
                self._write_row_group(table.slice(start, size))
        except BaseException:
            self.abort()
            raise

    def _build_filters(self, part: pa.Table) -> list[_Built]:
        setup = self._setup
        return [build_filter(_column_hashes(part, column), column.ndv, column.fpp, setup.max_bytes)
                for column in setup.columns]

    def _write_row_group(self, part: pa.Table) -> None:
        # pyarrow encodes and encrypts the slice (GIL released) while a second thread hashes
        # the same Arrow arrays into the filters; both finish before the next slice.
        group = _RowGroup(rows=part.num_rows)
        if self._setup.columns:
            assert self._pool is not None
            building = self._pool.submit(self._build_filters, part)
            try:
                self._writer.write_table(part, row_group_size=max(part.num_rows, 1))
            finally:
                filters = building.result()  # its error, if any, after pyarrow's
            group.filters = filters
        else:
            self._writer.write_table(part, row_group_size=max(part.num_rows, 1))
        self._row_groups.append(group)

    # ------------------------------------------------------------------ closing

    def close(self) -> WriteReport:
        """Finish the file: append the filters, rewrite the footer, verify, publish. Returns the
        report (also :attr:`report`); calling again returns the same report."""
        if self._report is not None:
            return self._report
        if self._closed:
            raise WriteError(f"{self._dest}: the writer was aborted; nothing was written")
        try:
            self._writer.close()
            self._sink.close()
            self._stop_pool()
            self._report = self._finish()
        except BaseException as e:
            self._discard()
            if isinstance(e, (SecureBloomError, KeyboardInterrupt, SystemExit, OSError, TypeError, ValueError)):
                raise
            raise WriteError(f"writing {self._dest} failed: {type(e).__name__}: {e}") from e
        self._closed = True
        return self._report

    def abort(self) -> None:
        """Discard everything written so far; nothing is published."""
        self._discard()

    def _stop_pool(self) -> None:
        """Wait for the threads (before the file is closed or rewritten); raise a failed sync."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        syncing, self._syncing = self._syncing, None
        if syncing is not None:
            syncing.wait()

    def _discard(self) -> None:
        self._closed = True
        try:
            self._stop_pool()
        except Exception:  # noqa: BLE001 - discarding: the first error is the one raised
            pass
        for closing in (self._writer, self._sink):
            if closing is not None:
                try:
                    closing.close()
                except Exception:  # noqa: BLE001 - discarding: the first error is the one raised
                    pass
        self._writer = self._sink = None
        if self._out is not None:
            self._out.discard()
            self._out = None
        self._spool = self._spool_fs = None

    def __enter__(self) -> ParquetWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def _finish(self) -> WriteReport:
        setup, out = self._setup, self._out
        assert out is not None
        temp = out.readable_path
        key_material = self._key_material()
        new: list[NewFilter] = []
        with ParquetBloomReader(temp, setup.keys, key_material=key_material) as reader:
            reader.path = str(self._dest)
            groups = reader.footer.metadata.row_groups
            if [rg.num_rows for rg in groups] != [g.rows for g in self._row_groups]:
                raise WriteError(f"{self._dest}: pyarrow wrote row groups of {[rg.num_rows for rg in groups]} rows, "
                                 f"expected {[g.rows for g in self._row_groups]}; nothing was written")
            built: list[_Built] = []
            for rg, group in enumerate(self._row_groups):
                for column, bf in zip(setup.columns, group.filters):
                    chunk = reader.chunk(rg, column.info.ordinal)
                    cross_check_statistics(bf.bf, reader.column_metadata(chunk).statistics, column.info, WriteError,
                                           "the Arrow values written")
                    new.append(NewFilter(chunk=chunk, bf=bf.bf, sample=bf.sample))
                    built.append(bf)
            layout = filter_tail(reader, new)
            footer_mode = reader.footer.mode
        out.truncate(layout.start)
        for data in layout.chunks():
            out.write(data)
        if self._dest.local:
            out.sync()
        verified = verify_filters(temp, setup.keys, key_material or os.fspath(temp), new, {}, WriteError)
        self._check_with_pyarrow(temp)
        self._publish(self._spooled_sidecar())
        filters = tuple(AttachedFilter(row_group=n.chunk.row_group, column=n.chunk.column.path,
                                       encrypted=n.chunk.encrypted, num_bytes=b.bf.num_bytes, ndv=b.ndv,
                                       values=b.values, offset=at, length=len(blob), replaced=False,
                                       expected_fpp=b.bf.fpp_estimate(b.distinct), capped=b.capped)
                        for n, b, at, blob in zip(new, built, layout.offsets, layout.blobs))
        return WriteReport(path=str(self._dest), footer_mode=footer_mode,
                           num_rows=sum(g.rows for g in self._row_groups), row_groups=len(self._row_groups),
                           filters=filters, size=layout.size, verified_values=verified)

    def _spooled_sidecar(self) -> bytes | None:
        """The external key material exactly as pyarrow wrote it (None: internal key material)."""
        if self._spool is None:
            return None
        assert self._key_file is not None
        return self._spool.files[os.fspath(sidecar_path(self._key_file))]

    def _key_material(self) -> KeyMaterialStore | None:
        """The external key material pyarrow spooled, parsed (None: internal key material)."""
        sidecar = self._spooled_sidecar()
        return None if sidecar is None else KeyMaterialStore.from_json(sidecar, source=sidecar_path(self._dest.name))

    def _check_with_pyarrow(self, temp: Path) -> None:
        """pyarrow opens the rewritten footer with the same keys (metadata only, no page read)."""
        setup = self._setup
        decryption = setup.crypto.file_decryption_properties(setup.kms_config, parquet_file_path=self._key_file,
                                                             filesystem=self._spool_fs)
        metadata = pq.ParquetFile(os.fspath(temp), decryption_properties=decryption).metadata
        if metadata.num_rows != sum(g.rows for g in self._row_groups):
            raise WriteError(f"{self._dest}: verification failed: pyarrow reads {metadata.num_rows} rows back")

    def _publish(self, sidecar: bytes | None) -> None:
        """Publish the file and, first, its external key material ``sidecar`` (None: internal)."""
        out, dest = self._out, self._dest
        assert out is not None
        if dest.local:
            target = Path(dest.path)
            if sidecar is None:
                out.publish(target, replace=True)
                fsync_dir(target.parent)
            else:
                # the key material first: a kill in between leaves no file without it, and the
                # journal lets doctor --fix undo a sidecar published without its file
                clean_leftovers(target.parent, only_for=target.name, orphans=False)  # of a write killed earlier
                journal = PairJournal.begin(target, sidecar_path(target))
                try:
                    _publish_bytes(sidecar, sidecar_path(target))
                    out.publish(target, replace=True)
                except BaseException:
                    journal.abort()
                    raise
                fsync_dir(target.parent)
                journal.done()
        else:
            if sidecar is not None:
                _write_object(dest.filesystem, os.fspath(sidecar_path(Path(dest.path))), sidecar)
            _upload(dest.filesystem, dest.path, out.readable_path)
            out.discard()
        self._out = None
        self._spool = self._spool_fs = None


def _publish_bytes(data: bytes, target: Path) -> None:
    """Write a small file to ``target`` atomically (unnamed until complete and synced)."""
    copy = AtomicOutput(target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp"), 0o666)
    try:
        copy.write(data)
        copy.sync()
        copy.publish(target, replace=True)
    except BaseException:
        copy.discard()
        raise


def _write_object(filesystem: Any, path: str, data: bytes) -> None:
    """Write ``data`` as one object on ``filesystem``."""
    stream = filesystem.open_output_stream(path)
    try:
        stream.write(data)
    finally:
        stream.close()


def _upload(filesystem: Any, path: str, local: str | os.PathLike[str]) -> None:
    """Upload a complete local file as one object: a single ``write`` of the whole file (mapped,
    not copied), so no Python code runs between its first and last byte."""
    with open(local, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        stream = filesystem.open_output_stream(path)
        try:
            stream.write(data)
        finally:
            stream.close()


# --------------------------------------------------------------------------- one-call forms


def write_table(table: pa.Table, where: Any, *, encryption: Any, kms: Any, kms_connection_config: Any = None,
                bloom_filter_options: Any = None, row_group_size: int | None = None, filesystem: Any = None,
                bloom_filter_max_bytes: int = WRITER_DEFAULT_MAX_BYTES, max_bytes: int | None = None,
                **kwargs: Any) -> WriteReport:
    """pyarrow's ``pq.write_table`` for an encrypted file with (encrypted) Bloom filters.

    ``encryption``: ``pyarrow.parquet.encryption.EncryptionConfiguration``; ``kms``: one of our
    KMS clients or a pyarrow ``KmsClient`` factory; ``bloom_filter_options``: pyarrow's format
    (``{"email": {"ndv": N, "fpp": P}, "ssn": True}``; without ``ndv`` each row group's filter is
    sized for its exact distinct count, capped at ``bloom_filter_max_bytes``; ``fpp`` defaults to 0.01).
    ``where``: a local path, a URI (``s3://...``) or a path on ``filesystem``; ``timeouts=`` as for
    :class:`ParquetWriter`. Other keywords go to pyarrow's writer. Returns what was written; raises
    before writing anything for bad options.
    """
    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow Table, got {type(table).__name__}")
    with ParquetWriter(where, table.schema, encryption=encryption, kms=kms, kms_connection_config=kms_connection_config,
                       bloom_filter_options=bloom_filter_options, filesystem=filesystem,
                       bloom_filter_max_bytes=size_cap(bloom_filter_max_bytes, max_bytes),
                       **kwargs) as writer:
        writer.write_table(table, row_group_size)
    report = writer.report
    assert report is not None
    return report


def _partitions(table: pa.Table, partition_cols: Sequence[str]) -> Iterator[tuple[str, pa.Table]]:
    """(hive directory, rows without the partition columns) per distinct partition key, in
    pyarrow's layout (``col=value``, URI-escaped, ``__HIVE_DEFAULT_PARTITION__`` for null)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    data = table.drop_columns(list(partition_cols))
    if not partition_cols:
        yield "", data
        return
    partitioning = ds.partitioning(pa.schema([table.schema.field(c) for c in partition_cols]), flavor="hive")
    index_name = "__secure_bloom_row"
    keyed = table.select(list(partition_cols)).append_column(index_name, pa.array(np.arange(table.num_rows)))
    groups = keyed.group_by(list(partition_cols), use_threads=False).aggregate([(index_name, "list")])
    rows = groups.column(f"{index_name}_list")
    for g in range(groups.num_rows):
        expression = None
        for column in partition_cols:
            value = groups.column(column)[g]
            term = pc.field(column).is_null() if not value.is_valid else pc.field(column) == value
            expression = term if expression is None else expression & term
        directory, _ = partitioning.format(expression)
        yield directory, data.take(rows[g].values)


def _check_row_group_size(row_group_size: Any) -> int:
    """``row_group_size`` (None: :data:`DEFAULT_ROW_GROUP_SIZE`) as an int >= 1."""
    size = DEFAULT_ROW_GROUP_SIZE if row_group_size is None else row_group_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"row_group_size must be an int >= 1, got {row_group_size!r}")
    return size


def _file_rows(max_rows_per_file: Any, row_group_size: Any) -> tuple[int, int | None]:
    """Checked ``max_rows_per_file`` (0: no limit) and the row group size to use: as pyarrow, row
    groups may not be bigger than files (unset, they are as big as the files allow)."""
    if (isinstance(max_rows_per_file, bool) or not isinstance(max_rows_per_file, (int, np.integer))
            or max_rows_per_file < 0):
        raise ValueError(f"max_rows_per_file must be an int >= 0 (0: no limit), got {max_rows_per_file!r}")
    max_rows_per_file = int(max_rows_per_file)
    if not max_rows_per_file:
        return 0, row_group_size
    if row_group_size is None:
        return max_rows_per_file, min(DEFAULT_ROW_GROUP_SIZE, max_rows_per_file)
    if _check_row_group_size(row_group_size) > max_rows_per_file:
        raise ValueError(f"row_group_size ({row_group_size}) must be less than or equal to max_rows_per_file "
                         f"({max_rows_per_file})")
    return max_rows_per_file, row_group_size


_EXISTING_DATA = ("overwrite_or_ignore", "error", "delete_matching")


def _partitioning_columns(partitioning: Any, flavor: str | None, partition_cols: Any) -> list[str]:
    """The hive partition columns pyarrow's ``partitioning`` (and ``partitioning_flavor``) name."""
    if partitioning is None:
        if flavor not in (None, "hive"):
            raise ValueError(f"partitioning_flavor={flavor!r}: secure_bloom writes hive partitions only")
        return []
    if partition_cols:
        raise TypeError("give partition_cols= or partitioning=, not both")
    import pyarrow.dataset as pads

    if isinstance(partitioning, (list, tuple)) and all(isinstance(c, str) for c in partitioning):
        if flavor != "hive":
            raise ValueError("partitioning=[columns] without partitioning_flavor='hive' is pyarrow's directory "
                             "partitioning, which secure_bloom does not write: give partition_cols=[...] or "
                             "partitioning_flavor='hive'")
        return list(partitioning)
    if isinstance(partitioning, pads.HivePartitioning):
        return list(partitioning.schema.names)
    raise ValueError(f"partitioning={type(partitioning).__name__}: secure_bloom writes hive partitions only "
                     "(partition_cols=[...], or a pyarrow.dataset.HivePartitioning)")


def _holds_files(root: _Destination, path: str) -> bool:
    if root.local:
        return os.path.isdir(path) and any(files for _, _, files in os.walk(path))
    from pyarrow import fs as pafs

    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    return any(info.type == pafs.FileType.File for info in root.filesystem.get_file_info(selector))


def _delete_files(root: _Destination, folder: str) -> None:
    """The files directly in ``folder`` (one partition's), deleted before it is written."""
    if root.local:
        for entry in os.scandir(folder):
            if entry.is_file(follow_symlinks=False) or entry.is_symlink():
                os.unlink(entry.path)
        return
    from pyarrow import fs as pafs

    for info in root.filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
        if info.type == pafs.FileType.File:
            root.filesystem.delete_file(info.path)


def write_to_dataset(table: pa.Table, root_path: Any, *, partition_cols: Sequence[str] | None = None,
                     encryption: Any, kms: Any, kms_connection_config: Any = None, bloom_filter_options: Any = None,
                     filesystem: Any = None, basename_template: str | None = None, row_group_size: int | None = None,
                     max_rows_per_file: int = 0, bloom_filter_max_bytes: int = WRITER_DEFAULT_MAX_BYTES,
                     max_bytes: int | None = None, existing_data_behavior: str = "overwrite_or_ignore",
                     partitioning: Any = None, partitioning_flavor: str | None = None,
                     timeouts: StoreTimeouts | None = None, **kwargs: Any) -> list[WriteReport]:
    """pyarrow's ``pq.write_to_dataset`` (hive partitioning): one file per partition, each with
    its own data keys (fresh per file) and its own Bloom filters. ``max_rows_per_file`` (pyarrow's
    name and meaning; 0, the default, is no limit) splits each partition's rows, in order, into
    files of at most that many rows, each its own encrypted file with its own filters; row groups
    are then at most that size too (a bigger ``row_group_size`` is refused, as pyarrow does).
    ``basename_template`` has ``{i}``, numbered from 0 in each directory (default
    ``<uuid>-{i}.parquet``, as pyarrow). Every option is checked before the first file is
    written; each file appears complete or not at all (the dataset as a whole is not one atomic
    unit: a failure leaves the files written before it).

    ``existing_data_behavior`` (pyarrow's): ``"overwrite_or_ignore"`` (default: files of the same
    name are replaced, others kept), ``"error"`` (:class:`DestinationExistsError` if the root
    holds any file), ``"delete_matching"`` (the files of each partition written are deleted
    first). ``partitioning``: a list of column names with ``partitioning_flavor="hive"`` or a
    ``pyarrow.dataset`` hive partitioning, the same as ``partition_cols``; other layouts
    (directory partitioning, a filename flavor) are refused by name."""
    import uuid

    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow Table, got {type(table).__name__}")
    if existing_data_behavior not in _EXISTING_DATA:
        raise ValueError(f"existing_data_behavior must be one of {', '.join(_EXISTING_DATA)}, "
                         f"got {existing_data_behavior!r}")
    cols = list(partition_cols or []) + _partitioning_columns(partitioning, partitioning_flavor, partition_cols)
    missing = [c for c in cols if table.schema.get_field_index(c) < 0]
    if missing:
        raise ColumnNotFoundError(f"partition_cols: no column {missing[0]!r} in the table")
    template = basename_template if basename_template is not None else f"{uuid.uuid4().hex}-{{i}}.parquet"
    if "{i}" not in template:
        raise ValueError("basename_template must contain '{i}'")
    file_rows, row_group_size = _file_rows(max_rows_per_file, row_group_size)
    _check_row_group_size(row_group_size)
    root = _destination(root_path, filesystem, timeouts)
    data_schema = table.schema
    for c in cols:
        data_schema = data_schema.remove(data_schema.get_field_index(c))
    setup = _setup(data_schema, encryption, kms, kms_connection_config, bloom_filter_options,
                   size_cap(bloom_filter_max_bytes, max_bytes), kwargs)
    if existing_data_behavior == "error" and _holds_files(root, root.path):
        raise DestinationExistsError(f"{root.path}: holds data (existing_data_behavior='error')")
    reports = []
    for directory, rows in _partitions(table, cols):
        if root.local:
            folder = os.path.join(root.path, directory)
            os.makedirs(folder, exist_ok=True)
        else:
            folder = "/".join(p for p in (root.path.rstrip("/"), directory) if p)
            root.filesystem.create_dir(folder, recursive=True)
        if existing_data_behavior == "delete_matching":
            _delete_files(root, folder)
        rows = rows.replace_schema_metadata(data_schema.metadata)
        step = file_rows or max(rows.num_rows, 1)
        for i, start in enumerate(range(0, max(rows.num_rows, 1), step)):
            name = template.format(i=i)
            dest = (_Destination(os.path.join(folder, name)) if root.local
                    else _Destination(f"{folder}/{name}", root.filesystem))
            writer = ParquetWriter._with_setup(setup, dest)
            with writer:
                writer.write_table(rows.slice(start, step), row_group_size)
            assert writer.report is not None
            reports.append(writer.report)
    return reports


def iter_row_groups(path: str | os.PathLike[str]) -> Iterable[pa.Table]:
    """The row groups of a plaintext Parquet file, one Table each (for re-writing it)."""
    with pq.ParquetFile(os.fspath(path)) as source:
        for i in range(source.num_row_groups):
            yield source.read_row_group(i)
