"""Where Parquet files are: local paths, URIs and ``pyarrow.fs`` filesystems (S3, GCS, HDFS...).

Every reader of this package opens its files here. A local path (or ``file://`` URI) is opened
as a regular file read positionally (:func:`~secure_bloom.fileio.open_local_file`: never a FIFO
or a device); a path on another filesystem, or a URI such as ``s3://bucket/key``, through
``filesystem.open_input_file``, whose reads are range requests of exactly the bytes asked for:
opening a file on an object store downloads nothing but what the reader reads.

* :func:`open_source` opens one file for :class:`~secure_bloom.parquet.ParquetBloomReader`.
* :func:`resolve` turns a source (path, URI, list of them) and an optional filesystem into one
  ``pyarrow.fs.FileSystem`` and the paths on it.
* :func:`filesystem_from_uri` is the one parser of URIs (every command and API reading or writing
  one comes here): pyarrow's ``FileSystem.from_uri``, with the connect and request timeouts of
  :class:`StoreTimeouts` put on the filesystem it builds (:func:`store_timeouts` sets them for a
  block of code). :func:`locate` gives the filesystem and path of a path or URI;
  :func:`join_uri` names an object under a URI prefix (its options kept).
* :func:`~secure_bloom.display.display_uri` (re-exported here) shows a URI without its
  credentials or options; :func:`storage_error` turns a filesystem's bare ``OSError`` into the
  error a caller can act on (store unreachable, access denied, no such bucket).
* :func:`read_key_material` reads the external key material sidecar beside a file on any
  filesystem.
* Counting what a scan fetched is :mod:`.read_counting`'s job.
"""

from __future__ import annotations

import contextvars
import datetime
import errno
import math
import os
import posixpath
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, BinaryIO, cast

import pyarrow.fs as pafs

from ...display import display_uri, is_uri, uri_secrets
from ...errors import ConfigurationError, KeyNotFoundError, StorageUnavailableError
from ...fileio import open_local_file
from ...kms.sidecar import SIDECAR_PREFIX, SIDECAR_SUFFIX, KeyMaterialStore

__all__ = ["open_source", "resolve", "locate", "is_uri", "is_store_uri", "display_path", "display_uri",
           "display_source", "is_local_source", "local_path", "storage_error", "StoreTimeouts", "DEFAULT_STORE_TIMEOUTS",
           "store_timeouts", "filesystem_from_uri", "join_uri",
           "read_key_material"]

def is_store_uri(text: str) -> bool:
    """True for a URI naming an object store or a remote filesystem (not ``file://``).

    Parameters
    ----------
    text : str
        A path or URI.

    Returns
    -------
    bool
        Whether it names a store.

    Raises
    ------
    None
        Nothing of its own.
    """
    return is_uri(text) and text[:7].lower() != "file://"


def _is_local(filesystem: Any) -> bool:
    return filesystem is None or isinstance(filesystem, pafs.LocalFileSystem)


def local_path(filesystem: Any, path: str) -> str | None:
    """The local path of ``path`` on ``filesystem`` when the filesystem is local disk under
    another name: a ``SubTreeFileSystem`` (nested or not) over a ``LocalFileSystem``. Such a
    file is then read, and its version told (device, inode, ctime), as a local file.

    Parameters
    ----------
    filesystem : pyarrow.fs.FileSystem or None
        The filesystem ``path`` is on.
    path : str
        The path on it.

    Returns
    -------
    str or None
        The absolute local path; None for any other filesystem, or a path with ``..``
        segments (left to the filesystem to judge).

    Raises
    ------
    None
        Path arithmetic only; nothing is opened.
    """
    if not isinstance(filesystem, pafs.SubTreeFileSystem):
        return None
    if ".." in path.replace("\\", "/").split("/"):
        return None
    while isinstance(filesystem, pafs.SubTreeFileSystem):
        path = f"{filesystem.base_path.rstrip('/')}/{path.lstrip('/')}"
        filesystem = filesystem.base_fs
    return os.path.abspath(path) if isinstance(filesystem, pafs.LocalFileSystem) else None


