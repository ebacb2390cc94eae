"""Pruned reads return exactly pyarrow's rows: a differential suite, and issue 19's cases.

The reference is ``pyarrow.dataset(folder).to_table(filter=...)`` on the same files (decrypted the
same way). Generated tables and predicates (:mod:`support.differential`) are written by pyarrow
(plain, with its Bloom filters; and with INT96 timestamps), pyarrow with Parquet Modular
Encryption (KMS key material),
our ``write_table`` (encrypted, with encrypted Bloom filters), ``attach_bloom_filters``, DuckDB and
Polars; ``read_table`` must give the same multiset of rows, or raise the same error class. DuckDB
SQL on the plaintext files is a second reference where a predicate translates simply.

Profiles: CI runs ``support.differential.CI_EXAMPLES`` examples per writer;
``SECURE_BLOOM_DIFF_EXAMPLES=N`` runs N (the long profile for releases), and
``SECURE_BLOOM_DIFF_REPORT=path.json`` writes the counts (tables, predicates, row groups per
writer) at the end.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from secure_bloom.errors import UnsupportedParquetFeatureError
from secure_bloom.parquet import KeyAccess, PruneCache, attach_bloom_filters, write_table
from secure_bloom.parquet.read.api import parquet_format, read_table, scan
from support.differential import (
    TALLY,
    Case,
    bloom_columns,
    cases,
    columns_of,
    compare,
    duckdb_count,
    encryption_config,
    examples,
    write_pyarrow,
    _duckdb_ok,
    _polars_ok,
)
from support.parquet_files import crypto_factory, vector_kms

import pyarrow.parquet.encryption as pe

KEYS = KeyAccess(kms=vector_kms())


def _write_int96(case: Case, folder: Path) -> tuple[list[Path], Any, set[str]]:
    """pyarrow's plain writer storing timestamps as legacy INT96 (no statistics, no Bloom filter)."""
    paths = []
    for i, table in enumerate(case.files):
        path = folder / f"part-{i}.parquet"
        pq.write_table(table, path, row_group_size=case.row_group_size, use_deprecated_int96_timestamps=True)
        paths.append(path)
    return paths, None, columns_of(case)


def _write_encrypted_pyarrow(case: Case, folder: Path) -> tuple[list[Path], Any, set[str]]:
    """pyarrow's writer with Parquet Modular Encryption (uniform, key tools material)."""
    paths = []
    for i, table in enumerate(case.files):
        path = folder / f"part-{i}.parquet"
        props = crypto_factory().file_encryption_properties(pe.KmsConnectionConfig(), encryption_config(True),
                                                            parquet_file_path=str(path))
        pq.write_table(table, path, row_group_size=case.row_group_size, encryption_properties=props)
        paths.append(path)
    return paths, KEYS, columns_of(case)


def _write_ours(case: Case, folder: Path) -> tuple[list[Path], Any, set[str]] | None:
    """Our write_table: encrypted, with encrypted Bloom filters on every eligible column."""
    paths = []
    for i, table in enumerate(case.files):
        path = folder / f"part-{i}.parquet"
        try:
            write_table(table, path, encryption=encryption_config(True), kms=vector_kms(),
                        bloom_filter_options={c: True for c in bloom_columns(table)} or None,
                        row_group_size=case.row_group_size)
        except UnsupportedParquetFeatureError:
            return None
        paths.append(path)
    return paths, KEYS, columns_of(case)


def _write_attached(case: Case, folder: Path) -> tuple[list[Path], Any, set[str]] | None:
    """pyarrow's plain file, then our Bloom filters attached."""
    paths = []
    with tempfile.TemporaryDirectory() as staging:
        for i, table in enumerate(case.files):
            src, dst = Path(staging) / f"{i}.parquet", folder / f"part-{i}.parquet"
            pq.write_table(table, src if bloom_columns(table) else dst, row_group_size=case.row_group_size)
            try:
                if bloom_columns(table):
                    attach_bloom_filters(src, dst, bloom_columns(table))
            except UnsupportedParquetFeatureError:
                return None
            paths.append(dst)
    return paths, None, columns_of(case)


def _keep(case: Case, ok: Callable[[pa.DataType], bool]) -> list[pa.Table]:
    return [t.select([f.name for f in t.schema if ok(f.type)]) for t in case.files]


