"""Leaf columns of a Parquet schema, with what a Bloom filter probe needs to encode values.

Spec: parquet.thrift ``SchemaElement`` (depth-first list, ``num_children`` on groups) and
LogicalTypes.md. The leaf order is the column order: a leaf's index is its column ordinal in
``RowGroup.columns`` and in encryption AADs (SPEC_NOTES 4). Legacy ``converted_type`` annotations
are mapped to their logical equivalents when ``logicalType`` is absent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

from ...errors import AmbiguousColumnError, ColumnNotFoundError, MalformedThriftError
from ...types import PhysicalType

__all__ = ["shared_leaf_columns", "ColumnInfo", "ColumnRef", "leaf_columns", "find_column"]

_CONVERTED = {0: "UTF8", 1: "MAP", 2: "MAP_KEY_VALUE", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE",
              7: "TIME_MILLIS", 8: "TIME_MICROS", 9: "TIMESTAMP_MILLIS", 10: "TIMESTAMP_MICROS",
              11: "UINT_8", 12: "UINT_16", 13: "UINT_32", 14: "UINT_64", 15: "INT_8", 16: "INT_16",
              17: "INT_32", 18: "INT_64", 19: "JSON", 20: "BSON", 21: "INTERVAL"}
_REPETITION = {0: "REQUIRED", 1: "OPTIONAL", 2: "REPEATED"}
# converted_type -> (logical name, unit, integer (bits, signed))
_FROM_CONVERTED: dict[str, tuple[str, str | None, tuple[int, bool] | None]] = {
    "UTF8": ("STRING", None, None), "ENUM": ("ENUM", None, None), "JSON": ("JSON", None, None),
    "BSON": ("BSON", None, None), "DECIMAL": ("DECIMAL", None, None), "DATE": ("DATE", None, None),
    "TIME_MILLIS": ("TIME", "millis", None), "TIME_MICROS": ("TIME", "micros", None),
    "TIMESTAMP_MILLIS": ("TIMESTAMP", "millis", None), "TIMESTAMP_MICROS": ("TIMESTAMP", "micros", None),
    "UINT_8": ("INTEGER", None, (8, False)), "UINT_16": ("INTEGER", None, (16, False)),
    "UINT_32": ("INTEGER", None, (32, False)), "UINT_64": ("INTEGER", None, (64, False)),
    "INT_8": ("INTEGER", None, (8, True)), "INT_16": ("INTEGER", None, (16, True)),
    "INT_32": ("INTEGER", None, (32, True)), "INT_64": ("INTEGER", None, (64, True)),
    "INTERVAL": ("INTERVAL", None, None),
}
_MAX_SCHEMA_DEPTH = 256


@dataclass(frozen=True)
class ColumnInfo:
    """One leaf column. ``path`` is the dotted path (``a.b.c``), ``ordinal`` its leaf index.

    ``logical_type`` is the logical annotation's name (``STRING``, ``DECIMAL``, ``DATE``,
    ``TIMESTAMP``, ``TIME``, ``INTEGER``, ``UUID``, ``FLOAT16``, ``ENUM``, ``JSON``, ...) or None;
    ``time_unit`` is ``millis``/``micros``/``nanos`` for TIMESTAMP and TIME; ``int_bits`` /
    ``int_signed`` for INTEGER. ``encrypted`` and ``key_id`` describe the column's chunks
    (``key_id`` is a printable id: the explicit key id, the master key id, or ``footer``).

    Parameters
    ----------
    path : str
        The dotted path.
    path_in_schema : tuple of str
        The path parts.
    ordinal : int
        The leaf index.
    physical_type : PhysicalType
        The physical type.
    type_length : int, optional
        FIXED_LEN_BYTE_ARRAY's width.
    repetition : str, optional
        ``REQUIRED``, ``OPTIONAL`` or ``REPEATED``.
    logical_type, converted_type : str, optional
        The annotations' names.
    scale, precision : int, optional
        DECIMAL's.
    time_unit : str, optional
        TIMESTAMP / TIME's unit.
    is_adjusted_to_utc : bool, optional
        TIMESTAMP / TIME: values are UTC instants.
    int_bits : int, optional
        INTEGER's bit width.
    int_signed : bool, optional
        INTEGER's signedness.
    encrypted : bool, default False
        The column's chunks are encrypted.
    key_id : str, optional
        A printable id of the column's key.
    """

    path: str
    path_in_schema: tuple[str, ...]
    ordinal: int
    physical_type: PhysicalType
    type_length: int | None = None
    repetition: str | None = None
    logical_type: str | None = None
    converted_type: str | None = None
    scale: int | None = None
    precision: int | None = None
    time_unit: str | None = None
    is_adjusted_to_utc: bool | None = None
    int_bits: int | None = None
    int_signed: bool | None = None
    encrypted: bool = False
    key_id: str | None = None

    @property
    def type_name(self) -> str:
        """Human form: ``BYTE_ARRAY/STRING``, ``FIXED_LEN_BYTE_ARRAY(16)/DECIMAL(38,2)``, ..."""
        phys = self.physical_type.name
        if self.physical_type is PhysicalType.FIXED_LEN_BYTE_ARRAY:
            phys += f"({self.type_length})"
        logical = self.logical_type
        if logical == "DECIMAL":
            logical = f"DECIMAL({self.precision},{self.scale})"
        elif logical in ("TIMESTAMP", "TIME"):
            logical = f"{logical}({self.time_unit}{',utc' if self.is_adjusted_to_utc else ''})"
        elif logical == "INTEGER":
            logical = f"{'INT' if self.int_signed else 'UINT'}{self.int_bits}"
        return f"{phys}/{logical}" if logical else phys

    def to_dict(self) -> dict[str, Any]:
        """The leaf for ``inspect --json``: path, ordinal, physical and logical types, encryption and
        key label (never key bytes).

        Returns
        -------
        dict
            Plain values (enums by name).

        Raises
        ------
        None
            Copies the fields.
        """
        return {"path": self.path, "ordinal": self.ordinal, "physical_type": self.physical_type.name,
                "type_length": self.type_length, "repetition": self.repetition,
                "logical_type": self.logical_type, "converted_type": self.converted_type,
                "scale": self.scale, "precision": self.precision, "time_unit": self.time_unit,
                "is_adjusted_to_utc": self.is_adjusted_to_utc, "int_bits": self.int_bits,
                "int_signed": self.int_signed, "type": self.type_name,
                "encrypted": self.encrypted, "key_id": self.key_id}


def _unit(time_unit: Any) -> str | None:
    if time_unit is None:
        return None
    if time_unit.MILLIS is not None:
        return "millis"
    if time_unit.MICROS is not None:
        return "micros"
    return "nanos"


def _logical(el: Any) -> dict[str, Any]:
    lt = el.logicalType
    converted = _CONVERTED.get(el.converted_type) if el.converted_type is not None else None
    out: dict[str, Any] = {"converted_type": converted}
    if lt is not None:
        for name in lt.thrift_spec.values():
            value = getattr(lt, name[1])
            if value is None:
                continue
            out["logical_type"] = name[1]
            if name[1] == "DECIMAL":
                out["scale"], out["precision"] = value.scale, value.precision
            elif name[1] in ("TIMESTAMP", "TIME"):
                out["time_unit"] = _unit(value.unit)
                out["is_adjusted_to_utc"] = bool(value.isAdjustedToUTC)
            elif name[1] == "INTEGER":
                out["int_bits"], out["int_signed"] = int(value.bitWidth), bool(value.isSigned)
        return out
    if converted in _FROM_CONVERTED:
        name, unit, integer = _FROM_CONVERTED[converted]
        out["logical_type"] = name
        if name == "DECIMAL":
            out["scale"], out["precision"] = el.scale or 0, el.precision
        if unit is not None:
            out["time_unit"] = unit
            out["is_adjusted_to_utc"] = True
        if integer is not None:
            out["int_bits"], out["int_signed"] = integer
    return out


#: Distinct schemas whose leaves :func:`shared_leaf_columns` remembers (most datasets have one).
_LAYOUTS = 8
_layouts: list[tuple[Sequence[Any], tuple[ColumnInfo, ...]]] = []
_layouts_lock = threading.Lock()


def _same_schema(known: Sequence[Any], schema: Sequence[Any]) -> bool:
    """``known == schema`` for two lists of Thrift SchemaElements, their fields compared without
    a Python ``__eq__`` per element (an element of another class is "not the same")."""
    if known is schema:
        return True
    if len(known) != len(schema):
        return False
    for a, b in zip(known, schema):
        if type(a) is not type(b) or a.__dict__ != b.__dict__:
            return False
    return True


def shared_leaf_columns(schema: Sequence[Any]) -> tuple[ColumnInfo, ...]:
    """:func:`leaf_columns` of ``schema``, one tuple shared by every file of the same schema (the
    last :data:`_LAYOUTS` distinct ones): the files of a dataset then share one column layout,
    which the evaluator's plans are built for once (comparing a schema field by field is ten
    times cheaper than building its columns).

    Parameters
    ----------
    schema : sequence of SchemaElement
        ``FileMetaData.schema``.

    Returns
    -------
    tuple of ColumnInfo
        The leaves (the same object for an equal schema).

    Raises
    ------
    secure_bloom.errors.MalformedThriftError
        As :func:`leaf_columns`.
    """
    for known, columns in _layouts:
        if _same_schema(known, schema):
            return columns
    columns = tuple(leaf_columns(schema))
    with _layouts_lock:
        _layouts[:] = [(schema, columns), *_layouts[:_LAYOUTS - 1]]
    return columns


def leaf_columns(schema: Sequence[Any]) -> list[ColumnInfo]:
    """The leaves of a flattened schema (``FileMetaData.schema``), in column order.

    Parameters
    ----------
    schema : sequence of SchemaElement
        ``FileMetaData.schema``.

    Returns
    -------
    list of ColumnInfo
        The leaves.

    Raises
    ------
    secure_bloom.errors.MalformedThriftError
        An empty schema, or one whose children counts or group shapes do not add up.
    """
    if not schema:
        raise MalformedThriftError("FileMetaData.schema is empty")
    leaves: list[ColumnInfo] = []
    pos = 1
    # A stack of (remaining children, path so far) frames; the root's children come first.
    stack: list[tuple[int, tuple[str, ...]]] = [(schema[0].num_children or 0, ())]
    while stack:
        remaining, prefix = stack[-1]
        if remaining == 0:
            stack.pop()
            continue
        stack[-1] = (remaining - 1, prefix)
        if pos >= len(schema):
            raise MalformedThriftError(f"schema declares more children than its {len(schema)} elements")
        el = schema[pos]
        pos += 1
        path = prefix + (el.name,)
        if el.num_children:
            if el.num_children < 0 or len(stack) >= _MAX_SCHEMA_DEPTH:
                raise MalformedThriftError(f"schema element {'.'.join(path)!r} has an invalid group shape")
            stack.append((el.num_children, path))
            continue
        if el.type is None:
            raise MalformedThriftError(f"schema leaf {'.'.join(path)!r} has no physical type")
        if el.type not in PhysicalType._value2member_map_:
            raise MalformedThriftError(f"schema leaf {'.'.join(path)!r} has unknown physical type {el.type}")
        leaves.append(ColumnInfo(
            path=".".join(path), path_in_schema=path, ordinal=len(leaves),
            physical_type=PhysicalType(el.type), type_length=el.type_length,
            repetition=_REPETITION.get(el.repetition_type) if el.repetition_type is not None else None,
            **_logical(el)))
    if pos != len(schema):
        raise MalformedThriftError(f"schema has {len(schema) - pos} elements outside the tree")
    return leaves


#: How a caller names a leaf column: dotted path (``"a.b"``), path parts (``("a", "b")`` for the
#: field ``b`` of group ``a``, ``("a.b",)`` for a column named ``a.b``), ordinal, or ColumnInfo.
ColumnRef = Union[str, int, ColumnInfo, tuple[str, ...], list[str]]


def _parts_text(parts: Sequence[str]) -> str:
    return json.dumps(list(parts), ensure_ascii=False)


def find_column(columns: Sequence[ColumnInfo], column: ColumnRef, where: str) -> ColumnInfo:
    """The leaf ``column`` names among ``columns`` (see :data:`ColumnRef`).

    A dotted path that more than one leaf has (a column named ``a.b`` and the field ``b`` of a
    group ``a``) raises :class:`AmbiguousColumnError` naming each by its path parts; a
    ColumnInfo or a list/tuple of parts always names one leaf. ``where`` prefixes messages.

    Parameters
    ----------
    columns : sequence of ColumnInfo
        The file's leaves.
    column : str, tuple of str, int or ColumnInfo
        The leaf wanted.
    where : str
        Prefixes messages.

    Returns
    -------
    ColumnInfo
        The leaf.

    Raises
    ------
    secure_bloom.errors.ColumnNotFoundError
        No such leaf.
    secure_bloom.errors.AmbiguousColumnError
        A dotted path two leaves share.
    """
    if isinstance(column, ColumnInfo):
        column = column.path_in_schema
    if isinstance(column, int) and not isinstance(column, bool):
        if 0 <= column < len(columns):
            return columns[column]
        raise ColumnNotFoundError(f"{where}: no column ordinal {column} ({len(columns)} columns)")
    if isinstance(column, (tuple, list)) and column and all(isinstance(p, str) for p in column):
        parts = tuple(column)
        found = [c for c in columns if c.path_in_schema == parts]
        shown = _parts_text(parts)
    elif isinstance(column, str):
        found = [c for c in columns if c.path == column]
        shown = repr(column)
    else:
        raise TypeError(f"a column is a dotted path, a list of path parts, an ordinal or a ColumnInfo, "
                        f"got {type(column).__name__}")
    if len(found) == 1:
        return found[0]
    if found:
        names = " and ".join(_parts_text(c.path_in_schema) for c in found)
        raise AmbiguousColumnError(
            f"{where}: column {shown} is ambiguous: it names the leaves {names}; name one by its path parts "
            f"(API: a tuple such as {tuple(found[0].path_in_schema)!r}; CLI: --column '{_parts_text(found[0].path_in_schema)}')")
    names = ", ".join(c.path for c in columns[:20]) + (", ..." if len(columns) > 20 else "")
    raise ColumnNotFoundError(f"{where}: no leaf column {shown} (columns: {names})")
