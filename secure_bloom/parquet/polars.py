"""Polars: a LazyFrame over Parquet files that prunes row groups with Polars' own predicate.

:func:`scan_parquet` is a Polars IO source (``polars.io.plugins.register_io_source``) with
predicate and projection pushdown over a :class:`~.pruning_dataset.PruningDataset`. Polars gives
the source the query's predicate as a Polars expression, after its own type coercion;
:func:`arrow_predicate` translates what it can of it into a pyarrow Expression the pruner reads
(``==``, ``!=``, ranges, ``is_in``, ``is_between``, ``is_null`` / ``is_not_null``, AND / OR / NOT
over columns and literals), only row groups that translation may match are read, and the source
then filters the rows with the Polars predicate itself, so the rows are exactly Polars' own.

Translation follows Polars' semantics, never pyarrow's: a literal is bound to the column's own
type (exactly, or the part is not translated), so the pruner compares values of one type, where
Arrow and Polars agree. Bound are: a literal of the column's own Polars type; an integer or
decimal literal against an integer or decimal column (Polars compares those by value); an integer
against a Date or Datetime column (Polars compares it with the stored days / ticks); a string
against a Categorical. NaN equals NaN and sorts above every number in Polars: on floating-point
columns ``>`` and ``>=`` are used only where they rule rows out under a negation, a NaN literal is
not used, and ``is_in`` of 0.0 looks for -0.0 too. Each part is translated for what it must
keep: the rows Polars keeps (the predicate), or, under a NOT, the rows Polars rejects; a part
that cannot be translated (another function, a cast, a column compared with a column, literals
of other types) is simply not used for pruning, and a predicate holding a part that may raise on
some values or types (a cast, arithmetic, a function not known to be total) is not used at all, so
Polars sees every row and raises where it would. Type errors are Polars' own whatever survives
pruning (raised, as Polars raises them, when the files hold rows): each comparison of a column
with literals or a column is first applied on its own to an empty frame of the schema (Polars'
reader checks them even where its optimizer has removed them from the predicate it hands an IO
source; comparisons of non-strict casts too, their error raised after the casts are evaluated over
every row, since a cast's own error comes first), and when no row survives, the whole predicate
is. Checked with polars 2.1; a form this code does
not know is, like any other untranslatable part, not pruned.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from polars.io.plugins import register_io_source

from .file.keys import KeyAccess
from .file.sources import resolve
from .read.prune_cache import PruneCache
from .read.pruning_dataset import PruningDataset
from .read.api import dataset

__all__ = ["scan_parquet", "scan_dataset", "arrow_predicate"]

_COMPARE = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_AND = ("And", "LogicalAnd")
_OR = ("Or", "LogicalOr")
#: BinaryExpr operators that never raise on values (comparisons, logic).
_TOTAL_OPS = frozenset([*_COMPARE, *_AND, *_OR, "Xor", "EqValidity", "NotEqValidity"])
#: String functions that never raise on values (a regex ``contains`` may: not listed).
_TOTAL_STRING = frozenset(["StartsWith", "EndsWith", "LenBytes", "LenChars"])
#: Every decimal here is exact (the default 28-digit context is not).
_WIDE = Context(prec=100)


def _compare(field: pc.Expression, op: str, value: pa.Scalar) -> pc.Expression:
    return {"==": field == value, "!=": field != value, "<": field < value, "<=": field <= value,
            ">": field > value, ">=": field >= value}[op]


def _may_raise(node: Any, but_casts: bool = False) -> bool:
    """Whether evaluating the expression tree ``node`` may raise on some values or types (a cast,
    arithmetic, a function not known to be total): such a predicate is not used for pruning.
    ``but_casts``: whether it may raise in a part other than a non-strict cast."""
    if isinstance(node, list):
        return any(_may_raise(n, but_casts) for n in node)
    if not isinstance(node, dict):
        return False
    if set(node) <= {"Column", "Literal"}:
        return False
    if "Alias" in node:
        return _may_raise(node["Alias"][:1], but_casts)
    if "BinaryExpr" in node:
        b = node["BinaryExpr"]
        return b.get("op") not in _TOTAL_OPS or _may_raise([b.get("left"), b.get("right")], but_casts)
    if "Cast" in node:  # strict: on values; non-strict too, on values Polars cannot cast (b"x" to Int64)
        return not (but_casts and _non_strict(node)) or _may_raise(node["Cast"].get("expr"), but_casts)
    if "Ternary" in node:
        return _may_raise(list(node["Ternary"].values()), but_casts)
    if "Function" in node:
        fn = node["Function"].get("function")
        kind = next(iter(fn), None) if isinstance(fn, dict) else None
        total = kind == "Boolean" or (kind == "StringExpr" and (
            fn["StringExpr"] in _TOTAL_STRING
            or (isinstance(fn["StringExpr"], dict) and (fn["StringExpr"].get("Contains") or {}).get("literal") is True)))
        return not total or _may_raise(node["Function"].get("input") or [], but_casts)
    return True


def _non_strict(node: Any) -> bool:
    """Whether ``node`` is a non-strict cast (``.cast(..., strict=False)``)."""
    return isinstance(node, dict) and isinstance(node.get("Cast"), dict) and node["Cast"].get("options") == "NonStrict"


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every node of an expression tree (Polars' JSON form), outermost first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _nodes(item)


def _integral(value: Any) -> int | None:
    """``value`` as an int when it is a whole int or Decimal, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value(context=_WIDE):
        return int(value)
    return None