def display_path(filesystem: Any, path: str) -> str:
    """``path`` as a user reads it: local paths as they are, others as ``<type>://path`` (the
    type of the filesystem a :class:`CountingFileSystem` wraps).

    Parameters
    ----------
    filesystem : pyarrow.fs.FileSystem or None
        The filesystem.
    path : str
        The path on it.

    Returns
    -------
    str
        The text to show (no credentials).

    Raises
    ------
    None
        Nothing of its own.
    """
    if _is_local(filesystem):
        return path
    inner = getattr(getattr(filesystem, "handler", None), "inner", None)
    return f"{(inner if inner is not None else filesystem).type_name}://{path}"


def is_local_source(source: str, filesystem: Any = None) -> bool:
    """True for a path or ``file://`` URI on the local disk (no filesystem, or a local one).

    Parameters
    ----------
    source : str
        A path or URI.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem it is on.

    Returns
    -------
    bool
        Whether it is on the local disk.

    Raises
    ------
    None
        Nothing of its own.
    """
    return _is_local(filesystem) and (not is_uri(source) or source.startswith("file://"))


def display_source(source: str | os.PathLike[str], filesystem: Any = None) -> str:
    """How reports name ``source``: a path on a non-local ``filesystem`` as
    ``<type>://path``, a URI by :func:`display_uri`, a local path as it is.

    Parameters
    ----------
    source : str or os.PathLike
        A path or URI.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem a path is on.

    Returns
    -------
    str
        The text to show (no credentials, no URI options).

    Raises
    ------
    None
        Nothing of its own.
    """
    text = os.fspath(source)
    if not _is_local(filesystem):
        return display_path(filesystem, _strip_scheme(text, filesystem))
    return display_uri(text)


@dataclass(frozen=True)
class StoreTimeouts:
    """How long a filesystem built from a URI waits on its store, in seconds: ``connect_s`` for a
    connection, ``request_s`` without a byte of an answer (an idle timeout: a long transfer that
    keeps moving is not cut), each of ``attempts`` tries (pyarrow's retry strategy). A store that
    accepts connections and never answers fails a request after about
    ``attempts * (request_s + backoff)``, and the first request that fails so ends the call
    (:class:`~secure_bloom.errors.StorageUnavailableError`; no call waits on a second one): a
    call waits on a silent store for one request's tries, 7-10 s by default (measured on S3
    for read_table, scan, dataset, the reader, audit and the writes). Not a bound on a call's
    total time: a store that answers, however slowly, can make each of a call's requests wait
    up to ``request_s`` per try without a byte (the CLI's ``--deadline`` bounds a whole
    command). On S3 all three apply; on GCS the retries stop after ``attempts * request_s``;
    other filesystems (HDFS...) keep their own. S3 over curl counts ``request_s`` in whole
    seconds (at least 1).

    Parameters
    ----------
    connect_s : float, default 2.0
        Seconds to wait for a connection.
    request_s : float, default 2.0
        Seconds without a byte of an answer.
    attempts : int, default 3
        Tries per request.

    Raises
    ------
    ValueError
        A time is not > 0 and finite, or ``attempts`` < 1.
    """

    connect_s: float = 2.0
    request_s: float = 2.0
    attempts: int = 3

    def __post_init__(self) -> None:
        for name in ("connect_s", "request_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError(f"attempts must be an int >= 1, got {self.attempts!r}")

    def within(self, seconds: float) -> StoreTimeouts:
        """These timeouts, shortened so that one request's tries fit in ``seconds``: ``request_s``
        becomes at most ``seconds / attempts`` (not below 0.1 s), ``connect_s`` at most that.

        Parameters
        ----------
        seconds : float
            The time left (a deadline's remainder).

        Returns
        -------
        StoreTimeouts
            A new value; ``attempts`` unchanged.

        Raises
        ------
        None
            Arithmetic; the shortened times stay valid (at least 0.1 s).
        """
        request = min(self.request_s, max(seconds / self.attempts, 0.1))
        return replace(self, connect_s=min(self.connect_s, request), request_s=request)


#: The timeouts of filesystems built from URIs unless :func:`store_timeouts` says otherwise.
DEFAULT_STORE_TIMEOUTS = StoreTimeouts()

_TIMEOUTS: contextvars.ContextVar[StoreTimeouts] = contextvars.ContextVar("store_timeouts",
                                                                          default=DEFAULT_STORE_TIMEOUTS)


@contextmanager
def store_timeouts(timeouts: StoreTimeouts | None) -> Iterator[StoreTimeouts]:
    """Every filesystem built from a URI in this block (and this thread or task) gets ``timeouts``
    (None: keep the ones in force). Filesystems passed in by the caller keep their own.

    Parameters
    ----------
    timeouts : StoreTimeouts or None
        The timeouts for the block.

    Yields
    ------
    StoreTimeouts
        The timeouts in force inside the block.

    Raises
    ------
    None
        Nothing of its own.
    """
    if timeouts is None:
        yield _TIMEOUTS.get()
        return
    if not isinstance(timeouts, StoreTimeouts):
        raise TypeError(f"timeouts must be a StoreTimeouts, got {type(timeouts).__name__}")
    token = _TIMEOUTS.set(timeouts)
    try:
        yield timeouts
    finally:
        _TIMEOUTS.reset(token)


def _options_of(filesystem: Any) -> dict[str, Any]:
    """The keyword arguments that rebuild ``filesystem`` (what pyarrow pickles it as)."""
    return dict(cast("tuple[Any, tuple[dict[str, Any]]]", filesystem.__reduce__())[1][0])


def _with_timeouts(filesystem: Any, timeouts: StoreTimeouts) -> Any:
    """``filesystem`` (just built by ``from_uri``) rebuilt with ``timeouts``, from its own options."""
    if isinstance(filesystem, pafs.S3FileSystem):
        options = _options_of(filesystem)
        options.update(connect_timeout=timeouts.connect_s, request_timeout=timeouts.request_s,
                       retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=timeouts.attempts))
        return pafs.S3FileSystem(**options)
    if isinstance(filesystem, getattr(pafs, "GcsFileSystem", ())):
        options = _options_of(filesystem)
        options["retry_time_limit"] = datetime.timedelta(seconds=timeouts.request_s * timeouts.attempts)
        return type(filesystem)(**options)
    return filesystem


