"""Filter leaves on partition fields, decided per file the way pyarrow's dataset decides them.

pyarrow gives each file of a partitioned dataset (``year=2024/``, directory partitioning, any
``partitioning=`` it accepts) a partition expression: a conjunction of ``field == value`` and
``is_null(field)`` (``__HIVE_DEFAULT_PARTITION__``). Those fields are KNOWN for the file: pyarrow
materialises them from the expression, every row with that value, and never reads a column of
the same name inside the file (a file under ``x=5/`` holding a column ``x`` of 1..3 reads as
``x == 5`` on every row). A field the file's expression does not name (a file above the
partition directories) is read from the file's column, or null where it has none.

So, per file, :func:`partition_tree` replaces each leaf on a known field by its value on the
known value, computed by pyarrow's own kernels (the leaf as an Expression, filtering a one-row
table of that value in the dataset's type): true keeps the file's row groups (an empty
:class:`AllOf`), false or null drops them (an empty :class:`AnyOf`), an error keeps them
(:class:`Unknown`: pyarrow raises as it would). Never the file's statistics or Bloom filters
for such a leaf. A partition expression of any other form makes the whole tree :class:`Unknown`
for that file (no pruning).
"""

from __future__ import annotations

import operator

import pyarrow as pa
import pyarrow.compute as pc

from .predicate import AllOf, AnyOf, Leaf, Node, Unknown, predicate_tree

__all__ = ["known_fields", "partition_tree"]

_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge}
_TRUE = AllOf(())
_FALSE = AnyOf(())


def known_fields(partition_expression: pc.Expression | None, schema: pa.Schema) -> dict[str, pa.Array] | None:
    """The fields a file's partition expression fixes, each as a one-element array of its value
    in the dataset's type (a null for ``is_null``).

    Parameters
    ----------
    partition_expression : pyarrow.compute.Expression or None
        The file's partition expression (``Fragment.partition_expression``).
    schema : pyarrow.Schema
        The dataset's schema.

    Returns
    -------
    dict of str to pyarrow.Array, or None
        Empty for no (or a true) expression; None when the expression is not a conjunction of
        ``field == value`` / ``is_null(field)`` on fields of ``schema`` whose values cast safely
        (then nothing is known for sure about any field).

    Raises
    ------
    None
        An expression it cannot read, or a value that does not cast, gives None.
    """
    if partition_expression is None or partition_expression.equals(pc.scalar(True)):
        return {}
    tree = predicate_tree(partition_expression, schema)
    parts = tree.parts if isinstance(tree, AllOf) else (tree,)
    known: dict[str, pa.Array] = {}
    for part in parts:
        if not isinstance(part, Leaf) or part.op not in ("==", "is_null") or part.column in known:
            return None
        index = schema.get_field_index(part.column)
        if index < 0:
            return None
        typ = schema.field(index).type
        try:
            known[part.column] = (pa.nulls(1, typ) if part.op == "is_null" or part.values is None
                                  else part.values.cast(typ, safe=True))
        except (pa.ArrowException, ValueError, TypeError):
            return None
    return known


def _expression(leaf: Leaf) -> pc.Expression:
    field = pc.field(leaf.column)
    if leaf.op == "is_null":
        return field.is_null()
    if leaf.op == "is_valid":
        return field.is_valid()
    if leaf.values is None:
        raise ValueError(f"{leaf!r} has no values")
    if leaf.op in ("in", "not in"):
        member = field.isin(leaf.values)
        return member if leaf.op == "in" else ~member
    compared: pc.Expression = _COMPARE[leaf.op](field, pc.scalar(leaf.values[0]))
    return compared


def _decide(leaf: Leaf, value: pa.Array) -> Node:
    try:
        matched = pa.table({leaf.column: value}).filter(_expression(leaf)).num_rows
    except (pa.ArrowException, ValueError, TypeError, KeyError) as e:
        return Unknown(f"{leaf!r} on the partition value raises ({type(e).__name__}): pyarrow decides")
    return _TRUE if matched else _FALSE


def _substitute(node: Node, known: dict[str, pa.Array]) -> Node:
    if isinstance(node, Leaf):
        return _decide(node, known[node.column]) if node.column in known else node
    if isinstance(node, AllOf):
        return AllOf(tuple(_substitute(p, known) for p in node.parts))
    if isinstance(node, AnyOf):
        return AnyOf(tuple(_substitute(p, known) for p in node.parts))
    return node


def partition_tree(tree: Node, partition_expression: pc.Expression | None, schema: pa.Schema) -> Node:
    """``tree`` for one file of a dataset: leaves on the fields its ``partition_expression``
    fixes decided on those values (see the module docstring).

    Parameters
    ----------
    tree : Node
        The filter's predicate tree.
    partition_expression : pyarrow.compute.Expression or None
        The file's partition expression.
    schema : pyarrow.Schema
        The dataset's schema.

    Returns
    -------
    Node
        ``tree`` itself when it fixes no field; :class:`Unknown` (no pruning) for an
        expression of another form; else ``tree`` with those leaves replaced by an empty
        :class:`AllOf` (true), an empty :class:`AnyOf` (false or null) or :class:`Unknown`
        (pyarrow raises on the value).

    Raises
    ------
    None
        A leaf pyarrow raises on for the partition value becomes :class:`Unknown`.
    """
    known = known_fields(partition_expression, schema)
    if known is None:
        return Unknown("a partition expression that is not a conjunction of field == value / is_null(field)")
    if not known:
        return tree
    return _substitute(tree, known)
