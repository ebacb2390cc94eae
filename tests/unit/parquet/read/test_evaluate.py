"""The evaluator (:mod:`secure_bloom.parquet.read.evaluate`) over a facts provider of its own.

The provider is the protocol's (:class:`~secure_bloom.parquet.read.evaluate.RowGroupFacts`),
so the facts can be what no writer of ours makes: statistics the column's type cannot hold (a
damaged or foreign writer's), judged row group by row group.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from secure_bloom.parquet import ParquetBloomReader
from secure_bloom.parquet.file.schema import ColumnInfo
from secure_bloom.parquet.read.evaluate import TreeVerdicts, tree_plan
from secure_bloom.parquet.read.predicate import predicate_tree
from secure_bloom.parquet.read.statistics import Bounds

SCHEMA = pa.schema([("n", pa.int32())])


class ListedFacts:
    """Bounds per row group, as given; every filter may hold anything."""

    def __init__(self, columns: tuple[ColumnInfo, ...], bounds: list[Bounds | None]) -> None:
        self.columns = columns
        self.num_row_groups = len(bounds)
        self.type_order = frozenset()
        self._bounds = bounds
        self.asked: list[list[int]] = []

    def bounds(self, info: ColumnInfo, row_groups: Sequence[int]) -> list[Bounds | None]:
        self.asked.append(list(row_groups))
        return [self._bounds[rg] for rg in row_groups]

    def may_contain(self, info: ColumnInfo, row_groups: Sequence[int], hashes: Sequence[int]) -> list[bool]:
        return [True] * len(row_groups)


@pytest.fixture(scope="module")
def columns(tmp_path_factory: pytest.TempPathFactory) -> tuple[ColumnInfo, ...]:
    path = Path(tmp_path_factory.mktemp("evaluate")) / "n.parquet"
    pq.write_table(pa.table({"n": pa.array([1, 2, 3], pa.int32())}), path)
    with ParquetBloomReader(path) as reader:
        return reader.leaves


def _bounds(low: int, high: int) -> Bounds:
    return Bounds(low, high, exact=True, null_count=0, num_values=3, top_level=True)


@pytest.mark.parametrize(("expression", "kept", "by_stats"), [
    (pc.field("n") == 3.5, (0, 1, 2), (3,)),    # int32 cast to float64: Arrow's evaluation on the bounds
    (pc.field("n") > 50.5, (1, 2, 3), (0,)),
    (pc.field("n") < 3.5, (0, 1, 2), (3,)),
])
def test_bounds_the_type_cannot_hold_keep_only_their_row_groups(columns: tuple[ColumnInfo, ...],
                                                                 expression: pc.Expression, kept: tuple[int, ...],
                                                                 by_stats: tuple[int, ...]) -> None:
    """Row group 2's statistics do not fit an int32 column: pyarrow's cast may raise on what it
    holds, so it is kept whatever the filter says; row group 1 has none (kept: its values are
    unseen); the others are judged on their own bounds, not kept for their neighbour's."""
    facts = ListedFacts(columns, [_bounds(0, 5), None, _bounds(2**40, 2**41), _bounds(100, 200)])
    tree = predicate_tree(expression, SCHEMA)
    plan = tree_plan(tree, columns, SCHEMA, {})
    assert [view.plan.mode for view in plan.views.values()] == ["bounds"]
    keep, stats, bloom = TreeVerdicts(plan, facts, range(4)).judge()
    assert (keep, stats, bloom) == (kept, by_stats, ())


def test_the_plan_names_the_facts_it_may_ask(columns: tuple[ColumnInfo, ...]) -> None:
    """TreePlan.asked: every column judged, with its filters for a leaf with a query."""
    for expression, filters in ((pc.field("n") == 7, True), (pc.field("n") > 7, False),
                                (pc.field("n") == 3.5, False), (pc.field("m") == 1, None)):
        plan = tree_plan(predicate_tree(expression, SCHEMA.append(pa.field("m", pa.int64()))), columns, SCHEMA, {})
        assert plan.asked() == ([] if filters is None else [(columns[0], filters)])
