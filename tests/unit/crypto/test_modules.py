"""AES-GCM modules and AADs (SPEC_NOTES 4): framing, known answers, nonces, invocation limit."""

from __future__ import annotations

import base64
import io
import os
import struct

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

from secure_bloom.crypto import gcm
from secure_bloom.crypto.gcm import _COUNTER, GCM_INVOCATION_LIMIT, check_key
from secure_bloom.crypto.modules import (
    MODULE_OVERHEAD,
    ModuleType,
    ciphertext_length,
    decrypt_module,
    encrypt_module,
    footer_aad,
    chunk_ordinals,
    module_aad,
    module_aad_prefix,
    plaintext_length,
    read_module,
)
from secure_bloom.errors import (
    KeyUsageLimitError,
    MalformedModuleError,
    ModuleAuthenticationError,
    TruncatedModuleError,
)
from secure_bloom.spec import LENGTH_PREFIX, NONCE_LENGTH, TAG_LENGTH

FILE_AAD = b"tester" + bytes.fromhex("0102030405060708")
KEY = bytes(range(16))


def _secret_forms(key: bytes) -> list[str]:
    return [key.hex(), key.hex().upper(), base64.b64encode(key).decode(), repr(key)]


def test_module_type_values() -> None:
    assert [(t.name, int(t)) for t in ModuleType] == [
        ("FOOTER", 0), ("COLUMN_META_DATA", 1), ("DATA_PAGE", 2), ("DICTIONARY_PAGE", 3),
        ("DATA_PAGE_HEADER", 4), ("DICTIONARY_PAGE_HEADER", 5), ("COLUMN_INDEX", 6), ("OFFSET_INDEX", 7),
        ("BLOOM_FILTER_HEADER", 8), ("BLOOM_FILTER_BITSET", 9)]


def test_aad_layouts() -> None:
    assert footer_aad(FILE_AAD) == FILE_AAD + b"\x00"
    assert module_aad(FILE_AAD, ModuleType.FOOTER) == FILE_AAD + b"\x00"
    assert module_aad(FILE_AAD, ModuleType.COLUMN_META_DATA, 3, 258) == FILE_AAD + bytes.fromhex("01 0300 0201")
    assert module_aad(FILE_AAD, 8, 0, 1) == FILE_AAD + bytes.fromhex("08 0000 0100")
    assert module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_BITSET, 32767, 0) == FILE_AAD + bytes.fromhex("09 ff7f 0000")
    assert module_aad(FILE_AAD, ModuleType.DATA_PAGE, 1, 2, 3) == FILE_AAD + bytes.fromhex("02 0100 0200 0300")
    assert module_aad(FILE_AAD, ModuleType.DATA_PAGE_HEADER, 0, 0, 65 * 256) == FILE_AAD + bytes.fromhex(
        "04 0000 0000 0041")
    for t in (3, 5, 6, 7):
        assert module_aad(b"", t, 1, 1) == bytes([t]) + bytes.fromhex("0100 0100")


@given(file_aad=st.binary(max_size=40), module_type=st.sampled_from(list(ModuleType)),
       rg=st.integers(0, 32767), col=st.integers(0, 32767), page=st.integers(0, 32767))
def test_every_aad_is_module_aads_layout(file_aad: bytes, module_type: ModuleType, rg: int, col: int,
                                         page: int) -> None:
    """module_aad is the one builder: its parts (prefix, ordinals) and ChunkCryptoContext.aad
    give its bytes, for bytes and bytearray AADs and int module types alike."""
    from secure_bloom.crypto.context import ChunkCryptoContext

    if module_type is ModuleType.FOOTER:
        assert module_aad(file_aad, module_type) == module_aad_prefix(file_aad, module_type) == footer_aad(file_aad)
        return
    pages = (page,) if module_type in (ModuleType.DATA_PAGE, ModuleType.DATA_PAGE_HEADER) else ()
    expected = file_aad + bytes([module_type]) + struct.pack("<hh", rg, col) + b"".join(struct.pack("<h", p)
                                                                                         for p in pages)
    assert module_aad(file_aad, module_type, rg, col, *pages) == expected
    assert module_aad(bytearray(file_aad), int(module_type), rg, col, *pages) == expected
    assert module_aad_prefix(file_aad, module_type) + chunk_ordinals(rg, col) == expected[:len(file_aad) + 5]
    context = ChunkCryptoContext(bytes(16), file_aad, rg, col)
    assert context.aad(module_type, *pages) == expected


def test_aad_prefix_argument_checks() -> None:
    with pytest.raises(TypeError, match="file_aad must be bytes"):
        module_aad_prefix("aad", ModuleType.FOOTER)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        module_aad_prefix(b"", 10)


