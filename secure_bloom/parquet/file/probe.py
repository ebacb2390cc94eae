"""Probing: each row group's filter asked, for each query, "maybe" or "absent".

Spec: BloomFilter.md "Technical Approach" (a filter never answers "absent" for a value inserted;
SPEC_NOTES 2). A query is the set of hashes one value asks for
(:func:`~secure_bloom.values.column.query_hashes`; any hit means "maybe"); a row group without a
filter answers "maybe". Answers keep the caller's order and carry the caller's own labels.

Many values: hash once, probe all filters of a file in one kernel call. :class:`ProbeValues`
holds the values (or command-line texts) and their labels, and hashes them once per column type
(:func:`~secure_bloom.values.column.query_batch`): give it to
:meth:`~secure_bloom.parquet.file.reader.ParquetBloomReader.probe` of every file. The answers of
a file are one boolean matrix (:attr:`ProbeResult.maybe`, row groups x values); the per-row-group
objects and the JSON forms are made from it when asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from ...filter import SplitBlockBloomFilter
from ...types import PhysicalType, Verdict
from ...values import QueryBatch, TimeZoneLike, display_value, query_batch
from ...values.text import parse_text
from .schema import ColumnInfo

__all__ = ["ProbeResult", "RowGroupProbe", "ProbeValues", "Verdict", "MAYBE", "ABSENT", "probe_row_groups"]

#: Aliases of the :class:`~secure_bloom.types.Verdict` members (the strings "maybe" / "absent").
MAYBE = Verdict.MAYBE
ABSENT = Verdict.ABSENT


@dataclass(frozen=True)
class RowGroupProbe:
    """Answers for one row group.

    Parameters
    ----------
    row_group : int
        The row group's ordinal.
    has_bloom_filter : bool
        False: every answer is "maybe".
    encrypted : bool
        The filter is encrypted.
    values : tuple of (str, Verdict)
        A (label, :class:`~secure_bloom.types.Verdict`) pair per value probed, in the caller's
        order (duplicates and equal labels kept).
    """

    row_group: int
    has_bloom_filter: bool
    encrypted: bool
    values: tuple[tuple[str, Verdict], ...]

    def to_dict(self) -> dict[str, Any]:
        """The row group's answers as JSON-able values.

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"row_group": self.row_group, "has_bloom_filter": self.has_bloom_filter,
                "encrypted": self.encrypted,
                "values": [{"value": label, "answer": answer} for label, answer in self.values]}


def _column_type_key(column: ColumnInfo) -> ColumnInfo:
    """What a value's hashes depend on (the column's type and path, not its place or keys)."""
    return ColumnInfo(path=column.path, path_in_schema=column.path_in_schema, ordinal=0,
                      physical_type=column.physical_type, type_length=column.type_length,
                      logical_type=column.logical_type, converted_type=column.converted_type, scale=column.scale,
                      precision=column.precision, time_unit=column.time_unit,
                      is_adjusted_to_utc=column.is_adjusted_to_utc, int_bits=column.int_bits,
                      int_signed=column.int_signed)


class ProbeValues:
    """Values to probe in many files, hashed once per column type.

    Parameters
    ----------
    values : iterable
        The values (as :func:`~secure_bloom.values.column.query_hashes` takes them), or with
        ``from_text`` command-line texts (converted per column type as
        :func:`~secure_bloom.values.column.value_from_text` converts them).
    labels : sequence of str, optional
        One label per value; by default each value's text
        (:func:`~secure_bloom.values.text.display_value`), or the text itself.
    timezone : tzinfo or str, optional
        The zone of naive date/time values for a column of UTC instants.
    from_text : bool
        Whether ``values`` are texts to convert.

    Raises
    ------
    ValueError
        Not one label per value.
    TypeError
        ``from_text`` with a value that is not a str.
    """

    def __init__(self, values: Iterable[Any], *, labels: Sequence[str] | None = None,
                 timezone: TimeZoneLike | None = None, from_text: bool = False) -> None:
        self.values: tuple[Any, ...] = tuple(values)
        if from_text and not all(type(v) is str for v in self.values):
            raise TypeError("from_text=True takes str values")
        if labels is None:
            shown = self.values if from_text else tuple(display_value(v) for v in self.values)
        else:
            shown = tuple(str(label) for label in labels)
            if len(shown) != len(self.values):
                raise ValueError(f"{len(shown)} labels for {len(self.values)} values")
        #: One label per value, in order.
        self.labels: tuple[str, ...] = shown
        self.timezone = timezone
        self.from_text = from_text
        self._batches: dict[ColumnInfo, QueryBatch] = {}

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"ProbeValues({len(self.values)} values, from_text={self.from_text})"

    def batch(self, column: ColumnInfo) -> QueryBatch:
        """The hashes the values ask of ``column`` (made once per column type and kept).

        Parameters
        ----------
        column : ColumnInfo

        Returns
        -------
        QueryBatch

        Raises
        ------
        InvalidValueError
            A value (or text) the column cannot hold, named with the column.
        """
        key = _column_type_key(column)
        found = self._batches.get(key)
        if found is None:
            values: Sequence[Any] = self.values
            # parse_text takes a string column's text as its value: no call per text there
            if self.from_text and not (column.physical_type is PhysicalType.BYTE_ARRAY
                                       and column.logical_type in ("STRING", "ENUM", "JSON")):
                values = [parse_text(text, column) for text in self.values]
            found = self._batches[key] = query_batch(values, column, timezone=self.timezone)
        return found


