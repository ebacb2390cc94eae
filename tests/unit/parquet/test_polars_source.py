"""The Polars IO source answers where Polars answers and raises where Polars raises (issue 28, 4-8).

Each case is an encrypted file (our ``write_table``, encrypted Bloom filters, one row per row
group) read through ``secure_bloom.parquet.polars.scan_parquet`` and compared with
``polars.scan_parquet`` of a plaintext copy written by pyarrow with the same row groups; where
the translation is exact, pruning is still checked (``last_report``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from secure_bloom.parquet import KeyAccess, dataset, write_table
from secure_bloom.parquet.polars import scan_dataset, scan_parquet
from support.differential import encryption_config
from support.parquet_files import vector_kms

KEYS = KeyAccess(kms=vector_kms())

TABLE = pa.table({
    "id": pa.array([1, 2, 3, 4], pa.int64()),
    "x": pa.array([Decimal("7"), Decimal("-1.5"), None, Decimal("150.25")], pa.decimal128(9, 2)),
    "y": pa.array([Decimal("7"), Decimal("150"), None, Decimal("-3")], pa.decimal128(10, 2)),
    "d": pa.array([dt.date(2020, 1, 1), dt.date(1970, 1, 2), None, dt.date(1969, 12, 31)], pa.date32()),
    "ts": pa.array([0, 10**6, None, -5], pa.int64()).view(pa.timestamp("us", tz="Europe/Paris")),
    "tn": pa.array([0, 1000, None, 10**9], pa.int64()).view(pa.timestamp("ns")),
    "c": pa.array(["a", "b", None, "zz"]).dictionary_encode(),
    "s": pa.array(["a", "b", None, "k"]),
})
BLOOM = ["id", "x", "y", "d", "ts", "tn", "s"]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the encrypted file, its plaintext copy)."""
    root = tmp_path_factory.mktemp("polars-source")
    write_table(TABLE, root / "encrypted.parquet", encryption=encryption_config(True), kms=vector_kms(),
                bloom_filter_options={c: True for c in BLOOM}, row_group_size=1)
    pq.write_table(TABLE, root / "plain.parquet", row_group_size=1)
    return root / "encrypted.parquet", root / "plain.parquet"


def _outcome(run: Callable[[], pl.DataFrame]) -> Any:
    try:
        return sorted(map(repr, run().rows()))
    except Exception as e:  # noqa: BLE001 - the class is compared
        return type(e).__name__


def _both(files: tuple[Path, Path], expr: pl.Expr) -> tuple[Any, Any]:
    encrypted, plain = files
    return (_outcome(lambda: scan_parquet(encrypted, keys=KEYS).filter(expr).collect()),
            _outcome(lambda: pl.scan_parquet(plain).filter(expr).collect()))


def _read(files: tuple[Path, Path], expr: pl.Expr) -> tuple[int, int]:
    """(rows, row groups read) of the pruned scan."""
    data = dataset(files[0], keys=KEYS)
    rows = scan_dataset(data).filter(expr).collect().height
    assert data.last_report is not None
    return rows, data.last_report.row_groups_read


@pytest.mark.parametrize("expr, rows, groups", [
    (pl.col("x") >= 0, 2, 2), (pl.col("x") < 100, 2, 2), (pl.col("x") == 7, 1, 1),
    (pl.col("x") == Decimal("7"), 1, 1), (pl.col("y") == 7, 1, 1), (pl.col("y") < 100, 2, 2),
    (pl.col("x") == Decimal("7.001"), 0, 4), (pl.col("x") > 10**12, 0, 4),
], ids=["ge-0", "lt-100", "eq-7", "eq-decimal", "dec10-eq", "dec10-lt", "beyond-scale", "beyond-precision"])
def test_item4_decimal_columns_against_integer_and_decimal_literals(files: tuple[Path, Path], expr: pl.Expr,
                                                                    rows: int, groups: int) -> None:
    ours, polars = _both(files, expr)
    assert ours == polars and len(polars) == rows
    assert _read(files, expr) == (rows, groups)  # bound to decimal(9,2) exactly: pruned (else all read)


