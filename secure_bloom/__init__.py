"""secure_bloom: encrypted Parquet split-block Bloom filters for sensitive columns.

Build, serialise, encrypt, read, probe, attach and audit Parquet Bloom filters, byte-compatible
with parquet-java (the JVM writer Spark uses), with the filter's two modules encrypted by Parquet
Modular Encryption (AES-GCM, column key, AAD module types 8 and 9).

Layers, bottom up (each module names its spec section):

* :mod:`secure_bloom.hashing`, :mod:`secure_bloom.logical` - XXH64 over plain-encoded values;
* :mod:`secure_bloom.filter`, :mod:`secure_bloom.header` - the SBBF and its Thrift header;
* :mod:`secure_bloom.modules` - AES-GCM modules and AADs (knows nothing about Bloom filters);
* :mod:`secure_bloom.encrypted_filter` - the filter as two encrypted modules;
* :mod:`secure_bloom.kms` - KMS clients and parquet-java key material;
* :mod:`secure_bloom.parquet` - reading, probing, attaching and auditing real files;
* :mod:`secure_bloom.spark` - the PySpark integration.
"""

from .encrypted_filter import (
    decrypt_bloom_filter,
    decrypt_bloom_filter_with_length,
    encrypt_bloom_filter,
    read_encrypted_bloom_filter,
)
from .errors import SecureBloomError
from .filter import SplitBlockBloomFilter, optimal_num_bytes
from .hashing import PhysicalType, hash_value, hash_values
from .modules import ModuleType

__version__ = "0.1.0"

__all__ = [
    "SplitBlockBloomFilter",
    "optimal_num_bytes",
    "PhysicalType",
    "hash_value",
    "hash_values",
    "ModuleType",
    "encrypt_bloom_filter",
    "decrypt_bloom_filter",
    "decrypt_bloom_filter_with_length",
    "read_encrypted_bloom_filter",
    "SecureBloomError",
]