class _Translate:
    """A Polars expression's JSON tree -> a pyarrow Expression over the same rows' values.

    ``part(node, keep)``: for ``keep=True`` an Expression true wherever the Polars expression is
    true (it may be true elsewhere); for ``keep=False`` one false wherever Polars' is false. A NOT
    swaps the two; None: no such Expression is known."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.polars = pl.from_arrow(schema.empty_table()).schema  # type: ignore[union-attr]

    def value_type(self, column: str) -> pa.DataType:
        typ = self.schema.field(column).type
        return typ.value_type if pa.types.is_dictionary(typ) else typ

    @staticmethod
    def literal(node: Any) -> pl.Series | None:
        """A literal node's value(s), as Polars evaluates it (a list literal: its items)."""
        if not isinstance(node, dict) or set(node) != {"Literal"}:
            return None
        try:
            expr = pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
            series = pl.select(expr.alias("v")).to_series()
            if isinstance(series.dtype, (pl.List, pl.Array)):
                if series.len() != 1:
                    return None
                series = series[0]  # the list's items (an empty list: no item, not a null)
        except Exception:  # noqa: BLE001 - any literal Polars cannot evaluate alone: not pruned
            return None
        return series

    def column(self, node: Any) -> str | None:
        """The column a node names, when the dataset has it (and Polars reads it as Arrow types it)."""
        if not (isinstance(node, dict) and isinstance(node.get("Column"), str)):
            return None
        name: str = node["Column"]
        if self.schema.get_field_index(name) < 0 or name not in self.polars:
            return None
        return name

    def bind(self, column: str, values: pl.Series) -> list[pa.Scalar | None] | None:
        """Each value of ``values`` as a scalar of the column's Arrow type that Polars' comparison
        with the column treats exactly as the value (None for a value no stored value equals);
        None when Polars does not compare the two types by value."""
        own, lit, arrow = self.polars[column], values.dtype, self.value_type(column)
        try:
            if own.is_integer() and (lit.is_integer() or isinstance(lit, pl.Decimal)):
                return [self._scalar([_integral(v)], arrow) for v in values.to_list()]
            if isinstance(own, pl.Decimal) and (lit.is_integer() or isinstance(lit, pl.Decimal)):
                return [self._decimal(v, arrow) for v in values.to_list()]
            if isinstance(own, (pl.Date, pl.Datetime)) and lit.is_integer():
                return [self._temporal(v, own, arrow) for v in values.to_list()]
            same = own == lit or (isinstance(own, pl.Categorical) and isinstance(lit, (pl.String, pl.Categorical)))
            if not same or pa.types.is_float16(arrow):
                return None
            got = values.to_arrow()
            if pa.types.is_dictionary(got.type):
                got = got.dictionary_decode()
            out = got.cast(arrow, safe=True)
            if not out.cast(got.type).equals(got):  # not exact (a unit, NaN): not bound
                return None
            return [out[i] for i in range(len(out))]
        except (pa.ArrowException, OverflowError, ValueError, TypeError):
            return None

    @staticmethod
    def _scalar(value: list[Any], arrow: pa.DataType) -> pa.Scalar | None:
        if value[0] is None:
            return None
        try:
            return pa.array(value, arrow)[0]
        except (pa.ArrowException, OverflowError):
            return None  # beyond the column's type: no stored value equals it

    @staticmethod
    def _decimal(value: Any, arrow: pa.DataType) -> pa.Scalar | None:
        if value is None or not pa.types.is_decimal(arrow):
            return None
        d = Decimal(value)
        unscaled = d.scaleb(arrow.scale, context=_WIDE)
        if unscaled != unscaled.to_integral_value(context=_WIDE) or abs(unscaled) >= 10**arrow.precision:
            return None
        return pa.array([d], arrow)[0]

    @staticmethod
    def _temporal(value: Any, own: pl.DataType, arrow: pa.DataType) -> pa.Scalar | None:
        if value is None:
            return None
        try:
            if isinstance(own, pl.Date):  # days
                typed = pa.array([value], pa.int32()).view(pa.date32())
            else:  # the ticks of Polars' unit
                typed = pa.array([value], pa.int64()).view(pa.timestamp(own.time_unit, own.time_zone))  # type: ignore[attr-defined]
            return typed.cast(arrow, safe=True)[0]
        except (pa.ArrowException, OverflowError):
            return None

    def part(self, node: Any, keep: bool) -> pc.Expression | None:
        if not isinstance(node, dict):
            return None
        if set(node) == {"Literal"}:  # a constant Polars left in (``false & x``): it keeps no row or every row
            scalar = node["Literal"].get("Scalar") if isinstance(node["Literal"], dict) else None
            value = scalar.get("Boolean") if isinstance(scalar, dict) else None
            return pc.scalar(value == keep) if isinstance(value, bool) else None
        if "BinaryExpr" in node:
            return self.binary(node["BinaryExpr"], keep)
        if "Function" in node:
            return self.function(node["Function"], keep)
        return None

    def binary(self, b: dict[str, Any], keep: bool) -> pc.Expression | None:
        op = b.get("op")
        if op in _AND or op in _OR:
            left, right = self.part(b.get("left"), keep), self.part(b.get("right"), keep)
            # (keep true) AND: either side alone implies; OR: both needed. (keep false) the reverse.
            if (op in _AND) == keep:
                parts = [p for p in (left, right) if p is not None]
                return None if not parts else parts[0] if len(parts) == 1 else parts[0] & parts[1]
            if left is None or right is None:
                return None
            return left & right if op in _AND else left | right
        if op not in _COMPARE:
            return None
        op = _COMPARE[op]
        left, right = b.get("left"), b.get("right")
        if self.column(left) is None and self.column(right) is not None:
            left, right, op = right, left, _FLIP[op]
        column = self.column(left)
        values = self.literal(right)
        if column is None or values is None or values.len() != 1:
            return None
        return self.leaf(column, op, values, keep)

    def leaf(self, column: str, op: str, values: pl.Series, keep: bool) -> pc.Expression | None:
        bound = self.bind(column, values)
        if bound is None or bound[0] is None:
            return None
        value = bound[0]
        if pa.types.is_floating(value.type):
            if value.as_py() != value.as_py():  # NaN: equal to NaN, above every number in Polars
                return None
            if keep and op in (">", ">="):  # Polars keeps NaN there, Arrow does not
                return None
        return _compare(pc.field(column), op, value)

    def function(self, f: dict[str, Any], keep: bool) -> pc.Expression | None:
        fn, inputs = f.get("function"), f.get("input") or []
        if not isinstance(fn, dict) or "Boolean" not in fn:
            return None
        kind = fn["Boolean"]
        if kind == "Not" and len(inputs) == 1:
            inner = self.part(inputs[0], not keep)
            return ~inner if inner is not None else None
        column = self.column(inputs[0]) if inputs else None
        if column is None:
            return None
        if kind in ("IsNull", "IsNotNull") and len(inputs) == 1:
            field = pc.field(column)
            return field.is_null() if kind == "IsNull" else field.is_valid()
        if isinstance(kind, dict) and "IsIn" in kind and len(inputs) == 2:
            return self.is_in(column, inputs[1], bool((kind["IsIn"] or {}).get("nulls_equal")))
        if isinstance(kind, dict) and "IsBetween" in kind and len(inputs) == 3:
            closed = (kind["IsBetween"] or {}).get("closed", "Both")
            bounds = [self.literal(inputs[1]), self.literal(inputs[2])]
            if any(b is None or b.len() != 1 for b in bounds):
                return None
            low = self.leaf(column, ">=" if closed in ("Both", "Left") else ">", bounds[0], keep)  # type: ignore[arg-type]
            high = self.leaf(column, "<=" if closed in ("Both", "Right") else "<", bounds[1], keep)  # type: ignore[arg-type]
            if low is not None and high is not None:
                return low & high
            return (low if low is not None else high) if keep else None  # an AND of the two
        return None

    def is_in(self, column: str, node: Any, nulls_equal: bool) -> pc.Expression | None:
        """``column.is_in(values)``: true and false exactly where Polars' is (nulls aside)."""
        values = self.literal(node)
        if values is None:
            return None
        bound = self.bind(column, values.drop_nulls())
        if bound is None:
            return None
        arrow = self.value_type(column)
        found = [v for v in bound if v is not None]  # a value no stored one equals matches nothing
        if pa.types.is_floating(arrow) and any(v.as_py() == 0 for v in found):
            found += [pa.scalar(0.0, arrow), pa.scalar(-0.0, arrow)]  # Polars: 0.0 is -0.0
        if nulls_equal and values.null_count():
            found.append(pa.scalar(None, arrow))  # a null row matches (Arrow: null in the set)
        return pc.field(column).isin(pa.array(found, arrow))


