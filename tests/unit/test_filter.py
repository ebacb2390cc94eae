"""The split-block Bloom filter (SPEC_NOTES 1): sizing, golden bytes, scalar == numpy, FPP."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from secure_bloom import sbbf_numpy, thrift_codec
from secure_bloom.errors import MalformedBitsetError, MalformedHeaderError
from secure_bloom.header import serialize_header
from secure_bloom.filter import SALT, SplitBlockBloomFilter, optimal_num_bits, optimal_num_bytes, round_num_bytes
from secure_bloom.spec import SPEC_MAX_BITSET_BYTES
from secure_bloom.types import PhysicalType
from secure_bloom.values.physical import hash_value, hash_values
from support.paths import DATA_DIR

DATA = DATA_DIR
VECTORS = DATA / "parquet-testing"
MIB = 1 << 20
PROPERTY = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
DATA_INDEX_WORDS = ["Hello", "This is", "a", "test", "How", "are you", "doing ", "today", "the quick",
                    "brown fox", "jumps", "over", "the lazy", "dog"]


# ----------------------------------------------------------------------- sizing


def _golden_rows() -> list[list[str]]:
    lines = (DATA / "parquet_java_sizing.txt").read_text().splitlines()
    return [line.split() for line in lines if line and not line.startswith("#")]


def test_golden_table_is_complete() -> None:
    rows = _golden_rows()
    assert sum(1 for r in rows if r[0] != "bytes") == 17 * 4
    assert sum(1 for r in rows if r[0] == "bytes") == 11


@pytest.mark.parametrize("row", _golden_rows(), ids=" ".join)
def test_sizing_matches_parquet_java(row: list[str]) -> None:
    """tests/data/parquet_java_sizing.txt: parquet-java 1.17.0's own answers (SizingGolden.java)."""
    if row[0] == "bytes":
        assert round_num_bytes(int(row[1]), max_bytes=128 * MIB) == int(row[2])
        return
    ndv, fpp, bits, size = int(row[0]), float(row[1]), int(row[2]), int(row[3])
    assert optimal_num_bits(ndv, fpp) == bits
    assert round_num_bytes(bits // 8, max_bytes=128 * MIB) == size
    assert optimal_num_bytes(ndv, fpp, max_bytes=128 * MIB) == size
    assert SplitBlockBloomFilter.for_ndv(ndv, fpp, max_bytes=128 * MIB).num_bytes == size


def test_spec_notes_sizes() -> None:
    """SPEC_NOTES 1 "Known sizes", as bitset bits / bytes."""
    assert optimal_num_bytes(256, 0.01) * 8 == 4096
    assert optimal_num_bytes(300, 0.01) * 8 == 4096
    # SPEC_NOTES lists (200, 0.01) -> 2048 bits: that is Arrow's rounding (1936 bits -> 256 bytes).
    # parquet-java first adds 255 bits (optimalNumOfBits = 2191, golden table), so 274 bytes
    # round to 512: a writer byte-compatible with parquet-java allocates 4096 bits.
    assert optimal_num_bits(200, 0.01) == 2191
    assert optimal_num_bytes(200, 0.01) * 8 == 4096
    assert round_num_bytes(0) == 32
    assert round_num_bytes(33) == 64
    assert round_num_bytes(99) == 128
    assert optimal_num_bytes(999_000_000, 0.01, max_bytes=128 * MIB) == 128 * MIB
    assert optimal_num_bytes(999_000_000, 0.01, max_bytes=MIB) == MIB  # parquet-java writers' default max
    assert optimal_num_bytes(10**9, 0.5, max_bytes=64) == 64


def test_sizing_arguments_checked() -> None:
    for fpp in (0.0, 1.0, -0.1, 2.0):
        with pytest.raises(ValueError):
            optimal_num_bits(10, fpp)
    with pytest.raises(ValueError):
        optimal_num_bits(-1, 0.01)
    with pytest.raises(ValueError, match="max_bytes must be in"):
        round_num_bytes(64, max_bytes=0)
    with pytest.raises(ValueError):
        round_num_bytes(64, max_bytes=256 * MIB)


@pytest.mark.parametrize("bad", [0, 16, 33, 100, 256 * MIB, -32])
def test_constructor_refuses_bad_sizes(bad: int) -> None:
    with pytest.raises(ValueError):
        SplitBlockBloomFilter(bad)


def test_constructor_refuses_non_ints() -> None:
    for bad in (True, 32.0, "32"):
        with pytest.raises(TypeError):
            SplitBlockBloomFilter(bad)  # type: ignore[arg-type]


# ----------------------------------------------------------------------- golden bytes


def test_rebuild_parquet_testing_xxhash_bin() -> None:
    data = (VECTORS / "bloom_filter.xxhash.bin").read_bytes()
    assert data[:16] == bytes.fromhex("1580101c1c00001c1c00001c1c000000")
    bf = SplitBlockBloomFilter(1024)
    assert bf.insert(["hello", "parquet", "bloom", "filter"], "BYTE_ARRAY") == 4
    assert bf.to_bytes() == data
    parsed = SplitBlockBloomFilter.from_bytes(data)
    assert parsed == bf
    for word in ("hello", "parquet", "bloom", "filter"):
        assert parsed.might_contain(word, "BYTE_ARRAY")


def test_rebuild_with_scalar_path() -> None:
    data = (VECTORS / "bloom_filter.xxhash.bin").read_bytes()
    bf = SplitBlockBloomFilter(1024)
    for word in ("hello", "parquet", "bloom", "filter"):
        bf.insert_hash(hash_value(word, "BYTE_ARRAY"))
    assert bf.to_bytes() == data


def _footer(data: bytes) -> object:
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1"
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    footer, consumed = thrift_codec.parse(thrift_codec.idl().FileMetaData, data[len(data) - 8 - length:-8])
    assert consumed == length
    return footer


@pytest.mark.parametrize(("name", "offset", "length"), [
    ("data_index_bloom_encoding_stats.parquet", 192, None),
    ("data_index_bloom_encoding_with_length.parquet", None, 2064),
])
def test_rebuild_data_index_filters(name: str, offset: int | None, length: int | None) -> None:
    """The filters parquet-mr and parquet-rs wrote, rebuilt byte for byte from the column's values."""
    data = (VECTORS / name).read_bytes()
    meta = _footer(data).row_groups[0].columns[0].meta_data  # type: ignore[attr-defined]
    assert meta.type == PhysicalType.BYTE_ARRAY
    if offset is not None:
        assert meta.bloom_filter_offset == offset
    assert meta.bloom_filter_length == length
    stored, consumed = SplitBlockBloomFilter.from_bytes(data[meta.bloom_filter_offset:], return_consumed=True)
    if length is not None:
        assert consumed == length
    rebuilt = SplitBlockBloomFilter(stored.num_bytes)
    rebuilt.insert(DATA_INDEX_WORDS, "BYTE_ARRAY")
    assert rebuilt.to_bytes() == data[meta.bloom_filter_offset:meta.bloom_filter_offset + consumed]
    assert not rebuilt.might_contain("absent value", "BYTE_ARRAY") or stored.might_contain(
        "absent value", "BYTE_ARRAY")


def test_block_and_bit_formula_by_hand() -> None:
    """SPEC_NOTES 1 written out for one hash, independent of the implementation."""
    h = 0x26C7827D889F6DA3  # XXH64("hello")
    bf = SplitBlockBloomFilter(64)  # 2 blocks
    bf.insert_hash(h)
    words = np.frombuffer(bf.bitset, dtype="<u4")
    block = ((h >> 32) * 2) >> 32
    key = h & 0xFFFFFFFF
    expected = np.zeros(16, dtype=np.uint32)
    for i in range(8):
        expected[block * 8 + i] = 1 << (((key * SALT[i]) & 0xFFFFFFFF) >> 27)
    assert words.tolist() == expected.tolist()


# ----------------------------------------------------------------------- numpy path == scalar path


def _scalar_filter(num_bytes: int, hashes: list[int]) -> SplitBlockBloomFilter:
    bf = SplitBlockBloomFilter(num_bytes)
    for h in hashes:
        bf.insert_hash(h)
    return bf


def _strategy(bf: SplitBlockBloomFilter, count: int) -> str:
    return sbbf_numpy.insert_strategy(bf.num_bytes, count)


def _numpy_filter(num_bytes: int, hashes: np.ndarray) -> SplitBlockBloomFilter:
    """The numpy fallback's insert (secure_bloom.sbbf_numpy), whichever kernel the filter runs."""
    words = np.zeros(num_bytes // 4, dtype=np.uint32)
    sbbf_numpy.insert_hashes(words, hashes)
    return SplitBlockBloomFilter.from_bitset(words.tobytes())


hashes64 = st.integers(0, 2**64 - 1)


@st.composite
def batch(draw: st.DrawFn, scatter: bool) -> tuple[int, list[int]]:
    """A filter size and hashes that select one insert strategy; few distinct hashes repeat a lot
    and small filters put many values in one block."""
    size = draw(st.sampled_from([32, 64, 128, 1024, 4096, 65536]))
    threshold = size // 32  # count * 8 >= size // 4
    if scatter:
        count = draw(st.integers(max(threshold, 1), 3000))
    else:
        count = draw(st.integers(0, max(threshold - 1, 0)))
    pool = draw(st.lists(hashes64, min_size=1, max_size=max(1, count)))
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=count, max_size=count))
    return size, [pool[i] for i in picks]


