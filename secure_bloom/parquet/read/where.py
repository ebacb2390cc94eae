"""Command-line conditions (``email = x``, ``ssn in (a, b)``, ``a = 1 AND (b = 2 OR c = 3)``) as a
pyarrow filter Expression.

Grammar (keywords in any case; AND binds tighter than OR)::

    where      := conjunction ("OR" conjunction)*
    conjunction:= primary ("AND" primary)*
    primary    := "(" where ")" | COLUMN OP VALUE | COLUMN ["NOT"] "IN" "(" [VALUE ("," VALUE)*] ")"

with OP one of ``=`` (or ``==``), ``!=`` (``<>``), ``<``, ``<=``, ``>``, ``>=``. COLUMN is a word
(a dotted path too) up to a space or an operator. A VALUE is quoted with ``'`` or ``"`` (the quote
doubled inside stands for itself: ``'O''Brien'``) or a bare word up to a space, a parenthesis or a
comma (in a list: up to the comma or the closing parenthesis, spaces inside kept). Text that does
not follow the grammar is refused (:class:`~secure_bloom.errors.InvalidValueError`), never read as
one literal: ``country = NL AND email = a@x`` is two conditions, ``name = John Smith`` is an error
(quote it). Several ``--where`` texts are ANDed.

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
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidValueError
from ...values import NanoTimestamp, TimeZoneLike, value_from_text
from ..file.schema import ColumnInfo

__all__ = ["Condition", "Connective", "Junction", "Where", "MAX_NESTING", "parse_condition", "conditions_expression"]

_OPS = {"=": "==", "==": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_OPERATOR = re.compile(r"==|=|!=|<>|<=|>=|<|>")
_COLUMN = re.compile(r"[^\s=<>!(),'\"]+")
_BARE = re.compile(r"[^\s(),'\"][^\s(),]*")
_LIST_BARE = re.compile(r"[^\s(),'\"][^(),'\"]*")
_KEYWORD = re.compile(r"(and|or|not|in)(?![^\s(),'\"])", re.IGNORECASE)
_SHOWN = 80

#: Parentheses nested deeper than this are refused (a bound on the parser's recursion).
MAX_NESTING = 64

#: One condition: ``(column, op, value texts)``, op one of ``==, !=, <, <=, >, >=, in, not in``.
Condition = tuple[str, str, list[str]]


class Connective(Enum):
    """How a :class:`Junction` joins its parts."""

    AND = "and"
    OR = "or"


@dataclass(frozen=True)
class Junction:
    """Conditions (or junctions) joined by AND or OR.

    Parameters
    ----------
    connective : Connective
        AND or OR.
    parts : tuple of Where
        The joined conditions and junctions, in the text's order.
    """

    connective: Connective
    parts: tuple[Where, ...]


#: A parsed ``--where`` text: one :data:`Condition`, or a :class:`Junction` of them.
Where = Condition | Junction


def parse_condition(text: str) -> Where:
    """The parsed ``text`` (grammar: the module docstring).

    Parameters
    ----------
    text : str
        One ``--where`` text: a condition, or conditions joined by AND / OR with parentheses.

    Returns
    -------
    Where
        ``(column, op, value texts)`` for a single condition, else a :class:`Junction`.

    Raises
    ------
    InvalidValueError
        Text that does not follow the grammar (naming where it stops following it), an
        unterminated quote, parentheses nested deeper than :data:`MAX_NESTING`.
    """
    return _Parser(text).parse()


class _Parser:
    """Recursive descent over ``text``; ``pos`` is the next character to read."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def fail(self, what: str) -> InvalidValueError:
        rest = self.text[self.pos:self.pos + 30]
        at = f" at {rest!r}" if rest else " at the end"
        return InvalidValueError(f"cannot read condition {self.text[:_SHOWN]!r}: {what}{at}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, char: str) -> bool:
        self.skip()
        return self.text.startswith(char, self.pos)

    def keyword(self, *words: str) -> str | None:
        """The keyword at ``pos`` (one of ``words``, lower case), consumed; None if there is none."""
        self.skip()
        match = _KEYWORD.match(self.text, self.pos)
        if match is None or match[1].lower() not in words:
            return None
        self.pos = match.end()
        return match[1].lower()

    def parse(self) -> Where:
        if not self.text.strip():
            raise InvalidValueError("empty condition: expected COLUMN OP VALUE with OP one of =, !=, <, <=, >, >=, "
                                    "in (...), not in (...)")
        where = self.disjunction(0)
        self.skip()
        if self.peek(")"):
            raise self.fail("unmatched ')'")
        if self.pos < len(self.text):
            raise self.fail("expected AND, OR or the end (quote a value that holds spaces or parentheses: "
                            "name = 'John Smith')")
        return where

    def disjunction(self, depth: int) -> Where:
        parts = [self.conjunction(depth)]
        while self.keyword("or"):
            parts.append(self.conjunction(depth))
        return parts[0] if len(parts) == 1 else Junction(Connective.OR, tuple(parts))

    def conjunction(self, depth: int) -> Where:
        parts = [self.primary(depth)]
        while self.keyword("and"):
            parts.append(self.primary(depth))
        return parts[0] if len(parts) == 1 else Junction(Connective.AND, tuple(parts))

    def primary(self, depth: int) -> Where:
        if self.peek("("):
            if depth >= MAX_NESTING:
                raise self.fail(f"parentheses nested deeper than {MAX_NESTING}")
            self.pos += 1
            inner = self.disjunction(depth + 1)
            if not self.peek(")"):
                raise self.fail("expected ')'")
            self.pos += 1
            return inner
        return self.condition()

    def condition(self) -> Condition:
        self.skip()
        column = _COLUMN.match(self.text, self.pos)
        if column is None:
            raise self.fail("expected COLUMN OP VALUE with OP one of =, !=, <, <=, >, >=, in (...), not in (...)")
        self.pos = column.end()
        self.skip()
        operator = _OPERATOR.match(self.text, self.pos)
        if operator is not None:
            self.pos = operator.end()
            return column[0], _OPS[operator[0]], [self.value(_BARE, "a value")]
        negated = self.keyword("not") is not None
        if self.keyword("in") is None:
            raise self.fail(f"expected COLUMN OP VALUE: no operator (=, !=, <, <=, >, >=, in (...), not in (...)) "
                            f"after column {column[0]!r}")
        op = "not in" if negated else "in"
        if not self.peek("("):
            raise self.fail(f"{op} needs a parenthesised list: {op} (a, b)")
        self.pos += 1
        values: list[str] = []
        if not self.peek(")"):
            values.append(self.value(_LIST_BARE, "a list item"))
            while self.peek(","):
                self.pos += 1
                values.append(self.value(_LIST_BARE, "a list item"))
        if not self.peek(")"):
            raise self.fail(f"expected ',' or ')' in the {op} list")
        self.pos += 1
        return column[0], op, values

    def value(self, bare: re.Pattern[str], what: str) -> str:
        """A quoted value (a doubled quote inside stands for one) or a bare word."""
        self.skip()
        if self.pos < len(self.text) and self.text[self.pos] in "'\"":
            quote, out = self.text[self.pos], []
            i = self.pos + 1
            while True:
                end = self.text.find(quote, i)
                if end < 0:
                    raise self.fail(f"unterminated {quote} quote")
                out.append(self.text[i:end])
                if self.text.startswith(quote, end + 1):
                    out.append(quote)
                    i = end + 2
                    continue
                self.pos = end + 1
                return "".join(out)
        match = bare.match(self.text, self.pos)
        if match is None:
            raise self.fail(f"expected {what}")
        self.pos = match.end()
        return match[0].strip()


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


def conditions_expression(conditions: Sequence[Where], columns: Sequence[ColumnInfo], schema: pa.Schema, *,
                          timezone: TimeZoneLike | None = None) -> pc.Expression | None:
    """The AND of ``conditions`` as an Expression over ``schema``.

    Parameters
    ----------
    conditions : sequence of Where
        What :func:`parse_condition` returned, one per ``--where`` text.
    columns : sequence of ColumnInfo
        The file's leaf columns: values are parsed for them (partition fields, not in the
        file, take the text as the field's Arrow type).
    schema : pyarrow.Schema
        The dataset's schema.
    timezone : str or tzinfo, optional
        The zone of naive date/time values for columns of UTC instants.

    Returns
    -------
    pyarrow.compute.Expression or None
        None for no conditions.

    Raises
    ------
    InvalidValueError
        An unknown column, a value that does not fit its column, a local time naming two
        instants under an ordering operator.
    """
    parts = [_expression(where, columns, schema, timezone) for where in conditions]
    return _join(Connective.AND, parts) if parts else None


def _join(connective: Connective, parts: Sequence[pc.Expression]) -> pc.Expression:
    expression = parts[0]
    for part in parts[1:]:
        expression = expression & part if connective is Connective.AND else expression | part
    return expression


def _expression(where: Where, columns: Sequence[ColumnInfo], schema: pa.Schema,
                timezone: TimeZoneLike | None) -> pc.Expression:
    if isinstance(where, Junction):
        return _join(where.connective, [_expression(part, columns, schema, timezone) for part in where.parts])
    return _condition_expression(where, columns, schema, timezone)


def _condition_expression(condition: Condition, columns: Sequence[ColumnInfo], schema: pa.Schema,
                          timezone: TimeZoneLike | None) -> pc.Expression:
    name, op, texts = condition
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
        return ~test if op == "not in" else test
    value = pc.scalar(scalars[0])
    return {"==": field == value, "!=": field != value, "<": field < value, "<=": field <= value,
            ">": field > value, ">=": field >= value}[op]
