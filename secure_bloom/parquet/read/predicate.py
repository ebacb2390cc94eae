"""Row filters as pyarrow states them, turned into a tree a row-group pruner can evaluate.

Input: pyarrow's DNF list of tuples (``[("email", "==", x)]``, ``[[...], [...]]``: converted by
pyarrow's own ``pyarrow.parquet.filters_to_expression``, so both forms mean exactly what pyarrow
reads) or a ``pyarrow.compute.Expression``. An Expression is read through pyarrow's own
serialisation (the Arrow IPC file that pickling an Expression produces: a schema whose ordered
key/value metadata is the expression in prefix order - ``call NAME``, ``field_ref NAME``,
``literal I``, ``options I``, ``end NAME`` - and whose columns hold the literals and the function
options). The ordered metadata is read through the Arrow C data interface (the Python ``metadata``
property is a dict and loses the order).

The tree (:class:`Leaf`, :class:`AllOf`, :class:`AnyOf`, :class:`Unknown`) only ever says where
rows CAN'T be: anything not understood (other functions, nested fields, field-to-field
comparisons, negations whose complement is not exact, a literal null) becomes :class:`Unknown`,
which may match anywhere; one that pyarrow's evaluation may raise on (a cast, an unknown
function, a nested field) keeps every row group (:func:`raising_unknowns`). The exact filter is
always applied by pyarrow afterwards.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import InvalidValueError

__all__ = ["Leaf", "AllOf", "AnyOf", "Unknown", "Node", "to_expression", "predicate_tree", "columns_of"]

#: Comparison functions -> our operator, and the operator seen from the other side.
_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
            "greater_equal": ">="}
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: not(a op v) is (a complement v) for non-null, non-NaN a (Kleene logic: a null stays null).
_COMPLEMENT = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "in": "not in",
               "not in": "in", "is_null": "is_valid", "is_valid": "is_null"}
_AND = ("and", "and_kleene")
_OR = ("or", "or_kleene")


@dataclass(frozen=True)
class Leaf:
    """``column op values``: op is one of ==, !=, <, <=, >, >=, in, not in (``values`` holds the
    literal(s), non-null) or is_null, is_valid (``values`` None).

    Null rows match no comparison and no ``in`` (Kleene logic; ``is_in`` answers false for a
    null when its value set holds none) but DO match ``not in`` (pyarrow's ``~is_in``).

    Parameters
    ----------
    column : str
        The column's name in the dataset (a dotted path for a nested field).
    op : str
        The operator.
    values : pyarrow.Array, optional
        The literal(s), in pyarrow's type of the filter's value.
    """

    column: str
    op: str
    values: pa.Array | None = None

    def __repr__(self) -> str:
        shown = "" if self.values is None else " " + " ".join(self.values.to_string(window=4).split())
        return f"Leaf({self.column} {self.op}{shown})"


@dataclass(frozen=True)
class AllOf:
    """AND of ``parts``: a row group may match only if every part may (empty: true, every row
    group may match).

    Parameters
    ----------
    parts : tuple of Node
        The conjuncts.
    """
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class AnyOf:
    """OR of ``parts``: a row group may match if any part may (empty: false, no row group
    matches).

    Parameters
    ----------
    parts : tuple of Node
        The disjuncts.
    """
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Unknown:
    """A part of the filter the pruner does not use (it may match anywhere). ``may_raise``: its
    evaluation by pyarrow may raise on some stored values (a cast, an unknown function), so no row
    group is dropped at all while it is part of the filter (pyarrow must meet those values and
    raise as it would); ``inner``: the leaf it hides (a negated float comparison), whose own
    raising is still checked.

    Parameters
    ----------
    reason : str
        Why it is not used (for explanations).
    may_raise : bool, default True
        Whether pyarrow's evaluation of it may raise.
    inner : Node, optional
        The leaf it hides.
    """

    reason: str
    may_raise: bool = True
    inner: Node | None = None


Node = Union[Leaf, AllOf, AnyOf, Unknown]


def to_expression(filters: Any) -> pc.Expression | None:
    """pyarrow's DNF list (or list of lists) of ``(column, op, value)`` or an Expression, as an
    Expression; None for no filter. Bad filters raise :class:`InvalidValueError`.

    Parameters
    ----------
    filters : list, pyarrow.compute.Expression or None
        pyarrow's filter.

    Returns
    -------
    pyarrow.compute.Expression or None
        The filter as an Expression.

    Raises
    ------
    secure_bloom.errors.InvalidValueError
        A malformed DNF list (an unknown operator, a tuple of the wrong shape).
    """
    if filters is None:
        return None
    if isinstance(filters, pc.Expression):
        return filters
    if isinstance(filters, (list, tuple)):
        if not filters:
            return None
        try:
            return pq.filters_to_expression(list(filters))
        except (ValueError, TypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidValueError(f"invalid filters: {e}") from None
    raise TypeError(f"filters must be a list of (column, op, value) tuples or a pyarrow.compute.Expression, "
                    f"got {type(filters).__name__}")


# ---------------------------------------------------------------- reading pyarrow's serialisation


class _ArrowSchema(ctypes.Structure):
    """struct ArrowSchema of the Arrow C data interface."""

    _fields_ = [("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
                ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _ordered_metadata(schema: pa.Schema) -> list[tuple[str, str]]:
    """The schema's key/value metadata in order, duplicates kept (C data interface encoding:
    int32 count, then int32 length + bytes for each key and value, native byte order)."""
    capsule = schema.__arrow_c_schema__()
    c_schema = _ArrowSchema.from_address(_capsule_pointer(capsule, b"arrow_schema"))
    if not c_schema.metadata:
        return []
    order = "<" if sys.byteorder == "little" else ">"

    def take(at: int, n: int) -> bytes:
        return ctypes.string_at(c_schema.metadata + at, n)

    (count,) = struct.unpack(order + "i", take(0, 4))
    pairs, at = [], 4
    for _ in range(count):
        item = []
        for _ in range(2):
            (n,) = struct.unpack(order + "i", take(at, 4))
            item.append(take(at + 4, n).decode("utf-8"))
            at += 4 + n
        pairs.append((item[0], item[1]))
    del capsule
    return pairs


class _Parse:
    """Recursive descent over pyarrow's prefix-order serialisation of one Expression."""

    def __init__(self, expression: pc.Expression, schema: pa.Schema | None) -> None:
        reduced = expression.__reduce__()
        table = pa.ipc.open_file(reduced[1][0]).read_all()
        self.columns = [table.column(i) for i in range(table.num_columns)]
        self.tokens = _ordered_metadata(table.schema)
        self.at = 0
        self.schema = schema

    def next(self) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise ValueError("truncated expression")
        token = self.tokens[self.at]
        self.at += 1
        return token

    def scalar(self, index: str) -> Any:
        return self.columns[int(index)][0]

    def literal(self, index: str) -> pa.Array:
        """A literal as a one-element array (its exact type and value, no Python round trip)."""
        return self.columns[int(index)].combine_chunks()

    def operand(self) -> Any:
        """('field', name) | ('literal', scalar) | ('nested', None) | ('call', name, args, options)."""
        kind, value = self.next()
        if kind == "field_ref":
            return ("field", value)
        if kind == "nested_field_ref":
            for _ in range(int(value)):
                self.next()
            return ("nested", None)
        if kind == "literal":
            return ("literal", self.literal(value))
        if kind != "call":
            raise ValueError(f"unexpected {kind!r}")
        args: list[Any] = []
        options: Any = None
        while True:
            kind2, value2 = self.tokens[self.at] if self.at < len(self.tokens) else ("", "")
            if kind2 == "end":
                self.at += 1
                if value2 != value:
                    raise ValueError("unbalanced expression")
                return ("call", value, args, options)
            if kind2 == "options":
                self.at += 1
                options = self.scalar(value2)
                continue
            args.append(self.operand())