def _operand(node: Any, casts: bool) -> str | None:
    """"Column" or "Literal" for a column or a literal (``casts``: also under non-strict casts)."""
    while casts and _non_strict(node):
        node = node["Cast"].get("expr")
    kind = next(iter(node), None) if isinstance(node, dict) and len(node) == 1 else None
    return kind if kind in ("Column", "Literal") else None


def _leaves(node: Any, casts: bool = False) -> Iterator[Any]:
    """The comparisons of a column with literals or a column (``==`` ..., ``is_in``,
    ``is_between``; ``casts``: also of non-strict casts of those) under the AND / OR / NOT
    structure of an expression tree, each of which Polars types on its own (its reader evaluates
    them against row-group statistics, or over rows before its optimizer could remove them)."""
    if not isinstance(node, dict):
        return
    if "BinaryExpr" in node:
        b = node["BinaryExpr"]
        if b.get("op") in _AND or b.get("op") in _OR:
            yield from _leaves(b.get("left"), casts)
            yield from _leaves(b.get("right"), casts)
        elif b.get("op") in _COMPARE and "Column" in (sides := [_operand(b.get("left"), casts),
                                                                _operand(b.get("right"), casts)]) and None not in sides:
            yield node
    elif "Function" in node:
        fn, inputs = node["Function"].get("function"), node["Function"].get("input") or []
        kind = fn.get("Boolean") if isinstance(fn, dict) else None
        if kind == "Not":
            yield from _leaves(inputs[0] if inputs else None, casts)
        elif (isinstance(kind, dict) and ("IsIn" in kind or "IsBetween" in kind) and inputs
              and isinstance(inputs[0], dict) and "Column" in inputs[0]
              and all(isinstance(x, dict) and "Literal" in x for x in inputs[1:])):
            yield node


