"""Column chunks: what one (row group, column) of a Parquet file is, as the footer describes it.

Spec: parquet.thrift ``ColumnChunk`` / ``ColumnMetaData`` (``bloom_filter_offset``,
``bloom_filter_length``), Encryption.md "ColumnChunk crypto metadata" (SPEC_NOTES 4-6).

* :class:`ColumnChunk`: the chunk's ordinals, column, encryption state and key metadata, and its
  metadata as stored (visible ``meta_data``; ``encrypted_column_metadata``, decrypted on demand
  by :meth:`ParquetBloomReader.column_metadata <secure_bloom.parquet.ParquetBloomReader.column_metadata>`).
* :class:`FilterLocation`: where a chunk's Bloom filter lies.
* :class:`ChunkInfo`: the report value ``inspect`` and the audit show for one chunk.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ...types import ChunkEncryption, PhysicalType
from .schema import ColumnInfo

__all__ = ["ColumnChunk", "FilterLocation", "ChunkInfo"]


@dataclass(frozen=True)
class FilterLocation:
    """A Bloom filter's ``bloom_filter_offset`` and ``bloom_filter_length`` (None in files
    written before parquet-java 1.14: the filter's own framing then says where it ends).

    Parameters
    ----------
    offset : int
        ``bloom_filter_offset``.
    length : int or None
        ``bloom_filter_length``.
    """

    offset: int
    length: int | None

    @classmethod
    def of(cls, meta: Any) -> FilterLocation | None:
        """The location a ColumnMetaData names (BloomFilter.md, "File Format":
        ``bloom_filter_offset`` and ``bloom_filter_length``).

        Parameters
        ----------
        meta : ColumnMetaData or None
            The chunk's full (decrypted) metadata.

        Returns
        -------
        FilterLocation or None
            None when it has no filter (or no metadata).

        Raises
        ------
        None
            Reads two fields.
        """
        if meta is None or meta.bloom_filter_offset is None:
            return None
        return cls(int(meta.bloom_filter_offset),
                   None if meta.bloom_filter_length is None else int(meta.bloom_filter_length))


@dataclass(eq=False, slots=True)
class ColumnChunk:
    """One column chunk of a file, as its footer describes it (read-only by convention: not
    frozen, because a reader makes one per chunk of its footer and a frozen dataclass costs
    four times as much to make).

    ``row_group`` is the row group's position in the footer, ``row_group_ordinal`` the ordinal
    its encrypted modules are bound to (``RowGroup.ordinal``, else the position). ``key_metadata``
    is the column key's metadata for :attr:`ChunkEncryption.COLUMN_KEY` chunks, else None (the
    footer key's is the footer's). ``visible_metadata`` is ``ColumnChunk.meta_data`` as stored
    (redacted, or absent, beside ``encrypted_metadata``, the ``encrypted_column_metadata`` module).

    Parameters
    ----------
    row_group : int
        The row group's position in the footer.
    row_group_ordinal : int
        The ordinal its encrypted modules are bound to.
    column : ColumnInfo
        The leaf column.
    encryption : ChunkEncryption
        Plaintext, footer key or column key.
    key_metadata : bytes, optional
        The column key's metadata (column-key chunks only).
    visible_metadata : ColumnMetaData, optional
        ``ColumnChunk.meta_data`` as stored.
    encrypted_metadata : bytes, optional
        The ``encrypted_column_metadata`` module.
    """

    row_group: int
    row_group_ordinal: int
    column: ColumnInfo
    encryption: ChunkEncryption
    key_metadata: bytes | None = field(default=None, repr=False)
    visible_metadata: Any = field(default=None, repr=False)
    encrypted_metadata: bytes | None = field(default=None, repr=False)

    @property
    def path(self) -> str:
        """The leaf column's dotted path."""
        return self.column.path

    @property
    def column_ordinal(self) -> int:
        """The column's ordinal in the file (the AAD's column ordinal)."""
        return self.column.ordinal

    @property
    def physical_type(self) -> PhysicalType:
        """The column's Parquet physical type."""
        return self.column.physical_type

    @property
    def logical_type(self) -> str | None:
        """The column's logical type name, or None."""
        return self.column.logical_type

    @property
    def encrypted(self) -> bool:
        """True if the chunk is encrypted (with the footer key or a key of its own)."""
        return self.encryption.encrypted

    @property
    def where(self) -> str:
        """``row group R, column 'p'`` for messages."""
        return f"row group {self.row_group}, column {self.column.path!r}"


@dataclass(frozen=True)
class ChunkInfo:
    """One column chunk's Bloom filter facts (``inspect`` and the audit).

    ``row_group_ordinal`` is the ordinal the chunk's modules are bound to (see
    :class:`ColumnChunk`). ``has_bloom_filter`` is None when the chunk's metadata is encrypted
    and its key unavailable. ``filter_num_bytes`` is the bitset size from the filter header (None
    when not read). ``filter_error`` says why the chunk's metadata or filter could not be read (a
    missing key, a tampered or leaked filter); one bad chunk never hides the others.

    Parameters
    ----------
    row_group, row_group_ordinal : int
        The row group's position and the ordinal its modules are bound to.
    column : str
        The leaf's dotted path.
    column_ordinal : int
        The leaf's ordinal.
    encrypted : bool
        The chunk is encrypted.
    encryption : ChunkEncryption
        Plaintext, footer key or column key.
    key_id : str or None
        A printable id of the chunk's key.
    key_available : bool
        The caller's keys open the chunk.
    has_bloom_filter : bool or None
        None when the metadata is encrypted and its key unavailable.
    bloom_filter_offset, bloom_filter_length : int or None
        Where the filter is.
    filter_num_bytes : int, optional
        The bitset size from the filter header (None when not read).
    filter_error : str, optional
        Why the metadata or filter could not be read.
    """

    row_group: int
    row_group_ordinal: int
    column: str
    column_ordinal: int
    encrypted: bool
    encryption: ChunkEncryption
    key_id: str | None
    key_available: bool
    has_bloom_filter: bool | None
    bloom_filter_offset: int | None
    bloom_filter_length: int | None
    filter_num_bytes: int | None = None
    filter_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The chunk's facts as JSON-able values (``inspect --json``).

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
        return dataclasses.asdict(self)
