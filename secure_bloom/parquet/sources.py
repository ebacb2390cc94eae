"""Where Parquet files are: local paths, URIs and ``pyarrow.fs`` filesystems (S3, GCS, HDFS...).

Every reader of this package opens its files here. A local path (or ``file://`` URI) is opened
as a regular file (:func:`~secure_bloom.fileio.open_regular_file`: never a FIFO or a device); a
path on another filesystem, or a URI such as ``s3://bucket/key``, through
``filesystem.open_input_file``, whose reads are range requests of exactly the bytes asked for:
opening a file on an object store downloads nothing but what the reader reads.

* :func:`open_source` opens one file for :class:`~secure_bloom.parquet.ParquetBloomReader`.
* :func:`resolve` turns a source (path, URI, list of them) and an optional filesystem into one
  ``pyarrow.fs.FileSystem`` and the paths on it.
* :class:`CountingFileSystem` wraps a filesystem and counts the requests and bytes of every file
  read through it (what a scan really fetched, for prune reports and benchmarks).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

import pyarrow as pa
import pyarrow.fs as pafs

from ..fileio import open_regular_file

__all__ = ["open_source", "resolve", "is_uri", "display_path", "CountingFileSystem", "ReadCounter"]

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(text: str) -> bool:
    """True for ``scheme://...`` text (``s3://``, ``gs://``, ``file://``, ``hdfs://``...)."""
    return bool(_URI.match(text))


def _is_local(filesystem: Any) -> bool:
    return filesystem is None or isinstance(filesystem, pafs.LocalFileSystem)


def display_path(filesystem: Any, path: str) -> str:
    """``path`` as a user reads it: local paths as they are, others as ``<type>://path``."""
    if _is_local(filesystem):
        return path
    return f"{filesystem.type_name}://{path}"


def _strip_scheme(path: str, filesystem: Any) -> str:
    """``s3://bucket/key`` given with an S3 filesystem is ``bucket/key`` on it."""
    if is_uri(path):
        if path.startswith("file://"):
            return path[len("file://"):]
        return path.split("://", 1)[1]
    return path


def open_source(source: str | os.PathLike[str] | BinaryIO, filesystem: Any = None) -> tuple[str, BinaryIO, bool]:
    """(display path, open binary file, whether the caller owns it and must close it).

    ``source``: a local path, a path on ``filesystem``, a URI, or an already open seekable
    binary file (returned as it is, not owned)."""
    if hasattr(source, "read") and hasattr(source, "seek"):
        return str(getattr(source, "name", "<stream>")), cast(BinaryIO, source), False
    text = os.fspath(source)
    if filesystem is None and is_uri(text) and not text.startswith("file://"):
        filesystem, text = pafs.FileSystem.from_uri(text)
    text = _strip_scheme(text, filesystem)
    if _is_local(filesystem):
        return text, open_regular_file(text), True
    try:
        raw = filesystem.open_input_file(text)
    except OSError as e:
        if "not found" in str(e).lower() or "does not exist" in str(e).lower():
            raise FileNotFoundError(2, "No such file or object", display_path(filesystem, text)) from None
        raise
    return display_path(filesystem, text), cast(BinaryIO, raw), True


@dataclass(frozen=True)
class Resolved:
    """One filesystem and what to read on it: ``paths`` (files or directories)."""

    filesystem: pafs.FileSystem
    paths: tuple[str, ...]

    @property
    def local(self) -> bool:
        return isinstance(self.filesystem, pafs.LocalFileSystem)


def resolve(source: Any, filesystem: Any = None) -> Resolved:
    """The filesystem and paths of ``source``: a path, a URI, or a list of either (one
    filesystem for all). Local paths become absolute; a given ``filesystem`` is used as it is."""
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not items:
        raise ValueError("source names no file")
    fs: Any = filesystem
    paths: list[str] = []
    for item in items:
        text = os.fspath(item)
        if fs is None and is_uri(text) and not text.startswith("file://"):
            found, path = pafs.FileSystem.from_uri(text)
            fs = found
        elif fs is not None and is_uri(text):
            path = _strip_scheme(text, fs)
        elif is_uri(text):  # file://
            path = _strip_scheme(text, None)
        else:
            path = text
        if fs is None or isinstance(fs, pafs.LocalFileSystem):
            path = os.path.abspath(path)
        paths.append(path)
    return Resolved(fs if fs is not None else pafs.LocalFileSystem(), tuple(paths))


class ReadCounter:
    """Requests and bytes read through a :class:`CountingFileSystem` (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.files: set[str] = set()

    def add(self, path: str, n: int) -> None:
        with self._lock:
            self.requests += 1
            self.bytes += n
            self.files.add(path)


class _CountingFile:
    """A file-like object over a pyarrow random-access file that counts every read."""

    def __init__(self, raw: Any, path: str, counter: ReadCounter) -> None:
        self._raw = raw
        self._path = path
        self._counter = counter
        self.closed = False
        self.mode = "rb"

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(None if n is None or n < 0 else n)
        self._counter.add(self._path, len(data))
        return cast(bytes, data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return cast(int, self._raw.seek(offset, whence))

    def tell(self) -> int:
        return cast(int, self._raw.tell())

    def size(self) -> int:
        return cast(int, self._raw.size())

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self._raw.close()


class CountingFileSystem(pafs.FileSystemHandler):  # type: ignore[misc]
    """A ``pyarrow.fs.FileSystemHandler`` delegating to ``inner`` that counts the bytes of every
    read (``pyarrow.fs.PyFileSystem(CountingFileSystem(fs))``). Read-only use."""

    def __init__(self, inner: pafs.FileSystem, counter: ReadCounter | None = None) -> None:
        self.inner = inner
        self.counter = counter if counter is not None else ReadCounter()

    def get_type_name(self) -> str:
        return f"counting+{self.inner.type_name}"

    def normalize_path(self, path: str) -> str:
        return cast(str, self.inner.normalize_path(path))

    def equals(self, other: Any) -> bool:
        return isinstance(other, CountingFileSystem) and bool(self.inner.equals(other.inner))

    def get_file_info(self, paths: Sequence[str]) -> list[pafs.FileInfo]:
        return cast("list[pafs.FileInfo]", self.inner.get_file_info(list(paths)))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return cast("list[pafs.FileInfo]", self.inner.get_file_info(selector))

    def open_input_file(self, path: str) -> pa.NativeFile:
        return pa.PythonFile(_CountingFile(self.inner.open_input_file(path), path, self.counter), mode="r")

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    def _read_only(self, *_: Any, **__: Any) -> Any:
        raise OSError("CountingFileSystem is read-only")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only