def _write_duckdb(case: Case, folder: Path) -> tuple[list[Path], Any, set[str]] | None:
    tables = _keep(case, _duckdb_ok)
    if not any(t.num_columns for t in tables):
        return None
    paths = []
    for i, table in enumerate(tables):
        path = folder / f"part-{i}.parquet"
        con = duckdb.connect()
        try:
            con.register("t", table)
            con.execute(f"COPY (SELECT * FROM t) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE {case.row_group_size})")
        except duckdb.Error:  # values DuckDB cannot hold (timestamps beyond its range)
            return None
        finally:
            con.close()
        paths.append(path)
    return paths, None, set().union(*(t.column_names for t in tables))


def _write_polars(case: Case, folder: Path) -> tuple[list[Path], Any, set[str]] | None:
    tables = _keep(case, _polars_ok)
    if not any(t.num_columns for t in tables):
        return None
    paths = []
    for i, table in enumerate(tables):
        path = folder / f"part-{i}.parquet"
        pl.from_arrow(table).write_parquet(path, row_group_size=case.row_group_size)
        paths.append(path)
    return paths, None, set().union(*(t.column_names for t in tables))


WRITERS: dict[str, Callable[..., Any]] = {
    "pyarrow": write_pyarrow, "pyarrow-int96": _write_int96, "pyarrow-encrypted": _write_encrypted_pyarrow, "write_table": _write_ours,
    "attach": _write_attached, "duckdb": _write_duckdb, "polars": _write_polars,
}


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    yield
    target = os.environ.get("SECURE_BLOOM_DIFF_REPORT")
    if target:
        Path(target).write_text(json.dumps(dict(sorted(TALLY.counts.items())), indent=1))


