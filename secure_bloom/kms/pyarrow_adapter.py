"""Our KMS clients inside pyarrow's key tools (``pyarrow.parquet.encryption``; SPEC_NOTES 7).

pyarrow's ``CryptoFactory`` takes a factory ``f(KmsConnectionConfig) -> pyarrow KmsClient``.
:func:`pyarrow_kms_client_factory` builds one from any of our clients, so pyarrow writes and reads
files whose keys are wrapped by, e.g., :class:`~secure_bloom.kms.key_list.KeyListKms` or
:class:`~secure_bloom.kms.openbao.OpenBaoTransitKms`. The other direction needs no adapter: a
pyarrow ``KmsClient`` subclass instance already is a :class:`~secure_bloom.kms.client.KmsClient`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pyarrow.parquet.encryption as pe

from .client import KmsClient, KmsClientFactory, is_kms_client

__all__ = ["PyArrowKmsClient", "pyarrow_kms_client_factory", "takes_connection_config", "instance_factory"]


class PyArrowKmsClient(pe.KmsClient):  # type: ignore[misc]
    """A ``pyarrow.parquet.encryption.KmsClient`` that delegates to one of our clients.

    Parameters
    ----------
    kms : KmsClient
        The client ``wrap_key`` / ``unwrap_key`` go to.

    Raises
    ------
    TypeError
        ``kms`` has no ``wrap_key`` / ``unwrap_key`` (a factory, not a client).
    """

    def __init__(self, kms: KmsClient) -> None:
        super().__init__()
        if not is_kms_client(kms):
            raise TypeError("kms must have wrap_key() and unwrap_key()")
        self._kms = kms

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Our client's :meth:`~secure_bloom.kms.client.KmsClient.wrap_key` (pyarrow calls it
        with the KEK or DEK it made).

        Parameters
        ----------
        key_bytes : bytes
            The key to wrap (copied to ``bytes``: pyarrow may pass another buffer type).
        master_key_identifier : str
            The master key's id.

        Returns
        -------
        str
            The wrapped key.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            What the client raises, unchanged.
        """
        return self._kms.wrap_key(bytes(key_bytes), master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        """Our client's :meth:`~secure_bloom.kms.client.KmsClient.unwrap_key`.

        Parameters
        ----------
        wrapped_key : str
            What ``wrap_key`` returned.
        master_key_identifier : str
            The master key's id.

        Returns
        -------
        bytes
            The key.

        Raises
        ------
        secure_bloom.errors.SecureBloomError
            What the client raises, unchanged (a ``KeyManagementError``, or
            ``AuthenticationError`` from a local KMS).
        """
        return self._kms.unwrap_key(wrapped_key, master_key_identifier)

    def __repr__(self) -> str:
        return f"PyArrowKmsClient({self._kms!r})"


def pyarrow_kms_client_factory(
        kms: KmsClient | Callable[[Any], KmsClient]) -> Callable[[Any], PyArrowKmsClient]:
    """A ``kms_client_factory`` for ``pyarrow.parquet.encryption.CryptoFactory``.

    Parameters
    ----------
    kms : KmsClient or callable
        One client used for every connection, or ``f(KmsConnectionConfig) -> KmsClient`` (e.g. to
        build an :class:`~secure_bloom.kms.openbao.OpenBaoTransitKms` from
        ``config.kms_instance_url`` and ``config.key_access_token``).

    Returns
    -------
    callable
        ``KmsConnectionConfig -> pyarrow.parquet.encryption.KmsClient``.

    Raises
    ------
    TypeError
        ``kms`` is neither a client (``wrap_key`` / ``unwrap_key``) nor callable.

    Examples
    --------
    >>> import os
    >>> import pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory
    >>> kms = KeyListKms({"footer_key": os.urandom(16), "pii_key": os.urandom(16)})
    >>> crypto = pe.CryptoFactory(pyarrow_kms_client_factory(kms))  # pyarrow's own encryption, our KMS
    >>> props = crypto.file_encryption_properties(
    ...     pe.KmsConnectionConfig(), pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                          column_keys={"pii_key": ["email"]}))
    >>> type(props).__name__
    'FileEncryptionProperties'
    """
    if is_kms_client(kms):
        return lambda _config: PyArrowKmsClient(kms)  # type: ignore[arg-type]
    if not callable(kms):
        raise TypeError("kms must be a KmsClient or a callable taking a KmsConnectionConfig")
    return lambda config: PyArrowKmsClient(kms(config))


def takes_connection_config(factory: object) -> bool:
    """True for pyarrow's factory shape ``f(KmsConnectionConfig) -> KmsClient`` (what
    ``CryptoFactory`` takes: one required positional parameter, e.g. ``lambda cfg: Client(cfg)``
    or a ``KmsClient`` subclass taking the config), False for a client or for our
    ``f(kms_instance_id, kms_instance_url)``.

    Parameters
    ----------
    factory : object
        What a caller passed as ``kms=``.

    Returns
    -------
    bool
        True when ``factory`` is callable, not a client, and its signature has exactly one
        required positional parameter (no ``*args``); False also when it has no signature.

    Raises
    ------
    None
        A signature that cannot be read counts as False.
    """
    if factory is None or is_kms_client(factory) or not callable(factory):
        return False
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = signature.parameters.values()
    required = [p for p in params if p.kind in positional and p.default is p.empty]
    return len(required) == 1 and not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)


def instance_factory(kms: Any) -> Any:
    """``kms`` as our unwrapper takes it: a client or ``f(kms_instance_id, kms_instance_url)``
    stays as it is; pyarrow's ``f(KmsConnectionConfig)`` is called with a config naming the
    instance (the key material's, or ``DEFAULT``).

    Parameters
    ----------
    kms : object
        A client, our factory, or pyarrow's factory.

    Returns
    -------
    object
        ``kms`` itself, or ``f(kms_instance_id, kms_instance_url)`` calling pyarrow's factory
        with a ``KmsConnectionConfig`` of that id and URL (each call makes a client).

    Raises
    ------
    None
        The factory is not called here; what it raises comes from the returned function.
    """

    if not takes_connection_config(kms):
        return kms

    def from_instance(kms_instance_id: str, kms_instance_url: str) -> KmsClient:
        return kms(pe.KmsConnectionConfig(kms_instance_id=kms_instance_id,  # type: ignore[no-any-return]
                                          kms_instance_url=kms_instance_url))

    factory: KmsClientFactory = from_instance
    return factory
