"""File I/O shared by the file layer and the key-material store: safe input, logged reads, atomic output.

* :func:`open_regular_file` / :func:`open_regular_fd`: only regular files are read. A FIFO named
  ``data.parquet`` would block ``open()`` until a writer appears and a character device may never
  end, so the file is opened without blocking (``O_NONBLOCK``) and the opened descriptor checked
  with ``fstat`` (no race between check and open).
* :class:`LocalFile` (:func:`open_local_file`): a regular file read with ``os.pread`` alone, its
  ``fstat`` the one taken at the open: no buffered file object, whose making costs four more
  system calls (each a release of the GIL that another thread takes).
* :class:`RecordingFile`: a read-only file that logs every (offset, length) read.
* :class:`AtomicOutput` and :func:`fsync_dir`: a file that appears under its final name complete
  and synced, or not at all (``O_TMPFILE`` + ``linkat`` where Linux allows it, else a hidden
  temporary name + ``rename``).

Knows nothing of Parquet.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from .errors import NotRegularFileError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["open_regular_file", "open_regular_fd", "open_regular_stat", "open_local_file", "LocalFile", "file_kind", "RecordingFile", "ranges_digest", "AtomicOutput", "fsync_dir"]

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def file_kind(mode: int) -> str:
    """``regular file``, ``directory``, ``FIFO``, ``socket``, ... for an ``st_mode``.

    Parameters
    ----------
    mode : int
        An ``st_mode``.

    Returns
    -------
    str
        The kind, as messages name it.

    Raises
    ------
    None
        Nothing of its own.
    """
    for test, name in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISLNK, "symbolic link")):
        if test(mode):
            return name
    return "special file"


def open_regular_fd(path: str | os.PathLike[str]) -> int:
    """A blocking read-only descriptor of ``path`` if it is a regular file (symlinks followed).

    Raises :class:`~secure_bloom.errors.NotRegularFileError` for a FIFO, socket or device,
    ``IsADirectoryError`` for a directory and the usual ``OSError`` (``FileNotFoundError``,
    ``PermissionError``) otherwise; never blocks. The caller closes the descriptor.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    int
        A read-only descriptor (the caller closes it).

    Raises
    ------
    secure_bloom.errors.NotRegularFileError
        A FIFO, socket or device.
    IsADirectoryError
        A directory.
    OSError
        Any other failure to open it.
    """
    return open_regular_stat(path)[0]


def open_regular_stat(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """:func:`open_regular_fd` and the ``fstat`` of the descriptor (taken once, at the open).

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    (int, os.stat_result)
        The descriptor and its ``fstat``.

    Raises
    ------
    secure_bloom.errors.NotRegularFileError
        A FIFO, socket or device.
    OSError
        Any other failure to open it.
    """
    name = os.fspath(path)
    fd = os.open(name, os.O_RDONLY | _NONBLOCK | _CLOEXEC | _BINARY)
    try:
        st = os.fstat(fd)
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(f"{name}: is a {file_kind(mode)}, not a regular file; not read")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def open_regular_file(path: str | os.PathLike[str]) -> BinaryIO:
    """:func:`open_regular_fd` as a binary file object.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    binary file
        Open for reading.

    Raises
    ------
    secure_bloom.errors.NotRegularFileError
        A FIFO, socket or device.
    IsADirectoryError
        A directory.
    OSError
        Any other failure to open it.
    """
    fd = open_regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class LocalFile:
    """A regular local file open for positional reads: its descriptor, the ``fstat`` taken when
    it was opened (:func:`open_local_file`), and a position of its own. ``read`` is one
    ``os.pread`` at that position; ``seek`` moves it without a system call, ``SEEK_END``
    counting from :attr:`stat`'s size (the size when opened: a reader reads the version it
    opened). Only :meth:`close` releases the descriptor.

    Parameters
    ----------
    fd : int
        A descriptor open for reading (owned: :meth:`close` closes it).
    st : os.stat_result
        Its ``fstat``.
    name : str
        The path, as messages name it.
    """

    mode = "rb"

    def __init__(self, fd: int, st: os.stat_result, name: str) -> None:
        self._fd = fd
        #: The ``fstat`` of the descriptor when it was opened.
        self.stat = st
        self.name = name
        self._pos = 0
        self.closed = False

    def fileno(self) -> int:
        """The descriptor.

        Returns
        -------
        int
            The open descriptor.

        Raises
        ------
        ValueError
            Once closed.
        """
        if self.closed:
            raise ValueError(f"{self.name}: I/O operation on a closed file")
        return self._fd

    def read(self, n: int = -1) -> bytes:
        """Read ``n`` bytes (-1: to the size when opened) at the position, which moves past them.

        Parameters
        ----------
        n : int, default -1
            How many bytes.

        Returns
        -------
        bytes
            At most ``n`` bytes (fewer at the end of the file).

        Raises
        ------
        OSError
            From ``os.pread``.
        ValueError
            Once closed.
        """
        if n is None or n < 0:
            n = max(0, self.stat.st_size - self._pos)
        data = os.pread(self.fileno(), n, self._pos)
        self._pos += len(data)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move the position (no system call).

        Parameters
        ----------
        offset : int
            The position, relative to ``whence``.
        whence : int, default os.SEEK_SET
            ``os.SEEK_SET``, ``os.SEEK_CUR`` or ``os.SEEK_END`` (the size when opened).

        Returns
        -------
        int
            The new absolute position.

        Raises
        ------
        OSError
            A negative position (``EINVAL``), as ``lseek`` raises.
        ValueError
            An unknown ``whence``, or once closed.
        """
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self.stat.st_size}.get(whence)
        if base is None:
            raise ValueError(f"invalid whence ({whence})")
        self.fileno()
        if base + offset < 0:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), self.name)
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        """The position.

        Returns
        -------
        int
            Bytes from the start of the file.

        Raises
        ------
        ValueError
            Once closed.
        """
        self.fileno()
        return self._pos

    def close(self) -> None:
        """Close the descriptor (closing twice is fine).

        Raises
        ------
        OSError
            From ``os.close``.
        """
        if not self.closed:
            self.closed = True
            os.close(self._fd)

    def __enter__(self) -> LocalFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalFile({self.name!r}, closed={self.closed})"