def filesystem_from_uri(text: str, timeouts: StoreTimeouts | None = None) -> tuple[Any, str]:
    """(the filesystem, the path on it) of a URI: THE parser of URIs for every command and API.

    pyarrow's ``FileSystem.from_uri`` reads the URI (credentials in its user info or options,
    ``endpoint_override=``, ``scheme=``, ``region=``...); the filesystem gets ``timeouts`` (default:
    those of :func:`store_timeouts`, else :data:`DEFAULT_STORE_TIMEOUTS`). A URI it cannot open is
    a :class:`~secure_bloom.errors.ConfigurationError` naming it by
    :func:`~secure_bloom.display.display_uri` (no credentials, no options).

    Parameters
    ----------
    text : str
        The URI (``s3://bucket/key?endpoint_override=host:port&scheme=http``, ``gs://``, ``file://``).
    timeouts : StoreTimeouts, optional
        For the filesystem built.

    Returns
    -------
    (pyarrow.fs.FileSystem, str)
        The filesystem and the path on it.

    Raises
    ------
    secure_bloom.errors.ConfigurationError
        pyarrow cannot open the URI.

    Examples
    --------
    >>> from secure_bloom.parquet.file.sources import filesystem_from_uri
    >>> fs, path = filesystem_from_uri("file:///tmp/lake/x.parquet")
    >>> type(fs).__name__, path
    ('LocalFileSystem', '/tmp/lake/x.parquet')
    """
    try:
        filesystem, path = pafs.FileSystem.from_uri(text)
    except (ValueError, TypeError) as e:  # pyarrow.ArrowInvalid
        message = str(e).replace(text, display_uri(text))
        for secret in uri_secrets(text):
            message = message.replace(secret, "<redacted>")
        raise ConfigurationError(" ".join(message.split())) from None
    except OSError as e:  # a lookup of the bucket's region
        raise storage_error(e, display_uri(text)) from None
    return _with_timeouts(filesystem, timeouts or _TIMEOUTS.get()), cast(str, path)


