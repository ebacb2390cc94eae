"""What the value encoders need to know about a column: its type facts, nothing about files.

Spec: parquet.thrift ``SchemaElement`` (physical type, ``type_length``) and LogicalTypes.md (the
logical annotation and its parameters). :class:`ColumnType` is a structural protocol:
:class:`secure_bloom.parquet.file.schema.ColumnInfo` satisfies it, and so does any object with these
attributes, so :mod:`secure_bloom.values` never imports the file layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..errors import InvalidValueError
from ..types import PhysicalType

__all__ = ["ColumnType", "column_error"]


class ColumnType(Protocol):
    """A leaf column's type: ``logical_type`` is the annotation's name (``STRING``, ``DECIMAL``,
    ``DATE``, ``TIMESTAMP``, ``TIME``, ``INTEGER``, ``UUID``, ``FLOAT16``, ...) or None;
    ``time_unit`` is ``millis``/``micros``/``nanos``; ``path`` and ``type_name`` label errors;
    ``path_in_schema`` finds the leaf inside an Arrow array of its top-level field."""

    @property
    def path(self) -> str:
        """The leaf's dotted path."""

    @property
    def path_in_schema(self) -> Sequence[str]:
        """The leaf's path parts."""

    @property
    def physical_type(self) -> PhysicalType:
        """The Parquet physical type."""

    @property
    def type_length(self) -> int | None:
        """The width of a FIXED_LEN_BYTE_ARRAY column, else None."""

    @property
    def logical_type(self) -> str | None:
        """The logical type name (``DECIMAL``, ``TIMESTAMP``...), or None."""

    @property
    def scale(self) -> int | None:
        """A DECIMAL column's scale, else None."""

    @property
    def precision(self) -> int | None:
        """A DECIMAL column's precision, else None."""

    @property
    def time_unit(self) -> str | None:
        """A TIME / TIMESTAMP column's unit (``millis``, ``micros``, ``nanos``), else None."""

    @property
    def is_adjusted_to_utc(self) -> bool | None:
        """For TIME / TIMESTAMP: True if values are UTC instants; else None."""

    @property
    def int_bits(self) -> int | None:
        """An INT logical type's bit width, else None."""

    @property
    def int_signed(self) -> bool | None:
        """An INT logical type's signedness, else None."""

    @property
    def type_name(self) -> str:
        """The type as messages name it."""


def column_error(column: ColumnType, value: Any, why: str) -> InvalidValueError:
    """``InvalidValueError`` naming the column, its type and (shortened) the value.

    Parameters
    ----------
    column : ColumnType
        The column the value was meant for.
    value : object
        The value (shown as its ``repr``, cut to 80 characters; an int too long for a decimal
        ``repr`` by its bit length).
    why : str
        What is wrong, continuing the sentence (``"cannot be probed: Bloom filters do not record
        nulls"``).

    Returns
    -------
    secure_bloom.errors.InvalidValueError
        ``column 'PATH' (TYPE): VALUE WHY``, for the caller to raise.

    Raises
    ------
    None
        The error is returned, not raised.
    """

    try:
        shown = repr(value)
    except ValueError:  # an int beyond sys.get_int_max_str_digits() has no decimal repr
        shown = f"<{type(value).__name__} of {value.bit_length()} bits>" if isinstance(value, int) else "<value>"
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return InvalidValueError(f"column {column.path!r} ({column.type_name}): {shown} {why}")