@dataclass(frozen=True, eq=False)
class ProbeResult:
    """The answer of :meth:`ParquetBloomReader.probe`; :meth:`to_dict` is its JSON shape::

        {"file": str, "column": str, "values": [label, ...],
         "row_groups": [{"row_group": i, "has_bloom_filter": bool, "encrypted": bool,
                         "values": [{"value": label, "answer": "maybe" | "absent"}, ...]}]}

    One answer per value the caller gave, in the caller's order, labelled with the caller's
    label (by default the value's text, :func:`~secure_bloom.values.text.display_value`). A
    list, not a mapping: two values with the same label (``-nan`` and ``nan``, or a value given
    twice) each keep their own answer.

    The answers are :attr:`maybe`, a read-only boolean matrix (row groups x values);
    :attr:`row_groups` (one :class:`RowGroupProbe` each) is made from it on first use.
    :meth:`to_compact_dict` and :meth:`to_arrow` give per value the row groups that may hold it.
    Made by :func:`probe_row_groups`.

    Parameters
    ----------
    file, column : str
        What was probed.
    labels : tuple of str
        The values' labels, in the caller's order.
    maybe : numpy.ndarray of bool
        ``maybe[r, v]``: whether value ``v`` may be in the ``r``-th row group (a row group
        without a filter: True).
    has_bloom_filter : tuple of bool
        Per row group: whether it has a filter.
    encrypted : tuple of bool
        Per row group: whether its chunk is encrypted.
    """

    file: str
    column: str
    labels: tuple[str, ...]
    #: ``maybe[r, v]``: whether value ``v`` may be in the ``r``-th row group.
    maybe: npt.NDArray[np.bool_] = field(repr=False)
    #: Per row group (in order): whether it has a filter, whether its chunk is encrypted.
    has_bloom_filter: tuple[bool, ...] = field(repr=False)
    encrypted: tuple[bool, ...] = field(repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProbeResult):
            return NotImplemented
        return (self.file, self.column, self.labels, self.has_bloom_filter, self.encrypted) == \
            (other.file, other.column, other.labels, other.has_bloom_filter, other.encrypted) \
            and np.array_equal(self.maybe, other.maybe)

    __hash__ = None  # type: ignore[assignment]

    @property
    def num_row_groups(self) -> int:
        """The number of row groups probed (rows of :attr:`maybe`)."""
        return int(self.maybe.shape[0])

    @cached_property
    def row_groups(self) -> tuple[RowGroupProbe, ...]:
        """One :class:`RowGroupProbe` per row group, in order."""
        verdicts = (ABSENT, MAYBE)
        return tuple(RowGroupProbe(row_group=rg, has_bloom_filter=has, encrypted=enc,
                                   values=tuple(zip(self.labels, [verdicts[m] for m in row])))
                     for rg, (row, has, enc) in enumerate(zip(self.maybe.tolist(), self.has_bloom_filter,
                                                              self.encrypted)))

    def to_dict(self) -> dict[str, Any]:
        """The probe in its JSON shape (above): per row group, each value's answer.

        Returns
        -------
        dict
            Plain JSON-able values (verdicts as ``"maybe"`` / ``"absent"`` strings).

        Raises
        ------
        None
            Built from the matrix in memory.
        """
        verdicts = (ABSENT, MAYBE)
        labels = self.labels
        return {"file": self.file, "column": self.column, "values": list(labels),
                "row_groups": [{"row_group": rg, "has_bloom_filter": has, "encrypted": enc,
                                "values": [{"value": label, "answer": verdicts[m]} for label, m in zip(labels, row)]}
                               for rg, (row, has, enc) in enumerate(zip(self.maybe.tolist(), self.has_bloom_filter,
                                                                        self.encrypted))]}

    def to_json(self, **kwargs: Any) -> str:
        """The probe as JSON text.

        Parameters
        ----------
        **kwargs : keyword arguments
            Passed to ``json.dumps``.

        Returns
        -------
        str
            ``json.dumps(self.to_dict(), **kwargs)``.

        Raises
        ------
        None
            Nothing of its own.
        """
        return json.dumps(self.to_dict(), **kwargs)

    def maybe_row_groups(self, index: int) -> list[int]:
        """Row groups where the ``index``-th value probed may be present.

        Parameters
        ----------
        index : int
            The value's position in the probe.

        Returns
        -------
        list of int
            The row groups, in order.

        Raises
        ------
        IndexError
            No value at ``index``.
        """
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) \
                or not -len(self.labels) <= index < len(self.labels):
            raise IndexError(f"value index {index} out of range: {len(self.labels)} values were probed")
        return np.flatnonzero(self.maybe[:, index]).tolist()

    def row_groups_maybe_containing(self, label: str) -> list[int]:
        """Row groups where the value labelled ``label`` may be present; the label must name
        exactly one value probed (else use :meth:`maybe_row_groups` with its position).

        Parameters
        ----------
        label : str
            The value's label.

        Returns
        -------
        list of int
            The row groups, in order.

        Raises
        ------
        KeyError
            No value, or several, with that label.
        """
        found = [i for i, shown in enumerate(self.labels) if shown == label]
        if len(found) != 1:
            raise KeyError(f"{len(found)} values probed are labelled {label!r}; use maybe_row_groups(index)")
        return self.maybe_row_groups(found[0])

    def maybe_by_value(self) -> list[list[int]]:
        """For each value, in order, the row groups where it may be present.

        Returns
        -------
        list of list of int
            One list per value (row groups ascending).

        Raises
        ------
        None
            Computed from the matrix in memory.
        """
        values, groups = np.nonzero(self.maybe.T)  # sorted by value, then row group
        ends = np.cumsum(np.bincount(values, minlength=len(self.labels))).tolist()
        flat = groups.tolist()
        return [flat[start:end] for start, end in zip([0, *ends[:-1]], ends)]

    def maybe_pairs(self) -> tuple[list[int], list[int]]:
        """Every (value index, row group) where the value may be present, as two lists ordered by
        value, then row group (only the hits: cheap when most values are absent).

        Returns
        -------
        (list of int, list of int)
            Value indices and row groups, pair by pair.

        Raises
        ------
        None
            Computed from the matrix in memory.
        """
        values, groups = np.nonzero(self.maybe.T)
        return values.tolist(), groups.tolist()

    def to_compact_dict(self) -> dict[str, Any]:
        """Per value, the row groups that may hold it.

        Returns
        -------
        dict
            ``{"file": str, "column": str, "num_row_groups": int, "values": [{"value": label,
            "row_groups": [i, ...]}, ...]}``.

        Raises
        ------
        None
            Built from the matrix in memory.
        """
        return {"file": self.file, "column": self.column, "num_row_groups": self.num_row_groups,
                "values": [{"value": label, "row_groups": groups}
                           for label, groups in zip(self.labels, self.maybe_by_value())]}

    def to_arrow(self) -> Any:
        """The answers as Arrow.

        Returns
        -------
        pyarrow.Table
            One row per value: ``value_index`` (int32), ``value`` (the label) and ``row_groups``
            (list<int32>: where it may be present).

        Raises
        ------
        None
            Built from the matrix in memory.
        """
        import pyarrow as pa

        values, groups = np.nonzero(self.maybe.T)
        offsets = np.zeros(len(self.labels) + 1, dtype=np.int32)
        np.cumsum(np.bincount(values, minlength=len(self.labels)), out=offsets[1:])
        return pa.table({"value_index": pa.array(np.arange(len(self.labels), dtype=np.int32)),
                         "value": pa.array(list(self.labels), type=pa.string()),
                         "row_groups": pa.ListArray.from_arrays(pa.array(offsets),
                                                                pa.array(groups.astype(np.int32)))})

    @property
    def any_maybe(self) -> bool:
        """Whether any value may be in any row group (False: the file holds none of them)."""
        return bool(self.maybe.any())


