"""pyarrow's KMS path for one scan, with the scan's keys unwrapped before it starts.

pyarrow's key tools unwrap a file's keys when its reader opens the footer (the footer key) and
when the metadata of an encrypted column is read (that column's key), on whichever thread does
it: Arrow's I/O threads during a scan. A key-encryption key missing from pyarrow's cache is
fetched inside the cache's lookup, which holds pyarrow's key mutex while it calls our KMS client:
Python, so it takes the GIL. A caller that holds the GIL while it waits for that mutex (DuckDB's
reader calls ``Scanner.to_reader()``, which keeps the GIL; so does pyarrow's own
``dataset(...).scanner().to_reader()``) and an Arrow thread holding the mutex while it waits for
the GIL wait for each other for good (issue 28, item 2).

So no scan we hand out calls into Python under that mutex. Each scan gets its own
``CryptoFactory`` (:class:`ScanKeys`: its own pyarrow caches), and before the dataset is handed
to anyone, :meth:`ScanKeys.unwrap_before_scan` opens every surviving file's footer through it
and reads the metadata of each encrypted column the scan reads, on the calling thread: every
key the scan needs is then in pyarrow's caches, which answer each lookup of the scan without a
call into Python. The KMS client pyarrow calls answers from a cache kept per
:class:`~secure_bloom.parquet.KeyAccess` (wrapped key and master key id, for
``cache_lifetime_s``: :func:`answers`), so a scan asks the KMS no more often than one sharing a
factory did: a warm lookup not at all.

Limits, stated: pyarrow's caches of a scan's factory live ``max(cache_lifetime_s,``
:data:`SCAN_KEYS_S` ``)`` from the unwrapping (a scan running longer may fetch again, from
Arrow's threads); keys wrapped once by the master key (``double_wrapping=False``) are not cached
by pyarrow at all, so it calls the KMS client at each use, but outside its key mutex (no such
deadlock). The unwrapping opens each surviving encrypted file's footer once more: from the tail
pruning read when it is given (``tail``: an object store's speculative read, which holds the
footer; no request), else through the filesystem (local: a ``pread``; an object store: a HEAD
and the footer's reads).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from ...kms.cache import ExpiringCache
from ...kms.client import is_kms_client
from ...kms.pyarrow_adapter import pyarrow_kms_client_factory, takes_connection_config
from ..file.keys import KeyAccess
from ..file.read_counting import CountingFileSystem, ReadCounter
from ..file.tail import FileTail

__all__ = ["ScanKeys", "SCAN_KEYS_S", "answers", "reads_leaf", "scan_keys_for"]

#: The shortest life of the keys pyarrow caches for one scan (seconds from its unwrapping).
SCAN_KEYS_S = 600.0

_lock = threading.Lock()
#: id(KeyAccess) -> the KMS answers kept for it (dropped with the KeyAccess).
_answers: dict[int, ExpiringCache[tuple[str, ...], bytes]] = {}
#: id(KeyAccess) -> the ScanKeys its scans share (scan_keys_for), under its own lock.
_shared: dict[int, ScanKeys] = {}
_shared_lock = threading.Lock()


def answers(keys: KeyAccess) -> ExpiringCache[tuple[str, ...], bytes]:
    """The KMS answers pyarrow's key tools got for ``keys`` (unwrapped keys by KMS instance,
    access token digest, master key id and wrapped key), kept ``keys.cache_lifetime_s`` and
    dropped with ``keys``.

    Parameters
    ----------
    keys : KeyAccess
        The caller's keys.

    Returns
    -------
    ExpiringCache
        One per KeyAccess, made on first use.

    Raises
    ------
    None
        A lookup in memory.
    """
    with _lock:
        found = _answers.get(id(keys))
        if found is None:
            found = _answers[id(keys)] = ExpiringCache(keys.cache_lifetime_s)
            weakref.finalize(keys, _answers.pop, id(keys), None)
        return found


class _AnsweredClient(pe.KmsClient):  # type: ignore[misc]
    """pyarrow's KMS client: unwraps through ``client`` (a PyArrowKmsClient), answered from
    :func:`answers` within the key access's lifetime. No key in its repr."""

    def __init__(self, client: Any, cache: ExpiringCache[tuple[str, ...], bytes], scope: tuple[str, ...]) -> None:
        super().__init__()
        self._client = client
        self._cache = cache
        self._scope = scope

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        return str(self._client.wrap_key(key_bytes, master_key_identifier))

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        return self._cache.get_or_create((*self._scope, master_key_identifier, wrapped_key),
                                         lambda: bytes(self._client.unwrap_key(wrapped_key, master_key_identifier)))

    def __repr__(self) -> str:
        return f"_AnsweredClient({self._client!r})"


