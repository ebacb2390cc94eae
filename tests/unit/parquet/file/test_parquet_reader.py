"""ParquetBloomReader on real files: parquet-testing vectors (parquet-java, parquet-mr, parquet-rs)
and pyarrow files; footer modes, AAD prefix handling, keys, strict tail checks (SPEC_NOTES 5-7, 10)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from support.parquet_files import DATA, TESTING_KEYS, vector_kms, write_encrypted, write_plain
from secure_bloom import SplitBlockBloomFilter, thrift_codec
from secure_bloom.errors import (
    AuthenticationError,
    ColumnNotFoundError,
    FooterSignatureError,
    MissingKeyError,
    MalformedThriftError,
    ModuleAuthenticationError,
    NotParquetError,
)
from secure_bloom.parquet import ABSENT, MAYBE, KeyAccess, ParquetBloomReader
from secure_bloom.header import serialize_header
from secure_bloom.spec import MAX_ORDINAL
from secure_bloom.parquet.file.crypto_context import sign_footer
from secure_bloom.types import FooterMode
from secure_bloom.values.column import hash_for_column
from secure_bloom.parquet.file.tail import read_tail

EXPLICIT = KeyAccess(explicit=TESTING_KEYS)
BLOOM_FILE = DATA / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
DOUBLES = [i + 0.5 for i in range(2000)]
FLOATS = np.array([i + 0.25 for i in range(2000)], dtype=np.float32)
STRINGS = ["Hello", "This is", "a", "test", "How", "are you", "doing ", "today", "the quick", "brown fox",
           "jumps", "over", "the lazy", "dog"]

# (file, key access, footer mode, algorithm)
VECTORS = [
    ("encrypt_columns_and_footer.parquet.encrypted", EXPLICIT, FooterMode.ENCRYPTED, "AES_GCM_V1"),
    ("encrypt_columns_and_footer_aad.parquet.encrypted", EXPLICIT, FooterMode.ENCRYPTED, "AES_GCM_V1"),
    ("encrypt_columns_and_footer_ctr.parquet.encrypted", EXPLICIT, FooterMode.ENCRYPTED, "AES_GCM_CTR_V1"),
    ("encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted",
     KeyAccess(explicit=TESTING_KEYS, aad_prefix="tester"), FooterMode.ENCRYPTED, "AES_GCM_V1"),
    ("encrypt_columns_plaintext_footer.parquet.encrypted", EXPLICIT, FooterMode.SIGNED, "AES_GCM_V1"),
    ("uniform_encryption.parquet.encrypted", EXPLICIT, FooterMode.ENCRYPTED, "AES_GCM_V1"),
    ("encrypt_columns_and_footer_bloom_filter.parquet.encrypted", EXPLICIT, FooterMode.ENCRYPTED, "AES_GCM_V1"),
    ("external_key_material_java.parquet.encrypted", KeyAccess(kms=vector_kms()), FooterMode.ENCRYPTED, "AES_GCM_V1"),
    ("data_index_bloom_encoding_stats.parquet", None, FooterMode.PLAINTEXT, None),
    ("data_index_bloom_encoding_with_length.parquet", None, FooterMode.PLAINTEXT, None),
]


@pytest.mark.parametrize("name,keys,mode,algorithm", VECTORS, ids=[v[0] for v in VECTORS])
def test_every_vector_opens(name: str, keys: KeyAccess | None, mode: str, algorithm: str | None) -> None:
    with ParquetBloomReader(DATA / name, keys) as r:
        assert r.footer.mode == mode
        desc = r.describe()
        json.dumps(desc)  # JSON-able
        assert desc["footer"]["mode"] == mode
        assert (desc["footer"]["encryption"] or {}).get("algorithm") == algorithm
        assert r.num_row_groups >= 1 and r.columns
        chunks = r.chunks()
        assert len(chunks) == r.num_row_groups * len(r.columns)
        assert all(c.key_available for c in chunks)  # every key resolved and every metadata decrypted
        if mode == FooterMode.SIGNED:
            assert r.footer.signature_verified is True
        if "encrypt_columns_and_footer" in name and "bloom" not in name:
            enc = {c.path: c.key_id for c in r.columns if c.encrypted}
            assert enc == {"double_field": "kc1", "float_field": "kc2"}


def test_encrypted_bloom_filter_vector_probes_and_rebuilds_byte_identical() -> None:
    with ParquetBloomReader(BLOOM_FILE, EXPLICIT) as r:
        double = r.probe("double_field", DOUBLES)
        assert [rg.row_group for rg in double.row_groups] == [0]
        assert double.row_groups[0].encrypted and double.row_groups[0].has_bloom_filter
        assert all(answer == MAYBE for _, answer in double.row_groups[0].values)
        floats = r.probe("float_field", list(FLOATS))
        assert all(answer == MAYBE for _, answer in floats.row_groups[0].values)
        absent = r.probe("double_field", [i + 0.25 for i in range(1000)])
        n_absent = sum(answer == ABSENT for _, answer in absent.row_groups[0].values)
        assert n_absent >= 900  # 2048-byte filter, 2000 values: fpp well under 5 %
        for column, values, ptype in (("double_field", np.array(DOUBLES), "DOUBLE"),
                                      ("float_field", FLOATS, "FLOAT")):
            got = r.bloom_filter(0, column)
            assert got is not None and got.num_bytes == 2048
            rebuilt = SplitBlockBloomFilter(got.num_bytes)
            rebuilt.insert(values, ptype)
            assert rebuilt.bitset == got.bitset
        assert r.bloom_filter(0, "int32_field") is None
        assert r.row_groups_maybe_containing("int32_field", 5) == [0]  # no filter: "maybe"
        assert r.row_groups_maybe_containing("double_field", 0.5) == [0]
        assert r.row_groups_maybe_containing("double_field", 2000.5) == []


@pytest.mark.parametrize("name,length", [("data_index_bloom_encoding_stats.parquet", None),
                                         ("data_index_bloom_encoding_with_length.parquet", 2064)])
def test_plaintext_vectors_read_and_rebuild_byte_identical(name: str, length: int | None) -> None:
    with ParquetBloomReader(DATA / name) as r:
        (chunk,) = r.chunks()
        assert chunk.has_bloom_filter and not chunk.encrypted and chunk.bloom_filter_length == length
        bf = r.bloom_filter(0, "String")
        assert bf is not None
        rebuilt = SplitBlockBloomFilter(bf.num_bytes)
        rebuilt.insert(STRINGS, "BYTE_ARRAY")
        assert rebuilt.to_bytes() == bf.to_bytes()
        result = r.probe("String", STRINGS + ["not there", "Hello!"])
        answers = dict(result.row_groups[0].values)
        assert all(answers[s] == MAYBE for s in STRINGS)
        assert answers["not there"] == ABSENT or answers["Hello!"] == ABSENT


def _data_regions(r: ParquetBloomReader) -> list[tuple[int, int]]:
    regions = []
    for rg in r.footer.metadata.row_groups:
        for cc in rg.columns:
            md = cc.meta_data
            if md is not None:
                start = md.dictionary_page_offset or md.data_page_offset
                regions.append((start, start + md.total_compressed_size))
    return regions


def test_probe_reads_only_the_tail_and_filter_bytes() -> None:
    with ParquetBloomReader(BLOOM_FILE, EXPLICIT) as r:
        r.probe("double_field", DOUBLES[:10])
        r.probe("float_field", list(FLOATS[:10]))
        filters = [(c.bloom_filter_offset, c.bloom_filter_offset + c.bloom_filter_length)
                   for c in r.chunks(with_sizes=False) if c.has_bloom_filter]
        tail = (r.tail.footer_offset, r.tail.file_size)
        for offset, n in r.read_ranges:
            end = offset + n
            inside = (end <= 4) or (tail[0] <= offset and end <= tail[1]) or any(
                lo <= offset and end <= hi for lo, hi in filters)
            assert inside, (offset, n)
        # nothing of the data pages, and not much at all: tail + two filters
        for lo, hi in _data_regions(r):
            assert all(offset + n <= lo or offset >= hi for offset, n in r.read_ranges)
        assert r.bytes_read <= 4 + 8 + len(r.tail.footer) + sum(hi - lo for lo, hi in filters)


def test_probe_of_pyarrow_plaintext_file_without_filters_is_maybe(tmp_path: Path) -> None:
    path = write_plain(tmp_path / "plain.parquet")
    with ParquetBloomReader(path) as r:
        assert r.num_row_groups == 3
        result = r.probe("ssn", ["000-00-0000", "zzz"])
        assert all(not rg.has_bloom_filter for rg in result.row_groups)
        assert {a for rg in result.row_groups for _, a in rg.values} == {MAYBE}
        assert r.row_groups_maybe_containing("id", 10**9) == [0, 1, 2]
        r.probe("ssn", [])  # no values: no answers, no error
        with pytest.raises(ColumnNotFoundError, match="nope"):
            r.probe("nope", ["x"])


def test_probe_result_json_shape() -> None:
    with ParquetBloomReader(BLOOM_FILE, EXPLICIT) as r:
        result = r.probe("double_field", [0.5, 1.0])
    doc = json.loads(result.to_json())
    assert doc == {"file": str(BLOOM_FILE), "column": "double_field", "values": ["0.5", "1.0"],
                   "row_groups": [{"row_group": 0, "has_bloom_filter": True, "encrypted": True,
                                   "values": [{"value": "0.5", "answer": "maybe"},
                                              {"value": "1.0", "answer": "absent"}]}]}
    assert result.row_groups_maybe_containing("0.5") == [0]
    assert result.maybe_row_groups(1) == []


NEG_NAN = float(np.array([0xFFF8000000000000], dtype=np.uint64).view(np.float64)[0])


@pytest.mark.parametrize("values", [[NEG_NAN, float("nan")], [float("nan"), NEG_NAN]])
def test_probe_answers_each_value_in_order_even_with_equal_labels(values: list[float]) -> None:
    """Regression: answers were keyed by display text, so -nan and nan collapsed into one answer
    whose value depended on the order; and each NaN is "maybe" (no NaN can be ruled out)."""
    with ParquetBloomReader(BLOOM_FILE, EXPLICIT) as r:
        result = r.probe("double_field", [*values, 1.0, 1.0], labels=["x", "x", "one", "one"])
    doc = result.to_dict()
    assert doc["values"] == ["x", "x", "one", "one"]
    assert doc["row_groups"][0]["values"] == [{"value": "x", "answer": MAYBE}, {"value": "x", "answer": MAYBE},
                                              {"value": "one", "answer": ABSENT}, {"value": "one", "answer": ABSENT}]
    assert [result.maybe_row_groups(i) for i in range(4)] == [[0], [0], [], []]
    with pytest.raises(KeyError, match="2 values probed are labelled 'x'"):
        result.row_groups_maybe_containing("x")
    with ParquetBloomReader(BLOOM_FILE, EXPLICIT) as r:
        assert [label for label, _ in r.probe("double_field", values).row_groups[0].values] == [
            "nan(0xfff8000000000000)" if v is NEG_NAN else "nan" for v in values]


def _pyarrow_file_with_filters(path: Path, columns: dict[str, object]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(columns)  # type: ignore[arg-type]
    pq.write_table(table, path, bloom_filter_options={name: {"ndv": 1000, "fpp": 0.01} for name in columns})
    return path


def test_probe_zero_finds_negative_zero_and_nan_finds_any_nan(tmp_path: Path) -> None:
    """Regression (issue 15 item 11): a column holding -0.0 and -NaN answered "absent" for 0 and nan
    (bit-exact hashes), while SQL holds them equal: an engine using the answer skipped the rows."""
    import pyarrow as pa

    doubles = [float(i) + 0.5 for i in range(500)] + [-0.0, NEG_NAN]
    path = _pyarrow_file_with_filters(tmp_path / "zeros.parquet", {
        "d": pa.array(doubles, pa.float64()), "f": pa.array(doubles, pa.float32())})
    with ParquetBloomReader(path) as r:
        for column in ("d", "f"):
            bf = r.bloom_filter(0, column)
            assert bf is not None
            info = r.column(column)  # the filter and the bit-exact API tell the zeros apart
            assert (bf.check_hash(hash_for_column(-0.0, info)), bf.check_hash(hash_for_column(0.0, info))) == (True, False)
            result = r.probe(column, [0.0, 0, -0.0, float("nan"), NEG_NAN, 0.5])
            assert [a for _, a in result.row_groups[0].values] == [MAYBE] * 6, column
            assert r.row_groups_maybe_containing(column, 0.0) == [0]
            assert r.row_groups_maybe_containing(column, float("nan")) == [0]


def test_probe_of_a_naive_datetime_on_a_utc_column_needs_its_zone(tmp_path: Path) -> None:
    """Regression (issue 15 item 26): PySpark's collect() in a non-UTC process returns naive LOCAL
    times; taken as UTC they answered "absent" for 200 of 200 stored values."""
    import datetime as dt
    import zoneinfo

    import pyarrow as pa

    from secure_bloom.errors import InvalidValueError

    paris = zoneinfo.ZoneInfo("Europe/Paris")
    instants = [dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=7 * i) for i in range(200)]
    local_naive = [t.astimezone(paris).replace(tzinfo=None) for t in instants]  # what collect() gives in Paris
    path = _pyarrow_file_with_filters(tmp_path / "ts.parquet", {
        "ts": pa.array(instants, pa.timestamp("us", tz="UTC")),
        "wall": pa.array(local_naive, pa.timestamp("us"))})
    with ParquetBloomReader(path) as r:
        with pytest.raises(InvalidValueError, match=r"column 'ts' .*naive.*timezone="):
            r.probe("ts", local_naive)
        with pytest.raises(InvalidValueError, match=r"column 'ts' .*naive.*timezone="):
            r.row_groups_maybe_containing("ts", local_naive[0])
        answers = r.probe("ts", local_naive, timezone="Europe/Paris").row_groups[0].values
        assert [a for _, a in answers] == [MAYBE] * 200
        assert r.row_groups_maybe_containing("ts", local_naive[0], timezone=paris) == [0]
        assert {a for _, a in r.probe("ts", instants).row_groups[0].values} == {MAYBE}
        assert {a for _, a in r.probe("wall", local_naive).row_groups[0].values} == {MAYBE}  # wall clock


# --- keys -----------------------------------------------------------------------------------------


def test_missing_footer_key_names_the_key_id_not_bytes() -> None:
    with pytest.raises(MissingKeyError, match="'kf'") as err:
        ParquetBloomReader(BLOOM_FILE, KeyAccess(explicit={"kc1": TESTING_KEYS["kc1"]}))
    for key in TESTING_KEYS.values():
        assert key.decode() not in str(err.value)
    with pytest.raises(MissingKeyError):
        ParquetBloomReader(BLOOM_FILE)  # no keys at all


def test_missing_column_key_names_column_and_key_id() -> None:
    keys = KeyAccess(explicit={"kf": TESTING_KEYS["kf"], "kc2": TESTING_KEYS["kc2"]})
    with ParquetBloomReader(BLOOM_FILE, keys) as r:
        assert r.probe("float_field", [0.25]).any_maybe  # kc2 is there
        with pytest.raises(MissingKeyError, match="double_field.*'kc1'") as err:
            r.probe("double_field", [0.5])
        assert "1234567890123450" not in str(err.value)
        info = {c.column: c for c in r.chunks()}
        assert info["double_field"].key_available is False and info["double_field"].has_bloom_filter is None
        assert info["float_field"].has_bloom_filter is True


def test_wrong_footer_key_is_an_authentication_error() -> None:
    keys = KeyAccess(explicit=dict(TESTING_KEYS, kf=b"x" * 16))
    with pytest.raises(ModuleAuthenticationError, match="FOOTER"):
        ParquetBloomReader(BLOOM_FILE, keys)


def test_wrong_column_key_is_an_authentication_error() -> None:
    keys = KeyAccess(explicit=dict(TESTING_KEYS, kc1=b"y" * 16))
    with ParquetBloomReader(BLOOM_FILE, keys) as r:
        with pytest.raises(ModuleAuthenticationError, match="COLUMN_META_DATA"):
            r.bloom_filter(0, "double_field")


def test_withheld_aad_prefix_must_be_supplied_and_right() -> None:
    path = DATA / "encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted"
    with pytest.raises(MissingKeyError, match="supply_aad_prefix"):
        ParquetBloomReader(path, EXPLICIT)
    with pytest.raises(ModuleAuthenticationError, match="AAD prefix"):
        ParquetBloomReader(path, KeyAccess(explicit=TESTING_KEYS, aad_prefix="wrong"))


def test_supplied_prefix_must_match_a_stored_one() -> None:
    path = DATA / "encrypt_columns_and_footer_aad.parquet.encrypted"
    with ParquetBloomReader(path, KeyAccess(explicit=TESTING_KEYS, aad_prefix="tester")) as r:
        assert r.footer.params is not None and r.footer.params.aad_prefix_stored == b"tester"
    with pytest.raises(AuthenticationError, match="differs"):
        ParquetBloomReader(path, KeyAccess(explicit=TESTING_KEYS, aad_prefix="other"))
    with pytest.raises(AuthenticationError, match="without one"):
        ParquetBloomReader(DATA / "encrypt_columns_and_footer.parquet.encrypted",
                           KeyAccess(explicit=TESTING_KEYS, aad_prefix="tester"))


def test_plaintext_footer_readable_without_keys_for_plaintext_columns() -> None:
    path = DATA / "encrypt_columns_plaintext_footer.parquet.encrypted"
    with ParquetBloomReader(path) as r:
        assert r.footer.mode == FooterMode.SIGNED and r.footer.signature_verified is None
        assert r.describe()["footer"]["signature"] == "unverified"
        assert r.probe("int64_field", [1]).row_groups[0].values == (("1", MAYBE),)
        with pytest.raises(MissingKeyError, match="double_field"):
            r.probe("double_field", [0.5])


def test_plaintext_footer_signature_is_checked_when_the_footer_key_is_known(tmp_path: Path) -> None:
    src = DATA / "encrypt_columns_plaintext_footer.parquet.encrypted"
    data = bytearray(src.read_bytes())
    pos = data.rfind(b"int64_field")  # a schema name, in the signed FileMetaData
    assert pos > 0
    data[pos] ^= 0x20
    bad = tmp_path / "tampered.parquet"
    bad.write_bytes(bytes(data))
    with pytest.raises(FooterSignatureError):
        ParquetBloomReader(bad, EXPLICIT)
    with ParquetBloomReader(bad) as r:  # without the key it cannot be checked: reported unverified
        assert r.footer.signature_verified is None
    wrong = KeyAccess(explicit=dict(TESTING_KEYS, kf=b"z" * 16))
    with pytest.raises(FooterSignatureError):
        ParquetBloomReader(src, wrong)


def test_tampered_encrypted_column_metadata_fails_authentication(tmp_path: Path) -> None:
    src = DATA / "encrypt_columns_plaintext_footer.parquet.encrypted"
    with ParquetBloomReader(src, EXPLICIT) as r:
        module = bytes(r.footer.metadata.row_groups[0].columns[5].encrypted_column_metadata)
    data = bytearray(src.read_bytes())
    pos = data.find(module)
    assert pos > 0
    data[pos + 40] ^= 0x01
    bad = tmp_path / "tampered.parquet"
    bad.write_bytes(bytes(data))
    # Keys given but not the footer's: the signed footer cannot be verified, so nothing is read
    # (no silent downgrade to an unauthenticated footer).
    column_keys_only = KeyAccess(explicit={"kc1": TESTING_KEYS["kc1"]})
    with pytest.raises(MissingKeyError, match="signed plaintext footer cannot be verified"):
        ParquetBloomReader(bad, column_keys_only)
    # With every key, the footer signature (which covers the encrypted ColumnMetaData) catches it.
    with pytest.raises(FooterSignatureError):
        ParquetBloomReader(bad, EXPLICIT)


def test_tampered_encrypted_footer_fails_authentication(tmp_path: Path) -> None:
    data = bytearray(BLOOM_FILE.read_bytes())
    data[-100] ^= 0x01  # inside the footer module's ciphertext
    bad = tmp_path / "tampered.parquet.encrypted"
    bad.write_bytes(bytes(data))
    with pytest.raises(ModuleAuthenticationError, match="FOOTER"):
        ParquetBloomReader(bad, EXPLICIT)


def test_tampered_filter_module_fails_authentication(tmp_path: Path) -> None:
    with ParquetBloomReader(BLOOM_FILE, EXPLICIT) as r:
        offset = next(c.bloom_filter_offset for c in r.chunks(with_sizes=False) if c.column == "float_field")
    for delta, module in ((30, "BLOOM_FILTER_HEADER"), (200, "BLOOM_FILTER_BITSET")):
        data = bytearray(BLOOM_FILE.read_bytes())
        data[offset + delta] ^= 0x04
        bad = tmp_path / f"tampered{delta}.parquet.encrypted"
        bad.write_bytes(bytes(data))
        with ParquetBloomReader(bad, EXPLICIT) as r:
            with pytest.raises(ModuleAuthenticationError, match=module):
                r.bloom_filter(0, "float_field")
            assert r.bloom_filter(0, "double_field") is not None  # the other filter is intact


# --- strict tail --------------------------------------------------------------------------------


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d[:11], "too short"),
    (lambda d: d[:-4] + b"PAR2", "bad trailing magic"),
    (lambda d: b"PAR0" + d[4:], "leading magic"),
    (lambda d: d[:-8] + struct.pack("<I", len(d)) + d[-4:], "footer length"),
    (lambda d: d[:-8] + struct.pack("<I", 0) + d[-4:], "footer length"),
    (lambda d: b"", "too short"),
])
def test_tail_checks_raise_not_parquet(tmp_path: Path, mutate: object, match: str) -> None:
    data = (DATA / "data_index_bloom_encoding_stats.parquet").read_bytes()
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(mutate(data))  # type: ignore[operator]
    with pytest.raises(NotParquetError, match=match):
        ParquetBloomReader(bad)


def test_garbage_footer_is_a_malformed_thrift_error(tmp_path: Path) -> None:
    from secure_bloom.errors import MalformedThriftError

    data = bytearray((DATA / "data_index_bloom_encoding_stats.parquet").read_bytes())
    (length,) = struct.unpack_from("<I", data, len(data) - 8)
    start = len(data) - 8 - length
    data[start:start + 40] = b"\xff" * 40
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    with pytest.raises(MalformedThriftError):
        ParquetBloomReader(bad)


# --- Thrift round trip of real footers (attach depends on it) -----------------------------------


def _footer_thrift(path: Path, keys: KeyAccess | None) -> list[bytes]:
    with ParquetBloomReader(path, keys) as r:
        out = [r.footer.metadata_thrift]
        for chunk in r.column_chunks():
            thrift = r.column_metadata_thrift(chunk) if chunk.encrypted else None
            if thrift is not None:
                out.append(thrift)
        assert thrift_codec.serialize(r.footer.metadata) == out[0]
        return out


@pytest.mark.parametrize("name,keys,mode,algorithm", VECTORS, ids=[v[0] for v in VECTORS])
def test_parquet_java_footers_round_trip_byte_identical(name: str, keys: KeyAccess | None, mode: str,
                                                        algorithm: str | None) -> None:
    m = thrift_codec.idl()
    blobs = _footer_thrift(DATA / name, keys)
    metadata, _ = thrift_codec.parse(m.FileMetaData, blobs[0])
    assert thrift_codec.serialize(metadata) == blobs[0]
    for blob in blobs[1:]:
        meta, _ = thrift_codec.parse(m.ColumnMetaData, blob)
        assert thrift_codec.serialize(meta) == blob


@pytest.mark.parametrize("plaintext_footer", [None, False, True])
def test_pyarrow_footers_round_trip_byte_identical(tmp_path: Path, plaintext_footer: bool | None) -> None:
    path = tmp_path / "f.parquet"
    if plaintext_footer is None:
        write_plain(path, write_statistics=True, write_page_index=True)
    else:
        write_encrypted(path, plaintext_footer=plaintext_footer, write_page_index=True)
    blobs = _footer_thrift(path, KeyAccess(kms=vector_kms()))
    assert len(blobs) >= 1
    m = thrift_codec.idl()
    for blob in blobs[1:]:
        meta, _ = thrift_codec.parse(m.ColumnMetaData, blob)
        assert thrift_codec.serialize(meta) == blob


def test_reader_on_a_copy_with_external_key_material_needs_the_sidecar(tmp_path: Path) -> None:
    name = "external_key_material_java.parquet.encrypted"
    shutil.copy(DATA / name, tmp_path / name)
    from secure_bloom.errors import KeyNotFoundError

    with pytest.raises((MissingKeyError, KeyNotFoundError), match="_KEY_MATERIAL_FOR_"):
        ParquetBloomReader(tmp_path / name, KeyAccess(kms=vector_kms()))
    with ParquetBloomReader(tmp_path / name, KeyAccess(kms=vector_kms()),
                            key_material_file=DATA / name) as r:
        assert r.footer.mode == FooterMode.ENCRYPTED


def test_external_key_material_is_labelled_with_its_master_key_ids() -> None:
    with ParquetBloomReader(DATA / "external_key_material_java.parquet.encrypted", KeyAccess(kms=vector_kms())) as r:
        assert {c.path: c.key_id for c in r.columns} == {"integers": "kc1", "strings": "kc2"}
        assert r.describe()["footer"]["footer_key_id"] == "kf"


def test_signed_footer_with_an_unknown_footer_master_key_stays_readable(tmp_path: Path) -> None:
    """The KMS does not know kf: by default that is an error (no silent downgrade); with the
    explicit opt-in the plaintext footer opens unverified, plaintext columns probe, encrypted
    columns still need their own key."""
    from secure_bloom.kms import KeyListKms

    path = write_encrypted(tmp_path / "signed.parquet", plaintext_footer=True)
    kms = KeyListKms({"kc2": TESTING_KEYS["kc2"]})
    with pytest.raises(MissingKeyError, match="cannot be verified"):
        ParquetBloomReader(path, KeyAccess(kms=kms))
    keys = KeyAccess(kms=kms, allow_unverified_footer=True)
    with ParquetBloomReader(path, keys) as r:
        assert r.footer.signature_verified is None and r.footer.footer_key is None
        assert r.row_groups_maybe_containing("id", 1) == [0, 1, 2]  # no filters: maybe everywhere
        assert r.column("ts").key_id == "kc2" and r.column("ssn").key_id == "kc1"
        r.bloom_filter(0, "ts")  # kc2 is known
        with pytest.raises(MissingKeyError, match="'ssn'.*'kc1'"):
            r.bloom_filter(0, "ssn")


def _ambiguous_file(path: Path) -> Path:
    """A top-level column named ``a.b`` and the field ``b`` of a struct ``a``: both are "a.b"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"a.b": pa.array(["top1", "top2"]), "a": pa.array([{"b": "nested1"}, {"b": "nested2"}])})
    pq.write_table(table, path)
    return path


