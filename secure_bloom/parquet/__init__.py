"""The Parquet file layer: read, probe and attach Bloom filters of real files (SPEC_NOTES 5-7).

* :class:`ParquetBloomReader` ``(path, keys=KeyAccess(...))``: any Parquet file, plaintext,
  plaintext footer (signed) or encrypted footer, AES_GCM_V1 or AES_GCM_CTR_V1; reads the tail and
  then only Bloom filter bytes. ``.columns``, ``.chunks()``, ``.bloom_filter(rg, column)``,
  ``.probe(column, values) -> ProbeResult``, ``.row_groups_maybe_containing``, ``.describe()``.
* :class:`KeyAccess` ``(kms=None, explicit=None, aad_prefix=None)``: the caller's key sources,
  shared by the reader, attach, the CLI and the audit.
* :func:`attach_bloom_filters`: a copy of a file with (encrypted) Bloom filters added.
* :mod:`secure_bloom.values` (re-exported here): user values and command-line text -> what a column stores
  (:func:`value_from_text`, :func:`encode_value`) and the hashes a query asks for
  (:func:`query_hashes`: SQL equality, both zeros, NaN always "maybe", naive times need a zone).
"""

from .attach import AttachedFilter, AttachReport, attach_bloom_filters
from .keys import NO_KEYS, KeyAccess
from .reader import ABSENT, MAYBE, ChunkInfo, ParquetBloomReader, ProbeResult, RowGroupProbe
from .schema import ColumnInfo
from ..values import NanoTimestamp, QueryHashes, display_value, encode_value, query_hashes, value_from_text

__all__ = [
    "ParquetBloomReader",
    "KeyAccess",
    "attach_bloom_filters",
    "AttachReport",
    "AttachedFilter",
    "NO_KEYS",
    "ProbeResult",
    "RowGroupProbe",
    "ChunkInfo",
    "ColumnInfo",
    "MAYBE",
    "ABSENT",
    "encode_value",
    "value_from_text",
    "display_value",
    "query_hashes",
    "QueryHashes",
    "NanoTimestamp",
]
