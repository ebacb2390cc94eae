"""Temporal columns compared with literals of another unit or type: Arrow casts the COLUMN to the
common type, and that checked cast raises on stored values out of the finer unit's range.

Arrow narrows a timestamp literal to the coarsest unit it is whole in before choosing the common
type (``SmallestTypeFor`` in ``compute/expression.cc``), testing the stored int64 as a ``uint64_t``:
a negative literal is never narrowed, so ``ts_us == -1000 ns`` casts a ``us`` column to ``ns``,
which raises on a value beyond 2262-04-11T23:47:16.854775807. A row group holding such a value
must be kept (pyarrow's read raises there, so ours must); row groups whose bounds the cast accepts
are still pruned. Each case is checked through ``read_table`` and through ``prune_files`` (the row
groups kept, read by pyarrow, give pyarrow's own outcome on the whole file).
"""

from __future__ import annotations

import itertools
from decimal import Context, Decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from secure_bloom.parquet.read.api import read_table, scan
from secure_bloom.parquet.read.compare import plan_leaf
from secure_bloom.parquet.read.predicate import predicate_tree
from secure_bloom.parquet.read.prune import prune_files

_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_INT64_MAX = 2**63 - 1


def _storage(typ: pa.DataType) -> pa.DataType:
    return pa.int32() if typ.bit_width == 32 else pa.int64()


def _array(typ: pa.DataType, stored: list[int]) -> pa.Array:
    return pa.array(stored, _storage(typ)).view(typ)


def _range_end(column_unit: str, finer_unit: str) -> int:
    """The largest value of a ``column_unit`` column that a cast to ``finer_unit`` accepts; its
    negation is the smallest (2^63 is no multiple of a power of 1000)."""
    return _INT64_MAX * _PER_SECOND[column_unit] // _PER_SECOND[finer_unit]


def _outcome(read: Callable[[], pa.Table]) -> Any:
    try:
        return sorted(map(repr, read().to_pylist()))
    except pa.ArrowException as e:
        return type(e).__name__


def _kept_rows(folder: Path, expr: Any) -> tuple[tuple[int, ...], Any]:
    """The row groups ``prune_files`` keeps, and pyarrow's outcome on exactly those."""
    dataset = ds.dataset(folder)
    path = folder / "part-0.parquet"
    kept = prune_files([str(path)], predicate_tree(expr, dataset.schema), schema=dataset.schema,
                       progress=False)[0].row_groups
    if not kept:
        return kept, []
    fragment = next(iter(dataset.get_fragments())).subset(row_group_ids=list(kept))
    subset = ds.FileSystemDataset([fragment], dataset.schema, ds.ParquetFileFormat())
    return kept, _outcome(lambda: subset.to_table(filter=expr))


def _assert_as_pyarrow(tmp_path: Path, column: pa.Array, expr: Any, group: int = 1) -> Any:
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(pa.table({"v": column}), folder / "part-0.parquet", row_group_size=group)
    expected = _outcome(lambda: ds.dataset(folder).to_table(filter=expr))
    assert _outcome(lambda: read_table(folder, filters=expr)) == expected
    assert _kept_rows(folder, expr)[1] == expected
    return expected


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "==": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}

# (column unit, literal unit): the literal unit finer, the column unit writable to Parquet (a
# timestamp[s] column is stored as milliseconds, so it cannot hold values beyond the ms range).
_UNIT_PAIRS = [(c, f) for c, f in itertools.combinations(["s", "ms", "us", "ns"], 2) if (c, f) != ("s", "ms")]


@pytest.mark.parametrize("tz", [None, "UTC"])
@pytest.mark.parametrize("column_unit, literal_unit", _UNIT_PAIRS)
@pytest.mark.parametrize("side, op", [("above", "=="), ("above", "<"), ("above", "<="), ("below", ">"),
                                      ("below", ">=")])