def test_an_ambiguous_dotted_path_is_an_error_that_names_both(tmp_path: Path) -> None:
    from secure_bloom.errors import AmbiguousColumnError

    with ParquetBloomReader(_ambiguous_file(tmp_path / "amb.parquet")) as r:
        with pytest.raises(AmbiguousColumnError,
                           match=r"""column 'a.b' is ambiguous: it names the leaves \["a.b"\] and \["a", "b"\]; """
                                 r"""name one by its path parts \(API: a tuple such as \('a.b',\); CLI: --column '\["a.b"\]'\)"""):
            r.column("a.b")
        with pytest.raises(AmbiguousColumnError, match="ambiguous"):
            r.probe("a.b", ["top1"])
        top, nested = r.column(("a.b",)), r.column(["a", "b"])
        assert (top.ordinal, top.path_in_schema, nested.ordinal, nested.path_in_schema) == \
            (0, ("a.b",), 1, ("a", "b"))
        assert r.column(nested) is nested and r.column(top) is top  # a ColumnInfo is never ambiguous
        with pytest.raises(ColumnNotFoundError, match=r"""no leaf column \["a", "c"\]"""):
            r.column(("a", "c"))
        with pytest.raises(TypeError, match="got float"):
            r.column(1.5)  # type: ignore[arg-type]
