"""Column-chunk values of a Parquet file, read by pyarrow, decrypted through our KMS clients.

pyarrow decrypts files written with key tools (internal or external key material; SPEC_NOTES 7)
through ``pyarrow.parquet.encryption.CryptoFactory``; our :class:`~secure_bloom.kms.KmsClient`
(or factory) is bridged into it with :class:`~secure_bloom.kms.PyArrowKmsClient`. pyarrow offers no
Python API for explicit keys (key_metadata that is a plain key id) or a withheld AAD prefix: such
files raise :class:`UnsupportedParquetFeatureError`.

Values come back as the leaf column's Arrow array, in the form :func:`secure_bloom.filter.
SplitBlockBloomFilter.insert` hashes exactly as Parquet writers do (INT96 timestamps are turned
back into their 12 stored bytes from a nanosecond and a second read, exact for every date;
FLOAT16 into 2 little-endian bytes, extension types into storage, view types into large_binary).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow_values import int96_rows
from ..errors import MissingKeyError, UnsupportedParquetFeatureError
from ..hashing import PhysicalType
from ..kms.client import is_kms_client
from ..kms.material import KeyMetadata
from ..types import FooterMode
from .footer import Footer, key_id_of
from .keys import KeyAccess
from .schema import ColumnInfo

__all__ = ["ArrowChunkSource", "decryption_properties", "leaf_values"]

_NANOS_PER_DAY = 86_400 * 10**9


def decryption_properties(footer: Footer, key_metadata: Iterable[bytes | None], keys: KeyAccess,
                          key_material_file: str | os.PathLike[str]) -> Any:
    """pyarrow ``FileDecryptionProperties`` for a file, or None for a plaintext file.

    ``key_metadata`` are the column keys pyarrow will need besides the footer key.
    """
    if footer.mode is FooterMode.PLAINTEXT:
        return None
    params = footer.params
    assert params is not None
    if params.supply_aad_prefix and params.aad_prefix_stored is None:
        raise UnsupportedParquetFeatureError(
            "pyarrow cannot read files whose AAD prefix is withheld (supply_aad_prefix) from Python")
    for kmd in [footer.footer_key_metadata, *key_metadata]:
        if kmd is not None and not KeyMetadata.looks_like_key_tools(bytes(kmd)):
            raise UnsupportedParquetFeatureError(
                f"key {key_id_of(kmd)!r} is an explicit key id; pyarrow can decrypt only files written with "
                "key tools (a KMS) from Python, so this file's values cannot be read")
    if keys.kms is None:
        raise MissingKeyError("reading an encrypted file's values needs a KMS client (KeyAccess(kms=...))")
    import pyarrow.parquet.encryption as pe

    from ..kms.pyarrow_adapter import PyArrowKmsClient

    kms = keys.kms

    def factory(config: Any) -> Any:
        if is_kms_client(kms):
            return PyArrowKmsClient(kms)
        return PyArrowKmsClient(kms(config.kms_instance_id or "DEFAULT", config.kms_instance_url or "DEFAULT"))

    crypto_factory = pe.CryptoFactory(factory)
    config = pe.DecryptionConfiguration(cache_lifetime=dt.timedelta(seconds=keys.cache_lifetime_s))
    return crypto_factory.file_decryption_properties(pe.KmsConnectionConfig(), config,
                                                     parquet_file_path=os.fspath(key_material_file))


def _fixed(raw: np.ndarray, width: int) -> pa.Array:
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), raw.shape[0],
                                                [None, pa.py_buffer(np.ascontiguousarray(raw).tobytes())])


def _int96_bytes(nanos: pa.Array, seconds: pa.Array) -> pa.Array:
    """The 12 stored INT96 bytes of each value, from two pyarrow reads of the same column.

    pyarrow turns INT96 into ``(julian_day - 2440588) * units_per_day + nanos_of_day / nanos_per_unit``
    in 64-bit wrap-around arithmetic: in seconds that is exact for every Julian day, in nanoseconds
    it is exact modulo 2^64 (it wraps outside 1677-2262). The day comes from the seconds, the
    nanoseconds of the day from the difference, so the bytes are the stored ones whenever the
    nanoseconds of the day are below one day (as every writer stores them). Nulls dropped.
    """
    secs = pc.drop_null(seconds).view(pa.int64()).to_numpy(zero_copy_only=False).astype(np.int64)
    wrapped = pc.drop_null(nanos).view(pa.int64()).to_numpy(zero_copy_only=False).view(np.uint64)
    days = np.floor_divide(secs, 86_400)
    with np.errstate(over="ignore"):
        of_day = wrapped - days.view(np.uint64) * np.uint64(_NANOS_PER_DAY)
    return _fixed(int96_rows(days, of_day), 12)


def _float16_bytes(values: pa.Array) -> pa.Array:
    """halffloat -> its 2 little-endian bytes (FLOAT16 is FIXED_LEN_BYTE_ARRAY(2)). Nulls dropped."""
    halves = pc.drop_null(values).to_numpy(zero_copy_only=False)
    return _fixed(np.asarray(halves, dtype="<f2").view(np.uint8).reshape(-1, 2), 2)


_ARROW_UNIT = {"millis": "ms", "micros": "us", "nanos": "ns"}


def _in_column_unit(values: pa.Array, column: ColumnInfo) -> pa.Array:
    """pyarrow restores the Arrow type of its schema (timestamp[s], time32[s], date64), which may
    differ from the unit the file stores: cast back to the stored unit before hashing."""
    typ = values.type
    unit = _ARROW_UNIT.get(column.time_unit or "")
    if pa.types.is_timestamp(typ) and unit and column.physical_type is PhysicalType.INT64 and typ.unit != unit:
        return values.cast(pa.timestamp(unit, tz=typ.tz))
    if (pa.types.is_time32(typ) or pa.types.is_time64(typ)) and unit and typ.unit != unit:
        return values.cast(pa.time32(unit) if unit == "ms" else pa.time64(unit))
    if pa.types.is_date64(typ):
        return values.cast(pa.date32())
    return values


def _hashable(values: pa.Array, column: ColumnInfo) -> pa.Array:
    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_string_view(values.type) or pa.types.is_binary_view(values.type):
        values = values.cast(pa.large_binary())  # count_distinct has no kernel for view types
    if pa.types.is_float16(values.type):
        return _float16_bytes(values)
    return _in_column_unit(values, column)


def _leaf(array: pa.ChunkedArray | pa.Array, column: ColumnInfo) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    parts = list(column.path_in_schema[1:])
    while parts:
        typ = array.type
        if pa.types.is_struct(typ):
            index = typ.get_field_index(parts[0])
            if index < 0:
                break
            array = array.flatten()[index]
            parts.pop(0)
        elif (pa.types.is_list(typ) or pa.types.is_large_list(typ)) and len(parts) >= 2 and parts[0] == "list":
            array = array.flatten()
            parts = parts[2:] if parts[1] in ("element", "item") else parts[1:]
        else:
            break
    if parts:
        raise UnsupportedParquetFeatureError(
            f"column {column.path!r}: nesting of Arrow type {array.type} is not supported for attach")
    if pa.types.is_nested(array.type):
        raise UnsupportedParquetFeatureError(f"column {column.path!r} is not a primitive leaf in Arrow ({array.type})")
    return array


def leaf_values(array: pa.ChunkedArray | pa.Array, column: ColumnInfo) -> pa.Array:
    """The leaf values of ``column`` from the array of its top-level field.

    Struct fields are followed by name (parent nulls applied); a standard three-level list
    (``<name>.list.element``) is flattened. Other nesting raises
    :class:`UnsupportedParquetFeatureError`. INT96 columns need two reads: see
    :meth:`ArrowChunkSource.values`.
    """
    return _hashable(_leaf(array, column), column)


class ArrowChunkSource:
    """Reads one leaf column's values of one row group at a time with pyarrow."""

    def __init__(self, path: str | os.PathLike[str], decryption: Any) -> None:
        import pyarrow.parquet as pq

        self._path = os.fspath(path)
        self._decryption = decryption
        self._file = pq.ParquetFile(self._path, decryption_properties=decryption, coerce_int96_timestamp_unit="ns")
        self._seconds: Any = None  # the same file with INT96 read as seconds (opened on demand)

    def _read(self, file: Any, row_group: int, column: ColumnInfo) -> pa.Array:
        table = file.read_row_group(row_group, columns=[column.path_in_schema[0]], use_threads=False)
        return _leaf(table.column(0), column)

    def values(self, row_group: int, column: ColumnInfo) -> pa.Array:
        nanos = self._read(self._file, row_group, column)
        if column.physical_type is PhysicalType.INT96:
            return _int96_bytes(nanos, self.int96_seconds(row_group, column))
        return _hashable(nanos, column)

    def int96_seconds(self, row_group: int, column: ColumnInfo) -> pa.Array:
        """An INT96 column as pyarrow reads it in seconds (exact for every stored day)."""
        import pyarrow.parquet as pq

        if self._seconds is None:
            self._seconds = pq.ParquetFile(self._path, decryption_properties=self._decryption,
                                           coerce_int96_timestamp_unit="s")
        return self._read(self._seconds, row_group, column)

    def close(self) -> None:
        self._file.close()
        if self._seconds is not None:
            self._seconds.close()

    def __enter__(self) -> ArrowChunkSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
