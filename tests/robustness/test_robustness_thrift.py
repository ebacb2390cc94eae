"""Adversarial inputs for the Thrift layer: FileMetaData, ColumnMetaData, FileCryptoMetaData and
the Bloom filter header, seeded from every real footer in tests/data/parquet-testing (plaintext,
signed, and decrypted encrypted footers) and mutated the way a fuzzer does.

Invariant: any bytes -> a parsed structure or the library's MalformedThriftError (the header:
MalformedHeaderError); never another exception, never a hang, never an allocation beyond what the
bytes given can justify.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.kms_support import call_outcome
from support.thrift_backends import assert_decoders_agree
from support.robustness_support import PARQUET_VECTORS, DATA, TESTING_KEYS, allocation_peak, examples, mutated, varint, vector

from secure_bloom import thrift_codec
from secure_bloom.errors import MalformedHeaderError, MalformedThriftError
from secure_bloom.header import parse_header, parse_header_plaintext, serialize_header
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.file.tail import read_tail

M = thrift_codec.idl()


def _seeds() -> dict[str, list[bytes]]:
    """Real Thrift bytes per structure, from every vector (encrypted footers decrypted)."""
    out: dict[str, list[bytes]] = {"FileMetaData": [], "FileCryptoMetaData": [], "ColumnMetaData": []}
    keys = KeyAccess(explicit=TESTING_KEYS, aad_prefix=None)
    for name in PARQUET_VECTORS:
        with open(DATA / name, "rb") as f:
            tail = read_tail(f, name)
        if tail.encrypted_footer:
            crypto, used = thrift_codec.parse(M.FileCryptoMetaData, tail.footer)
            out["FileCryptoMetaData"].append(tail.footer[:used])
        try:
            with ParquetBloomReader(DATA / name, keys) as reader:
                out["FileMetaData"].append(reader.footer.metadata_thrift)
                for rg in reader.footer.metadata.row_groups:
                    for cc in rg.columns:
                        if cc.meta_data is not None:
                            out["ColumnMetaData"].append(thrift_codec.serialize(cc.meta_data))
        except MalformedThriftError:  # pragma: no cover - every vector opens
            raise
    return out


SEEDS = _seeds()
HEADER_SEEDS = [serialize_header(n) for n in (32, 1024, 2048, 1 << 20, 128 << 20)] + [
    vector("bloom_filter.xxhash.bin")[:16]]


def test_seed_corpus_is_real(thrift_backend: str) -> None:
    assert len(SEEDS["FileMetaData"]) == len(PARQUET_VECTORS)
    assert len(SEEDS["FileCryptoMetaData"]) >= 4
    assert len(SEEDS["ColumnMetaData"]) >= 10
    for name, seeds in SEEDS.items():
        for seed in seeds:
            _, used = thrift_codec.parse(getattr(M, name), seed)
            assert used == len(seed)


def _parse_or_malformed(cls_name: str, data: bytes) -> None:
    try:
        _, used = thrift_codec.parse(getattr(M, cls_name), data)
    except MalformedThriftError:
        return
    assert 0 < used <= len(data)


@pytest.mark.parametrize("cls_name", ["FileMetaData", "FileCryptoMetaData", "ColumnMetaData"])
@settings(max_examples=examples(150))
@given(data=st.data())
def test_mutated_real_structures_raise_only_malformed_thrift(thrift_backend: str, cls_name: str,
                                                             data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(SEEDS[cls_name]), label="seed")
    blob = data.draw(mutated(seed), label="mutated")
    _parse_or_malformed(cls_name, blob)


def test_decoders_agree_on_every_seed() -> None:
    """Every real structure (encrypted footers decrypted) parses to the same object with both decoders."""
    for name, seeds in SEEDS.items():
        for seed in seeds:
            assert assert_decoders_agree(getattr(M, name), seed)[2] == len(seed)


@pytest.mark.parametrize("cls_name", ["FileMetaData", "FileCryptoMetaData", "ColumnMetaData"])
@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_decoders_agree_on_mutated_and_confused_real_structures(cls_name: str, data: st.DataObject) -> None:
    """Native and Python decoders: the same object and count, or the same error class and message."""
    seed = data.draw(st.sampled_from([s for v in SEEDS.values() for s in v]), label="seed")
    blob = data.draw(st.one_of(mutated(seed), st.integers(0, len(seed)).map(lambda i: seed[i:]),
                               st.integers(0, len(seed)).map(lambda i: seed[:i])), label="blob")
    assert_decoders_agree(getattr(M, cls_name), blob)


@pytest.mark.parametrize("cls_name", ["FileMetaData", "FileCryptoMetaData", "ColumnMetaData", "RowGroup",
                                      "ColumnChunk", "SchemaElement", "BloomFilterHeader"])
@settings(max_examples=examples(100))
@given(blob=st.binary(max_size=512))
def test_random_bytes_raise_only_malformed_thrift(thrift_backend: str, cls_name: str, blob: bytes) -> None:
    _parse_or_malformed(cls_name, blob)


@pytest.mark.parametrize("cls_name", ["FileMetaData", "ColumnMetaData"])
@settings(max_examples=examples(100))
@given(data=st.data())
def test_cross_structure_confusion(thrift_backend: str, cls_name: str, data: st.DataObject) -> None:
    """Bytes of one real structure parsed as another (a footer offset pointing at the wrong place)."""
    other = data.draw(st.sampled_from([s for k, v in SEEDS.items() if k != cls_name for s in v]))
    start = data.draw(st.integers(0, len(other) - 1))
    _parse_or_malformed(cls_name, other[start:])


@settings(max_examples=examples(200))
@given(data=st.data())
def test_mutated_headers_raise_only_header_errors(thrift_backend: str, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(HEADER_SEEDS))
    blob = data.draw(mutated(seed))
    for parse in (parse_header, parse_header_plaintext):
        try:
            parse(blob)
        except MalformedHeaderError:
            pass


def test_millions_of_empty_list_elements_are_refused_without_the_memory(thrift_backend: str) -> None:
    """Regression: each 1-byte element became a ~170-byte Python object, so a 256 MiB plaintext
    footer of empty SchemaElements needed ~40 GiB (and ~15 min). A per-parse element budget
    refuses it while reading the list header."""
    n = thrift_codec.MAX_COLLECTION_ELEMENTS + 1
    blob = b"\x15\x02" + b"\x19\xfc" + varint(n) + b"\x00" * n + b"\x00"
    with allocation_peak() as peak:
        with pytest.raises(MalformedThriftError, match="collection elements"):
            thrift_codec.parse(M.FileMetaData, blob)
    assert peak() < 2 * len(blob) + (16 << 20)


def test_element_budget_counts_every_collection_of_a_parse(thrift_backend: str) -> None:
    half = thrift_codec.MAX_COLLECTION_ELEMENTS // 2 + 1
    # FileMetaData: 5: list<KeyValue> key_value_metadata twice (duplicate field ids are legal Thrift).
    elements = varint(half) + b"\x00" * half
    blob = b"\x15\x02" + b"\x49\xfc" + elements + b"\x09\x0a\xfc" + elements + b"\x00"
    with pytest.raises(MalformedThriftError, match="collection elements"):
        thrift_codec.parse(M.FileMetaData, blob)


@pytest.mark.parametrize(("declared", "error"), [
    (1 << 20, "truncated"), (0x7FFFFFFF, "truncated"), (1 << 31, "truncated"),
    (1 << 40, "size varint at offset 3 is longer than 5 bytes"),
    ((1 << 63) - 1, "size varint at offset 3 is longer than 5 bytes")])
def test_huge_declared_binary_is_refused_before_allocating(thrift_backend: str, declared: int,
                                                           error: str) -> None:
    # FileMetaData 6: created_by (string) claiming ``declared`` bytes in a 12-byte buffer.
    blob = b"\x15\x02" + b"\x48" + varint(declared) + b"abc"
    with allocation_peak() as peak:
        with pytest.raises(MalformedThriftError, match=error):
            thrift_codec.parse(M.FileMetaData, blob)
    assert peak() < 1 << 20


@pytest.mark.parametrize("declared", [1 << 20, 0x7FFFFFFF, 1 << 32])
def test_huge_declared_list_is_refused_before_allocating(thrift_backend: str, declared: int) -> None:
    blob = b"\x15\x02" + b"\x19\xfc" + varint(declared) + b"\x00" * 8
    with allocation_peak() as peak:
        with pytest.raises(MalformedThriftError):
            thrift_codec.parse(M.FileMetaData, blob)
    assert peak() < 1 << 20


def test_deep_nesting_is_refused(thrift_backend: str) -> None:
    # FileMetaData 2: list<SchemaElement> of one element whose unknown field 99 is a struct
    # nested 10,000 deep.
    depth = 10_000
    nested = (b"\x0c\x01" * depth) + b"\x00" * depth
    blob = b"\x15\x02\x19\x1c" + nested + b"\x00\x00"
    with pytest.raises(MalformedThriftError, match="nested deeper than 64"):
        thrift_codec.parse(M.FileMetaData, blob)


_UNKNOWN_99 = b"\x15\x02" + b"\x09" + varint(198)  # version, then field 99 (long form) of type list


@pytest.mark.parametrize("nested", [
    b"\x19" * 100_000,                        # list<list<list<...>>>, one element each
    b"\x1b\x99" * 100_000,                    # map<list, list> of one entry, keys nested
    b"\x1c" + b"\x19\x1c" * 100_000,          # list<struct{1: list<struct{1: ...}>}>
])
def test_deep_collection_nesting_in_a_skipped_field_is_refused(thrift_backend: str, nested: bytes) -> None:
    """Regression (issue 15 item 7): nesting of lists and maps inside an unknown field was bounded
    only by Python's recursion limit (RecursionError, caught late and named after the exception)."""
    with pytest.raises(MalformedThriftError, match="nested deeper than 64"):
        thrift_codec.parse(M.FileMetaData, _UNKNOWN_99 + nested)