SIGNED_VECTOR = DATA / "encrypt_columns_plaintext_footer.parquet.encrypted"


def _signed_vector() -> tuple[bytes, int, Any, bytes]:
    """(file bytes, footer offset, parsed FileMetaData, signature) of SIGNED_VECTOR."""
    data = SIGNED_VECTOR.read_bytes()
    with open(SIGNED_VECTOR, "rb") as f:
        tail = read_tail(f, str(SIGNED_VECTOR))
    md, used = thrift_codec.parse(thrift_codec.idl().FileMetaData, tail.footer)
    return data, tail.footer_offset, md, tail.footer[used:]


def _write_footer(dst: Path, data_region: bytes, md: Any, signature: bytes) -> Path:
    footer = thrift_codec.serialize(md) + signature
    dst.write_bytes(data_region + footer + struct.pack("<I", len(footer)) + b"PAR1")
    return dst


def _forge_signed_footer(dst: Path, *, strip_encryption: bool) -> Path:
    """The attacks of issue 15 item 2 on a signed plaintext footer, without any key: point the
    plaintext column ``int64_field`` at a forged all-zero filter (every probe "absent"), then
    either set ``supply_aad_prefix`` (the file AAD becomes unavailable, so the signature was
    skipped) or strip ``encryption_algorithm``, the signing key id and the signature."""
    data, footer_offset, md, signature = _signed_vector()
    forged = serialize_header(32) + bytes(32)
    for rg in md.row_groups:
        meta = rg.columns[0].meta_data  # int64_field, a plaintext column
        meta.bloom_filter_offset, meta.bloom_filter_length = footer_offset, len(forged)
    if strip_encryption:
        md.encryption_algorithm = md.footer_signing_key_metadata = None
        signature = b""
    else:
        algorithm = md.encryption_algorithm
        (algorithm.AES_GCM_V1 or algorithm.AES_GCM_CTR_V1).supply_aad_prefix = True
    return _write_footer(dst, data[:footer_offset] + forged, md, signature)


