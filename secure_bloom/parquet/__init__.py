"""The Parquet file layer: read, probe, attach and audit Bloom filters of real files (SPEC_NOTES 4-8).

* :class:`ParquetBloomReader` ``(path, keys=KeyAccess(...))``: any Parquet file, plaintext,
  plaintext footer (signed) or encrypted footer, AES_GCM_V1 or AES_GCM_CTR_V1; reads the tail and
  then only Bloom filter bytes. ``.columns``, ``.chunks()``, ``.chunk(rg, column) -> ColumnChunk``,
  ``.bloom_filter(rg, column)``, ``.probe(column, values) -> ProbeResult``, ``.describe()``.
* :class:`ColumnChunk` (:mod:`.chunk`): one chunk's ordinals, column, :class:`ChunkEncryption`
  and key metadata; :mod:`.filter_io` reads, classifies and serialises one chunk's filter;
  :mod:`.probe` answers queries with :class:`Verdict`.
* :class:`KeyAccess` ``(kms=None, explicit=None, aad_prefix=None)``: the caller's key sources,
  shared by the reader, attach, the CLI and the audit.
* :func:`attach_bloom_filters`: a copy of a file with (encrypted) Bloom filters added, per column
  options as :class:`ColumnSpec`.
* :func:`write_table`, :class:`ParquetWriter`, :func:`write_to_dataset` (:mod:`.write`): pyarrow's
  writers, with pyarrow's option names, for encrypted files with encrypted Bloom filters in one pass.
* :mod:`secure_bloom.values` (re-exported here): user values and command-line text -> what a column stores
  (:func:`value_from_text`, :func:`encode_value`) and the hashes a query asks for
  (:func:`query_hashes`: SQL equality, both zeros, NaN always "maybe", naive times need a zone).
* :func:`read_table`, :func:`dataset`, :func:`scan` (:mod:`.read`): pyarrow reads that skip the
  row groups a filter rules out (statistics, then Bloom filters, encrypted or not).
  ``dataset(source, keys=...)`` is a pyarrow Dataset (:class:`PruningDataset`) that prunes with
  the filter of every scan, so Polars (``scan_pyarrow_dataset``) and DuckDB (``FROM ds WHERE``)
  prune with their own predicates; :mod:`.polars` (``scan_parquet``, a Polars IO source) and
  :mod:`.duckdb` (``register``) build on it (they import Polars / DuckDB: not imported here).
* :class:`PruneCache` (:mod:`.prune_cache`): an opt-in, bounded, in-memory cache of what pruning
  derived from files (statistics, decrypted filters) for warm lookups: ``cache=`` of
  ``read.read_table`` / ``scan`` / ``dataset`` / ``prune.prune_files``.
"""

from ..types import ChunkEncryption, FilterForm, FooterMode, Verdict
from .attach import AttachedFilter, AttachReport, attach_bloom_filters
from .chunk import ChunkInfo, ColumnChunk, FilterLocation
from .keys import NO_KEYS, KeyAccess
from .options import ColumnSpec
from .prune_cache import PruneCache
from .probe import ABSENT, MAYBE, ProbeResult, RowGroupProbe
from .pruning_dataset import PruningDataset
from .read import dataset, read_table, scan
from .reader import ParquetBloomReader
from .schema import ColumnInfo
from .write import ParquetWriter, WriteReport, write_table, write_to_dataset
from ..values import NanoTimestamp, QueryHashes, display_value, encode_value, query_hashes, value_from_text

__all__ = [
    "read_table",
    "dataset",
    "scan",
    "PruningDataset",
    "ParquetBloomReader",
    "KeyAccess",
    "PruneCache",
    "attach_bloom_filters",
    "write_table",
    "ParquetWriter",
    "write_to_dataset",
    "WriteReport",
    "ColumnSpec",
    "AttachReport",
    "AttachedFilter",
    "NO_KEYS",
    "ProbeResult",
    "RowGroupProbe",
    "ChunkInfo",
    "ColumnChunk",
    "FilterLocation",
    "ColumnInfo",
    "Verdict",
    "MAYBE",
    "ABSENT",
    "ChunkEncryption",
    "FilterForm",
    "FooterMode",
    "encode_value",
    "value_from_text",
    "display_value",
    "query_hashes",
    "QueryHashes",
    "NanoTimestamp",
]
