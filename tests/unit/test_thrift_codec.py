"""The bounded Thrift compact codec: real footers, required fields, unions, hostile sizes."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from secure_bloom import thrift_codec
from secure_bloom.errors import MalformedHeaderError, MalformedThriftError
from support.paths import VECTORS_DIR

VECTORS = VECTORS_DIR
M = thrift_codec.idl()


def _plain_footer(name: str) -> bytes:
    data = (VECTORS / name).read_bytes()
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    return data[len(data) - 8 - length:-8]


@pytest.mark.parametrize("name", ["data_index_bloom_encoding_stats.parquet",
                                  "data_index_bloom_encoding_with_length.parquet"])
def test_real_footers_parse_and_reserialize(name: str) -> None:
    raw = _plain_footer(name)
    meta, consumed = thrift_codec.parse(M.FileMetaData, raw)
    assert consumed == len(raw)
    assert meta.num_rows == 14 and len(meta.row_groups) == 1
    assert [s.name for s in meta.schema][1:] == ["String"]
    chunk = meta.row_groups[0].columns[0].meta_data
    assert chunk.path_in_schema == ["String"] and chunk.bloom_filter_offset > 0
    again, _ = thrift_codec.parse(M.FileMetaData, thrift_codec.serialize(meta))
    assert again == meta


def test_file_crypto_metadata() -> None:
    algo = M.EncryptionAlgorithm(AES_GCM_V1=M.AesGcmV1(aad_prefix=b"tester", aad_file_unique=b"\x01" * 8,
                                                       supply_aad_prefix=False))
    obj = M.FileCryptoMetaData(encryption_algorithm=algo, key_metadata=b"kf")
    raw = thrift_codec.serialize(obj)
    back, consumed = thrift_codec.parse(M.FileCryptoMetaData, raw + b"module bytes follow")
    assert back == obj and consumed == len(raw)


def test_every_truncation_of_a_real_footer() -> None:
    raw = _plain_footer("data_index_bloom_encoding_with_length.parquet")
    for cut in range(len(raw)):
        with pytest.raises(MalformedThriftError):
            thrift_codec.parse(M.FileMetaData, raw[:cut])


def test_required_field_missing() -> None:
    raw = thrift_codec.serialize(M.KeyValue(key=None, value="v"))
    with pytest.raises(MalformedThriftError, match="required field 'key'"):
        thrift_codec.parse(M.KeyValue, raw)


def test_union_member_count() -> None:
    empty = thrift_codec.serialize(M.FileCryptoMetaData(encryption_algorithm=M.EncryptionAlgorithm()))
    with pytest.raises(MalformedThriftError, match="0 members"):
        thrift_codec.parse(M.FileCryptoMetaData, empty)
    both = thrift_codec.serialize(M.FileCryptoMetaData(encryption_algorithm=M.EncryptionAlgorithm(
        AES_GCM_V1=M.AesGcmV1(), AES_GCM_CTR_V1=M.AesGcmCtrV1())))
    with pytest.raises(MalformedThriftError, match="2 members"):
        thrift_codec.parse(M.FileCryptoMetaData, both)


def test_error_class_is_the_callers() -> None:
    with pytest.raises(MalformedHeaderError):
        thrift_codec.parse(M.BloomFilterHeader, b"\x15", error=MalformedHeaderError)


def _measure(data: bytes) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(MalformedThriftError):
            thrift_codec.parse(M.FileMetaData, data)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_hostile_sizes_allocate_little() -> None:
    # field 6 (created_by, binary) declaring 2^31 bytes; field 2 (schema, list<struct>) declaring 2^28
    # elements; a key_value_metadata list of 2^28 structs; deep nesting.
    huge_binary = b"\x68" + b"\xff\xff\xff\xff\x07" + b"x" * 10
    huge_list = b"\x29" + b"\xf0" + b"\x80\x80\x80\x80\x01" + b"\x00" * 10
    deep = b"\x1c" * 5000
    for data in (huge_binary, huge_list, deep):
        assert _measure(data) < 1 << 20


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_only_raises_malformed_thrift(data: bytes) -> None:
    try:
        thrift_codec.parse(M.FileMetaData, data)
    except MalformedThriftError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 400), st.binary(min_size=1, max_size=4))
def test_mutated_footer_only_raises_malformed_thrift(pos: int, patch: bytes) -> None:
    raw = bytearray(_plain_footer("data_index_bloom_encoding_stats.parquet"))
    pos %= len(raw)
    raw[pos:pos + len(patch)] = patch
    try:
        thrift_codec.parse(M.FileMetaData, bytes(raw))
    except MalformedThriftError:
        pass
