"""The BloomFilterHeader (SPEC_NOTES 3): exact bytes, strict parsing, bounded allocation."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples
from support.robustness_support import varint

from secure_bloom import thrift_codec
from secure_bloom.errors import MalformedBitsetError, MalformedHeaderError, MalformedInputError
from secure_bloom.filter import SALT, SplitBlockBloomFilter
from secure_bloom.header import (
    BloomFilterHeaderInfo,
    parse_header,
    parse_header_plaintext,
    serialize_header,
    validate_num_bytes,
)
from secure_bloom.spec import MAX_HEADER_BYTES, SPEC_MAX_BITSET_BYTES

HEADER_1024 = bytes.fromhex("15 80 10 1c 1c 00 00 1c 1c 00 00 1c 1c 00 00 00")
UNIONS = bytes.fromhex("1c 1c 00 00 1c 1c 00 00 1c 1c 00 00 00")  # algorithm, hash, compression, STOP


def _zigzag_varint(n: int) -> bytes:
    """Thrift compact i32/i64: zigzag, then varint (kept to 70 bits so huge values stay encodable)."""
    z = (n << 1) ^ (n >> 63) if n < 0 else n << 1
    return varint(z & ((1 << 70) - 1))


def _header(num_bytes: int, unions: bytes = UNIONS) -> bytes:
    """A BloomFilterHeader with any numBytes (field 1, compact i32 = 0x15), written by hand."""
    return b"\x15" + _zigzag_varint(num_bytes) + unions


def test_header_bytes_for_1024() -> None:
    assert serialize_header(1024) == HEADER_1024
    assert _header(1024) == HEADER_1024
    assert parse_header(HEADER_1024) == (BloomFilterHeaderInfo(num_bytes=1024), 16)


@pytest.mark.parametrize("log2", range(5, 28))
def test_round_trip_every_size(log2: int) -> None:
    n = 1 << log2
    raw = serialize_header(n)
    assert raw == _header(n)
    info, consumed = parse_header(raw + b"\xff" * 5)
    assert (info.num_bytes, consumed) == (n, len(raw))
    assert (info.algorithm, info.hash, info.compression) == ("BLOCK", "XXHASH", "UNCOMPRESSED")


def test_header_matches_thrift_codec() -> None:
    m = thrift_codec.idl()
    parsed, consumed = thrift_codec.parse(m.BloomFilterHeader, HEADER_1024)
    assert parsed.numBytes == 1024 and consumed == 16
    assert thrift_codec.serialize(parsed) == HEADER_1024


@pytest.mark.parametrize("num_bytes", [0, -32, -1, 1, 31, SPEC_MAX_BITSET_BYTES + 1, 2**31 - 1, 2**40, -(2**40)])
def test_bad_num_bytes_refused(num_bytes: int) -> None:
    raw = _header(num_bytes)
    with pytest.raises(MalformedHeaderError):
        parse_header(raw)
    with pytest.raises(MalformedHeaderError):
        SplitBlockBloomFilter.from_bytes(raw + b"\x00" * 64)
    with pytest.raises(MalformedHeaderError):
        validate_num_bytes(num_bytes)
    if -(2**31) <= num_bytes < 2**31:
        with pytest.raises(MalformedHeaderError):
            serialize_header(num_bytes)


def test_num_bytes_larger_than_buffer() -> None:
    raw = _header(1024) + b"\x00" * 1023
    with pytest.raises(MalformedHeaderError, match="exceeds"):
        SplitBlockBloomFilter.from_bytes(raw)
    with pytest.raises(MalformedHeaderError):
        validate_num_bytes(64, available=63)
    assert validate_num_bytes(64, available=64) == 64


def test_non_power_of_two_multiple_of_32_is_a_valid_file_filter() -> None:
    """Readers accept any multiple of 32 (SPEC_NOTES 3); only writers use powers of two."""
    bf = SplitBlockBloomFilter.from_bytes(_header(96) + b"\x00" * 96)
    assert bf.num_bytes == 96 and bf.num_blocks == 3
    bf.insert_hash(2**64 - 1)  # lands in the last block
    assert bf.check_hash(2**64 - 1)


def test_every_truncation_point() -> None:
    full = SplitBlockBloomFilter(64)
    full.insert_hash(99)
    raw = full.to_bytes()
    for cut in range(len(raw)):
        with pytest.raises((MalformedHeaderError, MalformedBitsetError)):
            SplitBlockBloomFilter.from_bytes(raw[:cut])
        if cut < 16:
            with pytest.raises(MalformedHeaderError):
                parse_header(raw[:cut])
    assert SplitBlockBloomFilter.from_bytes(raw) == full


@pytest.mark.parametrize("trailing", [b"\x00", b"\x00" * 31, b"PAR1"])
def test_trailing_bytes(trailing: bytes) -> None:
    raw = SplitBlockBloomFilter(32).to_bytes()
    with pytest.raises(MalformedBitsetError, match="trailing"):
        SplitBlockBloomFilter.from_bytes(raw + trailing)
    bf, consumed = SplitBlockBloomFilter.from_bytes(raw + trailing, return_consumed=True)
    assert consumed == len(raw) and bf == SplitBlockBloomFilter(32)


@pytest.mark.parametrize(("name", "unions"), [
    ("unknown algorithm member", bytes.fromhex("1c 2c 00 00 1c 1c 00 00 1c 1c 00 00 00")),
    ("unknown hash member", bytes.fromhex("1c 1c 00 00 1c 2c 00 00 1c 1c 00 00 00")),
    ("unknown compression member", bytes.fromhex("1c 1c 00 00 1c 1c 00 00 1c 2c 00 00 00")),
    ("empty algorithm union", bytes.fromhex("1c 00 1c 1c 00 00 1c 1c 00 00 00")),
    ("missing compression", bytes.fromhex("1c 1c 00 00 1c 1c 00 00 00")),
    ("missing everything", b"\x00"),
    ("algorithm of the wrong type", bytes.fromhex("15 02 1c 1c 00 00 1c 1c 00 00 00")),
    ("no STOP", bytes.fromhex("1c 1c 00 00 1c 1c 00 00 1c 1c 00 00")),
])
def test_malformed_unions_and_fields(name: str, unions: bytes) -> None:
    with pytest.raises(MalformedHeaderError):
        parse_header(_header(1024, unions))
    with pytest.raises(MalformedHeaderError):
        SplitBlockBloomFilter.from_bytes(_header(1024, unions) + b"\x00" * 1024)


def test_num_bytes_of_the_wrong_type() -> None:
    as_i64 = b"\x16" + _zigzag_varint(1024) + UNIONS
    as_binary = b"\x18\x02ab" + UNIONS
    for raw in (as_i64, as_binary, b"\x00", b"\xff" * 16):
        with pytest.raises(MalformedHeaderError):
            parse_header(raw)


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=64))
def test_garbage_raises_only_the_specific_errors(garbage: bytes) -> None:
    try:
        bf = SplitBlockBloomFilter.from_bytes(garbage)
    except (MalformedHeaderError, MalformedBitsetError) as e:
        assert isinstance(e, ValueError) and isinstance(e, MalformedInputError)
    else:
        assert bf.to_bytes() == garbage  # only a real filter parses


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(0, 15), st.binary(min_size=1, max_size=8))
def test_mutated_headers_raise_only_header_errors(pos: int, patch: bytes) -> None:
    raw = bytearray(HEADER_1024 + b"\x00" * 1024)
    raw[pos:pos + len(patch)] = patch
    try:
        bf = SplitBlockBloomFilter.from_bytes(bytes(raw))
    except (MalformedHeaderError, MalformedBitsetError):
        return
    assert bf.num_bytes == len(raw) - 16 or bf.to_bytes() == bytes(raw)


def test_header_claiming_128_mib_on_a_tiny_buffer_allocates_little() -> None:
    raw = _header(SPEC_MAX_BITSET_BYTES) + b"\x00" * 64
    tracemalloc.start()
    try:
        for _ in range(20):
            with pytest.raises(MalformedHeaderError):
                SplitBlockBloomFilter.from_bytes(raw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


def test_huge_garbage_buffer_reads_only_a_bounded_prefix() -> None:
    """parse_header looks at MAX_HEADER_BYTES at most, whatever it is handed."""
    big = b"\x1c" * (8 * 1024 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(MalformedHeaderError):
            parse_header(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


def test_parquet_java_padding_accepted_and_nothing_else() -> None:
    """SPEC_NOTES 6: a decrypted parquet-java header is 16 bytes of Thrift + 84 zero bytes."""
    padded = HEADER_1024 + b"\x00" * 84
    assert parse_header_plaintext(padded).num_bytes == 1024
    assert parse_header_plaintext(HEADER_1024).num_bytes == 1024
    for i in range(16, 100):
        bad = bytearray(padded)
        bad[i] = 1
        with pytest.raises(MalformedHeaderError, match="padding"):
            parse_header_plaintext(bytes(bad))
    with pytest.raises(MalformedHeaderError):
        parse_header_plaintext(HEADER_1024 + b"\x00" * MAX_HEADER_BYTES)
    with pytest.raises(MalformedHeaderError):
        parse_header_plaintext(HEADER_1024[:-1])


@pytest.mark.parametrize("num_bytes", [33, 63, 1000, 1001, 31_250 * 32 + 7])
def test_num_bytes_not_a_multiple_of_32_is_read_as_parquet_java_reads_it(num_bytes: int) -> None:
    """Issue 15 item 23 (SPEC_NOTES 3): parquet-java writes numBytes = parquet.bloom.filter.max.bytes
    unrounded (e.g. 1000) and indexes floor(numBytes / 32) blocks; the tail bytes are kept as stored,
    so the filter re-serialises byte for byte."""
    rng = np.random.default_rng(num_bytes)
    bitset = rng.integers(0, 256, size=num_bytes, dtype=np.uint8).tobytes()
    raw = _header(num_bytes) + bitset
    bf = SplitBlockBloomFilter.from_bytes(raw)
    z = num_bytes // 32
    assert (bf.num_bytes, bf.num_blocks) == (num_bytes, z)
    assert bf.to_bytes() == raw and bf.copy() == bf
    words = np.frombuffer(bitset[:z * 32], dtype="<u4").reshape(z, 8)
    hashes = rng.integers(0, 2**64, size=2000, dtype=np.uint64)

    def java_find(h: int) -> bool:  # findHash, written out: block ((h >>> 32) * numBlocks) >> 32
        block = ((h >> 32) * z) >> 32
        key = h & 0xFFFFFFFF
        return all(int(words[block, i]) >> (((key * salt) & 0xFFFFFFFF) >> 27) & 1 for i, salt in enumerate(SALT))

    assert bf.check_hashes(hashes).tolist() == [java_find(int(h)) for h in hashes]
    empty = SplitBlockBloomFilter.from_bytes(_header(num_bytes) + b"\x00" * num_bytes)
    empty.insert_hashes(hashes)
    scalar = SplitBlockBloomFilter.from_bytes(_header(num_bytes) + b"\x00" * num_bytes)
    for h in hashes[:300]:
        scalar.insert_hash(int(h))
    assert bool(empty.check_hashes(hashes).all()) and bool(scalar.check_hashes(hashes[:300]).all())
    assert empty.bitset[z * 32:] == b"\x00" * (num_bytes % 32)  # the tail is never written
    assert scalar.bitset[:z * 32] == _scalar_reference(hashes[:300], z)


def _scalar_reference(hashes: np.ndarray, z: int) -> bytes:
    words = np.zeros((z, 8), dtype="<u4")
    for h in map(int, hashes):
        block, key = ((h >> 32) * z) >> 32, h & 0xFFFFFFFF
        for i, salt in enumerate(SALT):
            words[block, i] |= np.uint32(1 << (((key * salt) & 0xFFFFFFFF) >> 27))
    return words.tobytes()