@PROPERTY
@given(batch(scatter=True))
def test_insert_scatter_equals_scalar(case: tuple[int, list[int]]) -> None:
    size, hashes = case
    bf = SplitBlockBloomFilter(size)
    assert _strategy(bf, len(hashes)) == "scatter"
    bf.insert_hashes(np.array(hashes, dtype=np.uint64))
    assert bf.bitset == _scalar_filter(size, hashes).bitset
    assert _numpy_filter(size, np.array(hashes, dtype=np.uint64)) == bf


@PROPERTY
@given(batch(scatter=False))
def test_insert_blocks_small_batches_equal_scalar(case: tuple[int, list[int]]) -> None:
    size, hashes = case
    bf = SplitBlockBloomFilter(size)
    if hashes:
        assert _strategy(bf, len(hashes)) == "blocks"
    bf.insert_hashes(np.array(hashes, dtype=np.uint64))
    assert bf.bitset == _scalar_filter(size, hashes).bitset
    assert _numpy_filter(size, np.array(hashes, dtype=np.uint64)) == bf


@settings(max_examples=examples(15), deadline=None)
@given(st.lists(hashes64, min_size=1, max_size=50), st.integers(1, 40), st.sampled_from([MIB, 2 * MIB]))
def test_insert_blocks_big_batches_equal_scalar(pool: list[int], repeats: int, size: int) -> None:
    """Filters above 512 KiB: chunks of up to 8192 values, many sharing blocks, repeats too."""
    rng = np.random.default_rng(len(pool) * 1000 + repeats)
    hashes = np.concatenate([np.array(pool * repeats, dtype=np.uint64),
                             rng.integers(0, 2**64, size=20_000, dtype=np.uint64)])
    rng.shuffle(hashes)
    bf = SplitBlockBloomFilter(size)
    assert _strategy(bf, hashes.size) == "blocks"
    bf.insert_hashes(hashes)
    assert bf == _scalar_filter(size, hashes.tolist())
    assert _numpy_filter(size, hashes) == bf


