"""Adversarial inputs for the AES-GCM module layer and encrypted Bloom filters, seeded from the
encrypted filters parquet-java wrote in encrypt_columns_and_footer_bloom_filter.parquet.encrypted,
plus the nonce guarantees (no repeat in 10^6 modules, the 2^32 invocation limit).

Invariant: mutated modules -> MalformedInputError (framing) or ModuleAuthenticationError; never a
filter different from the original, never a read or an allocation sized by an unvalidated length
prefix.
"""

from __future__ import annotations

import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.robustness_support import (DATA, INTERESTING_U32, TESTING_KEYS, BoundedReadFile, allocation_peak, examples,
                                mutated)

from secure_bloom.crypto import gcm
from secure_bloom.encrypted_filter import (COALESCED_FILTER_BYTES, HEADER_READ_BYTES, MAX_ENCRYPTED_FILTER_BYTES,
                                           decrypt_bloom_filter, encrypt_bloom_filter, read_encrypted_bloom_filter)
from secure_bloom.errors import (KeyUsageLimitError, MalformedInputError, MalformedModuleError,
                                 ModuleAuthenticationError, TruncatedModuleError)
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.crypto.modules import ModuleType, decrypt_module, encrypt_module, module_aad, read_module
from secure_bloom.parquet import KeyAccess, ParquetBloomReader

VECTOR = DATA / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
EXPECTED_ERRORS = (MalformedInputError, ModuleAuthenticationError)


def _real_filters() -> list[tuple[bytes, bytes, int, SplitBlockBloomFilter]]:
    """(module bytes, key, column ordinal, decrypted filter) of the vector's two encrypted filters."""
    data = VECTOR.read_bytes()
    out = []
    with ParquetBloomReader(VECTOR, KeyAccess(explicit=TESTING_KEYS)) as reader:
        reader.footer.require_file_aad()  # the vector is encrypted: it has a file AAD
        for chunk in reader.chunks():
            if chunk.has_bloom_filter:
                assert chunk.bloom_filter_offset is not None and chunk.bloom_filter_length is not None
                start = chunk.bloom_filter_offset
                blob = data[start:start + chunk.bloom_filter_length]
                key = TESTING_KEYS[str(chunk.key_id)]
                bf = reader.bloom_filter(0, chunk.column_ordinal)
                assert bf is not None
                out.append((blob, key, chunk.column_ordinal, bf))
    assert len(out) == 2
    return out


FILTERS = _real_filters()
with ParquetBloomReader(VECTOR, KeyAccess(explicit=TESTING_KEYS)) as _r:
    FILE_AAD = _r.footer.require_file_aad()


def _outcome(read: object) -> SplitBlockBloomFilter | None:
    try:
        return read()  # type: ignore[operator, no-any-return]
    except EXPECTED_ERRORS:
        return None


@settings(max_examples=examples(200))
@given(data=st.data())
def test_mutated_real_filter_modules_are_rejected_or_unchanged(data: st.DataObject) -> None:
    blob, key, col, original = data.draw(st.sampled_from(FILTERS), label="filter")
    bad = data.draw(mutated(blob), label="mutated")
    got = _outcome(lambda: decrypt_bloom_filter(bad, key, FILE_AAD, 0, col))
    assert got is None or (bad == blob and got == original)
    stream = BoundedReadFile(b"\0" * 7 + bad, limit=len(blob))
    got = _outcome(lambda: read_encrypted_bloom_filter(stream, 7, key, FILE_AAD, 0, col))
    assert got is None or got == original  # trailing junk is not read, so a cut-off tail may still pass
    got = _outcome(lambda: read_encrypted_bloom_filter(BoundedReadFile(bad, len(blob)), 0, key, FILE_AAD, 0, col,
                                                       length=len(blob)))
    assert got is None or got == original


