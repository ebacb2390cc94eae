"""Finding the Parquet files under the paths a user names.

A path that is a file is taken as given, whatever its name. A directory is walked recursively
(symlinked directories are not followed, so a loop cannot hang the walk) and contributes the files
named ``*.parquet``, ``*.parquet.encrypted`` or ``part-*`` (Spark and Hadoop part files, with or
without an extension), skipping hidden and metadata files: names starting with ``.`` or ``_``
(``_SUCCESS``, ``_KEY_MATERIAL_FOR_*.json``, ``.part-*.crc``) and ``*.crc``. Output is sorted
within each directory, so reports are reproducible.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["ParquetPath", "expand_paths", "is_parquet_name"]

_SUFFIXES = (".parquet", ".parquet.encrypted")
_SKIP_SUFFIXES = (".crc", ".json", ".tmp")


def is_parquet_name(name: str) -> bool:
    """True for file names a directory walk treats as Parquet data files."""
    if name.startswith((".", "_")):
        return False
    lower = name.lower()
    if lower.endswith(_SUFFIXES):
        return True
    return lower.startswith("part-") and not lower.endswith(_SKIP_SUFFIXES)


@dataclass(frozen=True)
class ParquetPath:
    """One path to audit. ``origin`` is the argument it came from; ``problem`` is set when the
    argument yields nothing to read (missing, or a directory without Parquet files)."""

    path: str
    origin: str
    problem: str | None = None


def _walk(root: str) -> Iterator[str]:
    def raise_error(error: OSError) -> None:
        raise error

    for dirpath, dirnames, filenames in os.walk(root, onerror=raise_error, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        for name in sorted(filenames):
            if is_parquet_name(name):
                yield os.path.join(dirpath, name)


def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[ParquetPath]:
    """Every file to audit, in argument order; each file appears once.

    Arguments that cannot contribute a file are returned with ``problem`` set instead of being
    dropped, so that a mistyped path or an empty directory is reported, never silently passed.
    """
    out: list[ParquetPath] = []
    seen: set[str] = set()
    for given in paths:
        arg = os.fspath(given)
        if os.path.isdir(arg):
            try:
                found = list(_walk(arg))
            except OSError as e:
                out.append(ParquetPath(arg, arg, f"cannot read directory: {e.strerror or e}"))
                continue
            if not found:
                out.append(ParquetPath(arg, arg, "no Parquet files in this directory"))
            for path in found:
                if os.path.realpath(path) not in seen:
                    seen.add(os.path.realpath(path))
                    out.append(ParquetPath(path, arg))
        elif os.path.exists(arg):
            if os.path.realpath(arg) not in seen:
                seen.add(os.path.realpath(arg))
                out.append(ParquetPath(arg, arg))
        else:
            out.append(ParquetPath(arg, arg, "No such file or directory"))
    return out
