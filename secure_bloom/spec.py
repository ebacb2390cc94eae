"""The numbers the formats fix, each named once with its source.

Sources: Parquet BloomFilter.md ("Technical Approach", "File Format"), Encryption.md ("Encrypted
module serialization", "Additional Authenticated Data"), LogicalTypes.md ("Temporal Types",
legacy INT96), and parquet-java (``BlockSplitBloomFilter``, ``ParquetProperties``) where the spec
leaves a writer's choice. Every other module imports these rather than repeating a literal.
"""

from __future__ import annotations

__all__ = [
    "BYTES_PER_BLOCK",
    "MIN_BITSET_BYTES",
    "SPEC_MAX_BITSET_BYTES",
    "WRITER_DEFAULT_MAX_BYTES",
    "DEFAULT_FPP",
    "MAX_HEADER_BYTES",
    "NONCE_LENGTH",
    "TAG_LENGTH",
    "LENGTH_PREFIX",
    "MAX_ORDINAL",
    "JULIAN_DAY_OF_UNIX_EPOCH",
    "SECONDS_PER_DAY",
    "NANOS_PER_SECOND",
    "NANOS_PER_DAY",
    "UNITS_PER_SECOND",
    "NANOS_PER_UNIT",
]

# --- Bloom filter (BloomFilter.md, parquet-java BlockSplitBloomFilter) ------------------------

#: A block is eight 32-bit words (BloomFilter.md, "Technical Approach").
BYTES_PER_BLOCK = 32
#: The smallest bitset: one block (parquet-java ``LOWER_BOUND_BYTES``, Arrow ``BLOOM_FILTER_MIN``).
MIN_BITSET_BYTES = 32
#: The largest bitset a reader accepts (parquet-java ``UPPER_BOUND_BYTES``, Arrow ``BLOOM_FILTER_MAX``).
SPEC_MAX_BITSET_BYTES = 128 * 1024 * 1024
#: parquet-java's default cap on one filter (``parquet.bloom.filter.max.bytes``): what writers use
#: unless told otherwise.
WRITER_DEFAULT_MAX_BYTES = 1024 * 1024
#: parquet-java's default false-positive probability (``parquet.bloom.filter.fpp``).
DEFAULT_FPP = 0.01
#: A valid BloomFilterHeader is at most 16 bytes; padded parquet-java headers are 100. Larger is
#: hostile (our bound, not the spec's).
MAX_HEADER_BYTES = 1024

# --- Modular encryption (Encryption.md) --------------------------------------------------------

#: AES-GCM nonce ("Encrypted module serialization": 12 bytes).
NONCE_LENGTH = 12
#: AES-GCM authentication tag (16 bytes).
TAG_LENGTH = 16
#: The little-endian length prefix in front of every module (4 bytes).
LENGTH_PREFIX = 4
#: Row-group, column and page ordinals are int16 in the AAD ("Additional Authenticated Data").
MAX_ORDINAL = 32767

# --- Time (LogicalTypes.md "Temporal Types" and the legacy INT96 timestamp) --------------------

#: Julian day number of 1970-01-01, the day an INT96 timestamp's 4-byte day counts from 0.
JULIAN_DAY_OF_UNIX_EPOCH = 2440588
SECONDS_PER_DAY = 86_400
NANOS_PER_SECOND = 10**9
NANOS_PER_DAY = SECONDS_PER_DAY * NANOS_PER_SECOND
#: TIMESTAMP / TIME units (``TimeUnit``): ticks per second.
UNITS_PER_SECOND = {"millis": 10**3, "micros": 10**6, "nanos": 10**9}
#: TIMESTAMP / TIME units: nanoseconds per tick.
NANOS_PER_UNIT = {unit: NANOS_PER_SECOND // per for unit, per in UNITS_PER_SECOND.items()}