def test_setting_supply_aad_prefix_does_not_switch_the_signature_check_off(tmp_path: Path) -> None:
    """Regression (issue 15 item 2): with every key given the forged footer opened with
    ``signature_verified=None`` and probes answered "absent". Now it is refused unless the caller
    opts in; the opt-in reads it unverified, as documented."""
    path = _forge_signed_footer(tmp_path / "forged.parquet", strip_encryption=False)
    with pytest.raises(MissingKeyError, match=r"withheld AAD prefix.*signed plaintext footer cannot be verified"):
        ParquetBloomReader(path, EXPLICIT)
    with pytest.raises(FooterSignatureError, match="does not verify"):  # a prefix supplied: checked
        ParquetBloomReader(path, KeyAccess(explicit=TESTING_KEYS, aad_prefix=b"guess"))
    opt_in = KeyAccess(explicit=TESTING_KEYS, allow_unverified_footer=True)
    with ParquetBloomReader(path, opt_in) as r:
        assert r.footer.signature_verified is None
        assert r.describe()["footer"]["signature"] == "unverified"


def test_footer_with_its_encryption_stripped_is_not_read_as_plain(tmp_path: Path) -> None:
    """Regression (issue 15 item 2, variant): without encryption_algorithm and signature but with
    the columns' crypto metadata, the file was accepted as plaintext and probes answered "absent"."""
    path = _forge_signed_footer(tmp_path / "stripped.parquet", strip_encryption=True)
    for keys in (EXPLICIT, None):
        with pytest.raises(MalformedThriftError,
                           match="row group 0 column chunk 4 carries encryption metadata but the footer "
                                 "declares no encryption algorithm"):
            ParquetBloomReader(path, keys)


