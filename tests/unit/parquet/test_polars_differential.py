"""The Polars IO source answers as Polars itself: a property-based differential suite (issue 28).

Random tables (integers and unsigned integers at their extremes, float32/64 with NaN, +-0.0 and
+-inf, decimals of 9, 10 and 20 digits, dates, timestamps in ms / us / ns with and without zones,
strings, categoricals, booleans, nulls) are written encrypted by our ``write_table`` with
encrypted Bloom filters on every eligible column, in row groups of 1-4 rows, and as a plaintext
copy by pyarrow (same row groups). Random Polars expressions (comparisons with literals of the
column's type and of other types: ints for decimals, dates, timestamps and floats, floats and
Decimals for ints, strings for numbers, dates for timestamps, zoned and naive datetimes, None;
literals on either side; ``is_in`` with None, empty lists and other types, ``nulls_equal``;
``is_between`` with every ``closed``; ``is_null`` / ``is_not_null``; non-strict casts; a column
compared with a column; AND / OR / NOT) are run through
``secure_bloom.parquet.polars.scan_parquet(encrypted files, keys=...).filter(expr)`` and through
``polars.scan_parquet(plaintext copy).filter(expr)``: the same rows (as a multiset), or both raise
the same Polars error class. Where Polars itself answers two ways, the IO source may answer as
Polars' own evaluation of the rows (``polars.read_parquet(copy).filter(expr)``), or raise as Polars
does over an empty frame of the schema; these cases are counted apart. Polars' reader evaluates
the predicate on row-group statistics first: it raises where the optimizer removed the failing
part from the rows' predicate (``(c.is_null() & c.is_not_null()) & (c > 2**70)``), or skips every
row group before a type error surfaces (``(s != f) & s.is_in([None])``); it wraps errors of its
evaluation (``ComputeError: parquet: ...``); and Polars checks a cast's types before a
comparison's over rows, after it over an empty frame.

Profiles: CI runs ``support.differential.CI_EXAMPLES`` tables (25), each with 1-4 expressions;
``SECURE_BLOOM_DIFF_EXAMPLES=N`` runs N (the long profile, e.g. ``SECURE_BLOOM_DIFF_EXAMPLES=1000
pytest -p no:cacheprovider -q tests/unit/parquet/test_polars_differential.py``), and
``SECURE_BLOOM_POLARS_DIFF_REPORT=path.json`` writes the counts at the end (tables, expressions,
rows, both raised, row groups read and total).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from secure_bloom.errors import UnsupportedParquetFeatureError
from secure_bloom.parquet import KeyAccess, dataset, write_table
from secure_bloom.parquet.polars import scan_dataset
from support.differential import WIDE, bloom_columns, encryption_config, examples
from support.parquet_files import vector_kms

KEYS = KeyAccess(kms=vector_kms())
TALLY: Counter[str] = Counter()
pytestmark = pytest.mark.filterwarnings("ignore:Comparisons with None always result in null:UserWarning")
PARIS = "Europe/Paris"


def _decimals(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    top = 10**precision - 1
    unscaled = st.one_of(st.sampled_from([top, -top, 0, 1, -1, 10**scale, 7 * 10**scale, 5]),
                         st.integers(-top, top), st.integers(-300, 300))
    return unscaled.map(lambda u: Decimal(u).scaleb(-scale, context=WIDE))


def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    edges = [v for v in (lo, hi, 0, 1, -1, 7, 2**53 + 1, lo + 1, hi - 1) if lo <= v <= hi]
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi), st.integers(-3, 8).filter(lambda v: lo <= v <= hi))


_FLOATS = st.one_of(st.sampled_from([0.0, -0.0, 0.1, 1.5, -2.25, float("nan"), float("inf"), float("-inf"), 7.0]),
                    st.floats(width=32), st.integers(-3, 8).map(float))
_DAYS = st.one_of(st.sampled_from([0, -1, 18262, 19723, 7]), st.integers(-20000, 40000))
_TEXT = st.one_of(st.text(alphabet="ab\u00e9", max_size=3), st.sampled_from(["", "a", "b", "7", "zz"]))


def _ticks(per_day: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from([0, 1, -1, 7, 1000, 10**6, 18262 * per_day, 18262 * per_day + per_day // 2]),
                     st.integers(-(10**4) * per_day, 3 * 10**4 * per_day))


#: name -> (Arrow type, values)
KINDS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "i8": (pa.int8(), _ints(-128, 127)), "i16": (pa.int16(), _ints(-(2**15), 2**15 - 1)),
    "i32": (pa.int32(), _ints(-(2**31), 2**31 - 1)), "i64": (pa.int64(), _ints(-(2**63), 2**63 - 1)),
    "u8": (pa.uint8(), _ints(0, 255)), "u32": (pa.uint32(), _ints(0, 2**32 - 1)), "u64": (pa.uint64(), _ints(0, 2**64 - 1)),
    "f32": (pa.float32(), _FLOATS), "f64": (pa.float64(), _FLOATS),
    "dec9": (pa.decimal128(9, 2), _decimals(9, 2)), "dec10": (pa.decimal128(10, 2), _decimals(10, 2)),
    "dec20": (pa.decimal128(20, 4), _decimals(20, 4)),
    "date": (pa.date32(), _DAYS),
    "ts_ms": (pa.timestamp("ms"), _ticks(86_400_000)), "ts_us_utc": (pa.timestamp("us", "UTC"), _ticks(86_400 * 10**6)),
    "ts_us_paris": (pa.timestamp("us", PARIS), _ticks(86_400 * 10**6)), "ts_ns": (pa.timestamp("ns"), _ticks(86_400 * 10**9)),
    "s": (pa.string(), _TEXT), "cat": (pa.dictionary(pa.int32(), pa.string()), _TEXT), "b": (pa.bool_(), st.booleans()),
    "bin": (pa.binary(), st.binary(max_size=3) | st.sampled_from([b"", b"\x00", b"\xff", b"a"])),
}


def _array(name: str, values: list[Any]) -> pa.Array:
    typ = KINDS[name][0]
    if pa.types.is_date32(typ):
        return pa.array(values, pa.int32()).view(typ)
    if pa.types.is_timestamp(typ):
        return pa.array(values, pa.int64()).view(typ)
    if pa.types.is_dictionary(typ):
        return pa.array(values, pa.string()).dictionary_encode().cast(typ)
    if pa.types.is_float32(typ):
        return pa.array(values, pa.float64()).cast(typ, safe=False)
    return pa.array(values, typ)


@st.composite
def tables(draw: Any) -> pa.Table:
    names = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4, unique=True))
    rows = draw(st.integers(0, 10))
    columns = {}
    for name in names:
        values = KINDS[name][1]
        cell = st.one_of(st.none(), values) if draw(st.booleans()) else values
        if rows and draw(st.integers(0, 9)) == 0:
            cell = st.none()  # all null
        columns[name] = _array(name, draw(st.lists(cell, min_size=rows, max_size=rows)))
    return pa.table(columns)


# ---------------------------------------------------------------- literals and expressions


def _to_datetime(days: int, zoned: bool = False) -> dt.datetime:
    out = dt.datetime(1970, 1, 1) + dt.timedelta(days=days)
    return out.replace(tzinfo=dt.timezone.utc).astimezone(dt.timezone(dt.timedelta(hours=2))) if zoned else out


def _others(name: str, value: Any) -> list[Any]:
    """Literals near a stored ``value`` of column ``name``, of its type and of others."""
    typ = KINDS[name][0]
    if value is None:
        return [None]
    out: list[Any] = []
    if pa.types.is_integer(typ):
        out += [value, float(value), Decimal(value), Decimal(value) + Decimal("0.5"), value + 1, value - 1, str(value),
                pl.lit(value, pl.Int64) if -(2**63) <= value < 2**63 else pl.lit(value, pl.UInt64), 2**70]
    elif pa.types.is_floating(typ):
        out += [value, -value, float("nan")]
        if value == value and abs(value) < 2**62:
            out += [int(value), pl.lit(value, pl.Float32)]
    elif pa.types.is_decimal(typ):
        out += [value, float(value), value + Decimal("0.005"), pl.lit(value, pl.Decimal(38, typ.scale + 1)), 10**12]
        if value == value.to_integral_value():
            out += [int(value), pl.lit(int(value), pl.Int64)]
    elif pa.types.is_date(typ):
        day = dt.date(1970, 1, 1) + dt.timedelta(days=value)
        out += [day, value, value + 1, pl.lit(value, pl.Int64), _to_datetime(value), _to_datetime(value, zoned=True), 2**40, str(day)]
    elif pa.types.is_timestamp(typ):
        per_us = {"ms": 10**-3, "us": 1, "ns": 10**3}[typ.unit]
        stamp = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value / per_us))
        lit = pl.lit(stamp, pl.Datetime("ns" if typ.unit == "ns" else "us", typ.tz)) if typ.tz else stamp
        out += [value, value + 1, pl.lit(value, pl.Int64), lit, stamp, stamp.date(), 2**70, "x"]
        if typ.tz:
            out.append(stamp.replace(tzinfo=dt.timezone.utc))
    elif pa.types.is_boolean(typ):
        out += [value, int(value), "true"]
    elif pa.types.is_binary(typ):
        out += [value, value + b"\x00", value[:-1], "a", 7]
    else:  # strings, categoricals
        out += [value, value + "a", value[:-1], 7, value.encode(), None]
        if name == "cat":
            out.append(pl.lit(value, pl.Categorical()))
    return out


def _literal(draw: Any, name: str, seen: dict[str, list[Any]]) -> Any:
    pool = seen.get(name) or []
    value = draw(st.sampled_from(pool) if pool and draw(st.booleans()) else KINDS[name][1])
    return draw(st.sampled_from(_others(name, value)))


def _sort(value: Any) -> tuple[type, bool, int]:
    """Values of one sort make one Polars list (naive or zoned datetimes; ints of Int64, UInt64, beyond)."""
    width = 0 if not isinstance(value, int) or -(2**63) <= value < 2**63 else 1 if 0 <= value < 2**64 else 2
    return type(value), getattr(value, "tzinfo", None) is None, width


_OPS = ["==", "!=", "<", "<=", ">", ">="]


def _cmp(a: Any, op: str, b: Any) -> pl.Expr:
    return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, "<=": lambda: a <= b,
            ">": lambda: a > b, ">=": lambda: a >= b}[op]()


_CASTS = [pl.Int64, pl.Float64, pl.String, pl.Int8, pl.Date, pl.Datetime("us")]


@st.composite
def predicates(draw: Any, names: list[str], seen: dict[str, list[Any]], depth: int = 2) -> pl.Expr:
    shape = draw(st.sampled_from(["leaf"] * 4 + ["and", "or", "not"])) if depth else "leaf"
    if shape in ("and", "or"):
        a, b = draw(predicates(names, seen, depth - 1)), draw(predicates(names, seen, depth - 1))
        return a & b if shape == "and" else a | b
    if shape == "not":
        return ~draw(predicates(names, seen, depth - 1))
    name = draw(st.sampled_from(names))
    col = pl.col(name)
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "flipped", "in", "between", "null", "cast", "columns"]))
    if kind == "cmp":
        return _cmp(col, draw(st.sampled_from(_OPS)), _literal(draw, name, seen))
    if kind == "flipped":
        value = _literal(draw, name, seen)
        return _cmp(value if isinstance(value, pl.Expr) else pl.lit(value), draw(st.sampled_from(_OPS)), col)
    if kind == "in":
        items = [v for v in (_literal(draw, name, seen) for _ in range(draw(st.integers(0, 3))))
                 if v is not None and not isinstance(v, pl.Expr)]
        items = [v for v in items if _sort(v) == _sort(items[0])]  # a list of one Python type
        if draw(st.booleans()):
            items.append(None)
        return col.is_in(items, nulls_equal=draw(st.booleans()))
    if kind == "between":
        low, high = _literal(draw, name, seen), _literal(draw, name, seen)
        return col.is_between(low, high, closed=draw(st.sampled_from(["both", "left", "right", "none"])))
    if kind == "null":
        return col.is_null() if draw(st.booleans()) else col.is_not_null()
    if kind == "cast":
        cast = col.cast(draw(st.sampled_from(_CASTS)), strict=False)
        return _cmp(cast, draw(st.sampled_from(_OPS)), _literal(draw, name, seen))
    other = pl.col(draw(st.sampled_from(names)))
    return _cmp(col, draw(st.sampled_from(_OPS)), other)


# ---------------------------------------------------------------- the comparison


def _outcome(run: Any) -> tuple[str, Any]:
    try:
        frame = run()
    except Exception as e:  # noqa: BLE001 - the error class is compared
        return "raised", type(e).__name__
    return "rows", sorted(repr(row) for row in frame.rows())


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    yield
    target = os.environ.get("SECURE_BLOOM_POLARS_DIFF_REPORT")
    if target:
        Path(target).write_text(json.dumps(dict(sorted(TALLY.items())), indent=1))


@settings(max_examples=examples(), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(table=tables(), group=st.integers(1, 4), data=st.data())
def test_polars_io_source_answers_as_polars(table: pa.Table, group: int, data: Any) -> None:
    names = table.column_names
    seen = {n: [v for v in _stored(table.column(n)).to_pylist() if v is not None] for n in names}
    with tempfile.TemporaryDirectory() as folder:
        encrypted, plain = Path(folder) / "encrypted.parquet", Path(folder) / "plain.parquet"
        try:
            write_table(table, encrypted, encryption=encryption_config(True), kms=vector_kms(),
                        bloom_filter_options={c: True for c in bloom_columns(table)} or None, row_group_size=group)
        except UnsupportedParquetFeatureError:
            return
        pq.write_table(table, plain, row_group_size=group)
        TALLY["tables"] += 1
        source = dataset(encrypted, keys=KEYS)
        ours = scan_dataset(source)
        for _ in range(data.draw(st.integers(1, 4))):
            expr = data.draw(predicates(names, seen))
            projected = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
            expected = _outcome(lambda: pl.scan_parquet(plain).filter(expr).select(projected).collect())
            got = _outcome(lambda: ours.filter(expr).select(projected).collect())
            TALLY["expressions"] += 1
            if got != expected:
                # Polars itself answers some predicates two ways: its reader evaluates the predicate
                # on row-group statistics first (raising where the optimizer removed the failing
                # part from the rows' predicate, or skipping every row group before a type error
                # surfaces) and wraps errors of its evaluation ("ComputeError: parquet: ..."); over
                # an empty frame it checks a cast's types after a comparison's. The IO source must
                # then answer as Polars does over the rows, or raise as it does over an empty frame.
                in_memory = _outcome(lambda: pl.read_parquet(plain).filter(expr).select(projected))
                empty = _outcome(lambda: pl.DataFrame(schema=ours.collect_schema()).filter(expr))
                assert got == in_memory or (got[0] == "raised" and got == empty), (
                    str(expr), table.to_pylist(), group, expected, in_memory, empty)
                TALLY[f"Polars' reader {expected[0]}, Polars over the rows {in_memory[0]}: as over the "
                      f"{'rows' if got == in_memory else 'empty frame'}"] += 1
                continue
            assert got == expected, (str(expr), table.to_pylist(), group)
            TALLY["both raised" if expected[0] == "raised" else "rows compared"] += 1
            TALLY["rows"] += len(expected[1]) if expected[0] == "rows" else 0
            if source.last_report is not None and expected[0] == "rows":
                TALLY["row groups total"] += source.last_report.row_groups_total
                TALLY["row groups read"] += source.last_report.row_groups_read


def _stored(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as its kind's strategy draws values (days, ticks, strings): literals are built from those."""
    typ = column.type
    if pa.types.is_date32(typ):
        return column.cast(pa.int32())
    if pa.types.is_timestamp(typ):
        return column.cast(pa.int64())
    return column.cast(typ.value_type) if pa.types.is_dictionary(typ) else column
