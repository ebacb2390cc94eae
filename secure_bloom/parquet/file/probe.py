"""Probing: each row group's filter asked, for each query, "maybe" or "absent".

Spec: BloomFilter.md "Technical Approach" (a filter never answers "absent" for a value inserted;
SPEC_NOTES 2). A query is the set of hashes one value asks for
(:func:`~secure_bloom.values.column.query_hashes`; any hit means "maybe"); a row group without a
filter answers "maybe". Answers keep the caller's order and carry the caller's own labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...filter import SplitBlockBloomFilter
from ...types import Verdict
from ...values import QueryHashes, maybe_in

__all__ = ["ProbeResult", "RowGroupProbe", "Verdict", "MAYBE", "ABSENT", "probe_filters"]

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


@dataclass(frozen=True)
class ProbeResult:
    """The answer of :meth:`ParquetBloomReader.probe`; :meth:`to_dict` is its JSON shape::

        {"file": str, "column": str, "values": [label, ...],
         "row_groups": [{"row_group": i, "has_bloom_filter": bool, "encrypted": bool,
                         "values": [{"value": label, "answer": "maybe" | "absent"}, ...]}]}

    One answer per value the caller gave, in the caller's order, labelled with the caller's
    label (by default the value's text, :func:`~secure_bloom.values.text.display_value`). A
    list, not a mapping: two values with the same label (``-nan`` and ``nan``, or a value given
    twice) each keep their own answer.

    Parameters
    ----------
    file, column : str
        What was probed.
    row_groups : tuple of RowGroupProbe
        One per row group, in order.
    labels : tuple of str
        The values' labels, in the caller's order.
    """

    file: str
    column: str
    row_groups: tuple[RowGroupProbe, ...]
    labels: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The probe as JSON-able values (``probe --json``; shape above).

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"file": self.file, "column": self.column, "values": list(self.labels),
                "row_groups": [rg.to_dict() for rg in self.row_groups]}

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
        if not -len(self.labels) <= index < len(self.labels):
            raise IndexError(f"value index {index} out of range: {len(self.labels)} values were probed")
        return [rg.row_group for rg in self.row_groups if rg.values[index][1] == Verdict.MAYBE]

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

    @property
    def any_maybe(self) -> bool:
        """True if any row group answered "maybe" for any value."""
        return any(answer == Verdict.MAYBE for rg in self.row_groups for _, answer in rg.values)


def probe_filters(file: str, column: str, filters: Iterable[tuple[int, SplitBlockBloomFilter | None, bool]],
                  queries: Sequence[QueryHashes], labels: Sequence[str]) -> ProbeResult:
    """Ask each ``(row group, filter or None, encrypted)`` of ``filters`` every one of ``queries``;
    ``labels`` (one per query) name the answers."""
    if len(labels) != len(queries):
        raise ValueError(f"{len(labels)} labels for {len(queries)} values")
    shown = tuple(labels)
    row_groups = []
    for rg, bf, encrypted in filters:
        answers = [Verdict.MAYBE if hit else Verdict.ABSENT for hit in maybe_in(bf, queries)]
        row_groups.append(RowGroupProbe(row_group=rg, has_bloom_filter=bf is not None, encrypted=encrypted,
                                        values=tuple(zip(shown, answers))))
    return ProbeResult(file=file, column=column, row_groups=tuple(row_groups), labels=shown)
