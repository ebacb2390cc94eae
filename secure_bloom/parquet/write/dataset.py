"""``write_to_dataset``: pyarrow's hive-partitioned dataset writer for encrypted files with
encrypted Bloom filters, one :class:`~secure_bloom.parquet.write.writer.ParquetWriter` per file."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ...errors import (
    ColumnNotFoundError,
    DestinationExistsError,
)
from ..file.sources import (
    StoreTimeouts,
)
from .destination import Destination, destination_of
from ...kernels import count_distinct_hashes
from ...spec import MIN_BITSET_BYTES
from ...types import FilterSizing
from .options import WRITER_DEFAULT_MAX_BYTES, needed_num_bytes, size_cap
from .setup import WriteSetup, check_setup, need_encryption_and_kms, refuse_pyarrow_encryption
from .writer import (
    DEFAULT_ROW_GROUP_SIZE,
    ParquetWriter,
    WriteReport,
    check_row_group_size,
    column_hashes,
)

__all__ = ["write_to_dataset"]


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
    if check_row_group_size(row_group_size) > max_rows_per_file:
        raise ValueError(f"row_group_size ({row_group_size}) must be less than or equal to max_rows_per_file "
                         f"({max_rows_per_file})")
    return max_rows_per_file, row_group_size


_EXISTING_DATA = ("overwrite_or_ignore", "error", "delete_matching")


def _dataset_sizes(setup: WriteSetup, table: pa.Table, cols: Sequence[str], file_rows: int,
                   row_group_size: int | None) -> WriteSetup:
    """``setup`` with one ``num_bytes`` for each ``FIXED`` column that has neither ``num_bytes``
    nor ``ndv``: the need of the largest row group of the whole dataset, found by hashing and
    counting every row group as the files will be cut (one pass before any file is written), so
    every file's filters of the column have that one size."""
    todo = [i for i, c in enumerate(setup.columns)
            if c.sizing is FilterSizing.FIXED and c.num_bytes is None and c.ndv is None]
    if not todo:
        return setup
    size = check_row_group_size(row_group_size)
    need = dict.fromkeys(todo, MIN_BITSET_BYTES)
    for _, rows in _partitions(table, cols):
        step = file_rows or max(rows.num_rows, 1)
        for start in range(0, max(rows.num_rows, 1), step):
            part = rows.slice(start, step)
            for at in range(0, max(part.num_rows, 1), size):
                group = part.slice(at, size)
                for i in todo:
                    column = setup.columns[i]
                    hashes = column_hashes(group, column)
                    distinct = count_distinct_hashes(hashes) if hashes.size else 0
                    need[i] = max(need[i], needed_num_bytes(distinct, None, column.fpp, setup.max_bytes, None))
    columns = tuple(dataclasses.replace(c, num_bytes=need[i]) if i in need else c for i, c in enumerate(setup.columns))
    return dataclasses.replace(setup, columns=columns)


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


def _holds_files(root: Destination, path: str) -> bool:
    if root.local:
        return os.path.isdir(path) and any(files for _, _, files in os.walk(path))
    from pyarrow import fs as pafs

    selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
    return any(info.type == pafs.FileType.File for info in root.filesystem.get_file_info(selector))


def _delete_files(root: Destination, folder: str) -> None:
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
                     encryption: Any = None, kms: Any = None, kms_connection_config: Any = None,
                     bloom_filter_options: Any = None,
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
    (directory partitioning, a filename flavor) are refused by name.

    A column with ``"sizing": "fixed"`` in ``bloom_filter_options`` gets one filter size across
    the whole dataset: ``num_bytes``, or sized for ``ndv``, or for the largest row group's distinct
    count in any file (one hashing pass over the table before the first file is written).

    Parameters
    ----------
    table : pyarrow.Table
        The rows to write.
    root_path : str or os.PathLike
        The dataset's root directory (local, a URI, or a path on ``filesystem``).
    partition_cols : list of str, optional
        Hive partition columns (``country=NL/``).
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
    basename_template : str, optional
        File names with ``{i}`` (default ``<uuid>-{i}.parquet``, as pyarrow).
    row_group_size : int, optional
        Rows per row group.
    max_rows_per_file : int, default 0
        At most this many rows per file (0: no limit).
    existing_data_behavior : {"overwrite_or_ignore", "error", "delete_matching"}
        pyarrow's: files of the same name replaced, others kept (default); refuse a root holding
        any file; delete the files of each partition written first.
    partitioning : list of str or pyarrow.dataset.Partitioning, optional
        The same as ``partition_cols`` (hive only; other layouts are refused by name).
    partitioning_flavor : str, optional
        ``"hive"`` with a list of column names.
    timeouts : StoreTimeouts, optional
        For the filesystem of a URI ``root_path``.
    **kwargs
        pyarrow's writer options.

    Returns
    -------
    list of WriteReport
        One per file written.

    Raises
    ------
    TypeError
        ``table`` is not a Table, ``encryption`` or ``kms`` is missing (a plaintext dataset is
        pyarrow's to write), both ``partition_cols`` and ``partitioning``, or another option of
        the wrong type.
    ValueError
        An option out of range, a layout other than hive, a ``basename_template`` without
        ``{i}``, or a Bloom filter option naming an unknown, BOOLEAN or map column.
    secure_bloom.errors.ColumnNotFoundError
        A partition column is not in the table.
    secure_bloom.errors.DestinationExistsError
        ``existing_data_behavior="error"`` and the root holds files.
    secure_bloom.errors.ConfigurationError
        A URI ``root_path`` pyarrow cannot open.
    secure_bloom.errors.KeyManagementError
        The KMS refused or could not wrap a data key (files written before stay).
    secure_bloom.errors.StorageUnavailableError
        The object store of a URI does not answer.
    OSError
        The destination cannot be written.

    Every error but the last three is raised before any KMS call or write.


    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import write_to_dataset
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> table = pa.table({"email": [f"user{i}@example.com" for i in range(1_000)], "country": ["NL", "DE"] * 500})
    >>> reports = write_to_dataset(table, tmp / "lake", partition_cols=["country"], kms=kms,
    ...                            encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                                  column_keys={"pii_key": ["email"]}),
    ...                            bloom_filter_options={"email": True})
    >>> sorted(pathlib.Path(r.path).parent.name for r in reports)
    ['country=DE', 'country=NL']
    """
    import uuid

    if not isinstance(table, pa.Table):
        raise TypeError(f"expected a pyarrow Table, got {type(table).__name__}")
    refuse_pyarrow_encryption(kwargs)
    if encryption is None and kms is None:
        raise TypeError("write_to_dataset(..., encryption=..., kms=...) writes encrypted datasets; for a plaintext "
                        "one use pyarrow.parquet.write_to_dataset")
    need_encryption_and_kms(encryption, kms, "write_to_dataset")
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
    check_row_group_size(row_group_size)
    root = destination_of(root_path, filesystem, timeouts)
    data_schema = table.schema
    for c in cols:
        data_schema = data_schema.remove(data_schema.get_field_index(c))
    setup = check_setup(data_schema, encryption, kms, kms_connection_config, bloom_filter_options,
                   size_cap(bloom_filter_max_bytes, max_bytes), kwargs)
    setup = _dataset_sizes(setup, table, cols, file_rows, row_group_size)
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
            dest = (Destination(os.path.join(folder, name)) if root.local
                    else Destination(f"{folder}/{name}", root.filesystem))
            writer = ParquetWriter.with_setup(setup, dest)
            with writer:
                writer.write_table(rows.slice(start, step), row_group_size)
            assert writer.report is not None
            reports.append(writer.report)
    return reports