def _column_names(node: Any) -> Iterator[str]:
    """The column names an expression tree (Polars' JSON form) refers to."""
    return (n["Column"] for n in _nodes(node) if isinstance(n.get("Column"), str))


@dataclass(frozen=True)
class _Deferred:
    """A comparison's type error that Polars raises over the rows only after the predicate's
    casts ran over every row (a cast's own error comes first)."""

    error: Exception
    casts: list[pl.Expr]


def _type_check(predicate: pl.Expr, schema: pl.Schema, whole: bool) -> _Deferred | None:
    """Raise what Polars raises for ``predicate`` over rows of ``schema`` whatever their values:
    each comparison of a column with literals or a column on its own (Polars' reader checks them
    even where its optimizer has removed them from the predicate it hands an IO source:
    ``(c == 2**70) & False``) unless the predicate may raise on some values (then Polars sees
    every row) or the comparison is of a Categorical (which Polars' reader does not check), then
    (``whole``) the predicate over an empty frame.

    A predicate whose only parts that may raise on values are non-strict casts has its
    comparisons (of casts too) checked all the same, but their error is returned (a
    :class:`_Deferred`), not raised: over the rows Polars raises what it meets first, left to
    right, and a cast's error before a comparison its optimiser removed (``b"x"`` to Int64), so
    the caller evaluates the predicate it was handed over every row, then the casts, and then
    raises the comparison's."""
    empty = schema.to_frame()
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # noqa: BLE001 - an expression Polars cannot serialise: the whole one only
        tree = None
    # A predicate that may raise on some values prunes nothing (arrow_predicate): Polars evaluates
    # all of it over every row and raises what it raises there (a cast's error before a
    # comparison's type error, as its reader does).
    casts = tree is not None and _may_raise(tree)
    if tree is not None and not _may_raise(tree, but_casts=True):
        for leaf in _leaves(tree, casts):
            if any(isinstance(schema.get(name), (pl.Categorical, pl.Enum)) for name in _column_names(leaf)):
                # Polars' reader checks no comparison of a Categorical against row-group statistics
                # ((7 == cat) & False answers no rows): its type errors surface over the rows only
                continue
            try:
                expr = pl.Expr.deserialize(io.StringIO(json.dumps(leaf)), format="json")
            except Exception:  # noqa: BLE001 - a form Polars does not read back (a NaN literal): not checked
                continue
            try:
                empty.filter(expr)
            except Exception as error:  # noqa: BLE001 - Polars' own error, raised by the caller
                if not casts:
                    raise
                return _Deferred(error, [pl.Expr.deserialize(io.StringIO(json.dumps(c)), format="json")
                                         .alias(f"cast{i}") for i, c in enumerate(n for n in _nodes(tree) if "Cast" in n)])
    if whole:
        empty.lazy().filter(predicate).collect()
    return None


