"""Partitioned datasets: a pruned read returns exactly the rows pyarrow's dataset returns.

pyarrow takes a partition field of a file from the file's partition expression (``x=5/``: every
row has ``x == 5``, ``__HIVE_DEFAULT_PARTITION__``: null), never from a column of the same name
inside the file, and from the file's column only where the expression does not name the field
(a file above the partition directories). Every read here is compared, as a multiset of rows,
with ``pyarrow.dataset.dataset(root, partitioning=<the same argument>).to_table(filter=...)``,
for hive, directory and filename partitioning, partition fields inside and absent from the files,
and the forms of ``partitioning=`` pyarrow accepts (a flavour name, a list of field names, a
Partitioning, a PartitioningFactory). Issue 19, item 5.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from secure_bloom.parquet.read.partitions import known_fields, partition_tree
from secure_bloom.parquet.read.predicate import AllOf, AnyOf, Leaf, Unknown, predicate_tree
from secure_bloom.parquet.read.api import dataset, read_table, scan

X = pc.field("x")
Y = pc.field("y")


def _id(expression: pc.Expression) -> str:
    return " ".join(str(expression).split())


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows as a sorted multiset, columns by name (None sorts first)."""
    names = sorted(table.column_names)
    rows = zip(*(table.column(n).to_pylist() for n in names))
    return sorted(rows, key=lambda r: [(v is not None, v) for v in r])


def _write(path: Path, x: list[int | None] | None, y: list[int]) -> None:
    """One row per row group, so statistics could prune each row on its own."""
    path.parent.mkdir(parents=True, exist_ok=True)
    columns: dict[str, Any] = {"y": pa.array(y, pa.int64())}
    if x is not None:
        columns["x"] = pa.array(x, pa.int32())
    pq.write_table(pa.table(columns), path, row_group_size=1)


def _agree(root: Path, expression: pc.Expression, partitioning: Any = "hive") -> pa.Table:
    expected = ds.dataset(root, partitioning=partitioning).to_table(filter=expression)
    given = {} if partitioning == "hive" else {"partitioning": partitioning}  # hive: the default
    ours = read_table(root, filters=expression, **given)
    assert ours.schema.equals(expected.schema)
    assert _rows(ours) == _rows(expected), str(expression)
    polars_view = dataset(root, filters=expression, **given).to_table()
    assert _rows(polars_view) == _rows(expected)
    return ours


@pytest.fixture
def hive_inside(tmp_path: Path) -> Path:
    """x=5/ and x=7/ whose files hold a column x of other values, a null partition whose file
    holds x values, and a file above the partitions (its own x column is what pyarrow reads)."""
    _write(tmp_path / "x=5" / "a.parquet", [1, 2, 3], [10, 20, 30])
    _write(tmp_path / "x=7" / "b.parquet", [7, 8, 9], [40, 50, 60])
    _write(tmp_path / "x=__HIVE_DEFAULT_PARTITION__" / "c.parquet", [5, 6, None], [70, 80, 90])
    _write(tmp_path / "top.parquet", [5, 5, 9], [100, 110, 120])
    return tmp_path


HIVE_FILTERS = [
    X == 5, X == 1, X == 7, X == 8, X == 9, X != 5, X < 6, X <= 5, X > 6, X >= 7,
    X.isin([5, 9]), X.isin([1, 2]), ~X.isin([5]), X.is_null(), X.is_valid(), ~(X == 5),
    (X == 5) & (Y == 20), (X == 5) & (Y == 40), (X == 5) | (Y == 40), (X == 1) | (Y == 80),
    ~((X == 5) & (Y > 15)), (X == 9) & (Y >= 110), X.is_null() | (X == 9), (X == 6) | (Y == 70),
]


@pytest.mark.parametrize("expression", HIVE_FILTERS, ids=_id)
def test_hive_partition_field_also_inside_the_file(hive_inside: Path, expression: pc.Expression) -> None:
    _agree(hive_inside, expression)


