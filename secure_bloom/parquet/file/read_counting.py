"""What a scan really fetched: :class:`CountingFileSystem` wraps a ``pyarrow.fs`` filesystem and
counts into a :class:`ReadCounter` the requests and bytes of every file read through it (prune
reports' ``bytes_read``, ``count_reads=True``, the benchmarks' request counts).

A file opened through it can be given the bytes a reader already holds of it (``held``: the tail
the pruning read fetched), so pyarrow's own reads of those bytes are answered from memory and not
counted or fetched again (:meth:`CountingFileSystem.open_held`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, cast

import pyarrow as pa
import pyarrow.fs as pafs

from .lifetime import refuse_when_exiting, track

__all__ = ["CountingFileSystem", "ReadCounter"]

class ReadCounter:
    """Requests and bytes read through a :class:`CountingFileSystem` (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes = 0
        self.files: set[str] = set()

    def add(self, path: str, n: int) -> None:
        """Count one request of ``n`` bytes from ``path`` (under the counter's lock).

        Parameters
        ----------
        path : str
            The file read.
        n : int
            The bytes the request returned.

        Raises
        ------
        None
            Updates counters in memory.
        """
        with self._lock:
            self.requests += 1
            self.bytes += n
            self.files.add(path)


class _CountingFile:
    """A file-like object over a pyarrow random-access file that counts every read; reads lying
    wholly inside ``held`` (offset, bytes of the same file) are answered from memory, uncounted."""

    def __init__(self, raw: Any, path: str, counter: ReadCounter, held: tuple[int, bytes] | None = None) -> None:
        self._raw = raw
        self._path = path
        self._counter = counter
        self._held = held
        self.closed = False
        self.mode = "rb"

    def _from_held(self, n: int | None) -> memoryview | None:
        """The ``n`` bytes (None or < 0: to the end) at the position, if ``held`` has them all
        (the position then moves past them); else None."""
        if self._held is None:
            return None
        offset, data = self._held
        at = int(self._raw.tell())
        if n is None or n < 0:
            n = int(self._raw.size()) - at
        if at < offset or at + n > offset + len(data):
            return None
        self._raw.seek(at + n)
        return memoryview(data)[at - offset:at - offset + n]

    def read(self, n: int = -1) -> bytes:
        refuse_when_exiting(self._path)
        held = self._from_held(n)
        if held is not None:
            return bytes(held)
        data = self._raw.read(None if n is None or n < 0 else n)
        self._counter.add(self._path, len(data))
        return cast(bytes, data)

    def read_buffer(self, n: int = -1) -> pa.Buffer:
        """What ``pa.PythonFile`` reads through (zero-copy): Arrow then holds the returned
        buffer, possibly on its own threads, so the interpreter's exit waits for its release
        (:func:`~.lifetime.track`)."""
        refuse_when_exiting(self._path)
        held = self._from_held(n)
        if held is not None:
            return track(pa.py_buffer(held))
        data = self._raw.read_buffer(None if n is None or n < 0 else n)
        self._counter.add(self._path, data.size)
        return track(data)

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


class _OpenedOnRead:
    """A file of a known size, opened on ``inner`` only when a read needs it (one answered from
    held bytes opens nothing: no request on an object store)."""

    def __init__(self, inner: pafs.FileSystem, path: str, size: int) -> None:
        self._inner = inner
        self._path = path
        self._size = size
        self._at = 0
        self._raw: Any = None

    def _opened(self) -> Any:
        if self._raw is None:
            self._raw = self._inner.open_input_file(self._path)
        self._raw.seek(self._at)
        return self._raw

    def read(self, n: int | None = None) -> bytes:
        data = self._opened().read(n)
        self._at += len(data)
        return cast(bytes, data)

    def read_buffer(self, n: int | None = None) -> pa.Buffer:
        data = self._opened().read_buffer(n)
        self._at += data.size
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        self._at = offset if whence == 0 else self._at + offset if whence == 1 else self._size + offset
        return self._at

    def tell(self) -> int:
        return self._at

    def size(self) -> int:
        return self._size

    def close(self) -> None:
        if self._raw is not None:
            self._raw.close()


class CountingFileSystem(pafs.FileSystemHandler):  # type: ignore[misc]
    """A ``pyarrow.fs.FileSystemHandler`` delegating to ``inner`` that counts the requests and
    bytes of every read (``pyarrow.fs.PyFileSystem(CountingFileSystem(fs))``). Read-only: every
    write raises ``OSError``.

    Parameters
    ----------
    inner : pyarrow.fs.FileSystem
        The filesystem read through.
    counter : ReadCounter, optional
        Where the reads are counted (a new one by default; shared to count several scans).
    """

    def __init__(self, inner: pafs.FileSystem, counter: ReadCounter | None = None) -> None:
        self.inner = inner
        self.counter = counter if counter is not None else ReadCounter()

    def get_type_name(self) -> str:
        """``counting+`` and the type name of ``inner`` (what :func:`display_path` strips)."""
        return f"counting+{self.inner.type_name}"

    def normalize_path(self, path: str) -> str:
        """``path`` as ``inner`` normalizes it."""
        return cast(str, self.inner.normalize_path(path))

    def equals(self, other: Any) -> bool:
        """Whether ``other`` is a counting handler over an equal ``inner`` filesystem.

        Parameters
        ----------
        other : object
            The handler pyarrow compares this one with.

        Returns
        -------
        bool
            True for an equal counting handler.

        Raises
        ------
        None
            A comparison in memory (the inner filesystems' ``equals``).
        """
        return isinstance(other, CountingFileSystem) and bool(self.inner.equals(other.inner))

    def get_file_info(self, paths: Sequence[str]) -> list[pafs.FileInfo]:
        """``inner``'s file infos of ``paths`` (not counted as reads; ``OSError`` once the exit gave up)."""
        refuse_when_exiting("get_file_info")
        return cast("list[pafs.FileInfo]", self.inner.get_file_info(list(paths)))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        """``inner``'s listing of ``selector`` (not counted as reads; ``OSError`` once the exit gave up)."""
        refuse_when_exiting(selector.base_dir)
        return cast("list[pafs.FileInfo]", self.inner.get_file_info(selector))

    def counted(self, raw: Any, path: str, held: tuple[int, bytes] | None = None) -> pa.NativeFile:
        """``raw`` (a file of ``path`` opened on ``inner``) with every read counted in
        :attr:`counter`, its buffers tracked for the interpreter's exit (:func:`~.lifetime.track`).
        Reads lying wholly inside ``held`` are answered from memory (not counted, no request).

        Parameters
        ----------
        raw : pyarrow.NativeFile
            A random-access file opened on ``inner``.
        path : str
            Its path (what the counter records).
        held : (int, bytes), optional
            Bytes of this very version of the file at an offset
            (:meth:`~.tail.FileTail.held`: a tail already read); the caller vouches for them.

        Returns
        -------
        pyarrow.NativeFile
            A ``pa.PythonFile`` reading through ``raw``.

        Raises
        ------
        None
            Wraps ``raw``; nothing is read here.
        """
        # Arrow's threads may release the file object last: the exit waits for it (.lifetime)
        return pa.PythonFile(track(_CountingFile(raw, path, self.counter, held)), mode="r")

    def open_held(self, path: str, size: int, held: tuple[int, bytes]) -> pa.NativeFile:
        """A file of ``path`` (``size`` bytes) whose reads inside ``held`` are answered from
        memory; ``inner`` is opened (on an object store: a HEAD) only when a read falls outside,
        and those reads are counted. Not checked against a version: for reads whose failure is
        harmless (:mod:`~secure_bloom.parquet.read.scan_keys` opening a footer pruning read).

        Parameters
        ----------
        path : str
            The file on ``inner``.
        size : int
            Its size.
        held : (int, bytes)
            Bytes of it at an offset (:meth:`~.tail.FileTail.held`).

        Returns
        -------
        pyarrow.NativeFile
            A ``pa.PythonFile``.

        Raises
        ------
        OSError
            Once the interpreter's exit gave up (:func:`~.lifetime.refuse_when_exiting`).
        """
        refuse_when_exiting(path)
        return self.counted(_OpenedOnRead(self.inner, path, size), path, held)

    def open_input_file(self, path: str) -> pa.NativeFile:
        """``inner``'s random-access file of ``path``, its reads counted (``OSError`` once the exit gave up)."""
        refuse_when_exiting(path)
        return self.counted(self.inner.open_input_file(path), path)

    def open_input_stream(self, path: str) -> pa.NativeFile:
        """The random-access file of :meth:`open_input_file` (its reads counted), read as a stream."""
        return self.open_input_file(path)

    def _read_only(self, *_: Any, **__: Any) -> Any:
        """Refuse a write (``create_dir``, the ``delete_*`` methods, ``move``, ``copy_file``,
        ``open_output_stream``, ``open_append_stream``): this handler only reads.

        Parameters
        ----------
        *_, **__ : object
            The write's arguments, ignored.

        Returns
        -------
        NoReturn
            Never returns.

        Raises
        ------
        OSError
            Always: ``CountingFileSystem is read-only``.
        """
        raise OSError("CountingFileSystem is read-only")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only