@pytest.mark.parametrize("writer", sorted(WRITERS))
@settings(max_examples=examples(), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(case=cases())
def test_read_table_matches_pyarrow(writer: str, case: Case) -> None:
    with tempfile.TemporaryDirectory() as folder:
        compare(case, writer, Path(folder), WRITERS[writer], read_table, parquet_format)


def _warm_read_table(cache: PruneCache) -> Callable[..., pa.Table]:
    """read_table with one PruneCache (and the same KeyAccess) across a case's predicates, each
    read twice: the first fills the cache, the second (returned, or raising) is the warm lookup:
    kept discovery, facts judged without a reader, no scan when nothing survives."""
    def read(folder: Any, **options: Any) -> pa.Table:
        try:
            read_table(folder, cache=cache, **options)
        except Exception:  # noqa: BLE001 - the warm read must raise alike: compare() checks it
            pass
        return read_table(folder, cache=cache, **options)

    return read


@pytest.mark.parametrize("writer", ["pyarrow", "pyarrow-encrypted", "write_table"])
@settings(max_examples=max(10, examples() // 2), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(case=cases())
def test_warm_read_table_matches_pyarrow(writer: str, case: Case) -> None:
    with tempfile.TemporaryDirectory() as folder:
        compare(case, writer, Path(folder), WRITERS[writer], _warm_read_table(PruneCache()), parquet_format)


_SQL_KINDS = st.sampled_from([pa.int64(), pa.int32(), pa.string()])


@settings(max_examples=max(10, examples() // 2), deadline=None, database=None)
@given(typ=_SQL_KINDS, data=st.data())
def test_duckdb_sql_agrees_with_pyarrow_and_ours(typ: pa.DataType, data: Any) -> None:
    """DuckDB SQL on the plaintext files counts what pyarrow and read_table return (same-type
    literals, where SQL and Arrow agree on the comparison)."""
    values = st.integers(-2**40, 2**40) if pa.types.is_integer(typ) else st.text(alphabet="abc", max_size=3)
    if typ == pa.int32():
        values = st.integers(-2**31, 2**31 - 1)
    rows = data.draw(st.lists(st.one_of(st.none(), values), max_size=12))
    op = data.draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
    literal = data.draw(st.one_of(st.sampled_from(rows or [None]), values).filter(lambda v: v is not None))
    with tempfile.TemporaryDirectory() as folder:
        pq.write_table(pa.table({"x": pa.array(rows, typ)}), Path(folder) / "part-0.parquet", row_group_size=3,
                       bloom_filter_options={"x": True})
        expr = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
                ">=": pc.greater_equal}[op](pc.field("x"), pc.scalar(pa.scalar(literal, typ)))
        expected = ds.dataset(folder).to_table(filter=expr).num_rows
        assert read_table(folder, filters=expr).num_rows == expected
        assert duckdb_count(Path(folder), "x", op, literal) == expected


# ---------------------------------------------------------------- issue 19, case by case


def _files(tmp: Path, table: pa.Table, kind: str, bloom: list[str], group: int = 1) -> tuple[Path, KeyAccess | None]:
    """``table`` in row groups of ``group`` rows, written plain with pyarrow's Bloom filters, or
    encrypted by our write_table with encrypted Bloom filters."""
    folder = tmp / kind
    folder.mkdir()
    if kind == "plain":
        pq.write_table(table, folder / "part-0.parquet", row_group_size=group,
                       bloom_filter_options={c: True for c in bloom} or None)
        return folder, None
    write_table(table, folder / "part-0.parquet", encryption=encryption_config(True), kms=vector_kms(),
                bloom_filter_options={c: True for c in bloom} or None, row_group_size=group)
    return folder, KEYS


def _same_as_pyarrow(folder: Path, keys: KeyAccess | None, expr: Any) -> tuple[Any, Any]:
    def outcome(read: Callable[[], pa.Table]) -> Any:
        try:
            return sorted(map(repr, read().to_pylist()))
        except pa.ArrowException as e:
            return type(e).__name__
    return (outcome(lambda: read_table(folder, filters=expr, keys=keys)),
            outcome(lambda: ds.dataset(folder, format=parquet_format(keys)).to_table(filter=expr)))


KINDS = ["plain", "encrypted"]
BIG = Decimal("1234567890123456789012345678.9")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("expr", [
    pc.field("x") == pa.scalar(BIG, pa.decimal128(29, 1)),
    pc.field("x").isin(pa.array([BIG], pa.decimal128(29, 1))),
    pc.field("x") >= pa.scalar(BIG, pa.decimal128(29, 1)),
    pc.field("x") == pa.scalar(BIG, pa.decimal256(40, 1)),
], ids=["eq", "in", "ge", "eq-decimal256"])
def test_issue19_decimal_literal_beyond_28_digits(tmp_path: Path, kind: str, expr: Any) -> None:
    folder, keys = _files(tmp_path, pa.table({"x": pa.array([BIG, Decimal("1.0")], pa.decimal128(29, 1))}), kind, ["x"])
    ours, expected = _same_as_pyarrow(folder, keys, expr)
    assert ours == expected and len(expected) == 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("expr, rows", [(pc.field("x") > 0.1, 2), (pc.field("x") >= 0.7, 0),
                                        (pc.field("x") < 0.7, 2), (pc.field("x").isin([0.1]), 1)],
                         ids=["gt", "ge", "lt", "in-rounds-the-set"])
def test_issue19_float32_column_float64_literal(tmp_path: Path, kind: str, expr: Any, rows: int) -> None:
    folder, keys = _files(tmp_path, pa.table({"x": pa.array([0.1, 0.7], pa.float32())}), kind, ["x"])
    ours, expected = _same_as_pyarrow(folder, keys, expr)
    assert ours == expected and len(expected) == rows


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("values, typ, expr", [
    ([Decimal("19.99"), Decimal("5.00")], pa.decimal128(10, 2), pc.field("x") > 19.99),
    ([Decimal("3"), Decimal("0")], pa.decimal128(5, 0), pc.field("x") > 2.7),
    ([Decimal("3"), Decimal("0")], pa.decimal128(5, 0), pc.field("x") < 0.1),
    ([Decimal("40274364837033362.22"), Decimal("1")], pa.decimal128(20, 2), pc.field("x") == 4.027436483703336e16),
], ids=["price", "qty-gt", "qty-lt", "bloom-float-equal"])
def test_issue19_decimal_column_float_literal(tmp_path: Path, kind: str, values: list[Decimal], typ: pa.DataType,
                                              expr: Any) -> None:
    folder, keys = _files(tmp_path, pa.table({"x": pa.array(values, typ)}), kind, ["x"])
    ours, expected = _same_as_pyarrow(folder, keys, expr)
    assert ours == expected and len(expected) == 1


NOON = pa.scalar(dt.datetime(2024, 1, 1, 12), pa.timestamp("us"))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("days, expr, rows", [
    ([dt.date(2024, 1, 1), dt.date(2025, 1, 1)], pc.field("d") < NOON, 1),
    ([dt.date(2024, 1, 1), dt.date(2024, 1, 1)], pc.field("d") != NOON, 2),
    ([dt.date(2024, 1, 2), dt.date(2023, 1, 1)], pc.field("d") > NOON, 1),
], ids=["lt", "ne", "gt"])
def test_issue19_date_column_timestamp_literal(tmp_path: Path, kind: str, days: list[dt.date], expr: Any,
                                               rows: int) -> None:
    folder, keys = _files(tmp_path, pa.table({"d": pa.array(days, pa.date32())}), kind, ["d"])
    ours, expected = _same_as_pyarrow(folder, keys, expr)
    assert ours == expected and len(expected) == rows


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("table, expr", [
    (pa.table({"x": pa.array([1, 2**53 + 1], pa.int64())}), pc.field("x") == 9007199254740992.0),
    (pa.table({"x": pa.array([1, 2**53 + 1], pa.int64()), "a": [1, 2]}),
     (pc.field("a") == 1) & (pc.field("x") == 9007199254740992.0)),
    (pa.table({"x": pa.array([1, 2**63], pa.uint64())}), pc.field("x") == 5),
    (pa.table({"x": pa.array([Decimal("1" * 36 + ".50"), Decimal("2.25")], pa.decimal128(38, 2))}),
     pc.field("x").isin(pa.array([Decimal("1.12345")], pa.decimal128(10, 5)))),
    (pa.table({"x": pa.array([-(2**63), -1], pa.int64())}), pc.field("x").isin([0.0])),
    (pa.table({"x": pa.array([-(2**63), -1], pa.int64())}), ~pc.field("x").isin([0.0])),
], ids=["int64-vs-float", "and-other-part-rules-out", "uint64-vs-int", "in-decimal-other-precision",
        "in-float-set-statistics-pass", "not-in-float-set-statistics-pass"])
def test_issue19_pyarrow_raises_so_must_we(tmp_path: Path, kind: str, table: pa.Table, expr: Any) -> None:
    group = 2 if "isin" in str(expr) or "is_in" in str(expr) else 1  # min < max: pyarrow's is_in pass
    folder, keys = _files(tmp_path, table, kind, [c for c in table.column_names], group)
    ours, expected = _same_as_pyarrow(folder, keys, expr)
    assert expected == "ArrowInvalid" and ours == expected


def test_exact_cases_still_prune(tmp_path: Path) -> None:
    """Where the comparison happens in the column's own type, statistics and Bloom filters still
    skip row groups (the fast path), also for the literal types Arrow narrows."""
    table = pa.table({"i": pa.array(range(8), pa.int32()), "s": [f"k{i}" for i in range(8)],
                      "f": pa.array([i / 2 for i in range(8)], pa.float32()),
                      "d": pa.array([Decimal(i) / 4 for i in range(8)], pa.decimal128(38, 2))})
    pq.write_table(table, tmp_path / "part-0.parquet", row_group_size=1,
                   bloom_filter_options={"s": True, "i": True, "d": True, "f": True})
    for expr in (pc.field("i") == 5, pc.field("s") == "k5", pc.field("f") == 2.5, pc.field("i") > 6.5,
                 pc.field("d") == pa.scalar(Decimal("1.25"), pa.decimal128(5, 2)), pc.field("f").isin([2.5])):
        pruned = scan(tmp_path, filters=expr)
        assert pruned.to_table().num_rows == ds.dataset(tmp_path).to_table(filter=expr).num_rows == 1
        assert pruned.report.row_groups_read == 1, expr


@pytest.mark.parametrize("kind", KINDS)
def test_issue19_unknown_part_that_raises_keeps_row_groups(tmp_path: Path, kind: str) -> None:
    """A part of the filter the pruner does not read (a cast) raises in pyarrow on a row group
    that the Bloom filter of another part rules out (its statistics cannot): the row group is
    kept, the read raises as pyarrow's does."""
    table = pa.table({"k": ["a", "c"], "s": ["5", "x"]})
    folder = tmp_path / kind
    folder.mkdir()
    keys = None
    if kind == "plain":
        pq.write_table(table, folder / "part-0.parquet", bloom_filter_options={"k": True})
    else:
        keys = KEYS
        write_table(table, folder / "part-0.parquet", encryption=encryption_config(True), kms=vector_kms(),
                    bloom_filter_options={"k": True})
    expr = (pc.field("k") == "b") & (pc.field("s").cast(pa.int64()) == 5)
    ours, expected = _same_as_pyarrow(folder, keys, expr)
    assert expected == "ArrowInvalid" and ours == expected


def test_negative_timestamp_literal_casts_the_column_as_pyarrow_does(tmp_path: Path) -> None:
    """A negative ns literal whole in ms is not narrowed by Arrow: the ms column is cast to ns,
    which raises on a value beyond the ns range; the pruner keeps the row group so read_table
    raises too (found by the differential suite: it had pruned by statistics, giving 0 rows)."""
    table = pa.table({"ts": pa.array([None, 9223372036855], pa.timestamp("ms"))})  # 2262-04-11 23:47:16.855
    pq.write_table(table, tmp_path / "part-0.parquet", row_group_size=1, bloom_filter_options={"ts": True})
    expr = ~(pc.field("ts") != pc.scalar(pa.scalar(-10**6, pa.timestamp("ns"))))
    with pytest.raises(pa.ArrowInvalid):
        ds.dataset(tmp_path).to_table(filter=expr)
    with pytest.raises(pa.ArrowInvalid):
        read_table(tmp_path, filters=expr)


D = Decimal
TS_US = pa.timestamp("us")


@pytest.mark.parametrize("op, literal, own, mode", [
    ("==", pa.array([5]), pa.int32(), "fast"),                        # narrowed to int8: compared in int32
    ("==", pa.array([5]), pa.uint8(), "fast"),                        # uint8 widened to int16: exact
    ("==", pa.array([5]), pa.uint64(), "bounds"),                     # uint64 -> int64 may raise
    ("==", pa.array([2.0]), pa.int64(), "bounds"),                    # int64 -> float32, checked
    (">", pa.array([0.1]), pa.float32(), "bounds"),                   # float32 -> float64
    (">", pa.array([0.5]), pa.float32(), "fast"),                     # exact in float32: compared there
    ("==", pa.array([D("1.5")], pa.decimal128(5, 1)), pa.decimal128(10, 2), "fast"),
    ("==", pa.array([D("1.25")], pa.decimal128(5, 2)), pa.decimal128(10, 1), "bounds"),
    (">", pa.array([19.99]), pa.decimal128(10, 2), "bounds"),         # decimal -> float64
    ("<", pa.array([43_200_000_000], pa.int64()).view(TS_US), pa.date32(), "bounds"),
    ("==", pa.array([10**9], pa.int64()).view(pa.timestamp("ns")), TS_US, "fast"),      # whole seconds
    ("==", pa.array([10**9 + 1], pa.int64()).view(pa.timestamp("ns")), TS_US, "bounds"),
    ("==", pa.array([1000], pa.int64()).view(pa.timestamp("ns")), TS_US, "fast"),         # narrowed to us
    ("==", pa.array([-1000], pa.int64()).view(pa.timestamp("ns")), TS_US, "bounds"),      # never narrowed
    ("==", pa.array([-10**9], pa.int64()).view(pa.timestamp("ns")), TS_US, "bounds"),   # negative: not narrowed
    ("==", pa.array([1.5]), pa.float16(), "raise"),                   # no kernel: pyarrow raises
    ("==", pa.array([1]), pa.string(), "raise"),
    ("in", pa.array([0.1]), pa.float32(), "fast"),                    # is_in casts its value set
    ("in", pa.array([-1]), pa.uint64(), "raise"),                     # ... else the column: may raise
])
def test_plan_leaf_paths(op: str, literal: pa.Array, own: pa.DataType, mode: str) -> None:
    from secure_bloom.parquet.read.compare import plan_leaf

    assert plan_leaf(op, literal, own, None).mode == mode
