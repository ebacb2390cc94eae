"""Checking a write's options before any KMS call or byte written: the Bloom columns and their
``bloom_filter_options`` (pyarrow's format), the size cap, the encryption configuration against the
schema, and the key access the writer's KMS gives (:class:`WriteSetup`)."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from ... import thrift_codec
from ...errors import (
    SecureBloomError,
    UnsupportedParquetFeatureError,
)
from ...spec import MIN_BITSET_BYTES, SPEC_MAX_BITSET_BYTES
from ...types import PhysicalType
from ...values.arrow import leaf_values
from ...values.physical import hash_values
from ..file.schema import ColumnInfo, find_column, leaf_columns
from ...types import FilterSizing
from .key_tools import WriteKeyTools, lifetime_s
from .options import DEFAULT_FPP, check_fpp, check_ndv, check_sizing

__all__ = ["BloomColumn", "WriteSetup", "check_setup", "refuse_pyarrow_encryption",
           "need_encryption_and_kms", "bloom_specs", "parquet_leaves", "bloom_columns"]


#: Options pyarrow's writer must not get from the caller here: set by this module.
_OWN_OPTIONS = ("encryption_properties", "bloom_filter_options")


def refuse_pyarrow_encryption(options: Mapping[str, Any]) -> None:
    """pyarrow's ``encryption_properties=`` (or a ``bloom_filter_options`` given twice): a
    TypeError that says what to give instead.

    Parameters
    ----------
    options : mapping
        The keyword arguments meant for pyarrow's writer.

    Raises
    ------
    TypeError
        One of the options secure_bloom sets itself is among them.
    """
    for name in _OWN_OPTIONS:
        if name in options:
            raise TypeError(f"{name}=... is pyarrow's; secure_bloom sets it: give encryption= (a "
                            "pyarrow.parquet.encryption.EncryptionConfiguration: what CryptoFactory."
                            "file_encryption_properties takes), kms= (a KMS client, pyarrow KmsClient factory or "
                            "KeyAccess) and bloom_filter_options=; secure_bloom makes the properties and encrypts "
                            "the Bloom filters with the column keys")


def need_encryption_and_kms(encryption: Any, kms: Any, function: str) -> None:
    """Both of a write's ``encryption`` and ``kms``, or a TypeError naming the one missing.

    Parameters
    ----------
    encryption, kms : Any
        As given to ``function`` (both None is the caller's to handle: a plaintext write).
    function : str
        The function's name, for the message.

    Raises
    ------
    TypeError
        One of the two is None.
    """
    if kms is None:
        raise TypeError(f"{function}(encryption=...) needs kms=: a KMS client (wrap_key, unwrap_key), a pyarrow "
                        "KmsClient factory or a KeyAccess with a kms, to wrap the data keys")
    if encryption is None:
        raise TypeError(f"{function}(kms=...) needs encryption=: a pyarrow.parquet.encryption."
                        "EncryptionConfiguration (give neither for a plaintext file)")


@dataclass(frozen=True)
class BloomColumn:
    """A leaf column to give Bloom filters: the leaf as pyarrow writes it, the index of its
    top-level Arrow field, and its options (``ndv`` None: each row group's exact distinct count;
    ``sizing`` and ``num_bytes`` as :func:`~secure_bloom.parquet.write.options.check_sizing`).

    Parameters
    ----------
    info : ColumnInfo
        The leaf, as pyarrow writes it (path, physical and logical type, ordinal).
    field : int
        The index of its top-level field in the Arrow schema.
    ndv : int or None
        The distinct count to size each filter for; None: each row group's exact count.
    fpp : float
        The false-positive rate.
    sizing : FilterSizing, default PER_ROW_GROUP
        ``FIXED``: one size for all the column's filters.
    num_bytes : int, optional
        That one size (a power of two), when given.
    """

    info: ColumnInfo
    field: int
    ndv: int | None
    fpp: float
    sizing: FilterSizing = FilterSizing.PER_ROW_GROUP
    num_bytes: int | None = None


#: The keys of one column's ``bloom_filter_options`` entry.
_OPTION_KEYS = ("ndv", "fpp", "sizing", "num_bytes")


def bloom_specs(options: Any, max_bytes: int | None = None) -> dict[str, tuple[int | None, float, FilterSizing,
                                                                               int | None]]:
    """pyarrow's ``bloom_filter_options`` -> column path -> (ndv or None, fpp, sizing, num_bytes).

    A value is True (defaults), False (no filter) or a mapping with optional ``ndv`` (an int
    >= 1), ``fpp`` (in (0, 1)), ``sizing`` (:class:`~secure_bloom.types.FilterSizing` or its
    value: ``"fixed"`` gives all the column's filters one size) and ``num_bytes`` (that one size,
    a power of two up to ``max_bytes``); anything else raises before anything is written.

    Parameters
    ----------
    options : dict or None
        pyarrow's ``bloom_filter_options``.
    max_bytes : int, optional
        The filter size cap a ``num_bytes`` must not exceed.

    Returns
    -------
    dict
        Column path -> ``(ndv or None, fpp, sizing, num_bytes or None)``, for every column whose
        value is not False (empty for None); ``fpp`` defaults to 0.01.

    Raises
    ------
    TypeError
        ``options`` is not a mapping, a key is not a non-empty string, or a value is neither a
        bool nor a mapping.
    ValueError
        An unknown option, an ``ndv`` that is not an int >= 1, ``fpp`` outside (0, 1), an
        unknown ``sizing``, or a ``num_bytes`` that is not a power of two within the cap (the
        message names the column).
    """

    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"bloom_filter_options must be a dict of column path -> True or {{'ndv': N, 'fpp': P}}, "
                        f"got {type(options).__name__}")
    out: dict[str, tuple[int | None, float, FilterSizing, int | None]] = {}
    for path, option in options.items():
        if not isinstance(path, str) or not path:
            raise TypeError(f"bloom_filter_options keys are column paths (str), got {path!r}")
        if option is False:
            continue
        if option is True:
            option = {}
        if not isinstance(option, Mapping):
            raise TypeError(f"bloom_filter_options[{path!r}] must be True or a dict with 'ndv', 'fpp', 'sizing' "
                            f"and/or 'num_bytes', got {type(option).__name__}")
        unknown = sorted(set(option) - set(_OPTION_KEYS))
        if unknown:
            raise ValueError(f"bloom_filter_options[{path!r}]: unknown option {unknown[0]!r} "
                             f"(use {', '.join(repr(k) for k in _OPTION_KEYS)})")
        try:
            ndv = check_ndv(option.get("ndv"))
            fpp = check_fpp(option.get("fpp", DEFAULT_FPP))
            sizing, num_bytes = check_sizing(option.get("sizing"), option.get("num_bytes"), max_bytes)
        except ValueError as e:
            raise ValueError(f"bloom_filter_options[{path!r}]: {e}") from None
        out[path] = (ndv, fpp, sizing, num_bytes)
    return out


def _check_max_bytes(max_bytes: Any) -> int:
    if (isinstance(max_bytes, bool) or not isinstance(max_bytes, int)
            or not MIN_BITSET_BYTES <= max_bytes <= SPEC_MAX_BITSET_BYTES):
        raise ValueError(f"bloom_filter_max_bytes must be an int from {MIN_BITSET_BYTES} to {SPEC_MAX_BITSET_BYTES}, "
                         f"got {max_bytes!r}")
    return max_bytes


def parquet_leaves(schema: pa.Schema, writer_options: Mapping[str, Any]) -> list[ColumnInfo]:
    """The leaf columns pyarrow writes for ``schema`` with ``writer_options`` (physical types,
    widths, units), from an empty file written in memory; bad writer options raise here.

    Parameters
    ----------
    schema : pyarrow.Schema
        The schema.
    writer_options : mapping
        pyarrow's writer options.

    Returns
    -------
    list of ColumnInfo
        The leaves pyarrow writes.

    Raises
    ------
    TypeError, ValueError
        pyarrow refuses the writer options.
    """
    sink = pa.BufferOutputStream()
    try:
        with pq.ParquetWriter(sink, schema, **writer_options):
            pass
    except pa.ArrowException as e:
        if isinstance(e, (ValueError, TypeError)):
            raise
        raise ValueError(f"pyarrow refuses the writer options: {e}") from None
    data = sink.getvalue().to_pybytes()
    (length,) = struct.unpack("<I", data[-8:-4])
    metadata, _ = thrift_codec.parse(thrift_codec.idl().FileMetaData, data[-8 - length:-8])
    return leaf_columns(metadata.schema)


def bloom_columns(schema: pa.Schema, leaves: Sequence[ColumnInfo],
                  specs: Mapping[str, tuple[int | None, float, FilterSizing, int | None]]) -> tuple[BloomColumn, ...]:
    """Each requested Bloom column, checked: it exists as a leaf, is not BOOLEAN, and its Arrow
    values can be found and hashed (struct fields and standard lists; not maps).

    Parameters
    ----------
    schema : pyarrow.Schema
        The schema.
    leaves : sequence of ColumnInfo
        Its Parquet leaves.
    specs : mapping
        column path -> (ndv or None, fpp).

    Returns
    -------
    tuple of BloomColumn
        The checked columns.

    Raises
    ------
    ValueError
        A column that is not a leaf, BOOLEAN, or inside a map.
    """
    out: list[BloomColumn] = []
    for path, (ndv, fpp, sizing, num_bytes) in specs.items():
        info = find_column(leaves, path, "bloom_filter_options")
        if info.physical_type is PhysicalType.BOOLEAN:
            raise UnsupportedParquetFeatureError(
                f"bloom_filter_options: column {info.path!r} is BOOLEAN; Bloom filters never hold booleans")
        index = schema.get_field_index(info.path_in_schema[0])
        if index < 0:
            raise UnsupportedParquetFeatureError(
                f"bloom_filter_options: column {info.path!r} has no top-level Arrow field named "
                f"{info.path_in_schema[0]!r} (renamed by the writer's flavor?)")
        empty = pa.array([], type=schema.field(index).type)
        try:
            hash_values(leaf_values(empty, info), info.physical_type, type_length=info.type_length)
        except SecureBloomError as e:
            raise UnsupportedParquetFeatureError(f"bloom_filter_options: column {info.path!r}: {e}") from None
        if any(c.info.ordinal == info.ordinal for c in out):
            raise ValueError(f"bloom_filter_options names column {info.path!r} twice")
        out.append(BloomColumn(info=info, field=index, ndv=ndv, fpp=fpp, sizing=sizing, num_bytes=num_bytes))
    return tuple(out)


def _check_encryption(encryption: Any, leaves: Sequence[ColumnInfo]) -> None:
    """``encryption`` is pyarrow's configuration and each column it names is a leaf path or, as
    pyarrow accepts, a group (a struct, list or map column: every leaf under it)."""
    if not isinstance(encryption, pe.EncryptionConfiguration):
        raise TypeError("encryption must be a pyarrow.parquet.encryption.EncryptionConfiguration, got "
                        f"{type(encryption).__name__}")
    seen: dict[str, str] = {}
    # pyarrow's column_keys getter fails on the empty string it keeps for uniform encryption
    column_keys = {} if encryption.uniform_encryption else (encryption.column_keys or {})
    for master_key, columns in column_keys.items():
        for column in columns:
            covered = [leaf.path for leaf in leaves if leaf.path == column or leaf.path.startswith(column + ".")]
            if not covered:
                find_column(leaves, column, f"encryption.column_keys[{master_key!r}]")  # raises, naming the columns
            for path in covered:
                if seen.setdefault(path, master_key) != master_key:
                    raise ValueError(f"encryption.column_keys gives column {path!r} two keys "
                                     f"({seen[path]!r} and {master_key!r})")


@dataclass(frozen=True)
class WriteSetup:
    """One writer's checked options, shared by the files of a dataset (what :func:`check_setup`
    returns; made once per writer, so every file of a dataset is checked the same way).
    ``key_tools`` gives each file its CryptoFactory and KeyAccess, shared with other writes of the
    same key configuration within the cache lifetime (:mod:`.key_tools`).

    Parameters
    ----------
    schema : pyarrow.Schema
        The table's schema.
    leaves : tuple of ColumnInfo
        Every leaf column as pyarrow writes it, in file order.
    columns : tuple of BloomColumn
        The leaves that get Bloom filters, with their options.
    encryption : EncryptionConfiguration or None
        pyarrow's encryption options (None: a plaintext file).
    kms_config : KmsConnectionConfig
        The connection config given to the KMS client factory.
    key_tools : WriteKeyTools
        Each file's CryptoFactory (its data keys, and KEKs shared within the cache lifetime) and
        the KeyAccess the written file is read back with to verify it.
    max_bytes : int
        The filter size cap.
    writer_options : dict
        The remaining pyarrow writer options.
    """

    schema: pa.Schema
    leaves: tuple[ColumnInfo, ...]
    columns: tuple[BloomColumn, ...]
    encryption: Any
    kms_config: Any
    key_tools: WriteKeyTools
    max_bytes: int
    writer_options: dict[str, Any]


def check_setup(schema: Any, encryption: Any, kms: Any, kms_connection_config: Any, bloom_filter_options: Any,
           max_bytes: Any, writer_options: dict[str, Any]) -> WriteSetup:
    """Every check that needs no KMS call and writes nothing.

    Parameters
    ----------
    schema : pyarrow.Schema
        The table's schema.
    encryption : EncryptionConfiguration
        pyarrow's encryption options.
    kms : KmsClient or callable
        The KMS client or factory.
    kms_connection_config : KmsConnectionConfig or None
        For a factory.
    bloom_filter_options : dict or None
        pyarrow's format.
    max_bytes : int
        The filter size cap.
    writer_options : dict
        pyarrow's writer options.

    Returns
    -------
    WriteSetup
        The checked options.

    Raises
    ------
    TypeError, ValueError
        An option of the wrong type or out of range, an unknown, BOOLEAN or map column, a
        column key for a missing column.
    """
    if not isinstance(schema, pa.Schema):
        raise TypeError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    refuse_pyarrow_encryption(writer_options)
    max_bytes = _check_max_bytes(max_bytes)
    specs = bloom_specs(bloom_filter_options, max_bytes)
    config = kms_connection_config if kms_connection_config is not None else pe.KmsConnectionConfig()
    if not isinstance(config, pe.KmsConnectionConfig):
        raise TypeError("kms_connection_config must be a pyarrow.parquet.encryption.KmsConnectionConfig")
    leaves = tuple(parquet_leaves(schema, writer_options))
    _check_encryption(encryption, leaves)
    columns = bloom_columns(schema, leaves, specs)
    key_tools = WriteKeyTools(kms, config, lifetime_s(encryption))
    return WriteSetup(schema=schema, leaves=leaves, columns=columns, encryption=encryption, kms_config=config,
                      key_tools=key_tools, max_bytes=max_bytes, writer_options=dict(writer_options))
