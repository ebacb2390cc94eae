"""Column-chunk values of a Parquet file, read by pyarrow, decrypted through our KMS clients.

pyarrow decrypts files written with key tools (internal or external key material; SPEC_NOTES 7)
through ``pyarrow.parquet.encryption.CryptoFactory``; our :class:`~secure_bloom.kms.KmsClient`
(or factory) is bridged into it with :class:`~secure_bloom.kms.PyArrowKmsClient`. pyarrow offers no
Python API for explicit keys (key_metadata that is a plain key id) or a withheld AAD prefix: such
files raise :class:`UnsupportedParquetFeatureError`.

Values come back as the leaf column's Arrow array, in the form :func:`secure_bloom.filter.
SplitBlockBloomFilter.insert` hashes exactly as Parquet writers do (INT96 timestamps are turned
back into their 12 raw bytes, FLOAT16 into 2 little-endian bytes, extension types into storage).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import MissingKeyError, UnsupportedParquetFeatureError
from ..hashing import PhysicalType
from ..kms.client import is_kms_client
from ..kms.material import KeyMetadata
from .footer import PLAINTEXT, Footer, key_id_of
from .keys import KeyAccess
from .schema import ColumnInfo

__all__ = ["ArrowChunkSource", "decryption_properties", "leaf_values"]

_JULIAN_EPOCH_DAY = 2440588
_NANOS_PER_DAY = 86_400 * 10**9


def decryption_properties(footer: Footer, key_metadata: Iterable[bytes | None], keys: KeyAccess,
                          key_material_file: str | os.PathLike[str]) -> Any:
    """pyarrow ``FileDecryptionProperties`` for a file, or None for a plaintext file.

    ``key_metadata`` are the column keys pyarrow will need besides the footer key.
    """
    if footer.mode == PLAINTEXT:
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


def _int96_bytes(values: pa.Array) -> pa.Array:
    """timestamp -> the 12 INT96 bytes: nanos of day (8, LE) then Julian day (4, LE). Nulls dropped."""
    nanos = pc.drop_null(values).cast(pa.timestamp("ns")).view(pa.int64()).to_numpy(zero_copy_only=False)
    days, of_day = np.divmod(nanos.astype(np.int64), _NANOS_PER_DAY)
    out = np.empty((nanos.shape[0], 12), dtype=np.uint8)
    out[:, :8] = of_day.astype("<u8").view(np.uint8).reshape(-1, 8)
    out[:, 8:] = (days + _JULIAN_EPOCH_DAY).astype("<u4").view(np.uint8).reshape(-1, 4)
    return _fixed(out, 12)


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
    if isinstance(values.type, pa.ExtensionType):
        values = values.storage
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if column.physical_type is PhysicalType.INT96 and pa.types.is_timestamp(values.type):
        return _int96_bytes(values)
    if pa.types.is_float16(values.type):
        return _float16_bytes(values)
    return _in_column_unit(values, column)


def leaf_values(array: pa.ChunkedArray | pa.Array, column: ColumnInfo) -> pa.Array:
    """The leaf values of ``column`` from the array of its top-level field.

    Struct fields are followed by name (parent nulls applied); a standard three-level list
    (``<name>.list.element``) is flattened. Other nesting raises
    :class:`UnsupportedParquetFeatureError`.
    """
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
    return _hashable(array, column)


class ArrowChunkSource:
    """Reads one leaf column's values of one row group at a time with pyarrow."""

    def __init__(self, path: str | os.PathLike[str], decryption: Any) -> None:
        import pyarrow.parquet as pq

        self._file = pq.ParquetFile(os.fspath(path), decryption_properties=decryption)

    def values(self, row_group: int, column: ColumnInfo) -> pa.Array:
        top = column.path_in_schema[0]
        table = self._file.read_row_group(row_group, columns=[top], use_threads=False)
        return leaf_values(table.column(0), column)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ArrowChunkSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
