"""The column chunks of one footer: checked against the schema, each made when first asked for.

Spec: parquet.thrift ``RowGroup.columns`` / ``ColumnChunk.crypto_metadata`` and Encryption.md
"AAD" (SPEC_NOTES 4): every row group has one chunk per schema leaf; an encrypted chunk's crypto
metadata names its own column, and its row-group and column ordinals fit the int16 AAD fields. A
lookup asks for the chunks of the columns it filters on, so a footer of many row groups and
columns is not turned into objects it never uses.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any

from ...crypto.modules import MAX_ORDINAL
from ...errors import MalformedThriftError
from ...types import ChunkEncryption
from .chunk import ColumnChunk
from .schema import ColumnInfo, shared_leaf_columns

__all__ = ["ChunkIndex", "column_layout"]


#: Column layouts (leaves with their encryption and key labels) shared by the files that have them
#: alike: one tuple, so that what is planned for one layout is planned once (parquet/read/evaluate).
_LAYOUTS: dict[tuple[int, tuple[tuple[int, str], ...]], tuple[tuple[ColumnInfo, ...], tuple[ColumnInfo, ...]]] = {}
_LAYOUTS_MAX = 64
_layouts_lock = threading.Lock()


def column_layout(leaves: tuple[ColumnInfo, ...], labels: tuple[tuple[int, str], ...]) -> tuple[ColumnInfo, ...]:
    """``leaves`` with the encrypted ones marked with their key labels, the same tuple for every
    file of that layout (what is planned for one layout is planned once).

    Parameters
    ----------
    leaves : tuple of ColumnInfo
        The schema's leaves (:func:`~.schema.shared_leaf_columns`: one tuple per schema).
    labels : tuple of (int, str)
        (ordinal, key label) of each encrypted leaf.

    Returns
    -------
    tuple of ColumnInfo
        The leaves, the encrypted ones marked.

    Raises
    ------
    None
    """
    key = (id(leaves), labels)
    found = _LAYOUTS.get(key)
    if found is not None and found[0] is leaves:
        return found[1]
    named = dict(labels)
    columns = tuple(dataclasses.replace(leaf, encrypted=True, key_id=named[leaf.ordinal]) if leaf.ordinal in named
                    else leaf for leaf in leaves)
    with _layouts_lock:
        if len(_LAYOUTS) >= _LAYOUTS_MAX:
            _LAYOUTS.clear()
        _LAYOUTS[key] = (leaves, columns)
    return columns


class ChunkIndex:
    """The chunks of one footer's row groups (:class:`~.chunk.ColumnChunk`), made on first use.

    Parameters
    ----------
    path : str
        The file's display path (named in messages).
    metadata : FileMetaData
        The footer's Thrift object.

    Raises
    ------
    secure_bloom.errors.MalformedThriftError
        A row group has not one chunk per schema leaf.
    """

    def __init__(self, path: str, metadata: Any) -> None:
        leaves = shared_leaf_columns(metadata.schema)
        width = len(leaves)
        for i, rg in enumerate(metadata.row_groups):
            if len(rg.columns) != width:
                raise MalformedThriftError(
                    f"{path}: row group {i} has {len(rg.columns)} column chunks, the schema {width} leaves")
        self.path = path
        #: The leaf columns as the schema gives them (one tuple per schema).
        self.leaves: tuple[ColumnInfo, ...] = leaves
        #: The footer's row groups (Thrift objects).
        self.row_groups: list[Any] = metadata.row_groups
        self._made: dict[int, ColumnChunk] = {}  # rg * width + ordinal -> its chunk, once made

    def __repr__(self) -> str:
        return f"ChunkIndex({self.path!r}, row_groups={len(self.row_groups)}, leaves={len(self.leaves)})"

    def at(self, rg: int, ordinal: int) -> ColumnChunk:
        """The chunk of leaf ``ordinal`` in row group ``rg``, made and checked on first use: its
        crypto metadata must name its own column, an encrypted chunk's ordinals must fit the AAD,
        and it must have metadata (plaintext or encrypted).

        Parameters
        ----------
        rg : int
            The row group's position (in range: the caller checks).
        ordinal : int
            The leaf's ordinal (in range).

        Returns
        -------
        ColumnChunk
            One object per chunk, whichever thread made it.

        Raises
        ------
        secure_bloom.errors.MalformedThriftError
            The chunk's crypto metadata names another column, its ordinals do not fit an AAD, or
            it has no metadata.
        """
        at = rg * len(self.leaves) + ordinal
        made = self._made.get(at)
        if made is not None:
            return made
        leaf = self.leaves[ordinal]
        group = self.row_groups[rg]
        cc = group.columns[ordinal]
        row_group_ordinal = group.ordinal if group.ordinal is not None else rg
        crypto = cc.crypto_metadata
        if crypto is None:
            encryption, kmd = ChunkEncryption.PLAINTEXT, None
        else:
            if crypto.ENCRYPTION_WITH_FOOTER_KEY is not None:
                encryption, kmd = ChunkEncryption.FOOTER_KEY, None
            else:
                with_key = crypto.ENCRYPTION_WITH_COLUMN_KEY
                if tuple(with_key.path_in_schema) != leaf.path_in_schema:
                    raise MalformedThriftError(
                        f"{self.path}: row group {rg} column {leaf.ordinal}: crypto metadata names "
                        f"{'.'.join(with_key.path_in_schema)!r}, the schema {leaf.path!r}")
                encryption, kmd = ChunkEncryption.COLUMN_KEY, with_key.key_metadata
            if not (0 <= row_group_ordinal <= MAX_ORDINAL and leaf.ordinal <= MAX_ORDINAL):
                self._check_ordinals(rg, row_group_ordinal, leaf)  # raises, naming which
        if cc.meta_data is None and (crypto is None or cc.encrypted_column_metadata is None):
            raise MalformedThriftError(f"{self.path}: row group {rg} column {leaf.path!r} has no metadata")
        # positional (the fields' order): half the cost of keywords, once per chunk a lookup reads
        chunk = ColumnChunk(rg, row_group_ordinal, leaf, encryption, kmd, cc.meta_data, cc.encrypted_column_metadata)
        return self._made.setdefault(at, chunk)  # one object per chunk, whichever thread made it

    def of_column(self, ordinal: int, row_groups: Sequence[int]) -> list[ColumnChunk]:
        """:meth:`at` of leaf ``ordinal`` in each of ``row_groups``: the chunks made already
        answered in one pass (what a lookup asks of a column, row group by row group).

        Parameters
        ----------
        ordinal : int
            The leaf's ordinal (in range).
        row_groups : sequence of int
            Row group positions (in range: the caller checks).

        Returns
        -------
        list of ColumnChunk
            The chunks, in order.

        Raises
        ------
        secure_bloom.errors.MalformedThriftError
            As :meth:`at`, for a chunk made here.
        """
        width, made, at = len(self.leaves), self._made, self.at
        out = []
        for rg in row_groups:
            chunk = made.get(rg * width + ordinal)
            out.append(chunk if chunk is not None else at(rg, ordinal))
        return out

    def _check_ordinals(self, rg: int, ordinal: int, leaf: ColumnInfo) -> None:
        """An encrypted chunk's modules are bound to int16 ordinals (Encryption.md, "AAD"): a
        footer naming others is malformed, whatever its signature or encryption vouches for."""
        if not 0 <= ordinal <= MAX_ORDINAL:
            raise MalformedThriftError(
                f"{self.path}: row group {rg} has ordinal {ordinal}; an encrypted file's row-group ordinals "
                f"are 0..{MAX_ORDINAL} (a file with more than {MAX_ORDINAL + 1} row groups cannot be encrypted)")
        if leaf.ordinal > MAX_ORDINAL:
            raise MalformedThriftError(
                f"{self.path}: column {leaf.path!r} is encrypted at leaf ordinal {leaf.ordinal}; an encrypted "
                f"file's column ordinals are 0..{MAX_ORDINAL} (a file with more than {MAX_ORDINAL + 1} leaf "
                "columns cannot be encrypted)")