def arrow_predicate(predicate: pl.Expr, schema: pa.Schema) -> pc.Expression | None:
    """A pyarrow Expression that every row matching the Polars ``predicate`` satisfies, for pruning.

    Parameters
    ----------
    predicate
        A Polars boolean expression, as Polars hands it to an IO source (after its type coercion).
    schema
        The Arrow schema of the dataset the predicate runs over.

    Returns
    -------
    pyarrow.compute.Expression or None
        An Expression over the same columns, with literals of the columns' own types, true for
        every row where ``predicate`` is true under Polars' semantics; None when no part of the
        predicate translates, or when the predicate may raise on some values (Polars must then
        see every row).

    Raises
    ------
    Nothing: a form that cannot be read is not translated.
    """
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # noqa: BLE001 - an expression Polars cannot serialise: not pruned
        return None
    if _may_raise(tree):
        return None
    return _Translate(schema).part(tree, True)


_GLOB = re.compile(r"[*?\[]")


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex of a glob over ``/``-separated paths: ``*`` and ``?`` within one name, ``[...]``
    (``[!...]``) a character class, ``**`` any number of directories (none included)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _expand_globs(source: Any, filesystem: Any) -> tuple[Any, Any]:
    """``source`` with each glob pattern replaced by the files it matches (sorted), as
    ``polars.scan_parquet`` expands them; a source without a pattern is returned as it is."""
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not any(_GLOB.search(os.fspath(item)) for item in items):
        return source, filesystem
    resolved = resolve(items, filesystem)
    fs, paths = resolved.filesystem, []
    for path in resolved.paths:
        if not _GLOB.search(path):
            paths.append(path)
            continue
        parts = path.split("/")
        fixed = next(i for i, p in enumerate(parts) if _GLOB.search(p))
        base = "/".join(parts[:fixed]) or ("/" if path.startswith("/") else "")
        regex = _glob_regex("/".join(parts[fixed:]))
        recursive = fixed < len(parts) - 1 or "**" in parts[fixed]
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=recursive, allow_not_found=True))
        prefix = base.rstrip("/") + "/"
        matched = sorted(i.path for i in infos if i.type == pafs.FileType.File
                         and i.path.startswith(prefix) and regex.match(i.path[len(prefix):]))
        if not matched:
            raise FileNotFoundError(errno.ENOENT, "no file matches the pattern", path)
        paths.extend(matched)
    return paths, fs