def _client_factory(keys: KeyAccess) -> Any:
    """``f(KmsConnectionConfig) -> pyarrow KmsClient`` for ``keys.kms`` (a client, pyarrow's
    factory shape, or ours ``f(kms_instance_id, kms_instance_url)``), answered from :func:`answers`."""
    kms = keys.kms
    if is_kms_client(kms) or takes_connection_config(kms):
        inner = pyarrow_kms_client_factory(kms)
    else:
        inner = pyarrow_kms_client_factory(lambda config: kms(config.kms_instance_id, config.kms_instance_url))
    cache = answers(keys)

    def make(config: Any) -> _AnsweredClient:
        token = hashlib.sha256(str(config.key_access_token).encode()).hexdigest()  # the token itself is not kept
        return _AnsweredClient(inner(config), cache, (str(config.kms_instance_id), str(config.kms_instance_url), token))

    return make


def scan_keys_for(keys: KeyAccess) -> ScanKeys:
    """The :class:`ScanKeys` a scan with ``keys`` uses: with ``cache_lifetime_s`` of at least
    :data:`SCAN_KEYS_S`, one shared by the scans of ``keys`` (pyarrow's caches then keep what
    earlier scans unwrapped: a warm lookup reads no footer again), replaced once it is half that
    lifetime old, so a scan starting on it has at least half a lifetime before pyarrow's cache of
    it expires; with a shorter lifetime, one of its own, living :data:`SCAN_KEYS_S`.

    Parameters
    ----------
    keys : KeyAccess
        Keys with a KMS client.

    Returns
    -------
    ScanKeys

    Raises
    ------
    ValueError
        ``keys.kms`` is None (:class:`ScanKeys`).
    """
    lifetime = keys.cache_lifetime_s
    if lifetime < SCAN_KEYS_S:
        return ScanKeys(keys)
    with _shared_lock:
        current = _shared.get(id(keys))
        if current is None or time.monotonic() - current.created > lifetime / 2:
            if current is None:
                weakref.finalize(keys, _shared.pop, id(keys), None)
            current = _shared[id(keys)] = ScanKeys(keys, lifetime)
        return current


