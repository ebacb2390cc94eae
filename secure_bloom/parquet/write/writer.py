"""Write encrypted Parquet with encrypted Bloom filters in one call, with pyarrow's names.

Spec: BloomFilter.md, Encryption.md (SPEC_NOTES 1-7). pyarrow refuses Bloom filters on encrypted
files ("Encryption is not currently supported with bloom filter"); this module is the drop-in:

* :func:`write_table` ``(table, where, *, encryption, kms, kms_connection_config=None,
  bloom_filter_options=None, **kwargs)``, :class:`ParquetWriter` (``write_table``,
  ``write_batch``, ``close``, context manager) and :func:`write_to_dataset` (hive partitions).
  ``encryption`` is pyarrow's ``EncryptionConfiguration``; ``kms`` one of our KMS clients or a
  pyarrow ``KmsClient`` factory (what ``CryptoFactory`` takes); ``bloom_filter_options`` pyarrow's
  ``{"col": {"ndv": N, "fpp": P} | True}``; every other keyword goes to pyarrow's writer.
  Without ``encryption`` and ``kms``, :func:`write_table` is pyarrow's own plaintext write (its
  plaintext filters); pyarrow's ``encryption_properties=`` is refused, naming what to pass.

How (one pass over the data): pyarrow writes the encrypted file without filters into an unnamed
temporary file (``O_TMPFILE``), one row group per slice we hand it, so row-group boundaries are
ours; each slice's Bloom columns are hashed from the same Arrow arrays
(:func:`secure_bloom.values.arrow.leaf_values`, :func:`~secure_bloom.values.physical.hash_values`)
and one filter per row group is sized from the slice's exact distinct count (or ``ndv``) at
``fpp``, capped at ``bloom_filter_max_bytes``; a column with ``"sizing": "fixed"`` gets one size
for every row group instead (``num_bytes``, or sized for ``ndv``, or for the largest row group's
distinct count: each filter is then built at the cap and folded down to that size at close, so
the size is never known from a partial file; docs/security-model/filter-sizes.md). At :meth:`ParquetWriter.close` the file's footer is read back
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
without it) under the :class:`~secure_bloom.parquet.file.leftovers.PairJournal` attach uses, so a kill
between the two is rolled back by ``secure-bloom doctor --fix`` (an orphaned sidecar removed, the
sidecar an overwrite replaced restored).

Speed: each slice's hashing runs in a second thread while pyarrow encodes and encrypts the slice
(both release the GIL), and pyarrow writes through :class:`SyncingSink`, which starts an fsync in
the background every :data:`SYNC_STEP` bytes: the disk writes overlap the encoding, so the
durable publish waits only for the last few MB instead of the whole file.

Memory: the slice being written (at most ``row_group_size`` rows of the table given to one
``write_table`` call) and pyarrow's buffers for it, 8 bytes per value of one Bloom column of that
slice (its hashes), plus every filter built so far (at most ``max_bytes`` each; kept until
``close``; a fixed-size column without ``num_bytes`` or ``ndv``: the cap each, until close).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ...errors import (
    SecureBloomError,
    WriteError,
)
from ...fileio import AtomicOutput, fsync_dir
from ...filter import SplitBlockBloomFilter, optimal_num_bytes
from ...kernels import count_distinct_hashes
from ...kms.sidecar import KeyMaterialStore, sidecar_path
from ...values.arrow import leaf_values
from ...values.physical import hash_values
from ..file.leftovers import PairJournal, clean_leftovers
from ..file.reader import ParquetBloomReader
from ..file.sources import (
    StoreTimeouts,
    display_path,
    filesystem_from_uri,
    is_store_uri,
    storage_error,
)
from .append import (
    NewFilter,
    cross_check_statistics,
    dictionary_hashes,
    filter_tail,
    sample_of,
    verify_filters,
)
from .attach import AttachedFilter
from .destination import (
    Destination,
    check_local_target,
    destination_of,
    publish_bytes,
    upload,
    write_object,
)
from ...types import FilterSizing
from .options import WRITER_DEFAULT_MAX_BYTES, build_num_bytes, needed_num_bytes, size_cap
from .key_tools import KeyTools
from .setup import BloomColumn, WriteSetup, check_setup, need_encryption_and_kms, refuse_pyarrow_encryption
from .sink import KeyMaterialSpool, SyncingSink

__all__ = ["write_table", "ParquetWriter", "WriteReport", "DEFAULT_ROW_GROUP_SIZE", "build_filter",
           "check_row_group_size", "column_hashes", "fix_sizes", "iter_row_groups"]


#: Rows per row group when ``row_group_size`` is not given (pyarrow's default).
DEFAULT_ROW_GROUP_SIZE = 1024 * 1024


@dataclass(frozen=True)
class WriteReport:
    """What :func:`write_table` / :meth:`ParquetWriter.close` wrote.

    Parameters
    ----------
    path : str
        The file published.
    footer_mode : str
        Its footer mode.
    num_rows, row_groups : int
        Rows and row groups written.
    filters : tuple of AttachedFilter
        As attach reports them: size, distinct values, expected false-positive rate, whether
        ``bloom_filter_max_bytes`` capped it.
    size : int
        The file's size.
    verified_values : int
        Values read back and found in their filters before publishing.
    """

    path: str
    footer_mode: str
    num_rows: int
    row_groups: int
    filters: tuple[AttachedFilter, ...]
    size: int
    verified_values: int

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able values.

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"path": self.path, "footer_mode": str(self.footer_mode), "num_rows": self.num_rows,
                "row_groups": self.row_groups, "filters": [vars(f).copy() for f in self.filters],
                "size": self.size, "verified_values": self.verified_values}


@dataclass
class _Built:
    bf: SplitBlockBloomFilter
    ndv: int
    values: int
    distinct: int
    capped: bool
    sample: npt.NDArray[np.uint64]
    #: The size this row group needs (``bf`` may be bigger: built to be folded down to one size).
    need: int = 0
    sizing: FilterSizing = FilterSizing.PER_ROW_GROUP
    #: hashes of the Arrow dictionary the chunk was written from (None: not dictionary-encoded)
    dictionary: npt.NDArray[np.uint64] | None = None


@dataclass
class _RowGroup:
    rows: int
    filters: list[_Built] = field(default_factory=list)


def build_filter(hashes: npt.NDArray[np.uint64], ndv: int | None, fpp: float, max_bytes: int, *,
                 sizing: FilterSizing = FilterSizing.PER_ROW_GROUP, num_bytes: int | None = None) -> _Built:
    """One chunk's filter: sized for ``ndv`` or the exact distinct count of ``hashes`` (or
    ``num_bytes``); for ``FIXED`` sizing without ``num_bytes`` or ``ndv``, built at the cap, to be
    folded down to the size of the largest row group's need (:func:`fix_sizes`).

    Parameters
    ----------
    hashes : numpy.ndarray of uint64
        The xxHash64 of every non-null value of the chunk, as pyarrow wrote it.
    ndv : int or None
        The distinct count to size for; None: the exact count of distinct ``hashes``.
    fpp : float
        The false-positive rate to size for.
    max_bytes : int
        The size cap (what ``optimal_num_bytes`` gives beyond it is capped: ``capped``).
    sizing : FilterSizing, default PER_ROW_GROUP
        ``FIXED``: every row group's filter of the column gets one size.
    num_bytes : int, optional
        That one size, when given.

    Returns
    -------
    _Built
        The filter with every hash inserted and what the write's report says of it: the count
        sized for (``ndv``), values and distinct hashes, whether the cap applied, a sample of
        the hashes (checked in the written file), and the size this row group needs.

    Raises
    ------
    ValueError
        ``ndv`` < 0 or ``fpp`` outside (0, 1) (the writers check both before any row group).
    """
    distinct = count_distinct_hashes(hashes) if hashes.size else 0

    size_for = distinct if ndv is None else ndv
    need = needed_num_bytes(distinct, ndv, fpp, max_bytes, num_bytes)
    bf = SplitBlockBloomFilter(build_num_bytes(sizing, ndv, fpp, max_bytes, num_bytes, distinct))
    bf.insert_hashes(hashes)
    return _Built(bf=bf, ndv=size_for, values=int(hashes.size), distinct=distinct,
                  capped=optimal_num_bytes(size_for, fpp) > need, sample=sample_of(hashes), need=need,
                  sizing=sizing)


def fix_sizes(filters: list[list[_Built]]) -> None:
    """Give each ``FIXED`` column of ``filters`` one size, the largest row group's need,
    folding the filters built bigger (in place).

    Parameters
    ----------
    filters : list of list of _Built
        Row group -> column -> the filter :func:`build_filter` built.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        A filter smaller than the size (never for filters :func:`build_filter` built).
    """
    for c in range(len(filters[0]) if filters else 0):
        column = [group[c] for group in filters]
        if column[0].sizing is not FilterSizing.FIXED:
            continue
        size = max(b.need for b in column)
        for b in column:
            if b.bf.num_bytes != size:
                b.bf = b.bf.folded(size)
            b.need = size


def column_hashes(table: pa.Table, column: BloomColumn) -> npt.NDArray[np.uint64]:
    """The hashes of ``column``'s values in ``table`` (every chunk, in order; nulls skipped).

    Parameters
    ----------
    table : pyarrow.Table
    column : BloomColumn

    Returns
    -------
    numpy.ndarray of uint64

    Raises
    ------
    SecureBloomError
        A value the column's physical type cannot hold.
    """
    info = column.info
    return _hashes_of([leaf_values(chunk, info) for chunk in table.column(column.field).chunks], column)


def _hashes_of(values: list[Any], column: BloomColumn) -> npt.NDArray[np.uint64]:
    """The hashes of a column's leaf values, chunk after chunk."""
    info = column.info
    parts = [hash_values(v, info.physical_type, type_length=info.type_length) for v in values]
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _column_filter(table: pa.Table, column: BloomColumn, max_bytes: int) -> _Built:
    """The filter of one Bloom column of a slice, with the hashes of its Arrow dictionaries."""
    info = column.info
    values = [leaf_values(chunk, info) for chunk in table.column(column.field).chunks]
    built = build_filter(_hashes_of(values, column), column.ndv, column.fpp, max_bytes,
                         sizing=column.sizing, num_bytes=column.num_bytes)
    built.dictionary = dictionary_hashes(values, info)
    return built


