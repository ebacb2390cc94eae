"""Encrypted Bloom filters (SPEC_NOTES 4-6): round trips, the tamper matrix, parquet-java's file."""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable

import numpy as np
import pytest
from support.footer_decrypt import decrypt_column_metadata, decrypt_encrypted_footer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from secure_bloom.crypto.modules import ModuleType, decrypt_module, encrypt_module, module_aad
from secure_bloom.encrypted_filter import (
    bloom_filter_aads,
    decrypt_bloom_filter,
    decrypt_bloom_filter_with_length,
    encrypt_bloom_filter,
    read_encrypted_bloom_filter,
)
from secure_bloom.errors import (
    MalformedBitsetError,
    MalformedHeaderError,
    MalformedModuleError,
    ModuleAuthenticationError,
    SecureBloomError,
    TruncatedModuleError,
)
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.header import serialize_header
from support.paths import VECTORS_DIR

VECTORS = VECTORS_DIR
BLOOM_FILE = VECTORS / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
FOOTER_KEY = b"0123456789012345"
DOUBLE_KEY = b"1234567890123450"
FLOAT_KEY = b"1234567890123451"
KEY = bytes.fromhex("00112233445566778899aabbccddeeff")
FILE_AAD = b"prefix" + bytes.fromhex("a1a2a3a4a5a6a7a8")
EXPECTED_ERRORS = (ModuleAuthenticationError, MalformedModuleError, TruncatedModuleError)


def _sample(num_bytes: int = 32, values: int = 5) -> SplitBlockBloomFilter:
    bf = SplitBlockBloomFilter(num_bytes)
    bf.insert(list(range(values)), "INT64")
    return bf


def _secret_forms(key: bytes) -> list[str]:
    return [key.hex(), key.hex().upper(), base64.b64encode(key).decode(), key.decode("latin-1"), repr(key)]


Reader = Callable[[bytes], SplitBlockBloomFilter]


def _readers(key: bytes, file_aad: bytes, rg: int, col: int, length: int | None) -> dict[str, Reader]:
    return {
        "decrypt": lambda d: decrypt_bloom_filter(d, key, file_aad, rg, col),
        "with_length": lambda d: decrypt_bloom_filter_with_length(d, key, file_aad, rg, col)[0],
        "read": lambda d: read_encrypted_bloom_filter(io.BytesIO(d), 0, key, file_aad, rg, col),
        "read_length": lambda d: read_encrypted_bloom_filter(io.BytesIO(d), 0, key, file_aad, rg, col,
                                                             length=length),
    }


def _assert_refused(reader: Reader, data: bytes, key: bytes = KEY) -> None:
    """Only the library's module errors; never a filter, never another exception, no key bytes."""
    try:
        bf = reader(data)
    except EXPECTED_ERRORS as e:
        for form in _secret_forms(key):
            assert form not in str(e)
        return
    raise AssertionError(f"tampered data decrypted to a filter: {bf!r}")


# ----------------------------------------------------------------------- round trips


def test_layout() -> None:
    bf = _sample(64)
    enc = encrypt_bloom_filter(bf, KEY, FILE_AAD, 2, 3)
    assert len(enc) == (4 + 12 + 16 + 16) + (4 + 12 + 64 + 16)
    header_aad, bitset_aad = bloom_filter_aads(FILE_AAD, 2, 3)
    assert header_aad == module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_HEADER, 2, 3)
    assert bitset_aad == module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_BITSET, 2, 3)
    header, used = decrypt_module(enc, KEY, header_aad)
    assert header == serialize_header(64) and used == 48
    bitset, used2 = decrypt_module(enc[used:], KEY, bitset_aad)
    assert bitset == bf.bitset and used + used2 == len(enc)
    assert enc[4:16] != enc[52:64]  # fresh nonce per module


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([32, 64, 1024, 65536]), st.sampled_from([16, 24, 32]), st.integers(0, 32767),
       st.integers(0, 32767), st.binary(max_size=16), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_round_trip(num_bytes: int, key_len: int, rg: int, col: int, prefix: bytes, values: list[int]) -> None:
    key = os.urandom(key_len)
    file_aad = prefix + os.urandom(8)
    bf = SplitBlockBloomFilter(num_bytes)
    bf.insert(values, "INT64")
    enc = encrypt_bloom_filter(bf, key, file_aad, rg, col)
    for reader in _readers(key, file_aad, rg, col, len(enc)).values():
        assert reader(enc) == bf
    back, used = decrypt_bloom_filter_with_length(enc + b"next", key, file_aad, rg, col)
    assert back == bf and used == len(enc)
    stream = io.BytesIO(b"x" * 77 + enc + b"rest")
    assert read_encrypted_bloom_filter(stream, 77, key, file_aad, rg, col, length=len(enc)) == bf