@pytest.mark.parametrize("expr, rows, groups", [
    (pl.col("d") == 18262, 1, 1), (pl.col("d") > 0, 2, 2), (pl.col("d") < 0, 1, 1),
    (pl.col("ts") > 0, 1, 1), (pl.col("ts") == 10**6, 1, 1), (pl.col("tn") == 1000, 1, 1),
    (pl.col("tn").is_between(1, 10**9, closed="left"), 1, 1), (pl.col("d") == 2**40, 0, 4),
], ids=["date-eq", "date-gt", "date-lt", "datetime-zone-gt", "datetime-eq", "datetime-ns-eq", "between", "beyond-int32"])
def test_item5_date_and_datetime_columns_against_integers(files: tuple[Path, Path], expr: pl.Expr, rows: int,
                                                          groups: int) -> None:
    ours, polars = _both(files, expr)
    assert ours == polars and len(polars) == rows
    assert _read(files, expr) == (rows, groups)


@pytest.mark.parametrize("expr, rows", [
    (~pl.col("c").is_in([]), None),  # the null row: Polars 2.1 drops it, 2.0 keeps it
    (pl.col("c").is_in([]), 0), (pl.col("c").is_in(["a", None]), 1),
    (pl.col("c").is_in(["zz", None], nulls_equal=True), 2), (pl.col("c") < "b", 1), (~pl.col("c").is_in(["a"]), 2),
], ids=["not-in-empty", "in-empty", "in-with-null", "nulls-equal", "lexical", "not-in"])
def test_item6_categorical_is_in(files: tuple[Path, Path], expr: pl.Expr, rows: int | None) -> None:
    ours, polars = _both(files, expr)
    assert isinstance(polars, list) and ours == polars and len(polars) in ((3, 4) if rows is None else (rows,))


def test_item6_categorical_equality_still_prunes(files: tuple[Path, Path]) -> None:
    assert _read(files, pl.col("c").is_in(["zz"])) == (1, 1)


@pytest.mark.parametrize("expr", [
    (pl.col("s") == pl.col("id")) & (pl.col("s") < ""),
    (pl.col("s") == pl.col("id")) & (pl.col("s") == "absent"),  # the Bloom filters rule out every row group
    (pl.col("s") == 5) & (pl.col("id") == 99),
    (pl.col("ts") == dt.datetime(2020, 1, 1)) & (pl.col("id") == 99),  # a naive datetime against a zone
], ids=["issue", "bloom-prunes-all", "string-vs-int", "zone-vs-naive"])
def test_item7_type_errors_raise_as_polars_whatever_survives(files: tuple[Path, Path], expr: pl.Expr) -> None:
    ours, polars = _both(files, expr)
    assert polars in ("ComputeError", "SchemaError", "InvalidOperationError")
    assert ours == polars


def test_item7_no_error_over_files_without_rows(tmp_path: Path) -> None:
    """Polars evaluates no predicate over files holding no row: neither does the IO source."""
    empty = TABLE.slice(0, 0)
    write_table(empty, tmp_path / "e.parquet", encryption=encryption_config(True), kms=vector_kms())
    pq.write_table(empty, tmp_path / "p.parquet")
    expr = (pl.col("s") == pl.col("id")) & (pl.col("s") < "")
    assert _outcome(lambda: scan_parquet(tmp_path / "e.parquet", keys=KEYS).filter(expr).collect()) == []
    assert _outcome(lambda: pl.scan_parquet(tmp_path / "p.parquet").filter(expr).collect()) == []


def test_a_part_that_may_raise_keeps_every_row_group(tmp_path: Path) -> None:
    """A strict cast may raise on some values: a predicate holding one is not used for pruning,
    so Polars sees every row and raises as its own reader does, even where a Bloom filter rules
    out the other part (the row group's statistics cannot: "a" <= "b" <= "c"). (Polars' reader
    wraps the error in a ComputeError; over rows Polars raises InvalidOperationError.)"""
    table = pa.table({"k": ["a", "c"], "s": ["5", "x"]})
    write_table(table, tmp_path / "e.parquet", encryption=encryption_config(True), kms=vector_kms(),
                bloom_filter_options={"k": True})
    pq.write_table(table, tmp_path / "p.parquet")
    expr = ~((pl.col("k") != "b") | (pl.col("s").cast(pl.Int64) != 5))  # pushed whole to the source
    if tuple(int(part) for part in pl.__version__.split(".")[:2]) >= (2, 1):  # 2.0.0's own reader panics here
        assert _outcome(lambda: pl.scan_parquet(tmp_path / "p.parquet").filter(expr).collect()) == "ComputeError"
    in_memory = _outcome(lambda: pl.read_parquet(tmp_path / "p.parquet").filter(expr))
    assert in_memory == "InvalidOperationError"
    assert _outcome(lambda: scan_parquet(tmp_path / "e.parquet", keys=KEYS).filter(expr).collect()) == in_memory
    # without the cast the Bloom filter prunes the row group
    data = dataset(tmp_path / "e.parquet", keys=KEYS)
    assert scan_dataset(data).filter(~(pl.col("k") != "b")).collect().height == 0
    assert data.last_report is not None and data.last_report.row_groups_pruned_by_bloom == 1