def test_the_partition_value_wins_over_the_files_column(hive_inside: Path) -> None:
    """Issue 19 item 5: x=5/ holding x in 1..3 answers x == 5 with its 3 rows (and the file above
    the partitions with its own 2), where the file's statistics would have dropped all of them."""
    ours = _agree(hive_inside, X == 5)
    assert sorted(ours["y"].to_pylist()) == [10, 20, 30, 100, 110]
    report = scan(hive_inside, filters=X == 5).report
    assert report.files_skipped_by_partition == 2  # x=7/ and the null partition, by pyarrow
    by_file = {Path(f.path).name: f for f in report.files}
    assert by_file["a.parquet"].row_groups == (0, 1, 2)  # decided by the partition value
    assert by_file["top.parquet"].row_groups == (0, 1)  # decided by its own statistics
    assert by_file["top.parquet"].pruned_by_statistics == (2,)


def test_other_columns_still_prune_inside_a_partition(hive_inside: Path) -> None:
    report = scan(hive_inside, filters=(X == 5) & (Y == 20)).report
    by_file = {Path(f.path).name: f for f in report.files}
    assert by_file["a.parquet"].row_groups == (1,)
    assert by_file["top.parquet"].row_groups == ()


@pytest.fixture
def directories(tmp_path: Path) -> Path:
    """Directory partitioning x/z: a file at full depth, one at depth 1 (z unknown: null)."""
    _write(tmp_path / "5" / "a" / "f.parquet", [1, 2, 3], [1, 2, 3])
    _write(tmp_path / "5" / "g.parquet", [5, 6, 7], [4, 5, 6])
    _write(tmp_path / "6" / "b" / "h.parquet", None, [7, 8, 9])  # x absent from the file
    return tmp_path


DIRECTORY_SCHEMA = pa.schema([("x", pa.int32()), ("z", pa.string())])
PARTITIONINGS: dict[str, Callable[[], Any]] = {
    "list-of-names": lambda: ["x", "z"],
    "partitioning": lambda: ds.partitioning(DIRECTORY_SCHEMA),
    "factory": lambda: ds.DirectoryPartitioning.discover(["x", "z"]),
}
DIRECTORY_FILTERS = [X == 5, X == 6, X == 1, X != 5, X > 5, pc.field("z") == "a", pc.field("z").is_null(),
                     pc.field("z").is_valid(), (pc.field("z") == "b") | (X == 5), (X == 5) & (Y == 5),
                     ~(pc.field("z") == "a"), X.isin([6, 7])]


@pytest.mark.parametrize("kind", list(PARTITIONINGS))
@pytest.mark.parametrize("expression", DIRECTORY_FILTERS, ids=_id)
def test_directory_partitioning_in_every_form(directories: Path, kind: str, expression: pc.Expression) -> None:
    _agree(directories, expression, PARTITIONINGS[kind]())


def test_hive_fields_absent_from_the_files_and_dictionary_inference(tmp_path: Path) -> None:
    for part, ys in (("a", [1, 2]), ("b", [3, 4]), ("__HIVE_DEFAULT_PARTITION__", [5, 6])):
        _write(tmp_path / f"p={part}" / "f.parquet", None, ys)
    factory = ds.HivePartitioning.discover(infer_dictionary=True)
    for expression in (pc.field("p") == "a", pc.field("p") != "a", pc.field("p").is_null(),
                       pc.field("p").isin(["b", "c"]), (pc.field("p") == "b") | (Y == 1), Y > 2):
        _agree(tmp_path, expression, "hive")
        _agree(tmp_path, expression, factory)