def _resigned_vector(dst: Path, edit: Any) -> Path:
    """SIGNED_VECTOR with ``edit(metadata)`` applied and the footer signed again with the real
    footer key: the footer is authentic, only its content is hostile."""
    data, footer_offset, md, _ = _signed_vector()
    with ParquetBloomReader(SIGNED_VECTOR, EXPLICIT) as r:
        file_aad = r.footer.require_file_aad()
    edit(md)
    thrift_bytes = thrift_codec.serialize(md)
    return _write_footer(dst, data[:footer_offset], md, sign_footer(thrift_bytes, TESTING_KEYS["kf"], file_aad))


def _footer_key_chunk(m: Any, name: str) -> Any:
    meta = m.ColumnMetaData(type=2, encodings=[0], path_in_schema=[name], codec=0, num_values=0,
                            total_uncompressed_size=0, total_compressed_size=0, data_page_offset=4)
    crypto = m.ColumnCryptoMetaData(ENCRYPTION_WITH_FOOTER_KEY=m.EncryptionWithFooterKey())
    return m.ColumnChunk(file_offset=4, meta_data=meta, crypto_metadata=crypto)


def _many_row_groups(md: Any) -> None:
    m = thrift_codec.idl()
    md.schema = [m.SchemaElement(name="root", num_children=1), m.SchemaElement(name="a", type=2, repetition_type=0)]
    md.row_groups = [m.RowGroup(columns=[_footer_key_chunk(m, "a")], total_byte_size=0, num_rows=0)
                     for _ in range(MAX_ORDINAL + 2)]


