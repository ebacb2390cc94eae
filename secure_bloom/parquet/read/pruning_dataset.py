"""A ``pyarrow.dataset.Dataset`` that prunes row groups with whatever filter its caller scans with.

Polars (``polars.scan_pyarrow_dataset(ds).filter(...)``) and DuckDB (a Python variable holding a
pyarrow Dataset, by replacement scan or ``con.register``) hand their own predicate to the
dataset they are given, as a pyarrow Expression: Polars calls ``ds.to_batches(columns=...,
filter=...)`` (which calls ``ds.scanner``), DuckDB ``ds.scanner(columns=..., filter=...)`` with
the WHERE clause (checked with polars 2.1 and duckdb 2.0). :class:`PruningDataset` is a
``pyarrow.dataset.FileSystemDataset`` over every file whose ``scanner`` first prunes row groups
with that filter (min/max statistics, then Bloom filters, encrypted or not: :mod:`.prune`, through
the ``prune`` function it is built with) and then lets pyarrow scan the surviving row groups with
the same filter, so the rows are exactly pyarrow's. ``to_table``, ``to_batches``, ``head``,
``take`` and ``count_rows`` go through ``scanner`` (pyarrow's own methods call it), so they prune
too; ``filter`` attaches a filter (ANDed with the caller's at scan time) and ``get_fragments``
gives the surviving row groups' fragments (a filtered pyarrow dataset refuses to).

What does not go through ``scanner`` reads every row group (nothing is lost, nothing pruned):
``join``, ``sort_by``, and pickling (which gives pyarrow's plain ``FileSystemDataset``).
Pruning runs at every scan: pass a :class:`~secure_bloom.parquet.PruneCache` to the function
building the dataset (``secure_bloom.parquet.dataset(..., cache=...)``) so repeated queries do not
read footers and filters again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow.compute as pc
import pyarrow.dataset as ds

from .prune import PruneReport

__all__ = ["PruningDataset", "Prune"]

#: ``prune(expression or None, columns read or None, open_now) -> (dataset of the surviving row
#: groups, report)``; ``open_now``: its local files opened at once (:func:`~.restrict.restrict`).
Prune = Callable[[Any, "Sequence[str] | None", bool], "tuple[ds.FileSystemDataset, PruneReport]"]

#: The one special field of pyarrow's scans that names a fragment's file (``__filename``).
_FILENAME_FIELD = "__filename"


def _names_filename(*parts: Any) -> bool:
    """Whether a scan's columns or filter may ask for ``__filename`` (which a fragment read from
    an open file names ``<Buffer>``): its text appears in them."""
    return any(part is not None and _FILENAME_FIELD in str(part) for part in parts)


def _both(a: pc.Expression | None, b: pc.Expression | None) -> pc.Expression | None:
    if a is None:
        return b
    return a if b is None else a & b


class PruningDataset(ds.FileSystemDataset):  # type: ignore[misc]
    """A pyarrow dataset of Parquet files whose scans read only the row groups their filter may
    match (see the module docstring). Build one with :func:`secure_bloom.parquet.dataset`.

    ``last_report``: the :class:`~secure_bloom.parquet.read.prune.PruneReport` of the latest scan
    (row groups pruned by statistics and by Bloom filters, footer and filter bytes read).

    Parameters
    ----------
    base : pyarrow.dataset.FileSystemDataset
        The unpruned dataset.
    prune : callable
        ``(expression, columns) -> (restricted dataset, PruneReport)``.
    filter : pyarrow.compute.Expression, optional
        A filter attached to every scan.
    """

    def __init__(self, base: ds.FileSystemDataset, prune: Prune, filter: pc.Expression | None = None) -> None:
        super().__init__(list(base.get_fragments()), base.schema, base.format, base.filesystem)
        if filter is not None and not isinstance(filter, pc.Expression):
            raise TypeError(f"filter must be a pyarrow.compute.Expression, got {type(filter).__name__}")
        self._base = base
        self._prune = prune
        self._attached = filter
        self.last_report: PruneReport | None = None

    @property
    def attached_filter(self) -> pc.Expression | None:
        """The filter given to :meth:`filter` (or ``dataset(filters=...)``), applied to every scan."""
        return self._attached

    def _restricted(self, prune_by: pc.Expression | None, columns: Any, open_now: bool = False) -> ds.FileSystemDataset:
        read = list(columns) if isinstance(columns, (list, tuple)) else None  # a {name: expression} dict: all
        restricted, report = self._prune(prune_by, read, open_now)
        self.last_report = report
        return restricted

    def scanner(self, columns: Any = None, filter: pc.Expression | None = None, **kwargs: Any) -> ds.Scanner:
        """``pyarrow.dataset.Dataset.scanner`` over the row groups the filter (the caller's AND
        the attached one) may match; pyarrow applies the filter to their rows. Prunes at every
        call (:attr:`last_report` is its report).

        Parameters
        ----------
        columns : list of str or dict, optional
            What pyarrow's scanner takes (a dict of expressions: every column is pruned for).
        filter : pyarrow.compute.Expression, optional
            The caller's filter.
        **kwargs
            Passed to ``pyarrow.dataset.Scanner.from_dataset`` (batch_size, use_threads, ...).

        Returns
        -------
        pyarrow.dataset.Scanner
            A scanner of the surviving row groups.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            A key the pruning needs cannot be obtained.
        secure_bloom.errors.SecureBloomError
            A file is not Parquet, damaged, or fails authentication; or pyarrow's format cannot
            decrypt a surviving file (``UnsupportedParquetFeatureError``).
        OSError
            A file cannot be read (``StorageUnavailableError`` for a store that does not answer).
        """
        both = _both(self._attached, filter)
        return self.scanner_pruned_by(both, columns=columns, filter=both, **kwargs)

    def scanner_pruned_by(self, prune_by: pc.Expression | None, *, columns: Any = None,
                          filter: pc.Expression | None = None, **kwargs: Any) -> ds.Scanner:
        """A scanner of the row groups ``prune_by`` may match (the attached filter ANDed in)
        whose rows pyarrow filters with ``filter`` only: for a caller that filters the rows
        itself with a predicate that implies ``prune_by`` (the Polars IO source).

        Parameters
        ----------
        prune_by : pyarrow.compute.Expression or None
            What the row groups are pruned with.
        columns : list of str or dict, optional
            What pyarrow's scanner takes.
        filter : pyarrow.compute.Expression, optional
            What pyarrow filters the rows with (the attached filter ANDed in).
        **kwargs
            Passed to ``pyarrow.dataset.Scanner.from_dataset``.

        Returns
        -------
        pyarrow.dataset.Scanner
            Over the row groups ``prune_by`` leaves.

        Raises
        ------
        secure_bloom.errors.SecureBloomError, OSError
            As :meth:`scanner`.
        """
        rows = _both(self._attached, filter)
        # The surviving files are opened now (each checked to be the version pruned): a
        # scan started by Scanner.to_reader(), which keeps the GIL (DuckDB's every query), then
        # never waits for an Arrow thread calling Python to open a file. Unless the scan may
        # name its files (__filename), which open files cannot tell.
        restricted = self._restricted(_both(self._attached, prune_by), columns,
                                      open_now=not _names_filename(columns, rows))
        return ds.Scanner.from_dataset(restricted, columns=columns, filter=rows, **kwargs)

    def get_fragments(self, filter: pc.Expression | None = None) -> Iterator[ds.Fragment]:
        """The fragments (files, restricted to their surviving row groups) that the filter (and
        the attached one) may match; prunes at every call (:attr:`last_report`).

        Parameters
        ----------
        filter : pyarrow.compute.Expression, optional
            The caller's filter.

        Returns
        -------
        iterator of pyarrow.dataset.Fragment
            Parquet fragments of the surviving row groups.

        Raises
        ------
        secure_bloom.errors.SecureBloomError, OSError
            As :meth:`scanner`.
        """
        return iter(list(self._restricted(_both(self._attached, filter), None).get_fragments()))

    def filter(self, expression: pc.Expression) -> PruningDataset:
        """This dataset with ``expression`` attached (ANDed with any filter already attached);
        nothing is pruned until a scan.

        Parameters
        ----------
        expression : pyarrow.compute.Expression
            The filter to attach.

        Returns
        -------
        PruningDataset
            A new dataset over the same files.

        Raises
        ------
        TypeError
            ``expression`` is None or not an Expression.
        """
        if expression is None:
            raise TypeError("filter needs an expression")
        return PruningDataset(self._base, self._prune, _both(self._attached, expression))

    def __repr__(self) -> str:
        return (f"PruningDataset(files={len(self.files)}, columns={self.schema.names!r}, "
                f"filtered={self._attached is not None})")