def test_filename_partitioning(tmp_path: Path) -> None:
    _write(tmp_path / "5_a.parquet", [1, 2, 3], [1, 2, 3])
    _write(tmp_path / "6_b.parquet", [6, 6, 6], [4, 5, 6])
    partitioning = ds.partitioning(pa.schema([("x", pa.int32())]), flavor="filename")
    for expression in (X == 5, X == 6, X == 1, X > 5, (X == 5) | (Y == 5)):
        _agree(tmp_path, expression, partitioning)


def test_a_leaf_pyarrow_cannot_evaluate_on_the_partition_value_is_kept(hive_inside: Path) -> None:
    """A comparison that raises on the partition value keeps the file: pyarrow decides (and
    raises where its own read raises)."""
    tree = predicate_tree(X == pa.scalar("five"))
    decided = partition_tree(tree, X == pa.scalar(5, pa.int32()), ds.dataset(hive_inside).schema
                             .append(pa.field("x", pa.int32())))
    assert isinstance(decided, Unknown)


def test_known_fields_reads_the_partition_expression() -> None:
    schema = pa.schema([("x", pa.int32()), ("z", pa.string())])
    known = known_fields((X == pa.scalar(5, pa.int32())) & pc.field("z").is_null(), schema)
    assert known is not None
    assert known["x"].equals(pa.array([5], pa.int32())) and known["z"].equals(pa.nulls(1, pa.string()))
    assert known_fields(pc.scalar(True), schema) == {}
    assert known_fields(None, schema) == {}
    assert known_fields(X > 3, schema) is None  # not a partition expression pyarrow writes: no pruning
    tree = predicate_tree((X == 5) | (Y == 1))
    assert partition_tree(tree, X > 3, schema) == Unknown(
        "a partition expression that is not a conjunction of field == value / is_null(field)")
    assert partition_tree(tree, pc.scalar(True), schema) is tree
    decided = partition_tree(tree, X == pa.scalar(5, pa.int32()), schema)
    assert decided == AnyOf((AllOf(()), Leaf("y", "==", pa.array([1], pa.int64()))))
    assert partition_tree(predicate_tree(X == 6), X == pa.scalar(5, pa.int32()), schema) == AnyOf(())


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_property_partitioned_reads_match_pyarrow(hive_inside: Path, data: st.DataObject) -> None:
    """Random AND/OR/NOT trees of comparisons on the partition field and the file column."""
    value = st.one_of(st.integers(0, 10), st.none())

    def leaf(draw_value: Any) -> pc.Expression:
        column = data.draw(st.sampled_from([X, Y]))
        op = data.draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "null", "valid"]))
        if op == "null":
            return column.is_null()
        if op == "valid":
            return column.is_valid()
        if op == "in":
            return column.isin([v for v in data.draw(st.lists(st.integers(0, 130), min_size=1, max_size=3))])
        literal = draw_value if draw_value is not None else 0
        if column is Y:
            literal *= 10
        return {"==": column == literal, "!=": column != literal, "<": column < literal, "<=": column <= literal,
                ">": column > literal, ">=": column >= literal}[op]

    def tree(depth: int) -> pc.Expression:
        if depth == 0 or data.draw(st.booleans()):
            return leaf(data.draw(value))
        kind = data.draw(st.sampled_from(["and", "or", "not"]))
        if kind == "not":
            return ~tree(depth - 1)
        left, right = tree(depth - 1), tree(depth - 1)
        return (left & right) if kind == "and" else (left | right)

    _agree(hive_inside, tree(3))


def test_prune_files_takes_one_tree_per_path(hive_inside: Path) -> None:
    from secure_bloom.parquet.read.prune import prune_files

    path = str(hive_inside / "x=5" / "a.parquet")
    tree = predicate_tree(X == 5)
    assert [r.row_groups for r in prune_files([path], tree)] == [()]  # the file's own column says no
    assert [r.row_groups for r in prune_files([path], tree, trees=[AllOf(())])] == [(0, 1, 2)]
    with pytest.raises(ValueError, match="one tree per path: 2 for 1 paths"):
        prune_files([path], tree, trees=[tree, tree])
