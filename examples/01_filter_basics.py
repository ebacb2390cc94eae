"""Build, probe, serialise and encrypt a Parquet split-block Bloom filter in memory.

Run: python examples/01_filter_basics.py
"""

import os

import pyarrow as pa

import secure_bloom as sb

# A filter sized exactly as parquet-java sizes it for 10,000 distinct values at 1 % false positives.
bf = sb.SplitBlockBloomFilter.for_ndv(10_000, fpp=0.01)
emails = pa.array([f"customer{i}@example.com" for i in range(10_000)])
bf.insert(emails, "BYTE_ARRAY")  # Arrow arrays are hashed straight from their buffers
print(f"{bf!r}; estimated false-positive rate {bf.fpp_estimate(10_000):.3%}")
print("customer42@example.com may be present:", bf.might_contain("customer42@example.com", "BYTE_ARRAY"))
print("mallory@example.com may be present:   ", bf.might_contain("mallory@example.com", "BYTE_ARRAY"))

# The plaintext on-disk form: Thrift BloomFilterHeader + bitset.
blob = bf.to_bytes()
assert sb.SplitBlockBloomFilter.from_bytes(blob) == bf

# The encrypted form: two AES-GCM modules (AAD module types 8 and 9) under the column key.
column_key = os.urandom(16)  # in real files this is the column's data key (see example 03)
file_aad = os.urandom(8)     # aad_file_unique of the file the filter belongs to
encrypted = sb.encrypt_bloom_filter(bf, column_key, file_aad, row_group_ordinal=0, column_ordinal=3)
print(f"encrypted filter: {len(encrypted)} bytes (plaintext {len(blob)})")
assert sb.decrypt_bloom_filter(encrypted, column_key, file_aad, 0, 3) == bf
try:  # the same bytes presented as another column's filter are refused
    sb.decrypt_bloom_filter(encrypted, column_key, file_aad, 0, 4)
except sb.SecureBloomError as e:
    print("moved to another column ->", e)
