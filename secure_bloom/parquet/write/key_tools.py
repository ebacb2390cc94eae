"""The key tools of encrypted writes, shared by the writes of one key configuration for its cache
lifetime, as parquet-java's key tools share them (SPEC_NOTES 7).

parquet-java keeps one KEK per master key and access token for ``cache lifetime`` (default
600 s) across every file a JVM writes, so 1000 files cost one KMS wrap per master key. pyarrow's
``CryptoFactory`` keeps KEKs the same way, but only inside one ``CryptoFactory`` object. A write
needs two tools: the ``CryptoFactory`` that makes the file's keys (its KEK caches), and the
:class:`~secure_bloom.parquet.file.keys.KeyAccess` that reads the file back for verification
(its cache of unwrapped KEKs). Made per ``write_table`` call, every file had KEKs of its own and
was verified with KEKs unwrapped anew: one KMS wrap per master key and one unwrap per key the
verification needs, per file.

:class:`WriteKeyTools` gives every write with the same ``kms`` object, the same KMS connection
(instance id and URL, access token, custom configuration) and the same ``cache_lifetime`` the
same pair of tools (:class:`KeyTools`) for ``cache_lifetime`` from the moment they were made;
the first write after that makes new ones, so new KEKs are wrapped by the KMS and a revoked
master key or token fails that write. A cached KEK is therefore never used longer than the
cache lifetime after it was made, whatever pyarrow's own expiry does. ``cache_lifetime`` 0:
nothing is shared, each write has tools of its own. Single wrapping
(``double_wrapping=False``) has no KEKs: every data key is still wrapped by the KMS, and read
back with it, per file.

At most :data:`MAX_SHARED` configurations are kept (the oldest is dropped first), so a caller who
makes a new KMS client per write keeps no more than that many clients and their KEKs in memory.
A write that fails or is aborted drops the tools it used (:meth:`WriteKeyTools.forget`): the
next write makes new KEKs, so a wrongly wrapped KEK is never passed on. :func:`clear_key_caches`
drops them all at once (e.g. after revoking a master key, not to wait
for the lifetime). Nothing is written anywhere: the KEKs live in memory only, wrapped keys go
into the files' key material as before.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet.encryption as pe

from ...kms.client import is_kms_client
from ...kms.pyarrow_adapter import pyarrow_kms_client_factory
from ..file.keys import KeyAccess

__all__ = ["KeyTools", "WriteKeyTools", "MAX_SHARED", "clear_key_caches", "lifetime_s"]

#: Key configurations whose tools are kept at once (the oldest is dropped first).
MAX_SHARED = 16


@dataclass(frozen=True)
class KeyTools:
    """The tools of one write: pyarrow's ``CryptoFactory`` (makes the file's keys; its KEK cache)
    and the :class:`KeyAccess` that reads the file back (its cache of unwrapped KEKs).

    Parameters
    ----------
    crypto : pyarrow.parquet.encryption.CryptoFactory
        Makes the file's encryption (and, to check it, decryption) properties.
    keys : KeyAccess
        Reads the written file back.
    created : float
        When they were made (``time.monotonic()``): shared until ``created + lifetime``.
    """

    crypto: Any = field(repr=False)
    keys: KeyAccess = field(repr=False)
    created: float

    def __repr__(self) -> str:
        return f"KeyTools(keys={self.keys!r}, created={self.created:.3f})"


def lifetime_s(encryption: pe.EncryptionConfiguration) -> float:
    """``encryption.cache_lifetime`` in seconds (pyarrow's default: 600).

    Parameters
    ----------
    encryption : pyarrow.parquet.encryption.EncryptionConfiguration
        The write's encryption options.

    Returns
    -------
    float
        Seconds, 0 or more.

    Raises
    ------
    None
        Nothing of its own.
    """
    return max(float(encryption.cache_lifetime.total_seconds()), 0.0)


def _connection_digest(config: pe.KmsConnectionConfig) -> str:
    """A digest of what tells one KMS connection from another: the token is in it, but only
    hashed (nothing kept here shows it)."""
    text = json.dumps([config.kms_instance_id, config.kms_instance_url, config.key_access_token,
                       sorted((config.custom_kms_conf or {}).items())])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _key_access(kms: Any, config: pe.KmsConnectionConfig, cache_lifetime_s: float) -> KeyAccess:
    """Our key access for the files pyarrow writes with ``kms``: the client itself, or the
    pyarrow factory called with ``config`` and the instance named in the key material."""
    if is_kms_client(kms):
        return KeyAccess(kms=kms, cache_lifetime_s=cache_lifetime_s)

    def client(instance_id: str, instance_url: str) -> Any:
        return kms(pe.KmsConnectionConfig(
            kms_instance_id=instance_id, kms_instance_url=instance_url,
            key_access_token=config.key_access_token, custom_kms_conf=dict(config.custom_kms_conf or {})))

    return KeyAccess(kms=client, cache_lifetime_s=cache_lifetime_s)


class _Shared:
    """The tools of the configurations written lately, each served while it is younger than its
    lifetime; thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        # (id of the kms object, connection digest, lifetime) -> (the kms object, tools)
        self._entries: OrderedDict[tuple[int, str, float], tuple[Any, KeyTools]] = OrderedDict()

    def get(self, owner: Any, digest: str, lifetime: float, make: Callable[[float], KeyTools]) -> KeyTools:
        with self._lock:
            now = self._clock()
            for key in [k for k, (_, tools) in self._entries.items() if now - tools.created >= k[2]]:
                del self._entries[key]
            key = (id(owner), digest, lifetime)
            entry = self._entries.get(key)
            if entry is not None and entry[0] is owner:  # held here, so its id is not another's
                return entry[1]
            tools = make(now)  # no KMS call: the KMS is asked when the tools are used
            self._entries[key] = (owner, tools)
            while len(self._entries) > MAX_SHARED:
                self._entries.popitem(last=False)
            return tools

    def forget(self, tools: KeyTools) -> None:
        with self._lock:
            for key in [k for k, (_, shared) in self._entries.items() if shared is tools]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_SHARED = _Shared()


def clear_key_caches() -> None:
    """Forget the KEKs (and KMS clients) every earlier write keeps for the next ones: the next
    write of each key configuration wraps new KEKs with the KMS (pyarrow's
    ``CryptoFactory.remove_cache_entries_for_all_tokens``, for the tools ``write_table`` shares).

    Raises
    ------
    None
        Nothing of its own.
    """
    _SHARED.clear()


class WriteKeyTools:
    """Where the writes of one setup get their :class:`KeyTools`: shared with every write of the
    same ``kms`` object, KMS connection and cache lifetime while they are younger than it.

    Parameters
    ----------
    kms : KmsClient, callable or KeyAccess
        What the write was given as ``kms=`` (its identity tells configurations apart).
    config : pyarrow.parquet.encryption.KmsConnectionConfig
        The KMS connection.
    lifetime : float
        Seconds the tools are shared (``encryption.cache_lifetime``; 0: never).

    Raises
    ------
    TypeError
        ``kms`` is neither a KMS client, a callable nor a KeyAccess with a kms.
    """

    def __init__(self, kms: Any, config: pe.KmsConnectionConfig, lifetime: float) -> None:
        if isinstance(kms, KeyAccess):  # what the read functions take as keys=: the same objects on both sides
            if kms.kms is None:
                raise TypeError("kms=KeyAccess(...) has no kms: writing wraps new data keys, which needs a KMS "
                                "client or pyarrow KmsClient factory (KeyAccess(kms=...))")
        elif not is_kms_client(kms) and not callable(kms):
            raise TypeError("kms must be a KMS client (wrap_key, unwrap_key), a pyarrow KmsClient factory "
                            "(a callable taking a KmsConnectionConfig) or a KeyAccess with a kms")
        self._kms = kms
        self._config = config
        self._lifetime = lifetime

    def _make(self, now: float) -> KeyTools:
        if isinstance(self._kms, KeyAccess):
            keys, client = self._kms, self._kms.kms
        else:
            keys = _key_access(self._kms, self._config, self._lifetime or KeyAccess.cache_lifetime_s)
            client = self._kms
        return KeyTools(crypto=pe.CryptoFactory(pyarrow_kms_client_factory(client)), keys=keys, created=now)

    def current(self) -> KeyTools:
        """The tools for the next file: the shared ones while younger than the lifetime, else new.

        Returns
        -------
        KeyTools
            The CryptoFactory and KeyAccess of the file.

        Raises
        ------
        None
            Nothing of its own.
        """
        if self._lifetime <= 0:
            return self._make(time.monotonic())
        return _SHARED.get(self._kms, _connection_digest(self._config), self._lifetime, self._make)

    def forget(self, tools: KeyTools) -> None:
        """Share ``tools`` no more (a write that used them failed): the next write makes new KEKs,
        so a KEK the KMS wrapped wrongly, or any state of a failed write, is not passed on.

        Parameters
        ----------
        tools : KeyTools
            What :meth:`current` gave the failed write.

        Raises
        ------
        None
            Nothing of its own.
        """
        _SHARED.forget(tools)

    def __repr__(self) -> str:
        return f"WriteKeyTools(kms={type(self._kms).__name__}, lifetime={self._lifetime})"
