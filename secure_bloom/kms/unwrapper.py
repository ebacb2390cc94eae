"""Reading side of key tools: key_metadata -> data key (SPEC_NOTES 7).

:class:`KeyUnwrapper` accepts every kind of key_metadata a Parquet reader meets:

* internal key material (JSON with ``"internalStorage":true``);
* a reference into the external sidecar ``_KEY_MATERIAL_FOR_<file>.json``;
* a plain key id (``kf``), looked up in :class:`~secure_bloom.kms.explicit.ExplicitKeys`.

Double-wrapped material is unwrapped in two steps: the KEK through the KMS, then the DEK locally
under the KEK (AAD = raw KEK id). Unwrapped KEKs are cached for ``cache_lifetime_s`` keyed by
(KMS instance, master key id, KEK id), so reading many files written under one KEK costs one
KMS call. One unwrapper serves one set of KMS credentials (parquet-java keys its caches by access
token): give each token its own unwrapper. Single-wrapped DEKs are not cached (as parquet-java).

The KMS instance of a key is, in order: the unwrapper's ``kms_instance_id`` / ``_url`` if given,
the footer key material's, then ``"DEFAULT"``. ``kms`` is either one client used for every
instance or a factory ``factory(kms_instance_id, kms_instance_url) -> KmsClient``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..crypto.gcm import GcmKey
from ..errors import KeyManagementError, MalformedKeyMaterialError, MissingKeyError
from .cache import ExpiringCache
from .client import (DEFAULT_KMS_INSTANCE_ID, DEFAULT_KMS_INSTANCE_URL, KmsClient, KmsClientFactory,
                     is_kms_client)
from .explicit import ExplicitKeys, describe_key_id
from .local_wrap import decode_base64, unwrap_locally
from .material import KeyMaterial, KeyMetadata
from .sidecar import KeyMaterialStore, sidecar_path

__all__ = ["KeyUnwrapper", "FileKeyUnwrapper", "KeyGrant"]

_KmsInstance = tuple[str, str]


@dataclass(frozen=True, repr=False)
class KeyGrant:
    """How to ask again for one data key a caller obtained (:meth:`KeyUnwrapper.recheck`): its
    ``key_metadata`` and, for key tools metadata, the key material it named and the footer's
    (which gives the KMS instance). Only what the file or its sidecar stores (wrapped keys, master
    key ids): never a key. Caches of facts derived with a key keep its grant, so they answer only
    while the key would still be given (a KMS that revokes access revokes the cached answers too).

    Parameters
    ----------
    key_metadata : bytes
        The key's metadata, as the file stores it.
    material : KeyMaterial, optional
        The key material it names (key tools metadata).
    footer_material : KeyMaterial, optional
        The footer's key material (which gives the KMS instance).
    """

    key_metadata: bytes
    material: KeyMaterial | None = None
    footer_material: KeyMaterial | None = None

    def __repr__(self) -> str:
        if self.material is None:
            return f"KeyGrant(key_id={describe_key_id(self.key_metadata)})"
        return f"KeyGrant(master_key_id={self.material.master_key_id!r})"


class KeyUnwrapper:
    """Turns key_metadata into data keys, with a thread-safe, expiring KEK cache shared by every
    file read with the same KMS credentials (parquet-java keeps the same caches per access token).
    :meth:`for_file` gives the per-file :class:`FileKeyUnwrapper`.

    Parameters
    ----------
    kms : KmsClient or KmsClientFactory, optional
        A client, or a factory ``(kms_instance_id, kms_instance_url) -> KmsClient``.
    explicit_keys : ExplicitKeys or mapping, optional
        Keys for key metadata that is a plain key id.
    cache_lifetime_s : float, default 600
        How long unwrapped KEKs are kept (0: every unwrap asks the KMS).
    kms_instance_id, kms_instance_url : str, optional
        Override the instance the key material records.
    """

    def __init__(self, kms: KmsClient | KmsClientFactory | None = None, *,
                 explicit_keys: ExplicitKeys | Mapping[str, bytes] | None = None,
                 cache_lifetime_s: float = 600.0, kms_instance_id: str | None = None,
                 kms_instance_url: str | None = None,
                 _clock: Callable[[], float] = time.monotonic) -> None:
        if kms is not None and not is_kms_client(kms) and not callable(kms):
            raise TypeError("kms must be a KmsClient, a factory (kms_instance_id, kms_instance_url) -> "
                            "KmsClient, or None")
        self._kms = kms
        self._kms_is_client = kms is not None and is_kms_client(kms)
        if explicit_keys is not None and not isinstance(explicit_keys, ExplicitKeys):
            explicit_keys = ExplicitKeys(explicit_keys)
        self._explicit = explicit_keys
        self._kms_instance_id = kms_instance_id
        self._kms_instance_url = kms_instance_url
        # A KEK with its AES-GCM context (made once: making one costs more than unwrapping a DEK).
        self._keks: ExpiringCache[tuple[str, str, str, str], _Kek] = ExpiringCache(cache_lifetime_s, _clock)
        self._clients: ExpiringCache[_KmsInstance, KmsClient] = ExpiringCache(cache_lifetime_s, _clock)

    # --- public ---------------------------------------------------------------------------

    def unwrap(self, key_metadata: bytes, *, store: KeyMaterialStore | None = None,
               footer_material: KeyMaterial | None = None) -> bytes:
        """The data key for one key_metadata.

        ``store`` is the file's external key material (needed for a ``keyReference``);
        ``footer_material`` supplies the KMS instance for column material (optional).

        Parameters
        ----------
        key_metadata : bytes
            A chunk's or the footer's key metadata.
        store : KeyMaterialStore, optional
            The file's external key material.
        footer_material : KeyMaterial, optional
            Supplies the KMS instance for column material.

        Returns
        -------
        bytes
            The data key.

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            No source for the key (no KMS, an unknown explicit id, no sidecar).
        secure_bloom.errors.KeyManagementError
            The KMS refused or failed (``KeyAccessDeniedError``, ``KmsUnavailableError``...).
        secure_bloom.errors.MalformedKeyMaterialError
            The JSON does not parse, or a field is missing or of the wrong type (named).
        """
        return self._unwrap(bytes(key_metadata), lambda: store, footer_material)[0]

    def unwrap_material(self, material: KeyMaterial, *,
                        footer_material: KeyMaterial | None = None) -> bytes:
        """The data key wrapped in ``material``: unwrapped by the KMS (single wrapping), or
        locally under its KEK (double wrapping; the KEK from the cache, or from the KMS on a miss).

        Parameters
        ----------
        material : KeyMaterial
            The key material (from ``key_metadata`` or the sidecar).
        footer_material : KeyMaterial, optional
            The footer's material, which names the KMS instance for column material.

        Returns
        -------
        bytes
            The data key (16, 24 or 32 bytes).

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            This unwrapper has no KMS.
        secure_bloom.errors.KeyManagementError
            The KMS refused or failed (``KeyAccessDeniedError``, ``KmsUnavailableError``...), or
            its ``unwrap_key`` returned something other than bytes.
        secure_bloom.errors.MalformedKeyMaterialError
            The KMS returned a key of the wrong length, or the KEK id is not Base64.
        secure_bloom.errors.AuthenticationError
            The wrapped DEK does not authenticate under its KEK.
        """
        instance = self._instance(material if material.is_footer_key else footer_material)
        client = self._client(instance)
        master = material.master_key_id
        if not material.double_wrapping:
            return _checked_key(client.unwrap_key(material.wrapped_dek, master), master)
        kek = self._kek(instance, client, material)
        return unwrap_locally(material.wrapped_dek, kek.context, kek.kek_id, wrapped_under=kek.name)

    def _kek(self, instance: _KmsInstance, client: KmsClient, material: KeyMaterial) -> _Kek:
        """The KEK of double-wrapped ``material``, through the KEK cache (the KMS asked on a miss)."""
        assert material.kek_id is not None and material.wrapped_kek is not None
        master, kek_id_text, wrapped_kek = material.master_key_id, material.kek_id, material.wrapped_kek

        def fetch() -> _Kek:  # the id decoded (checked) before the KMS is asked, as on every miss
            kek_id = decode_base64(kek_id_text, f"keyEncryptionKeyID of master key {master!r}")
            kek = _checked_key(client.unwrap_key(wrapped_kek, master), master)
            return _Kek(kek, GcmKey(kek), kek_id, f"KEK {kek_id_text} of master key {master!r}")

        # The KEK id is part of the cache key: a hit's decoded id is this material's
        return self._keks.get_or_create((instance[0], instance[1], master, kek_id_text), fetch)

    def recheck(self, grant: KeyGrant) -> None:
        """Raise as :meth:`unwrap` would now for the key ``grant`` names (the KMS refusing, the
        key gone), else return: the same KEK cache serves it, so with ``cache_lifetime_s=0``
        each recheck asks the KMS. The key itself is dropped.

        Parameters
        ----------
        grant : KeyGrant
            What :meth:`FileKeyUnwrapper.grant` returned for a key given earlier.

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            A plain key id no explicit key is given for, or key material and no KMS.
        secure_bloom.errors.KeyManagementError
            The KMS refuses or fails now, as :meth:`unwrap_material` raises.
        """
        if grant.material is None:
            if self._explicit is None:
                raise MissingKeyError(f"key_metadata {describe_key_id(grant.key_metadata)} is a plain key id and no "
                                      "explicit keys were given")
            self._explicit.key_for(grant.key_metadata)
            return
        self.unwrap_material(grant.material, footer_material=grant.footer_material)

    def rechecker(self) -> Callable[[KeyGrant], None]:
        """:meth:`recheck` for one lookup over many files, each key asked for once: give it to
        the lookup and drop it with the lookup. A double-wrapped data key is rechecked by asking
        for its key encryption key (once per KMS instance, master key and KEK id, through the KEK
        cache: with ``cache_lifetime_s=0`` one KMS call per KEK per lookup): the data key was
        unwrapped under that KEK when the grant was made, and the KEK id names one KEK, so asking
        the KMS for the KEK is what decides whether the caller still gets the data key. Any
        other grant is rechecked once as :meth:`recheck` does. A refusal is not remembered:
        every recheck of it asks again (and raises again).

        Returns
        -------
        callable
            ``recheck(grant) -> None``, raising as :meth:`recheck` does; it remembers the grants
            and KEKs it has rechecked, for the one lookup it is given to.

        Raises
        ------
        None
            Nothing until it is called.
        """
        asked: dict[int, KeyGrant] = {}  # id -> the grant itself (held: its id names no other object)
        keks: set[tuple[str, str, str, str]] = set()

        def recheck(grant: KeyGrant) -> None:
            if asked.get(id(grant)) is grant:
                return
            material = grant.material
            if (material is not None and material.double_wrapping and material.kek_id is not None
                    and material.wrapped_kek is not None):
                instance = self._instance(material if material.is_footer_key else grant.footer_material)
                kek = (instance[0], instance[1], material.master_key_id, material.kek_id)
                if kek not in keks:
                    if self._keks.get(kek) is None:  # a fresh KEK answers without the KMS client
                        self._kek(instance, self._client(instance), material)
                    keks.add(kek)
            else:
                self.recheck(grant)
            asked[id(grant)] = grant

        return recheck

    def for_file(self, data_file: str | os.PathLike[str] | None = None, *,
                 load_sidecar: Callable[[], KeyMaterialStore] | None = None) -> FileKeyUnwrapper:
        """A per-file ``key_metadata -> key`` callable (parquet-java's DecryptionKeyRetriever).

        It loads the sidecar of ``data_file`` the first time a key reference needs it (with
        ``load_sidecar`` when given, e.g. from an object store, else from the local file
        :func:`~secure_bloom.kms.sidecar_path` names), and remembers the footer's KMS instance
        for the file's column keys.

        Parameters
        ----------
        data_file : str or os.PathLike, optional
            The Parquet file.
        load_sidecar : callable, optional
            Loads its sidecar instead.

        Returns
        -------
        FileKeyUnwrapper
            The per-file callable.

        Raises
        ------
        None
            Nothing until a key is asked for.
        """
        return FileKeyUnwrapper(self, data_file, load_sidecar)

    def clear_caches(self) -> None:
        """Forget cached KEKs and KMS clients (e.g. after revoking access).

        Raises
        ------
        None
            Nothing of its own.
        """
        self._keks.clear()
        self._clients.clear()

    # --- internals --------------------------------------------------------------------------

    def _unwrap(self, key_metadata: bytes, store: Callable[[], KeyMaterialStore | None],
                footer_material: KeyMaterial | None) -> tuple[bytes, KeyGrant]:
        """(key, what rechecks it: the material it came from, None for an explicit key)."""
        if not KeyMetadata.looks_like_key_tools(key_metadata):
            if self._explicit is None:
                raise MissingKeyError(
                    f"key_metadata {describe_key_id(key_metadata)} is a plain key id and no explicit "
                    "keys were given")
            return self._explicit.key_for(key_metadata), KeyGrant(key_metadata)
        metadata = KeyMetadata.from_bytes(key_metadata)
        if metadata.material is not None:
            material = metadata.material
        else:
            assert metadata.key_reference is not None
            sidecar = store()
            if sidecar is None:
                raise MissingKeyError(
                    f"key_metadata refers to external key material {metadata.key_reference!r}; "
                    "pass the file's KeyMaterialStore (or use key_retriever(data_file))")
            material = sidecar.get(metadata.key_reference)
            footer_material = footer_material or sidecar.footer_material
        key = self.unwrap_material(material, footer_material=footer_material)
        return key, KeyGrant(key_metadata, material, None if material.is_footer_key else footer_material)

    def _instance(self, footer_material: KeyMaterial | None) -> _KmsInstance:
        from_file_id = footer_material.kms_instance_id if footer_material is not None else None
        from_file_url = footer_material.kms_instance_url if footer_material is not None else None
        return (self._kms_instance_id or from_file_id or DEFAULT_KMS_INSTANCE_ID,
                self._kms_instance_url or from_file_url or DEFAULT_KMS_INSTANCE_URL)

    def _client(self, instance: _KmsInstance) -> KmsClient:
        kms = self._kms
        if kms is None:
            raise MissingKeyError("key material needs a KMS and this unwrapper has none")
        if self._kms_is_client:
            return kms  # type: ignore[return-value]
        factory = kms
        return self._clients.get_or_create(instance, lambda: factory(*instance))  # type: ignore[operator]

    def __repr__(self) -> str:
        return (f"KeyUnwrapper(kms={self._kms!r}, explicit_keys={self._explicit!r}, "
                f"cache_lifetime_s={self._keks.lifetime_s})")


def _checked_key(key: object, master_key_id: str) -> bytes:
    if not isinstance(key, (bytes, bytearray)):
        raise KeyManagementError(
            f"the KMS returned {type(key).__name__} unwrapping under master key {master_key_id!r}; "
            "unwrap_key must return bytes")
    if len(key) not in (16, 24, 32):
        raise MalformedKeyMaterialError(
            f"the KMS returned a {len(key)}-byte key under master key {master_key_id!r}; "
            "AES keys are 16, 24 or 32 bytes")
    return bytes(key)


@dataclass(frozen=True, repr=False)
class _Kek:
    """A cached KEK: its bytes, its AES-GCM context (made once: making one costs more than
    unwrapping a DEK), its decoded id (the AAD of the DEKs it wraps) and its name in messages."""

    key: bytes
    context: GcmKey
    kek_id: bytes
    name: str


class FileKeyUnwrapper:
    """``unwrapper(key_metadata) -> key`` for the keys of one Parquet file, as parquet-java's
    FileKeyUnwrapper (its DecryptionKeyRetriever). Thread-safe.

    Parameters
    ----------
    unwrapper : KeyUnwrapper
        The shared unwrapper (its KEK cache).
    data_file : str, os.PathLike or None
        The Parquet file (its sidecar holds external key material).
    load_sidecar : callable, optional
        Loads the sidecar instead (an object store, material not yet on disk).
    """

    def __init__(self, unwrapper: KeyUnwrapper, data_file: str | os.PathLike[str] | None,
                 load_sidecar: Callable[[], KeyMaterialStore] | None = None) -> None:
        self._unwrapper = unwrapper
        self.data_file = None if data_file is None else os.fspath(data_file)
        self._load_sidecar = load_sidecar
        self._lock = threading.Lock()
        self._store: KeyMaterialStore | None = None
        self._footer_material: KeyMaterial | None = None
        self._grants: dict[bytes, KeyGrant] = {}

    def store(self) -> KeyMaterialStore | None:
        """The file's sidecar, loaded on first use (None without a data file).

        Returns
        -------
        KeyMaterialStore or None
            The external key material of the file, loaded once (by ``load_sidecar`` when given,
            else from the local sidecar beside ``data_file``).

        Raises
        ------
        secure_bloom.errors.KeyNotFoundError
            The local sidecar does not exist.
        secure_bloom.errors.MalformedKeyMaterialError
            The sidecar is not valid key material.
        Exception
            Whatever ``load_sidecar`` raises (e.g. ``StorageUnavailableError``); the next call
            tries again.
        """
        with self._lock:
            if self._store is None and self._load_sidecar is not None:
                self._store = self._load_sidecar()
            elif self._store is None and self.data_file is not None:
                self._store = KeyMaterialStore.load(sidecar_path(self.data_file))
            return self._store

    def __call__(self, key_metadata: bytes) -> bytes:
        key, grant = self._unwrapper._unwrap(bytes(key_metadata), self.store, self._footer_material)
        material = grant.material
        with self._lock:
            if material is not None and material.is_footer_key:
                self._footer_material = material
            self._grants[grant.key_metadata] = grant
        return key

    def grant(self, key_metadata: bytes) -> KeyGrant | None:
        """How to recheck the key of ``key_metadata`` this unwrapper gave (None: not given).

        Parameters
        ----------
        key_metadata : bytes
            A key metadata this unwrapper was called with.

        Returns
        -------
        KeyGrant or None
            Its grant (for :meth:`KeyUnwrapper.recheck`), or None when no key was given for it.

        Raises
        ------
        None
            A lookup only.
        """

        return self._grants.get(bytes(key_metadata))

    def __repr__(self) -> str:
        return f"FileKeyUnwrapper(data_file={self.data_file!r})"
