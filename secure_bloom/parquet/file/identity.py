"""Which version of a file was read: its identity, and a filesystem that scans only that version.

A pruned read chooses row groups by index from one file's footer, statistics and Bloom filters;
pyarrow scans them later. If the file was replaced in between (``os.replace`` of a rewritten
file, a new object uploaded under the key), the old indices would be applied to the new file and
rows silently lost. So the facts and the scanned bytes are tied to one identity:

* local files: ``("local", st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)``, from ``fstat``
  of the descriptor that was read (never a second ``stat`` of the path);
* object stores whose open reports it (S3: the HEAD pyarrow makes when it opens an object):
  ``("object", size, ETag, VersionId, Last-Modified)``. That HEAD is the one request of a
  lookup beside the tail and filter reads: pyarrow's Python API opens an object by path only
  (``open_input_file(FileInfo)``, which skips it in C++, is not exposed), so a listing's size
  could not spare it, and it gives the strongest identity (the ETag) for free;
* other filesystems: ``("fs", size, mtime_ns)`` from ``get_file_info``.

:class:`PinnedFileSystem` is the ``pyarrow.fs`` handler scans read through: when pyarrow opens a
file whose identity was recorded, it opens it, checks the opened file's identity and raises
:class:`~secure_bloom.errors.FileChangedError` on any difference. A local file is checked on
the descriptor pyarrow then reads (reopened through ``/proc/self/fd`` where Linux has it), so a
replacement after the check does not matter: the scan reads the inode that was pruned. An object
store is checked at its open; pyarrow's range reads that follow carry no ``If-Match``, so a
replacement between that HEAD and them is not seen (pyarrow's own reads share that window).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, cast

import pyarrow as pa
import pyarrow.fs as pafs

from ...errors import FileChangedError
from ...fileio import open_regular_fd
from .sources import CountingFileSystem, ReadCounter, display_path, is_local_source, locate

__all__ = ["Identity", "local_identity", "opened_identity", "open_identified", "file_identity", "identity_size",
           "PinnedFileSystem"]

Identity = tuple[Any, ...]

#: Where Linux shows a process's open descriptors: opening ``/proc/self/fd/N`` opens N's file.
_PROC_FD = "/proc/self/fd"


def local_identity(st: os.stat_result) -> Identity:
    """The identity of a local file from its ``stat`` (of the descriptor read, preferably)."""
    return ("local", st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _text(metadata: Mapping[Any, Any], key: str) -> str | None:
    for name in (key, key.encode()):
        value = metadata.get(name)
        if value:
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


def opened_identity(raw: Any, filesystem: Any, path: str) -> Identity | None:
    """The identity of the file ``raw`` (opened from ``path`` on ``filesystem``; None: local),
    or None when it cannot be told (a caller's stream, no modification time, an error)."""
    try:
        if filesystem is None or isinstance(filesystem, pafs.LocalFileSystem):
            fileno = getattr(raw, "fileno", None)
            return local_identity(os.fstat(fileno())) if fileno is not None else None
        metadata = raw.metadata() if hasattr(raw, "metadata") else {}
        size = int(raw.size())
        etag, version = _text(metadata, "ETag"), _text(metadata, "VersionId")
        if etag is not None or version is not None:
            return ("object", size, etag, version, _text(metadata, "Last-Modified"))
        info = filesystem.get_file_info(path)
    except (OSError, ValueError, AttributeError, pa.ArrowException):
        return None
    mtime = getattr(info, "mtime_ns", None)
    if info.type != pafs.FileType.File or info.size is None or mtime is None:
        return None
    return ("fs", info.size, mtime)


def open_identified(path: str, filesystem: Any = None) -> tuple[pa.NativeFile | None, Identity | None]:
    """(an open file, its identity) of ``path`` now, in the form :func:`opened_identity` gives
    for a reader of it. Locally one ``stat`` and no open file (None); on an object store the one
    open (a HEAD) that tells the identity, kept open: a reader given it
    (``ParquetBloomReader(..., opened=)``) reads that version without a HEAD of its own; the
    caller closes it otherwise. (None, None) when the identity cannot be determined (not a
    file, an error: the caller then reads the file and reports its error)."""
    try:
        if is_local_source(path, filesystem):
            _, local = locate(path, filesystem)
            return None, local_identity(os.stat(local))
        fs, text = locate(path, filesystem)
        raw = fs.open_input_file(text)
    except (OSError, ValueError, pa.ArrowException):
        return None, None
    identity = opened_identity(raw, fs, text)
    if identity is None:
        raw.close()
        return None, None
    return raw, identity


def file_identity(path: str, filesystem: Any = None) -> Identity | None:
    """The identity of the file ``path`` now (locally one ``stat``, on an object store one open:
    a HEAD), in the form :func:`opened_identity` gives for a reader of it; None when it cannot
    be determined (not a file, an error: the caller then reads the file and reports its error)."""
    raw, identity = open_identified(path, filesystem)
    if raw is not None:
        raw.close()
    return identity


def identity_size(identity: Identity) -> int:
    """The file size recorded in an identity."""
    return int(identity[3] if identity[0] == "local" else identity[1])


def _changed(path: str, filesystem: Any) -> FileChangedError:
    return FileChangedError(
        f"{display_path(filesystem, path)} changed after its row groups were chosen (modified or replaced "
        "between pruning and the scan): nothing was read from it; read again to prune the new version")


class PinnedFileSystem(CountingFileSystem):
    """A read-only ``pyarrow.fs`` handler over ``inner`` (``pyarrow.fs.PyFileSystem(
    PinnedFileSystem(fs, identities))``) that opens a file named in ``identities`` only if it is
    still that version (:class:`~secure_bloom.errors.FileChangedError` otherwise), and counts
    reads when given a ``counter``. Files not named open as they are (dataset discovery)."""

    def __init__(self, inner: pafs.FileSystem, identities: Mapping[str, Identity],
                 counter: ReadCounter | None = None) -> None:
        super().__init__(inner, counter)
        self.identities = dict(identities)
        self.counting = counter is not None

    def get_type_name(self) -> str:
        return f"pinned+{self.inner.type_name}"

    def __reduce__(self) -> tuple[Any, ...]:
        """A pickled dataset (sent to another process) keeps its checks; reads are counted only
        in the process that asked for it."""
        return (PinnedFileSystem, (self.inner, self.identities))

    def equals(self, other: Any) -> bool:
        return (isinstance(other, PinnedFileSystem) and bool(self.inner.equals(other.inner))
                and self.identities == other.identities)

    def _open_local(self, path: str, expected: Identity) -> pa.NativeFile:
        fd = open_regular_fd(path)
        try:
            if local_identity(os.fstat(fd)) != expected:
                raise _changed(path, None)
            if os.path.isdir(_PROC_FD):  # the very inode checked, even if path is replaced now
                try:
                    return self.inner.open_input_file(f"{_PROC_FD}/{fd}")
                except OSError:
                    pass  # a restricted /proc: open the path and check again below
            raw = self.inner.open_input_file(path)
            st = os.stat(path)
            if local_identity(st) != expected:  # replaced while opened: no way to tell which was
                raw.close()
                raise _changed(path, None)
            return raw
        finally:
            os.close(fd)

    def _open(self, path: str) -> pa.NativeFile:
        expected = self.identities.get(path)
        if expected is None:
            return self.inner.open_input_file(path)
        if expected[0] == "local" and isinstance(self.inner, pafs.LocalFileSystem):
            return self._open_local(path, expected)
        raw = self.inner.open_input_file(path)
        if opened_identity(raw, self.inner, path) != expected:
            raw.close()
            raise _changed(path, self.inner)
        return raw

    def open_input_file(self, path: str) -> pa.NativeFile:
        raw = self._open(path)
        return self.counted(raw, path) if self.counting else raw

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return cast(pa.NativeFile, self.open_input_file(path))
