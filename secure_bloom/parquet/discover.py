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
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import NotRegularFileError
from ..fileio import file_kind, open_regular_file

__all__ = ["ParquetPath", "Skipped", "Discovery", "discover", "expand_paths", "is_parquet_name",
           "has_parquet_magic", "PROBLEM_KINDS"]

_SUFFIXES = (".parquet", ".parquet.encrypted", ".parq")
_SKIP_SUFFIXES = (".crc", ".json", ".tmp")
_MAGICS = (b"PAR1", b"PARE")

#: ``kind`` of a :class:`ParquetPath` that could not be searched or read.
PROBLEM_KINDS = ("FILE_NOT_FOUND", "NO_PARQUET_FILES", "UNREADABLE_DIRECTORY", "UNREADABLE_FILE",
                 "DANGLING_SYMLINK", "NOT_REGULAR_FILE")


def is_parquet_name(name: str) -> bool:
    """True for file names that say "Parquet data file" (a walk also finds files by content)."""
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
    that a truncated or damaged Parquet file is still read, and reported, not skipped)."""
    return head in _MAGICS or tail in _MAGICS


@dataclass(frozen=True)
class ParquetPath:
    """One path to read, or (``problem`` set) one that could not be searched or read.

    ``origin`` is the argument it came from; ``kind`` is one of :data:`PROBLEM_KINDS`.
    """

    path: str
    origin: str
    problem: str | None = None
    kind: str | None = None


@dataclass(frozen=True)
class Skipped:
    """A file found under a directory and not read, with the reason (not a failure: it was
    looked at and is not Parquet, or it is a second path to a directory already searched)."""

    path: str
    reason: str


@dataclass(frozen=True)
class Discovery:
    """Everything :func:`discover` found: ``entries`` (files and problems, in order) and
    ``skipped``."""

    entries: tuple[ParquetPath, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(e.path for e in self.entries if e.problem is None)

    @property
    def problems(self) -> tuple[ParquetPath, ...]:
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
        if has_parquet_magic(head, tail) or is_parquet_name(name):
            self.found.append(ParquetPath(path, self.origin))
        elif not _quiet_name(name):
            self.skipped.append(Skipped(path, "not Parquet (no PAR1/PARE magic)"))

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


def discover(paths: Iterable[str | os.PathLike[str]]) -> Discovery:
    """Every file to read under ``paths``, in argument order, each file once; see the module doc.

    Arguments that cannot contribute a file are returned with ``problem`` set instead of being
    dropped, so that a mistyped path or an empty directory is reported, never silently passed.
    """
    out: list[ParquetPath] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for given in paths:
        arg = os.fspath(given)
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
    """The entries of :func:`discover`: files to read and problems (``problem`` set)."""
    return list(discover(paths).entries)
