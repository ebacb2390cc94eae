"""Our KMS clients inside pyarrow's key tools (``pyarrow.parquet.encryption``; SPEC_NOTES 7).

pyarrow's ``CryptoFactory`` takes a factory ``f(KmsConnectionConfig) -> pyarrow KmsClient``.
:func:`pyarrow_kms_client_factory` builds one from any of our clients, so pyarrow writes and reads
files whose keys are wrapped by, e.g., :class:`~secure_bloom.kms.key_list.KeyListKms` or
:class:`~secure_bloom.kms.openbao.OpenBaoTransitKms`. The other direction needs no adapter: a
pyarrow ``KmsClient`` subclass instance already is a :class:`~secure_bloom.kms.client.KmsClient`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow.parquet.encryption as pe

from .client import KmsClient, is_kms_client

__all__ = ["PyArrowKmsClient", "pyarrow_kms_client_factory"]


class PyArrowKmsClient(pe.KmsClient):  # type: ignore[misc]
    """A ``pyarrow.parquet.encryption.KmsClient`` that delegates to one of our clients."""

    def __init__(self, kms: KmsClient) -> None:
        super().__init__()
        if not is_kms_client(kms):
            raise TypeError("kms must have wrap_key() and unwrap_key()")
        self._kms = kms

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        return self._kms.wrap_key(bytes(key_bytes), master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        return self._kms.unwrap_key(wrapped_key, master_key_identifier)

    def __repr__(self) -> str:
        return f"PyArrowKmsClient({self._kms!r})"


def pyarrow_kms_client_factory(
        kms: KmsClient | Callable[[Any], KmsClient]) -> Callable[[Any], PyArrowKmsClient]:
    """A ``kms_client_factory`` for ``pyarrow.parquet.encryption.CryptoFactory``.

    ``kms`` is one client used for every connection, or ``f(KmsConnectionConfig) -> KmsClient``
    (e.g. to build an :class:`~secure_bloom.kms.openbao.OpenBaoTransitKms` from
    ``config.kms_instance_url`` and ``config.key_access_token``).
    """
    if is_kms_client(kms):
        return lambda _config: PyArrowKmsClient(kms)  # type: ignore[arg-type]
    if not callable(kms):
        raise TypeError("kms must be a KmsClient or a callable taking a KmsConnectionConfig")
    return lambda config: PyArrowKmsClient(kms(config))
