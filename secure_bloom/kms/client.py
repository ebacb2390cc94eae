"""The KMS client interface of Parquet key tools (SPEC_NOTES 7).

A KMS client wraps (encrypts) a data key or key-encryption key under a *master key* that never
leaves the KMS, and unwraps it again. The shape is parquet-java's ``KmsClient`` and exactly
``pyarrow.parquet.encryption.KmsClient``, so an instance of a pyarrow subclass is a
:class:`KmsClient` as it stands, and ours plug into pyarrow through
:mod:`secure_bloom.kms.pyarrow_adapter`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["KmsClient", "KmsClientFactory", "DEFAULT_KMS_INSTANCE_ID", "DEFAULT_KMS_INSTANCE_URL",
           "is_kms_client"]

#: parquet-java's ``KmsClient.KMS_INSTANCE_ID_DEFAULT`` / ``KMS_INSTANCE_URL_DEFAULT``.
DEFAULT_KMS_INSTANCE_ID = "DEFAULT"
DEFAULT_KMS_INSTANCE_URL = "DEFAULT"


@runtime_checkable
class KmsClient(Protocol):
    """Wraps and unwraps keys under master keys held by a KMS.

    ``wrap_key`` returns a text the same client's ``unwrap_key`` turns back into the key bytes;
    both name the master key by its id. Implementations raise :class:`KeyManagementError`
    subclasses: ``KeyNotFoundError`` for an unknown master key, ``KeyAccessDeniedError`` when the
    KMS refuses, ``KmsUnavailableError`` when it cannot be reached.
    """

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Encrypt ``key_bytes`` under the master key ``master_key_identifier``.

        Parameters
        ----------
        key_bytes : bytes
            A data key or KEK (16, 24 or 32 bytes).
        master_key_identifier : str
            The master key's id in this KMS.

        Returns
        -------
        str
            The wrapped key, as text the key material stores (usually base64).

        Raises
        ------
        secure_bloom.errors.KeyNotFoundError
            The KMS has no such master key.
        secure_bloom.errors.KeyAccessDeniedError
            The KMS refuses this caller.
        secure_bloom.errors.KmsUnavailableError
            The KMS cannot be reached or does not answer in time.
        """
        ...

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        """Decrypt a key that :meth:`wrap_key` wrapped under ``master_key_identifier``.

        Parameters
        ----------
        wrapped_key : str
            What :meth:`wrap_key` returned.
        master_key_identifier : str
            The master key's id in this KMS.

        Returns
        -------
        bytes
            The key bytes.

        Raises
        ------
        secure_bloom.errors.KeyNotFoundError
            The KMS has no such master key.
        secure_bloom.errors.KeyAccessDeniedError
            The KMS refuses this caller (a remote KMS also refuses a wrapped key that does not
            open under that master key).
        secure_bloom.errors.AuthenticationError
            A local KMS (a key list): the wrapped key does not authenticate under that master key.
        secure_bloom.errors.KmsUnavailableError
            The KMS cannot be reached or does not answer in time.
        """
        ...



#: Makes the client for one KMS instance: ``factory(kms_instance_id, kms_instance_url)``.
KmsClientFactory = Callable[[str, str], KmsClient]


def is_kms_client(obj: object) -> bool:
    """True for a KMS client (has ``wrap_key`` and ``unwrap_key``), False for a factory (a
    client class, whose methods are there unbound, is a factory).

    Parameters
    ----------
    obj : object
        What a caller passed as ``kms=``: a client, or a factory of clients.

    Returns
    -------
    bool
        Whether ``obj`` is used as the client itself.

    Raises
    ------
    None
        Only attributes are looked at.
    """

    return not isinstance(obj, type) and callable(getattr(obj, "wrap_key", None)) \
        and callable(getattr(obj, "unwrap_key", None))
