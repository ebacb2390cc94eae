"""The crypto facts of one column chunk: its key, the file AAD and the chunk's two ordinals.

Spec: Parquet Encryption.md, "Additional Authenticated Data": every module of a column chunk
(ColumnMetaData, pages, indexes, Bloom filter header and bitset) is bound to
``file_aad | module_type | row_group_ordinal | column_ordinal``. One :class:`ChunkCryptoContext`
replaces the four loose arguments; the key is checked and the ordinals are validated (int16,
0..32767) once, when it is made. Its repr shows the ordinals and lengths, never the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .gcm import AES_KEY_LENGTHS, check_key
from .modules import ModuleType, chunk_ordinals, module_aad

__all__ = ["ChunkCryptoContext"]

#: Module types whose AAD is ``file_aad | type | rg ordinal | column ordinal`` (no page ordinal),
#: with their type byte.
_CHUNK_MODULES = {t: bytes([t]) for t in ModuleType
                  if t not in (ModuleType.FOOTER, ModuleType.DATA_PAGE, ModuleType.DATA_PAGE_HEADER)}


@dataclass(frozen=True, eq=False)
class ChunkCryptoContext:
    """Key, file AAD and ordinals of one column chunk; :meth:`aad` gives its modules' AADs.

    Parameters
    ----------
    key : bytes
        The chunk's data key (16, 24 or 32 bytes; never in the repr).
    file_aad : bytes
        AAD prefix + file unique.
    row_group_ordinal, column_ordinal : int
        The chunk's ordinals (0..32767).

    Raises
    ------
    ValueError
        A key of the wrong length, or an ordinal out of range.

    Examples
    --------
    >>> import os
    >>> from secure_bloom import ChunkCryptoContext, ModuleType
    >>> ctx = ChunkCryptoContext(os.urandom(16), b"unique!!", row_group_ordinal=1, column_ordinal=2)
    >>> ctx.aad(ModuleType.BLOOM_FILTER_HEADER).hex()  # file AAD | type 8 | rg 1 | column 2 (int16 LE)
    '756e6971756521210801000200'
    """

    key: bytes = field(repr=False)
    file_aad: bytes = field(repr=False)
    row_group_ordinal: int
    column_ordinal: int

    def __post_init__(self) -> None:
        key = self.key
        if type(key) is not bytes or len(key) not in AES_KEY_LENGTHS:
            object.__setattr__(self, "key", check_key(key))
        if type(self.file_aad) is not bytes:
            if not isinstance(self.file_aad, (bytes, bytearray)):
                raise TypeError(f"file_aad must be bytes, got {type(self.file_aad).__name__}")
            object.__setattr__(self, "file_aad", bytes(self.file_aad))
        # Validates both ordinals (type and int16 range) with the module AAD's own rules, once.
        chunk_ordinals(self.row_group_ordinal, self.column_ordinal)

    def __repr__(self) -> str:
        return (f"ChunkCryptoContext(row_group_ordinal={self.row_group_ordinal}, "
                f"column_ordinal={self.column_ordinal}, key=<{len(self.key)} bytes>, "
                f"file_aad=<{len(self.file_aad)} bytes>)")

    def aad(self, module_type: ModuleType, page_ordinal: int | None = None) -> bytes:
        """The AAD of this chunk's module of ``module_type`` (Encryption.md, "Additional
        Authenticated Data"): the file AAD, the type byte, this chunk's row-group and column
        ordinals and, for a data page or data page header only, ``page_ordinal``.

        Parameters
        ----------
        module_type : ModuleType
            The module's type (8: Bloom filter header, 9: Bloom filter bitset...).
        page_ordinal : int, optional
            The page's ordinal in the chunk; required for data pages and data page headers,
            refused for every other type.

        Returns
        -------
        bytes
            ``file_aad | type | row group | column | [page]`` (int16 little-endian ordinals).

        Raises
        ------
        ValueError
            ``page_ordinal`` missing where required, given where not, or outside 0..32767; or
            ``module_type`` is the footer (which takes no chunk ordinals) or no module type.
        TypeError
            ``page_ordinal`` is not an int.
        """
        return module_aad(self.file_aad, module_type, self.row_group_ordinal, self.column_ordinal, page_ordinal)