@pytest.mark.parametrize("index", [0, 1])
def test_every_single_byte_change_of_a_real_filter_is_an_authentication_or_framing_error(index: int) -> None:
    blob, key, col, _ = FILTERS[index]
    rng = np.random.default_rng(index)
    for pos in range(len(blob)):
        bad = bytearray(blob)
        bad[pos] ^= int(rng.integers(1, 256))
        with pytest.raises(EXPECTED_ERRORS) as info:
            decrypt_bloom_filter(bytes(bad), key, FILE_AAD, 0, col)
        in_prefix = pos < 4 or 4 + struct.unpack_from("<I", blob)[0] <= pos < 8 + struct.unpack_from("<I", blob)[0]
        if not in_prefix:  # nonce, ciphertext or tag: exactly the opaque authentication error
            assert isinstance(info.value, ModuleAuthenticationError), pos


@settings(max_examples=examples(200))
@given(blob=st.binary(max_size=200), max_plaintext=st.none() | st.integers(0, 1 << 20),
       prefix=st.none() | st.sampled_from(INTERESTING_U32))
def test_decrypt_module_on_garbage(blob: bytes, max_plaintext: int | None, prefix: int | None) -> None:
    if prefix is not None:
        blob = struct.pack("<I", prefix) + blob
    for read in (lambda: decrypt_module(blob, b"k" * 16, b"aad", max_plaintext=max_plaintext),
                 lambda: read_module(BoundedReadFile(blob, 1 << 24), b"k" * 16, b"aad", max_plaintext=max_plaintext)):
        with pytest.raises(EXPECTED_ERRORS):
            read()


@pytest.mark.parametrize("claimed", [0x7FFFFFFF, 0x80000000, 0xFFFFFFFF])
def test_module_claiming_gigabytes_is_refused_before_allocating(claimed: int, tmp_path: Path) -> None:
    """Regression: read_module without max_plaintext called stream.read(claimed), and a real
    file object allocates the whole size up front (2 GiB for a 100-byte file)."""
    blob = struct.pack("<I", claimed) + b"x" * 100
    path = tmp_path / "module.bin"
    path.write_bytes(blob)
    with allocation_peak() as peak:
        with open(path, "rb") as f, pytest.raises(MalformedInputError, match="only 100"):
            read_module(f, b"k" * 16, b"aad")
    assert peak() < 64 << 20
    with allocation_peak() as peak:
        with pytest.raises(MalformedInputError):
            decrypt_module(blob, b"k" * 16, b"aad")
    assert peak() < 1 << 20
    stream = BoundedReadFile(blob, limit=1 << 24)
    with pytest.raises(MalformedInputError):
        read_module(stream, b"k" * 16, b"aad")
    assert stream.largest_read <= 1 << 24


def test_encrypted_filter_with_a_2_gib_bitset_prefix_reads_only_the_header() -> None:
    blob, key, col, _ = FILTERS[0]
    header_len = 4 + struct.unpack_from("<I", blob)[0]
    bad = blob[:header_len] + struct.pack("<I", 0x7FFFFFFF) + blob[header_len + 4:]
    # One speculative read of HEADER_READ_BYTES holds the header module and the bitset's prefix;
    # nothing is read (or allocated) by the prefix's 2 GiB.
    stream = BoundedReadFile(bad, limit=HEADER_READ_BYTES)
    with pytest.raises(MalformedInputError, match="2147483647"):
        read_encrypted_bloom_filter(stream, 0, key, FILE_AAD, 0, col)
    assert stream.largest_read <= HEADER_READ_BYTES


@pytest.mark.parametrize(("rg", "col", "mtype"), [(0, 1, None), (1, 0, None), (0, 0, ModuleType.BLOOM_FILTER_BITSET)])
def test_real_filter_under_another_ordinal_or_module_type_fails_authentication(rg: int, col: int,
                                                                                mtype: ModuleType | None) -> None:
    blob, key, real_col, _ = FILTERS[0]
    if mtype is None:
        with pytest.raises(ModuleAuthenticationError):
            decrypt_bloom_filter(blob, key, FILE_AAD, rg, col)
    else:  # the header module presented as a bitset module
        with pytest.raises(ModuleAuthenticationError):
            decrypt_module(blob, key, module_aad(FILE_AAD, mtype, 0, real_col))


