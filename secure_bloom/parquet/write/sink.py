"""The streams pyarrow writes into: :class:`SyncingSink` (fsync in the background every
:data:`SYNC_STEP` bytes) and :class:`KeyMaterialSpool` (external key material kept in memory until
publication)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

__all__ = ["SyncingSink", "SYNC_STEP", "KeyMaterialSpool"]


#: Bytes pyarrow writes between two background syncs of the spooled file (:class:`SyncingSink`).
SYNC_STEP = 8 * 1024 * 1024


class SyncingSink:
    """The raw file pyarrow writes the spooled file through (wrapped in ``pa.PythonFile``): each
    ``write`` goes to ``write``, and once ``step`` bytes have been written since the last sync
    began, ``sync`` (an fsync) starts in ``pool`` while pyarrow goes on encoding. The disk writes
    overlap the encoding, so the fsync that makes the file durable before it is published waits
    only for the last bytes. A failed background sync is raised by the next ``write`` and by
    :meth:`wait` (an fsync error is never retried and forgotten: the file is given up).
    ``sync`` None: never syncs. ``close`` closes nothing (the file is the caller's).

    Parameters
    ----------
    write : callable
        ``write(data)``: writes all of ``data`` (e.g. :meth:`~secure_bloom.fileio.AtomicOutput.write`).
    sync : callable or None
        ``sync()``: makes what was written durable (an fsync); None: never syncs.
    pool : concurrent.futures.ThreadPoolExecutor
        Where the background syncs run.
    step : int, default SYNC_STEP
        Bytes written between the starts of two syncs.
    """

    def __init__(self, write: Any, sync: Any | None, pool: ThreadPoolExecutor, step: int = SYNC_STEP) -> None:
        self._write, self._sync, self._pool, self._step = write, sync, pool, step
        self._position = self._synced = 0
        self._pending: Future[None] | None = None
        self.closed = False

    def write(self, data: Any) -> int:
        """Write ``data`` through; start a background sync once ``step`` bytes are written since
        the last one began (and that one is done).

        Parameters
        ----------
        data : bytes-like
            What pyarrow writes.

        Returns
        -------
        int
            Its size in bytes.

        Raises
        ------
        OSError
            The write failed, or the background sync found finished when the next one is due
            failed (it stays failed: :meth:`wait` raises it too).
        """
        self._write(data)
        n = memoryview(data).nbytes
        self._position += n
        if self._sync is not None and self._position - self._synced >= self._step:
            pending = self._pending
            if pending is None or pending.done():
                if pending is not None:
                    pending.result()  # a failed sync: raised here, not overwritten
                self._synced = self._position
                self._pending = self._pool.submit(self._sync)
        return n

    def tell(self) -> int:
        """Bytes written so far (pyarrow's position in the file).

        Returns
        -------
        int
            The count.

        Raises
        ------
        None
            Nothing of its own.
        """
        return self._position

    def flush(self) -> None:
        """Nothing: every write has gone to ``write`` already (durability is :meth:`wait`'s).

        Raises
        ------
        None
            Nothing of its own.
        """

    def writable(self) -> bool:
        """True (what ``pa.PythonFile`` asks before writing).

        Returns
        -------
        bool
            Always True.

        Raises
        ------
        None
            Nothing of its own.
        """
        return True

    def close(self) -> None:
        """Mark the sink closed; the file itself stays open (it is the caller's to sync and
        publish).

        Raises
        ------
        None
            Nothing of its own.
        """
        self.closed = True

    def wait(self) -> None:
        """Wait for the sync under way (if any); raise its error.

        Raises
        ------
        OSError
            The sync failed (the file must be given up, not retried).
        """
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()


class KeyMaterialSpool(pafs.FileSystemHandler):  # type: ignore[misc]
    """An in-memory ``pyarrow.fs`` filesystem (``PyFileSystem(KeyMaterialSpool())``) that pyarrow
    writes a new file's external key material into: the sidecar exists nowhere on disk until it
    is published, so a killed writer leaves none behind. Holds wrapped keys only.

    The methods are pyarrow's ``FileSystemHandler`` interface, called by pyarrow's key tools
    through ``PyFileSystem``: whole files only (written once, read, moved, copied, deleted);
    directories are implied by the paths.
    """

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def get_type_name(self) -> str:
        """The filesystem's type name, as pyarrow shows it.

        Returns
        -------
        str
            ``"secure-bloom-key-material-spool"``.

        Raises
        ------
        None
            Nothing of its own.
        """
        return "secure-bloom-key-material-spool"

    def normalize_path(self, path: str) -> str:
        """``path`` unchanged: the spool's paths are pyarrow's own.

        Parameters
        ----------
        path : str
            A path.

        Returns
        -------
        str
            ``path``.

        Raises
        ------
        None
            Nothing of its own.
        """
        return path

    def equals(self, other: Any) -> bool:
        """Whether ``other`` is this very spool (two spools never share files).

        Parameters
        ----------
        other : object
            The other handler.

        Returns
        -------
        bool
            ``other is self``.

        Raises
        ------
        None
            Nothing of its own.
        """
        return other is self

    def get_file_info(self, paths: Sequence[str]) -> list[pafs.FileInfo]:
        """A ``FileInfo`` per path: a file of its size if spooled, else not found.

        Parameters
        ----------
        paths : sequence of str
            The paths asked about.

        Returns
        -------
        list of pyarrow.fs.FileInfo
            In the order of ``paths``.

        Raises
        ------
        None
            Nothing of its own.
        """
        return [pafs.FileInfo(p, pafs.FileType.File, size=len(self.files[p])) if p in self.files
                else pafs.FileInfo(p, pafs.FileType.NotFound) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        """The spooled files under ``selector.base_dir``, at any depth (``recursive`` and
        ``allow_not_found`` do not change the answer: a directory holds what its paths name).

        Parameters
        ----------
        selector : pyarrow.fs.FileSelector
            The directory listed.

        Returns
        -------
        list of pyarrow.fs.FileInfo
            One file entry per spooled path under it; empty for a directory with none.

        Raises
        ------
        None
            Nothing of its own.
        """
        base = selector.base_dir.rstrip("/") + "/"
        return self.get_file_info([p for p in self.files if p.startswith(base)])


    def create_dir(self, path: str, recursive: bool) -> None:
        """Nothing: directories are implied by the paths.

        Parameters
        ----------
        path : str
            The directory.
        recursive : bool
            Ignored.

        Raises
        ------
        None
            Nothing of its own.
        """

    def delete_file(self, path: str) -> None:
        """Drop the spooled file ``path``.

        Parameters
        ----------
        path : str
            The file.

        Raises
        ------
        FileNotFoundError
            No such file is spooled.
        """
        if self.files.pop(path, None) is None:
            raise FileNotFoundError(path)

    def move(self, src: str, dest: str) -> None:
        """Rename a spooled file (replacing ``dest``).

        Parameters
        ----------
        src : str
            The file.
        dest : str
            Its new path.

        Raises
        ------
        KeyError
            ``src`` is not spooled.
        """
        self.files[dest] = self.files.pop(src)

    def copy_file(self, src: str, dest: str) -> None:
        """Copy a spooled file (replacing ``dest``).

        Parameters
        ----------
        src : str
            The file.
        dest : str
            The copy's path.

        Raises
        ------
        KeyError
            ``src`` is not spooled.
        """
        self.files[dest] = self.files[src]

    def open_input_file(self, path: str) -> pa.NativeFile:
        """A random-access reader of the spooled file ``path``.

        Parameters
        ----------
        path : str
            The file.

        Returns
        -------
        pyarrow.BufferReader
            Over the file's bytes.

        Raises
        ------
        FileNotFoundError
            No such file is spooled.
        """
        if path not in self.files:
            raise FileNotFoundError(path)
        return pa.BufferReader(self.files[path])

    #: A sequential reader is the random-access one.
    open_input_stream = open_input_file


    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        """A new file at ``path``, spooled (replacing any there) when the stream is closed.

        Parameters
        ----------
        path : str
            The file.
        metadata : object
            Ignored (pyarrow's optional file metadata).

        Returns
        -------
        pyarrow.PythonFile
            A writable stream.

        Raises
        ------
        None
            Nothing of its own.
        """
        files = self.files

        class Spooled(io.BytesIO):
            def close(self) -> None:
                if not self.closed:
                    files[path] = self.getvalue()
                super().close()

        return pa.PythonFile(Spooled(), mode="w")

    def _unsupported(self, *_: Any, **__: Any) -> Any:
        """Refused: directories cannot be deleted, nor files appended to (pyarrow's key tools
        need neither).

        Parameters
        ----------
        *_, **__ : object
            What pyarrow passes (ignored).

        Returns
        -------
        None
            Never returns.

        Raises
        ------
        OSError
            Always.
        """
        raise OSError("KeyMaterialSpool holds whole files only")


    delete_dir = delete_dir_contents = delete_root_dir_contents = open_append_stream = _unsupported