def _many_columns(md: Any) -> None:
    m = thrift_codec.idl()
    names = [f"c{i}" for i in range(MAX_ORDINAL + 2)]
    md.schema = [m.SchemaElement(name="root", num_children=len(names))] + [
        m.SchemaElement(name=n, type=2, repetition_type=0) for n in names]
    md.row_groups = [m.RowGroup(columns=[_footer_key_chunk(m, n) for n in names], total_byte_size=0, num_rows=0)]


def _row_group_ordinal(value: int) -> Any:
    def edit(md: Any) -> None:
        md.row_groups[0].ordinal = value
    return edit


@pytest.mark.parametrize(("edit", "error"), [
    (_row_group_ordinal(-1), r"row group 0 has ordinal -1; an encrypted file's row-group ordinals are 0\.\.32767 "
                             r"\(a file with more than 32768 row groups cannot be encrypted\)"),
    (_row_group_ordinal(-32768), "row group 0 has ordinal -32768"),
    (_many_row_groups, "row group 32768 has ordinal 32768; an encrypted file's row-group ordinals"),
    (_many_columns, r"column 'c32768' is encrypted at leaf ordinal 32768; an encrypted file's column ordinals "
                    r"are 0\.\.32767 \(a file with more than 32768 leaf columns cannot be encrypted\)"),
], ids=["rg-ordinal-minus-1", "rg-ordinal-min-i16", "32769-row-groups", "32769-columns"])
def test_authenticated_footer_with_ordinals_outside_int16_is_malformed(tmp_path: Path, edit: Any, error: str) -> None:
    """Regression (issue 15 item 15): an authentic footer naming ordinals an AAD cannot hold
    raised modules.py's bare ValueError "row_group_ordinal must be in 0..32767" on first use."""
    path = _resigned_vector(tmp_path / "ordinals.parquet", edit)
    with pytest.raises(MalformedThriftError, match=error):
        with ParquetBloomReader(path, EXPLICIT) as r:
            r.describe()