def open_local_file(path: str | os.PathLike[str]) -> LocalFile:
    """:func:`open_regular_stat` as a :class:`LocalFile`: a regular file only, never blocking.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    LocalFile
        Open for positional reads (the caller closes it).

    Raises
    ------
    secure_bloom.errors.NotRegularFileError
        A FIFO, socket or device.
    IsADirectoryError
        A directory.
    OSError
        Any other failure to open it.
    """
    fd, st = open_regular_stat(path)
    return LocalFile(fd, st, os.fspath(path))


def _fold(digest: Any, offset: int, data: bytes) -> None:
    digest.update(struct.pack("<QQ", offset, len(data)))
    digest.update(data)


def ranges_digest(f: BinaryIO, ranges: Sequence[tuple[int, int]]) -> str:
    """The SHA-256 (hex) of the ``ranges`` (offset, length) of ``f`` read in that order, as
    :attr:`RecordingFile.digest` computes it while reading them.

    Parameters
    ----------
    f : binary file
        A seekable file holding the bytes that were read.
    ranges : sequence of (int, int)
        The (offset, length) pairs, in reading order (:attr:`RecordingFile.ranges`).

    Returns
    -------
    str
        64 hex digits; each range is folded in as its offset and length (two little-endian
        uint64) followed by the bytes read.

    Raises
    ------
    OSError
        From ``f``'s own ``seek`` or ``read``.
    """
    digest = hashlib.sha256()
    for offset, n in ranges:
        f.seek(offset)
        _fold(digest, offset, f.read(n))
    return digest.hexdigest()


