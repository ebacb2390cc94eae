"""Writing side of key tools: fresh data keys, wrapped for a file's key_metadata (SPEC_NOTES 7).

For every footer or column key :class:`FileKeyWrapper` draws a random DEK (128, 192 or 256
bits, ``os.urandom``) and wraps it:

* single wrapping: ``wrappedDEK = kms.wrap_key(DEK, masterKeyID)``, one KMS call per key;
* double wrapping (default, as parquet-java): per master key one random 128-bit KEK with a
  random 16-byte KEK id, ``wrappedKEK = kms.wrap_key(KEK, masterKeyID)``, and
  ``wrappedDEK = Base64(nonce|AES-GCM(DEK)|tag)`` under the KEK with AAD = the raw KEK id. The
  KEK is reused for ``kek_lifetime_s`` (all keys this wrapper wraps under one master key
  meanwhile, in every file it writes), so a KMS is called once per master key per lifetime and
  wrapper: files share KEKs only when they share the wrapper.

The key_metadata is the material itself (internal storage) or, given a
:class:`~secure_bloom.kms.sidecar.KeyMaterialStore`, a reference into it (external storage).
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..crypto.gcm import check_key
from ..errors import KeyManagementError
from .cache import ExpiringCache
from .client import DEFAULT_KMS_INSTANCE_ID, DEFAULT_KMS_INSTANCE_URL, KmsClient, is_kms_client
from .local_wrap import wrap_locally
from .material import KeyMaterial, KeyMetadata
from .sidecar import KeyMaterialStore

__all__ = ["FileKeyWrapper", "DataKey", "KEK_LENGTH", "KEK_ID_LENGTH"]

KEK_LENGTH = 16
KEK_ID_LENGTH = 16
_DEK_LENGTHS_BITS = (128, 192, 256)


@dataclass(frozen=True)
class DataKey:
    """A data key and the key_metadata that lets a reader recover it.

    Unpacks as ``dek, key_metadata = wrapper.column_key(...)``. ``repr`` shows no key bytes.

    Parameters
    ----------
    key : bytes
        The data key.
    key_metadata : bytes
        What the file stores for it.
    master_key_id : str
        The master key it is wrapped under.
    """

    key: bytes = field(repr=False)
    key_metadata: bytes
    master_key_id: str

    def __iter__(self) -> Iterator[bytes]:
        yield self.key
        yield self.key_metadata

    def __repr__(self) -> str:
        return (f"DataKey(master_key_id={self.master_key_id!r}, bits={8 * len(self.key)}, "
                f"key_metadata=<{len(self.key_metadata)} bytes>)")


@dataclass(frozen=True)
class _Kek:
    key: bytes = field(repr=False)
    kek_id: bytes
    wrapped_kek: str


class FileKeyWrapper:
    """Makes and wraps data keys for footers and columns.

    One wrapper may serve many files; it is thread-safe. Data keys come from ``os.urandom``.

    Parameters
    ----------
    kms : KmsClient
        The client for the KMS instance ``kms_instance_id`` / ``kms_instance_url``.
    kms_instance_id, kms_instance_url : str
        What footer key material records (parquet-java's defaults).
    double_wrapping : bool, default True
        Wrap data keys under a KEK that the KMS wraps (one KMS call per KEK, not per key).
    kek_lifetime_s : float, default 600
        How long one KEK per master key is reused.
    dek_length_bits : int, default 128
        Data key length: 128, 192 or 256.

    Raises
    ------
    ValueError
        ``dek_length_bits`` is not 128, 192 or 256.
    """

    def __init__(self, kms: KmsClient, *, kms_instance_id: str = DEFAULT_KMS_INSTANCE_ID,
                 kms_instance_url: str = DEFAULT_KMS_INSTANCE_URL, double_wrapping: bool = True,
                 kek_lifetime_s: float = 600.0, dek_length_bits: int = 128,
                 _clock: Callable[[], float] = time.monotonic) -> None:
        if not is_kms_client(kms):
            raise TypeError("kms must have wrap_key() and unwrap_key() (a KmsClient)")
        if dek_length_bits not in _DEK_LENGTHS_BITS:
            raise ValueError(f"dek_length_bits must be 128, 192 or 256, got {dek_length_bits}")
        self._kms = kms
        self.kms_instance_id = kms_instance_id
        self.kms_instance_url = kms_instance_url
        self.double_wrapping = double_wrapping
        self.dek_length_bits = dek_length_bits
        self._keks: ExpiringCache[str, _Kek] = ExpiringCache(kek_lifetime_s, _clock)

    def footer_key(self, master_key_id: str, *, store: KeyMaterialStore | None = None) -> DataKey:
        """A new footer DEK wrapped under ``master_key_id``.

        Parameters
        ----------
        master_key_id : str
            The master key's id.
        store : KeyMaterialStore, optional
            External key material goes here (None: internal).

        Returns
        -------
        DataKey
            The key and its key_metadata.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            The KMS refused or failed (``KeyAccessDeniedError``, ``KmsUnavailableError``...).
        """
        dek = os.urandom(self.dek_length_bits // 8)
        return DataKey(dek, self.wrap(dek, master_key_id, is_footer_key=True, store=store), master_key_id)

    def column_key(self, master_key_id: str, *, store: KeyMaterialStore | None = None) -> DataKey:
        """A new column DEK wrapped under ``master_key_id``.

        Parameters
        ----------
        master_key_id : str
            The master key's id.
        store : KeyMaterialStore, optional
            External key material goes here (None: internal).

        Returns
        -------
        DataKey
            The key and its key_metadata.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            The KMS refused or failed (``KeyAccessDeniedError``, ``KmsUnavailableError``...).
        """
        dek = os.urandom(self.dek_length_bits // 8)
        return DataKey(dek, self.wrap(dek, master_key_id, is_footer_key=False, store=store), master_key_id)

    def wrap(self, dek: bytes, master_key_id: str, *, is_footer_key: bool,
             store: KeyMaterialStore | None = None) -> bytes:
        """key_metadata for an existing ``dek`` (rotation re-wraps this way).

        Without ``store`` the material is the key_metadata (internal storage); with it, the
        material goes into the store and the key_metadata is its reference.

        Parameters
        ----------
        dek : bytes
            The data key.
        master_key_id : str
            The master key's id.
        is_footer_key : bool
            The footer's key (its material records the KMS instance).
        store : KeyMaterialStore, optional
            External key material goes here.

        Returns
        -------
        bytes
            The key_metadata.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            The KMS refused or failed (``KeyAccessDeniedError``, ``KmsUnavailableError``...).
        ValueError
            ``dek`` is not an AES key length, or an empty ``master_key_id``.
        """
        material = self.key_material(dek, master_key_id, is_footer_key=is_footer_key,
                                     internal_storage=store is None)
        if store is None:
            return KeyMetadata(material=material).to_bytes()
        return KeyMetadata(key_reference=store.add(material)).to_bytes()

    def key_material(self, dek: bytes, master_key_id: str, *, is_footer_key: bool,
                     internal_storage: bool = True) -> KeyMaterial:
        """The :class:`KeyMaterial` of ``dek`` wrapped under ``master_key_id``.

        Parameters
        ----------
        dek : bytes
            The data key.
        master_key_id : str
            The master key's id.
        is_footer_key : bool
            The footer's key.
        internal_storage : bool, default True
            The material goes in the file.

        Returns
        -------
        KeyMaterial
            The material.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            The KMS refused or failed (``KeyAccessDeniedError``, ``KmsUnavailableError``...).
        ValueError
            ``dek`` is not an AES key length, or an empty ``master_key_id``.
        """
        dek = check_key(dek, "dek")
        if not isinstance(master_key_id, str) or not master_key_id:
            raise ValueError("master_key_id must be a non-empty str")
        footer_kms = {"kms_instance_id": self.kms_instance_id,
                      "kms_instance_url": self.kms_instance_url} if is_footer_key else {}
        if not self.double_wrapping:
            return KeyMaterial(master_key_id=master_key_id, wrapped_dek=self._kms_wrap(dek, master_key_id),
                               is_footer_key=is_footer_key, double_wrapping=False,
                               internal_storage=internal_storage, **footer_kms)
        kek = self._keks.get_or_create(master_key_id, lambda: self._new_kek(master_key_id))
        return KeyMaterial(master_key_id=master_key_id, wrapped_dek=wrap_locally(dek, kek.key, kek.kek_id),
                           is_footer_key=is_footer_key, double_wrapping=True,
                           kek_id=base64.b64encode(kek.kek_id).decode("ascii"), wrapped_kek=kek.wrapped_kek,
                           internal_storage=internal_storage, **footer_kms)

    def _new_kek(self, master_key_id: str) -> _Kek:
        kek = os.urandom(KEK_LENGTH)
        return _Kek(kek, os.urandom(KEK_ID_LENGTH), self._kms_wrap(kek, master_key_id))

    def _kms_wrap(self, key: bytes, master_key_id: str) -> str:
        wrapped = self._kms.wrap_key(key, master_key_id)
        if not isinstance(wrapped, str) or not wrapped:
            raise KeyManagementError(
                f"the KMS returned {type(wrapped).__name__} for a key wrapped under master key "
                f"{master_key_id!r}; wrap_key must return a non-empty str")
        return wrapped

    def __repr__(self) -> str:
        return (f"FileKeyWrapper(kms={self._kms!r}, kms_instance_id={self.kms_instance_id!r}, "
                f"double_wrapping={self.double_wrapping}, dek_length_bits={self.dek_length_bits})")
