"""Values -> the plain bytes Parquet stores -> XXH64 hashes: the one place that does it.

Spec: Parquet BloomFilter.md "Hashing of values" and LogicalTypes.md. One-way chain, bottom up:

* :mod:`.xxh64` - vectorised XXH64 (seed 0) over numpy arrays;
* :mod:`.logical` - logical values (DECIMAL, DATE, TIMESTAMP, INT96, ...) -> physical values;
* :mod:`.column_type` - the column type facts the encoders take (a protocol; no file layer);
* :mod:`.arrow` - pyarrow arrays: stored-form normalisation and hashing from their buffers;
* :mod:`.physical` - plain bytes and hashes of physical values (:func:`hash_value`, :func:`hash_values`);
* :mod:`.text` - command-line text -> a value for a column, and value labels;
* :mod:`.column` - a user value for a column: exact encoding and the hashes a query asks for.

pyarrow is imported only when Arrow input arrives (:mod:`.arrow` is not imported here).
"""

from .column import (QueryBatch, QueryHashes, TimeZoneLike, encode_value, hash_for_column, maybe_in, query_batch,
                     query_hashes, value_from_text)
from .column_type import ColumnType
from .logical import (
    NanoTimestamp,
    TimeUnit,
    encode_date,
    encode_decimal,
    encode_int96,
    encode_string,
    encode_timestamp,
    minimal_twos_complement,
)
from .physical import hash_binary_arrays, hash_value, hash_values, plain_bytes
from .text import display_value

__all__ = [
    "ColumnType",
    "plain_bytes",
    "hash_value",
    "hash_values",
    "hash_binary_arrays",
    "encode_string",
    "encode_decimal",
    "encode_date",
    "encode_timestamp",
    "encode_int96",
    "minimal_twos_complement",
    "NanoTimestamp",
    "TimeUnit",
    "encode_value",
    "hash_for_column",
    "query_hashes",
    "QueryHashes",
    "QueryBatch",
    "query_batch",
    "maybe_in",
    "value_from_text",
    "display_value",
    "TimeZoneLike",
]