def _is_float_field(schema: pa.Schema | None, name: str) -> bool:
    """True unless the field is known and not floating point (NaN breaks complements)."""
    if schema is None or schema.get_field_index(name) < 0:
        return True
    typ = schema.field(name).type
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return bool(pa.types.is_floating(typ))


def _negate(node: Node, schema: pa.Schema | None) -> Node:
    if isinstance(node, AllOf):
        return AnyOf(tuple(_negate(p, schema) for p in node.parts))
    if isinstance(node, AnyOf):
        return AllOf(tuple(_negate(p, schema) for p in node.parts))
    if isinstance(node, Unknown):
        return node
    if node.op not in ("is_null", "is_valid") and _is_float_field(schema, node.column):
        return Unknown(f"not({node!r}) on a floating-point (or unknown) column: NaN has no complement",
                       may_raise=False, inner=node)
    return Leaf(node.column, _COMPLEMENT[node.op], node.values)


def _tree(item: Any, schema: pa.Schema | None) -> Node:
    if item[0] != "call":
        return Unknown(f"{item[0]} used as a condition", may_raise=item[0] not in ("field", "literal"))
    _, name, args, options = item
    if name in _AND or name in _OR:
        parts = tuple(_tree(a, schema) for a in args)
        return AllOf(parts) if name in _AND else AnyOf(parts)
    if name == "invert" and len(args) == 1:
        return _negate(_tree(args[0], schema), schema)
    if name in _COMPARE and len(args) == 2:
        op = _COMPARE[name]
        left, right = args
        if left[0] == "literal" and right[0] == "field":
            left, right, op = right, left, _FLIP[op]
        if left[0] != "field" or right[0] != "literal":
            return Unknown(f"{name} is not column-to-literal")
        literal: pa.Array = right[1]
        if literal.null_count:
            return Unknown(f"{name} with a null literal", may_raise=False)
        if pa.types.is_nested(literal.type):
            return Unknown(f"{name} with a nested literal")
        return Leaf(left[1], op, literal)
    if name == "is_in" and len(args) == 1 and args[0][0] == "field" and options is not None:
        value_set = options["value_set"].values
        matching = options["null_matching_behavior"].as_py()
        if value_set is None:
            return Unknown("is_in without a value set")
        if value_set.null_count and matching in (0, 3):  # MATCH, INCONCLUSIVE: a null row may match
            return Unknown("is_in with a null in its value set")
        return Leaf(args[0][1], "in", value_set.drop_null() if value_set.null_count else value_set)
    if name == "if_else" and len(args) == 3 and args[2][0] == "literal" and not args[2][1].type.num_fields \
            and (args[2][1].null_count or args[2][1].to_pylist() == [False]):
        # if_else(c, a, null or false): true only where c and a are (DuckDB's IN: if_else(is_valid(x), is_in(x), null))
        return AllOf((_tree(args[0], schema), _tree(args[1], schema)))
    if name in ("is_null", "is_valid") and len(args) == 1 and args[0][0] == "field":
        if name == "is_null" and options is not None and options["nan_is_null"].as_py():
            return Unknown("is_null with nan_is_null", may_raise=False)
        return Leaf(args[0][1], name)
    return Unknown(f"function {name!r}")


