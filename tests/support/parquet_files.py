"""Test helper: small Parquet files written by pyarrow, plaintext or encrypted with key tools.

Encrypted files are written through ``pyarrow.parquet.encryption.CryptoFactory`` with our
:class:`~secure_bloom.kms.KeyListKms` bridged in (``pyarrow_kms_client_factory``): the key-list
semantics of parquet-java, so Spark's KeyListKmsClient opens them with the same key list.
The keys are the parquet-testing ones (SPEC_NOTES 10): test keys, never for production.
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from secure_bloom.kms import ExplicitKeys, KeyListKms, pyarrow_kms_client_factory
from secure_bloom.parquet import KeyAccess
from support.paths import VECTORS_DIR

DATA = VECTORS_DIR
TESTING_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}


def explicit_testing_keys() -> KeyAccess:
    """The parquet-testing keys (kf, kc1, kc2) as explicit keys: files whose key_metadata is the id."""
    return KeyAccess(explicit=ExplicitKeys(TESTING_KEYS))
TESTING_KEY_LIST = ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in TESTING_KEYS.items())
ROWS = 3000
ROWS_PER_GROUP = 1000
COLUMN_KEYS = {"kc1": ["ssn", "amount"], "kc2": ["ts"]}


def vector_kms() -> KeyListKms:
    return KeyListKms(TESTING_KEYS)


def sample_table(rows: int = ROWS) -> pa.Table:
    """Row i: id i, ssn text, amount i/100 (DECIMAL(12,2)), day, ts (micros, UTC), score i/2, flag."""
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "ssn": pa.array([ssn(i) for i in range(rows)]),
        "amount": pa.array([Decimal(i) / 100 for i in range(rows)], pa.decimal128(12, 2)),
        "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i % 500) for i in range(rows)], pa.date32()),
        "ts": pa.array([base + dt.timedelta(seconds=i) for i in range(rows)], pa.timestamp("us", tz="UTC")),
        "score": pa.array(np.arange(rows) * 0.5, pa.float64()),
        "flag": pa.array([i % 2 == 0 for i in range(rows)]),
    })


def ssn(i: int) -> str:
    return f"{i:03d}-{i % 97:02d}-{i:04d}"


def crypto_factory(kms: Any = None) -> pe.CryptoFactory:
    return pe.CryptoFactory(pyarrow_kms_client_factory(kms or vector_kms()))


def write_encrypted(path: Path, table: pa.Table | None = None, *, plaintext_footer: bool = False,
                    algorithm: str = "AES_GCM_V1", column_keys: dict[str, list[str]] | None = None,
                    internal_key_material: bool = True, uniform: bool = False, **write_options: Any) -> Path:
    """An encrypted pyarrow file: footer key kf, ``column_keys`` (default COLUMN_KEYS), or every
    column under the footer key (``uniform``)."""
    keys: dict[str, Any] = {"uniform_encryption": True} if uniform else {"column_keys": column_keys or COLUMN_KEYS}
    config = pe.EncryptionConfiguration(
        footer_key="kf", plaintext_footer=plaintext_footer, encryption_algorithm=algorithm,
        double_wrapping=True, internal_key_material=internal_key_material, **keys)
    props = crypto_factory().file_encryption_properties(pe.KmsConnectionConfig(), config,
                                                         parquet_file_path=str(path))
    write_options.setdefault("row_group_size", ROWS_PER_GROUP)
    pq.write_table(table if table is not None else sample_table(), path, encryption_properties=props,
                   **write_options)
    return path


def write_uniform(path: Path, table: pa.Table | None = None, *, key: bytes = TESTING_KEYS["kf"],
                  key_metadata: bytes = b"kf", aad_prefix: bytes | None = None, store_aad_prefix: bool = True,
                  **write_options: Any) -> Path:
    """A uniformly encrypted file (encrypted footer, every column under the footer key ``key``)
    written by pyarrow (``create_encryption_properties``), whose footer key_metadata is then set
    to ``key_metadata``: by default the bare key id "kf", as parquet-java writes explicit keys
    (pyarrow writes none), or key tools material wrapping ``key``. FileCryptoMetaData is outside
    every AAD: nothing is re-encrypted. ``store_aad_prefix=False`` withholds ``aad_prefix``."""
    from secure_bloom import thrift_codec

    props = pe.create_encryption_properties(key, aad_prefix=aad_prefix, store_aad_prefix=store_aad_prefix)
    write_options.setdefault("row_group_size", ROWS_PER_GROUP)
    pq.write_table(table if table is not None else sample_table(), path, encryption_properties=props, **write_options)
    data = path.read_bytes()
    assert data[-4:] == b"PARE"
    length = int.from_bytes(data[-8:-4], "little")
    tail = data[-8 - length:-8]
    crypto, used = thrift_codec.parse(thrift_codec.idl().FileCryptoMetaData, tail)
    crypto.key_metadata = key_metadata
    footer = thrift_codec.serialize(crypto) + tail[used:]
    path.write_bytes(data[:-8 - length] + footer + len(footer).to_bytes(4, "little") + b"PARE")
    return path


def read_encrypted(path: Path) -> pa.Table:
    props = crypto_factory().file_decryption_properties(pe.KmsConnectionConfig(), parquet_file_path=str(path))
    return pq.read_table(path, decryption_properties=props)


def write_plain(path: Path, table: pa.Table | None = None, **write_options: Any) -> Path:
    write_options.setdefault("row_group_size", ROWS_PER_GROUP)
    pq.write_table(table if table is not None else sample_table(), path, **write_options)
    return path
