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
* a ``SubTreeFileSystem`` over the local disk is the local disk (:func:`~.sources.local_path`);
* other filesystems (HDFS, GCS, a ``PyFileSystem`` handler...) tell only a size and a
  modification time, which a replacement can keep (``cp -p``, ``rsync -a``, a rewrite within
  the mtime's granularity): ``("fs", size, mtime_ns, tail digest, unique)`` adds the SHA-256
  of the file's tail (footer, its length, the magic) as read. An encrypted footer (``PARE``)
  is GCM-encrypted under a random nonce, so two writes never share its bytes: its digest
  alone tells the version (``unique``), and a :class:`~secure_bloom.parquet.PruneCache` may
  answer from facts kept under it. A plaintext footer can be byte-identical in two versions
  whose Bloom filters differ: its facts are not reused (:func:`reusable`), and the version a
  scan opens is proven by the digest of every byte pruning read (footer and filters:
  :func:`pinned_identity`), read again when pyarrow opens the file.

:class:`PinnedFileSystem` is the ``pyarrow.fs`` handler scans read through: when pyarrow opens a
file whose identity was recorded, it opens it, checks the opened file's identity and raises
:class:`~secure_bloom.errors.FileChangedError` on any difference. A local file is checked on
the descriptor pyarrow then reads (reopened through ``/proc/self/fd`` where Linux has it), so a
replacement after the check does not matter: the scan reads the inode that was pruned. An object
store is checked at its open; pyarrow's range reads that follow carry no ``If-Match``, so a
replacement between that HEAD and them is not seen (pyarrow's own reads share that window).
Other filesystems are checked at the open by reading again the bytes the identity digests
(same window after it).
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Mapping
from typing import Any, cast

import pyarrow as pa
import pyarrow.fs as pafs

from ...errors import FileChangedError, SecureBloomError
from ...fileio import LocalFile, open_regular_fd, ranges_digest
from .lifetime import refuse_when_exiting
from .read_counting import CountingFileSystem, ReadCounter
from .sources import display_path, locate
from .tail import TAIL_READ_BYTES, FileTail, read_tail

__all__ = ["Identity", "local_identity", "opened_identity", "open_identified", "file_identity", "identity_size",
           "reusable", "pinned_identity", "PinnedFileSystem", "opens_natively"]

Identity = tuple[Any, ...]

#: Where Linux shows a process's open descriptors: opening ``/proc/self/fd/N`` opens N's file.
_PROC_FD = "/proc/self/fd"
_LOCAL = pafs.LocalFileSystem()


def local_identity(st: os.stat_result) -> Identity:
    """The identity of a local file from its ``stat`` (of the descriptor read, preferably).

    Parameters
    ----------
    st : os.stat_result
        The file's ``fstat`` (or ``stat``).

    Returns
    -------
    Identity
        ``("local", st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)``.

    Raises
    ------
    None
        Reads fields of ``st``.
    """
    return ("local", st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _text(metadata: Mapping[Any, Any], key: str) -> str | None:
    for name in (key, key.encode()):
        value = metadata.get(name)
        if value:
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


def _tail_digest(tail: FileTail) -> str:
    """The SHA-256 (hex) of a file's tail: footer, footer length and magic, as stored."""
    return hashlib.sha256(tail.footer + struct.pack("<I", len(tail.footer)) + tail.magic).hexdigest()


def opened_identity(raw: Any, filesystem: Any, path: str, tail: FileTail | None = None) -> Identity | None:
    """The identity of the file ``raw`` (opened from ``path`` on ``filesystem``; None: local).
    On a filesystem telling neither inode nor ETag it digests the tail: ``tail`` when the
    caller read it from ``raw``, else read here (one read, :data:`TAIL_READ_BYTES`, then
    ``raw`` is sought back to 0).

    Parameters
    ----------
    raw : file or pyarrow.NativeFile
        The open file (a local one with ``fileno``).
    filesystem : pyarrow.fs.FileSystem or None
        Where it was opened; None or a ``LocalFileSystem``: local.
    path : str
        Its path on ``filesystem``.
    tail : FileTail, optional
        Its tail, already read from ``raw``.

    Returns
    -------
    Identity or None
        A ``local``, ``object`` or ``fs`` identity (module docstring); None when it cannot be
        told (a caller's stream, no modification time, a size that disagrees, an error, not a
        Parquet tail).

    Raises
    ------
    None
        Errors of ``fstat``, the filesystem or the tail read give None.
    """
    try:
        if filesystem is None or isinstance(filesystem, pafs.LocalFileSystem):
            if isinstance(raw, LocalFile):
                # the fstat of its open, taken before anything was read: a change while the
                # reader reads shows as another version when the scan opens the file
                return local_identity(raw.stat)
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
    if info.type != pafs.FileType.File or info.size is None or mtime is None or info.size != size:
        return None
    try:
        if tail is None:
            tail = read_tail(raw, path, speculative_bytes=TAIL_READ_BYTES, leading_magic=False)
            raw.seek(0)
    except (OSError, ValueError, pa.ArrowException, SecureBloomError):
        return None
    if tail.file_size != size:
        return None
    return ("fs", size, mtime, _tail_digest(tail), tail.encrypted_footer)


def reusable(identity: Identity | None) -> bool:
    """Whether facts derived from one version of a file may answer for a file showing
    ``identity``: a local or object identity, or a tail digest of an encrypted footer (whose
    random nonce no other write shares); never a plaintext footer's digest (module docstring).

    Parameters
    ----------
    identity : Identity or None
        What :func:`opened_identity` told.

    Returns
    -------
    bool
        False for None and for an ``fs`` identity of a plaintext footer.

    Raises
    ------
    None
        Inspects the tuple.
    """
    return identity is not None and (identity[0] != "fs" or bool(identity[4]))


def pinned_identity(identity: Identity | None, ranges: Any, digest: str | None) -> Identity | None:
    """The identity a scan pins for a version whose rows were chosen from the ``ranges``
    (offset, length) read, of SHA-256 ``digest``: ``identity`` itself when it proves the
    version (:func:`reusable`), else ``identity`` with the ranges and their digest, which
    :class:`PinnedFileSystem` reads again at the scan's open.

    Parameters
    ----------
    identity : Identity or None
        The identity the reader told.
    ranges : iterable of (int, int)
        Every (offset, length) pruning read (``ParquetBloomReader.read_ranges``).
    digest : str or None
        Their SHA-256 (``ParquetBloomReader.read_digest``; None: not digested).

    Returns
    -------
    Identity or None
        None when nothing proves the version (no identity, or a needed digest missing).

    Raises
    ------
    None
        Builds a tuple.
    """
    if identity is None or reusable(identity):
        return identity
    if digest is None:
        return None
    return (*identity[:5], tuple((int(o), int(n)) for o, n in ranges), digest)


def open_identified(path: str, filesystem: Any = None) -> tuple[pa.NativeFile | None, Identity | None]:
    """(an open file, its identity) of ``path`` now, in the form :func:`opened_identity` gives
    for a reader of it. Locally one ``stat`` and no open file (None); on an object store the one
    open (a HEAD) that tells the identity, kept open: a reader given it
    (``ParquetBloomReader(..., opened=)``) reads that version without a HEAD of its own; the
    caller closes it otherwise.

    Parameters
    ----------
    path : str
        The file to open: a local path, a URI, or a path on ``filesystem``.
    filesystem : pyarrow.fs.FileSystem, optional
        Where ``path`` is (default: from the URI, else local).

    Returns
    -------
    (pyarrow.NativeFile or None, Identity or None)
        (None, None) when the identity cannot be determined (not a file, an error: the
        caller then reads the file and reports its error).

    Raises
    ------
    None
        Errors of the open give (None, None).
    """
    try:
        fs, text = locate(path, filesystem)  # None: a local path (a SubTreeFileSystem's too)
        if fs is None:
            return None, local_identity(os.stat(text))
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
    a HEAD, closed again), in the form :func:`opened_identity` gives for a reader of it.

    Parameters
    ----------
    path : str
        A local path, a URI, or a path on ``filesystem``.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem ``path`` is on.

    Returns
    -------
    Identity or None
        None when it cannot be determined (not a file, an error: the caller then reads the
        file and reports its error).

    Raises
    ------
    None
        Errors give None (:func:`open_identified`).
    """
    raw, identity = open_identified(path, filesystem)
    if raw is not None:
        raw.close()
    return identity


def identity_size(identity: Identity) -> int:
    """The file size recorded in an identity.

    Parameters
    ----------
    identity : Identity
        A ``local``, ``object`` or ``fs`` identity.

    Returns
    -------
    int
        The size in bytes.

    Raises
    ------
    None
        Reads the tuple.
    """
    return int(identity[3] if identity[0] == "local" else identity[1])


def _changed(path: str, filesystem: Any) -> FileChangedError:
    return FileChangedError(
        f"{display_path(filesystem, path)} changed after its row groups were chosen (modified or replaced "
        "between pruning and the scan): nothing was read from it; read again to prune the new version")


def opens_natively(filesystem: pafs.FileSystem) -> bool:
    """Whether ``filesystem``'s files are read without calling Python (not a ``PyFileSystem``).

    Parameters
    ----------
    filesystem : pyarrow.fs.FileSystem
        A filesystem.

    Returns
    -------
    bool
        False for a ``pyarrow.fs.PyFileSystem`` (a handler written in Python).

    Raises
    ------
    None
        A type check.
    """
    return not isinstance(filesystem, pafs.PyFileSystem)


class PinnedFileSystem(CountingFileSystem):
    """A read-only ``pyarrow.fs`` handler over ``inner`` (``pyarrow.fs.PyFileSystem(
    PinnedFileSystem(fs, identities))``) that opens a file named in ``identities`` only if it is
    still that version (:class:`~secure_bloom.errors.FileChangedError` otherwise), and counts
    reads when given a ``counter``. Files not named open as they are (dataset discovery).

    ``held``: bytes pruning read of a pinned file (its tail: :meth:`~.tail.FileTail.held`). Once
    the opened file is proven that version, pyarrow's reads inside them (the footer, read again
    to scan) are answered from memory: on an object store, no second request for bytes already
    read. Reads outside go to the opened file. They serve the file's first open only (then they
    are dropped: a dataset kept for later scans does not keep them).

    Parameters
    ----------
    inner : pyarrow.fs.FileSystem
        The filesystem read through.
    identities : mapping of str to Identity
        Path on ``inner`` -> the identity (:func:`pinned_identity`) its open must show.
    counter : ReadCounter, optional
        Counts the reads of opened files (not kept when the handler is pickled).
    held : mapping of str to (int, bytes), optional
        Path -> (offset, bytes) of its pinned version, read already (not kept when pickled:
        another process reads them again).
    """

    def __init__(self, inner: pafs.FileSystem, identities: Mapping[str, Identity],
                 counter: ReadCounter | None = None, held: Mapping[str, tuple[int, bytes]] | None = None) -> None:
        super().__init__(inner, counter)
        self.identities = dict(identities)
        self.counting = counter is not None
        self.held = {path: region for path, region in (held or {}).items() if path in self.identities}

    def get_type_name(self) -> str:
        """``pinned+`` and the type name of ``inner``."""
        return f"pinned+{self.inner.type_name}"

    def __reduce__(self) -> tuple[Any, ...]:
        """A pickled dataset (sent to another process) keeps its checks; reads are counted only
        in the process that asked for it."""
        return (PinnedFileSystem, (self.inner, self.identities))

    def equals(self, other: Any) -> bool:
        """Whether ``other`` is a pinned handler over an equal ``inner`` with the same identities.

        Parameters
        ----------
        other : object
            The handler pyarrow compares this one with.

        Returns
        -------
        bool
            True for an equal pinned handler.

        Raises
        ------
        None
            A comparison in memory (the inner filesystems' ``equals``).
        """
        return (isinstance(other, PinnedFileSystem) and bool(self.inner.equals(other.inner))
                and self.identities == other.identities)

    def _open_local(self, path: str, expected: Identity) -> pa.NativeFile:
        fd = open_regular_fd(path)
        try:
            if local_identity(os.fstat(fd)) != expected:
                raise _changed(path, None)
            if os.path.isdir(_PROC_FD):  # the very inode checked, even if path is replaced now
                try:
                    return _LOCAL.open_input_file(f"{_PROC_FD}/{fd}")
                except OSError:
                    pass  # a restricted /proc: open the path and check again below
            raw = _LOCAL.open_input_file(path)
            st = os.stat(path)
            if local_identity(st) != expected:  # replaced while opened: no way to tell which was
                raw.close()
                raise _changed(path, None)
            return raw
        finally:
            os.close(fd)

    def _open(self, path: str) -> pa.NativeFile:
        refuse_when_exiting(path)  # Arrow's thread calling in during the exit: end the scan now
        expected = self.identities.get(path)
        if expected is None:
            return self.inner.open_input_file(path)
        if expected[0] == "local":
            fs, local = locate(path, self.inner)  # a SubTreeFileSystem over the disk: its local path
            if fs is None:
                return self._open_local(local, expected)
        raw = self.inner.open_input_file(path)
        try:
            same = opened_identity(raw, self.inner, path) == expected[:5]
            if same and len(expected) > 5:  # the bytes pruning read (pinned_identity), read again
                same = ranges_digest(raw, expected[5]) == expected[6]
                raw.seek(0)
        except (OSError, ValueError, pa.ArrowException):
            same = False
        if not same:
            raw.close()
            raise _changed(path, self.inner)
        return raw

    def open_native(self, path: str) -> pa.NativeFile | None:
        """The checked open of a pinned file (:class:`~secure_bloom.errors.FileChangedError` when
        it is no longer the version pruned), as ``inner``'s own file, which pyarrow reads without
        calling back into Python; None when a scan of ``path`` must go through this handler (not
        pinned, reads counted, bytes held for it, or ``inner`` a Python handler itself, whose files
        call Python whoever opens them).
        Locally the file is the very inode checked; on an object store the open is its HEAD.

        A scan of a native file never calls Python from Arrow's threads. pyarrow's
        ``Scanner.to_reader()`` keeps the GIL while it starts the scan and waits there for a lock
        that an Arrow thread opening a file through a Python handler holds while it waits for
        the GIL (DuckDB calls it for every query): a scan whose files open here cannot deadlock so.

        Parameters
        ----------
        path : str
            A path on ``inner``.

        Returns
        -------
        pyarrow.NativeFile or None
            The open file, or None.

        Raises
        ------
        secure_bloom.errors.FileChangedError
            The file was modified or replaced after it was pruned.
        OSError
            It cannot be opened (``StorageUnavailableError`` for a store that does not answer).
        """
        if path not in self.identities or self.counting or path in self.held or not opens_natively(self.inner):
            return None
        return self._open(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        """``inner``'s file of ``path``, checked against its recorded identity (``FileChangedError``), its reads counted with a ``counter``."""
        raw = self._open(path)
        held = self.held.pop(path, None)  # only after _open proved the version: these are its bytes
        return self.counted(raw, path, held) if self.counting or held is not None else raw

    def open_input_stream(self, path: str) -> pa.NativeFile:
        """The checked file of :meth:`open_input_file`, read as a stream."""
        return cast(pa.NativeFile, self.open_input_file(path))
