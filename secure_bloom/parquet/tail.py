"""The tail of a Parquet file: magic bytes, footer length, and the footer bytes.

Spec: Parquet format "File Layout" and Encryption.md "Encrypted footer mode" (SPEC_NOTES 5)::

    PAR1 | ... | FileMetaData [| 28-byte signature] | len (4 LE) | PAR1     plaintext footer
    PARE | ... | FileCryptoMetaData | footer module | len (4 LE) | PARE     encrypted footer

``len`` counts the footer bytes between the data and itself. The checks are strict: a file shorter
than two magics and a length, a wrong or mismatched magic, or a length pointing before the leading
magic raise :class:`NotParquetError`. Reading touches only the first 4 and the last
``len + 8`` bytes (never a data page, however small the file).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import BinaryIO

from ..errors import NotParquetError

__all__ = ["PLAIN_MAGIC", "ENCRYPTED_MAGIC", "FileTail", "read_tail", "MAX_FOOTER_BYTES"]

PLAIN_MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"
_MAGIC_LEN = 4
_LEN_FIELD = 4
_MIN_FILE = 2 * _MAGIC_LEN + _LEN_FIELD
#: A footer larger than this is refused before it is read (real footers are KiB to a few MiB).
MAX_FOOTER_BYTES = 256 << 20


@dataclass(frozen=True)
class FileTail:
    """Where the footer is and its bytes.

    ``footer_offset`` is the file offset of the first footer byte (FileMetaData, or
    FileCryptoMetaData in encrypted-footer mode); everything before it is the file's data region.
    """

    path: str
    file_size: int
    encrypted_footer: bool
    footer_offset: int
    footer: bytes

    @property
    def magic(self) -> bytes:
        return ENCRYPTED_MAGIC if self.encrypted_footer else PLAIN_MAGIC

    def __repr__(self) -> str:
        return (f"FileTail(path={self.path!r}, file_size={self.file_size}, "
                f"encrypted_footer={self.encrypted_footer}, footer_offset={self.footer_offset}, "
                f"footer_bytes={len(self.footer)})")


def _read_at(f: BinaryIO, offset: int, n: int) -> bytes:
    f.seek(offset)
    data = f.read(n)
    if len(data) != n:
        raise NotParquetError(f"short read: wanted {n} bytes at offset {offset}, got {len(data)}")
    return data


def read_tail(f: BinaryIO, path: str | os.PathLike[str] = "<stream>") -> FileTail:
    """Validate the magics and footer length of the seekable file ``f`` and return its tail."""
    name = os.fspath(path)
    size = f.seek(0, os.SEEK_END)
    if size < _MIN_FILE:
        raise NotParquetError(f"{name}: {size} bytes, too short for a Parquet file (at least {_MIN_FILE})")
    head = _read_at(f, 0, _MAGIC_LEN)
    end = _read_at(f, size - _MAGIC_LEN - _LEN_FIELD, _MAGIC_LEN + _LEN_FIELD)
    magic = end[-_MAGIC_LEN:]
    if magic not in (PLAIN_MAGIC, ENCRYPTED_MAGIC):
        raise NotParquetError(f"{name}: bad trailing magic {magic!r}, expected b'PAR1' or b'PARE'")
    if head != magic:
        raise NotParquetError(f"{name}: leading magic {head!r} does not match trailing magic {magic!r}")
    (length,) = struct.unpack_from("<I", end, 0)
    available = size - _MIN_FILE
    if length == 0 or length > available:
        raise NotParquetError(
            f"{name}: footer length {length} does not fit the {available} bytes between the magics")
    if length > MAX_FOOTER_BYTES:
        raise NotParquetError(f"{name}: footer length {length} exceeds the {MAX_FOOTER_BYTES}-byte limit")
    footer_offset = size - _MAGIC_LEN - _LEN_FIELD - length
    footer = _read_at(f, footer_offset, length)
    return FileTail(path=name, file_size=size, encrypted_footer=magic == ENCRYPTED_MAGIC,
                    footer_offset=footer_offset, footer=bytes(footer))