def _sparse_filters(dst: Path, *, groups: int, num_bytes: int, shared: bool) -> Path:
    """A plaintext file of ``groups`` row groups whose footer points every chunk at an all-zero
    filter of ``num_bytes``: one filter for all (``shared``) or one each, stored as holes, so the
    file takes a few KiB on disk whatever its filters claim (issue 15 item 8)."""
    import pyarrow as pa

    src = write_plain(dst.with_suffix(".src.parquet"), pa.table({"x": pa.array(range(groups), pa.int64())}),
                      row_group_size=1)
    data = src.read_bytes()
    with open(src, "rb") as f:
        tail = read_tail(f, str(src))
    md, _ = thrift_codec.parse(thrift_codec.idl().FileMetaData, tail.footer)
    header = serialize_header(num_bytes)
    size = len(header) + num_bytes
    for i, rg in enumerate(md.row_groups):
        rg.columns[0].meta_data.bloom_filter_offset = tail.footer_offset + (0 if shared else i * size)
        rg.columns[0].meta_data.bloom_filter_length = size
    footer = thrift_codec.serialize(md)
    with open(dst, "wb") as f:
        f.write(data[:tail.footer_offset])
        for i in range(1 if shared else groups):
            f.write(header)
            f.seek(num_bytes, 1)  # a hole of zeros
        f.write(footer + struct.pack("<I", len(footer)) + b"PAR1")
    return dst


def test_chunks_sharing_one_bitset_are_not_held_once_per_reference(tmp_path: Path) -> None:
    """Regression (issue 15 item 8): ``inspect`` of a sparse file whose chunks all point at one
    bitset held a copy per chunk (6 x 32 MiB here; 1 GB for 6 x 128 MiB). Sizes now come from
    the headers alone, and a plaintext filter read once serves every chunk that points at it."""
    from support.robustness_support import allocation_peak

    mib = 1 << 20
    path = _sparse_filters(tmp_path / "shared.parquet", groups=6, num_bytes=32 * mib, shared=True)
    assert path.stat().st_blocks * 512 < mib  # sparse: the test file costs no disk
    with ParquetBloomReader(path) as r:
        with allocation_peak() as peak:
            sizes = [c.filter_num_bytes for c in r.chunks(with_sizes=True)]
        assert sizes == [32 * mib] * 6
        assert peak() < mib
        with allocation_peak() as peak:
            answers = r.probe("x", [1]).row_groups
        assert [rg.values for rg in answers] == [(("1", ABSENT),)] * 6
        assert r.bloom_filter(0, "x") is r.bloom_filter(5, "x")
    assert peak() < 3 * 32 * mib  # one cached copy plus the read in flight, not six


