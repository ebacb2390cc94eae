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
    ``sync`` None: never syncs. ``close`` closes nothing (the file is the caller's)."""

    def __init__(self, write: Any, sync: Any | None, pool: ThreadPoolExecutor, step: int = SYNC_STEP) -> None:
        self._write, self._sync, self._pool, self._step = write, sync, pool, step
        self._position = self._synced = 0
        self._pending: Future[None] | None = None
        self.closed = False

    def write(self, data: Any) -> int:
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
        return self._position

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True

    def wait(self) -> None:
        """Wait for the sync under way (if any); raise its error."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()


class KeyMaterialSpool(pafs.FileSystemHandler):  # type: ignore[misc]
    """An in-memory ``pyarrow.fs`` filesystem (``PyFileSystem(KeyMaterialSpool())``) that pyarrow
    writes a new file's external key material into: the sidecar exists nowhere on disk until it
    is published, so a killed writer leaves none behind. Holds wrapped keys only."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def get_type_name(self) -> str:
        return "secure-bloom-key-material-spool"

    def normalize_path(self, path: str) -> str:
        return path

    def equals(self, other: Any) -> bool:
        return other is self

    def get_file_info(self, paths: Sequence[str]) -> list[pafs.FileInfo]:
        return [pafs.FileInfo(p, pafs.FileType.File, size=len(self.files[p])) if p in self.files
                else pafs.FileInfo(p, pafs.FileType.NotFound) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = selector.base_dir.rstrip("/") + "/"
        return self.get_file_info([p for p in self.files if p.startswith(base)])

    def create_dir(self, path: str, recursive: bool) -> None:
        pass  # directories are implied by the paths

    def delete_file(self, path: str) -> None:
        if self.files.pop(path, None) is None:
            raise FileNotFoundError(path)

    def move(self, src: str, dest: str) -> None:
        self.files[dest] = self.files.pop(src)

    def copy_file(self, src: str, dest: str) -> None:
        self.files[dest] = self.files[src]

    def open_input_file(self, path: str) -> pa.NativeFile:
        if path not in self.files:
            raise FileNotFoundError(path)
        return pa.BufferReader(self.files[path])

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        files = self.files

        class Spooled(io.BytesIO):
            def close(self) -> None:
                if not self.closed:
                    files[path] = self.getvalue()
                super().close()

        return pa.PythonFile(Spooled(), mode="w")

    def _unsupported(self, *_: Any, **__: Any) -> Any:
        raise OSError("KeyMaterialSpool holds whole files only")

    delete_dir = delete_dir_contents = delete_root_dir_contents = open_append_stream = _unsupported