_RUN = b"\xff" * (1 << 20)


@pytest.mark.parametrize(("blob", "error"), [
    (b"\x15" + _RUN, "i32 varint at offset 1 is longer than 5 bytes"),             # version
    (b"\x15\x02\x26" + _RUN, "i64 varint at offset 3 is longer than 10 bytes"),   # num_rows
    (b"\x15\x02\x48" + _RUN, "size varint at offset 3 is longer than 5 bytes"),   # created_by
    (b"\x15\x02\x05" + _RUN, "field id varint at offset 3 is longer than 3 bytes"),
    (b"\x15\x02\x06" + varint(198) + _RUN, "i64 varint at offset 5 is longer than 10 bytes"),  # skipped
    (_UNKNOWN_99 + b"\x15" + _RUN, "i32 varint at offset 6 is longer than 5 bytes"),  # skipped list<i32>
])
def test_overlong_varint_is_refused_at_its_start(thrift_backend: str, blob: bytes, error: str) -> None:
    """Regression (issue 15 item 7): thriftpy2 decodes a varint of any length, shifting a Python
    int by 7 more bits per byte, so a 1 MiB run of 0xFF took 24 s (2 MiB: 171 s) and then failed
    as "truncated". The offset in the message shows the parser stopped at the varint's start."""
    with pytest.raises(MalformedThriftError, match=error):
        thrift_codec.parse(M.FileMetaData, blob + b"\x00")