def test_insert_scatter_at_its_largest_filter() -> None:
    """512 KiB, the largest filter the scatter strategy takes, with repeats."""
    rng = np.random.default_rng(11)
    hashes = rng.integers(0, 2**64, size=20_000, dtype=np.uint64)
    hashes[:5000] = hashes[5000:10000]
    bf = SplitBlockBloomFilter(512 * 1024)
    assert _strategy(bf, hashes.size) == "scatter"
    bf.insert_hashes(hashes)
    assert bf == _scalar_filter(512 * 1024, hashes.tolist())
    assert _numpy_filter(512 * 1024, hashes) == bf
    assert _strategy(SplitBlockBloomFilter(MIB), hashes.size) == "blocks"


def test_insert_blocks_hostile_collisions_fall_back_to_ufunc_at() -> None:
    """Hundreds of distinct hashes in one block of one chunk exceed the rounds: still exact."""
    rng = np.random.default_rng(3)
    same_block = (np.uint64(0x12345678) << np.uint64(32)) | rng.integers(0, 2**32, size=500, dtype=np.uint64)
    hashes = np.concatenate([same_block, rng.integers(0, 2**64, size=500, dtype=np.uint64)])
    rng.shuffle(hashes)
    bf = SplitBlockBloomFilter(MIB)
    assert _strategy(bf, hashes.size) == "blocks"
    bf.insert_hashes(hashes)
    assert bf == _scalar_filter(MIB, hashes.tolist())
    assert _numpy_filter(MIB, hashes) == bf