def scan_parquet(source: Any, *, keys: KeyAccess | None = None, filesystem: Any = None,
                 cache: PruneCache | None = None, partitioning: Any = "hive", glob: bool = True) -> pl.LazyFrame:
    """A ``polars.LazyFrame`` of Parquet files, plaintext or encrypted, that reads only the row
    groups the query's predicate may match (statistics, then Bloom filters) and only the columns
    the query uses; its rows (or its error) are those of ``polars.scan_parquet`` over a plaintext
    copy. To see what pruning did, build the dataset yourself (:func:`secure_bloom.parquet.dataset`),
    scan it with :func:`scan_dataset` and read its ``last_report``.

    Parameters
    ----------
    source
        A Parquet file, a directory (with hive partitions), a glob pattern (``*``, ``?``,
        ``[...]``, ``**`` for any number of directories; expanded as ``polars.scan_parquet``
        does, to the matching files, sorted, without hive partitions), a URI, or a list of them.
    keys
        The :class:`~secure_bloom.parquet.KeyAccess` of encrypted files.
    filesystem
        A ``pyarrow.fs.FileSystem`` the paths are on.
    cache
        A :class:`~secure_bloom.parquet.PruneCache` for repeated queries.
    partitioning
        The partitioning of a directory (pyarrow's ``partitioning=``).
    glob
        Whether ``*``, ``?`` and ``[`` in a path are a pattern (``False``: literal characters).

    Returns
    -------
    polars.LazyFrame

    Raises
    ------
    FileNotFoundError
        A path that does not exist, or a pattern no file matches.
    secure_bloom.errors.MissingKeyError
        Encrypted files without ``keys`` that open them.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import KeyAccess, write_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> _ = write_table(pa.table({"email": [f"user{i:04}@example.com" for i in range(3_000)][::-1], "n": range(3_000)}),
    ...                 tmp / "users.parquet", kms=kms, row_group_size=1_000, bloom_filter_options={"email": True},
    ...                 encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                       column_keys={"pii_key": ["email"]}))
    >>> import polars as pl
    >>> from secure_bloom.parquet.polars import scan_parquet
    >>> lazy = scan_parquet(tmp / "users.parquet", keys=KeyAccess(kms=kms))
    >>> lazy.filter(pl.col("email") == "user0042@example.com").select("n").collect().to_series().to_list()
    [2957]
    """
    if glob:
        source, filesystem = _expand_globs(source, filesystem)
    return scan_dataset(dataset(source, keys=keys, filesystem=filesystem, cache=cache, partitioning=partitioning))


def scan_dataset(data: PruningDataset) -> pl.LazyFrame:
    """:func:`scan_parquet` over a dataset already built.

    Parameters
    ----------
    data
        A :class:`~secure_bloom.parquet.read.pruning_dataset.PruningDataset`
        (``secure_bloom.parquet.dataset(...)``).

    Returns
    -------
    polars.LazyFrame
        Its rows; a query's predicate prunes row groups (see :func:`arrow_predicate`) and is then
        applied by Polars to the rows read (to an empty frame of the schema when none
        survives), so an expression Polars refuses raises as Polars raises it (over files
        holding rows: Polars evaluates nothing over files without any), whatever survives.

    Raises
    ------
    TypeError
        ``data`` is not a PruningDataset.
    """
    if not isinstance(data, PruningDataset):
        raise TypeError(f"data must be a PruningDataset (secure_bloom.parquet.dataset), got {type(data).__name__}")
    arrow_schema = data.schema
    schema = pl.from_arrow(arrow_schema.empty_table()).schema  # type: ignore[union-attr]

    def type_checked(predicate: pl.Expr, whole: bool) -> bool | _Deferred:
        """Raise Polars' type errors of ``predicate`` (:func:`_type_check`) when the files hold
        rows: True when there is none, or the error to raise after the casts ran over every row;
        False when the files hold no rows (Polars evaluates no predicate over them)."""
        try:
            deferred = _type_check(predicate, schema, whole)
        except Exception:
            if data.count_rows():
                raise
            return False
        if deferred is None:
            return True
        return deferred if data.count_rows() else False

    def batches(with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None,
                batch_size: int | None) -> Iterator[pl.DataFrame]:
        prune_by = None
        if predicate is not None:
            checked = type_checked(predicate, whole=False)
            if checked is False:
                return
            if isinstance(checked, _Deferred):  # every row is read (a cast: no pruning): the predicate, then its casts
                for batch in data.scanner_pruned_by(None, batch_size=batch_size or 100_000).to_batches():
                    frame = pl.from_arrow(batch)
                    assert isinstance(frame, pl.DataFrame)
                    frame.filter(predicate)
                    frame.select(checked.casts)
                raise checked.error
            prune_by = arrow_predicate(predicate, arrow_schema)
        columns: Sequence[str] | None = None
        if with_columns is not None:
            used = predicate.meta.root_names() if predicate is not None else []
            columns = list(dict.fromkeys([*with_columns, *used]))
        scanner = data.scanner_pruned_by(prune_by, columns=columns, batch_size=batch_size or 100_000)
        left, filtered = n_rows, False
        for batch in scanner.to_batches():
            if not batch.num_rows:
                continue
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
                filtered = True
            if with_columns is not None:
                frame = frame.select(with_columns)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            if frame.height:
                yield frame
            if left == 0:
                return
        if predicate is not None and not filtered:  # no row survived: Polars' type errors all the same
            type_checked(predicate, whole=True)

    return register_io_source(batches, schema=schema, explain_name="secure_bloom.parquet",
                              explain_detail="row groups pruned by statistics and Bloom filters")
