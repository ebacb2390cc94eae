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
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

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


@settings(max_examples=examples(60), deadline=None)
@given(st.data())
def test_filters_probed_one_by_one_or_in_one_kernel_call_answer_alike(data: st.DataObject) -> None:
    """probe_filters makes a few checks with check_hash and more in one kernel call: the same
    answer either way (None: no filter, "may"), for filters with and without the values."""
    import numpy as np

    from secure_bloom.filter import SplitBlockBloomFilter
    from secure_bloom.parquet.read import facts

    values = data.draw(st.lists(st.integers(-2**63, 2**63 - 1), max_size=40), label="inserted")
    filters: list[SplitBlockBloomFilter | None] = []
    for size in data.draw(st.lists(st.sampled_from([32, 64, 1024, 2048 + 7]), min_size=1, max_size=6), label="sizes"):
        bf = SplitBlockBloomFilter.from_bitset(bytes(size))
        bf.insert(values[: data.draw(st.integers(0, len(values)))], "INT64")
        filters.append(bf if data.draw(st.booleans(), label="present") else None)
    from secure_bloom.values import hash_values
    probes = data.draw(st.lists(st.sampled_from(values) if values else st.integers(-2**63, 2**63 - 1), min_size=1,
                                max_size=4) | st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=4), label="probed")
    hashes = [int(h) for h in hash_values(np.array(probes, dtype=np.int64), "INT64")]
    few = facts.probe_filters(filters, hashes)
    present = [bf for bf in filters if bf is not None]
    whole = iter(SplitBlockBloomFilter.check_many(present, hashes).any(axis=1).tolist()) if present else iter(())
    assert few == [True if bf is None else next(whole) for bf in filters]
    many = facts.probe_filters(filters * 4, hashes * 3)  # past SMALL_PROBE_CHECKS: the kernel call
    assert many == few * 4