def _tree(root: Path, encrypted: bool) -> None:
    """Files at three depths (and one that is not Parquet by name) under ``root``."""
    for i, rel in enumerate(["top.parquet", "a/one.parquet", "a/b/two.parquet", "a/b/notes.txt"]):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.table({"id": pa.array([i, 10 + i], pa.int64()), "s": [f"k{i}", "z"]})
        if rel.endswith(".txt"):
            path.write_text("not parquet")
        elif encrypted:
            write_table(table, path, encryption=encryption_config(True), kms=vector_kms(), bloom_filter_options={"s": True})
        else:
            pq.write_table(table, path)


@pytest.mark.parametrize("pattern", ["**/*.parquet", "*.parquet", "a/**/*.parquet", "a/*/*.parquet", "*/one.parq?et",
                                     "a/[ab]/*.parquet", "**/t*.parquet"])
def test_item8_glob_patterns_expand_as_polars_does(tmp_path: Path, pattern: str) -> None:
    _tree(tmp_path / "encrypted", True)
    _tree(tmp_path / "plain", False)
    ours = scan_parquet(f"{tmp_path / 'encrypted'}/{pattern}", keys=KEYS)
    polars = pl.scan_parquet(f"{tmp_path / 'plain'}/{pattern}")
    assert ours.collect_schema() == polars.collect_schema()  # no hive columns, as Polars' glob
    expected = sorted(polars.collect().rows())
    assert sorted(ours.collect().rows()) == expected and expected
    expr = pl.col("s") == "k2"
    assert sorted(ours.filter(expr).collect().rows()) == sorted(polars.filter(expr).collect().rows())


def test_item8_a_pattern_matching_nothing(tmp_path: Path) -> None:
    _tree(tmp_path, True)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        scan_parquet(f"{tmp_path}/**/*.orc", keys=KEYS)
    with pytest.raises(FileNotFoundError):
        scan_parquet(f"{tmp_path}/missing/*.parquet", keys=KEYS)
    with pytest.raises(FileNotFoundError):
        scan_parquet(f"{tmp_path}/*.parquet", keys=KEYS, glob=False)  # a literal name: no such file


def test_item8_a_list_of_patterns_and_paths(tmp_path: Path) -> None:
    _tree(tmp_path, True)
    lazy = scan_parquet([f"{tmp_path}/a/*.parquet", tmp_path / "top.parquet"], keys=KEYS)
    assert sorted(lazy.collect()["id"].to_list()) == [0, 1, 10, 11]


def test_a_non_strict_cast_polars_cannot_make_raises_as_polars(tmp_path: Path) -> None:
    """Regression (the long differential profile, 2026-12-02): a non-strict cast of binary to
    Int64 beside a string-vs-int comparison. Polars raises the cast's InvalidOperationError (its
    reader and over the rows); the IO source raised the comparison's ComputeError on its own,
    because only strict casts counted as parts that may raise. A cast of either kind now keeps
    the predicate from pruning and from being type-checked part by part: Polars sees every row."""
    table = pa.table({"bin": pa.array([b""] * 4, pa.binary()), "i16": pa.array([None] * 4, pa.int16())})
    write_table(table, tmp_path / "e.parquet", encryption=encryption_config(True), kms=vector_kms(),
                bloom_filter_options={"bin": True}, row_group_size=1)
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=1)
    expr = (pl.col("bin").cast(pl.Int64, strict=False) == pl.lit(b"")) & (pl.lit("-32768") == pl.col("i16"))
    assert _outcome(lambda: pl.scan_parquet(tmp_path / "p.parquet").filter(expr).collect()) == "InvalidOperationError"
    in_memory = _outcome(lambda: pl.read_parquet(tmp_path / "p.parquet").filter(expr))
    assert in_memory == "InvalidOperationError"
    # Polars' own answer for an IO source: over the rows (2.1), or its check of the plan over the
    # source's schema (2.0: SchemaError, as over an empty frame); never the comparison's error
    over_empty = _outcome(lambda: pl.DataFrame(schema=pl.read_parquet(tmp_path / "p.parquet").schema).filter(expr))
    assert _outcome(lambda: scan_parquet(tmp_path / "e.parquet", keys=KEYS).filter(expr).collect()) in (in_memory,
                                                                                                        over_empty)


