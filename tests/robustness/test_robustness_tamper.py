"""Tampering with real encrypted files is detected, never answered with a wrong filter.

* every byte of the tail of the encrypted-footer Bloom filter vector (FileCryptoMetaData, the
  footer module, its length, the magic) and of both its encrypted filters;
* every byte of every encrypted ColumnMetaData module of the plaintext-footer vector (read with
  the column keys only, so the footer signature cannot vouch for them, then with the footer key);
* moving a filter to another column or row group (ordinal swap), in the vector and in the
  Spark-written files (same key, same size: only the AAD ordinals differ).

"Detected" means a SecureBloomError, and an AuthenticationError wherever the byte sits inside a
GCM module's nonce, ciphertext or tag or a signed footer. A change that is not detected must not
change a single answer (the only such bytes are FileCryptoMetaData fields outside the AAD).
"""

from __future__ import annotations

import io
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.robustness_support import DATA, TESTING_KEYS, read_everything, vector

from secure_bloom import thrift_codec
from secure_bloom.errors import AuthenticationError, ModuleAuthenticationError, SecureBloomError
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.file.tail import read_tail

BLOOM = "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
PLAIN_FOOTER = "encrypt_columns_plaintext_footer.parquet.encrypted"
ALL_KEYS = KeyAccess(explicit=TESTING_KEYS)
# Column keys without the footer key: the signed footer is read unverified (explicit opt-in), so
# the encrypted ColumnMetaData modules must authenticate on their own.
COLUMN_KEYS_ONLY = KeyAccess(explicit={k: v for k, v in TESTING_KEYS.items() if k != "kf"},
                             allow_unverified_footer=True)
_WORK = Path(tempfile.mkdtemp(prefix="secure-bloom-tamper-"))


def _flipped(data: bytes, pos: int, rng: np.random.Generator) -> Path:
    bad = bytearray(data)
    bad[pos] ^= int(rng.integers(1, 256))
    path = _WORK / f"tampered-{os.getpid()}.parquet"
    path.write_bytes(bytes(bad))
    return path


def _detected_or_same(path: Path, keys: KeyAccess, original: Any) -> SecureBloomError | None:
    try:
        got = read_everything(path, keys)
    except SecureBloomError as e:
        return e
    assert got == original, "an undetected change altered an answer"
    return None


def _module_body(start: int, data: bytes) -> range:
    """Positions of nonce + ciphertext + tag of the GCM module whose length prefix is at ``start``."""
    (length,) = struct.unpack_from("<I", data, start)
    return range(start + 4, start + 4 + length)


@pytest.mark.slow
def test_every_byte_of_the_encrypted_footer_tail() -> None:
    data = vector(BLOOM)
    original = read_everything(DATA / BLOOM, ALL_KEYS)
    tail = read_tail(io.BytesIO(data), BLOOM)
    m = thrift_codec.idl()
    _, crypto_len = thrift_codec.parse(m.FileCryptoMetaData, tail.footer)
    footer_module = _module_body(tail.footer_offset + crypto_len, data)
    rng = np.random.default_rng(1)
    undetected = 0
    for pos in range(tail.footer_offset, len(data)):
        error = _detected_or_same(_flipped(data, pos, rng), ALL_KEYS, original)
        if error is None:
            undetected += 1
            assert pos < tail.footer_offset + crypto_len, f"footer byte {pos} changed undetected"
        elif pos in footer_module:
            assert isinstance(error, ModuleAuthenticationError), (pos, error)
    assert undetected < 8  # a few FileCryptoMetaData bits (e.g. GCM <-> GCM_CTR) are outside the AAD


@pytest.mark.slow
def test_every_byte_of_the_encrypted_bloom_filters() -> None:
    data = vector(BLOOM)
    original = read_everything(DATA / BLOOM, ALL_KEYS)
    with ParquetBloomReader(DATA / BLOOM, ALL_KEYS) as reader:
        spans = [(c.bloom_filter_offset, c.bloom_filter_length) for c in reader.chunks() if c.has_bloom_filter]
    assert len(spans) == 2
    rng = np.random.default_rng(2)
    for start, length in spans:
        assert start is not None and length is not None
        header = _module_body(start, data)
        bitset = _module_body(header.stop, data)
        for pos in range(start, start + length):
            error = _detected_or_same(_flipped(data, pos, rng), ALL_KEYS, original)
            assert error is not None, pos
            if pos in header or pos in bitset:
                assert isinstance(error, ModuleAuthenticationError), (pos, error)


def _encrypted_column_metadata_spans(data: bytes) -> list[tuple[int, int]]:
    tail = read_tail(io.BytesIO(data), PLAIN_FOOTER)
    md, _ = thrift_codec.parse(thrift_codec.idl().FileMetaData, tail.footer)
    spans = []
    for rg in md.row_groups:
        for cc in rg.columns:
            if cc.encrypted_column_metadata is not None:
                module = bytes(cc.encrypted_column_metadata)
                at = tail.footer.find(module)
                assert at >= 0 and tail.footer.find(module, at + 1) < 0
                spans.append((tail.footer_offset + at, len(module)))
    return spans


def test_every_byte_of_every_encrypted_column_metadata() -> None:
    data = vector(PLAIN_FOOTER)
    spans = _encrypted_column_metadata_spans(data)
    assert len(spans) == 2
    original = read_everything(DATA / PLAIN_FOOTER, COLUMN_KEYS_ONLY)
    rng = np.random.default_rng(3)
    for start, length in spans:
        body = _module_body(start, data)
        for pos in range(start, start + length):
            path = _flipped(data, pos, rng)
            error = _detected_or_same(path, COLUMN_KEYS_ONLY, original)
            assert error is not None, pos
            if pos in body:
                assert isinstance(error, ModuleAuthenticationError), (pos, error)
            # With the footer key as well, the signed footer catches the same byte first.
            with pytest.raises(SecureBloomError):
                read_everything(path, ALL_KEYS)