class ScanKeys:
    """pyarrow's Parquet format decrypting through ``keys.kms`` with a ``CryptoFactory`` of its
    own (``format``), whose caches :meth:`unwrap_before_scan` fills before a scan. Its KMS
    client answers from :func:`answers` (no key in its repr).

    Parameters
    ----------
    keys : KeyAccess
        Keys with a KMS client (``keys.kms``).
    lifetime_s : float, optional
        How long pyarrow's caches of it keep keys (default ``max(keys.cache_lifetime_s,``
        :data:`SCAN_KEYS_S` ``)``).

    Raises
    ------
    ValueError
        ``keys.kms`` is None.
    """

    def __init__(self, keys: KeyAccess, lifetime_s: float | None = None) -> None:
        if keys.kms is None:
            raise ValueError("ScanKeys needs a KeyAccess with a KMS client (keys.kms)")
        life = max(keys.cache_lifetime_s, SCAN_KEYS_S) if lifetime_s is None else lifetime_s
        self.created = time.monotonic()
        #: One unwrapping at a time: two threads opening footers through one factory could each
        #: hold what the other waits for (the GIL, pyarrow's key mutex).
        self._unwrapping = threading.Lock()
        #: (path, version) -> the columns whose keys are in pyarrow's caches (None: all).
        self._unwrapped: dict[tuple[str, Any], frozenset[str] | None] = {}
        self.factory = pe.CryptoFactory(_client_factory(keys))
        self.connection = pe.KmsConnectionConfig()
        self.decryption = pe.DecryptionConfiguration(cache_lifetime=dt.timedelta(seconds=life))
        config = ds.ParquetDecryptionConfig(self.factory, self.connection, self.decryption)
        self.format = ds.ParquetFileFormat(
            default_fragment_scan_options=ds.ParquetFragmentScanOptions(decryption_config=config))

    def unwrap_before_scan(self, path: str, filesystem: Any, columns: Sequence[str] | None,
                           version: Any = None, tail: FileTail | None = None) -> tuple[int, int]:
        """Put the keys a scan of ``path`` (on ``filesystem``) reading ``columns`` (None: all;
        top-level names or dotted paths) needs into pyarrow's caches of this factory: its footer
        is opened and the metadata of each encrypted column read is decrypted, on this thread.
        A file this fails for (plaintext, a key refused) is left to the scan, which reports it.

        Parameters
        ----------
        path : str
            The file, on ``filesystem``.
        filesystem : pyarrow.fs.FileSystem
            Its filesystem.
        columns : sequence of str or None
            What the scan reads.
        version : optional
            The file version's identity (:mod:`~secure_bloom.parquet.file.identity`): a version
            whose keys for these columns this factory holds already is not read again (None:
            always read).
        tail : FileTail, optional
            The tail pruning read of that version (:meth:`~..file.tail.FileTail.held`): pyarrow's
            reads of the footer inside it are answered from memory (no request); reads outside
            it open the file.

        Returns
        -------
        (int, int)
            The bytes and requests this read of the footer took (for the scan's report; (0, 0)
            when nothing was read or it failed).

        Raises
        ------
        None
            Every failure is left to the scan, which raises it where pyarrow meets it.
        """
        wanted = None if columns is None else frozenset(columns)
        with self._unwrapping:
            done = self._unwrapped.get((path, version), frozenset()) if version is not None else frozenset()
            if version is not None and (done is None or (wanted is not None and wanted <= done)):
                return 0, 0
            read = self._unwrap(path, filesystem, columns, tail)
            if version is not None and read is not None:
                self._unwrapped[(path, version)] = None if wanted is None or done is None else done | wanted
        return read if read is not None else (0, 0)

    def _unwrap(self, path: str, filesystem: Any, columns: Sequence[str] | None,
                tail: FileTail | None) -> tuple[int, int] | None:
        """(bytes, requests) of opening ``path``'s footer and its columns' metadata; None when
        that failed (left to the scan)."""
        counter = ReadCounter()
        try:
            props = self.factory.file_decryption_properties(self.connection, self.decryption, path, filesystem)
            handler = CountingFileSystem(filesystem, counter)
            held = tail.held() if tail is not None else None
            with (handler.open_held(path, tail.file_size, held) if tail is not None and held is not None
                  else handler.open_input_file(path)) as raw:
                metadata = pq.ParquetFile(raw, decryption_properties=props).metadata
                group = metadata.row_group(0) if metadata.num_row_groups else None
                for j in range(metadata.num_columns if group is not None else 0):
                    if group is not None and reads_leaf(metadata.schema.column(j).path.split("."), columns):
                        try:
                            group.column(j)  # decrypts its ColumnMetaData: the column's key
                        except Exception:  # noqa: BLE001 - a key refused: the scan reports it
                            continue
        except Exception:  # noqa: BLE001 - not encrypted, or not openable: the scan reports it
            return None
        return counter.bytes, counter.requests

    def __repr__(self) -> str:
        return "ScanKeys()"


def reads_leaf(path_in_schema: Sequence[str], columns: Sequence[str] | None) -> bool:
    """Whether reading ``columns`` (top-level names or dotted paths; None: all) reads the leaf
    at ``path_in_schema``.

    Parameters
    ----------
    path_in_schema : sequence of str
        The leaf's path (top-level name first).
    columns : sequence of str or None
        What a scan reads.

    Returns
    -------
    bool

    Raises
    ------
    None
        Compares names.
    """
    if columns is None:
        return True
    dotted = ".".join(path_in_schema)
    return any(c == path_in_schema[0] or c == dotted or dotted.startswith(c + ".") for c in columns)