def probe_row_groups(file: str, column: str, filters: Sequence[SplitBlockBloomFilter | None],
                     encrypted: Sequence[bool], batch: QueryBatch, labels: Sequence[str]) -> ProbeResult:
    """Ask each row group's filter (``filters[r]``, None: no filter, every answer "maybe") every
    query of ``batch``: all filters in one kernel call.

    Parameters
    ----------
    file, column : str
        Named in the result.
    filters : sequence of SplitBlockBloomFilter or None
        One per row group, in order.
    encrypted : sequence of bool
        One per row group: whether its chunk is encrypted.
    batch : QueryBatch
        The queries (:func:`~secure_bloom.values.column.query_batch`).
    labels : sequence of str
        One per query.

    Returns
    -------
    ProbeResult

    Raises
    ------
    ValueError
        Not one label per query, or not one ``encrypted`` per filter.
    """
    if len(labels) != len(batch):
        raise ValueError(f"{len(labels)} labels for {len(batch)} values")
    if len(encrypted) != len(filters):
        raise ValueError(f"{len(encrypted)} encryption flags for {len(filters)} row groups")
    maybe = np.ones((len(filters), len(batch)), dtype=np.bool_)
    present = [i for i, bf in enumerate(filters) if bf is not None]
    if present:
        found = SplitBlockBloomFilter.check_many([filters[i] for i in present], batch.hashes)  # type: ignore[misc]
        maybe[present] = batch.answers(found)
    maybe.flags.writeable = False
    return ProbeResult(file=file, column=column, labels=tuple(labels), maybe=maybe,
                       has_bloom_filter=tuple(bf is not None for bf in filters),
                       encrypted=tuple(bool(e) for e in encrypted))
