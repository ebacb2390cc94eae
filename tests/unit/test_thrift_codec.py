"""The bounded Thrift compact codec: real footers, required fields, unions, hostile sizes; the
native C decoder against the Python one (equal objects and counts, or the same error and message)."""

from __future__ import annotations

import io
import math
import os
import re
import struct
import subprocess
import sys
import tracemalloc
from datetime import date, datetime, timezone
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import thriftpy2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples
from thriftpy2.thrift import TType

from secure_bloom import thrift_codec
from secure_bloom.errors import MalformedHeaderError, MalformedThriftError
from support.paths import REPO_DIR, VECTORS_DIR
from support.robustness_support import mutated, varint
from support.thrift_backends import assert_decoders_agree, outcome, require_native_thrift

VECTORS = VECTORS_DIR
M = thrift_codec.idl()


def _plain_footer(name: str) -> bytes:
    data = (VECTORS / name).read_bytes()
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    return data[len(data) - 8 - length:-8]


@pytest.mark.parametrize("name", ["data_index_bloom_encoding_stats.parquet",
                                  "data_index_bloom_encoding_with_length.parquet"])
def test_real_footers_parse_and_reserialize(thrift_backend: str, name: str) -> None:
    raw = _plain_footer(name)
    meta, consumed = thrift_codec.parse(M.FileMetaData, raw)
    assert consumed == len(raw)
    assert meta.num_rows == 14 and len(meta.row_groups) == 1
    assert [s.name for s in meta.schema][1:] == ["String"]
    chunk = meta.row_groups[0].columns[0].meta_data
    assert chunk.path_in_schema == ["String"] and chunk.bloom_filter_offset > 0
    again, _ = thrift_codec.parse(M.FileMetaData, thrift_codec.serialize(meta))
    assert again == meta


@pytest.mark.native
def test_native_objects_are_left_out_of_the_cyclic_collector() -> None:
    """A decoded tree has no cycles: the native decoder untracks every struct, struct dict and
    list it makes (collections walked them as long as the decoding took), and the objects are
    still freed by reference counting."""
    import gc
    import weakref

    require_native_thrift()
    raw = _plain_footer("data_index_bloom_encoding_stats.parquet")
    with thrift_codec.forced_backend("native"):
        meta, _ = thrift_codec.parse(M.FileMetaData, raw)
    with thrift_codec.forced_backend("python"):
        reference, _ = thrift_codec.parse(M.FileMetaData, raw)
    assert meta == reference
    chunk = meta.row_groups[0].columns[0]
    made = [meta, vars(meta), meta.schema, meta.row_groups, meta.row_groups[0], chunk, vars(chunk),
            chunk.meta_data, chunk.meta_data.encodings, chunk.meta_data.statistics]
    assert [gc.is_tracked(o) for o in made] == [False] * len(made)
    assert gc.is_tracked(reference) and gc.is_tracked(reference.row_groups)  # thriftpy2's are tracked
    gone = weakref.ref(chunk.meta_data)
    del meta, chunk, made
    assert gone() is None


def test_file_crypto_metadata(thrift_backend: str) -> None:
    algo = M.EncryptionAlgorithm(AES_GCM_V1=M.AesGcmV1(aad_prefix=b"tester", aad_file_unique=b"\x01" * 8,
                                                       supply_aad_prefix=False))
    obj = M.FileCryptoMetaData(encryption_algorithm=algo, key_metadata=b"kf")
    raw = thrift_codec.serialize(obj)
    back, consumed = thrift_codec.parse(M.FileCryptoMetaData, raw + b"module bytes follow")
    assert back == obj and consumed == len(raw)


def test_every_truncation_of_a_real_footer(thrift_backend: str) -> None:
    raw = _plain_footer("data_index_bloom_encoding_with_length.parquet")
    for cut in range(len(raw)):
        with pytest.raises(MalformedThriftError):
            thrift_codec.parse(M.FileMetaData, raw[:cut])


def test_required_field_missing(thrift_backend: str) -> None:
    raw = thrift_codec.serialize(M.KeyValue(key=None, value="v"))
    with pytest.raises(MalformedThriftError, match="required field 'key'"):
        thrift_codec.parse(M.KeyValue, raw)


def test_union_member_count(thrift_backend: str) -> None:
    empty = thrift_codec.serialize(M.FileCryptoMetaData(encryption_algorithm=M.EncryptionAlgorithm()))
    with pytest.raises(MalformedThriftError, match="0 members"):
        thrift_codec.parse(M.FileCryptoMetaData, empty)
    both = thrift_codec.serialize(M.FileCryptoMetaData(encryption_algorithm=M.EncryptionAlgorithm(
        AES_GCM_V1=M.AesGcmV1(), AES_GCM_CTR_V1=M.AesGcmCtrV1())))
    with pytest.raises(MalformedThriftError, match="2 members"):
        thrift_codec.parse(M.FileCryptoMetaData, both)


def test_error_class_is_the_callers(thrift_backend: str) -> None:
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


