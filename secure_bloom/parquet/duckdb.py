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
    only the columns they use. Returns the dataset (its ``last_report`` says what the latest
    query's pruning did)."""
    if not isinstance(name, str) or not name:
        raise TypeError("name must be a non-empty str")
    data = dataset(source, keys=keys, filesystem=filesystem, cache=cache, partitioning=partitioning)
    con.register(name, data)
    return data
