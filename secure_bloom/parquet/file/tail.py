"""The tail of a Parquet file: magic bytes, footer length, and the footer bytes.

Spec: Parquet format "File Layout" and Encryption.md "Encrypted footer mode" (SPEC_NOTES 5)::

    PAR1 | ... | FileMetaData [| 28-byte signature] | len (4 LE) | PAR1     plaintext footer
    PARE | ... | FileCryptoMetaData | footer module | len (4 LE) | PARE     encrypted footer

``len`` counts the footer bytes between the data and itself. The checks are strict: a file shorter
than two magics and a length, a wrong or mismatched magic, or a length pointing before the leading
magic raise :class:`NotParquetError`. Reading touches only the first 4 and the last
``len + 8`` bytes (never a data page, however small the file), unless a speculative read of the
file's end is asked for (object stores: one request instead of two).

On object stores (``leading_magic=False``) the leading magic is checked only when the tail read
holds it (a file no longer than that read): reading it would be a request of its own per file,
and neither Arrow C++ nor parquet-java reads it (both check only the trailing magic). Everything
this package reads lies between the two magics and is checked on its own (footer length, Thrift,
GCM tags of encrypted modules, filter regions inside the data region), so a damaged first 4 bytes
change no answer; a local file, where the read is free, is still refused for them.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import BinaryIO

from ...errors import NotParquetError
from ...fileio import RecordingFile

__all__ = ["PLAIN_MAGIC", "ENCRYPTED_MAGIC", "FileTail", "read_tail", "MAX_FOOTER_BYTES", "TAIL_READ_BYTES"]

PLAIN_MAGIC = b"PAR1"
ENCRYPTED_MAGIC = b"PARE"
_MAGIC_LEN = 4
_LEN_FIELD = 4
_MIN_FILE = 2 * _MAGIC_LEN + _LEN_FIELD
#: A footer larger than this is refused before it is read (real footers are KiB to a few MiB).
MAX_FOOTER_BYTES = 256 << 20
#: Bytes of a file's end read at once on object stores (Arrow C++ reads 64 KiB too): most footers
#: are smaller, and one request costs far more than 64 KiB of transfer.
TAIL_READ_BYTES = 64 << 10


@dataclass(frozen=True)
class FileTail:
    """Where the footer is and its bytes.

    ``footer_offset`` is the file offset of the first footer byte (FileMetaData, or
    FileCryptoMetaData in encrypted-footer mode); everything before it is the file's data region.

    Parameters
    ----------
    path : str
        The file, as shown.
    file_size : int
        Its size.
    encrypted_footer : bool
        ``PARE`` (encrypted footer) rather than ``PAR1``.
    footer_offset : int
        The first footer byte.
    footer : bytes
        The footer's bytes.
    window : bytes
        The speculative read of the file's end (empty when none).
    """

    path: str
    file_size: int
    encrypted_footer: bool
    footer_offset: int
    footer: bytes
    #: The bytes of the speculative read of the file's end (``speculative_bytes``; empty when none).
    window: bytes = field(default=b"", repr=False, compare=False)

    @property
    def magic(self) -> bytes:
        """The trailing magic the file has: ``PARE`` (encrypted footer) or ``PAR1``."""
        return ENCRYPTED_MAGIC if self.encrypted_footer else PLAIN_MAGIC

    def held(self) -> tuple[int, bytes] | None:
        """The end of the file this tail read holds, as (offset, bytes): from the first footer
        byte or the start of the speculative read, whichever comes first, to the last byte. A
        reader of the same version (pyarrow opening the footer again) can be answered from it.

        Returns
        -------
        (int, bytes) or None
            None without a speculative read (a local file: its footer was read exactly).

        Raises
        ------
        None
            Slices bytes in memory.
        """
        if not self.window:
            return None
        start = self.file_size - len(self.window)
        if self.footer_offset < start:  # a footer longer than the speculative read: its front too
            return self.footer_offset, self.footer[:start - self.footer_offset] + self.window
        return start, self.window

    def __repr__(self) -> str:
        return (f"FileTail(path={self.path!r}, file_size={self.file_size}, "
                f"encrypted_footer={self.encrypted_footer}, footer_offset={self.footer_offset}, "
                f"footer_bytes={len(self.footer)})")


def _read_at(f: BinaryIO, offset: int, n: int) -> bytes:
    if isinstance(f, RecordingFile):  # one positional read (not pyarrow's read_at(nbytes, offset))
        data = f.read_at(offset, n)
    else:
        f.seek(offset)
        data = f.read(n)
    if len(data) != n:
        raise NotParquetError(f"short read: wanted {n} bytes at offset {offset}, got {len(data)}")
    return data


def read_tail(f: BinaryIO, path: str | os.PathLike[str] = "<stream>", *, speculative_bytes: int = 0,
              leading_magic: bool = True) -> FileTail:
    """Validate the magics and footer length of the seekable file ``f`` and return its tail.

    ``speculative_bytes`` (for object stores, where each read is a request: e.g.
    :data:`TAIL_READ_BYTES`, as Arrow C++ reads) reads that much of the file's end at once
    (the whole file if it is smaller): length, magic and, for most files, the whole footer
    (FileCryptoMetaData included) in one request, then only a longer footer's missing front.
    By default the length and magic are read, then exactly the footer. The leading magic is a
    4-byte read of its own unless the whole file was read; ``leading_magic=False`` (object
    stores: see the module docstring) checks it only when the whole file was read.

    Parameters
    ----------
    f : binary file
        Seekable, open for reading.
    path : str or os.PathLike
        What messages call it.
    speculative_bytes : int, default 0
        Read that much of the end at once.
    leading_magic : bool, default True
        Check the leading magic with a read of its own.

    Returns
    -------
    FileTail
        The footer's place and bytes.

    Raises
    ------
    secure_bloom.errors.NotParquetError
        No Parquet magic, or a footer length that does not fit the file.
    OSError
        The file cannot be read.
    """
    name = os.fspath(path)
    size = f.seek(0, os.SEEK_END)
    if size < _MIN_FILE:
        raise NotParquetError(f"{name}: {size} bytes, too short for a Parquet file (at least {_MIN_FILE})")
    window = max(_MAGIC_LEN + _LEN_FIELD, speculative_bytes)
    head: bytes | None
    if size <= window:
        buf = _read_at(f, 0, size)
        head = buf[:_MAGIC_LEN]
    else:
        head = _read_at(f, 0, _MAGIC_LEN) if leading_magic else None
        buf = _read_at(f, size - window, window)
    magic = buf[-_MAGIC_LEN:]
    if magic not in (PLAIN_MAGIC, ENCRYPTED_MAGIC):
        raise NotParquetError(f"{name}: bad trailing magic {magic!r}, expected b'PAR1' or b'PARE'")
    if head is not None and head != magic:
        raise NotParquetError(f"{name}: leading magic {head!r} does not match trailing magic {magic!r}")
    (length,) = struct.unpack_from("<I", buf, len(buf) - _MAGIC_LEN - _LEN_FIELD)
    available = size - _MIN_FILE
    if length == 0 or length > available:
        raise NotParquetError(
            f"{name}: footer length {length} does not fit the {available} bytes between the magics")
    if length > MAX_FOOTER_BYTES:
        raise NotParquetError(f"{name}: footer length {length} exceeds the {MAX_FOOTER_BYTES}-byte limit")
    footer_offset = size - _MAGIC_LEN - _LEN_FIELD - length
    held = len(buf) - _MAGIC_LEN - _LEN_FIELD  # footer bytes the tail read already holds (its end)
    if length <= held:
        footer = buf[held - length:held]
    else:
        footer = _read_at(f, footer_offset, length - held) + buf[:held]
    return FileTail(path=name, file_size=size, encrypted_footer=magic == ENCRYPTED_MAGIC,
                    footer_offset=footer_offset, footer=bytes(footer),
                    window=bytes(buf) if speculative_bytes > 0 else b"")