def predicate_tree(expression: pc.Expression | None, schema: pa.Schema | None = None) -> Node:
    """The pruning tree of ``expression`` (None: no condition, an empty AllOf). ``schema`` (the
    dataset's) tells which columns are floating point. Never raises for an Expression it cannot
    read: that is :class:`Unknown` (no pruning).

    Parameters
    ----------
    expression : pyarrow.compute.Expression or None
        The filter.
    schema : pyarrow.Schema, optional
        The dataset's schema.

    Returns
    -------
    Node
        The tree (``Unknown`` where it cannot read a part).

    Raises
    ------
    None
        Nothing of its own.
    """
    if expression is None:
        return AllOf(())
    try:
        parser = _Parse(expression, schema)
        root = parser.operand()
        if parser.at != len(parser.tokens):
            return Unknown("trailing tokens in the serialised expression")
        return _tree(root, schema)
    except (ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError, struct.error, pa.ArrowException) as e:
        return Unknown(f"expression not understood ({type(e).__name__})")


def leaves(node: Node) -> Iterator[Leaf]:
    if isinstance(node, Leaf):
        yield node
    elif isinstance(node, (AllOf, AnyOf)):
        for part in node.parts:
            yield from leaves(part)


def raising_unknowns(node: Node) -> bool:
    """Whether the tree holds an :class:`Unknown` that may raise on stored values."""
    if isinstance(node, Unknown):
        return node.may_raise
    if isinstance(node, (AllOf, AnyOf)):
        return any(raising_unknowns(part) for part in node.parts)
    return False


def hidden_leaves(node: Node) -> Iterator[Leaf]:
    """The leaves of the tree, those hidden in :class:`Unknown` (``inner``) included."""
    if isinstance(node, Leaf):
        yield node
    elif isinstance(node, Unknown) and node.inner is not None:
        yield from hidden_leaves(node.inner)
    elif isinstance(node, (AllOf, AnyOf)):
        for part in node.parts:
            yield from hidden_leaves(part)


def columns_of(node: Node) -> list[str]:
    """The columns the tree tests, in first-use order.

    Parameters
    ----------
    node : Node
        A pruning tree.

    Returns
    -------
    list of str
        The columns.

    Raises
    ------
    None
        Nothing of its own.
    """
    return list(dict.fromkeys(leaf.column for leaf in leaves(node)))