@pytest.mark.parametrize(("args", "exc"), [
    ((ModuleType.BLOOM_FILTER_HEADER, -1, 0), ValueError),
    ((ModuleType.BLOOM_FILTER_HEADER, 0, 32768), ValueError),
    ((ModuleType.BLOOM_FILTER_HEADER, 0, None), ValueError),
    ((ModuleType.BLOOM_FILTER_BITSET, None, 0), ValueError),
    ((ModuleType.BLOOM_FILTER_BITSET, 0, 0, 0), ValueError),   # no page ordinal for Bloom modules
    ((ModuleType.DATA_PAGE, 0, 0), ValueError),                # data pages need one
    ((ModuleType.DATA_PAGE, 0, 0, 40000), ValueError),
    ((ModuleType.FOOTER, 0), ValueError),                      # the footer has no ordinals
    ((ModuleType.COLUMN_META_DATA, True, 0), TypeError),
    ((ModuleType.COLUMN_META_DATA, 1.0, 0), TypeError),
    ((10, 0, 0), ValueError),                                  # no such module type
])
def test_aad_argument_checks(args: tuple[object, ...], exc: type[Exception]) -> None:
    with pytest.raises(exc):
        module_aad(FILE_AAD, *args)  # type: ignore[arg-type]


def test_aad_file_aad_type() -> None:
    with pytest.raises(TypeError):
        module_aad("text", ModuleType.FOOTER)  # type: ignore[arg-type]


# ----------------------------------------------------------------------- known answers


def test_gcm_spec_test_case_4_through_the_module_framing() -> None:
    """McGrew & Viega, "The Galois/Counter Mode of Operation", test case 4 (AES-128, 60-byte
    plaintext, 20-byte AAD): the module is length | IV | C | T."""
    key = bytes.fromhex("feffe9928665731c6d6a8f9467308308")
    iv = bytes.fromhex("cafebabefacedbaddecaf888")
    plaintext = bytes.fromhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                              "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
    aad = bytes.fromhex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
    ciphertext = bytes.fromhex("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                               "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091")
    tag = bytes.fromhex("5bc94fbc3221a5db94fae95ae7121a47")
    module = encrypt_module(plaintext, key, aad, _nonce=iv)
    assert module == struct.pack("<I", 12 + 60 + 16) + iv + ciphertext + tag
    assert decrypt_module(module, key, aad) == (plaintext, len(module))


@pytest.mark.parametrize("key_len", [16, 24, 32])
def test_known_answer_built_from_cryptography_primitives(key_len: int) -> None:
    """Expected bytes made with the low-level Cipher(AES, GCM) API, then opened with AESGCM."""
    key = bytes(range(key_len))
    nonce = bytes.fromhex("000102030405060708090a0b")
    plaintext = b"Bloom filter header or bitset bytes"
    aad = module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_HEADER, 0, 1)
    enc = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
    enc.authenticate_additional_data(aad)
    body = enc.update(plaintext) + enc.finalize()
    expected = struct.pack("<I", NONCE_LENGTH + len(plaintext) + TAG_LENGTH) + nonce + body + enc.tag
    module = encrypt_module(plaintext, key, aad, _nonce=nonce)
    assert module == expected
    (length,) = struct.unpack_from("<I", module)
    assert length == len(module) - LENGTH_PREFIX
    assert AESGCM(key).decrypt(module[4:16], module[16:], aad) == plaintext
    assert decrypt_module(module + b"next module", key, aad) == (plaintext, len(module))


def test_fixed_known_answer_literal() -> None:
    """A literal vector (made once with the Cipher(AES, GCM) primitives, as in the test above):
    key 00..0f, nonce 0^12, plaintext "abc", AAD FILE_AAD | 08 0000 0100."""
    module = encrypt_module(b"abc", KEY, FILE_AAD + b"\x08\x00\x00\x01\x00", _nonce=b"\x00" * 12)
    assert module.hex() == ("1f000000" "000000000000000000000000" "28b4e4"
                            "533b7f78d20e3f1ed8490d6d39b1eca5")


def test_length_prefix_arithmetic() -> None:
    assert MODULE_OVERHEAD == 32
    for n in (0, 1, 16, 1024, 1 << 20):
        assert ciphertext_length(n) == n + 28
        assert plaintext_length(ciphertext_length(n)) == n
    for n in (0, 1, 100, 4096):
        module = encrypt_module(b"\x00" * n, KEY, b"aad")
        assert len(module) == n + MODULE_OVERHEAD
        assert struct.unpack_from("<I", module)[0] == ciphertext_length(n)


def test_empty_plaintext_module() -> None:
    module = encrypt_module(b"", KEY, b"a")
    assert decrypt_module(module, KEY, b"a") == (b"", 32)


# ----------------------------------------------------------------------- decrypt failures


def test_truncation_at_every_byte() -> None:
    module = encrypt_module(b"x" * 40, KEY, b"aad")
    for cut in range(len(module)):
        with pytest.raises(TruncatedModuleError):
            decrypt_module(module[:cut], KEY, b"aad")
        with pytest.raises(TruncatedModuleError):
            read_module(io.BytesIO(module[:cut]), KEY, b"aad")


@pytest.mark.parametrize("length", [0, 1, 27])
def test_length_prefix_below_nonce_and_tag(length: int) -> None:
    raw = struct.pack("<I", length) + b"\x00" * 64
    with pytest.raises(MalformedModuleError):
        decrypt_module(raw, KEY, b"")
    with pytest.raises(MalformedModuleError):
        read_module(io.BytesIO(raw), KEY, b"")