class RecordingFile:
    """A read-only file wrapper that records every (offset, length) read: proof that a reader
    reads the tail and filter bytes only.

    Parameters
    ----------
    raw : binary file
        Any seekable binary file: a local file, or a ``pyarrow`` random-access file of an object
        store (each read is then one range request).
    close_raw : bool, default True
        Whether :meth:`close` closes ``raw``; False for a file the caller opened and closes.
    digest : bool, default False
        Also keep a SHA-256 of every range read (:attr:`digest`).
    positional : bool, default False
        ``raw`` is a regular local file this process opened: :meth:`read_at` reads it with
        ``os.pread`` on its descriptor (one system call, ``raw``'s position untouched) instead of
        a seek and a read through its buffer.
    """

    def __init__(self, raw: BinaryIO, *, close_raw: bool = True, digest: bool = False,
                 positional: bool = False) -> None:
        self._raw = raw
        self._close_raw = close_raw
        self._fd: int | None = raw.fileno() if positional else None
        self.ranges: list[tuple[int, int]] = []
        #: With ``digest``: a SHA-256 of every range read, in order (:func:`ranges_digest` of
        #: :attr:`ranges` gives the same when the file still holds those bytes).
        self._digest = hashlib.sha256() if digest else None
        #: regions kept until close (hold), then regions read ahead (read_ahead), oldest first
        self._held: list[tuple[int, bytes]] = []
        self._ahead: list[tuple[int, bytes]] = []

    def hold(self, offset: int, data: bytes) -> None:
        """Keep ``data``, the file's bytes at ``offset`` (already read, e.g. an object store's
        speculative tail read) until :meth:`close`: a later read lying wholly inside one held
        region is answered from it, with no read of ``raw`` (and none recorded).

        Parameters
        ----------
        offset : int
            Where ``data`` starts in the file.
        data : bytes
            The bytes there (empty: nothing is held).

        Raises
        ------
        None
            Nothing is read or checked: the caller vouches that ``data`` is the file's.
        """
        if data:
            self._held.append((offset, data))

    def holds(self, offset: int, n: int) -> bool:
        """Whether the ``n`` bytes at ``offset`` lie wholly inside one held region (a read of
        them would not touch ``raw``).

        Parameters
        ----------
        offset : int
            The first byte.
        n : int
            How many bytes.

        Returns
        -------
        bool
            True when one region held by :meth:`hold` or :meth:`read_ahead` covers them all.

        Raises
        ------
        None
            It only looks at what is held.
        """
        return self._find(offset, n) is not None

    def read_ahead(self, offset: int, n: int, *, keep_bytes: int) -> bytes:
        """Read ``n`` bytes at ``offset`` (one read of ``raw``, recorded) and hold them, as
        :meth:`hold` does, but only while the regions read ahead take at most ``keep_bytes``
        (the oldest are dropped first; the newest is always kept).

        Parameters
        ----------
        offset : int
            The first byte.
        n : int
            How many bytes to read.
        keep_bytes : int
            The most bytes the regions read ahead may hold together.

        Returns
        -------
        bytes
            What ``raw`` returned: fewer than ``n`` bytes past the end of the file.

        Raises
        ------
        OSError
            From ``raw``'s ``seek`` or ``read``.
        """
        self._raw.seek(offset)
        data = self._raw.read(n)
        self._record(offset, data)
        if data:
            self._ahead.append((offset, data))
            total = sum(len(d) for _, d in self._ahead)
            while len(self._ahead) > 1 and total > keep_bytes:
                total -= len(self._ahead.pop(0)[1])
        return data

    def _find(self, offset: int, n: int) -> bytes | None:
        """The ``n`` held bytes at ``offset``, if one region holds them all."""
        for at, held in (*self._held, *self._ahead):
            start = offset - at
            if 0 <= start and start + n <= len(held):
                return held[start:start + n]
        return None

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move ``raw``'s position (no read, nothing recorded).

        Parameters
        ----------
        offset : int
            The position, relative to ``whence``.
        whence : int, default os.SEEK_SET
            ``os.SEEK_SET``, ``os.SEEK_CUR`` or ``os.SEEK_END``.

        Returns
        -------
        int
            The new absolute position.

        Raises
        ------
        OSError
            From ``raw`` (e.g. a negative position).
        """
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        """The current position of ``raw``.

        Returns
        -------
        int
            Bytes from the start of the file.

        Raises
        ------
        OSError
            From ``raw`` (e.g. once closed).
        """
        return self._raw.tell()

    def read(self, n: int = -1) -> bytes:
        """Read ``n`` bytes at the current position: from a held region when one covers them all
        (not recorded), else from ``raw`` (recorded in :attr:`ranges`).

        Parameters
        ----------
        n : int, default -1
            How many bytes; -1 reads to the end (always from ``raw``).

        Returns
        -------
        bytes
            At most ``n`` bytes (fewer at the end of the file).

        Raises
        ------
        OSError
            From ``raw``'s ``tell``, ``seek`` or ``read``.
        """
        pos = self._raw.tell()
        found = self._find(pos, n) if n >= 0 else None
        if found is not None:
            self._raw.seek(pos + n)
            return found
        data = self._raw.read(n)
        self._record(pos, data)
        return data

    def read_at(self, offset: int, n: int) -> bytes:
        """Read ``n`` bytes at ``offset`` (a positional read): from a held region when one covers
        them all (not recorded), else from ``raw`` (recorded in :attr:`ranges`), with ``os.pread``
        for a ``positional`` file.

        Parameters
        ----------
        offset : int
            The first byte (>= 0).
        n : int
            How many bytes (>= 0).

        Returns
        -------
        bytes
            At most ``n`` bytes (fewer at the end of the file).

        Raises
        ------
        OSError
            From ``raw`` (or ``os.pread``).
        """
        found = self._find(offset, n)
        if found is not None:
            return found
        if self._fd is not None:
            data = os.pread(self._fd, n, offset)
        else:
            self._raw.seek(offset)
            data = self._raw.read(n)
        self._record(offset, data)
        return data

    def _record(self, offset: int, data: bytes) -> None:
        self.ranges.append((offset, len(data)))
        if self._digest is not None:
            _fold(self._digest, offset, data)

    @property
    def digest(self) -> str | None:
        """The SHA-256 (hex) of the ranges read so far (None without ``digest=True``)."""
        return self._digest.hexdigest() if self._digest is not None else None

    def close(self) -> None:
        """Drop the held regions and close ``raw`` (unless ``close_raw=False``).

        Raises
        ------
        OSError
            From closing ``raw``.
        """
        self._held, self._ahead = [], []
        if self._close_raw:
            self._raw.close()


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """fsync a directory so a rename or link in it survives a crash (best effort).

    Parameters
    ----------
    directory : str or os.PathLike
        The directory.

    Raises
    ------
    None
        Best effort: failures are ignored.
    """
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class AtomicOutput:
    """A new file written in full, synced, then given its final name atomically (:meth:`publish`).

    Where Linux allows it (``O_TMPFILE``) the file has no name until :meth:`publish` links it in,
    so a process killed before that leaves nothing behind; elsewhere it is the hidden temporary
    ``path`` (beside the target), which the caller removes on failure. The file is held under an
    exclusive ``flock`` until closed, so a cleaner can tell a live writer's temporary file from a
    dead one's.

    Parameters
    ----------
    path : pathlib.Path
        The temporary name, beside the final one (its directory is where the anonymous file is
        made); must not exist.
    mode : int
        The new file's permission bits (the umask applies).

    Raises
    ------
    FileExistsError
        ``path`` exists (when the file is not anonymous).
    OSError
        The directory cannot be written, or ``flock`` fails.
    """

    def __init__(self, path: Path, mode: int) -> None:
        self.path = path
        self.written = 0
        self.anonymous = False
        if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
            try:
                self._fd = os.open(path.parent, os.O_TMPFILE | os.O_WRONLY, mode)
                self.anonymous = True
            except OSError:  # the filesystem has no O_TMPFILE
                pass
        if not self.anonymous:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        if fcntl is not None:  # held until closed: tells a live writer's file from a dead one's
            fcntl.flock(self._fd, fcntl.LOCK_EX)

    @property
    def readable_path(self) -> Path:
        """A path that opens this file (also while it has no name)."""
        return Path(f"/proc/self/fd/{self._fd}") if self.anonymous else self.path

    def write(self, data: bytes | memoryview) -> None:
        """Append all of ``data`` (short writes are continued) and count it in :attr:`written`.

        Parameters
        ----------
        data : bytes or memoryview
            The bytes to append.

        Raises
        ------
        OSError
            The write failed (e.g. ``ENOSPC``); what was written stays written.
        """
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
            self.written += n

    def truncate(self, size: int) -> None:
        """Cut the file to its first ``size`` bytes; later writes continue from there.

        Parameters
        ----------
        size : int
            The new length (also the new :attr:`written`).

        Raises
        ------
        OSError
            From ``ftruncate`` or ``lseek`` (e.g. a negative size).
        """
        os.ftruncate(self._fd, size)
        os.lseek(self._fd, size, os.SEEK_SET)
        self.written = size

    def chmod(self, mode: int) -> None:
        """Set the file's permission bits (``fchmod``: the umask does not apply).

        Parameters
        ----------
        mode : int
            The permission bits.

        Raises
        ------
        OSError
            From ``fchmod``.
        """
        os.fchmod(self._fd, mode)

    def sync(self) -> None:
        """``fsync`` the file's data and metadata (before :meth:`publish`).

        Raises
        ------
        OSError
            From ``fsync`` (e.g. an I/O error on the device).
        """
        os.fsync(self._fd)

    def publish(self, target: Path, *, replace: bool) -> None:
        """Give the synced file the name ``target`` (in the directory of ``path``) atomically.

        Without ``replace`` the file is hard-linked in (``linkat``), which never replaces
        anything: a ``target`` that exists, appeared meanwhile or is a dangling symlink raises
        ``FileExistsError`` and is left as it is. With ``replace`` an anonymous file is linked in
        as ``path`` and renamed over ``target``: a kill between those two calls is the only way
        to leave a temporary file behind. The directory is not fsynced (:func:`fsync_dir`).

        Parameters
        ----------
        target : pathlib.Path
            The final name, in the directory of ``path``.
        replace : bool
            Whether an existing ``target`` is replaced (``rename``) rather than refused.

        Raises
        ------
        FileExistsError
            Without ``replace``: ``target`` exists (also as a dangling symlink).
        OSError
            The link or rename failed (the file is left unpublished and open).
        """
        if self.anonymous:
            source = f"/proc/self/fd/{self._fd}"
            directory = os.open(target.parent, os.O_RDONLY)
            try:  # linkat(AT_SYMLINK_FOLLOW): os.link only passes it when given a dir fd
                if not replace or not os.path.lexists(target):
                    try:
                        os.link(source, target.name, dst_dir_fd=directory, follow_symlinks=True)
                        self.close()
                        return
                    except FileExistsError:
                        if not replace:
                            raise
                os.link(source, self.path.name, dst_dir_fd=directory, follow_symlinks=True)
            finally:
                os.close(directory)
        elif not replace:
            try:
                os.link(self.path, target)
            except FileExistsError:
                raise
            except OSError:  # no hard links on this filesystem: check, then rename (a small race)
                if os.path.lexists(target):
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fspath(target)) from None
            else:
                self.path.unlink()
                self.close()
                return
        os.replace(self.path, target)
        self.close()

    def discard(self) -> None:
        """Close and remove the unpublished file (if it has a name).

        Raises
        ------
        OSError
            ``path`` exists but cannot be removed (a missing one is fine).
        """
        self.close()
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Close the descriptor (and so release the ``flock``); an anonymous file not yet
        published vanishes. Closing twice does nothing.

        Raises
        ------
        OSError
            From ``close``.
        """

        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
