"""The columns and chunks of an open Parquet file, from its footer's chunk index: the first part
of :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader`.

Spec: parquet.thrift ``FileMetaData`` / ``RowGroup`` / ``ColumnChunk``. Nothing here reads the
file: every answer comes from the footer the reader decoded when it was opened
(:class:`~.chunk_index.ChunkIndex`); encrypted columns are labelled with their key's printable
id (never key bytes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .chunk import ColumnChunk
from .chunk_index import ChunkIndex, column_layout
from .chunk_keys import ChunkKeys
from .footer import Footer
from .schema import ColumnInfo, ColumnRef, find_column

__all__ = ["ReaderChunks"]


class ReaderChunks:
    """Columns and chunks of the open file (:class:`~secure_bloom.parquet.file.reader.ParquetBloomReader`
    is made of this part, :class:`~.reader_keys.ReaderKeys` and :class:`~.reader_filters.ReaderFilters`;
    it is not made on its own)."""

    #: The file, as messages name it.
    path: str
    #: The decoded footer (:class:`~.footer.Footer`).
    footer: Footer
    #: The keys of the file's chunks (:class:`~.chunk_keys.ChunkKeys`).
    chunk_keys: ChunkKeys
    _index: ChunkIndex
    _leaves: tuple[ColumnInfo, ...]
    _row_groups: list[Any]
    _chunk_at: Callable[[int, int], ColumnChunk]
    _labelled: tuple[ColumnInfo, ...] | None
    _key_label: Callable[[bytes | None], str]


    @property
    def num_row_groups(self) -> int:
        """The number of row groups."""
        return len(self._row_groups)

    @property
    def num_rows(self) -> int:
        """The number of rows, as the footer says."""
        return int(self.footer.metadata.num_rows)

    @property
    def columns(self) -> tuple[ColumnInfo, ...]:
        """The leaf columns, in schema order, the encrypted ones with their key's label."""
        if self._labelled is None:
            labels = tuple((leaf.ordinal, self._key_label(self._key_metadata(first))) for leaf in self._leaves
                           if self._row_groups and (first := self._chunk_at(0, leaf.ordinal)).encrypted)
            self._labelled = column_layout(self._leaves, labels)
        return self._labelled

    @property
    def leaves(self) -> tuple[ColumnInfo, ...]:
        """The leaf columns as the schema gives them (no key labels, so no key metadata parsed),
        one tuple shared by every file of the same schema: what a lookup plans with."""
        return self._leaves

    def _ordinal(self, column: ColumnRef) -> int:
        """The leaf ordinal of ``column`` (an int ordinal checked, anything else by :meth:`column`)."""
        if type(column) is int and 0 <= column < len(self._leaves):
            return column
        return self.column(column).ordinal

    def column(self, column: ColumnRef) -> ColumnInfo:
        """A leaf column by dotted path, path parts (``("a", "b")`` vs ``("a.b",)``), ordinal, or
        ColumnInfo.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.

        Returns
        -------
        ColumnInfo
            The leaf.

        Raises
        ------
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        """
        return find_column(self.columns, column, self.path)

    def chunk(self, row_group: int, column: ColumnRef) -> ColumnChunk:
        """The chunk of ``column`` in row group ``row_group`` (its position in the footer).

        Parameters
        ----------
        row_group : int
            The row group's position.
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.

        Returns
        -------
        ColumnChunk
            The chunk, as the footer describes it.

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        """
        ordinal = self._ordinal(column)
        if isinstance(row_group, bool) or not isinstance(row_group, int) or not 0 <= row_group < len(self._row_groups):
            raise IndexError(f"row group {row_group!r} out of range 0..{len(self._row_groups) - 1}")
        return self._chunk_at(row_group, ordinal)

    def chunks_of(self, column: ColumnRef, row_groups: Sequence[int]) -> list[ColumnChunk]:
        """:meth:`chunk` of ``column`` in each of ``row_groups``, checked and made in one pass.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.
        row_groups : sequence of int
            Row group positions.

        Returns
        -------
        list of ColumnChunk
            The chunks, in order.

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        """
        ordinal = self._ordinal(column)
        count = len(self._row_groups)
        for rg in row_groups:
            if type(rg) is not int or not 0 <= rg < count:
                return [self.chunk(rg, ordinal) for rg in row_groups]  # raises as chunk() does
        return self._index.of_column(ordinal, row_groups)

    def column_chunks(self, column: ColumnRef | None = None) -> list[ColumnChunk]:
        """Every chunk (row group by row group, leaves in order), or those of ``column``.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo, optional
            A dotted path, path parts, an ordinal or a ColumnInfo; None: every column.

        Returns
        -------
        list of ColumnChunk
            In row group order (then leaf order when ``column`` is None).

        Raises
        ------
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        """
        if column is None:
            return [self._chunk_at(rg, ordinal) for rg in range(len(self._row_groups))
                    for ordinal in range(len(self._leaves))]
        ordinal = self.column(column).ordinal
        return [self._chunk_at(rg, ordinal) for rg in range(len(self._row_groups))]


    def _key_metadata(self, chunk: ColumnChunk) -> bytes | None:
        """The metadata of the key ``chunk`` is encrypted with (the footer key's for FOOTER_KEY)."""
        return self.chunk_keys.key_metadata(chunk)