@PROPERTY
@given(st.lists(hashes64, min_size=1, max_size=200), st.lists(hashes64, max_size=3000))
def test_incremental_inserts_both_strategies(first: list[int], second: list[int]) -> None:
    """A small (ufunc.at) batch then a big (scatter) batch into one filter keeps both."""
    bf = SplitBlockBloomFilter(4096)
    bf.insert_hashes(np.array(first, dtype=np.uint64))
    bf.insert_hashes(np.array(second, dtype=np.uint64))
    assert bf.bitset == _scalar_filter(4096, first + second).bitset


@PROPERTY
@given(st.lists(hashes64, max_size=500), st.lists(hashes64, max_size=500), st.sampled_from([32, 256, 2048]))
def test_check_paths_agree_and_no_false_negatives(inserted: list[int], probes: list[int], size: int) -> None:
    bf = SplitBlockBloomFilter(size)
    bf.insert_hashes(inserted)
    assert bf.check_hashes(np.array(inserted, dtype=np.uint64)).all()
    assert all(bf.check_hash(h) for h in inserted)
    got = bf.check_hashes(np.array(probes, dtype=np.uint64))
    assert got.tolist() == [bf.check_hash(h) for h in probes]


def test_large_filter_big_batch() -> None:
    """32 MiB: the "blocks" strategy with full chunks, still equal to the scalar path."""
    rng = np.random.default_rng(7)
    hashes = rng.integers(0, 2**64, size=20_000, dtype=np.uint64)
    hashes[1000:2000] = hashes[0]  # repeats
    bf = SplitBlockBloomFilter(32 * MIB)
    assert _strategy(bf, hashes.size) == "blocks"
    bf.insert_hashes(hashes)
    ref = _scalar_filter(32 * MIB, hashes.tolist())
    assert bf == ref
    assert _numpy_filter(32 * MIB, hashes) == ref
    assert bf.check_hashes(hashes).all()


def test_hash_array_dtypes() -> None:
    bf = SplitBlockBloomFilter(1024)
    bf.insert_hashes(np.array([-1, 5], dtype=np.int64))  # signed views of the same bits
    assert bf.check_hash(2**64 - 1) and bf.check_hash(5)
    assert bf.check_hashes(np.array([2**64 - 1], dtype=np.uint64)).tolist() == [True]
    bf.insert_hashes(np.empty(0, dtype=np.uint64))
    assert bf.check_hashes(np.empty(0, dtype=np.uint64)).shape == (0,)
    with pytest.raises(TypeError):
        bf.insert_hashes(np.array([1.5]))
    with pytest.raises(ValueError):
        bf.insert_hashes([2**64])
    bf.insert_hashes([])  # an empty list is an empty batch (numpy would call it float64)
    bf.insert_hashes([0, 2**63, -1])  # Python ints, exactly (numpy would make floats of these)
    assert bf.check_hashes([2**63, 2**64 - 1]).tolist() == [True, True]
    assert bf.check_hash(2**63)
    with pytest.raises(ValueError):
        bf.insert_hash(-1)
    with pytest.raises(ValueError):
        bf.check_hash(2**64)


# ----------------------------------------------------------------------- value level


@PROPERTY
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=400), st.sampled_from([32, 512, 8192]))
def test_no_false_negatives_int64(values: list[int], size: int) -> None:
    bf = SplitBlockBloomFilter(size)
    assert bf.insert(np.array(values, dtype=np.int64), "INT64") == len(values)
    assert bf.might_contain_many(values, "INT64").all()
    assert all(bf.might_contain(v, "INT64") for v in values)
    ref = SplitBlockBloomFilter(size)
    for v in values:
        ref.insert_hash(hash_value(v, "INT64"))
    assert ref == bf


@PROPERTY
@given(st.lists(st.text(max_size=50) | st.none(), max_size=300))
def test_no_false_negatives_strings_nulls_skipped(values: list[str | None]) -> None:
    bf = SplitBlockBloomFilter(256)
    present = [v for v in values if v is not None]
    assert bf.insert(values, "BYTE_ARRAY") == len(present)
    assert bf.might_contain_many(values, "BYTE_ARRAY").tolist() == [True] * len(present)
    with pytest.raises(ValueError):
        bf.might_contain(None, "BYTE_ARRAY")