def test_hostile_sizes_allocate_little(thrift_backend: str) -> None:
    # field 6 (created_by, binary) declaring 2^31 bytes; field 2 (schema, list<struct>) declaring 2^28
    # elements; a key_value_metadata list of 2^28 structs; deep nesting.
    huge_binary = b"\x68" + b"\xff\xff\xff\xff\x07" + b"x" * 10
    huge_list = b"\x29" + b"\xf0" + b"\x80\x80\x80\x80\x01" + b"\x00" * 10
    deep = b"\x1c" * 5000
    for data in (huge_binary, huge_list, deep):
        assert _measure(data) < 1 << 20


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=200))
def test_garbage_only_raises_malformed_thrift(thrift_backend: str, data: bytes) -> None:
    try:
        thrift_codec.parse(M.FileMetaData, data)
    except MalformedThriftError:
        pass


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(0, 400), st.binary(min_size=1, max_size=4))
def test_mutated_footer_only_raises_malformed_thrift(thrift_backend: str, pos: int, patch: bytes) -> None:
    raw = bytearray(_plain_footer("data_index_bloom_encoding_stats.parquet"))
    pos %= len(raw)
    raw[pos:pos + len(patch)] = patch
    try:
        thrift_codec.parse(M.FileMetaData, bytes(raw))
    except MalformedThriftError:
        pass


# ----------------------------------------------------------------------- native decoder == Python decoder

def _pyarrow_footers() -> dict[str, bytes]:
    """Footers Arrow C++ writes: nested and logical types, statistics, dictionaries, page indexes,
    sorting columns, key-value metadata, several row groups."""
    n = 40
    table = pa.table({
        "i64": pa.array(range(n), pa.int64()),
        "i8": pa.array([i % 100 - 50 for i in range(n)], pa.int8()),
        "u32": pa.array(range(n), pa.uint32()),
        "f": pa.array([i / 3 for i in range(n)], pa.float64()),
        "s": pa.array([f"é{i}" if i % 7 else None for i in range(n)]),
        "b": pa.array([bytes([i]) * 3 for i in range(n)]),
        "dec": pa.array([Decimal(i) / 100 for i in range(n)], pa.decimal128(9, 2)),
        "ts": pa.array([datetime(2024, 1, 1, tzinfo=timezone.utc)] * n, pa.timestamp("us", tz="UTC")),
        "ns": pa.array([i for i in range(n)], pa.timestamp("ns")),
        "d": pa.array([date(2024, 1, 1 + i % 28) for i in range(n)]),
        "t": pa.array([i * 1000 for i in range(n)], pa.time64("us")),
        "l": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32())),
        "st": pa.array([{"x": i, "y": str(i)} for i in range(n)]),
        "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "dict": pa.array(["a", "b"] * (n // 2)).dictionary_encode(),
        "bool": pa.array([i % 3 == 0 for i in range(n)]),
    }).replace_schema_metadata({"origin": "test", "note": "ü"})
    out = {}
    for label, kwargs in {"v1": {"version": "1.0"}, "v2.6": {"version": "2.6", "write_page_index": True},
                          "sorted": {"sorting_columns": [pq.SortingColumn(0)], "write_statistics": False}}.items():
        sink = io.BytesIO()
        pq.write_table(table, sink, row_group_size=15, coerce_timestamps="us", allow_truncated_timestamps=True,
                       **kwargs)
        data = sink.getvalue()
        (length,) = struct.unpack_from("<I", data, len(data) - 8)
        out[f"pyarrow {label}"] = data[len(data) - 8 - length:-8]
    return out


REAL_FOOTERS = {name: _plain_footer(name) for name in ("data_index_bloom_encoding_stats.parquet",
                                                        "data_index_bloom_encoding_with_length.parquet")}
REAL_FOOTERS.update(_pyarrow_footers())
STRUCTS = sorted(name for name, value in vars(M).items() if isinstance(value, type) and hasattr(value, "thrift_spec"))
UNIONS = frozenset(re.findall(r"^\s*union\s+(\w+)", (REPO_DIR / "specs" / thrift_codec.IDL_FILENAME).read_text(),
                              flags=re.MULTILINE))
_INT_RANGE = {TType.BYTE: 8, TType.I16: 16, TType.I32: 32, TType.I64: 64}
DIFFERENTIAL = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_struct_list_covers_the_idl() -> None:
    assert {"FileMetaData", "ColumnMetaData", "BloomFilterHeader", "FileCryptoMetaData", "LogicalType",
            "BoundingBox", "IntType", "VariantType"} <= set(STRUCTS) and len(STRUCTS) >= 50
    assert {"LogicalType", "ColumnCryptoMetaData", "EncryptionAlgorithm", "TimeUnit"} <= UNIONS <= set(STRUCTS)


