"""Parquet Modular Encryption's AES-GCM layer. Knows nothing about Bloom filters.

Spec: Parquet Encryption.md. Bottom up:

* :mod:`.gcm` - AES-GCM: key checks, fresh nonces, the per-key invocation limit, and the one place
  cryptography's ``InvalidTag`` becomes an :class:`~secure_bloom.errors.AuthenticationError`;
* :mod:`.modules` - module types, module and footer AADs, the length-prefixed module framing;
* :mod:`.context` - :class:`ChunkCryptoContext`, one column chunk's key, file AAD and ordinals.
"""

from .context import ChunkCryptoContext
from .gcm import check_key
from .modules import (
    ModuleType,
    ciphertext_length,
    decrypt_module,
    encrypt_module,
    footer_aad,
    module_aad,
    plaintext_length,
    read_module,
)

__all__ = [
    "ChunkCryptoContext",
    "ModuleType",
    "check_key",
    "module_aad",
    "footer_aad",
    "encrypt_module",
    "decrypt_module",
    "read_module",
    "ciphertext_length",
    "plaintext_length",
]
