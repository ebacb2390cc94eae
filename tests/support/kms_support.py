"""Shared helpers of the key-management tests (tests/*/test_kms_*.py, tests/unit/test_key_material.py).

Holds the parquet-testing key facts (SPEC_NOTES 10), a counting wrapper around a real KMS client
(a labelled test double: its only job is counting calls), a settable clock for cache-lifetime
tests, and the few lines that decrypt a "PARE" file's footer and a column's ColumnMetaData so a
test can prove an unwrapped data key is the right one.
"""

from __future__ import annotations

from collections.abc import Callable

import base64
import struct
import threading
from dataclasses import dataclass
from typing import Any

from secure_bloom import thrift_codec
from secure_bloom.crypto.modules import ModuleType, decrypt_module, footer_aad, module_aad
from support.paths import DATA_DIR, REPO_DIR

DATA = DATA_DIR
PARQUET_TESTING = DATA / "parquet-testing"
EXTERNAL_JAVA_FILE = PARQUET_TESTING / "external_key_material_java.parquet.encrypted"
EXTERNAL_JAVA_SIDECAR = PARQUET_TESTING / "_KEY_MATERIAL_FOR_external_key_material_java.parquet.encrypted.json"
REPO = REPO_DIR
DEV_KEY_LIST = REPO / "keys" / "dev-key-list.txt"

#: The parquet-testing master keys (SPEC_NOTES 10): ASCII strings used as AES-128 keys.
PARQUET_TESTING_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}


def key_list_text(keys: dict[str, bytes]) -> str:
    """``"id:base64, id:base64"`` as parquet.encryption.key.list spells it."""
    return ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in keys.items())


class CountingKms:
    """TEST DOUBLE (call counter): delegates every call to a real KMS client and counts them."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.wraps = 0
        self.unwraps = 0
        self._lock = threading.Lock()

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        with self._lock:
            self.wraps += 1
        return str(self.real.wrap_key(key_bytes, master_key_identifier))

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        with self._lock:
            self.unwraps += 1
        return bytes(self.real.unwrap_key(wrapped_key, master_key_identifier))

    def __repr__(self) -> str:
        return f"CountingKms({self.real!r})"


class SettableClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class DecryptedFooter:
    file_aad: bytes
    footer_key_metadata: bytes
    metadata: Any  # FileMetaData

    def _with_column_key(self) -> dict[str, tuple[int, Any]]:
        """Column path -> (ordinal, EncryptionWithColumnKey) for columns with their own key."""
        out = {}
        for ordinal, chunk in enumerate(self.metadata.row_groups[0].columns):
            with_key = chunk.crypto_metadata.ENCRYPTION_WITH_COLUMN_KEY if chunk.crypto_metadata else None
            if with_key is not None:
                out[".".join(with_key.path_in_schema)] = (ordinal, with_key)
        return out

    def column_key_metadata(self) -> dict[str, bytes]:
        """Column path -> key_metadata for columns with their own key (row group 0)."""
        return {path: bytes(with_key.key_metadata) for path, (_, with_key) in self._with_column_key().items()}

    def column_metadata(self, column: str, key: bytes) -> Any:
        """Decrypt the ColumnMetaData module (type 1, row group 0) of ``column`` with ``key``."""
        ordinal = self._with_column_key()[column][0]
        aad = module_aad(self.file_aad, ModuleType.COLUMN_META_DATA, 0, ordinal)
        module = bytes(self.metadata.row_groups[0].columns[ordinal].encrypted_column_metadata)  # length-prefixed
        plaintext, _ = decrypt_module(module, key, aad, module_type=ModuleType.COLUMN_META_DATA)
        return thrift_codec.parse(thrift_codec.idl().ColumnMetaData, plaintext)[0]


def footer_key_metadata(data: bytes) -> bytes:
    """FileCryptoMetaData.key_metadata of an encrypted-footer file (no key needed)."""
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    crypto, _ = thrift_codec.parse(thrift_codec.idl().FileCryptoMetaData, data[-8 - length:-8])
    return bytes(crypto.key_metadata)


def decrypt_footer(data: bytes, footer_key: bytes) -> DecryptedFooter:
    """FileCryptoMetaData | footer module | len | "PARE": decrypt the footer (AAD file_aad|0x00)."""
    assert data[-4:] == b"PARE", "not an encrypted-footer file"
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    tail = data[-8 - length:-8]
    m = thrift_codec.idl()
    crypto, used = thrift_codec.parse(m.FileCryptoMetaData, tail)
    algorithm = crypto.encryption_algorithm.AES_GCM_V1 or crypto.encryption_algorithm.AES_GCM_CTR_V1
    file_aad = bytes(algorithm.aad_prefix or b"") + bytes(algorithm.aad_file_unique)
    plaintext, _ = decrypt_module(tail[used:], footer_key, footer_aad(file_aad), module_type=ModuleType.FOOTER)
    return DecryptedFooter(file_aad, bytes(crypto.key_metadata), thrift_codec.parse(m.FileMetaData, plaintext)[0])


#: Liveness bound for KMS calls expected to fail: far above timeout x attempts. Not a performance
#: assertion: it only turns a hang into a test failure.
NOT_A_HANG_S = 60.0


def call_outcome(call: Callable[[], object]) -> BaseException | None:
    """Run ``call`` in a thread; the exception it raised, or None. Fails the test if it hangs."""
    box: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as e:  # noqa: BLE001 - reported to the test
            box[0] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(NOT_A_HANG_S)
    assert not thread.is_alive(), "the call hung"
    return box[0]