@pytest.mark.parametrize("label", sorted(REAL_FOOTERS))
def test_native_equals_python_on_real_footers(label: str) -> None:
    raw = REAL_FOOTERS[label]
    result = assert_decoders_agree(M.FileMetaData, raw + b"trailing bytes")
    assert result[0] == "ok" and result[2] == len(raw)
    for row_group in result[3].row_groups:
        for chunk in row_group.columns:
            assert_decoders_agree(M.ColumnMetaData, thrift_codec.serialize(chunk.meta_data))
    for cut in range(0, len(raw), max(1, len(raw) // 300)):
        assert_decoders_agree(M.FileMetaData, raw[:cut])


def _value(ttype: int, spec: Any) -> st.SearchStrategy[Any]:
    if ttype == TType.BOOL:
        return st.booleans()
    if ttype in _INT_RANGE:
        bits = _INT_RANGE[ttype]
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if ttype == TType.DOUBLE:
        return st.floats(allow_nan=True, allow_infinity=True)
    if ttype == TType.STRING:
        return st.text(max_size=6)
    if ttype == TType.BINARY:
        return st.binary(max_size=6)
    if ttype == TType.LIST:
        etype, espec = spec if isinstance(spec, tuple) else (spec, None)
        return st.lists(_value(etype, espec), max_size=2)
    assert ttype == TType.STRUCT, ttype
    return _objects(spec)


@lru_cache(maxsize=None)
def _objects(cls: type) -> st.SearchStrategy[Any]:
    """Objects of ``cls``: any field may be None (required ones too, for the check); unions get
    one member mostly, sometimes none or several."""
    fields = {f[1]: _value(f[0], f[2] if len(f) == 4 else None) for f in cls.thrift_spec.values()}
    anything = st.builds(cls, **{name: st.none() | value for name, value in fields.items()})
    if cls.__name__ not in UNIONS or not fields:
        return anything
    one = st.one_of([st.builds(cls, **{name: value}) for name, value in fields.items()])
    return st.one_of(one, one, anything)


@pytest.mark.parametrize("cls_name", STRUCTS)
@DIFFERENTIAL
@given(data=st.data())
def test_native_equals_python_on_every_idl_struct(cls_name: str, data: st.DataObject) -> None:
    cls = getattr(M, cls_name)
    raw = thrift_codec.serialize(data.draw(_objects(cls), label="object"))
    result = assert_decoders_agree(cls, raw)
    if result[0] == "ok":
        assert result[2] == len(raw)
    assert_decoders_agree(cls, raw[:data.draw(st.integers(0, len(raw)), label="cut")])
    assert_decoders_agree(cls, data.draw(mutated(raw), label="mutated"))


@pytest.mark.parametrize("cls_name", ["FileMetaData", "ColumnMetaData", "FileCryptoMetaData", "BloomFilterHeader",
                                      "SchemaElement", "Statistics", "BoundingBox", "RowGroup"])
@DIFFERENTIAL
@given(blob=st.binary(max_size=300))
def test_native_equals_python_on_random_bytes(cls_name: str, blob: bytes) -> None:
    assert_decoders_agree(getattr(M, cls_name), blob)


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_native_equals_python_on_mutated_real_footers(data: st.DataObject) -> None:
    raw = data.draw(st.sampled_from(sorted(REAL_FOOTERS.values())), label="footer")
    assert_decoders_agree(M.FileMetaData, data.draw(mutated(raw), label="mutated"))


_V = b"\x15\x02"  # FileMetaData 1: version = 1
_OK = _V + b"\x19\x0c\x16\x00\x19\x0c"  # ... 2: schema = [], 3: num_rows = 0, 4: row_groups = []


def _f99(ctype: int) -> bytes:
    """A header for the unknown field 99 (long form) of compact type ``ctype``."""
    return bytes([ctype]) + varint(198)


def _nested(levels: int) -> bytes:
    """A valid FileMetaData whose unknown field 99 holds structs nested ``levels`` deep in all."""
    return _OK + _f99(0x0C) + b"\x0c\x01" * (levels - 2) + b"\x00" * (levels - 1) + b"\x00"


QUIRKS = {
    "bool true in the type nibble": (M.Statistics, b"\x71\x12\x00"),
    "bool list elements in a skipped field": (M.Statistics, _f99(9) + b"\x41\x01\x02\x00\x55\x00"),
    "skipped list of STOP with no elements": (M.FileMetaData, _OK + _f99(9) + b"\x00\x00"),
    "skipped list of STOP with elements": (M.FileMetaData, _OK + _f99(9) + b"\x10\x00\x00"),
    "skipped map with a STOP key type": (M.FileMetaData, _OK + _f99(0x0B) + b"\x01\x05\x02\x00"),
    "skipped map of i32 to binary": (M.FileMetaData, _OK + _f99(0x0B) + b"\x02\x58\x02\x01a\x04\x01b\x00"),
    "skipped empty map": (M.FileMetaData, _OK + _f99(0x0B) + b"\x00\x00"),
    "skipped set and struct": (M.FileMetaData, _OK + _f99(0x0A) + b"\x25\x02\x04" + b"\x0c" + varint(200)
                               + b"\x15\x04\x00\x00"),
    "field type nibble 13": (M.FileMetaData, _OK + b"\x1d\x00"),
    "list element nibble 14": (M.FileMetaData, _V + b"\x19\x1e\x00"),
    "map type nibble 15": (M.FileMetaData, _OK + _f99(0x0B) + b"\x01\xf5\x02\x02\x00"),
    "invalid utf-8 in a string field": (M.KeyValue, b"\x18\x02\xff\xfe\x00"),
    "utf-8 in a binary field": (M.AesGcmV1, b"\x18\x02\xc3\xa9\x00"),
    "a string field sent as binary": (M.KeyValue, b"\x18\x02\xc3\xa9\x00"),
    "wire type differs from the spec: skipped": (M.FileMetaData, b"\x16\x02\x19\x0c\x16\x00\x19\x0c\x00"),
    "list element type differs: the spec's is used": (M.FileMetaData, _V + b"\x19\x15\x48\x01x\x00"
                                                      + b"\x16\x00\x19\x0c\x00"),
    "set on the wire for a list field: skipped": (M.FileMetaData, _V + b"\x1a\x15\x02\x16\x00\x19\x0c\x00"),
    "duplicate field: the last wins": (M.FileMetaData, _V + b"\x05\x02\x08\x19\x0c\x16\x00\x19\x0c\x00"),
    "negative field id, long form": (M.FileMetaData, _OK + b"\x05\x01\x02\x00"),
    "field id delta past the i16 range": (M.FileMetaData, b"\x05\xfe\xff\x03\x02" + b"\xf5\x02" * 3 + b"\x00"),
    "little-endian doubles": (M.BoundingBox, b"".join(b"\x17" + struct.pack("<d", v) for v in (1.5, -0.0, math.inf))
                              + b"\x17\x01\x00\x00\x00\x00\x00\xf8\x7f\x00"),
    "negative i8": (M.IntType, b"\x13\xf8\x11\x00"),
    "i64 edges": (M.Statistics, b"\x36" + varint((1 << 64) - 1) + b"\x16" + varint((1 << 64) - 2) + b"\x00"),
    "i64 one past the edge": (M.Statistics, b"\x36" + varint(1 << 64) + b"\x00"),
    "non-canonical varint": (M.FileMetaData, b"\x15\x82\x80\x00\x19\x0c\x16\x00\x19\x0c\x00"),
    "collection size in the long form": (M.FileMetaData, _V + b"\x19\xfc\x01\x48\x01x\x00\x16\x00\x19\x0c\x00"),
    "collection size past the input": (M.FileMetaData, _V + b"\x19\x5c\x00\x00"),
    "long collection size past the input": (M.FileMetaData, _V + b"\x19\xfc\x05\x00\x00"),
    "map size past the input": (M.FileMetaData, _OK + _f99(0x0B) + b"\x09\x55\x00"),
    "binary size past the input": (M.FileMetaData, _V + b"\x68\x09ab"),
    "nested 64 deep in a skipped field": (M.FileMetaData, _nested(64)),
    "nested 65 deep in a skipped field": (M.FileMetaData, _nested(65)),
    "double cut short": (M.BoundingBox, b"\x17\x00\x00\x00"),
    "nothing": (M.FileMetaData, b""),
}


@pytest.mark.parametrize("case", sorted(QUIRKS))
def test_native_equals_python_on_protocol_corners(case: str) -> None:
    cls, blob = QUIRKS[case]
    assert_decoders_agree(cls, blob)


def test_corner_outcomes_are_the_intended_ones(thrift_backend: str) -> None:
    """The corner cases above reach the branch their names say (the agreement alone would not show it)."""
    def parse(case: str) -> Any:
        cls, blob = QUIRKS[case]
        return thrift_codec.parse(cls, blob)[0]

    def refused(case: str, message: str) -> None:
        with pytest.raises(MalformedThriftError, match=message):
            parse(case)

    stats = parse("bool true in the type nibble")
    assert stats.is_max_value_exact is True and stats.is_min_value_exact is False
    box = parse("little-endian doubles")
    assert (box.xmin, str(box.xmax), box.ymin, math.isnan(box.ymax)) == (1.5, "-0.0", math.inf, True)
    assert parse("duplicate field: the last wins").version == 4
    assert parse("non-canonical varint").version == 1
    assert parse("list element type differs: the spec's is used").schema == [M.SchemaElement(name="x")]
    assert parse("collection size in the long form").schema == [M.SchemaElement(name="x")]
    assert parse("negative i8") == M.IntType(bitWidth=-8, isSigned=True)
    for case in ("skipped list of STOP with no elements", "skipped map of i32 to binary", "skipped empty map",
                 "skipped set and struct", "negative field id, long form", "nested 64 deep in a skipped field"):
        assert parse(case) == M.FileMetaData(version=1, schema=[], num_rows=0, row_groups=[]), case
    assert parse("a string field sent as binary").key == "é"
    assert parse("utf-8 in a binary field").aad_prefix == b"\xc3\xa9"
    edges = parse("i64 edges")
    assert (edges.null_count, edges.distinct_count) == (-(1 << 63), (1 << 63) - 1)
    refused("skipped list of STOP with elements", "collection with elements of type STOP")
    refused("skipped map with a STOP key type", "map with entries of type STOP")
    for case in ("field type nibble 13", "list element nibble 14", "map type nibble 15"):
        refused(case, r"invalid Thrift compact encoding \(KeyError\)")
    refused("invalid utf-8 in a string field", r"invalid Thrift compact encoding \(UnicodeDecodeError\)")
    refused("i64 one past the edge", r"i64 at offset 1 is out of the i64 range \(9223372036854775808\)")
    refused("wire type differs from the spec: skipped", "required field 'version' missing")
    refused("set on the wire for a list field: skipped", "required field 'schema' missing")
    refused("field id delta past the i16 range", "required field 'version' missing")
    refused("nested 65 deep in a skipped field", "nested deeper than 64")
    refused("collection size past the input", r"truncated Thrift \(collection of 5 elements exceeds the 2 bytes")
    refused("long collection size past the input", r"truncated Thrift \(declared size 5 exceeds the 2 bytes")
    refused("map size past the input", r"truncated Thrift \(declared size 9 exceeds the 2 bytes left")
    refused("binary size past the input", r"truncated Thrift \(declared size 9 exceeds the 2 bytes left")
    refused("double cut short", r"truncated Thrift \(needs 8 bytes at offset 1, 3 left; 4 bytes given\)")
    refused("nothing", r"truncated Thrift \(needs 1 byte at offset 0, 0 left; 0 bytes given\)")


def test_buffers_of_every_kind_give_the_same_result() -> None:
    raw = REAL_FOOTERS["pyarrow v2.6"]
    expected = assert_decoders_agree(M.FileMetaData, raw)
    for data in (bytearray(raw), memoryview(raw), memoryview(b"xx" + raw)[2:]):
        assert assert_decoders_agree(M.FileMetaData, data)[:3] == expected[:3]
    strided = memoryview(bytes(b for pair in zip(raw, raw) for b in pair))[::2]  # not contiguous: Python path
    assert assert_decoders_agree(M.FileMetaData, strided)[:3] == expected[:3]
    header = thrift_codec.serialize(M.BloomFilterHeader(numBytes=1024, algorithm=M.BloomFilterAlgorithm(
        BLOCK=M.SplitBlockAlgorithm()), hash=M.BloomFilterHash(XXHASH=M.XxHash()),
        compression=M.BloomFilterCompression(UNCOMPRESSED=M.Uncompressed())))
    assert assert_decoders_agree(M.BloomFilterHeader, memoryview(header + b"bitset"), MalformedHeaderError)[2] == len(header)
    assert assert_decoders_agree(M.BloomFilterHeader, header[:-1], MalformedHeaderError)[1] is MalformedHeaderError


_MAP_IDL = """
struct Inner { 1: optional i32 a; }
struct WithMap { 1: optional map<string, i64> m; 2: optional Inner inner; 3: optional list<list<i32>> nested; }
"""


def test_a_spec_the_native_decoder_does_not_handle_falls_back_to_python() -> None:
    """Maps appear in no Parquet structure: the C decoder refuses the spec and parse() uses Python."""
    require_native_thrift()
    from secure_bloom import native_thrift

    module = thriftpy2.load_fp(io.StringIO(_MAP_IDL), module_name="secure_bloom_test_map_thrift")
    obj = module.WithMap(m={"x": 1, "y": -2}, inner=module.Inner(a=3), nested=[[1], [2, 3]])
    raw = thrift_codec.serialize(obj)
    with pytest.raises(native_thrift.UnsupportedSpec, match="map"):
        native_thrift.decode(module.WithMap, raw, 64, 100, frozenset())
    with thrift_codec.forced_backend("native"):
        assert thrift_codec.parse(module.WithMap, raw) == (obj, len(raw))
    assert assert_decoders_agree(module.WithMap, raw)[2] == len(raw)
    nested = module.Inner(a=7)  # a class without maps next to it decodes natively
    assert native_thrift.decode(module.Inner, thrift_codec.serialize(nested), 64, 100, frozenset())[:2] == (
        nested, 3)


_PLAIN_IDL = """
struct Leaf { 1: optional i32 a; 2: optional string b; 3: optional list<i64> c; }
struct Tree { 1: optional Leaf leaf; 2: optional list<Leaf> leaves; 3: optional i64 n; }
"""


def test_structs_made_without_init_are_the_objects_init_makes() -> None:
    """The C decoder makes a struct of a plain class from a copy of the dict cls() made (no
    __init__ call): the same attributes in the same order as cls() plus setattr; a class that
    stores attributes its own way, or has a field that is a data descriptor, still gets cls() and
    setattr for every field."""
    require_native_thrift()
    from secure_bloom import native_thrift

    module = thriftpy2.load_fp(io.StringIO(_PLAIN_IDL), module_name="secure_bloom_test_plain_thrift")
    tree = module.Tree(leaf=module.Leaf(b="x"), leaves=[module.Leaf(a=1, c=[2]), module.Leaf()], n=9)
    raw = thrift_codec.serialize(tree)
    decoded = native_thrift.decode(module.Tree, raw, 64, 100, frozenset())[0]
    assert decoded == tree and repr(decoded) == repr(tree)
    for made, expected in [(decoded, tree), (decoded.leaf, tree.leaf), *zip(decoded.leaves, tree.leaves)]:
        assert list(made.__dict__.items()) == list(expected.__dict__.items())
        assert type(made) is type(expected)

    stored: list[tuple[str, Any]] = []

    class Recording(module.Leaf):  # type: ignore[name-defined,misc]
        def __setattr__(self, name: str, value: Any) -> None:
            stored.append((name, value))
            object.__setattr__(self, name, value)

    class Described(module.Leaf):  # type: ignore[name-defined,misc]
        b = property(lambda self: self.__dict__.get("_b"), lambda self, v: self.__dict__.__setitem__("_b", v))

    leaf = thrift_codec.serialize(module.Leaf(a=5, b="y"))
    made = native_thrift.decode(Recording, leaf, 64, 100, frozenset())[0]
    assert (made.a, made.b) == (5, "y") and stored[-2:] == [("a", 5), ("b", "y")]
    made = native_thrift.decode(Described, leaf, 64, 100, frozenset())[0]
    assert (made.a, made.b, made.__dict__["_b"]) == (5, "y", "y")



@pytest.mark.parametrize("label", sorted(REAL_FOOTERS))
def test_native_structs_read_and_write_as_attributes(label: str) -> None:
    """Every field of every struct the native decoder makes reads by attribute access as the same
    object its __dict__ holds, and an attribute written afterwards is in that dict. Regression
    (Python 3.13): the decoder set each new struct's dict through the dict pointer
    (PyObject_GenericSetDict) beside the instance's still valid inline values, so vars() showed the
    fields and ``meta.schema`` raised AttributeError (write_table, read_table, probe and audit failed)."""
    require_native_thrift()
    with thrift_codec.forced_backend("native"):
        meta, _ = thrift_codec.parse(M.FileMetaData, REAL_FOOTERS[label])
    pending, structs = [meta], 0
    while pending:
        obj = pending.pop()
        structs += 1
        for field in type(obj).thrift_spec.values():
            name = field[1]
            value = getattr(obj, name)
            assert value is obj.__dict__[name], (type(obj).__name__, name)
            for item in value if isinstance(value, list) else [value]:
                if hasattr(type(item), "thrift_spec"):
                    pending.append(item)
        obj.written_later = structs
        assert obj.__dict__["written_later"] == structs and vars(obj) is obj.__dict__
    assert structs >= 10 + 2 * len(meta.row_groups)

# ----------------------------------------------------------------------- backend selection

def _backend_in_subprocess(env_value: str | None, block_native: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != thrift_codec.ENV_VAR}
    if env_value is not None:
        env[thrift_codec.ENV_VAR] = env_value
    # The package this test imported (the installed wheel under scripts/test, the source tree with
    # its in-place build otherwise), never a source tree without the compiled decoder.
    package_root = Path(thrift_codec.__file__).resolve().parent.parent
    env["PYTHONPATH"] = os.pathsep.join([str(package_root), env.get("PYTHONPATH", "")])
    block = "sys.modules['secure_bloom.native_thrift'] = None; " if block_native else ""
    code = f"import sys; {block}import secure_bloom.thrift_codec as t; print(t.BACKEND, t.thrift_info())"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=package_root, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.native
def test_native_is_the_default_where_built() -> None:
    require_native_thrift()
    out = _backend_in_subprocess(None)
    assert out.returncode == 0 and out.stdout.startswith("native {"), out.stderr
    assert "'unavailable_reason': None" in out.stdout and "-O3" in out.stdout
    assert _backend_in_subprocess("auto").stdout.startswith("native ")
    assert _backend_in_subprocess("native").stdout.startswith("native ")


def test_python_is_chosen_by_environment_or_when_not_built() -> None:
    forced = _backend_in_subprocess("python")
    assert forced.stdout.startswith("python ") and "SECURE_BLOOM_THRIFT=python" in forced.stdout
    missing_ext = _backend_in_subprocess("auto", block_native=True)
    assert missing_ext.stdout.startswith("python ") and "is not built or cannot be loaded" in missing_ext.stdout
    demanded = _backend_in_subprocess("native", block_native=True)
    assert demanded.returncode == 1 and "SECURE_BLOOM_THRIFT=native but secure_bloom.native_thrift cannot" in \
        demanded.stderr
    bad = _backend_in_subprocess("fast")
    assert bad.returncode == 1 and "SECURE_BLOOM_THRIFT must be auto, native or python, got 'fast'" in bad.stderr


def test_forced_backend_switches_and_restores() -> None:
    before = thrift_codec.BACKEND
    with thrift_codec.forced_backend("python"):
        assert thrift_codec.BACKEND == "python" and thrift_codec.thrift_info()["backend"] == "python"
    assert thrift_codec.BACKEND == before
    with pytest.raises(ValueError, match="backend must be native or python, got 'c'"):
        with thrift_codec.forced_backend("c"):
            pass


def test_a_missing_native_decoder_fails_the_suite_unless_allowed() -> None:
    """support.components: the native-marked tests fail without secure_bloom.native_thrift, unless
    SECURE_BLOOM_ALLOW_SKIP names "native" (then they skip)."""
    test_id = f"{Path(__file__).relative_to(REPO_DIR)}::test_file_crypto_metadata"
    code = ("import sys; sys.modules['secure_bloom.native_thrift'] = None; import pytest; "
            f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-rs', {test_id!r}]))")
    env = {k: v for k, v in os.environ.items() if k not in ("SECURE_BLOOM_ALLOW_SKIP", thrift_codec.ENV_VAR)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_DIR), str(REPO_DIR / "tests"), env.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO_DIR, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 1 and "native missing: secure_bloom.native_thrift is not built" in run.stdout, run.stdout
    # the native run fails in its fixture (the missing decoder also warns: ExtensionFallbackWarning)
    assert re.search(r"1 passed, (\d+ warnings?, )?1 error", run.stdout), run.stdout
    env["SECURE_BLOOM_ALLOW_SKIP"] = "native"
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO_DIR, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and re.search(r"1 passed, 1 skipped(, \d+ warnings?)?", run.stdout), run.stdout


def test_large_structures_are_decoded_with_the_cyclic_gc_paused_and_restored() -> None:
    """A footer of millions of objects (none in a cycle) is decoded without cyclic collections
    walking them again and again; the collector is restored after, left alone for small inputs
    and when the caller turned it off, and restored when the decode raises."""
    import gc

    from secure_bloom.errors import MalformedThriftError
    from secure_bloom.thrift_codec import GC_PAUSE_BYTES, gc_paused_for

    assert gc.isenabled()
    with gc_paused_for(GC_PAUSE_BYTES):
        assert not gc.isenabled()
    assert gc.isenabled()
    with gc_paused_for(GC_PAUSE_BYTES - 1):
        assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused_for(GC_PAUSE_BYTES):
            pass
        assert not gc.isenabled()  # the caller's choice is kept
    finally:
        gc.enable()
    with pytest.raises(MalformedThriftError):
        thrift_codec.parse(thrift_codec.idl().FileMetaData, b"\x15" * GC_PAUSE_BYTES)
    assert gc.isenabled()


def test_gc_pauses_on_several_threads_never_turn_the_collector_on_under_one_another() -> None:
    """One pause for the process, reentrant: a thread ending its pause while another's is still
    on leaves the collector off (the old context manager turned it back on under the other); the
    last one to end turns it on, once; nested pauses on one thread likewise."""
    import gc
    import threading

    from secure_bloom.thrift_codec import gc_paused

    assert gc.isenabled()
    first_in, second_out = threading.Event(), threading.Event()
    seen: list[bool] = []

    def long_pause() -> None:
        with gc_paused():
            first_in.set()
            second_out.wait(10)
            seen.append(gc.isenabled())  # the other thread's pause has ended by now

    worker = threading.Thread(target=long_pause)
    worker.start()
    first_in.wait(10)
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    second_out.set()
    worker.join(10)
    assert seen == [False] and gc.isenabled()


# ---------------------------------------------------------------- raw fields (footer_idl)

F = thrift_codec.footer_idl()


def _cmd_spans(raw: bytes) -> list[bytes]:
    """Each chunk's ColumnMetaData Thrift as the footer holds it (decoded in full, re-serialised)."""
    meta, _ = thrift_codec.parse(M.FileMetaData, raw)
    return [thrift_codec.serialize(cc.meta_data) for rg in meta.row_groups for cc in rg.columns]


@pytest.mark.parametrize("label", sorted(REAL_FOOTERS))
def test_a_footer_read_for_reading_keeps_each_column_metadata_as_its_bytes(thrift_backend: str, label: str) -> None:
    raw = REAL_FOOTERS[label]
    full, used = thrift_codec.parse(M.FileMetaData, raw)
    lazy, lazy_used = thrift_codec.parse(F.FileMetaData, raw)
    assert lazy_used == used and isinstance(lazy, M.FileMetaData)
    chunks = [cc for rg in lazy.row_groups for cc in rg.columns]
    assert [cc.meta_data_thrift for cc in chunks] == _cmd_spans(raw)  # exact bytes, STOP included
    assert all("meta_data" not in vars(cc) for cc in chunks)  # nothing decoded yet
    assert repr(lazy) == repr(full)  # reading decodes: the object reads as the full one
    assert all("meta_data" in vars(cc) for cc in chunks)
    assert [cc.meta_data for cc in chunks] == [cc.meta_data for rg in full.row_groups for cc in rg.columns]
    assert thrift_codec.serialize(lazy) == raw[:used]
    assert lazy == thrift_codec.parse(F.FileMetaData, raw)[0]  # read or not, the same fields


def test_a_column_metadata_changed_or_replaced_is_written_as_it_is_now(thrift_backend: str) -> None:
    raw = REAL_FOOTERS["pyarrow v1"]
    lazy, _ = thrift_codec.parse(F.FileMetaData, raw)
    first, second = lazy.row_groups[0].columns[:2]
    first.meta_data.bloom_filter_offset = 12345  # changed once decoded
    second.meta_data = None  # removed
    again, _ = thrift_codec.parse(M.FileMetaData, thrift_codec.serialize(lazy))
    assert again.row_groups[0].columns[0].meta_data.bloom_filter_offset == 12345
    assert again.row_groups[0].columns[1].meta_data is None
    assert lazy != thrift_codec.parse(F.FileMetaData, raw)[0]


def _footer_with_cmd(cmd: Any) -> bytes:
    """A one-chunk FileMetaData holding ``cmd`` (serialised as it is, required fields or not)."""
    chunk = M.ColumnChunk(file_offset=4, meta_data=cmd)
    return thrift_codec.serialize(M.FileMetaData(version=1, schema=[M.SchemaElement(name="s")], num_rows=0,
                                                 row_groups=[M.RowGroup(columns=[chunk], total_byte_size=0,
                                                                        num_rows=0)]))


def _cmd(**changes: Any) -> Any:
    fields = dict(type=6, encodings=[0], path_in_schema=["c"], codec=0, num_values=1, total_uncompressed_size=1,
                  total_compressed_size=1, data_page_offset=4, statistics=M.Statistics(null_count=0))
    fields.update(changes)
    return M.ColumnMetaData(**fields)


@pytest.mark.parametrize("case", ["required field missing", "nested required field missing", "bad utf-8",
                                  "truncated", "ok"])
def test_a_raw_field_is_checked_as_its_struct_when_the_footer_is_read(thrift_backend: str, case: str) -> None:
    """Every check decoding the ColumnMetaData makes is made when the footer is read, with the
    same error and message (the path names ``meta_data``), though nothing is made of it."""
    raw = _footer_with_cmd(_cmd(**{"required field missing": {"type": None},
                                   "nested required field missing": {"encoding_stats": [M.PageEncodingStats(
                                       page_type=0, encoding=0, count=None)]}}.get(case, {})))
    if case == "bad utf-8":
        raw = raw.replace(b"\x01c", b"\x01\xff")  # path_in_schema ["c"] -> an invalid UTF-8 string
    if case == "truncated":
        raw = raw[:len(raw) - 8]
    try:
        full = thrift_codec.parse(M.FileMetaData, raw)[0]
    except MalformedThriftError as e:
        with pytest.raises(MalformedThriftError) as lazy_error:
            thrift_codec.parse(F.FileMetaData, raw)
        assert str(lazy_error.value) == str(e)
        assert case != "ok"
        return
    assert case == "ok"
    assert thrift_codec.parse(F.FileMetaData, raw)[0].row_groups[0].columns[0].meta_data == \
        full.row_groups[0].columns[0].meta_data


@pytest.mark.parametrize("label", sorted(REAL_FOOTERS))
def test_native_equals_python_on_footers_read_for_reading(label: str) -> None:
    raw = REAL_FOOTERS[label]
    result = assert_decoders_agree(F.FileMetaData, raw + b"trailing bytes")
    assert result[0] == "ok" and result[2] == len(raw)
    for cut in range(0, len(raw), max(1, len(raw) // 300)):
        assert_decoders_agree(F.FileMetaData, raw[:cut])


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_native_equals_python_on_mutated_footers_read_for_reading(data: st.DataObject) -> None:
    raw = data.draw(st.sampled_from(sorted(REAL_FOOTERS.values())), label="footer")
    mutant = data.draw(mutated(raw), label="mutated")
    lazy = assert_decoders_agree(F.FileMetaData, mutant)
    assert lazy[:3] == outcome("native", M.FileMetaData, mutant)[:3]  # read alike, or refused with one message


# parse_fields: a few fields of many structures, the rest checked as parse checks it

def _fields_outcome(backend: str, cls: type, data: Any, names: tuple[str, ...], zero_padding: bool = False) -> Any:
    with thrift_codec.forced_backend(backend):
        return thrift_codec.parse_fields(cls, [data], names, zero_padding=zero_padding)[0]


def _assert_fields_as_parse(backend: str, cls: type, data: bytes, names: tuple[str, ...]) -> None:
    """None where parse raises; else the parsed object's fields and count (native: or None when
    its required-field check had to decide)."""
    parsed = outcome(backend, cls, data)
    got = _fields_outcome(backend, cls, data, names)
    if parsed[0] == "error":
        assert got is None, (parsed, got)
        return
    if got is None:
        assert backend == "native", "the Python path gives every structure parse gives"
        from secure_bloom import native_thrift
        assert native_thrift.decode(cls, data, 64, thrift_codec.MAX_COLLECTION_ELEMENTS,
                                    thrift_codec._union_names())[2], "None only where the check decides"
        return
    obj = parsed[3]
    assert repr(got[0]) == repr(tuple(getattr(obj, name) for name in names)) and got[1] == parsed[2]


@pytest.mark.parametrize("cls_name", STRUCTS)
@DIFFERENTIAL
@given(data=st.data())
def test_picked_fields_are_what_parse_gives(thrift_backend: str, cls_name: str, data: st.DataObject) -> None:
    cls = getattr(M, cls_name)
    spec_names = [spec[1] for spec in cls.thrift_spec.values()]
    names = tuple(data.draw(st.lists(st.sampled_from(spec_names), max_size=4), label="names")) if spec_names else ()
    raw = thrift_codec.serialize(data.draw(_objects(cls), label="object"))
    _assert_fields_as_parse(thrift_backend, cls, raw, names)
    _assert_fields_as_parse(thrift_backend, cls, raw[:data.draw(st.integers(0, len(raw)), label="cut")], names)
    _assert_fields_as_parse(thrift_backend, cls, data.draw(mutated(raw), label="mutated"), names)


@pytest.mark.parametrize("case", sorted(QUIRKS))
def test_picked_fields_on_protocol_corners(thrift_backend: str, case: str) -> None:
    cls, blob = QUIRKS[case]
    names = tuple(spec[1] for spec in cls.thrift_spec.values())[:3]
    _assert_fields_as_parse(thrift_backend, cls, blob, names)


def _lookup_metas() -> list[Any]:
    return [chunk.meta_data for raw in REAL_FOOTERS.values()
            for rg in thrift_codec.parse(M.FileMetaData, raw)[0].row_groups for chunk in rg.columns]


LOOKUP_FIELDS = ("statistics", "num_values", "bloom_filter_offset", "bloom_filter_length")


def test_a_batch_gives_each_input_what_it_gives_alone(thrift_backend: str) -> None:
    metas = _lookup_metas()
    assert len(metas) >= 10
    raws = [thrift_codec.serialize(meta) for meta in metas]
    mixed = [raws[0], raws[1][:-2], b"\x00", raws[2] + b"\x00\x00", raws[3] + b"\x01", memoryview(bytearray(raws[4]))]
    batch = thrift_codec.parse_fields(M.ColumnMetaData, mixed, LOOKUP_FIELDS, zero_padding=True)
    alone = [_fields_outcome(thrift_backend, M.ColumnMetaData, data, LOOKUP_FIELDS, True) for data in mixed]
    assert repr(batch) == repr(alone)
    assert batch[1] is None and batch[2] is None and batch[4] is None  # cut; required fields missing; not padding
    for at, meta in ((0, metas[0]), (3, metas[2]), (5, metas[4])):
        assert batch[at] is not None and batch[at][0] == tuple(getattr(meta, name) for name in LOOKUP_FIELDS)
    assert batch[3][1] == len(raws[2])  # the padding is not consumed
    assert thrift_codec.parse_fields(M.ColumnMetaData, [raws[3] + b"\x01"], LOOKUP_FIELDS)[0] is not None
    assert thrift_codec.parse_fields(M.ColumnMetaData, [], LOOKUP_FIELDS) == []
    with pytest.raises(ValueError, match="ColumnMetaData has no field 'nope'"):
        thrift_codec.parse_fields(M.ColumnMetaData, raws[:1], ("num_values", "nope"))