def test_coarser_timestamp_column_beyond_the_finer_units_range_raises_as_pyarrow(
        tmp_path: Path, tz: str | None, column_unit: str, literal_unit: str, side: str, op: str) -> None:
    """The issue's case and its whole class: the only row group lies beyond the literal unit's
    range, on the side where the statistics alone would rule it out; the negative literal (one
    column unit before the epoch) is not narrowed, pyarrow casts the column and raises."""
    end = _range_end(column_unit, literal_unit)
    stored = end + 1 if side == "above" else -end - 1
    literal = _array(pa.timestamp(literal_unit, tz), [-(_PER_SECOND[literal_unit] // _PER_SECOND[column_unit])])
    expr = _COMPARE[op](pc.field("v"), pc.scalar(literal[0]))
    assert _assert_as_pyarrow(tmp_path, _array(pa.timestamp(column_unit, tz), [stored]), expr) == "ArrowInvalid"


def test_the_reported_case(tmp_path: Path) -> None:
    """timestamp[us] holding 2262-04-11T23:47:16.854776 against timestamp[ns] -1000."""
    column = _array(pa.timestamp("us"), [9_223_372_036_854_776])
    expr = pc.field("v") == pc.scalar(_array(pa.timestamp("ns"), [-1000])[0])
    assert _assert_as_pyarrow(tmp_path, column, expr) == "ArrowInvalid"


@pytest.mark.parametrize("column_unit, literal_unit", _UNIT_PAIRS)
def test_bounds_the_cast_accepts_are_still_pruned(tmp_path: Path, column_unit: str, literal_unit: str) -> None:
    """Row groups inside the finer unit's range (its very ends included) are pruned by their
    statistics as before; the one beyond it is kept, so pyarrow's read raises."""
    end = _range_end(column_unit, literal_unit)
    per = _PER_SECOND[column_unit]
    literal = _array(pa.timestamp(literal_unit), [-(_PER_SECOND[literal_unit] // per)])
    expr = pc.field("v") == pc.scalar(literal[0])
    column = _array(pa.timestamp(column_unit), [end, -end, 5 * per, -5 * per])
    assert _assert_as_pyarrow(tmp_path, column, expr) == []
    assert _kept_rows(tmp_path / "data", expr)[0] == ()
    assert scan(tmp_path / "data", filters=expr).report.row_groups_read == 0
    wider = _array(pa.timestamp(column_unit), [end, end + 1, 5 * per])
    folder = tmp_path / "wider"
    folder.mkdir()
    pq.write_table(pa.table({"v": wider}), folder / "part-0.parquet", row_group_size=1)
    assert _kept_rows(folder, expr) == ((1,), "ArrowInvalid")


_DAY_NS_END = _INT64_MAX // (86_400 * 10**9)  # the last day whose midnight timestamp[ns] holds


_RAISES = "ArrowInvalid"


@pytest.mark.parametrize("column, literal, op, expected", [
    (_array(pa.date32(), [_DAY_NS_END + 1]), _array(pa.timestamp("ns"), [-1000]), "==", _RAISES),
    (_array(pa.date32(), [-_DAY_NS_END - 1]), _array(pa.timestamp("ns"), [1]), ">", _RAISES),
    (_array(pa.date64(), [(_DAY_NS_END + 1) * 86_400_000]), _array(pa.timestamp("ns"), [-1000]), "<", _RAISES),
    (_array(pa.date32(), [_DAY_NS_END]), _array(pa.timestamp("ns"), [-1000]), "==", []),
    (_array(pa.date32(), [_DAY_NS_END + 1]), _array(pa.timestamp("us", "UTC"), [-1]), "==", []),
    (_array(pa.duration("us"), [_range_end("us", "ns") + 1]), _array(pa.duration("ns"), [-1000]), "==", _RAISES),
    (_array(pa.duration("s"), [_range_end("s", "ms") + 1]), _array(pa.duration("ms"), [5]), "<", _RAISES),
    (_array(pa.duration("us"), [_range_end("us", "ns")]), _array(pa.duration("ns"), [-1000]), "==", []),
    (_array(pa.time32("s"), [86_399]), _array(pa.time64("ns"), [-1000]), "==", []),
    (_array(pa.time32("ms"), [5]), _array(pa.time64("us"), [4_000]), "<", []),
], ids=["date32-ts-ns-eq", "date32-before-ts-ns-gt", "date64-ts-ns-lt", "date32-last-ns-day", "date32-ts-us-utc",
        "duration-us-ns", "duration-s-ms", "duration-us-ns-in-range", "time32s-time64ns", "time32ms-time64us"])
def test_other_temporal_pairs_match_pyarrow(tmp_path: Path, column: pa.Array, literal: pa.Array, op: str,
                                            expected: Any) -> None:
    """Dates against timestamps, durations and times of other units: the comparison's cast of
    the column is decided on the bounds by Arrow itself (raises where pyarrow's read raises;
    times cannot leave their day, so they never raise)."""
    assert _assert_as_pyarrow(tmp_path, column, _COMPARE[op](pc.field("v"), pc.scalar(literal[0]))) == expected


def _extremes(typ: pa.DataType) -> pa.Array:
    """Two values at the ends of what ``typ`` can hold (a day for times)."""
    if pa.types.is_integer(typ):
        bits = typ.bit_width
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(typ) else (0, (1 << bits) - 1)
        return pa.array([lo, hi], typ)
    if pa.types.is_decimal(typ):
        top = Decimal(10**typ.precision - 1).scaleb(-typ.scale, context=Context(prec=100))
        return pa.array([top.copy_negate(), top], typ)
    if pa.types.is_time(typ):
        return _array(typ, [0, 86_400 * _PER_SECOND[typ.unit] - 1])
    if pa.types.is_date64(typ):
        return _array(typ, [-(2**63) // 86_400_000 * 86_400_000 + 86_400_000, _INT64_MAX // 86_400_000 * 86_400_000])
    bits = _storage(typ).bit_width
    return _array(typ, [-(1 << (bits - 1)), (1 << (bits - 1)) - 1])


_TYPES = ([pa.timestamp(u, tz) for u in _PER_SECOND for tz in (None, "UTC")] + [pa.date32(), pa.date64()]
          + [pa.time32("s"), pa.time32("ms"), pa.time64("us"), pa.time64("ns")] + [pa.duration(u) for u in _PER_SECOND]
          + [pa.int8(), pa.int32(), pa.int64(), pa.uint32(), pa.uint64(), pa.decimal128(38, 10), pa.decimal256(76, 0)])


def _literals(typ: pa.DataType) -> list[pa.Array]:
    if pa.types.is_decimal(typ):
        return [pa.array([Decimal(v)], typ) for v in (-1, 0, 2)]
    out = []
    for v in (0, 1, -1, 1000, -1000, 10**6, -(10**6), 10**9, -(10**9), -86_400_000):
        try:
            out.append(pa.array([v], typ) if pa.types.is_integer(typ) else _array(typ, [v]))
        except (pa.ArrowException, OverflowError):
            pass
    return out


def test_a_fast_plan_never_casts_the_column() -> None:
    """Arrow as the oracle of the whole class: wherever a leaf is planned ``fast`` (compared in
    the column's own type, nothing can raise), pyarrow's evaluation of it on the column type's
    extreme values does not raise, for every pair of temporal, integer and decimal types."""
    wrong = []
    for own, other in itertools.product(_TYPES, _TYPES):
        table = ds.dataset(pa.table({"v": _extremes(own)}))
        for literal, op in itertools.product(_literals(other), ("==", "<")):
            if own.equals(other) or plan_leaf(op, literal, own, None).mode != "fast":
                continue
            try:
                table.to_table(filter=_COMPARE[op](pc.field("v"), pc.scalar(literal[0])))
            except pa.ArrowException:
                wrong.append((str(own), str(other), literal.view(_storage(other)).to_pylist()
                              if not (pa.types.is_integer(other) or pa.types.is_decimal(other)) else literal.to_pylist(), op))
    assert not wrong, wrong[:10]