def test_argument_checks() -> None:
    with pytest.raises(TypeError):
        encrypt_bloom_filter(b"not a filter", KEY, FILE_AAD, 0, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        encrypt_bloom_filter(_sample(), KEY, FILE_AAD, 32768, 0)
    with pytest.raises(ValueError):
        encrypt_bloom_filter(_sample(), KEY[:15], FILE_AAD, 0, 0)
    enc = encrypt_bloom_filter(_sample(), KEY, FILE_AAD, 0, 0)
    with pytest.raises(MalformedModuleError):
        read_encrypted_bloom_filter(io.BytesIO(enc), -1, KEY, FILE_AAD, 0, 0)
    with pytest.raises(MalformedModuleError):
        read_encrypted_bloom_filter(io.BytesIO(enc), 0, KEY, FILE_AAD, 0, 0, length=len(enc) - 1)
    with pytest.raises(MalformedModuleError):
        read_encrypted_bloom_filter(io.BytesIO(enc), 0, KEY, FILE_AAD, 0, 0, length=10)
    with pytest.raises(MalformedModuleError, match="trailing"):
        decrypt_bloom_filter(enc + b"\x00", KEY, FILE_AAD, 0, 0)


# ----------------------------------------------------------------------- tamper matrix


def test_flip_every_byte() -> None:
    enc = encrypt_bloom_filter(_sample(32), KEY, FILE_AAD, 0, 0)
    readers = _readers(KEY, FILE_AAD, 0, 0, len(enc))
    for i in range(len(enc)):
        for mask in (0x01, 0x80):
            bad = bytearray(enc)
            bad[i] ^= mask
            for reader in readers.values():
                _assert_refused(reader, bytes(bad))


def test_truncate_at_every_byte() -> None:
    enc = encrypt_bloom_filter(_sample(32), KEY, FILE_AAD, 0, 0)
    readers = _readers(KEY, FILE_AAD, 0, 0, len(enc))
    for cut in range(len(enc)):
        for name, reader in readers.items():
            if name == "read_length":
                continue  # a declared length that the data does not reach is checked at the module level
            with pytest.raises(EXPECTED_ERRORS):
                reader(enc[:cut])


def test_truncate_at_module_boundaries() -> None:
    enc = encrypt_bloom_filter(_sample(64), KEY, FILE_AAD, 0, 0)
    for cut in (0, 4, 16, 48 - 16, 48, 52, 64, len(enc) - 16, len(enc) - 1):
        with pytest.raises(TruncatedModuleError):
            decrypt_bloom_filter(enc[:cut], KEY, FILE_AAD, 0, 0)
        with pytest.raises(TruncatedModuleError):
            read_encrypted_bloom_filter(io.BytesIO(enc[:cut]), 0, KEY, FILE_AAD, 0, 0)


def test_swap_header_and_bitset_modules() -> None:
    enc = encrypt_bloom_filter(_sample(32), KEY, FILE_AAD, 0, 0)
    swapped = enc[48:] + enc[:48]
    for reader in _readers(KEY, FILE_AAD, 0, 0, len(enc)).values():
        _assert_refused(reader, swapped)


def test_bitset_module_of_the_same_size_from_another_chunk() -> None:
    """Modules moved between chunks of one file (same key, same size) do not authenticate."""
    a = encrypt_bloom_filter(_sample(32, 3), KEY, FILE_AAD, 0, 0)
    b = encrypt_bloom_filter(_sample(32, 9), KEY, FILE_AAD, 0, 1)
    for mixed in (a[:48] + b[48:], b[:48] + a[48:]):
        for reader in _readers(KEY, FILE_AAD, 0, 0, len(a)).values():
            _assert_refused(reader, mixed)
    assert decrypt_bloom_filter(b, KEY, FILE_AAD, 0, 1) == _sample(32, 9)


@pytest.mark.parametrize(("rg", "col"), [(1, 0), (0, 1), (1, 1), (32767, 0), (256, 0), (0, 256)])
def test_wrong_ordinals(rg: int, col: int) -> None:
    enc = encrypt_bloom_filter(_sample(), KEY, FILE_AAD, 0, 0)
    for reader in _readers(KEY, FILE_AAD, rg, col, len(enc)).values():
        _assert_refused(reader, enc)


@pytest.mark.parametrize("file_aad", [b"", FILE_AAD[:-1], FILE_AAD + b"\x00", b"other" + FILE_AAD[5:]])
def test_wrong_file_aad(file_aad: bytes) -> None:
    enc = encrypt_bloom_filter(_sample(), KEY, FILE_AAD, 0, 0)
    for reader in _readers(KEY, file_aad, 0, 0, len(enc)).values():
        _assert_refused(reader, enc)


@pytest.mark.parametrize("key", [bytes(16), KEY[::-1], KEY + bytes(8), KEY + KEY])
def test_wrong_key_never_reveals_either_key(key: bytes) -> None:
    enc = encrypt_bloom_filter(_sample(), KEY, FILE_AAD, 0, 0)
    for reader in _readers(key, FILE_AAD, 0, 0, len(enc)).values():
        with pytest.raises(ModuleAuthenticationError) as info:
            reader(enc)
        text = str(info.value) + repr(info.value)
        for form in _secret_forms(key) + _secret_forms(KEY):
            assert form not in text


def test_header_module_replaced_by_valid_header_of_another_size() -> None:
    """A correctly encrypted header that disagrees with the bitset module is refused by size."""
    header_aad, bitset_aad = bloom_filter_aads(FILE_AAD, 0, 0)
    forged = encrypt_module(serialize_header(64), KEY, header_aad) + encrypt_module(bytes(32), KEY, bitset_aad)
    for reader in _readers(KEY, FILE_AAD, 0, 0, len(forged)).values():
        with pytest.raises(MalformedModuleError):
            reader(forged)


def test_authentic_but_malformed_plaintexts() -> None:
    """Bytes the key holder encrypted but that are not a filter: header and bitset errors."""
    header_aad, bitset_aad = bloom_filter_aads(FILE_AAD, 0, 0)
    bitset = encrypt_module(bytes(32), KEY, bitset_aad)
    for header_plain in (b"", b"\x00", b"garbage!", serialize_header(32)[:-1],
                         serialize_header(32) + b"\x01", bytes.fromhex("15 40") + b"\x00" * 10):
        data = encrypt_module(header_plain, KEY, header_aad) + bitset
        for reader in _readers(KEY, FILE_AAD, 0, 0, len(data)).values():
            with pytest.raises(MalformedHeaderError):
                reader(data)
    too_big_header = encrypt_module(serialize_header(32) + bytes(2000), KEY, header_aad) + bitset
    with pytest.raises(MalformedModuleError):
        decrypt_bloom_filter(too_big_header, KEY, FILE_AAD, 0, 0)


def test_bitset_length_must_equal_num_bytes() -> None:
    header_aad, bitset_aad = bloom_filter_aads(FILE_AAD, 0, 0)
    for size in (0, 31, 33, 64):
        data = encrypt_module(serialize_header(32), KEY, header_aad) + encrypt_module(bytes(size), KEY, bitset_aad)
        for reader in _readers(KEY, FILE_AAD, 0, 0, len(data)).values():
            with pytest.raises(MalformedModuleError):
                reader(data)


def test_parquet_java_padded_header_parses_and_nonzero_padding_is_refused() -> None:
    """SPEC_NOTES 6: parquet-java encrypts its 100-byte Thrift buffer (16 bytes + 84 zeros)."""
    header_aad, bitset_aad = bloom_filter_aads(FILE_AAD, 0, 0)
    bf = _sample(32)
    bitset = encrypt_module(bf.bitset, KEY, bitset_aad)
    padded = encrypt_module(serialize_header(32) + bytes(84), KEY, header_aad) + bitset
    for reader in _readers(KEY, FILE_AAD, 0, 0, len(padded)).values():
        assert reader(padded) == bf
    for pos in (0, 41, 83):
        pad = bytearray(84)
        pad[pos] = 0x01
        bad = encrypt_module(serialize_header(32) + bytes(pad), KEY, header_aad) + bitset
        for reader in _readers(KEY, FILE_AAD, 0, 0, len(bad)).values():
            with pytest.raises(MalformedHeaderError):
                reader(bad)


# ----------------------------------------------------------------------- parquet-java's own file


@pytest.mark.parametrize(("column", "key", "values", "physical_type"), [
    (0, DOUBLE_KEY, np.arange(2000) + 0.5, "DOUBLE"),
    (1, FLOAT_KEY, (np.arange(2000) + np.float32(0.25)).astype(np.float32), "FLOAT"),
])
def test_parquet_java_encrypted_filters_are_rebuilt_byte_for_byte(
        column: int, key: bytes, values: np.ndarray, physical_type: str) -> None:
    data = BLOOM_FILE.read_bytes()
    footer = decrypt_encrypted_footer(data, FOOTER_KEY)
    assert len(footer.file_aad) == 8  # aad_file_unique only: no prefix in this file
    meta = decrypt_column_metadata(footer, 0, column, key)
    assert meta.path_in_schema == [["double_field", "float_field"][column]]
    offset, length = meta.bloom_filter_offset, meta.bloom_filter_length
    stored, used = decrypt_bloom_filter_with_length(data[offset:], key, footer.file_aad, 0, column)
    assert used == length
    assert decrypt_bloom_filter(data[offset:offset + length], key, footer.file_aad, 0, column) == stored
    with open(BLOOM_FILE, "rb") as stream:
        assert read_encrypted_bloom_filter(stream, offset, key, footer.file_aad, 0, column, length=length) == stored
    rebuilt = SplitBlockBloomFilter(stored.num_bytes)
    rebuilt.insert(values, physical_type)
    assert rebuilt.bitset == stored.bitset
    scalar = SplitBlockBloomFilter(stored.num_bytes)
    for v in values[:50]:
        assert stored.might_contain(v, physical_type)
        scalar.insert(v, physical_type)
    # The header module is parquet-java's padded form: 16 bytes of Thrift then 84 zero bytes.
    header_plain, _ = decrypt_module(data[offset:], key, module_aad(footer.file_aad, 8, 0, column))
    assert header_plain == serialize_header(stored.num_bytes) + bytes(84)
    # The other column's key or ordinal does not open it.
    other_key = FLOAT_KEY if key == DOUBLE_KEY else DOUBLE_KEY
    with pytest.raises(ModuleAuthenticationError):
        decrypt_bloom_filter_with_length(data[offset:], other_key, footer.file_aad, 0, column)
    with pytest.raises(ModuleAuthenticationError):
        decrypt_bloom_filter_with_length(data[offset:], key, footer.file_aad, 0, 1 - column)
    # Our encryption of the rebuilt filter decrypts with the same reader.
    ours = encrypt_bloom_filter(rebuilt, key, footer.file_aad, 0, column)
    assert decrypt_bloom_filter(ours, key, footer.file_aad, 0, column) == stored


def test_parquet_java_file_footer_helper_refuses_wrong_footer_key() -> None:
    data = BLOOM_FILE.read_bytes()
    with pytest.raises(ModuleAuthenticationError):
        decrypt_encrypted_footer(data, DOUBLE_KEY)
    footer = decrypt_encrypted_footer(data, FOOTER_KEY)
    with pytest.raises(ModuleAuthenticationError):
        decrypt_column_metadata(footer, 0, 0, FLOAT_KEY)


def test_every_error_is_a_secure_bloom_error() -> None:
    for exc in EXPECTED_ERRORS + (MalformedHeaderError, MalformedBitsetError):
        assert issubclass(exc, SecureBloomError)
    for exc in (MalformedModuleError, TruncatedModuleError, MalformedHeaderError, MalformedBitsetError):
        assert issubclass(exc, ValueError)