def test_a_comparison_before_a_non_strict_cast_raises_first_as_in_polars(tmp_path: Path) -> None:
    """Regression (the long differential profile, 2026-12-06): ``(s == 7) & (s.cast(Date,
    strict=False) == 7)`` on a string column: Polars raises the comparison's ComputeError (its
    rows evaluate the left part first); the IO source raised the cast's InvalidOperationError,
    since it evaluated the predicate's casts over the rows before the predicate itself. Now the
    rows see the predicate Polars handed over first, then the casts its optimiser may have
    removed; with the parts swapped the cast's error comes first, in Polars and in the source."""
    table = pa.table({"s": [""]})
    write_table(table, tmp_path / "e.parquet", encryption=encryption_config(True), kms=vector_kms(),
                bloom_filter_options={"s": True}, row_group_size=1)
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=1)
    compared, cast = pl.col("s") == 7, pl.col("s").cast(pl.Date, strict=False) == 7
    for expr, error in ((compared & cast, "ComputeError"), (cast & compared, "InvalidOperationError")):
        assert _outcome(lambda: pl.scan_parquet(tmp_path / "p.parquet").filter(expr).collect()) == error
        assert _outcome(lambda: pl.read_parquet(tmp_path / "p.parquet").filter(expr)) == error
        assert _outcome(lambda: scan_parquet(tmp_path / "e.parquet", keys=KEYS).filter(expr).collect()) == error, expr


def test_a_categorical_comparison_polars_optimises_away_does_not_raise(tmp_path: Path) -> None:
    """Regression (the long differential profile, 2026-12-02): ``(7 == cat) & cat.is_in([])``
    answers no rows in Polars (its reader checks no Categorical comparison against row-group
    statistics, and the rows never evaluate the comparison); the IO source raised the
    comparison's ComputeError, type-checking it on its own. A comparison on its own still raises
    as Polars does."""
    table = pa.table({"cat": pa.array([""]).dictionary_encode(), "b": pa.array([None], pa.bool_())})
    write_table(table, tmp_path / "e.parquet", encryption=encryption_config(True), kms=vector_kms(),
                bloom_filter_options={"cat": True})
    pq.write_table(table, tmp_path / "p.parquet")
    for expr, polars in (((pl.lit(7) == pl.col("cat")) & pl.col("cat").is_in([]), []),
                         ((pl.lit(7) == pl.col("cat")) & pl.lit(False), []),
                         (pl.lit(7) == pl.col("cat"), "ComputeError")):
        assert _outcome(lambda: pl.scan_parquet(tmp_path / "p.parquet").filter(expr).collect()) == polars
        assert _outcome(lambda: scan_parquet(tmp_path / "e.parquet", keys=KEYS).filter(expr).collect()) == polars


def test_a_comparison_of_a_non_strict_cast_polars_optimises_away_raises_as_polars(tmp_path: Path) -> None:
    """Regression (the long differential profile, 2026-12-03): ``c.is_in([]) & (c.cast(String,
    strict=False) == -32768)`` raises Polars' ComputeError (a string compared with a number),
    but Polars hands an IO source ``(cast == -32768) & false``, which its filter of the rows
    answers with no row; the source checked no comparison of a predicate holding a cast. Now the
    comparisons of non-strict casts are checked too, and their error raised after the casts are
    evaluated over every row (a cast's own error comes first, as over the rows in Polars)."""
    table = pa.table({"i16": pa.array([None], pa.int16()), "bin": pa.array([b"x"], pa.binary())})
    write_table(table, tmp_path / "e.parquet", encryption=encryption_config(True), kms=vector_kms(),
                bloom_filter_options={"i16": True}, row_group_size=1)
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=1)
    as_string = pl.col("i16").cast(pl.String, strict=False) == -32768
    for expr in (pl.col("i16").is_in([]) & as_string, pl.lit(False) & as_string, as_string,
                 # the cast's error over the rows comes before the comparison's
                 pl.lit(False) & as_string & (pl.col("bin").cast(pl.Int64, strict=False) == 1),
                 # a strict cast: Polars' reader answers no rows (its rows would raise)
                 pl.col("i16").is_in([]) & (pl.col("i16").cast(pl.String) == -32768)):
        polars = _outcome(lambda: pl.scan_parquet(tmp_path / "p.parquet").filter(expr).collect())
        assert _outcome(lambda: scan_parquet(tmp_path / "e.parquet", keys=KEYS).filter(expr).collect()) == polars, expr
    assert _outcome(lambda: pl.scan_parquet(tmp_path / "p.parquet").filter(pl.lit(False) & as_string).collect()) == "ComputeError"