def test_swapping_header_and_bitset_modules_between_columns_fails() -> None:
    (a, key_a, col_a, _), (b, _, _, _) = FILTERS
    head_a = 4 + struct.unpack_from("<I", a)[0]
    head_b = 4 + struct.unpack_from("<I", b)[0]
    with pytest.raises(ModuleAuthenticationError):
        decrypt_bloom_filter(a[:head_a] + b[head_b:], key_a, FILE_AAD, 0, col_a)


# ------------------------------------------------------------------------------------ nonces


@pytest.mark.slow
def test_a_million_modules_under_one_key_never_repeat_a_nonce() -> None:
    key = bytes(range(16))
    n = 1_000_000
    nonces = bytearray()
    for _ in range(n):
        nonces += encrypt_module(b"", key, b"")[4:16]
    arr = np.frombuffer(bytes(nonces), dtype="V12")
    assert len(np.unique(arr)) == n


def test_bloom_filters_encrypt_with_fresh_nonces() -> None:
    bf = SplitBlockBloomFilter(32)
    a = encrypt_bloom_filter(bf, b"k" * 16, b"file", 0, 0)
    b = encrypt_bloom_filter(bf, b"k" * 16, b"file", 0, 0)
    assert a[4:16] != b[4:16] and a != b


def test_invocation_limit_is_exact_and_thread_safe() -> None:
    """2^32 - 100 encryptions done; 8 threads racing for 40 each: exactly 100 succeed."""
    key = bytes(range(100, 132))
    gcm._COUNTER._set(key, gcm.GCM_INVOCATION_LIMIT - 100)
    done: list[int] = []
    refused: list[int] = []

    def worker() -> None:
        for _ in range(40):
            try:
                encrypt_module(b"x", key, b"")
                done.append(1)
            except KeyUsageLimitError:
                refused.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(done), len(refused)) == (100, 220)
    with pytest.raises(KeyUsageLimitError) as info:
        encrypt_bloom_filter(SplitBlockBloomFilter(32), key, b"f", 0, 0)
    assert key.hex() not in str(info.value)
    encrypt_module(b"x", bytes(range(16)), b"")  # other keys are unaffected



def _vector_filter() -> tuple[bytes, Any, Any, Any, int]:
    """(file bytes, chunk, its FilterLocation, its crypto context, data end) of the vector's first
    encrypted filter (bloom_filter_length set)."""
    from secure_bloom.parquet.file.chunk import FilterLocation

    with ParquetBloomReader(VECTOR, KeyAccess(explicit=TESTING_KEYS)) as reader:
        chunk = next(c for c in reader.column_chunks() if reader.filter_location(c) is not None)
        location = reader.filter_location(chunk)
        assert isinstance(location, FilterLocation) and location.length is not None
        return VECTOR.read_bytes(), chunk, location, reader.crypto_context(chunk), reader.tail.footer_offset


@pytest.mark.parametrize(("delta", "error", "match"), [
    (-1, TruncatedModuleError, r"bloom_filter_length \d+ is shorter than the modules"),
    (-20, TruncatedModuleError, r"bloom_filter_length \d+ is shorter than the modules"),
    (1, MalformedModuleError, r"bloom_filter_length \d+ is longer than the modules .*: 1 trailing bytes"),
    (64, MalformedModuleError, r"bloom_filter_length \d+ is longer than the modules .*: 64 trailing bytes"),
])
def test_lying_length_of_an_encrypted_filter_is_refused_after_one_read_of_that_length(
        delta: int, error: type[Exception], match: str) -> None:
    """Header and bitset modules are read together (bloom_filter_length bytes): a wrong length is
    refused before the bitset is decrypted, and never more than that length is read at once."""
    from secure_bloom.parquet.file.chunk import FilterLocation
    from secure_bloom.parquet.file.filter_io import read_chunk_filter

    data, chunk, location, context, data_end = _vector_filter()
    lie = FilterLocation(location.offset, location.length + delta)
    stream = BoundedReadFile(data, limit=max(lie.length, 1024 + 8))  # the leak check re-reads <= 1 KiB
    with pytest.raises(error, match=match):
        read_chunk_filter(stream, chunk, lie, data_end=data_end, path="v", context=context)
    assert stream.largest_read <= max(lie.length, 1024 + 8)