def join_uri(base: str, relative: str) -> str:
    """``relative`` (a '/'-separated path) under the prefix or directory ``base``: a URI keeps its
    options after the new path (``s3://b/out?x=1`` + ``a/f.parquet`` is
    ``s3://b/out/a/f.parquet?x=1``); a local path is joined with ``os.path.join``.

    Parameters
    ----------
    base : str
        A URI or local directory.
    relative : str
        A '/'-separated path under it.

    Returns
    -------
    str
        The joined URI or path.

    Raises
    ------
    None
        Nothing of its own.
    """
    if not is_store_uri(base):
        return os.path.join(base, relative)
    head, sep, query = base.partition("?")
    return f"{head.rstrip('/')}/{relative.lstrip('/')}{sep}{query}"


_AWS_ERROR = re.compile(r"AWS Error (\w+)")
_UNREACHABLE = ("NETWORK_CONNECTION", "REQUEST_TIMEOUT", "SERVICE_UNAVAILABLE", "SLOW_DOWN", "THROTTLING",
                "INTERNAL_FAILURE")


def storage_error(error: OSError, where: str) -> OSError:
    """The error a caller can act on for ``error``, raised by a ``pyarrow.fs`` filesystem about
    ``where``: :class:`~secure_bloom.errors.StorageUnavailableError` for a store that cannot be
    reached (after the filesystem's own bounded retries), ``PermissionError`` for access denied,
    ``FileNotFoundError`` for a missing bucket; any other error as it is.

    Parameters
    ----------
    error : OSError
        What pyarrow raised.
    where : str
        The path or URI, as shown.

    Returns
    -------
    OSError
        The error to raise.

    Raises
    ------
    None
        It returns the error; the caller raises it.
    """
    if not isinstance(error, OSError) or isinstance(error, (StorageUnavailableError, FileNotFoundError,
                                                             PermissionError)):
        return error
    text = " ".join(str(error).split())
    match = _AWS_ERROR.search(text)
    code = match.group(1) if match else ""
    reason = text[match.start():] if match else text
    reason = re.split(r"; Details:| \(Request ID", reason)[0]
    if code in _UNREACHABLE or "curlCode" in text or "Could not connect" in text or "Connection refused" in text:
        return StorageUnavailableError(f"{where}: the object store cannot be reached ({reason})")
    if code == "ACCESS_DENIED" or "AccessDenied" in text:
        return PermissionError(errno.EACCES, f"access denied by the object store ({reason})", where)
    if code == "NO_SUCH_BUCKET":
        return FileNotFoundError(errno.ENOENT, "No such bucket", where)
    return error


def locate(source: str | os.PathLike[str], filesystem: Any = None) -> tuple[Any, str]:
    """(the filesystem, the path on it) of a path or URI: None for a local file (path as given,
    ``file://`` removed; a path on a ``SubTreeFileSystem`` over the local disk as its local
    path: :func:`local_path`); a URI without ``filesystem`` gets the filesystem it names.

    Parameters
    ----------
    source : str or os.PathLike
        A path or URI.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem a path is on.

    Returns
    -------
    (pyarrow.fs.FileSystem or None, str)
        The filesystem (None: local) and the path.

    Raises
    ------
    secure_bloom.errors.ConfigurationError
        A URI pyarrow cannot open.
    """
    if (filesystem is None or type(filesystem) is pafs.LocalFileSystem) and isinstance(source, str) \
            and "://" not in source:
        return None, source  # a plain local path (no URI: is_uri needs "://"): itself, at once
    text = os.fspath(source)
    if filesystem is None and is_store_uri(text):
        filesystem, text = filesystem_from_uri(text)
    text = _strip_scheme(text, filesystem)
    local = local_path(filesystem, text)
    if local is not None:
        return None, local
    return (None if _is_local(filesystem) else filesystem), text


