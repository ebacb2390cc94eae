"""Hypothesis strategies and a runner for the differential suite of pruned reads.

Tables: columns of most Arrow types the Parquet writers support (integers and unsigned integers at
their extremes, float16/32/64 with NaN, +-0.0 and +-inf, decimal128/256 at small and 38/76 digits,
date32/64, time32/64, timestamps in every unit with and without zones and durations (at and just beyond
the end of every finer unit's range, where Arrow's cast of the column to that unit raises), strings (some long enough to
lose exact statistics), binary, fixed-size binary, dictionaries, a struct leaf, booleans; views are
left out: see :data:`PASSENGERS`), nulls, all-null columns, empty files, and schema evolution across files (a later
file storing a column narrower, or not at all). Predicates: == != < <= > >= in, not in, is_null,
is_valid, AND / OR / NOT, with literals of the column's type and of OTHER types (ints for floats,
floats and decimals of other precisions for ints and decimals, timestamps for dates, other units and
zones for timestamps (also negative ones of a finer unit, which Arrow never narrows), bytes for strings), present, absent, at and beyond the column's extremes.

:func:`compare` writes one case with one writer and checks that ``secure_bloom`` reads exactly
pyarrow's rows (as a multiset), or that both raise the same error class.
"""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from dataclasses import dataclass, field
from decimal import Context, Decimal
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
from hypothesis import strategies as st

#: A 100-digit context: every decimal here is exact (the default 28-digit context is not).
WIDE = Context(prec=100)

#: SECURE_BLOOM_DIFF_EXAMPLES: examples per writer (the long profile); the CI profile's default.
CI_EXAMPLES = 25


def examples() -> int:
    return int(os.environ.get("SECURE_BLOOM_DIFF_EXAMPLES", CI_EXAMPLES))


def _ints(typ: pa.DataType) -> st.SearchStrategy[int]:
    bits = typ.bit_width
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(typ) else (0, (1 << bits) - 1)
    edges = [v for v in (lo, hi, 0, 1, -1, 2**24 + 1, 2**53, 2**53 + 1, -(2**53) - 1, 2**63, lo + 1, hi - 1)
             if lo <= v <= hi]
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi), st.integers(-3, 3).filter(lambda v: lo <= v <= hi))


_FLOAT_EDGES = [0.0, -0.0, 0.1, 0.7, 1.5, -2.25, float("nan"), float("inf"), float("-inf"), 16777217.0, 2.0**53 + 2,
                3.4028234663852886e38, 5e-324]


def _floats(width: int) -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(_FLOAT_EDGES), st.floats(width=width), st.integers(-3, 3).map(float))