def test_every_byte_of_the_signed_plaintext_footer_with_the_footer_key() -> None:
    """Every byte is caught by the signature, except the footer signing key's id itself: a
    changed id names a key the caller does not have, and the reader then keeps plaintext columns
    readable with the signature reported unverified (never verified)."""
    data = vector(PLAIN_FOOTER)
    tail = read_tail(io.BytesIO(data), PLAIN_FOOTER)
    md, _ = thrift_codec.parse(thrift_codec.idl().FileMetaData, tail.footer)
    kmd = bytes(md.footer_signing_key_metadata)
    kmd_at = tail.footer_offset + tail.footer.rfind(kmd)
    original = read_everything(DATA / PLAIN_FOOTER, ALL_KEYS)
    rng = np.random.default_rng(4)
    for pos in range(tail.footer_offset, tail.footer_offset + len(tail.footer)):
        path = _flipped(data, pos, rng)
        if _detected_or_same(path, ALL_KEYS, original) is None:
            assert kmd_at <= pos < kmd_at + len(kmd), pos
            with ParquetBloomReader(path, ALL_KEYS) as reader:
                assert reader.footer.signature_verified is not True
                assert reader.describe()["footer"]["signature"] == "unverified"


def _swap(data: bytes, a: tuple[int, int], b: tuple[int, int]) -> bytes:
    (sa, la), (sb, lb) = sorted((a, b))
    assert la == lb and sa + la <= sb
    return data[:sa] + data[sb:sb + lb] + data[sa + la:sb] + data[sa:sa + la] + data[sb + lb:]


def test_swapping_the_two_filters_of_the_vector_is_detected() -> None:
    data = vector(BLOOM)
    with ParquetBloomReader(DATA / BLOOM, ALL_KEYS) as reader:
        a, b = [(c.bloom_filter_offset, c.bloom_filter_length) for c in reader.chunks() if c.has_bloom_filter]
    path = _WORK / "swapped.parquet"
    path.write_bytes(_swap(data, a, b))  # type: ignore[arg-type]
    with ParquetBloomReader(path, ALL_KEYS) as reader:
        for col in (0, 1):
            with pytest.raises(ModuleAuthenticationError):
                reader.bloom_filter(0, col)


def test_swapping_encrypted_column_metadata_between_columns_is_detected() -> None:
    """Re-point a column at another column's encrypted ColumnMetaData (footer rewritten, so read
    with the column keys only: the signature cannot help)."""
    data = vector(PLAIN_FOOTER)
    tail = read_tail(io.BytesIO(data), PLAIN_FOOTER)
    m = thrift_codec.idl()
    md, used = thrift_codec.parse(m.FileMetaData, tail.footer)
    cols = [cc for cc in md.row_groups[0].columns if cc.encrypted_column_metadata is not None]
    cols[0].encrypted_column_metadata, cols[1].encrypted_column_metadata = (cols[1].encrypted_column_metadata,
                                                                            cols[0].encrypted_column_metadata)
    footer = thrift_codec.serialize(md) + tail.footer[used:]
    path = _WORK / "swapped-metadata.parquet"
    path.write_bytes(data[:tail.footer_offset] + footer + struct.pack("<I", len(footer)) + b"PAR1")
    with pytest.raises(ModuleAuthenticationError):
        read_everything(path, COLUMN_KEYS_ONLY)
    with pytest.raises(AuthenticationError):
        read_everything(path, ALL_KEYS)


# ----------------------------------------------------------------- Spark-written files (interop)


def _filter_spans(path: Path, keys: KeyAccess) -> dict[tuple[int, str], tuple[int, int]]:
    with ParquetBloomReader(path, keys) as reader:
        return {(c.row_group, c.column): (c.bloom_filter_offset, c.bloom_filter_length)  # type: ignore[misc]
                for c in reader.chunks(with_sizes=False) if c.has_bloom_filter}


@pytest.mark.interop
@pytest.mark.parametrize("variant", ["gcm_footer", "ctr_plaintext_footer"])
@pytest.mark.parametrize(("a", "b"), [((0, "i32"), (0, "i64")),     # same key kc1, same size: column swap
                                      ((0, "s"), (1, "s")),         # same column: row group swap
                                      ((2, "f64"), (0, "nested.x"))])
def test_ordinal_swaps_in_spark_files_are_detected(spark_bloom_files: Any, variant: str,
                                                   a: tuple[int, str], b: tuple[int, str]) -> None:
    from secure_bloom.kms import KeyListKms

    src = spark_bloom_files.files[variant].path
    keys = KeyAccess(kms=KeyListKms(spark_bloom_files.key_list))
    spans = _filter_spans(src, keys)
    assert spans[a][1] == spans[b][1]
    path = _WORK / f"spark-swap-{variant}.parquet"
    path.write_bytes(_swap(src.read_bytes(), spans[a], spans[b]))
    with ParquetBloomReader(path, keys) as reader:
        for rg, column in (a, b):
            with pytest.raises(ModuleAuthenticationError):
                reader.bloom_filter(rg, column)
        untouched = next(k for k in spans if k not in (a, b))
        assert reader.bloom_filter(*untouched) is not None
