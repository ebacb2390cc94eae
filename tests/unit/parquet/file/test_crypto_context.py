"""The crypto layer's small parts: AES-GCM (one InvalidTag conversion) and the chunk crypto context."""

from __future__ import annotations

import io

import pytest

from secure_bloom import ChunkCryptoContext
from secure_bloom.crypto import gcm
from secure_bloom.crypto.modules import ModuleType, chunk_ordinals, module_aad
from secure_bloom.encrypted_filter import (
    decrypt_bloom_filter,
    decrypt_bloom_filter_with_length,
    encrypt_bloom_filter,
    read_encrypted_bloom_filter,
)
from secure_bloom.errors import AuthenticationError, FooterSignatureError, ModuleAuthenticationError
from secure_bloom.filter import SplitBlockBloomFilter
from support.paths import REPO_DIR

KEY = bytes(range(16))
FILE_AAD = b"prefix" + bytes(8)
PACKAGE = REPO_DIR / "secure_bloom"


def test_context_repr_never_shows_the_key() -> None:
    key = bytes.fromhex("a1b2c3d4e5f60718293a4b5c6d7e8f90")
    ctx = ChunkCryptoContext(key, FILE_AAD, 3, 7)
    text = repr(ctx) + str(ctx)
    assert text == ("ChunkCryptoContext(row_group_ordinal=3, column_ordinal=7, key=<16 bytes>, file_aad=<14 bytes>)" * 2)
    assert key.hex() not in text and repr(key) not in text


@pytest.mark.parametrize(("rg", "col", "error", "match"), [
    (-1, 0, ValueError, r"row_group_ordinal must be in 0\.\.32767, got -1"),
    (0, 32768, ValueError, r"column_ordinal must be in 0\.\.32767, got 32768"),
    (True, 0, TypeError, "row_group_ordinal must be an int, got bool"),
    (None, 0, ValueError, "row_group_ordinal is required"),
])
def test_context_validates_ordinals_when_made(rg: object, col: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        ChunkCryptoContext(KEY, FILE_AAD, rg, col)  # type: ignore[arg-type]


@pytest.mark.parametrize(("rg", "col"), [(0, 0), (1, 2), (32767, 32767), (300, 5)])
def test_chunk_ordinals_are_the_module_aad_tail(rg: int, col: int) -> None:
    assert chunk_ordinals(rg, col) == module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_HEADER, rg, col)[len(FILE_AAD) + 1:]


def test_context_takes_key_and_file_aad_of_any_bytes_type() -> None:
    ctx = ChunkCryptoContext(bytearray(KEY), memoryview(FILE_AAD).tobytes(), 1, 2)
    assert type(ctx.key) is bytes and ctx.key == KEY
    assert ChunkCryptoContext(KEY, bytearray(FILE_AAD), 1, 2).aad(ModuleType.BLOOM_FILTER_BITSET) \
        == module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_BITSET, 1, 2)
    with pytest.raises(TypeError, match="file_aad must be bytes, got str"):
        ChunkCryptoContext(KEY, "aad", 1, 2)  # type: ignore[arg-type]


def test_context_checks_the_key_when_made() -> None:
    with pytest.raises(ValueError, match="key must be 16, 24 or 32 bytes"):
        ChunkCryptoContext(bytes(15), FILE_AAD, 0, 0)


def test_context_aads_are_the_module_aads() -> None:
    ctx = ChunkCryptoContext(KEY, FILE_AAD, 2, 5)
    assert ctx.aad(ModuleType.BLOOM_FILTER_HEADER) == FILE_AAD + bytes([8, 2, 0, 5, 0])
    assert ctx.aad(ModuleType.BLOOM_FILTER_BITSET) == module_aad(FILE_AAD, ModuleType.BLOOM_FILTER_BITSET, 2, 5)
    assert ctx.aad(ModuleType.DATA_PAGE, 9) == FILE_AAD + bytes([2, 2, 0, 5, 0, 9, 0])


def test_encrypted_filter_functions_take_a_context() -> None:
    bf = SplitBlockBloomFilter(64)
    bf.insert_hash(12345)
    ctx = ChunkCryptoContext(KEY, FILE_AAD, 1, 4)
    blob = encrypt_bloom_filter(bf, context=ctx)
    assert decrypt_bloom_filter(blob, KEY, FILE_AAD, 1, 4) == bf
    assert decrypt_bloom_filter(encrypt_bloom_filter(bf, KEY, FILE_AAD, 1, 4), context=ctx) == bf
    assert decrypt_bloom_filter_with_length(blob + b"tail", context=ctx) == (bf, len(blob))
    assert read_encrypted_bloom_filter(io.BytesIO(b"xx" + blob), 2, context=ctx, length=len(blob)) == bf
    with pytest.raises(ModuleAuthenticationError, match="BLOOM_FILTER_HEADER"):
        decrypt_bloom_filter(blob, context=ChunkCryptoContext(KEY, FILE_AAD, 1, 5))


def test_encrypted_filter_refuses_a_context_and_loose_arguments_together() -> None:
    ctx = ChunkCryptoContext(KEY, FILE_AAD, 0, 0)
    with pytest.raises(TypeError, match="either context= or key"):
        encrypt_bloom_filter(SplitBlockBloomFilter(32), KEY, context=ctx)


def test_gcm_decrypt_raises_the_error_the_caller_names() -> None:
    sealed = gcm.encrypt(KEY, b"secret", b"aad")
    assert gcm.decrypt(KEY, sealed, b"aad", error=lambda: AuthenticationError("unused")) == b"secret"
    with pytest.raises(FooterSignatureError, match="^named by the caller$"):
        gcm.decrypt(KEY, sealed, b"other", error=lambda: FooterSignatureError("named by the caller"))


def test_invalid_tag_is_converted_only_in_crypto_gcm() -> None:
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                   if "except InvalidTag" in p.read_text() or "AESGCM(" in p.read_text())
    assert users == ["crypto/gcm.py"]


@pytest.mark.parametrize(("rg", "col"), [(0, 0), (2, 5), (32767, 32767), (256, 1)])
def test_context_aads_of_every_module_type_are_module_aads(rg: int, col: int) -> None:
    """The precomputed ordinals (the fast path of aad()) give exactly module_aad's bytes."""
    ctx = ChunkCryptoContext(KEY, FILE_AAD, rg, col)
    for mtype in ModuleType:
        if mtype is ModuleType.FOOTER:
            with pytest.raises(ValueError, match="no ordinals"):
                ctx.aad(mtype)
        elif mtype in (ModuleType.DATA_PAGE, ModuleType.DATA_PAGE_HEADER):
            assert ctx.aad(mtype, 3) == module_aad(FILE_AAD, mtype, rg, col, 3)
            with pytest.raises(ValueError, match="page_ordinal is required"):
                ctx.aad(mtype)
        else:
            assert ctx.aad(mtype) == ctx.aad(int(mtype)) == module_aad(FILE_AAD, mtype, rg, col)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="no page ordinal"):
                ctx.aad(mtype, 1)
