"""Opening input files safely: only regular files are read.

A FIFO named ``data.parquet`` (or a FIFO sidecar) would block ``open()`` until a writer appears,
and a character device may never end. :func:`open_regular_file` opens without blocking
(``O_NONBLOCK``), checks the opened descriptor with ``fstat`` (no race between check and open)
and refuses anything that is not a regular file.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from .errors import NotRegularFileError

__all__ = ["open_regular_file", "file_kind"]

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def file_kind(mode: int) -> str:
    """``regular file``, ``directory``, ``FIFO``, ``socket``, ... for an ``st_mode``."""
    for test, name in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISLNK, "symbolic link")):
        if test(mode):
            return name
    return "special file"


def open_regular_file(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file (symlinks followed).

    Raises :class:`~secure_bloom.errors.NotRegularFileError` for a FIFO, socket or device,
    ``IsADirectoryError`` for a directory and the usual ``OSError`` (``FileNotFoundError``,
    ``PermissionError``) otherwise; never blocks.
    """
    name = os.fspath(path)
    fd = os.open(name, os.O_RDONLY | _NONBLOCK | _CLOEXEC | _BINARY)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(f"{name}: is a {file_kind(mode)}, not a regular file; not read")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
