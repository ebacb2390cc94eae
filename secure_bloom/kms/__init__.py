"""Key management for encrypted Parquet, in the format of parquet-java and pyarrow key tools
(SPEC_NOTES 7 and 9): files move freely between Spark, pyarrow and secure_bloom.

KMS clients (``wrap_key(key_bytes, master_key_identifier) -> str``,
``unwrap_key(wrapped_key, master_key_identifier) -> bytes``; pyarrow's KmsClient shape):

* :class:`KmsClient` (Protocol), :data:`KmsClientFactory` ``(kms_instance_id, kms_instance_url)``.
* :class:`KeyListKms` ``("id:base64, ...")`` / ``.from_file(path)``: parquet-java's key-list KMS.
* :class:`OpenBaoTransitKms` ``(url, token=None, *, mount="transit", timeout=(3, 10), retries=3)``:
  OpenBao/Vault transit; also ``create_key``, ``rotate_key``, ``latest_version``.
* :class:`AwsKms` ``(region=None, *, endpoint_url=None, profile=None, session=None, retries=3,
  deadline_s=30)``: AWS KMS Encrypt / Decrypt with boto3 (extra ``aws``), an encryption context
  binding each wrapped key to its master key id.
* :class:`ExplicitKeys` ``({"kf": key})`` / ``.from_specs(["kf=text:..."])``, :func:`parse_key_spec`:
  key_metadata that is a plain key id.

Writing (the file layer calls this)::

    wrapper = FileKeyWrapper(kms, double_wrapping=True)       # thread-safe, share across files
    footer_dek, footer_md = wrapper.footer_key("footer_key")  # internal key material
    col_dek, col_md = wrapper.column_key("pii_key")
    # external storage instead: store = KeyMaterialStore(); wrapper.column_key("pii_key", store=store)
    #                           ...; store.save(sidecar_path(data_file))

Reading::

    unwrapper = KeyUnwrapper(kms, explicit_keys=None)         # KEK cache shared across files
    key_for = unwrapper.for_file(data_file)                   # FileKeyUnwrapper: one file
    footer_dek = key_for(file_crypto_metadata.key_metadata)

Values: :class:`KeyMaterial` (PKMT1 JSON, byte-identical to parquet-java), :class:`KeyMetadata`
(internal material or ``keyReference``), :class:`KeyMaterialStore` (the sidecar
``_KEY_MATERIAL_FOR_<file>.json``), :class:`DataKey`. Rotation:
:func:`rewrap_external_key_material`. pyarrow: :func:`pyarrow_kms_client_factory` (lazy import).

Errors come from :mod:`secure_bloom.errors`: ``KeyNotFoundError``, ``KeyAccessDeniedError``,
``KmsUnavailableError``, ``KeyDisabledError``, ``MissingKeyError``, ``MalformedKeyMaterialError``, and
``AuthenticationError`` when a wrapped key fails authentication. No message, log line or repr
contains key bytes or tokens.
"""

from __future__ import annotations

from typing import Any

from .aws import AwsKms
from .client import DEFAULT_KMS_INSTANCE_ID, DEFAULT_KMS_INSTANCE_URL, KmsClient, KmsClientFactory
from .explicit import ExplicitKeys, parse_key_spec
from .key_list import KeyListKms, write_development_key_list
from .material import KeyMaterial, KeyMetadata
from .openbao import OpenBaoTransitKms
from .rotation import rewrap_external_key_material
from .sidecar import KeyMaterialStore, sidecar_path
from .unwrapper import FileKeyUnwrapper, KeyGrant, KeyUnwrapper
from .wrapper import DataKey, FileKeyWrapper

__all__ = [
    "KeyGrant",
    "KmsClient", "KmsClientFactory", "DEFAULT_KMS_INSTANCE_ID", "DEFAULT_KMS_INSTANCE_URL",
    "KeyListKms", "write_development_key_list", "OpenBaoTransitKms", "AwsKms", "ExplicitKeys", "parse_key_spec",
    "KeyMaterial", "KeyMetadata", "KeyMaterialStore", "sidecar_path",
    "FileKeyWrapper", "DataKey", "KeyUnwrapper", "FileKeyUnwrapper",
    "rewrap_external_key_material", "pyarrow_kms_client_factory", "PyArrowKmsClient",
]


def __getattr__(name: str) -> Any:
    if name in ("pyarrow_kms_client_factory", "PyArrowKmsClient"):
        from . import pyarrow_adapter

        return getattr(pyarrow_adapter, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