@PROPERTY
@given(st.lists(hashes64, max_size=300), st.sampled_from([32, 1024]))
def test_bytes_round_trip(hashes: list[int], size: int) -> None:
    bf = SplitBlockBloomFilter(size)
    bf.insert_hashes(hashes)
    raw = bf.to_bytes()
    back = SplitBlockBloomFilter.from_bytes(raw)
    assert back == bf and back.to_bytes() == raw
    again, consumed = SplitBlockBloomFilter.from_bytes(raw + b"trailing", return_consumed=True)
    assert again == bf and consumed == len(raw)
    assert SplitBlockBloomFilter.from_bitset(bf.bitset) == bf
    copy = bf.copy()
    copy.insert_hash(12345)
    assert bf.copy() == bf


@PROPERTY
@given(st.lists(st.binary(max_size=40), max_size=300), st.lists(st.binary(max_size=40), max_size=300))
def test_union_equals_filter_of_both(a: list[bytes], b: list[bytes]) -> None:
    fa, fb, both = SplitBlockBloomFilter(512), SplitBlockBloomFilter(512), SplitBlockBloomFilter(512)
    fa.insert(a, "BYTE_ARRAY")
    fb.insert(b, "BYTE_ARRAY")
    both.insert(a + b, "BYTE_ARRAY")
    assert fa.union(fb) == both
    assert (fb | fa) == both
    assert fa.union(fb).bitset == both.bitset


def test_union_and_equality_checks() -> None:
    a = SplitBlockBloomFilter(64)
    with pytest.raises(ValueError):
        a.union(SplitBlockBloomFilter(128))
    with pytest.raises(TypeError):
        a.union(b"\x00" * 64)  # type: ignore[arg-type]
    assert a != SplitBlockBloomFilter(128)
    assert (a == object()) is False
    assert "num_bytes=64" in repr(a)
    with pytest.raises(TypeError):
        hash(a)


def test_from_bytes_strictness() -> None:
    raw = SplitBlockBloomFilter(64).to_bytes()
    with pytest.raises(MalformedBitsetError):
        SplitBlockBloomFilter.from_bytes(raw + b"\x00")
    with pytest.raises(MalformedHeaderError):
        SplitBlockBloomFilter.from_bytes(raw[:-1])
    for bad in (b"", b"\x00" * 31, b"\x00" * (SPEC_MAX_BITSET_BYTES + 1)):
        with pytest.raises(MalformedBitsetError, match="at least one 32-byte block"):
            SplitBlockBloomFilter.from_bitset(bad)


# ----------------------------------------------------------------------- statistics


def test_measured_false_positive_rate_at_10_5_bits_per_value() -> None:
    """SPEC_NOTES 1: 10.5 bits per value -> about 1 %. 200k absent values, fixed seed."""
    rng = np.random.default_rng(20240601)
    num_bytes = 256 * 1024
    n = int(num_bytes * 8 / 10.5)
    values = rng.choice(2**62, size=n, replace=False).astype(np.int64)
    bf = SplitBlockBloomFilter(num_bytes)
    bf.insert(values, "INT64")
    absent = (rng.choice(2**62, size=200_000, replace=False) + 2**62).astype(np.int64)  # disjoint range
    rate = float(bf.might_contain_many(absent, "INT64").mean())
    assert 0.005 <= rate <= 0.02
    assert abs(rate - bf.fpp_estimate(n)) < 0.002


def test_fpp_estimate_matches_spec_example() -> None:
    """SPEC_NOTES 1: 1024 blocks with 26,214 values -> about 1.26 %."""
    bf = SplitBlockBloomFilter(1024 * 32)
    assert bf.fpp_estimate(26_214) == pytest.approx(0.0126, abs=0.0001)
    assert bf.fpp_estimate(0) == 0.0
    assert bf.fpp_estimate(10**9) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        bf.fpp_estimate(-1)


def test_bits_set_counts() -> None:
    bf = SplitBlockBloomFilter(32)
    assert bf.bits_set() == 0
    bf.insert_hash(0)
    assert bf.bits_set() == 8  # one bit per word of the (only) block
    assert bf.num_blocks == 1


