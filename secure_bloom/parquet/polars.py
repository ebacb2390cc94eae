"""Polars: a LazyFrame over Parquet files that prunes row groups with Polars' own predicate.

:func:`scan_parquet` is a Polars IO source (``polars.io.plugins.register_io_source``) with
predicate and projection pushdown over a :class:`~.pruning_dataset.PruningDataset`. Polars gives
the source the query's predicate as a Polars expression; :func:`arrow_predicate` translates what
it can of it into a pyarrow Expression the pruner reads (``==``, ``!=``, ranges, ``is_in``,
``is_between``, ``is_null`` / ``is_not_null``, AND / OR / NOT over columns and literals), only
row groups that translation may match are read, and the source then filters the rows with the
Polars predicate itself, so the rows are exactly Polars' own. A part that cannot be translated
(another function, a cast, a column compared with a column) is simply not used for pruning.

The translation is read from the expression's JSON form (``Expr.meta.serialize(format="json")``;
its literals are evaluated by Polars itself, so their types are Polars'). Polars' comparison
semantics decide what is kept: NaN equals NaN and sorts above every number in Polars, so on
floating-point columns ``>``, ``>=`` and ``!=`` are not used for pruning, and a translated part
that is not exactly Polars' meaning is never negated. Checked with polars 2.1; a form this code
does not know is, like any other untranslatable part, not pruned.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from polars.io.plugins import register_io_source

from .file.keys import KeyAccess
from .read.prune_cache import PruneCache
from .read.pruning_dataset import PruningDataset
from .read.api import dataset

__all__ = ["scan_parquet", "scan_dataset", "arrow_predicate"]

_COMPARE = {"Eq": "==", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_AND = ("And", "LogicalAnd")
_OR = ("Or", "LogicalOr")

#: (pyarrow expression, whether it means exactly what the Polars expression means)
_Part = tuple[pc.Expression, bool]


def _compare(field: pc.Expression, op: str, value: pa.Scalar) -> pc.Expression:
    return {"==": field == value, "!=": field != value, "<": field < value, "<=": field <= value,
            ">": field > value, ">=": field >= value}[op]


class _Translate:
    """A Polars expression's JSON tree -> a pyarrow Expression every matching row satisfies."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def floating(self, column: str) -> bool | None:
        """Whether ``column`` is floating point; None for a column the dataset does not have."""
        if self.schema.get_field_index(column) < 0:
            return None
        typ = self.schema.field(column).type
        if pa.types.is_dictionary(typ):
            typ = typ.value_type
        return bool(pa.types.is_floating(typ))

    @staticmethod
    def literal(node: Any) -> pa.Array | None:
        """A literal node's value(s), as Polars evaluates it (a list literal: its items)."""
        if not isinstance(node, dict) or set(node) != {"Literal"}:
            return None
        try:
            expr = pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")
            series = pl.select(expr.alias("v")).to_series()
            if isinstance(series.dtype, (pl.List, pl.Array)):
                series = series.explode()
            values = series.to_arrow()
        except Exception:  # noqa: BLE001 - any literal Polars cannot evaluate alone: not pruned
            return None
        if pa.types.is_large_string(values.type):
            values = values.cast(pa.string())
        return values

    @staticmethod
    def column(node: Any) -> str | None:
        return node["Column"] if isinstance(node, dict) and isinstance(node.get("Column"), str) else None

    def part(self, node: Any) -> _Part | None:
        if not isinstance(node, dict):
            return None
        if "BinaryExpr" in node:
            return self.binary(node["BinaryExpr"])
        if "Function" in node:
            return self.function(node["Function"])
        return None

    def binary(self, b: dict[str, Any]) -> _Part | None:
        op = b.get("op")
        if op in _AND:
            parts = [p for p in (self.part(b.get("left")), self.part(b.get("right"))) if p is not None]
            if not parts:
                return None
            if len(parts) == 1:
                return parts[0][0], False  # the other side is not translated: it only implies
            return parts[0][0] & parts[1][0], parts[0][1] and parts[1][1]
        if op in _OR:
            left, right = self.part(b.get("left")), self.part(b.get("right"))
            if left is None or right is None:
                return None
            return left[0] | right[0], left[1] and right[1]
        if op not in _COMPARE:
            return None
        op = _COMPARE[op]
        left, right = b.get("left"), b.get("right")
        if self.column(left) is None and self.column(right) is not None:
            left, right, op = right, left, _FLIP[op]
        return self.leaf(self.column(left), op, self.literal(right))

    def leaf(self, column: str | None, op: str, values: pa.Array | None) -> _Part | None:
        if column is None or values is None or len(values) != 1 or values.null_count:
            return None
        floating = self.floating(column)
        if floating is None or (floating and op in (">", ">=", "!=")):  # NaN is > everything, != everything but NaN
            return None
        return _compare(pc.field(column), op, values[0]), not floating

    def function(self, f: dict[str, Any]) -> _Part | None:
        fn, inputs = f.get("function"), f.get("input") or []
        if not isinstance(fn, dict) or "Boolean" not in fn:
            return None
        kind = fn["Boolean"]
        if kind == "Not" and len(inputs) == 1:
            inner = self.part(inputs[0])
            return (~inner[0], True) if inner is not None and inner[1] else None
        column = self.column(inputs[0]) if inputs else None
        if column is None or self.floating(column) is None:
            return None
        if kind in ("IsNull", "IsNotNull") and len(inputs) == 1:
            field = pc.field(column)
            return (field.is_null() if kind == "IsNull" else field.is_valid()), True
        if isinstance(kind, dict) and "IsIn" in kind and len(inputs) == 2:
            values = self.literal(inputs[1])
            if values is None or values.null_count:
                return None
            return pc.field(column).isin(values), not self.floating(column)
        if isinstance(kind, dict) and "IsBetween" in kind and len(inputs) == 3:
            closed = (kind["IsBetween"] or {}).get("closed", "Both")
            low = self.leaf(column, ">=" if closed in ("Both", "Left") else ">", self.literal(inputs[1]))
            high = self.leaf(column, "<=" if closed in ("Both", "Right") else "<", self.literal(inputs[2]))
            if low is None or high is None:
                one = low if low is not None else high
                return (one[0], False) if one is not None else None
            return low[0] & high[0], low[1] and high[1]
        return None