def test_encrypted_filter_length_beyond_the_data_region_is_refused_before_reading() -> None:
    from secure_bloom.errors import MalformedThriftError
    from secure_bloom.parquet.file.chunk import FilterLocation
    from secure_bloom.parquet.file.filter_io import read_chunk_filter

    data, chunk, location, context, data_end = _vector_filter()
    stream = BoundedReadFile(data, limit=0)
    with pytest.raises(MalformedThriftError, match="lies outside the data region"):
        read_chunk_filter(stream, chunk, FilterLocation(location.offset, data_end - location.offset + 1),
                          data_end=data_end, path="v", context=context)
    assert stream.largest_read == 0


@pytest.mark.parametrize("length", [COALESCED_FILTER_BYTES + 1, MAX_ENCRYPTED_FILTER_BYTES])
def test_large_encrypted_filter_length_reads_the_header_module_first(length: int) -> None:
    """Above COALESCED_FILTER_BYTES the header module is read alone (one bounded read) and its
    numBytes refutes a lying length before any bitset byte is read."""
    blob, key, col, _ = FILTERS[0]
    stream = BoundedReadFile(blob + bytes(1 << 10), limit=HEADER_READ_BYTES)
    with pytest.raises(MalformedModuleError, match=f"bloom_filter_length {length} does not match the modules"):
        read_encrypted_bloom_filter(stream, 0, key, FILE_AAD, 0, col, length=length)
    assert stream.largest_read <= HEADER_READ_BYTES


def test_encrypted_filter_length_above_the_largest_filter_is_refused_without_reading() -> None:
    blob, key, col, _ = FILTERS[0]
    stream = BoundedReadFile(blob, limit=0)
    with pytest.raises(MalformedModuleError, match="exceeds the largest encrypted filter"):
        read_encrypted_bloom_filter(stream, 0, key, FILE_AAD, 0, col, length=MAX_ENCRYPTED_FILTER_BYTES + 1)
    assert stream.largest_read == 0


@pytest.mark.parametrize("with_length", [True, False])
def test_encrypted_filter_cut_anywhere_is_a_truncated_module(with_length: bool) -> None:
    blob, key, col, original = FILTERS[0]
    for cut in range(0, len(blob), 7):
        stream = BoundedReadFile(blob[:cut], limit=len(blob))
        with pytest.raises(TruncatedModuleError):
            read_encrypted_bloom_filter(stream, 0, key, FILE_AAD, 0, col, length=len(blob) if with_length else None)
    assert read_encrypted_bloom_filter(BoundedReadFile(blob, len(blob)), 0, key, FILE_AAD, 0, col,
                                       length=len(blob) if with_length else None) == original


def test_encrypted_filter_reads_are_one_with_its_length_and_two_without() -> None:
    blob, key, col, original = FILTERS[0]
    for length, reads in ((len(blob), [len(blob)]), (None, [HEADER_READ_BYTES, len(blob) - HEADER_READ_BYTES])):
        stream = _CountingReads(b"\0" * 7 + blob + b"\0" * 300)
        assert read_encrypted_bloom_filter(stream, 7, key, FILE_AAD, 0, col, length=length) == original
        assert stream.reads == reads


class _CountingReads(BoundedReadFile):
    def __init__(self, data: bytes) -> None:
        super().__init__(data, limit=len(data))
        self.reads: list[int] = []

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        self.reads.append(n)
        return super().read(n)
