"""What an interrupted ``attach`` can leave beside its output, and how to recover from it.

``attach`` publishes up to two files: the external key material sidecar
(``_KEY_MATERIAL_FOR_<name>.json``) first, then the data file ``<name>`` (a data file without
its key material would be unreadable). A process killed between the two (or during either)
can leave:

* an orphaned sidecar: ``_KEY_MATERIAL_FOR_<name>.json`` without ``<name>``, or, with
  ``overwrite``, a replaced sidecar beside the OLD data file it no longer describes;
* hidden temporary files: ``.<name>.<hex>.attach.tmp`` (the data file being written, where the
  filesystem has no ``O_TMPFILE``) and ``.<sidecar>.<hex>.tmp`` (the staged sidecar);
* the publication journal ``.<name>.<hex>.attach.journal`` (below) and the old sidecar's backup
  ``.<sidecar>.<hex>.attach.bak``.

``write_table`` / ``ParquetWriter`` with external key material publish the same pair the same
way (the sidecar exists only in memory until then), so their leftovers are these too.

To make the pair recoverable, attach writes a :class:`PairJournal` before publishing a sidecar:
it records the data file's identity before publication and keeps a hard-linked backup of a
sidecar it replaces, and is removed once both files are published. Every file attach writes is
held under an exclusive ``flock`` while attach runs, so :func:`find_leftovers` tells a live
attach's files (left alone) from a dead one's. :func:`clean_leftovers` (``secure-bloom doctor
--fix``, and ``attach`` itself before it writes into a directory) rolls an unfinished
publication back: a sidecar published without its data file is removed (or the backup of the
one it replaced restored), a finished one only loses its journal and backup; stale temporary
files are deleted. The audit lists leftovers as notices.
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

from ...kms.sidecar import sidecar_path

__all__ = ["PairJournal", "Leftover", "find_leftovers", "clean_leftovers", "recover_journal"]

_TEMP = re.compile(r"^\..+\.[0-9a-f]{12}\.(attach\.tmp|tmp|attach\.bak)$")
_JOURNAL = re.compile(r"^\..+\.[0-9a-f]{12}\.attach\.journal$")
_SIDECAR = re.compile(r"^_KEY_MATERIAL_FOR_(.+)\.json$")


def _identity(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _held_by_live_process(path: Path) -> bool:
    """True when another open description holds ``path`` under an exclusive flock (a running
    attach); False for a stale file (or one that vanished)."""
    if fcntl is None:  # pragma: no cover
        return True
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return True
        raise
    finally:
        os.close(fd)
    return False


class PairJournal:
    """The record of one (sidecar, data file) publication: :meth:`begin` before the sidecar is
    published, :meth:`done` after the data file is, :meth:`abort` on a failure in between.
    The journal file is held under an exclusive ``flock`` while it is open, so
    :func:`find_leftovers` tells a running publication's journal from a dead one's.

    Parameters
    ----------
    path : pathlib.Path
        The journal file (``.<name>.<hex>.attach.journal``).
    fd : int
        Its open descriptor (locked), closed by :meth:`done` or :meth:`abort`.
    record : dict
        What it holds: data file and sidecar names, the data file's identity before
        publication, the backup of a replaced sidecar.
    """

    def __init__(self, path: Path, fd: int, record: dict[str, Any]) -> None:
        self.path = path
        self._fd = fd
        self.record = record

    @classmethod
    def begin(cls, data_file: Path, sidecar: Path) -> PairJournal:
        """Start the publication of ``sidecar`` and then ``data_file``: hard-link a backup of a
        sidecar it will replace, then write the journal (exclusive, locked, fsynced) beside
        ``data_file``.

        Parameters
        ----------
        data_file : pathlib.Path
            The data file about to be published.
        sidecar : pathlib.Path
            Its external key material file, published first.

        Returns
        -------
        PairJournal
            The open journal.

        Raises
        ------
        OSError
            The backup link, the journal's creation or its write fails (a journal partly written
            is removed; a backup already linked is left, a temporary file :func:`clean_leftovers`
            removes).
        """
        directory = data_file.parent
        token = os.urandom(6).hex()
        backup = None
        if sidecar.exists():
            backup = sidecar.with_name(f".{sidecar.name}.{token}.attach.bak")
            os.link(sidecar, backup)
        record = {"data": data_file.name, "data_before": _identity(data_file), "sidecar": sidecar.name,
                  "backup": None if backup is None else backup.name}
        path = directory / f".{data_file.name}.{token}.attach.journal"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps(record).encode())
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        return cls(path, fd, record)

    def done(self) -> None:
        """Both files are published: drop the backup and the journal.

        Raises
        ------
        OSError
            The backup or the journal cannot be removed (one already gone is fine).
        """
        if self.record["backup"]:
            (self.path.parent / self.record["backup"]).unlink(missing_ok=True)
        self._close()

    def abort(self) -> None:
        """The data file was not published: put the sidecar back as it was (the backup restored,
        or a sidecar that replaced none removed), then drop the journal.

        Raises
        ------
        OSError
            The sidecar cannot be restored or removed, or the journal removed.
        """
        _roll_back(self.path.parent, self.record, published=False)
        self._close()

    def _close(self) -> None:
        self.path.unlink(missing_ok=True)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _roll_back(directory: Path, record: dict[str, Any], published: bool | None = None) -> str:
    """Finish or undo the publication ``record`` describes (``published`` None: tell from the data
    file's identity); says what was done."""
    data, sidecar = directory / record["data"], directory / record["sidecar"]
    backup = directory / record["backup"] if record.get("backup") else None
    now = _identity(data)
    if published is None:
        published = now is not None and now != record.get("data_before")
    if published:
        if backup is not None:
            backup.unlink(missing_ok=True)
        return f"{data.name} was published: kept it and its key material"
    if backup is not None and backup.exists():
        os.replace(backup, sidecar)
        return f"{data.name} was not published: restored the key material {sidecar.name} it replaced"
    if record.get("backup") is None and sidecar.exists():
        sidecar.unlink()
        return f"{data.name} was not published: removed the orphaned key material {sidecar.name}"
    return f"{data.name} was not published: nothing else to undo"


def recover_journal(journal: Path) -> str:
    """Roll back (or finish) the publication a dead attach left in ``journal``; removes it.
    Published (the data file's identity changed since the journal was written): the backup
    is dropped; not published: the replaced sidecar is restored from its backup, or the
    orphaned one removed. An unreadable journal is only removed.

    Parameters
    ----------
    journal : pathlib.Path
        A journal (``.<name>.<hex>.attach.journal``) no live process holds.

    Returns
    -------
    str
        What was done, for ``doctor --fix``.

    Raises
    ------
    OSError
        A file cannot be restored or removed.
    """
    try:
        record = json.loads(journal.read_bytes())
        if not isinstance(record, dict) or not isinstance(record.get("data"), str) \
                or not isinstance(record.get("sidecar"), str):
            raise ValueError("not a journal record")
        for name in ("data", "sidecar", "backup"):
            value = record.get(name)
            if value is not None and (not isinstance(value, str) or os.sep in value or value in ("", ".", "..")):
                raise ValueError(f"bad {name} name")
    except (OSError, ValueError):
        journal.unlink(missing_ok=True)
        return f"removed the unreadable journal {journal.name}"
    done = _roll_back(journal.parent, record)
    journal.unlink(missing_ok=True)
    return done


@dataclass(frozen=True)
class Leftover:
    """One file an interrupted attach left.

    Parameters
    ----------
    path : str
        The file.
    kind : str
        ``journal``, ``temporary`` or ``orphaned_sidecar``.
    live : bool, default False
        A running attach still holds it (never removed).
    """

    path: str
    kind: str
    live: bool = False

    def notice(self) -> str:
        """The audit's notice for this leftover: its path, what it is, and whether a running attach
        holds it or ``secure-bloom doctor --fix`` cleans it.

        Returns
        -------
        str
            One line.

        Raises
        ------
        None
            Formats the fields (``kind`` is one of the three kinds).
        """
        what = {"journal": "an unfinished attach publication (journal)",
                "temporary": "a temporary file of an interrupted attach",
                "orphaned_sidecar": "key material whose data file does not exist (orphaned sidecar)"}[self.kind]
        state = " (in use by a running attach)" if self.live else " (run 'secure-bloom doctor --fix' to clean it)"
        return f"{self.path}: {what}{state}"

    def to_dict(self) -> dict[str, Any]:
        """The leftover for JSON output: ``path``, ``kind`` and ``live``.

        Returns
        -------
        dict
            Plain values.

        Raises
        ------
        None
            Copies the fields.
        """
        return {"path": self.path, "kind": self.kind, "live": self.live}


def find_leftovers(directory: str | os.PathLike[str]) -> list[Leftover]:
    """Leftovers of interrupted attaches in ``directory`` (not recursive), sorted by name.

    Parameters
    ----------
    directory : str or os.PathLike
        The directory to look in.

    Returns
    -------
    list of Leftover
        Journals, hidden temporary files and orphaned sidecars; empty when the directory
        cannot be listed.

    Raises
    ------
    OSError
        A leftover's lock cannot be tested (an error other than "held").
    """
    base = Path(directory)
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out: list[Leftover] = []
    journaled = set()
    for name in names:
        path = base / name
        if _JOURNAL.match(name):
            out.append(Leftover(str(path), "journal", _held_by_live_process(path)))
            try:
                journaled.add(json.loads(path.read_bytes()).get("sidecar"))
            except (OSError, ValueError, AttributeError):
                pass
        elif _TEMP.match(name) and path.is_file():
            out.append(Leftover(str(path), "temporary", _held_by_live_process(path)))
    for name in names:
        match = _SIDECAR.match(name)
        if match and name not in journaled and not (base / match.group(1)).exists() \
                and sidecar_path(base / match.group(1)).name == name:
            out.append(Leftover(str(base / name), "orphaned_sidecar"))
    return out


def clean_leftovers(directory: str | os.PathLike[str], *, only_for: str | None = None,
                    orphans: bool = True) -> list[tuple[Leftover, str]]:
    """Recover what dead attaches left in ``directory``: journals first (rolling their
    publication back or forward), then stale temporary files and (with ``orphans``) sidecars
    without a data file. ``only_for`` limits it to the leftovers of attaches to that data file
    name (what ``attach`` cleans before writing it). Files a running attach holds are left
    alone.

    Parameters
    ----------
    directory : str or os.PathLike
        The directory to clean.
    only_for : str, optional
        Only the leftovers of attaches to this data file name.
    orphans : bool, default True
        Also remove sidecars without a data file.

    Returns
    -------
    list of (Leftover, str)
        Each leftover with what was done.

    Raises
    ------
    OSError
        A leftover cannot be removed or rolled back.
    """
    def mine(leftover: Leftover) -> bool:
        if only_for is None:
            return True
        name = Path(leftover.path).name
        return name.startswith((f".{only_for}.", f".{sidecar_path(only_for).name}."))

    done: list[tuple[Leftover, str]] = []
    for leftover in find_leftovers(directory):
        if leftover.kind == "journal" and not leftover.live and mine(leftover):
            done.append((leftover, recover_journal(Path(leftover.path))))
    for leftover in find_leftovers(directory):
        path = Path(leftover.path)
        if not mine(leftover) or leftover.kind == "journal" or (leftover.kind == "orphaned_sidecar" and not orphans):
            continue
        if leftover.live:
            done.append((leftover, "left alone: a running attach holds it"))
        elif leftover.kind == "temporary":
            path.unlink(missing_ok=True)
            done.append((leftover, "removed"))
        else:
            path.unlink(missing_ok=True)
            done.append((leftover, "removed (its data file does not exist)"))
    return done
