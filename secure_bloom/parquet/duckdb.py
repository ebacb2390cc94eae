"""DuckDB: a view over Parquet files whose queries prune row groups with their own WHERE clause.

DuckDB scans a pyarrow Dataset held by a Python variable (replacement scan) or registered on a
connection by calling its ``scanner(columns=..., filter=...)`` with the columns the query reads
and its WHERE clause as a pyarrow Expression (checked with duckdb 2.0: ``x = 5``, ``IN``,
``BETWEEN``, ``IS NULL``, AND / OR; ``IN`` arrives as ``if_else(is_valid(x), is_in(x, ...), null)``,
which the pruner reads as ``is_in``). A :class:`~.pruning_dataset.PruningDataset` prunes row
groups with it (statistics, then Bloom filters, encrypted or not) and DuckDB applies its own
predicate to what is read, so the rows are exactly DuckDB's. :func:`register` names one on a
connection; ``FROM ds`` over a variable ``ds = secure_bloom.parquet.dataset(...)`` does the same.
"""

from __future__ import annotations

from typing import Any

from .file.keys import KeyAccess
from .read.prune_cache import PruneCache
from .read.pruning_dataset import PruningDataset
from .read.api import dataset

__all__ = ["register"]


def register(con: Any, name: str, source: Any, *, keys: KeyAccess | None = None, filesystem: Any = None,
             cache: PruneCache | None = None, partitioning: Any = "hive") -> PruningDataset:
    """Register ``source`` (a Parquet file, a directory with hive partitions, a list of files, a
    URI; on ``filesystem``), plaintext or encrypted (``keys``), as the view ``name`` of the DuckDB
    connection ``con``; queries on it read only the row groups their WHERE clause may match and
    only the columns they use.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection.
    name : str
        The view's name.
    source : str, os.PathLike or list
        A Parquet file, a directory with hive partitions, a list of files, or a URI.
    keys : KeyAccess, optional
        Keys for encrypted files.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem ``source`` is on.
    cache : PruneCache, optional
        Kept across queries (footers and filters of unchanged files are not read again).
    partitioning : str, list, Partitioning or None, default "hive"
        As :func:`~secure_bloom.parquet.read.api.scan` takes it.

    Returns
    -------
    PruningDataset
        The dataset behind the view; its ``last_report`` says what the latest query's pruning did.

    Raises
    ------
    TypeError
        ``keys`` is not a :class:`~secure_bloom.parquet.file.keys.KeyAccess`.
    secure_bloom.errors.KeyManagementError
        A footer's key cannot be obtained when the source is discovered.
    OSError
        The source cannot be listed or read.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import KeyAccess, write_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> _ = write_table(pa.table({"email": [f"user{i:04}@example.com" for i in range(3_000)][::-1], "n": range(3_000)}),
    ...                 tmp / "users.parquet", kms=kms, row_group_size=1_000, bloom_filter_options={"email": True},
    ...                 encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                       column_keys={"pii_key": ["email"]}))
    >>> import duckdb
    >>> from secure_bloom.parquet.duckdb import register
    >>> con = duckdb.connect()
    >>> view = register(con, "users", tmp / "users.parquet", keys=KeyAccess(kms=kms))
    >>> con.execute("SELECT n FROM users WHERE email = ?", ["user0042@example.com"]).fetchall()
    [(2957,)]
    >>> view.last_report.row_groups_read
    1
    """
    if not isinstance(name, str) or not name:
        raise TypeError("name must be a non-empty str")
    data = dataset(source, keys=keys, filesystem=filesystem, cache=cache, partitioning=partitioning)
    con.register(name, data)
    return data