@pytest.mark.parametrize(("blob", "error"), [
    (b"\x15" + varint(1 << 32), r"i32 at offset 1 is out of the i32 range \(2147483648\)"),
    (b"\x15" + varint((1 << 32) + 1), r"i32 at offset 1 is out of the i32 range \(-2147483649\)"),
    (b"\x15\x02\x05" + varint(1 << 16) + b"\x02", r"field id at offset 3 is out of the i16 range \(32768\)"),
])
def test_integer_outside_its_type_is_malformed(thrift_backend: str, blob: bytes, error: str) -> None:
    """A 5-byte varint holds 35 bits: an i32 field holding more is malformed, not a Python int."""
    with pytest.raises(MalformedThriftError, match=error):
        thrift_codec.parse(M.FileMetaData, blob + b"\x00")


def test_row_group_ordinal_beyond_int16_is_malformed(thrift_backend: str) -> None:
    """RowGroup 7: ordinal is an i16; 32768 (a file with more row groups than an encrypted file's
    AADs can name) must not reach the reader as an int."""
    with pytest.raises(MalformedThriftError, match=r"i16 at offset 1 is out of the i16 range \(32768\)"):
        thrift_codec.parse(M.RowGroup, b"\x74" + varint(32768 << 1) + b"\x00")


def test_integer_edges_still_parse(thrift_backend: str) -> None:
    for version in (-(1 << 31), (1 << 31) - 1):
        for num_rows in (-(1 << 63), (1 << 63) - 1):
            obj = M.FileMetaData(version=version, schema=[], num_rows=num_rows, row_groups=[])
            parsed, _ = thrift_codec.parse(M.FileMetaData, thrift_codec.serialize(obj))
            assert (parsed.version, parsed.num_rows) == (version, num_rows)