def test_filter_cache_is_bounded_by_its_budget(tmp_path: Path) -> None:
    """Distinct filters beyond ``filter_cache_bytes`` evict the least recently used: a reader
    holds its budget plus the filter being read, whatever the footer points at."""
    from support.robustness_support import allocation_peak

    mib = 1 << 20
    path = _sparse_filters(tmp_path / "distinct.parquet", groups=8, num_bytes=4 * mib, shared=False)
    with ParquetBloomReader(path, filter_cache_bytes=8 * mib) as r:
        with allocation_peak() as peak:
            for rg in range(r.num_row_groups):
                assert r.bloom_filter(rg, "x").num_bytes == 4 * mib  # type: ignore[union-attr]
        assert peak() < (8 + 3 * 4) * mib  # 32 MiB without the budget
        assert r.bloom_filter(7, "x") is r.bloom_filter(7, "x")  # most recent: still cached
    with ParquetBloomReader(path, filter_cache_bytes=0) as r:
        assert r.bloom_filter(0, "x") is not r.bloom_filter(0, "x")  # nothing cached
    with pytest.raises(ValueError, match="filter_cache_bytes must be an int >= 0"):
        ParquetBloomReader(path, filter_cache_bytes=-1)


def test_plaintext_filter_on_encrypted_column_is_named_and_isolated(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from support import leaky_writer as lw

    from secure_bloom.errors import PlaintextFilterOnEncryptedColumnError
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader

    src, dst = tmp_path / "src.parquet", tmp_path / "leak.parquet"
    lw.write_pyarrow_encrypted(src)
    keys = KeyAccess(kms=KeyListKms(lw.key_list()))
    values = lw.table_values()
    lw.inject_filters(src, dst, {"ssn": "plaintext", "email": "column_key"}, keys,
                      values={"ssn": values["ssn"], "email": values["email"]})
    with ParquetBloomReader(dst, keys=keys) as reader:
        with pytest.raises(PlaintextFilterOnEncryptedColumnError, match="stored in plaintext"):
            reader.bloom_filter(0, "ssn")
        chunks = {(c.row_group, c.column): c for c in reader.chunks()}
        assert chunks[(0, "ssn")].filter_error is not None and "plaintext" in chunks[(0, "ssn")].filter_error
        assert chunks[(0, "email")].filter_error is None and chunks[(0, "email")].filter_num_bytes
        assert reader.row_groups_maybe_containing("email", values["email"][1][0]) == [1]
        assert reader.describe()  # one leaked chunk does not stop the rest from being described


# --- data keys: dropped on close, never cached longer than the KEK cache lifetime -------------


@pytest.mark.parametrize("lifetime", [600.0, 0.0])
def test_reader_drops_data_keys_on_close(lifetime: float) -> None:
    """A reader held its column keys (and the footer key) for its whole life, after close too."""
    path = DATA / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
    keys = KeyAccess(explicit=TESTING_KEYS, cache_lifetime_s=lifetime)
    reader = ParquetBloomReader(path, keys=keys)
    with reader:
        assert reader.row_groups_maybe_containing("double_field", 3.5) == [0]
        assert reader.row_groups_maybe_containing("float_field", 1.25) == [0]
        # footer key + kc1 + kc2 while cached; with lifetime 0 only the footer key (no cache)
        assert reader.keys_held == (3 if lifetime else 1)
    assert reader.keys_held == 0 and reader.footer.footer_key is None


@pytest.mark.parametrize("lifetime", [600.0, 0.0])
def test_reader_keeps_one_crypto_context_per_chunk_only_while_its_key_is_cached(lifetime: float) -> None:
    """The metadata decrypt and the filter read share one context per chunk; a column key's
    contexts live in its key's cache entry, so with no key cache none is kept either."""
    keys = KeyAccess(explicit=TESTING_KEYS, cache_lifetime_s=lifetime)
    reader = ParquetBloomReader(BLOOM_FILE, keys=keys)
    with reader:
        column_key = reader.chunk(0, "double_field")
        assert column_key.encryption == "column_key"
        first = reader.crypto_context(column_key)
        assert (first.row_group_ordinal, first.column_ordinal) == (0, column_key.column_ordinal)
        assert (reader.crypto_context(column_key) is first) == bool(lifetime)
        assert reader.row_groups_maybe_containing("double_field", 3.5) == [0]
        assert "bytes>" in repr(first) and first.key.hex() not in repr(first)


def test_reader_keeps_footer_key_contexts_until_close() -> None:
    reader = ParquetBloomReader(DATA / "uniform_encryption.parquet.encrypted", keys=EXPLICIT)
    with reader:
        chunk = reader.column_chunks()[0]
        assert chunk.encryption == "footer_key"
        assert reader.crypto_context(chunk) is reader.crypto_context(chunk)
    with pytest.raises(MissingKeyError, match="footer key"):
        reader.crypto_context(chunk)
