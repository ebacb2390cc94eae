"""Where a write publishes: a local path (linked in atomically, fsynced) or a path on a pyarrow
filesystem (one upload of the complete file), and the steps that publish there."""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...fileio import AtomicOutput
from ..file.sources import (
    StoreTimeouts,
    display_path,
    filesystem_from_uri,
    is_store_uri,
    is_uri,
    storage_error,
)

__all__ = ["Destination", "destination_of", "check_local_target", "publish_bytes", "write_object", "upload"]


@dataclass(frozen=True)
class Destination:
    """Where the file goes: a local path (``filesystem`` None) or a path on a pyarrow filesystem.

    Parameters
    ----------
    path : str
        The local path, or the path on ``filesystem`` (``bucket/key`` for an object store).
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem; None for the local disk.
    """

    path: str
    filesystem: Any = None

    @property
    def local(self) -> bool:
        """True for a local path (False: a pyarrow filesystem)."""
        return self.filesystem is None

    @property
    def name(self) -> str:
        """The file's name (the last part of its path)."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return display_path(self.filesystem, self.path)


def destination_of(where: Any, filesystem: Any, timeouts: StoreTimeouts | None = None) -> Destination:
    """Where ``where`` is: a URI through :func:`~secure_bloom.parquet.file.sources.filesystem_from_uri`
    (never a local path: ``s3://KEY:SECRET@bucket/out`` creates nothing on the local disk).

    Parameters
    ----------
    where : str or os.PathLike
        A local path, a URI, or a path on ``filesystem``.
    filesystem : pyarrow.fs.FileSystem or None
        The filesystem.
    timeouts : StoreTimeouts, optional
        For a filesystem built from a URI.

    Returns
    -------
    Destination
        Where the file will be published.

    Raises
    ------
    secure_bloom.errors.ConfigurationError
        A URI pyarrow cannot open.
    TypeError
        ``where`` is not a path or URI.
    """
    from pyarrow import fs as pafs

    if isinstance(where, Path) or (isinstance(where, os.PathLike) and not isinstance(where, str)):
        where = os.fspath(where)
    if not isinstance(where, str) or not where:
        raise TypeError("where must be a path (str or os.PathLike) or a URI; writing to a file object cannot "
                        f"be made atomic, got {type(where).__name__}")
    if filesystem is None and is_store_uri(where):
        filesystem, where = filesystem_from_uri(where, timeouts)
    elif is_uri(where):
        where = where[len("file://"):] if filesystem is None or isinstance(filesystem, pafs.LocalFileSystem) \
            else where.split("://", 1)[1]
    if filesystem is not None and not isinstance(filesystem, pafs.FileSystem):
        raise TypeError(f"filesystem must be a pyarrow.fs.FileSystem, got {type(filesystem).__name__}")
    if filesystem is None or isinstance(filesystem, pafs.LocalFileSystem):
        return Destination(os.path.abspath(where))
    return Destination(where, filesystem)


def check_local_target(target: Path) -> None:
    """Refuse a local destination that cannot be written before any work is done: its directory
    must exist and it must not be a directory itself.

    Parameters
    ----------
    target : pathlib.Path
        The file to be written.

    Raises
    ------
    FileNotFoundError
        The directory does not exist.
    IsADirectoryError
        ``target`` is a directory.
    """
    if not target.parent.is_dir():

        raise FileNotFoundError(f"{target.parent}: the destination directory does not exist")
    if target.is_dir():
        raise IsADirectoryError(f"{target}: is a directory")


def publish_bytes(data: bytes, target: Path) -> None:
    """Write a small file to ``target`` atomically (unnamed until complete and synced).

    Parameters
    ----------
    data : bytes
        The content.
    target : pathlib.Path
        Where it goes.

    Raises
    ------
    OSError
        The file or store cannot be read or written.
    """
    copy = AtomicOutput(target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp"), 0o666)
    try:
        copy.write(data)
        copy.sync()
        copy.publish(target, replace=True)
    except BaseException:
        copy.discard()
        raise


def write_object(filesystem: Any, path: str, data: Any) -> None:
    """Write ``data`` (bytes, or a buffer) as one object on ``filesystem``: one output stream,
    one write, closed (an object store publishes the object at the close).

    Parameters
    ----------
    filesystem : pyarrow.fs.FileSystem
        The store.
    path : str
        The object's path on it.
    data : bytes or buffer
        The content.

    Raises
    ------
    secure_bloom.errors.StorageUnavailableError
        The store cannot be reached (after the filesystem's own bounded retries).
    PermissionError
        The store denies access.
    FileNotFoundError
        The bucket does not exist.
    OSError
        Any other failure pyarrow reports, as it is.
    """

    try:
        stream = filesystem.open_output_stream(path)
        try:
            stream.write(data)
        finally:
            stream.close()
    except OSError as e:
        raise storage_error(e, display_path(filesystem, path)) from None


def upload(filesystem: Any, path: str, local: str | os.PathLike[str]) -> None:
    """Upload a complete local file as one object: a single ``write`` of the whole file (mapped,
    not copied), so no Python code runs between its first and last byte.

    Parameters
    ----------
    filesystem : pyarrow.fs.FileSystem
        The store.
    path : str
        The object's path.
    local : str or os.PathLike
        The complete local file.

    Raises
    ------
    OSError
        The file or store cannot be read or written.
    """
    with open(local, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        write_object(filesystem, path, data)
