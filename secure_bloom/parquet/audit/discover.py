"""Finding the Parquet files under the paths a user names.

A path that is a file is taken as given, whatever its name. A directory is searched recursively,
hidden and ``_`` directories included, and every regular file in it is recognised by its
CONTENT: it is Parquet when it starts or ends with the magic ``PAR1`` or ``PARE`` (so Hive's
``000000_0``, Impala's ``*.parq`` and files with no extension at all are found), or when its name
says so (``*.parquet``, ``*.parq``, ``*.parquet.encrypted``, ``part-*``): such a file without the
magic is still returned, so that the reader reports it as damaged instead of it being skipped.

Symbolic links are followed, to files and to directories; a directory reached twice (a link loop,
or two links to one place) is searched once, and the second path is listed as skipped.

Nothing is dropped silently. :func:`discover` returns

* the files to read (``problem`` None);
* what could not be searched or read, with ``problem`` and a stable ``kind``
  (:data:`PROBLEM_KINDS`): a missing path, a directory without Parquet files, an unreadable
  directory or file, a dangling link, a FIFO/socket/device. Callers must treat these as
  "could not check", never as a pass;
* the files looked at and found not to be Parquet (:class:`Skipped`, listed with the reason).
  Names that are metadata by convention, hidden or ``_`` files (``_SUCCESS``,
  ``_KEY_MATERIAL_FOR_*.json``, ``.part-0.crc``) and ``*.crc``, are skipped quietly, but only after
  their content was checked: a hidden file that IS Parquet is returned like any other.

Output is sorted within each directory (a directory's files before its subdirectories), so
reports are reproducible.

Object stores (a URI such as ``s3://bucket/prefix``, or paths on a ``pyarrow.fs`` filesystem
given as ``filesystem``) are searched the same way: a prefix is listed recursively, an object
named as Parquet is taken without a read, any other is recognised by its magic with two
4-byte range reads (never a whole-object download). A store that cannot be reached is a
``STORAGE_UNAVAILABLE`` problem; a missing object, prefix or bucket ``FILE_NOT_FOUND``; access
denied ``UNREADABLE_DIRECTORY`` / ``UNREADABLE_FILE``. Objects found under a URI are returned as
URIs with the argument's options (``?endpoint_override=...``), so each can be opened alone;
show them with :func:`~secure_bloom.parquet.file.sources.display_source`.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from ...errors import NotRegularFileError, StorageUnavailableError
from ...fileio import file_kind, open_regular_file
from ..file.sources import display_path, display_uri, is_store_uri, locate, storage_error

__all__ = ["ParquetPath", "Skipped", "Discovery", "discover", "expand_paths", "is_parquet_name",
           "has_parquet_magic", "PROBLEM_KINDS"]

_SUFFIXES = (".parquet", ".parquet.encrypted", ".parq")
_SKIP_SUFFIXES = (".crc", ".json", ".tmp")
_MAGICS = (b"PAR1", b"PARE")

#: ``kind`` of a :class:`ParquetPath` that could not be searched or read.
PROBLEM_KINDS = ("FILE_NOT_FOUND", "NO_PARQUET_FILES", "UNREADABLE_DIRECTORY", "UNREADABLE_FILE",
                 "DANGLING_SYMLINK", "NOT_REGULAR_FILE", "STORAGE_UNAVAILABLE")


def is_parquet_name(name: str) -> bool:
    """True for file names that say "Parquet data file" (a walk also finds files by content).

    Parameters
    ----------
    name : str
        A file name.

    Returns
    -------
    bool
        Whether the name says Parquet.

    Raises
    ------
    None
        Nothing of its own.
    """
    if name.startswith((".", "_")):
        return False
    lower = name.lower()
    if lower.endswith(_SUFFIXES):
        return True
    return lower.startswith("part-") and not lower.endswith(_SKIP_SUFFIXES)


def _quiet_name(name: str) -> bool:
    """Metadata by convention: skipped without a mention when the content is not Parquet."""
    return name.startswith((".", "_")) or name.lower().endswith(".crc")


def has_parquet_magic(head: bytes, tail: bytes) -> bool:
    """True when a file's first or last four bytes are a Parquet magic (either end suffices, so
    that a truncated or damaged Parquet file is still read, and reported, not skipped).

    Parameters
    ----------
    head : bytes
        The file's first bytes.
    tail : bytes
        Its last bytes.

    Returns
    -------
    bool
        Whether either is a Parquet magic.

    Raises
    ------
    None
        Nothing of its own.
    """
    return head in _MAGICS or tail in _MAGICS


@dataclass(frozen=True)
class ParquetPath:
    """One path to read, or (``problem`` set) one that could not be searched or read.

    Parameters
    ----------
    path : str
        The path (never shown with URI credentials).
    origin : str
        The argument it came from.
    problem : str, optional
        Why it could not be searched or read.
    kind : str, optional
        One of :data:`PROBLEM_KINDS`.
    """

    path: str
    origin: str
    problem: str | None = None
    kind: str | None = None

    def __repr__(self) -> str:  # ``path`` and ``origin`` may be URIs with credentials
        return (f"ParquetPath({display_uri(self.path)!r}, origin={display_uri(self.origin)!r}, "
                f"problem={self.problem!r}, kind={self.kind!r})")


@dataclass(frozen=True)
class Skipped:
    """A file found under a directory and not read, with the reason (not a failure: it was
    looked at and is not Parquet, or it is a second path to a directory already searched).

    Parameters
    ----------
    path : str
        The file.
    reason : str
        Why it was not read.
    """

    path: str
    reason: str


@dataclass(frozen=True)
class Discovery:
    """Everything :func:`discover` found.

    Parameters
    ----------
    entries : tuple of ParquetPath
        Files and problems, in order.
    skipped : tuple of Skipped
        Files looked at and not read.
    """

    entries: tuple[ParquetPath, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """The Parquet files found, in discovery order."""
        return tuple(e.path for e in self.entries if e.problem is None)

    @property
    def problems(self) -> tuple[ParquetPath, ...]:
        """The entries that could not be read or are not Parquet (each with its problem)."""
        return tuple(e for e in self.entries if e.problem is not None)


@dataclass
class _Search:
    origin: str
    found: list[ParquetPath] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def problem(self, path: str, kind: str, text: str) -> None:
        self.found.append(ParquetPath(path, self.origin, text, kind))

    def broken_entry(self, path: str, error: OSError) -> None:
        if error.errno == errno.ELOOP:
            self.problem(path, "DANGLING_SYMLINK", "symbolic link loop; not followed")
        elif isinstance(error, FileNotFoundError) and os.path.islink(path):
            self.problem(path, "DANGLING_SYMLINK", f"symbolic link to a missing target ({os.readlink(path)})")
        elif isinstance(error, FileNotFoundError):
            self.problem(path, "FILE_NOT_FOUND", "disappeared while the directory was searched")
        else:
            self.problem(path, "UNREADABLE_FILE", f"cannot read: {error.strerror or error}")

    def parquet_or_not(self, path: str, name: str, head: bytes, tail: bytes, shown: str | None = None) -> None:
        """Take ``path`` when its magic or its name says Parquet; else list it as skipped."""
        if has_parquet_magic(head, tail) or is_parquet_name(name):
            self.found.append(ParquetPath(path, self.origin))
        elif not _quiet_name(name):
            self.skipped.append(Skipped(shown or path, "not Parquet (no PAR1/PARE magic)"))

    def file(self, path: str, name: str) -> None:
        """Decide by content whether ``path`` is a Parquet file to read."""
        try:
            with open_regular_file(path) as f:
                head = f.read(4)
                size = f.seek(0, os.SEEK_END)
                tail = b""
                if size >= 8:
                    f.seek(size - 4)
                    tail = f.read(4)
        except NotRegularFileError as e:
            self.problem(path, "NOT_REGULAR_FILE", str(e).removeprefix(f"{path}: "))
            return
        except OSError as e:
            self.broken_entry(path, e)
            return
        self.parquet_or_not(path, name, head, tail)

    def walk(self, root: str) -> None:
        top = os.stat(root)
        searched = {(top.st_dev, top.st_ino): root}
        pending = [root]
        while pending:
            directory = pending.pop()
            try:
                with os.scandir(directory) as it:
                    names = sorted(entry.name for entry in it)
            except OSError as e:
                self.problem(directory, "UNREADABLE_DIRECTORY", f"cannot read directory: {e.strerror or e}")
                continue
            subdirs = []
            for name in names:
                path = os.path.join(directory, name)
                try:
                    st = os.stat(path)
                except OSError as e:
                    self.broken_entry(path, e)
                    continue
                if stat.S_ISDIR(st.st_mode):
                    first = searched.setdefault((st.st_dev, st.st_ino), path)
                    if first == path:
                        subdirs.append(path)
                    else:
                        self.skipped.append(Skipped(path, f"the same directory as {first}, searched once"))
                elif stat.S_ISREG(st.st_mode):
                    self.file(path, name)
                else:
                    self.problem(path, "NOT_REGULAR_FILE", f"is a {file_kind(st.st_mode)}, not a regular file; not read")
            pending.extend(reversed(subdirs))


class _StoreSearch(_Search):
    """The search of one argument on an object store (``fs``): ``root`` on it, found objects
    returned as ``name(path)``."""

    def __init__(self, origin: str, fs: Any, root: str) -> None:
        super().__init__(origin)
        self.fs = fs
        self.root = root.rstrip("/")
        if is_store_uri(origin):
            base, sep, query = origin.partition("?")
            self.prefix, self.query = base.rstrip("/"), sep + query
        else:
            self.prefix, self.query = "", ""

    def name(self, path: str) -> str:
        """How a caller opens the object ``path``: the argument's URI with its options, or the
        path on the given filesystem."""
        return f"{self.prefix}{path[len(self.root):]}{self.query}" if self.prefix else path

    def failed(self, path: str, error: OSError, *, listing: bool) -> None:
        shown = display_path(self.fs, path)
        error = storage_error(error, shown)
        if isinstance(error, StorageUnavailableError):
            self.problem(self.name(path), "STORAGE_UNAVAILABLE", str(error).removeprefix(f"{shown}: "))
        elif isinstance(error, FileNotFoundError):
            self.problem(self.name(path), "FILE_NOT_FOUND", "disappeared while the prefix was listed"
                         if not listing else f"{error.strerror or 'No such file or object'}")
        else:
            self.problem(self.name(path), "UNREADABLE_DIRECTORY" if listing else "UNREADABLE_FILE",
                         f"cannot {'list' if listing else 'read'}: {error.strerror or error}")

    def object(self, info: Any) -> None:
        """Decide by name, else by its first and last 4 bytes (two range reads), whether the
        object ``info`` is Parquet."""
        path, size = info.path, info.size or 0
        name = posixpath.basename(path)
        head = tail = b""
        if not is_parquet_name(name) and size:
            try:
                with self.fs.open_input_file(path) as f:
                    head = f.read_at(min(4, size), 0)
                    tail = f.read_at(4, size - 4) if size >= 8 else b""
            except OSError as e:
                self.failed(path, e, listing=False)
                return
        self.parquet_or_not(self.name(path), name, head, tail, display_path(self.fs, path))

    def walk(self, infos: Iterable[Any]) -> None:
        files = [i for i in infos if i.type == pafs.FileType.File]
        for info in sorted(files, key=lambda i: _listing_order(i.path[len(self.root):])):
            self.object(info)


def _listing_order(relative: str) -> list[tuple[int, str]]:
    """The order of a local walk: in each directory its files (by name), then its subdirectories."""
    parts = relative.strip("/").split("/")
    return [(1, part) for part in parts[:-1]] + [(0, parts[-1])]


def _search_store(arg: str, filesystem: Any) -> _StoreSearch:
    """The search of ``arg`` (an object or a prefix) on an object store."""
    fs, root = locate(arg, filesystem)
    search = _StoreSearch(arg, fs, root)
    try:
        info = fs.get_file_info(root)
    except OSError as e:
        search.failed(root, e, listing=True)
        return search
    if info.type == pafs.FileType.File:
        search.found.append(ParquetPath(arg, arg))
        return search
    if info.type != pafs.FileType.Directory:
        search.problem(arg, "FILE_NOT_FOUND", "No such file, object or prefix")
        return search
    try:
        search.walk(fs.get_file_info(pafs.FileSelector(root, recursive=True)))
    except OSError as e:
        search.failed(root, e, listing=True)
    if not search.found:
        search.problem(arg, "NO_PARQUET_FILES", "no Parquet files under this prefix")
    return search


def _on_store(arg: str, filesystem: Any) -> bool:
    if filesystem is not None and not isinstance(filesystem, pafs.LocalFileSystem):
        return True
    return filesystem is None and is_store_uri(arg)


def discover(paths: Iterable[str | os.PathLike[str]], filesystem: Any = None) -> Discovery:
    """Every file to read under ``paths``, in argument order, each file once; see the module doc.

    ``paths`` are local paths and URIs, or paths on ``filesystem`` (a ``pyarrow.fs``
    filesystem). Arguments that cannot contribute a file are returned with ``problem`` set
    instead of being dropped, so that a mistyped path or an empty directory is reported, never
    silently passed.

    Parameters
    ----------
    paths : iterable of str or os.PathLike
        Local paths and URIs, or paths on ``filesystem``.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem.

    Returns
    -------
    Discovery
        The files found and the problems.

    Raises
    ------
    secure_bloom.errors.StorageUnavailableError
        A store that does not answer.
    """
    out: list[ParquetPath] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for given in paths:
        arg = os.fspath(given)
        if _on_store(arg, filesystem):
            found = _search_store(arg, filesystem)
            skipped.extend(found.skipped)
            for entry in found.found:
                if entry.problem is not None or entry.path not in seen:
                    seen.add(entry.path)
                    out.append(entry)
            continue
        if os.path.isdir(arg):
            search = _Search(arg)
            try:
                search.walk(arg)
            except OSError as e:
                search.problem(arg, "UNREADABLE_DIRECTORY", f"cannot read directory: {e.strerror or e}")
            skipped.extend(search.skipped)
            if not search.found:
                search.problem(arg, "NO_PARQUET_FILES", "no Parquet files in this directory")
            for entry in search.found:
                real = os.path.realpath(entry.path)
                if entry.problem is not None or real not in seen:
                    seen.add(real)
                    out.append(entry)
        elif os.path.exists(arg):
            if os.path.realpath(arg) not in seen:
                seen.add(os.path.realpath(arg))
                out.append(ParquetPath(arg, arg))
        else:
            out.append(ParquetPath(arg, arg, "No such file or directory", "FILE_NOT_FOUND"))
    return Discovery(tuple(out), tuple(skipped))


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[ParquetPath]:
    """The entries of :func:`discover`: files to read and problems (``problem`` set).

    Parameters
    ----------
    paths : iterable of str or os.PathLike
        Local paths.

    Returns
    -------
    list of ParquetPath
        Files and problems.

    Raises
    ------
    None
        Nothing of its own.
    """
    return list(discover(paths).entries)