class ParquetWriter:
    """pyarrow's ``ParquetWriter`` for encrypted files with (encrypted) Bloom filters.

    ``ParquetWriter(where, schema, *, encryption, kms, kms_connection_config=None,
    bloom_filter_options=None, filesystem=None, bloom_filter_max_bytes=1 MiB, timeouts=None, **kwargs)``;
    ``bloom_filter_options`` entries may set ``"sizing": "fixed"`` (or ``"num_bytes": N``): that
    column's filters get one size for the file (the largest row group's need, known at
    :meth:`close`: filters are built at the cap until then).
    ``timeouts`` (:class:`~secure_bloom.parquet.file.sources.StoreTimeouts`) for the filesystem of a
    URI ``where`` (default: those of ``store_timeouts``); ``kwargs`` go to pyarrow's writer
    (``compression``, ``version``, ``use_deprecated_int96_timestamps``, ...).
    Options are checked and the data keys wrapped by the KMS when the writer is made; nothing
    appears at ``where`` until :meth:`close` has verified the complete file. Leaving a ``with``
    block by an exception discards everything (:meth:`abort`). Streams bigger than memory: each
    written batch or table becomes row groups as it comes.

    Parameters
    ----------
    where : str or os.PathLike
        A local path, an object-store URI or a path on ``filesystem``.
    schema : pyarrow.Schema
        The schema of every batch written.
    encryption : pyarrow.parquet.encryption.EncryptionConfiguration
        Footer key, column keys and the rest of pyarrow's encryption options.
    kms : KmsClient or callable
        One of :mod:`secure_bloom.kms`'s clients, or a pyarrow ``KmsClient`` factory.
    kms_connection_config : pyarrow.parquet.encryption.KmsConnectionConfig, optional
        Handed to a pyarrow ``KmsClient`` factory.
    bloom_filter_options : dict, optional
        pyarrow's format: ``{"email": True, "ssn": {"fpp": 0.001}, "id": {"ndv": 100_000}}``.
    filesystem : pyarrow.fs.FileSystem, optional
        Where the destination is, instead of the local disk or a URI's store.
    bloom_filter_max_bytes : int, default 1 MiB
        The cap on one filter's bitset.
    max_bytes : int, optional
        Deprecated spelling of ``bloom_filter_max_bytes``.
    timeouts : StoreTimeouts, optional
        For the filesystem of a URI destination (default: those of ``store_timeouts``).
    **kwargs
        pyarrow's writer options (``compression``, ``version``, ``use_deprecated_int96_timestamps``...).

    Raises
    ------
    TypeError
        An option has the wrong type.
    ValueError
        An option is out of range or names an unknown, BOOLEAN or map column; raised before any
        KMS call or write.
    secure_bloom.errors.KeyManagementError
        The KMS refused or could not wrap a data key.
    OSError
        The destination cannot be written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import ParquetWriter
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> table = pa.table({"email": [f"user{i}@example.com" for i in range(3_000)]})
    >>> with ParquetWriter(tmp / "big.parquet", table.schema, kms=kms, bloom_filter_options={"email": True},
    ...                    encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                          column_keys={"pii_key": ["email"]})) as writer:
    ...     for batch in table.to_batches(max_chunksize=1_000):
    ...         writer.write_batch(batch)
    >>> writer.report.row_groups, len(writer.report.filters)
    (3, 3)
    """

    def __init__(self, where: Any, schema: pa.Schema, *, encryption: Any = None, kms: Any = None,
                 kms_connection_config: Any = None, bloom_filter_options: Any = None, filesystem: Any = None,
                 bloom_filter_max_bytes: int = WRITER_DEFAULT_MAX_BYTES, max_bytes: int | None = None,
                 timeouts: StoreTimeouts | None = None, **kwargs: Any) -> None:
        self._closed = True
        refuse_pyarrow_encryption(kwargs)
        if encryption is None and kms is None:
            raise TypeError("ParquetWriter(where, schema, encryption=..., kms=...) writes encrypted files; for a "
                            "plaintext file use pyarrow.parquet.ParquetWriter (plaintext Bloom filters with its "
                            "bloom_filter_options=) or secure_bloom's write_table")
        need_encryption_and_kms(encryption, kms, "ParquetWriter")
        self._dest = destination_of(where, filesystem, timeouts)
        self.check_setup = check_setup(schema, encryption, kms, kms_connection_config, bloom_filter_options,
                             size_cap(bloom_filter_max_bytes, max_bytes), kwargs)
        self._open(self.check_setup, self._dest)

    @classmethod
    def with_setup(cls, setup: WriteSetup, dest: Destination) -> ParquetWriter:
        """A writer from options already checked (``write_to_dataset`` writes many files with one).

        Parameters
        ----------
        setup : WriteSetup
            The checked options and wrapped keys (:func:`~secure_bloom.parquet.write.setup.check_setup`).
        dest : Destination
            Where the file goes.

        Returns
        -------
        ParquetWriter
            An open writer.

        Raises
        ------
        OSError
            The spool file cannot be made.
        """
        writer = cls.__new__(cls)
        writer._closed = True
        writer._dest, writer.check_setup = dest, setup
        writer._open(setup, dest)
        return writer

    def _open(self, setup: WriteSetup, dest: Destination) -> None:
        self._row_groups: list[_RowGroup] = []
        self._report: WriteReport | None = None
        self._spool: KeyMaterialSpool | None = None
        self._spool_fs: Any = None
        self._out: AtomicOutput | None = None
        self._sink: Any = None
        self._writer: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._syncing: SyncingSink | None = None
        self._tools: KeyTools | None = None
        if dest.local:
            target = Path(dest.path)
            check_local_target(target)
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
            # this file's CryptoFactory and KeyAccess: those of the writes before it with the same
            # key configuration while younger than the cache lifetime (their KEKs), else new ones
            self._tools = tools = setup.key_tools.current()
            properties = tools.crypto.file_encryption_properties(setup.kms_config, setup.encryption,
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
        """The schema every batch must have."""
        return self.check_setup.schema

    @property
    def closed(self) -> bool:
        """True once :meth:`close` or :meth:`abort` ran."""
        return self._closed

    @property
    def report(self) -> WriteReport | None:
        """What :meth:`close` wrote (None before)."""
        return self._report

    def write(self, table_or_batch: pa.Table | pa.RecordBatch, row_group_size: int | None = None) -> None:
        """Write a Table or RecordBatch (see :meth:`write_table`).

        Parameters
        ----------
        table_or_batch : pyarrow.Table or pyarrow.RecordBatch
            Rows with the writer's schema.
        row_group_size : int, optional
            At most this many rows per row group (default 1 Mi rows).

        Raises
        ------
        ValueError
            The writer is closed, the schema differs from the writer's, or ``row_group_size`` < 1.
        TypeError
            Not a Table / RecordBatch.
        secure_bloom.errors.InvalidValueError
            A value of a Bloom filter column cannot be hashed.
        OSError
            The spool file cannot be written.
        """
        if isinstance(table_or_batch, pa.RecordBatch):
            self.write_batch(table_or_batch, row_group_size)
        elif isinstance(table_or_batch, pa.Table):
            self.write_table(table_or_batch, row_group_size)
        else:
            raise TypeError(f"expected a pyarrow Table or RecordBatch, got {type(table_or_batch).__name__}")

    def write_batch(self, batch: pa.RecordBatch, row_group_size: int | None = None) -> None:
        """Write one RecordBatch (as pyarrow: at least one row group of its own).

        Parameters
        ----------
        batch : pyarrow.RecordBatch
            Rows with the writer's schema.
        row_group_size : int, optional
            At most this many rows per row group (default 1 Mi rows).

        Raises
        ------
        ValueError
            The writer is closed, the schema differs from the writer's, or ``row_group_size`` < 1.
        TypeError
            Not a Table / RecordBatch.
        secure_bloom.errors.InvalidValueError
            A value of a Bloom filter column cannot be hashed.
        OSError
            The spool file cannot be written.
        """
        self.write_table(pa.Table.from_batches([batch], schema=batch.schema), row_group_size)

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
        """Write ``table`` as row groups of at most ``row_group_size`` rows (default 1 Mi rows),
        each with its Bloom filters; pyarrow's ``write_table`` semantics (an empty table is one
        empty row group).

        Parameters
        ----------
        table : pyarrow.Table
            Rows with the writer's schema.
        row_group_size : int, optional
            At most this many rows per row group (default 1 Mi rows).

        Raises
        ------
        ValueError
            The writer is closed, the schema differs from the writer's, or ``row_group_size`` < 1.
        TypeError
            Not a Table / RecordBatch.
        secure_bloom.errors.InvalidValueError
            A value of a Bloom filter column cannot be hashed.
        OSError
            The spool file cannot be written.
        """
        if self._closed:
            raise ValueError("write to a closed ParquetWriter")
        if not isinstance(table, pa.Table):
            raise TypeError(f"expected a pyarrow Table, got {type(table).__name__}")
        if not table.schema.equals(self.schema, check_metadata=False):
            raise ValueError(f"table schema does not match the writer's schema:\n{table.schema}\nvs\n{self.schema}")
        size = check_row_group_size(row_group_size)
        try:
            for start in range(0, max(table.num_rows, 1), size):
                self._write_row_group(table.slice(start, size))
        except BaseException:
            self.abort()
            raise

    def _build_filters(self, part: pa.Table) -> list[_Built]:
        setup = self.check_setup
        return [_column_filter(part, column, setup.max_bytes) for column in setup.columns]

    def _write_row_group(self, part: pa.Table) -> None:
        # pyarrow encodes and encrypts the slice (GIL released) while a second thread hashes
        # the same Arrow arrays into the filters; both finish before the next slice.
        group = _RowGroup(rows=part.num_rows)
        if self.check_setup.columns:
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
        """Finish the file: append the filters, rewrite the footer, verify, publish.

        Returns
        -------
        WriteReport
            Also :attr:`report`; calling again returns the same report.

        Raises
        ------
        secure_bloom.errors.WriteError
            The writer was aborted, or a filter or the footer did not verify (nothing published).
        secure_bloom.errors.KeyManagementError
            External key material could not be published with its keys.
        OSError
            The file could not be written, synced or linked into place (nothing published).
        """
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
        self._tools = None  # written: its KEKs stay shared
        return self._report

    def abort(self) -> None:
        """Discard everything written so far; nothing is published.

        Raises
        ------
        None
            Nothing of its own (cleanup errors are swallowed: nothing was published).
        """
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
        if self._tools is not None:  # a failed or aborted write: its KEKs are not passed on
            self.check_setup.key_tools.forget(self._tools)
            self._tools = None
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
        setup, out, tools = self.check_setup, self._out, self._tools
        assert out is not None and tools is not None
        temp = out.readable_path
        key_material = self._key_material()
        new: list[NewFilter] = []
        with ParquetBloomReader(temp, tools.keys, key_material=key_material) as reader:
            reader.path = str(self._dest)
            groups = reader.footer.metadata.row_groups
            if [rg.num_rows for rg in groups] != [g.rows for g in self._row_groups]:
                raise WriteError(f"{self._dest}: pyarrow wrote row groups of {[rg.num_rows for rg in groups]} rows, "
                                 f"expected {[g.rows for g in self._row_groups]}; nothing was written")
            fix_sizes([group.filters for group in self._row_groups])
            built: list[_Built] = []
            for rg, group in enumerate(self._row_groups):
                for column, bf in zip(setup.columns, group.filters):
                    chunk = reader.chunk(rg, column.info.ordinal)
                    cross_check_statistics(bf.bf, reader.column_metadata(chunk).statistics, column.info, WriteError,
                                           "the Arrow values written", dictionary=bf.dictionary)
                    new.append(NewFilter(chunk=chunk, bf=bf.bf, sample=bf.sample))
                    built.append(bf)
            layout = filter_tail(reader, new)
            footer_mode = reader.footer.mode
        out.truncate(layout.start)
        for data in layout.chunks():
            out.write(data)
        if self._dest.local:
            out.sync()
        verified = verify_filters(temp, tools.keys, key_material or os.fspath(temp), new, {}, WriteError)
        self._check_with_pyarrow(temp, tools)
        self._publish(self._spooled_sidecar())
        filters = tuple(AttachedFilter(row_group=n.chunk.row_group, column=n.chunk.column.path,
                                       encrypted=n.chunk.encrypted, num_bytes=b.bf.num_bytes, ndv=b.ndv,
                                       values=b.values, offset=at, length=len(blob), replaced=False,
                                       expected_fpp=b.bf.fpp_estimate(b.distinct), capped=b.capped,
                                       sizing=b.sizing)
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

    def _check_with_pyarrow(self, temp: Path, tools: KeyTools) -> None:
        """pyarrow opens the rewritten footer with the same keys (metadata only, no page read)."""
        decryption = tools.crypto.file_decryption_properties(self.check_setup.kms_config,
                                                                   parquet_file_path=self._key_file,
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
                    publish_bytes(sidecar, sidecar_path(target))
                    out.publish(target, replace=True)
                except BaseException:
                    journal.abort()
                    raise
                fsync_dir(target.parent)
                journal.done()
        else:
            if sidecar is not None:
                write_object(dest.filesystem, os.fspath(sidecar_path(Path(dest.path))), sidecar)
            upload(dest.filesystem, dest.path, out.readable_path)
            out.discard()
        self._out = None
        self._spool = self._spool_fs = None


def write_table(table: pa.Table, where: Any, *, encryption: Any = None, kms: Any = None,
                kms_connection_config: Any = None, bloom_filter_options: Any = None, row_group_size: int | None = None,
                filesystem: Any = None, bloom_filter_max_bytes: int = WRITER_DEFAULT_MAX_BYTES,
                max_bytes: int | None = None, **kwargs: Any) -> WriteReport | None:
    """pyarrow's ``pq.write_table`` for an encrypted file with (encrypted) Bloom filters.

    Parameters
    ----------
    table : pyarrow.Table
        The rows.
    where : str or os.PathLike
        A local path, a URI (``s3://...``) or a path on ``filesystem``.
    encryption : pyarrow.parquet.encryption.EncryptionConfiguration, optional
        How to encrypt; with ``kms``. Neither: a plaintext file, written by pyarrow's own
        ``pq.write_table`` (its plaintext Bloom filters from ``bloom_filter_options``, its
        defaults: ndv 1048576, fpp 0.05; ``where`` anything pyarrow takes).
    kms : KMS client, pyarrow KmsClient factory or KeyAccess, optional
        What wraps the data keys (a :class:`~secure_bloom.parquet.file.keys.KeyAccess`, as
        ``read_table(keys=...)`` takes, gives its ``kms``).
    kms_connection_config : pyarrow.parquet.encryption.KmsConnectionConfig, optional
        For a pyarrow factory.
    bloom_filter_options : dict, optional
        pyarrow's format (``{"email": {"ndv": N, "fpp": P}, "ssn": True}``); encrypted: without
        ``ndv`` each row group's filter is sized for its exact distinct count, capped at
        ``bloom_filter_max_bytes``; ``fpp`` defaults to 0.01; ``"sizing": "fixed"`` or
        ``"num_bytes": N`` gives all the column's filters one size, so that their sizes, visible
        without a key, do not reveal each row group's distinct count.
    row_group_size : int, optional
        Rows per row group (default 1 Mi).
    filesystem : pyarrow.fs.FileSystem, optional
        Where ``where`` is.
    bloom_filter_max_bytes, max_bytes : int
        The cap per encrypted filter (``max_bytes``: its deprecated name); not for plaintext
        writes (pyarrow sizes those from ndv and fpp).
    **kwargs
        ``timeouts=`` as for :class:`ParquetWriter`; the rest go to pyarrow's writer.

    Returns
    -------
    WriteReport or None
        What was written; None for a plaintext write (as pyarrow's).

    Raises
    ------
    TypeError
        pyarrow's ``encryption_properties=`` (give ``encryption=`` and ``kms=``), ``encryption``
        without ``kms`` or the other way round, options of the wrong type.
    ValueError, SecureBloomError
        Bad options (before anything is written), a KMS or storage failure (nothing published).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import write_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> table = pa.table({"email": [f"user{i}@example.com" for i in range(3_000)], "n": range(3_000)})
    >>> report = write_table(table, tmp / "users.parquet", kms=kms, row_group_size=1_000,
    ...                      encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                            column_keys={"pii_key": ["email"]}),
    ...                      bloom_filter_options={"email": {"fpp": 0.01}})
    >>> [(f.row_group, f.column, f.encrypted) for f in report.filters]
    [(0, 'email', True), (1, 'email', True), (2, 'email', True)]
    """
    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow Table, got {type(table).__name__}")
    refuse_pyarrow_encryption(kwargs)
    if encryption is None and kms is None:
        _write_plaintext(table, where, filesystem, bloom_filter_options, row_group_size,
                         bloom_filter_max_bytes != WRITER_DEFAULT_MAX_BYTES or max_bytes is not None,
                         kms_connection_config, kwargs)
        return None
    need_encryption_and_kms(encryption, kms, "write_table")
    with ParquetWriter(where, table.schema, encryption=encryption, kms=kms, kms_connection_config=kms_connection_config,
                       bloom_filter_options=bloom_filter_options, filesystem=filesystem,
                       bloom_filter_max_bytes=size_cap(bloom_filter_max_bytes, max_bytes),
                       **kwargs) as writer:
        writer.write_table(table, row_group_size)
    report = writer.report
    assert report is not None
    return report


def _write_plaintext(table: pa.Table, where: Any, filesystem: Any, bloom_filter_options: Any,
                     row_group_size: int | None, sized: bool, kms_connection_config: Any,
                     kwargs: dict[str, Any]) -> None:
    """A plaintext file: pyarrow's own ``pq.write_table`` (plaintext Bloom filters included);
    a URI through our filesystem, with its timeouts."""
    if sized:
        raise TypeError("bloom_filter_max_bytes applies to encrypted writes; pyarrow sizes a plaintext file's "
                        "filters from bloom_filter_options' ndv and fpp")
    if kms_connection_config is not None:
        raise TypeError("kms_connection_config= without encryption= and kms=: give both for an encrypted file")
    options = dict(kwargs)
    timeouts = options.pop("timeouts", None)
    if filesystem is None and isinstance(where, (str, os.PathLike)) and is_store_uri(os.fspath(where)):
        filesystem, where = filesystem_from_uri(os.fspath(where), timeouts)
    if bloom_filter_options is not None:
        options["bloom_filter_options"] = bloom_filter_options
    try:
        pq.write_table(table, where, row_group_size=row_group_size, filesystem=filesystem, **options)
    except OSError as e:
        if filesystem is None or not isinstance(where, (str, os.PathLike)):
            raise
        raise storage_error(e, display_path(filesystem, os.fspath(where))) from None


def check_row_group_size(row_group_size: Any) -> int:
    """``row_group_size`` (None: :data:`DEFAULT_ROW_GROUP_SIZE`) as an int >= 1.

    Parameters
    ----------
    row_group_size : int or None
        The value given.

    Returns
    -------
    int
        The size.

    Raises
    ------
    ValueError
        Not an int >= 1.
    """
    size = DEFAULT_ROW_GROUP_SIZE if row_group_size is None else row_group_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"row_group_size must be an int >= 1, got {row_group_size!r}")
    return size


def iter_row_groups(path: str | os.PathLike[str]) -> Iterable[pa.Table]:
    """The row groups of a plaintext Parquet file, one Table each (for re-writing it).

    Parameters
    ----------
    path : str or os.PathLike
        A plaintext Parquet file.

    Yields
    ------
    pyarrow.Table
        One row group.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    with pq.ParquetFile(os.fspath(path)) as source:
        for i in range(source.num_row_groups):
            yield source.read_row_group(i)
