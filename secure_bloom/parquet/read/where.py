"""Command-line conditions (``email = x``, ``ssn in (a, b)``) as a pyarrow filter Expression.

Each condition is ``COLUMN OP VALUE`` with OP one of ``=`` (or ``==``), ``!=`` (``<>``), ``<``,
``<=``, ``>``, ``>=``, ``in (v1, v2, ...)``, ``not in (...)``; several conditions are ANDed.
Values are text converted per column type (:func:`~secure_bloom.values.value_from_text`: numbers,
decimal strings, ISO-8601 dates and timestamps with all nanosecond digits, ``hex:`` for binary),
then to a pyarrow scalar of the column's Arrow type. A naive timestamp for a column of UTC
instants needs ``timezone`` (where the local time repeats at a DST change, both instants are
asked). Partition columns (not in the files) take the text as the partition field's type.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidValueError
from ...values import NanoTimestamp, TimeZoneLike, value_from_text
from ..file.schema import ColumnInfo

__all__ = ["Condition", "parse_condition", "conditions_expression"]

_PATTERN = re.compile(r"^\s*(?P<column>[^\s=<>!]+)\s*(?P<op>==|=|!=|<>|<=|>=|<|>|not\s+in\b|in\b)\s*(?P<rest>.*?)\s*$",
                      re.IGNORECASE | re.DOTALL)
_OPS = {"=": "==", "==": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

Condition = tuple[str, str, list[str]]


def parse_condition(text: str) -> Condition:
    """``(column, op, value texts)`` of one condition; :class:`InvalidValueError` if malformed.

    Parameters
    ----------
    text : str
        A ``--where`` condition (``email = a``, ``ssn in (a, b)``).

    Returns
    -------
    (str, str, list of str)
        Column, operator, value texts.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        A malformed condition.
    """
    match = _PATTERN.match(text)
    if match is None:
        raise InvalidValueError(f"cannot read condition {text[:80]!r}: expected COLUMN OP VALUE with OP one of "
                                "=, !=, <, <=, >, >=, in (...), not in (...)")
    column, op, rest = match["column"], re.sub(r"\s+", " ", match["op"].lower()), match["rest"]
    if op in ("in", "not in"):
        if not (rest.startswith("(") and rest.endswith(")")):
            raise InvalidValueError(f"condition {text[:80]!r}: {op} needs a parenthesised list: {op} (a, b)")
        inner = rest[1:-1].strip()
        return column, op, _split_list(inner) if inner else []
    if not rest:
        raise InvalidValueError(f"condition {text[:80]!r} has no value")
    return column, _OPS[op], [_unquote(rest)]


def _split_list(inner: str) -> list[str]:
    """``a, 'b, c', "d"`` -> ``["a", "b, c", "d"]``: commas inside single or double quotes kept."""
    items, current, quote = [], [], ""
    for ch in inner:
        if quote:
            if ch == quote:
                quote = ""
            current.append(ch)
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quote:
        raise InvalidValueError(f"unterminated {quote} quote in ({inner[:60]})")
    items.append("".join(current))
    return [_unquote(item.strip()) for item in items]


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _scalars(value: Any, column: ColumnInfo, arrow_type: pa.DataType | None, timezone: TimeZoneLike | None) -> list[Any]:
    """The pyarrow scalar(s) a parsed value means for the column (two for a repeated local time)."""
    if isinstance(value, NanoTimestamp):
        base = value.datetime
        instants = _local_instants(base, column, timezone)
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        out = []
        for instant in instants:
            delta = instant - epoch if instant.tzinfo is not None else instant - epoch.replace(tzinfo=None)
            nanos = (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000 + value.nanosecond
            out.append(pa.scalar(nanos, pa.timestamp("ns", tz="UTC" if instant.tzinfo is not None else None)))
        return [_cast(s, arrow_type) for s in out]
    if isinstance(value, dt.datetime):
        return [_cast(pa.scalar(v), arrow_type) for v in _local_instants(value, column, timezone)]
    return [_cast(pa.scalar(value), arrow_type)]


def _local_instants(value: dt.datetime, column: ColumnInfo, timezone: TimeZoneLike | None) -> list[dt.datetime]:
    instant_column = column.physical_type.name == "INT96" or (
        column.logical_type == "TIMESTAMP" and bool(column.is_adjusted_to_utc))
    if value.tzinfo is not None or not instant_column or timezone is None:
        return [value]
    zone = zoneinfo.ZoneInfo(timezone) if isinstance(timezone, str) else timezone
    found = {value.replace(tzinfo=zone, fold=fold).astimezone(dt.timezone.utc) for fold in (0, 1)}
    return sorted(found)


def _cast(scalar: Any, arrow_type: pa.DataType | None) -> Any:
    if arrow_type is None:
        return scalar
    target = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    try:
        return scalar.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidValueError(f"value {str(scalar)[:60]!r} does not fit type {target}: {e}") from None


def conditions_expression(conditions: Sequence[Condition], columns: Sequence[ColumnInfo], schema: pa.Schema, *,
                          timezone: TimeZoneLike | None = None) -> pc.Expression | None:
    """The AND of ``conditions`` as an Expression over ``schema`` (the dataset's), values parsed
    for the file's ``columns`` (or, for partition fields, for the field's Arrow type).

    Parameters
    ----------
    conditions : sequence of (str, str, list of str)
        From :func:`parse_condition`.
    columns : sequence of ColumnInfo
        A file's leaves.
    schema : pyarrow.Schema
        The dataset's schema.
    timezone : str or tzinfo, optional
        For naive date/time values.

    Returns
    -------
    pyarrow.compute.Expression or None
        The AND of the conditions.

    Raises
    ------
    secure_bloom.errors.ColumnNotFoundError
        A condition on a column in neither the file nor the partitions.
    secure_bloom.errors.InvalidValueError
        A value that does not parse for its column.
    """
    parts = []
    for name, op, texts in conditions:
        if schema.get_field_index(name) < 0:
            raise InvalidValueError(f"no column {name!r}; columns: {', '.join(schema.names)}")
        arrow_type = schema.field(name).type
        column = next((c for c in columns if c.path_in_schema == (name,)), None)
        scalars: list[Any] = []
        for text in texts:
            if column is None:
                scalars.append(_cast(pa.scalar(text), arrow_type))
            else:
                scalars.extend(_scalars(value_from_text(text, column, timezone=timezone), column, arrow_type,
                                        timezone))
        field = pc.field(name)
        if op in ("in", "not in") or len(scalars) > 1:
            target = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
            value_set = pa.array(scalars, type=target) if scalars else pa.array([], target)
            if op == "==":
                op = "in"
            elif op == "!=":
                op = "not in"
            elif op not in ("in", "not in"):
                raise InvalidValueError(f"{name} {op} {texts[0]!r}: the local time names two instants; give an offset")
            test = field.isin(value_set)
            parts.append(~test if op == "not in" else test)
        else:
            value = pc.scalar(scalars[0])
            parts.append({"==": field == value, "!=": field != value, "<": field < value, "<=": field <= value,
                          ">": field > value, ">=": field >= value}[op])
    if not parts:
        return None
    expression = parts[0]
    for part in parts[1:]:
        expression = expression & part
    return expression