def arrow_predicate(predicate: pl.Expr, schema: pa.Schema) -> pc.Expression | None:
    """A pyarrow Expression that every row matching the Polars ``predicate`` satisfies (over a
    dataset of ``schema``), for pruning; None when no part of it translates.

    Parameters
    ----------
    predicate : polars.Expr
        The query's predicate.
    schema : pyarrow.Schema
        The dataset's schema.

    Returns
    -------
    pyarrow.compute.Expression or None
        A filter every matching row satisfies.

    Raises
    ------
    None
        Nothing of its own.
    """
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:  # noqa: BLE001 - an expression Polars cannot serialise: not pruned
        return None
    part = _Translate(schema).part(tree)
    return part[0] if part is not None else None


def scan_parquet(source: Any, *, keys: KeyAccess | None = None, filesystem: Any = None,
                 cache: PruneCache | None = None, partitioning: Any = "hive") -> pl.LazyFrame:
    """A ``polars.LazyFrame`` of ``source`` (a Parquet file, a directory with hive partitions, a
    list of files, a URI; on ``filesystem``), plaintext or encrypted (``keys``), that reads only
    the row groups the query's predicate may match (statistics, then Bloom filters) and only
    the columns the query uses. ``cache``: a :class:`~secure_bloom.parquet.PruneCache` for
    repeated queries. To see what pruning did, build the dataset yourself
    (:func:`secure_bloom.parquet.dataset`), scan it with :func:`scan_dataset` and read its
    ``last_report``.

    Parameters
    ----------
    source : str, os.PathLike or list
        A Parquet file, a directory with hive partitions, a list of files, or a URI.
    keys : KeyAccess, optional
        Keys for encrypted files.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem ``source`` is on.
    cache : PruneCache, optional
        Kept across queries (footers and filters of unchanged files are not read again).
    partitioning : str, list, Partitioning or None, default "hive"
        As :func:`~secure_bloom.parquet.read.api.scan` takes it.

    Returns
    -------
    polars.LazyFrame
        Rows exactly as Polars' own filter gives them; what the predicate translation cannot
        express is not pruned, never refused.

    Raises
    ------
    TypeError
        ``keys`` is not a :class:`~secure_bloom.parquet.file.keys.KeyAccess`.
    secure_bloom.errors.KeyManagementError
        A footer's key cannot be obtained when the source is discovered.
    OSError
        The source cannot be listed or read.

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
    return scan_dataset(dataset(source, keys=keys, filesystem=filesystem, cache=cache, partitioning=partitioning))


def scan_dataset(data: PruningDataset) -> pl.LazyFrame:
    """:func:`scan_parquet` over a dataset already built (``secure_bloom.parquet.dataset``).

    Parameters
    ----------
    data : PruningDataset
        From :func:`secure_bloom.parquet.dataset`.

    Returns
    -------
    polars.LazyFrame
        A frame whose scans prune with the query's predicate.

    Raises
    ------
    None
        Nothing of its own.
    """
    if not isinstance(data, PruningDataset):
        raise TypeError(f"data must be a PruningDataset (secure_bloom.parquet.dataset), got {type(data).__name__}")
    arrow_schema = data.schema
    schema = pl.from_arrow(arrow_schema.empty_table()).schema  # type: ignore[union-attr]

    def batches(with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None,
                batch_size: int | None) -> Iterator[pl.DataFrame]:
        prune_by = arrow_predicate(predicate, arrow_schema) if predicate is not None else None
        columns: Sequence[str] | None = None
        if with_columns is not None:
            used = predicate.meta.root_names() if predicate is not None else []
            columns = list(dict.fromkeys([*with_columns, *used]))
        scanner = data.scanner_pruned_by(prune_by, columns=columns, batch_size=batch_size or 100_000)
        left = n_rows
        for batch in scanner.to_batches():
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None:
                frame = frame.select(with_columns)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            if frame.height:
                yield frame
            if left == 0:
                return

    return register_io_source(batches, schema=schema, explain_name="secure_bloom.parquet",
                              explain_detail="row groups pruned by statistics and Bloom filters")