def test_insert_value_types_dispatch() -> None:
    bf = SplitBlockBloomFilter(1024)
    bf.insert(1.5, "DOUBLE")
    bf.insert(np.float32(2.5), PhysicalType.FLOAT)
    bf.insert([b"\x01\x02\x03"], "FIXED_LEN_BYTE_ARRAY", type_length=3)
    assert bf.might_contain(1.5, "DOUBLE")
    assert bf.might_contain(2.5, "FLOAT")
    assert bf.might_contain(b"\x01\x02\x03", "FIXED_LEN_BYTE_ARRAY", type_length=3)
    assert hash_values(1.5, "DOUBLE").tolist() == [hash_value(1.5, "DOUBLE")]


@PROPERTY
@given(st.integers(1, 40), st.lists(hashes64, max_size=2000))
def test_non_power_of_two_filters_from_files_agree(blocks: int, hashes: list[int]) -> None:
    """Files may hold any whole number of blocks: the block formula's general form, both paths."""
    bf = SplitBlockBloomFilter.from_bitset(bytes(32 * blocks))
    ref = SplitBlockBloomFilter.from_bitset(bytes(32 * blocks))
    bf.insert_hashes(np.array(hashes, dtype=np.uint64))
    for h in hashes:
        ref.insert_hash(h)
    assert bf == ref
    assert bf.check_hashes(np.array(hashes, dtype=np.uint64)).all()
    probes = [h ^ 0x5555 for h in hashes]
    assert bf.check_hashes(np.array(probes, dtype=np.uint64)).tolist() == [bf.check_hash(p) for p in probes]


def test_a_max_of_32_bytes_or_less_is_ignored_as_parquet_java_does() -> None:
    """Issue 15 item 23: BlockSplitBloomFilter honours only a maximum above 32 bytes; ndv=1000 at
    fpp 0.01 with max 32 is 2048 bytes in parquet-java (it was 32 here)."""
    assert optimal_num_bytes(1000, 0.01, max_bytes=32) == 2048
    assert optimal_num_bytes(1000, 0.01, max_bytes=1) == 2048
    assert SplitBlockBloomFilter.for_ndv(1000, 0.01, max_bytes=16).num_bytes == 2048
    assert optimal_num_bytes(1000, 0.01, max_bytes=64) == 64  # above 32 the max holds


@pytest.mark.parametrize(("num_bytes", "n"), [(32, 1), (32, 10), (32, 200), (64, 20), (96, 40), (256, 60),
                                              (1000, 300), (1024, 1500), (1 << 16, 50_000)])
def test_fpp_estimate_matches_the_measured_rate_small_and_large(num_bytes: int, n: int) -> None:
    """Issue 15 item 19: the estimate must hold for tiny filters too (a 32-byte filter holding 200
    values answers "maybe" to almost everything). Random hashes, fixed seed, 4-sigma tolerance."""
    rng = np.random.default_rng(num_bytes * 7919 + n)
    header = serialize_header(num_bytes)
    trials, probes = 24, 4000
    rates = []
    for _ in range(trials):  # the estimate is an expectation over filters: average several
        bf = SplitBlockBloomFilter.from_bytes(header + bytes(num_bytes))
        bf.insert_hashes(rng.integers(0, 2**64, size=n, dtype=np.uint64))
        rates.append(float(bf.check_hashes(rng.integers(0, 2**64, size=probes, dtype=np.uint64)).mean()))
    estimate = bf.fpp_estimate(n)
    spread = float(np.std(rates, ddof=1)) / math.sqrt(trials)
    noise = math.sqrt(max(estimate * (1 - estimate), 1e-4) / (trials * probes))
    assert abs(float(np.mean(rates)) - estimate) <= 4 * (spread + noise) + 0.001, (np.mean(rates), estimate)


@pytest.mark.parametrize("cap,expected", [(1_000_000, 524_288), (1 << 20, 1 << 20), (33, 32), (100, 64)])
def test_non_power_of_two_cap_gives_a_constructible_size(cap: int, expected: int) -> None:
    size = round_num_bytes(10**9 // 8, cap)
    assert size == expected
    SplitBlockBloomFilter(size)  # every size we hand out must be accepted by the constructor
    assert SplitBlockBloomFilter.for_ndv(10**7, 0.01, max_bytes=cap).num_bytes == expected
    assert optimal_num_bytes(10, 0.01, cap) == 32