def read_key_material(filesystem: Any, data_path: str) -> KeyMaterialStore:
    """The sidecar ``_KEY_MATERIAL_FOR_<name>.json`` beside ``data_path`` on ``filesystem`` (an
    object store: one bounded read of the small sidecar object). A missing sidecar raises
    :class:`~secure_bloom.errors.KeyNotFoundError`, as on a local disk.

    Parameters
    ----------
    filesystem : pyarrow.fs.FileSystem
        The store.
    data_path : str
        The Parquet file's path on it.

    Returns
    -------
    KeyMaterialStore
        The sidecar's key material.

    Raises
    ------
    secure_bloom.errors.KeyNotFoundError
        No sidecar beside the file.
    secure_bloom.errors.MalformedKeyMaterialError
        The sidecar does not parse (or is larger than a sidecar can be).
    secure_bloom.errors.StorageUnavailableError
        The store does not answer.
    """
    directory, name = posixpath.split(data_path)
    path = posixpath.join(directory, f"{SIDECAR_PREFIX}{name}{SIDECAR_SUFFIX}")
    where = display_path(filesystem, path)
    try:
        with filesystem.open_input_file(path) as f:
            return KeyMaterialStore.read_from(f, where)
    except FileNotFoundError:
        raise KeyNotFoundError(f"external key material file {where} does not exist") from None
    except OSError as e:
        raise storage_error(e, where) from None


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
    binary file (returned as it is, not owned).

    Parameters
    ----------
    source : str, os.PathLike or binary file
        What to open.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem a path is on.

    Returns
    -------
    (str, binary file, bool)
        The display path, the open file, and whether the caller must close it.

    Raises
    ------
    secure_bloom.errors.NotRegularFileError
        A local path that is not a regular file (a FIFO, a device).
    FileNotFoundError
        No such file.
    secure_bloom.errors.StorageUnavailableError
        The store does not answer.
    """
    if hasattr(source, "read") and hasattr(source, "seek"):
        return str(getattr(source, "name", "<stream>")), cast(BinaryIO, source), False
    filesystem, text = locate(source, filesystem)
    if filesystem is None:
        return text, cast(BinaryIO, open_local_file(text)), True
    try:
        raw = filesystem.open_input_file(text)
    except OSError as e:
        if "not found" in str(e).lower() or "does not exist" in str(e).lower():
            raise FileNotFoundError(2, "No such file or object", display_path(filesystem, text)) from None
        raise storage_error(e, display_path(filesystem, text)) from None
    return display_path(filesystem, text), cast(BinaryIO, raw), True


@dataclass(frozen=True)
class Resolved:
    """One filesystem and what to read on it: ``paths`` (files or directories)."""

    filesystem: pafs.FileSystem
    paths: tuple[str, ...]

    @property
    def local(self) -> bool:
        return isinstance(self.filesystem, pafs.LocalFileSystem)


def resolve(source: Any, filesystem: Any = None, timeouts: StoreTimeouts | None = None) -> Resolved:
    """The filesystem and paths of ``source``: a path, a URI, or a list of either (one
    filesystem for all, built with ``timeouts``). Local paths become absolute; a given
    ``filesystem`` is used as it is.

    Parameters
    ----------
    source : str, os.PathLike or list
        Paths or URIs.
    filesystem : pyarrow.fs.FileSystem, optional
        Used as it is.
    timeouts : StoreTimeouts, optional
        For a filesystem built from a URI.

    Returns
    -------
    Resolved
        The filesystem and the paths on it.

    Raises
    ------
    ValueError
        ``source`` names no file.
    secure_bloom.errors.ConfigurationError
        A URI pyarrow cannot open.
    """
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not items:
        raise ValueError("source names no file")
    fs: Any = filesystem
    paths: list[str] = []
    for item in items:
        text = os.fspath(item)
        if fs is None and is_store_uri(text):
            fs, path = filesystem_from_uri(text, timeouts)
        elif fs is not None and is_uri(text):
            path = _strip_scheme(text, fs)
        elif is_uri(text):  # file://
            path = _strip_scheme(text, None)
        else:
            path = text
        if fs is None or isinstance(fs, pafs.LocalFileSystem):
            path = os.path.abspath(path)
        paths.append(path)
    local = [local_path(fs, path) for path in paths]
    if fs is not None and all(p is not None for p in local):
        return Resolved(pafs.LocalFileSystem(), tuple(cast("list[str]", local)))
    return Resolved(fs if fs is not None else pafs.LocalFileSystem(), tuple(paths))