def _decimals(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    top = 10**precision - 1
    edges = [top, -top, 0, 1, -1, 10**scale, 10**scale + 5 * 10 ** max(scale - 1, 0)]
    unscaled = st.one_of(st.sampled_from(edges), st.integers(-top, top), st.integers(-300, 300))
    return unscaled.map(lambda u: Decimal(u).scaleb(-scale, context=WIDE))


_DAY0 = dt.date(1970, 1, 1)
_UNIT = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


@dataclass(frozen=True)
class Kind:
    """A column kind: its Arrow type, how its values are drawn (Python values or stored ints)."""

    name: str
    type: pa.DataType
    values: st.SearchStrategy[Any]

    def array(self, values: list[Any]) -> pa.Array:
        typ = self.type
        if pa.types.is_float16(typ):
            mask = np.array([v is None for v in values], dtype=bool)
            data = np.array([0.0 if v is None else v for v in values], dtype=np.float16)
            return pa.array(data, type=typ, mask=mask)
        if pa.types.is_timestamp(typ) or pa.types.is_time64(typ) or pa.types.is_date64(typ) or pa.types.is_duration(typ):
            return pa.array(values, pa.int64()).view(typ)
        if pa.types.is_time32(typ) or pa.types.is_date32(typ):
            return pa.array(values, pa.int32()).view(typ)
        if pa.types.is_dictionary(typ):
            return pa.array(values, typ.value_type).dictionary_encode()
        if pa.types.is_struct(typ):
            return pa.array([None if v is None else {"a": v} for v in values], typ)
        return pa.array(values, typ)


_NS_SAFE = (-(2**62), 2**62)


def unit_range_edges(unit: str) -> list[int]:
    """Values of a ``unit`` timestamp at and just beyond the ends of every finer unit's range
    (a cast to that unit, which Arrow applies to the column when the literal is finer, accepts
    the first and raises on the second): e.g. for ``us``, 2262-04-11T23:47:16.854775 and .854776."""
    out = []
    for finer in _UNIT:
        if _UNIT[finer] > _UNIT[unit]:
            end = (2**63 - 1) * _UNIT[unit] // _UNIT[finer]
            out += [end, end + 1, -end, -end - 1]
    return out


def _kinds() -> list[Kind]:
    out = [Kind(f"{'' if s else 'u'}int{b}", getattr(pa, f"{'' if s else 'u'}int{b}")(),
                _ints(getattr(pa, f"{'' if s else 'u'}int{b}")())) for b in (8, 16, 32, 64) for s in (True, False)]
    out += [Kind("float16", pa.float16(), st.sampled_from([0.0, -0.0, 1.5, -2.0, float("nan"), float("inf"), 65504.0])),
            Kind("float32", pa.float32(), _floats(32)), Kind("float64", pa.float64(), _floats(64))]
    out += [Kind(f"dec{p}_{s}", (pa.decimal128 if p <= 38 else pa.decimal256)(p, s), _decimals(p, s))
            for p, s in ((5, 2), (5, 0), (10, 2), (20, 2), (29, 1), (38, 10), (40, 0), (76, 20))]
    ns_days = (2**63 - 1) // (86_400 * 10**9)  # the last day timestamp[ns] holds; the next one raises there
    days = st.one_of(st.sampled_from([0, -1, 19723, 2932896, -719162, ns_days, ns_days + 1, -ns_days, -ns_days - 1]),
                     st.integers(-800000, 3000000))
    out += [Kind("date32", pa.date32(), days), Kind("date64", pa.date64(), days.map(lambda d: d * 86_400_000))]
    out += [Kind("time32s", pa.time32("s"), st.integers(0, 86399)), Kind("time32ms", pa.time32("ms"), st.integers(0, 86_399_999)),
            Kind("time64us", pa.time64("us"), st.integers(0, 86_399_999_999)),
            Kind("time64ns", pa.time64("ns"), st.integers(0, 86_399_999_999_999))]
    for unit in ("s", "ms", "us", "ns"):
        for tz in (None, "UTC", "Europe/Paris"):
            if unit in ("s", "ms") and tz == "Europe/Paris":
                continue
            per_day = 86400 * _UNIT[unit]
            limit = 2**62 // (10**6 // _UNIT[unit]) if unit in ("s", "ms") else 2**62  # fits micros (writers convert)
            edges = [e for e in unit_range_edges(unit) if -limit <= e <= limit] or [0]
            stored = st.one_of(st.integers(-limit, limit), st.sampled_from([0, 1, -1, 19723 * per_day, 19723 * per_day + per_day // 2]),
                               st.integers(-3, 3).map(lambda d, p=per_day: (19723 + d) * p), st.sampled_from(edges))
            out.append(Kind(f"ts_{unit}_{tz}", pa.timestamp(unit, tz=tz), stored))
    for unit in ("s", "ms", "us", "ns"):
        out.append(Kind(f"dur_{unit}", pa.duration(unit), st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3),
                                                                    st.sampled_from(unit_range_edges(unit) or [2**63 - 1, -(2**63)]))))
    text = st.one_of(st.text(alphabet="ab\u00e9\U0001F600", max_size=5),
                     st.integers(70, 200).map(lambda n: "z" * n), st.sampled_from(["", "a", "b", "\uffff"]))
    raw = st.binary(max_size=6) | st.sampled_from([b"", b"\x00", b"\xff" * 3])
    out += [Kind("string", pa.string(), text), Kind("large_string", pa.large_string(), text),
            Kind("binary", pa.binary(), raw), Kind("fsb4", pa.binary(4), st.binary(min_size=4, max_size=4)),
            Kind("dict", pa.dictionary(pa.int32(), pa.string()), text),
            Kind("struct", pa.struct([("a", pa.int32())]), _ints(pa.int32())), Kind("bool", pa.bool_(), st.booleans())]
    return out


KINDS = _kinds()
KIND_BY_NAME = {k.name: k for k in KINDS}


# ---------------------------------------------------------------- literals of many types


def _int_literals(v: int) -> list[pa.Scalar]:
    out = []
    for typ in (pa.int64(), pa.uint64(), pa.int8(), pa.int32()):
        lo, hi = (0, 2**64 - 1) if typ == pa.uint64() else (-(1 << (typ.bit_width - 1)), (1 << (typ.bit_width - 1)) - 1)
        if lo <= v <= hi:
            out.append(pa.scalar(v, typ))
    out += [pa.scalar(float(v)), pa.scalar(float(v), pa.float32()), pa.scalar(v + 0.5)]
    if abs(v) < 10**37:
        out += [pa.scalar(Decimal(v), pa.decimal128(38, 0)), pa.scalar(Decimal(v) + Decimal("0.5"), pa.decimal128(38, 1))]
    return out


def _float_literals(f: float) -> list[pa.Scalar]:
    out = [pa.scalar(f), pa.scalar(f, pa.float32())]
    if f == f and abs(f) != float("inf"):
        if abs(f) < 2**62:
            out.append(pa.scalar(int(f)))
        d = Decimal(repr(f))
        if d.adjusted() < 20 and -d.as_tuple().exponent <= 10:  # type: ignore[operator]
            out.append(pa.scalar(d, pa.decimal128(38, 10)))
    return out


def _decimal_literals(d: Decimal, typ: pa.DataType) -> list[pa.Scalar]:
    out = [pa.scalar(d, typ), pa.scalar(float(d))]
    if typ.precision + 1 <= 38:
        out.append(pa.scalar(d, pa.decimal128(typ.precision + 1, typ.scale + 1)))
    out.append(pa.scalar(d, pa.decimal256(76, typ.scale)))
    if d == d.to_integral_value() and abs(d) < 2**62:
        out.append(pa.scalar(int(d)))
    if typ.scale > 0 and typ.precision > 3:
        try:
            out.append(pa.scalar(d, pa.decimal128(typ.precision - 1, typ.scale - 1)))
        except (pa.ArrowException, ValueError):
            pass
    return out


def _temporal_literals(kind: Kind, stored: int) -> list[pa.Scalar]:
    typ = kind.type
    same = kind.array([stored])[0]
    out = [same]
    if pa.types.is_date(typ):
        days = stored // 86_400_000 if pa.types.is_date64(typ) else stored
        out.append(pa.array([days], pa.int32()).view(pa.date32())[0])
        if abs(days) < 100000:
            us = days * 86_400_000_000
            out += [pa.array([us], pa.int64()).view(pa.timestamp("us"))[0],
                    pa.array([us + 43_200_000_000], pa.int64()).view(pa.timestamp("us"))[0],
                    pa.array([days * 86400], pa.int64()).view(pa.timestamp("s", tz="UTC"))[0]]
        out.append(pa.array([-1000], pa.int64()).view(pa.timestamp("ns"))[0])  # the column is cast to ns
    elif pa.types.is_timestamp(typ):
        for unit in ("s", "ms", "us", "ns"):
            scaled = stored * _UNIT[unit] // _UNIT[typ.unit]
            if -(2**63) <= scaled < 2**63:
                out.append(pa.array([scaled], pa.int64()).view(pa.timestamp(unit, tz=typ.tz))[0])
            if _UNIT[unit] > _UNIT[typ.unit]:  # a negative finer literal is never narrowed: the column is cast
                before = -(_UNIT[unit] // _UNIT[typ.unit])
                out.append(pa.array([before], pa.int64()).view(pa.timestamp(unit, tz=typ.tz))[0])
        other = None if typ.tz else "UTC"
        out.append(pa.array([stored], pa.int64()).view(pa.timestamp(typ.unit, tz=other))[0])
        days = stored // (86400 * _UNIT[typ.unit])
        if -700000 < days < 2900000:
            out.append(pa.array([days], pa.int32()).view(pa.date32())[0])
    elif pa.types.is_duration(typ):
        for unit in ("s", "ms", "us", "ns"):
            scaled = stored * _UNIT[unit] // _UNIT[typ.unit]
            if -(2**63) <= scaled < 2**63:
                out.append(pa.array([scaled], pa.int64()).view(pa.duration(unit))[0])
            if _UNIT[unit] > _UNIT[typ.unit]:
                out.append(pa.array([-(_UNIT[unit] // _UNIT[typ.unit])], pa.int64()).view(pa.duration(unit))[0])
    elif pa.types.is_time(typ):
        for unit, t in (("s", pa.time32("s")), ("ms", pa.time32("ms")), ("us", pa.time64("us")), ("ns", pa.time64("ns"))):
            scaled = stored * _UNIT[unit] // _UNIT[typ.unit]
            out.append(pa.array([scaled], pa.int32() if unit in ("s", "ms") else pa.int64()).view(t)[0])
    return out


def literals_for(kind: Kind, value: Any) -> list[pa.Scalar]:
    """Literals near ``value`` (a value of ``kind``) in the column's type and in others."""
    typ = kind.type
    if pa.types.is_struct(typ):
        return _int_literals(value)
    if pa.types.is_integer(typ):
        return _int_literals(value)
    if pa.types.is_floating(typ):
        return _float_literals(value)
    if pa.types.is_decimal(typ):
        return _decimal_literals(value, typ)
    if pa.types.is_temporal(typ):
        return _temporal_literals(kind, value)
    if pa.types.is_boolean(typ):
        return [pa.scalar(value)]
    if isinstance(value, str):
        return [pa.scalar(value), pa.scalar(value, pa.large_string()), pa.scalar(value.encode("utf-8"))]
    out = [pa.scalar(value, pa.binary())]
    try:
        out.append(pa.scalar(value.decode("utf-8")))
    except UnicodeDecodeError:
        pass
    return out


# ---------------------------------------------------------------- cases


@dataclass
class Case:
    """One generated case: the files' tables, and the predicates (Expressions) to compare."""

    files: list[pa.Table]
    row_group_size: int
    #: (Expression, the columns it names)
    predicates: list[tuple[Any, frozenset[str]]]


#: Kinds never filtered on and projected out of the reads (none at present). String and binary
#: views are not generated: pyarrow 26's filtered scans of files holding a view column raise
#: ("array_filter has no kernel matching (string_view, bool)") depending on its own row-group
#: statistics, projected out or not, so no pruned read could match them.
PASSENGERS: tuple[str, ...] = ()

_OPS = ["==", "!=", "<", "<=", ">", ">=", "in", "not in", "is_null", "is_valid"]


def _leaf(name: str, op: str, literals: list[pa.Scalar]) -> Any:
    ref = pc.field(name, "a") if name.startswith("struct") else pc.field(name)
    if op == "is_null":
        return ref.is_null()
    if op == "is_valid":
        return ref.is_valid()
    if op in ("in", "not in"):
        expr = ref.isin(pa.array([x for x in literals if x.type.equals(literals[0].type)]))
        return ~expr if op == "not in" else expr
    fn = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}[op]
    return fn(ref, pc.scalar(literals[0]))


@st.composite
def cases(draw: Any, max_columns: int = 3, max_rows: int = 9) -> Case:
    """A case: 1-2 files of the same columns (the second may evolve), 1-4 predicates."""
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=max_columns, unique_by=lambda k: k.name))
    n_files = draw(st.integers(1, 2))
    tables, columns_values = [], {}
    for f in range(n_files):
        rows = draw(st.integers(0, max_rows))
        cols = {}
        for kind in kinds:
            all_null = draw(st.booleans()) if rows and draw(st.integers(0, 9)) == 0 else False
            nulls = st.none() if all_null else st.one_of(st.none(), kind.values) if draw(st.booleans()) else kind.values
            values = draw(st.lists(nulls, min_size=rows, max_size=rows))
            columns_values.setdefault(kind.name, []).extend(v for v in values if v is not None)
            cols[kind.name] = kind.array(values)
        table = pa.table(cols)
        if f == 1 and draw(st.integers(0, 3)) == 0:  # schema evolution: narrower or missing
            name = draw(st.sampled_from(table.column_names))
            typ = table.schema.field(name).type
            if typ in (pa.int64(), pa.int32()) and draw(st.booleans()):
                narrow = pa.int16() if typ == pa.int32() else pa.int32()
                try:
                    table = table.set_column(table.schema.get_field_index(name), name, table[name].cast(narrow))
                except pa.ArrowInvalid:
                    pass
            elif len(table.column_names) > 1:
                table = table.drop_columns([name])
        tables.append(table)
    predicates = [draw(_predicate(kinds, columns_values, depth=2)) for _ in range(draw(st.integers(1, 4)))]
    return Case(tables, draw(st.integers(1, 4)), predicates)


@st.composite
def _predicate(draw: Any, kinds: list[Kind], values: dict[str, list[Any]], depth: int) -> Any:
    shape = draw(st.sampled_from(["leaf", "leaf", "leaf", "and", "or", "not"])) if depth else "leaf"
    if shape in ("and", "or"):
        (a, na), (b, nb) = draw(_predicate(kinds, values, depth - 1)), draw(_predicate(kinds, values, depth - 1))
        return (a & b if shape == "and" else a | b), na | nb
    if shape == "not":
        a, na = draw(_predicate(kinds, values, depth - 1))
        return ~a, na
    kind = draw(st.sampled_from([k for k in kinds if k.name not in PASSENGERS] or kinds))
    op = draw(st.sampled_from(_OPS))
    names = frozenset([kind.name])
    if op in ("is_null", "is_valid"):
        return _leaf(kind.name, op, []), names
    present = values.get(kind.name) or []
    pool = st.one_of(st.sampled_from(present), kind.values) if present else kind.values
    n = draw(st.integers(1, 3)) if op in ("in", "not in") else 1
    drawn = [draw(pool) for _ in range(n)]
    form = draw(st.integers(0, 20))
    literals = []
    for v in drawn:
        options = literals_for(kind, v)
        literals.append(options[form % len(options)])
    return _leaf(kind.name, op, literals), names


# ---------------------------------------------------------------- writers and the comparison


ELIGIBLE_BLOOM = (pa.types.is_integer, pa.types.is_float32, pa.types.is_float64, pa.types.is_decimal,
                  pa.types.is_date32, pa.types.is_timestamp, pa.types.is_string, pa.types.is_large_string,
                  pa.types.is_binary, pa.types.is_fixed_size_binary)


def bloom_columns(table: pa.Table) -> list[str]:
    return [f.name for f in table.schema if any(test(f.type) for test in ELIGIBLE_BLOOM)]


_POLARS_OK = (pa.types.is_integer, pa.types.is_float32, pa.types.is_float64, pa.types.is_date32,
              pa.types.is_timestamp, pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
              pa.types.is_boolean)


def _polars_ok(typ: pa.DataType) -> bool:
    if pa.types.is_decimal128(typ):
        return True
    return any(test(typ) for test in _POLARS_OK)


def _duckdb_ok(typ: pa.DataType) -> bool:
    return _polars_ok(typ) or pa.types.is_time(typ) or pa.types.is_date64(typ) or pa.types.is_struct(typ)


@dataclass
class Tally:
    """What the suite compared, per writer."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, writer: str, what: str, n: int = 1) -> None:
        self.counts[f"{writer}:{what}"] += n


TALLY = Tally()


def _rows(table: pa.Table) -> list[str]:
    return sorted(repr(sorted(row.items())) for row in table.to_pylist())


def _outcome(read: Callable[[], pa.Table]) -> tuple[str, Any]:
    try:
        return "rows", _rows(read())
    except Exception as e:  # noqa: BLE001 - the error CLASS is compared
        return "raises", type(e).__name__


#: A writer: (the files, the KeyAccess to read them, the columns written) or None (cannot write).
Writer = Callable[[Case, Path], "tuple[list[Path], Any, set[str]] | None"]


def compare(case: Case, writer: str, folder: Path, write: Writer, read_table: Callable[..., pa.Table],
            reference_format: Callable[[Any], Any]) -> None:
    """Write ``case`` with ``write`` (None: the writer cannot write these types) and assert that
    ``read_table`` returns pyarrow's rows for every predicate, or that both raise alike."""
    written = write(case, folder)
    if written is None:
        TALLY.add(writer, "skipped")
        return
    paths, keys, present = written
    TALLY.add(writer, "tables", len(paths))
    TALLY.add(writer, "row_groups", sum(max(1, -(-t.num_rows // case.row_group_size)) for t in case.files))
    columns = sorted(c for c in present if c not in PASSENGERS)
    for expr, names in case.predicates:
        if not names <= present or names & set(PASSENGERS) or not columns:
            continue
        expected = _outcome(lambda: ds.dataset(folder, format=reference_format(keys), partitioning="hive")
                            .to_table(columns=columns, filter=expr))
        ours = _outcome(lambda: read_table(folder, columns=columns, filters=expr, keys=keys))
        TALLY.add(writer, "predicates")
        TALLY.add(writer, "both_raise" if expected[0] == "raises" else "matching_rows",
                  1 if expected[0] == "raises" else len(expected[1]))
        assert ours == expected, f"{writer}: filter {expr}\nexpected {expected}\ngot {ours}\nfiles {case.files}"


def columns_of(case: Case) -> set[str]:
    return set().union(*(t.column_names for t in case.files))


def write_pyarrow(case: Case, folder: Path) -> tuple[list[Path], Any, set[str]]:
    """pyarrow's plain writer, with its Bloom filters on every column it can give one."""
    paths = []
    for i, table in enumerate(case.files):
        path = folder / f"part-{i}.parquet"
        pq.write_table(table, path, row_group_size=case.row_group_size,
                       bloom_filter_options={c: True for c in bloom_columns(table)} or None)
        paths.append(path)
    return paths, None, columns_of(case)


def encryption_config(uniform: bool) -> pe.EncryptionConfiguration:
    return pe.EncryptionConfiguration(footer_key="kf", uniform_encryption=True) if uniform else \
        pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": []})


def sql_literal(value: Any) -> str | None:
    """A DuckDB SQL literal for ints and plain strings (None: not translated)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and "'" not in value:
        return "'" + value + "'"
    return None


def duckdb_count(folder: Path, column: str, op: str, value: Any) -> int | None:
    """DuckDB's count of ``column op value`` over the plaintext files (None: not translated)."""
    import duckdb

    literal = sql_literal(value)
    if literal is None or op not in ("==", "!=", "<", "<=", ">", ">="):
        return None
    sql_op = "=" if op == "==" else op
    con = duckdb.connect()
    try:
        query = f"SELECT count(*) FROM read_parquet('{folder}/*.parquet', union_by_name=true) WHERE \"{column}\" {sql_op} {literal}"
        row = con.execute(query).fetchone()
        return int(row[0]) if row else None
    finally:
        con.close()