def test_max_plaintext_and_expected_length_checked_before_reading() -> None:
    module = encrypt_module(b"y" * 100, KEY, b"")
    with pytest.raises(MalformedModuleError) as info:
        decrypt_module(module, KEY, b"", max_plaintext=99, module_type=ModuleType.BLOOM_FILTER_HEADER)
    assert not isinstance(info.value, TruncatedModuleError)
    assert "BLOOM_FILTER_HEADER" in str(info.value)
    assert decrypt_module(module, KEY, b"", max_plaintext=100)[0] == b"y" * 100

    class CountingStream(io.BytesIO):
        read_sizes: list[int] = []

        def read(self, n: int | None = -1) -> bytes:
            self.read_sizes.append(-1 if n is None else n)
            return super().read(n)

    huge = struct.pack("<I", 0x7FFFFFFF) + b"\x00" * 40
    stream = CountingStream(huge)
    with pytest.raises(MalformedModuleError):
        read_module(stream, KEY, b"", max_plaintext=1 << 20)
    assert stream.read_sizes == [4]  # only the prefix was read
    with pytest.raises(MalformedModuleError, match="expected exactly"):
        read_module(io.BytesIO(module), KEY, b"", expected_length=ciphertext_length(99))
    assert read_module(io.BytesIO(module), KEY, b"", expected_length=ciphertext_length(100)) == (
        b"y" * 100, len(module))


def test_wrong_key_aad_or_data_is_one_opaque_error() -> None:
    key2 = bytes(range(1, 17))
    aad = module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_BITSET, 0, 0)
    module = encrypt_module(b"secret bitset", KEY, aad)
    messages = set()
    for k, a, m in ((key2, aad, module), (KEY, aad[:-1] + b"\x01", module),
                    (KEY, aad, module[:20] + bytes([module[20] ^ 1]) + module[21:])):
        with pytest.raises(ModuleAuthenticationError) as info:
            decrypt_module(m, k, a, module_type=ModuleType.BLOOM_FILTER_BITSET)
        messages.add(str(info.value))
        for form in _secret_forms(k):
            assert form not in str(info.value) and form not in repr(info.value)
    assert len(messages) == 1  # never says which of key, AAD or data was wrong


@pytest.mark.parametrize("bad", [b"", b"k" * 15, b"k" * 17, b"k" * 33])
def test_key_length_checked_without_echoing_the_key(bad: bytes) -> None:
    with pytest.raises(ValueError) as info:
        check_key(bad)
    for form in _secret_forms(bad):
        if form not in ("", "b''", "''"):
            assert form not in str(info.value)
    with pytest.raises(ValueError):
        encrypt_module(b"x", bad, b"")
    with pytest.raises(TypeError):
        check_key("0123456789012345")


def test_nonce_argument_checked() -> None:
    with pytest.raises(ValueError):
        encrypt_module(b"x", KEY, b"", _nonce=b"\x00" * 11)
    with pytest.raises(ValueError):
        gcm.sign(KEY, b"x", b"", b"\x00" * 13)


@settings(max_examples=examples(50), deadline=None)
@given(st.binary(max_size=300), st.sampled_from([16, 24, 32]), st.binary(max_size=40))
def test_round_trip(plaintext: bytes, key_len: int, aad: bytes) -> None:
    key = os.urandom(key_len)
    module = encrypt_module(plaintext, key, aad)
    assert decrypt_module(memoryview(module), key, aad) == (plaintext, len(module))
    assert read_module(io.BytesIO(module + b"rest"), key, aad) == (plaintext, len(module))


def test_gcm_sign_is_nonce_and_tag() -> None:
    nonce = b"\x07" * 12
    sig = gcm.sign(KEY, b"footer", b"aad", nonce)
    assert len(sig) == 28 and sig[:12] == nonce
    assert sig[12:] == AESGCM(KEY).encrypt(nonce, b"footer", b"aad")[-16:]


# ----------------------------------------------------------------------- nonces and the counter


def test_no_repeated_nonce_in_300k_modules() -> None:
    key = os.urandom(32)
    nonces = {encrypt_module(b"", key, b"")[4:16] for _ in range(300_000)}
    assert len(nonces) == 300_000


def test_invocation_limit_refuses_the_2_pow_32_plus_first() -> None:
    key = os.urandom(16)
    other = os.urandom(16)
    try:
        _COUNTER._set(key, GCM_INVOCATION_LIMIT - 1)
        encrypt_module(b"last one", key, b"")  # the 2^32-th encryption is allowed
        with pytest.raises(KeyUsageLimitError) as info:
            encrypt_module(b"one too many", key, b"")
        for form in _secret_forms(key):
            assert form not in str(info.value)
        with pytest.raises(KeyUsageLimitError):
            encrypt_module(b"still refused", key, b"")
        assert decrypt_module(encrypt_module(b"ok", other, b""), other, b"")[0] == b"ok"
    finally:
        _COUNTER._set(key, 0)
    assert decrypt_module(encrypt_module(b"after reset", key, b""), key, b"")[0] == b"after reset"
