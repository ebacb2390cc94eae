"""The Parquet layer, the public face of four rooms (SPEC_NOTES 4-8):

* ``file/``: one Parquet file. :class:`ParquetBloomReader` ``(path, keys=KeyAccess(...))`` reads
  any Parquet file (plaintext, signed plaintext footer or encrypted footer, AES_GCM_V1 or
  AES_GCM_CTR_V1): the tail, then only Bloom filter bytes; ``.chunk(rg, column) ->``
  :class:`ColumnChunk`, ``.bloom_filter(rg, column)``, ``.probe(column, values) ->``
  :class:`ProbeResult`. :class:`KeyAccess` ``(kms=, explicit=, aad_prefix=)``: the caller's key
  sources, shared by every room and the CLI.
* ``write/``: adding filters. :func:`write_table`, :class:`ParquetWriter`,
  :func:`write_to_dataset` (pyarrow's writers and option names, encrypted files with encrypted
  Bloom filters in one pass) and :func:`attach_bloom_filters` (filters added to a copy of a file,
  per column options as :class:`ColumnSpec`).
* ``read/``: reading by key. :func:`read_table`, :func:`dataset`, :func:`scan`: pyarrow reads
  that skip the row groups a filter rules out (statistics, then Bloom filters, encrypted or not),
  with pyarrow's rows exactly. ``dataset(source, keys=...)`` is a pyarrow Dataset
  (:class:`PruningDataset`) that prunes with the filter of every scan, so Polars and DuckDB prune
  with their own predicates; :class:`PruneCache` keeps pruning facts for warm lookups.
* ``audit/``: compliance (:func:`secure_bloom.parquet.audit.audit`, policies, reports).
* :mod:`.polars` (``scan_parquet``, a Polars IO source) and :mod:`.duckdb` (``register``) build
  on ``dataset`` (they import Polars / DuckDB: not imported here).
* :mod:`secure_bloom.values` (re-exported here): user values and command-line text -> what a
  column stores (:func:`value_from_text`, :func:`encode_value`) and the hashes a query asks for
  (:func:`query_hashes`).

``write/``, ``read/`` and ``audit/`` use ``file/`` and never each other; ``file/`` imports none
of them (tests/unit/test_architecture.py).
"""

import importlib
from typing import Any

from ..types import ChunkEncryption, FilterForm, FooterMode, Verdict
from ..values import NanoTimestamp, QueryHashes, display_value, encode_value, query_hashes, value_from_text
from .file.chunk import ChunkInfo, ColumnChunk, FilterLocation
from .file.keys import NO_KEYS, KeyAccess
from .file.probe import ABSENT, MAYBE, ProbeResult, ProbeValues, RowGroupProbe
from .file.reader import ParquetBloomReader
from .file.schema import ColumnInfo

# read/ and write/ load on first use (PEP 562): they import pyarrow.dataset (and with it pandas),
# which a reader of Bloom filters (``secure-bloom probe``, inspect) never needs.
_HOME = {name: "read" for name in ("PruneCache", "PruningDataset", "dataset", "read_table", "scan")}
_HOME.update({name: "write" for name in ("AttachedFilter", "AttachReport", "ColumnSpec", "ParquetWriter",
                                         "WriteReport", "attach_bloom_filters", "write_table", "write_to_dataset")})

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
    "ProbeValues",
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


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
