"""secure_bloom: encrypted Parquet split-block Bloom filters for sensitive columns.

Build, serialise, encrypt, read, probe, attach and audit Parquet Bloom filters, byte-compatible
with parquet-java (the JVM writer Spark uses), with the filter's two modules encrypted by Parquet
Modular Encryption (AES-GCM, column key, AAD module types 8 and 9).

Layers, bottom up (each module names its spec section):

* :mod:`secure_bloom.types`, :mod:`secure_bloom.spec`, :mod:`secure_bloom.errors` - physical types
  and states, the formats' constants, the error hierarchy;
* :mod:`secure_bloom.values` - values to plain bytes to XXH64 (physical, logical, Arrow, text);
* :mod:`secure_bloom.filter`, :mod:`secure_bloom.header` - the SBBF and its Thrift header;
* :mod:`secure_bloom.crypto` - AES-GCM modules and AADs (knows nothing about Bloom filters);
* :mod:`secure_bloom.encrypted_filter` - the filter as two encrypted modules;
* :mod:`secure_bloom.kms` - KMS clients and parquet-java key material;
* :mod:`secure_bloom.parquet` - reading, probing, attaching and auditing real files;
* :mod:`secure_bloom.spark` - the PySpark integration.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .crypto import ChunkCryptoContext, ModuleType
    from .encrypted_filter import (
        decrypt_bloom_filter,
        decrypt_bloom_filter_with_length,
        encrypt_bloom_filter,
        read_encrypted_bloom_filter,
    )
    from .errors import SecureBloomError
    from .filter import SplitBlockBloomFilter, optimal_num_bytes
    from .types import PhysicalType
    from .values import hash_value, hash_values

__version__ = "0.1.0"

__all__ = [
    "SplitBlockBloomFilter",
    "optimal_num_bytes",
    "PhysicalType",
    "hash_value",
    "hash_values",
    "ModuleType",
    "ChunkCryptoContext",
    "encrypt_bloom_filter",
    "decrypt_bloom_filter",
    "decrypt_bloom_filter_with_length",
    "read_encrypted_bloom_filter",
    "SecureBloomError",
]

# The public names load on first use (PEP 562), so ``import secure_bloom`` (and the pytest plugin,
# which every pytest run in an environment with secure-bloom imports) costs no numpy, cryptography
# or thriftpy2 until a name is used.
_HOME = {
    "SplitBlockBloomFilter": "filter", "optimal_num_bytes": "filter", "PhysicalType": "types",
    "hash_value": "values", "hash_values": "values", "ModuleType": "crypto", "ChunkCryptoContext": "crypto",
    "encrypt_bloom_filter": "encrypted_filter", "decrypt_bloom_filter": "encrypted_filter",
    "decrypt_bloom_filter_with_length": "encrypted_filter", "read_encrypted_bloom_filter": "encrypted_filter",
    "SecureBloomError": "errors",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'secure_bloom' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