@st.composite
def _amplified(draw: st.DrawFn) -> tuple[str, bytes]:
    """A real structure (or a varint-heavy template) with one slice repeated up to ~2 MiB."""
    cls_name = draw(st.sampled_from(["FileMetaData", "ColumnMetaData", "FileCryptoMetaData"]))
    template = draw(st.one_of(st.sampled_from(SEEDS[cls_name]), mutated(SEEDS[cls_name][0]).filter(bool),
                              st.sampled_from([b"\x15\xff\x00", b"\x15\x02\x19\xfc\xff\x00",
                                               b"\x15\x02\x19\x1c\x00\x00", b"\x15\x02\x11\x00"])))
    start = draw(st.integers(0, len(template) - 1))
    piece = template[start:start + draw(st.integers(1, 64))]
    copies = (2 << 20) // len(piece)
    return cls_name, template[:start] + piece * copies + template[start + len(piece):]


@settings(max_examples=examples(12), deadline=None)
@given(case=_amplified())
def test_parse_time_is_linear_in_the_input(thrift_backend: str, case: tuple[str, bytes]) -> None:
    """Time-budget property (issue 15 item 7): a ~2 MiB input made of one repeated slice parses
    or is refused without hanging. The linear parser needs a few seconds at most for 2 MiB; the
    quadratic varint decoder needed 171 s. ``call_outcome`` only turns a hang into a failure
    (NOT_A_HANG_S); it asserts no performance figure."""
    cls_name, blob = case
    outcome = call_outcome(lambda: thrift_codec.parse(getattr(M, cls_name), blob))
    assert outcome is None or isinstance(outcome, MalformedThriftError), repr(outcome)


def test_truncation_at_every_byte_of_every_real_footer(thrift_backend: str) -> None:
    count = 0
    for name, seeds in SEEDS.items():
        for seed in seeds:
            for cut in range(len(seed)):
                with pytest.raises(MalformedThriftError):
                    thrift_codec.parse(getattr(M, name), seed[:cut])
                count += 1
    assert count > 5_000


def test_header_length_fields(thrift_backend: str) -> None:
    """numBytes as i32 zigzag varints at the edges; 32..128 MiB pass (any size: parquet-java reads
    floor(numBytes / 32) blocks, issue 15 item 23), less than one block or more than 128 MiB do not."""
    for value in (0, 1, 31, -32, (128 << 20) + 1, 0x7FFFFFE0, -(1 << 31)):
        zig = (value << 1) ^ (value >> 31)
        blob = b"\x15" + varint(zig & 0xFFFFFFFF) + serialize_header(32)[2:]
        with pytest.raises(MalformedHeaderError):
            parse_header(blob)
    zig = struct.unpack("<I", struct.pack("<i", 1024))[0] << 1
    assert parse_header(b"\x15" + varint(zig) + serialize_header(32)[2:])[0].num_bytes == 1024
    zig = 33 << 1
    assert parse_header(b"\x15" + varint(zig) + serialize_header(32)[2:])[0].num_bytes == 33
