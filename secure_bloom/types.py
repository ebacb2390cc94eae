"""The states that travel between layers, as enums rather than strings.

Each enum's values are the strings the JSON outputs (``inspect --json``, probe and audit reports)
have always used, and every member *is* that string (``str`` subclass), so ``json.dumps`` and
``==`` against the old literals keep working while a typo becomes an ``AttributeError``.
"""

from __future__ import annotations

from enum import Enum, IntEnum

__all__ = ["PhysicalType", "ChunkEncryption", "FilterForm", "FilterSizing", "FooterMode", "Verdict"]


class PhysicalType(IntEnum):
    """Parquet physical types (parquet.thrift ``Type``), with the same numbers."""

    BOOLEAN = 0
    INT32 = 1
    INT64 = 2
    INT96 = 3
    FLOAT = 4
    DOUBLE = 5
    BYTE_ARRAY = 6
    FIXED_LEN_BYTE_ARRAY = 7

    @classmethod
    def coerce(cls, value: PhysicalType | str | int) -> PhysicalType:
        """Accept a member, its name (case-insensitive) or its Thrift number.

        Parameters
        ----------
        value : PhysicalType, str or int
            A member, a name such as ``"int64"`` (surrounding spaces ignored), or the number
            ``Type`` has in parquet.thrift (0 BOOLEAN ... 7 FIXED_LEN_BYTE_ARRAY).

        Returns
        -------
        PhysicalType
            The member.

        Raises
        ------
        ValueError
            An unknown name or number.
        TypeError
            A value that is neither a string nor a number (e.g. None).
        """

        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                raise ValueError(f"unknown physical type {value!r}") from None
        return cls(int(value))


class _StrEnum(str, Enum):
    """A string-valued enum whose ``str()`` is its value (as ``enum.StrEnum`` on Python 3.11+)."""

    def __str__(self) -> str:
        return str(self.value)


class ChunkEncryption(_StrEnum):
    """How a column chunk is protected (Encryption.md, "ColumnChunk crypto metadata")."""

    PLAINTEXT = "plaintext"
    FOOTER_KEY = "footer_key"
    COLUMN_KEY = "column_key"

    @property
    def encrypted(self) -> bool:
        """True unless the chunk is plaintext."""
        return self is not ChunkEncryption.PLAINTEXT


class FooterMode(_StrEnum):
    """The three footer layouts (Encryption.md, "File format")."""

    PLAINTEXT = "plaintext"
    SIGNED = "plaintext_signed"
    ENCRYPTED = "encrypted"


class FilterForm(_StrEnum):
    """How a chunk's Bloom filter bytes are stored, judged from their framing alone."""

    PLAINTEXT = "plaintext"
    ENCRYPTED = "encrypted"
    GARBAGE = "garbage"


class FilterSizing(_StrEnum):
    """How a writer sizes a column's Bloom filters (docs/security-model/filter-sizes.md).

    A filter's ``numBytes`` and its module lengths are visible without any key, so a size chosen
    per row group tells anyone who can list the file each row group's distinct count to within
    a factor of two.

    * ``PER_ROW_GROUP``: each row group's filter is sized for its own distinct count (or the
      given ``ndv``) at the target fpp: smallest filters, sizes reveal per-row-group cardinality.
    * ``FIXED``: every filter of the column has one size for the whole file (or dataset), chosen
      for the largest row group's need at the target fpp (or given as ``num_bytes``): sizes and
      module lengths are equal across row groups and reveal only that maximum.
    """

    PER_ROW_GROUP = "per_row_group"
    FIXED = "fixed"

    @classmethod
    def coerce(cls, value: FilterSizing | str) -> FilterSizing:
        """A member or its value (``"fixed"``); ValueError naming the choices otherwise.

        Parameters
        ----------
        value : FilterSizing or str

        Returns
        -------
        FilterSizing

        Raises
        ------
        ValueError
            ``value`` is no sizing mode.
        """
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in cls)
            raise ValueError(f"sizing must be one of {choices}, got {value!r}") from None


class Verdict(_StrEnum):
    """A Bloom filter's answer for one value: it may be there, or it is certainly absent."""

    MAYBE = "maybe"
    ABSENT = "absent"
