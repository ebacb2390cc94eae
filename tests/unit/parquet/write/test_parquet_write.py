"""secure_bloom.parquet.write.writer: encrypted files with encrypted Bloom filters in one call.

Every file is read back by pyarrow (the identical table), its filters by our reader and, as an
independent check of every inserted value, compared bit for bit with the filters ``attach``
builds from the values pyarrow decrypts from the same file.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from support.kms_support import CountingKms
from support.parquet_files import COLUMN_KEYS, crypto_factory, read_encrypted, sample_table, vector_kms

from secure_bloom.errors import (
    SecureBloomError,
    ColumnNotFoundError,
    KmsUnavailableError,
    UnsupportedParquetFeatureError,
)
from secure_bloom.kms import KeyListKms
from secure_bloom.kms.material import KeyMaterial, KeyMetadata
from secure_bloom.kms.sidecar import sidecar_path
from secure_bloom.parquet import (
    ChunkEncryption,
    FooterMode,
    KeyAccess,
    ParquetBloomReader,
    ParquetWriter,
    attach_bloom_filters,
    write_table,
    write_to_dataset,
)
from secure_bloom.parquet.audit.auditor import audit
from secure_bloom.parquet.write.key_tools import MAX_SHARED, clear_key_caches
from secure_bloom.parquet.write.sink import SyncingSink

KEYS = KeyAccess(kms=vector_kms())


def _config(**options: Any) -> pe.EncryptionConfiguration:
    options.setdefault("column_keys", COLUMN_KEYS)
    return pe.EncryptionConfiguration(footer_key="kf", **options)


def _filters(path: Path, columns: list[str]) -> dict[tuple[int, str], bytes]:
    with ParquetBloomReader(path, KEYS) as reader:
        out = {}
        for column in columns:
            for rg, bf in reader.iter_filters(column):
                assert bf is not None, (rg, column)
                out[(rg, column)] = bf.bitset
        return out


def _same_as_attach(path: Path, tmp_path: Path, columns: list[str]) -> None:
    """attach rebuilds each filter from the values pyarrow decrypts from the file: equal bits."""
    rebuilt = tmp_path / "rebuilt.parquet"
    attach_bloom_filters(path, rebuilt, columns, KEYS, overwrite=True)
    assert _filters(path, columns) == _filters(rebuilt, columns)


def _leftovers(folder: Path, expected: set[str]) -> set[str]:
    return {p.name for p in folder.iterdir()} - expected


def test_round_trip_encrypted_filters_plaintext_filters_and_report(tmp_path: Path) -> None:
    table = sample_table()
    path = tmp_path / "out.parquet"
    report = write_table(table, path, encryption=_config(), kms=vector_kms(),
                         bloom_filter_options={"ssn": True, "id": {"fpp": 0.001}, "ts": {"ndv": 5000}},
                         row_group_size=1000, compression="zstd", write_page_checksum=True)
    assert _leftovers(tmp_path, {"out.parquet"}) == set()
    props = crypto_factory().file_decryption_properties(pe.KmsConnectionConfig())
    assert pq.read_table(path, decryption_properties=props, page_checksum_verification=True).equals(table)
    assert report.num_rows == 3000 and report.row_groups == 3 and report.size == path.stat().st_size
    assert [(f.row_group, f.column) for f in report.filters] == [(rg, c) for rg in range(3) for c in ("ssn", "id", "ts")]
    by = {(f.row_group, f.column): f for f in report.filters}
    assert by[(0, "ssn")].encrypted and by[(0, "ts")].encrypted and not by[(0, "id")].encrypted
    assert by[(1, "ssn")].ndv == 1000 and by[(1, "ts")].ndv == 5000 and by[(2, "id")].values == 1000
    assert by[(0, "id")].num_bytes == 2048 and 0 < by[(0, "id")].expected_fpp < 0.002  # 1000 values at 0.1 %
    assert report.verified_values == 9 * 64
    # Arrow C++ (pyarrow 26) decrypts the rewritten ColumnMetaData and sees each filter's place
    metadata = pq.ParquetFile(path, decryption_properties=props).metadata
    ordinal = {"id": 0, "ssn": 1, "ts": 4}
    assert [(metadata.row_group(f.row_group).column(ordinal[f.column]).bloom_filter_offset,
             metadata.row_group(f.row_group).column(ordinal[f.column]).bloom_filter_length)
            for f in report.filters] == [(f.offset, f.length) for f in report.filters]
    with ParquetBloomReader(path, KEYS) as reader:
        assert reader.footer.mode is FooterMode.ENCRYPTED
        kinds = {(c.column, c.encryption) for c in reader.chunks() if c.has_bloom_filter}
        assert kinds == {("ssn", ChunkEncryption.COLUMN_KEY), ("ts", ChunkEncryption.COLUMN_KEY),
                         ("id", ChunkEncryption.PLAINTEXT)}
        for i in (0, 999, 1000, 2999):
            assert reader.row_groups_maybe_containing("ssn", table["ssn"][i].as_py()) == [i // 1000]
            assert reader.row_groups_maybe_containing("id", i) == [i // 1000]
        assert reader.row_groups_maybe_containing("id", 10**9) == []
    result = audit([path], ["ssn", "ts"], keys=KEYS)
    assert result.exit_code == 0 and not result.violations
    _same_as_attach(path, tmp_path, ["ssn", "id"])


def _extreme_table() -> tuple[pa.Table, dict[str, Any]]:
    i32, i64 = np.iinfo(np.int32), np.iinfo(np.int64)
    columns = {
        "i32": pa.array([i32.min, -1, 0, 1, i32.max, None], pa.int32()),
        "i64": pa.array([i64.min, -1, 0, 1, i64.max, None], pa.int64()),
        "u32": pa.array([0, 1, 2**31, 2**32 - 1, 7, None], pa.uint32()),
        "f32": pa.array([np.float32(-3.4e38), -1.5, 1e-45, 3.4e38, np.inf, None], pa.float32()),
        "f64": pa.array([-1.7e308, -0.5, 5e-324, 1.7e308, -np.inf, None], pa.float64()),
        "text": pa.array(["", "a", "é中🙂", "x" * 1000, "\x00nul", None], pa.string()),
        "large_text": pa.array(["", "b", "ü", "y" * 300, "z", None], pa.large_string()),
        "blob": pa.array([b"", b"\x00", b"\xff" * 20, b"\x80abc", b"q", None], pa.binary()),
        "fixed": pa.array([b"\x00" * 4, b"\xff" * 4, b"abcd", b"\x80\x00\x00\x01", b"zzzz", None], pa.binary(4)),
        "dec9": pa.array([Decimal("-9999999.99"), Decimal("0"), Decimal("9999999.99"), Decimal("-0.01"),
                          Decimal("1.23"), None], pa.decimal128(9, 2)),
        "dec18": pa.array([Decimal("-" + "9" * 18), Decimal("0"), Decimal("9" * 18), Decimal(1), Decimal(-1), None],
                          pa.decimal128(18, 0)),
        "dec38": pa.array([Decimal("-" + "9" * 38), Decimal("0"), Decimal("9" * 38), Decimal(1), Decimal(-1), None],
                          pa.decimal128(38, 0)),
        "dec76": pa.array([Decimal("-" + "9" * 76), Decimal("0"), Decimal("9" * 76), Decimal(2), Decimal(-2), None],
                          pa.decimal256(76, 0)),
        "day": pa.array([dt.date(1, 1, 1), dt.date(1970, 1, 1), dt.date(9999, 12, 31), dt.date(2024, 2, 29),
                         dt.date(1969, 12, 31), None], pa.date32()),
    }
    for unit in ("s", "ms", "us", "ns"):
        # seconds are stored as milliseconds: the extremes that still fit
        low, high = (i64.min // 1000 + 1, i64.max // 1000) if unit == "s" else (i64.min + 1, i64.max)
        columns[f"ts_{unit}"] = pa.array([low, -1, 0, 1, high, None], pa.timestamp(unit, tz="UTC"))
    columns["ts_local"] = pa.array([-(2**40), -1, 0, 1, 2**40, None], pa.timestamp("us"))
    return pa.table(columns), columns


def _python_value(scalar: pa.Scalar) -> Any:
    try:
        return scalar.as_py()
    except (OverflowError, ValueError):
        return None


@pytest.mark.parametrize("options", [{}, {"store_decimal_as_integer": True}, {"version": "1.0"}],
                         ids=["default", "decimals-as-integers", "version-1.0"])
def test_every_supported_type_at_its_extremes(tmp_path: Path, options: dict[str, Any]) -> None:
    table, columns = _extreme_table()
    if options.get("version") == "1.0":  # no nanoseconds in Parquet 1.0 (pyarrow coerces them)
        table = table.drop_columns(["ts_ns"])
    names = [n for n in table.column_names]
    path = tmp_path / "types.parquet"
    keys = {"kc1": names[::2], "kc2": names[1::2]}
    report = write_table(table, path, encryption=_config(column_keys=keys), kms=vector_kms(),
                         bloom_filter_options={n: True for n in names}, row_group_size=3,
                         allow_truncated_timestamps=False, **options)
    assert report.row_groups == 2 and all(f.encrypted for f in report.filters)
    assert {f.values for f in report.filters if f.row_group == 1} == {2}  # the nulls are not hashed
    read = read_encrypted(path)
    assert read.num_rows == table.num_rows
    with ParquetBloomReader(path, KEYS) as reader:
        for name in names:
            info = reader.column(name)
            for row in range(table.num_rows):
                value = _python_value(table[name][row])
                if value is None:
                    continue  # nulls; timestamps beyond datetime's range (covered by the attach comparison)
                hits = reader.row_groups_maybe_containing(name, value)
                assert row // 3 in hits, (name, info.type_name, value)
    _same_as_attach(path, tmp_path, names)


def test_int96_timestamps_and_nested_fields(tmp_path: Path) -> None:
    table = pa.table({
        "ts": pa.array([-(2**40), 0, 2**40, None], pa.timestamp("us", tz="UTC")),
        "person": pa.array([{"email": "a@x", "age": 1}, {"email": "b@x", "age": 2}, None,
                            {"email": None, "age": 4}], pa.struct([("email", pa.string()), ("age", pa.int32())])),
        "tags": pa.array([["x", "y"], [], None, ["z"]], pa.list_(pa.string())),
    })
    path = tmp_path / "nested.parquet"
    report = write_table(table, path, encryption=_config(column_keys={"kc1": ["ts", "person.email"]}),
                         kms=vector_kms(), use_deprecated_int96_timestamps=True,
                         bloom_filter_options={"ts": True, "person.email": True, "tags.list.element": True})
    assert {f.column: f.values for f in report.filters} == {"ts": 3, "person.email": 2, "tags.list.element": 3}
    back = read_encrypted(path)
    assert back.column("ts").cast(pa.int64()).to_pylist() == [v * 1000 if v is not None else None for v in
                                                             table.column("ts").cast(pa.int64()).to_pylist()]
    assert back.drop_columns(["ts"]).to_pylist() == table.drop_columns(["ts"]).to_pylist()
    with ParquetBloomReader(path, KEYS) as reader:
        assert reader.column("ts").physical_type.name == "INT96"
        assert reader.row_groups_maybe_containing("person.email", "b@x") == [0]
        assert reader.row_groups_maybe_containing("tags.list.element", "z") == [0]
    _same_as_attach(path, tmp_path, ["ts", "person.email", "tags.list.element"])


def test_plaintext_footer_and_uniform_encryption(tmp_path: Path) -> None:
    table = sample_table(500)
    signed = tmp_path / "signed.parquet"
    write_table(table, signed, encryption=_config(plaintext_footer=True), kms=vector_kms(),
                bloom_filter_options={"ssn": True, "id": True})
    uniform = tmp_path / "uniform.parquet"
    write_table(table, uniform, encryption=pe.EncryptionConfiguration(footer_key="kf", uniform_encryption=True,
                                                                       encryption_algorithm="AES_GCM_CTR_V1"),
                kms=vector_kms(), bloom_filter_options={"ssn": True})
    with ParquetBloomReader(signed, KEYS) as reader:
        assert reader.footer.mode is FooterMode.SIGNED and reader.footer.signature_verified
        assert reader.row_groups_maybe_containing("ssn", table["ssn"][7].as_py()) == [0]
        assert reader.chunk(0, "id").encryption is ChunkEncryption.PLAINTEXT
    with ParquetBloomReader(uniform, KEYS) as reader:
        assert reader.chunk(0, "ssn").encryption is ChunkEncryption.FOOTER_KEY
        assert reader.row_groups_maybe_containing("ssn", table["ssn"][7].as_py()) == [0]
    for path in (signed, uniform):
        assert read_encrypted(path).equals(table)


def test_pyarrow_kms_client_factory_plugs_in_unchanged(tmp_path: Path) -> None:
    """A team's own pyarrow KmsClient, given as the factory CryptoFactory takes."""
    seen: list[str] = []

    class TeamKms(pe.KmsClient):  # type: ignore[misc]
        def __init__(self, config: pe.KmsConnectionConfig) -> None:
            super().__init__()
            seen.append(config.key_access_token)
            self.inner = vector_kms()

        def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
            return self.inner.wrap_key(key_bytes, master_key_identifier)

        def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
            return self.inner.unwrap_key(wrapped_key, master_key_identifier)

    table = sample_table(200)
    path = tmp_path / "team.parquet"
    write_table(table, path, encryption=_config(), kms=lambda config: TeamKms(config),
                kms_connection_config=pe.KmsConnectionConfig(key_access_token="team-token"),
                bloom_filter_options={"ssn": True})
    assert seen and set(seen) == {"team-token"}
    assert read_encrypted(path).equals(table)
    with ParquetBloomReader(path, KEYS) as reader:
        assert reader.row_groups_maybe_containing("ssn", table["ssn"][3].as_py()) == [0]


def test_external_key_material_is_published_with_the_file(tmp_path: Path) -> None:
    table = sample_table(300)
    path = tmp_path / "ext.parquet"
    write_table(table, path, encryption=_config(internal_key_material=False), kms=vector_kms(),
                bloom_filter_options={"ssn": True})
    assert _leftovers(tmp_path, {"ext.parquet", sidecar_path(path).name}) == set()
    assert read_encrypted(path).equals(table)
    with ParquetBloomReader(path, KEYS) as reader:
        assert reader.row_groups_maybe_containing("ssn", table["ssn"][3].as_py()) == [0]


def test_streaming_writer_batches_and_row_groups(tmp_path: Path) -> None:
    table = sample_table(2500)
    path = tmp_path / "stream.parquet"
    with ParquetWriter(path, table.schema, encryption=_config(), kms=vector_kms(),
                       bloom_filter_options={"ssn": True}) as writer:
        for batch in table.to_batches(max_chunksize=1000):
            writer.write_batch(batch)
        writer.write_table(table.slice(0, 10), row_group_size=4)
        assert not path.exists()  # nothing appears before close
    assert writer.report is not None
    assert [f.values for f in writer.report.filters] == [1000, 1000, 500, 4, 4, 2]
    assert read_encrypted(path).equals(pa.concat_tables([table, table.slice(0, 10)]))
    with ParquetBloomReader(path, KEYS) as reader:
        assert reader.row_groups_maybe_containing("ssn", table["ssn"][1].as_py()) == [0, 3]


def test_an_error_inside_the_writer_leaves_nothing(tmp_path: Path) -> None:
    table = sample_table(100)
    path = tmp_path / "aborted.parquet"
    with pytest.raises(RuntimeError, match="stop"):
        with ParquetWriter(path, table.schema, encryption=_config(), kms=vector_kms(),
                           bloom_filter_options={"ssn": True}) as writer:
            writer.write_table(table)
            raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="schema does not match"):
        with ParquetWriter(path, table.schema, encryption=_config(), kms=vector_kms()) as writer:
            writer.write_table(table.drop_columns(["flag"]))
    assert list(tmp_path.iterdir()) == []


def test_empty_table_is_one_empty_row_group(tmp_path: Path) -> None:
    table = sample_table(10).slice(0, 0)
    path = tmp_path / "empty.parquet"
    report = write_table(table, path, encryption=_config(), kms=vector_kms(), bloom_filter_options={"ssn": True})
    assert report.row_groups == pq.ParquetFile(path, decryption_properties=crypto_factory()
                                               .file_decryption_properties(pe.KmsConnectionConfig())).num_row_groups
    assert read_encrypted(path).equals(table)


def test_existing_destination_is_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "out.parquet"
    path.write_bytes(b"old")
    write_table(sample_table(10), path, encryption=_config(), kms=vector_kms(), bloom_filter_options={"ssn": True})
    assert read_encrypted(path).num_rows == 10 and _leftovers(tmp_path, {"out.parquet"}) == set()


BAD_OPTIONS = [
    ({"bloom_filter_options": {"nope": True}}, ColumnNotFoundError, "no leaf column 'nope'"),
    ({"bloom_filter_options": {"flag": True}}, UnsupportedParquetFeatureError, "'flag' is BOOLEAN"),
    ({"bloom_filter_options": {"m.key_value.key": True}}, UnsupportedParquetFeatureError, "not supported"),
    ({"bloom_filter_options": {"ssn": {"fpp": 0.0}}}, ValueError, r"fpp must be in \(0, 1\)"),
    ({"bloom_filter_options": {"ssn": {"fpp": 1.0}}}, ValueError, r"fpp must be in \(0, 1\)"),
    ({"bloom_filter_options": {"ssn": {"ndv": 0}}}, ValueError, "ndv must be an int >= 1"),
    ({"bloom_filter_options": {"ssn": {"ndv": True}}}, ValueError, "ndv must be an int >= 1"),
    ({"bloom_filter_options": {"ssn": {"size": 3}}}, ValueError, "unknown option 'size'"),
    ({"bloom_filter_options": ["ssn"]}, TypeError, "bloom_filter_options must be a dict"),
    ({"encryption": pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["missing"]})},
     ColumnNotFoundError, r"encryption.column_keys\['kc1'\]: no leaf column 'missing'"),
    ({"encryption": pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["ssn"], "kc2": ["ssn"]})},
     ValueError, "two keys"),
    ({"encryption": {"footer_key": "kf"}}, TypeError, "EncryptionConfiguration"),
    ({"encryption_properties": object()}, TypeError, r"encryption_properties=... is pyarrow.s; secure_bloom sets it: give encryption="),
    ({"bloom_filter_max_bytes": 16}, ValueError, "bloom_filter_max_bytes must be an int from 32"),
    ({"compression": "no-such-codec"}, ValueError, "no-such-codec"),
]


@pytest.mark.parametrize("options,error,match", BAD_OPTIONS, ids=[m for _, _, m in BAD_OPTIONS])
def test_bad_options_fail_before_anything_is_written(tmp_path: Path, options: dict[str, Any],
                                                     error: type[Exception], match: str) -> None:
    table = sample_table(10).append_column("m", pa.array([[("k", 1)]] * 10, pa.map_(pa.string(), pa.int32())))
    kms = CountingKms(vector_kms())
    kwargs: dict[str, Any] = {"encryption": _config(), "kms": kms, **options}
    with pytest.raises(error, match=match):
        write_table(table, tmp_path / "never.parquet", **kwargs)
    assert list(tmp_path.iterdir()) == [] and kms.wraps == 0


class FailingKms:
    """TEST DOUBLE (fault injection): the real key-list KMS, failing from its ``fail_from``-th call."""

    def __init__(self, fail_from: int) -> None:
        self.real, self.calls, self.fail_from = vector_kms(), 0, fail_from

    def _count(self) -> None:
        self.calls += 1
        if self.calls >= self.fail_from:
            raise KmsUnavailableError("KMS down (injected)")

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        self._count()
        return self.real.wrap_key(key_bytes, master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        self._count()
        return self.real.unwrap_key(wrapped_key, master_key_identifier)


def test_kms_failing_at_any_call_leaves_nothing(tmp_path: Path) -> None:
    table = sample_table(50)
    total = CountingKms(vector_kms())
    write_table(table, tmp_path / "probe.parquet", encryption=_config(), kms=total, bloom_filter_options={"ssn": True})
    calls = total.wraps + total.unwraps
    assert calls >= 4  # wraps when the keys are made, unwraps when the filters are encrypted
    for k in range(1, calls + 1):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        with pytest.raises(Exception) as failure:
            write_table(table, folder / "out.parquet", encryption=_config(), kms=FailingKms(k),
                        bloom_filter_options={"ssn": True})
        assert "KMS down" in str(failure.value) and list(folder.iterdir()) == [], k


def test_write_to_dataset_hive_partitions_own_keys_and_filters(tmp_path: Path) -> None:
    table = sample_table(600).append_column("region", pa.array(["eu", "us/east", None] * 200))
    reports = write_to_dataset(table, tmp_path / "ds", partition_cols=["region"], encryption=_config(),
                               kms=vector_kms(), bloom_filter_options={"ssn": True}, row_group_size=100)
    dirs = sorted(p.parent.name for p in (tmp_path / "ds").rglob("*.parquet"))
    assert dirs == ["region=__HIVE_DEFAULT_PARTITION__", "region=eu", "region=us%2Feast"]
    assert [r.num_rows for r in reports] == [200, 200, 200] and all(r.row_groups == 2 for r in reports)
    wrapped = set()
    for report in reports:
        with ParquetBloomReader(report.path, KEYS) as reader:
            chunk = reader.chunk(0, "ssn")
            wrapped.add(KeyMaterial.from_json(bytes(chunk.key_metadata).decode()).wrapped_dek)
            assert len(reader.row_groups_maybe_containing("ssn", table["ssn"][0].as_py())) in (0, 1)
    assert len(wrapped) == 3  # a fresh data key per file
    decryption = crypto_factory().file_decryption_properties(pe.KmsConnectionConfig())
    dataset = ds.dataset(tmp_path / "ds", format=ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(decryption_properties=decryption)),
        partitioning="hive")
    back = dataset.to_table().sort_by("id")
    assert back.column("ssn").equals(table.column("ssn")) and back.column("id").equals(table.column("id"))
    row = table.filter(pa.compute.equal(table["id"], 4))
    region = row["region"][0].as_py()
    (path,) = [r.path for r in reports if (region or "__HIVE") in r.path.replace("%2F", "/")]
    with ParquetBloomReader(path, KEYS) as reader:
        assert reader.row_groups_maybe_containing("ssn", row["ssn"][0].as_py()) == [0]


class _Uploads(pafs.FileSystemHandler):  # type: ignore[misc]
    """A real pyarrow filesystem (PyFileSystem) keeping objects in memory; an object exists
    only once its output stream is closed, and every write call is recorded."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.writes: list[tuple[str, int]] = []

    def get_type_name(self) -> str:
        return "uploads"

    def normalize_path(self, path: str) -> str:
        return path

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        handler = self

        class Stream:
            def __init__(self) -> None:
                self.parts: list[bytes] = []
                self.closed = False

            def write(self, data: Any) -> int:
                handler.writes.append((path, len(data)))
                self.parts.append(bytes(data))
                return len(data)

            def close(self) -> None:
                handler.objects[path] = b"".join(self.parts)
                self.closed = True

            def flush(self) -> None:
                pass

            def writable(self) -> bool:
                return True

        return pa.PythonFile(Stream(), mode="w")

    def create_dir(self, path: str, recursive: bool) -> None:
        pass

    def get_file_info(self, paths: Any) -> Any:
        return [pafs.FileInfo(p, pafs.FileType.File if p in self.objects else pafs.FileType.NotFound) for p in paths]

    def _unused(self, *args: Any) -> Any:
        raise NotImplementedError("not used by the writer")

    copy_file = delete_dir = delete_dir_contents = delete_file = delete_root_dir_contents = _unused
    get_file_info_selector = move = open_append_stream = open_input_file = open_input_stream = _unused


def test_a_pyarrow_filesystem_gets_the_complete_file_in_one_write(tmp_path: Path) -> None:
    handler = _Uploads()
    fs = pafs.PyFileSystem(handler)
    table = sample_table(300)
    write_table(table, "bucket/data/x.parquet", filesystem=fs, encryption=_config(), kms=vector_kms(),
                bloom_filter_options={"ssn": True})
    assert list(handler.objects) == ["bucket/data/x.parquet"]
    assert handler.writes == [("bucket/data/x.parquet", len(handler.objects["bucket/data/x.parquet"]))]
    local = tmp_path / "x.parquet"
    local.write_bytes(handler.objects["bucket/data/x.parquet"])
    assert read_encrypted(local).equals(table)
    with ParquetBloomReader(local, KEYS) as reader:
        assert reader.row_groups_maybe_containing("ssn", table["ssn"][5].as_py()) == [0]
    with pytest.raises(KmsUnavailableError):
        write_table(table, "bucket/data/y.parquet", filesystem=fs, encryption=_config(), kms=FailingKms(3),
                    bloom_filter_options={"ssn": True})
    assert list(handler.objects) == ["bucket/data/x.parquet"]


def test_subtree_filesystem_and_uri(tmp_path: Path) -> None:
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    table = sample_table(100)
    write_table(table, "sub.parquet", filesystem=fs, encryption=_config(), kms=vector_kms(),
                bloom_filter_options={"ssn": True})
    write_table(table, (tmp_path / "uri.parquet").as_uri(), encryption=_config(), kms=vector_kms(),
                bloom_filter_options={"ssn": True})
    for name in ("sub.parquet", "uri.parquet"):
        assert read_encrypted(tmp_path / name).equals(table)
    assert json.loads(json.dumps(write_table(table, tmp_path / "r.parquet", encryption=_config(), kms=vector_kms(),
                                             bloom_filter_options={"ssn": True}).to_dict()))["num_rows"] == 100


def test_data_keys_differ_per_file_and_key_list_kms_reads(tmp_path: Path) -> None:
    """Files written by pyarrow's key tools through our key-list client: the footer key material
    names the master key, and the key list alone opens the result."""
    path = tmp_path / "k.parquet"
    write_table(sample_table(20), path, encryption=_config(), kms=KeyListKms(
        "kf:MDEyMzQ1Njc4OTAxMjM0NQ==, kc1:MTIzNDU2Nzg5MDEyMzQ1MA==, kc2:MTIzNDU2Nzg5MDEyMzQ1MQ=="),
        bloom_filter_options={"ssn": True})
    with ParquetBloomReader(path, KEYS) as reader:
        material = KeyMetadata.from_bytes(bytes(reader.footer.footer_key_metadata))
        assert material.internal_storage
    assert os.path.getsize(path) > 0


# ------------------------------------------------------------------ KEKs shared across writes

#: The master keys of _config(): the footer's and the column keys'.
MASTER_KEYS = {"kf", *COLUMN_KEYS}


def _kek_material(path: Path, column: str) -> KeyMaterial:
    with ParquetBloomReader(path, KEYS) as reader:
        return KeyMaterial.from_json(bytes(reader.chunk(0, column).key_metadata).decode())


def _write_files(folder: Path, n: int, kms: Any, **config: Any) -> list[Path]:
    folder.mkdir()
    paths = [folder / f"f{i}.parquet" for i in range(n)]
    for path in paths:
        write_table(sample_table(50), path, encryption=_config(**config), kms=kms, bloom_filter_options={"ssn": True})
    return paths


def test_consecutive_writes_share_keks_like_parquet_java(tmp_path: Path) -> None:
    """write_table after write_table with one kms object and KMS connection: the KEKs the first
    made (one KMS wrap per master key) and those its verification unwrapped serve the next ones,
    as parquet-java's KEK cache serves every file of a JVM: five files cost the KMS what one does.
    Each file still has data keys of its own and reads back with the key list alone."""
    clear_key_caches()
    kms = CountingKms(vector_kms())
    paths = _write_files(tmp_path / "five", 5, kms)
    one = CountingKms(vector_kms())
    _write_files(tmp_path / "one", 1, one)
    assert one.wraps == len(MASTER_KEYS) and one.unwraps > 0
    assert (kms.wraps, kms.unwraps) == (one.wraps, one.unwraps)
    materials = [_kek_material(path, "ssn") for path in paths]
    assert len({(m.kek_id, m.wrapped_kek) for m in materials}) == 1
    assert len({m.wrapped_dek for m in materials}) == 5
    for path in paths:
        assert read_encrypted(path).equals(sample_table(50))


def test_shared_keks_are_never_used_past_the_cache_lifetime(tmp_path: Path) -> None:
    """The KEKs are shared for ``cache_lifetime`` from when the first write made them, never
    longer: the first write after it has the KMS wrap new KEKs (a revoked master key or token
    fails there, tests/robustness/test_kms_faults.py)."""
    kms = CountingKms(vector_kms())
    lifetime = dt.timedelta(seconds=2)
    start = time.monotonic()
    before = _write_files(tmp_path / "before", 2, kms, cache_lifetime=lifetime)
    made = time.monotonic()  # the shared KEKs were made before this
    assert made - start < lifetime.total_seconds()
    assert kms.wraps == len(MASTER_KEYS)
    time.sleep(max(0.0, made + lifetime.total_seconds() - time.monotonic()) + 0.05)
    (after,) = _write_files(tmp_path / "after", 1, kms, cache_lifetime=lifetime)
    assert kms.wraps == 2 * len(MASTER_KEYS)
    assert _kek_material(after, "ssn").kek_id != _kek_material(before[0], "ssn").kek_id
    assert read_encrypted(after).equals(sample_table(50))


def test_keks_are_shared_only_within_one_key_configuration(tmp_path: Path) -> None:
    """Shared: the same kms object, KMS connection (token included, as pyarrow and parquet-java
    cache per token) and cache lifetime. Another of any of them has KEKs of its own; lifetime 0
    shares nothing; single wrapping has no KEKs (each data key is wrapped by the KMS)."""
    clear_key_caches()
    kms = CountingKms(vector_kms())
    table = sample_table(50)

    def write(name: str, **options: Any) -> None:
        options = {"encryption": _config(), "kms": kms, **options}
        write_table(table, tmp_path / name, bloom_filter_options={"ssn": True}, **options)

    per_file = len(MASTER_KEYS)
    write("a.parquet")
    assert kms.wraps == per_file
    write("b.parquet", kms_connection_config=pe.KmsConnectionConfig(key_access_token="tenant-b-token"))
    assert kms.wraps == 2 * per_file
    write("c.parquet", encryption=_config(cache_lifetime=dt.timedelta(seconds=300)))
    assert kms.wraps == 3 * per_file
    write("d.parquet", encryption=_config(cache_lifetime=dt.timedelta(0)))
    write("e.parquet", encryption=_config(cache_lifetime=dt.timedelta(0)))
    assert kms.wraps == 5 * per_file
    write("f.parquet", encryption=_config(double_wrapping=False))
    data_keys = 1 + sum(len(columns) for columns in COLUMN_KEYS.values())
    assert kms.wraps == 5 * per_file + data_keys
    other = CountingKms(vector_kms())
    write("g.parquet", kms=other)
    assert other.wraps == per_file
    write("h.parquet")  # the first configuration again, within its lifetime: its KEKs
    write("i.parquet", kms_connection_config=pe.KmsConnectionConfig(key_access_token="tenant-b-token"))
    assert kms.wraps == 5 * per_file + data_keys
    assert _kek_material(tmp_path / "h.parquet", "ssn").kek_id == _kek_material(tmp_path / "a.parquet", "ssn").kek_id
    for name in "abcdefghi":
        assert read_encrypted(tmp_path / f"{name}.parquet").equals(table)


def test_shared_key_configurations_are_bounded(tmp_path: Path) -> None:
    """A new KMS client per write shares nothing and keeps at most MAX_SHARED configurations
    (their clients and KEKs) in memory: the oldest is dropped first."""
    clear_key_caches()
    clients = [CountingKms(vector_kms()) for _ in range(MAX_SHARED + 1)]
    for i, kms in enumerate(clients):
        write_table(sample_table(10), tmp_path / f"{i}.parquet", encryption=_config(), kms=kms)
    write_table(sample_table(10), tmp_path / "last.parquet", encryption=_config(), kms=clients[-1])
    assert clients[-1].wraps == len(MASTER_KEYS)   # still shared
    write_table(sample_table(10), tmp_path / "first.parquet", encryption=_config(), kms=clients[0])
    assert clients[0].wraps == 2 * len(MASTER_KEYS)  # dropped: KEKs anew


def test_shared_key_tools_show_no_secret_and_an_aborted_write_leaves_nothing(tmp_path: Path) -> None:
    """The shared tools' reprs name no token; a write aborted after its keys were made (from the
    shared KEKs) publishes nothing, no file and no external key material, and is not passed on:
    the next write makes new KEKs."""
    kms = CountingKms(vector_kms())
    token = pe.KmsConnectionConfig(key_access_token="s3cr3t-t0ken")
    options: dict[str, Any] = {"encryption": _config(internal_key_material=False), "kms": kms,
                               "kms_connection_config": token, "bloom_filter_options": {"ssn": True}}
    write_table(sample_table(50), tmp_path / "first.parquet", **options)
    write_table(sample_table(50), tmp_path / "second.parquet", **options)
    assert kms.wraps == len(MASTER_KEYS)
    writer = ParquetWriter(tmp_path / "aborted.parquet", sample_table(50).schema, **options)
    writer.write_table(sample_table(50))
    shown = repr(writer.check_setup) + repr(writer.check_setup.key_tools) + repr(writer.check_setup.key_tools.current())
    assert "s3cr3t-t0ken" not in shown
    writer.abort()
    write_table(sample_table(50), tmp_path / "last.parquet", **options)
    assert kms.wraps == 2 * len(MASTER_KEYS)
    names = ("first.parquet", "second.parquet", "last.parquet")
    assert _leftovers(tmp_path, {*names, *(sidecar_path(n).name for n in names)}) == set()


class WrongOnceKms:
    """TEST DOUBLE (fault injection): the real key-list KMS, whose ``wrong``-th wrap returns the
    wrapping of other key bytes (a KMS answer that is wrong, not an error)."""

    def __init__(self, wrong: int) -> None:
        self.real, self.wraps, self.wrong = vector_kms(), 0, wrong

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        self.wraps += 1
        if self.wraps == self.wrong:
            key_bytes = bytes(b ^ 0xFF for b in key_bytes)
        return self.real.wrap_key(key_bytes, master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        return self.real.unwrap_key(wrapped_key, master_key_identifier)


def test_a_wrongly_wrapped_kek_fails_its_write_and_is_not_shared(tmp_path: Path) -> None:
    """A KEK the KMS wrapped wrongly fails the verification of the write that made it (nothing
    published); the next write with the same kms makes new KEKs instead of failing the same way
    for the whole cache lifetime."""
    kms = WrongOnceKms(wrong=2)
    options: dict[str, Any] = {"encryption": _config(), "kms": kms, "bloom_filter_options": {"ssn": True}}
    with pytest.raises(SecureBloomError):
        write_table(sample_table(50), tmp_path / "bad.parquet", **options)
    assert list(tmp_path.iterdir()) == []
    write_table(sample_table(50), tmp_path / "good.parquet", **options)
    assert read_encrypted(tmp_path / "good.parquet").equals(sample_table(50))
    assert kms.wraps == 2 * len(MASTER_KEYS)


def test_write_to_dataset_max_rows_per_file_splits_each_partition(tmp_path: Path) -> None:
    """pyarrow's max_rows_per_file: each partition's rows, in order, in files of at most N rows
    numbered from 0 per directory, each with its own data keys and its own filters."""
    table = sample_table(500).append_column("region", pa.array(["eu"] * 300 + ["us"] * 200))
    reports = write_to_dataset(table, tmp_path / "ds", partition_cols=["region"], encryption=_config(),
                               kms=vector_kms(), bloom_filter_options={"ssn": True}, max_rows_per_file=120,
                               basename_template="part-{i}.parquet")
    names = sorted(str(p.relative_to(tmp_path / "ds")) for p in (tmp_path / "ds").rglob("*.parquet"))
    assert names == ["region=eu/part-0.parquet", "region=eu/part-1.parquet", "region=eu/part-2.parquet",
                     "region=us/part-0.parquet", "region=us/part-1.parquet"]
    assert [r.num_rows for r in reports] == [120, 120, 60, 120, 80]
    assert all(r.row_groups == 1 for r in reports)  # row groups default to the file's size
    wrapped = set()
    start = {"eu": 0, "us": 300}
    for report in reports:
        region = "eu" if "region=eu" in report.path else "us"
        rows = table.slice(start[region], report.num_rows)
        start[region] += report.num_rows
        assert read_encrypted(Path(report.path)).equals(rows.drop_columns(["region"]))
        with ParquetBloomReader(report.path, KEYS) as reader:
            wrapped.add(KeyMaterial.from_json(bytes(reader.chunk(0, "ssn").key_metadata).decode()).wrapped_dek)
            assert reader.row_groups_maybe_containing("ssn", rows["ssn"][0].as_py()) == [0]
    assert len(wrapped) == 5  # a fresh data key per file
    reports = write_to_dataset(table, tmp_path / "flat", encryption=_config(), kms=vector_kms(),
                               bloom_filter_options={"ssn": True}, max_rows_per_file=np.int64(200), row_group_size=64,
                               basename_template="f-{i}.parquet")
    assert [(Path(r.path).name, r.num_rows, r.row_groups) for r in reports] == [
        ("f-0.parquet", 200, 4), ("f-1.parquet", 200, 4), ("f-2.parquet", 100, 2)]


@pytest.mark.parametrize(("options", "match"), [
    ({"max_rows_per_file": 10, "row_group_size": 11}, r"row_group_size \(11\) must be less than or equal to "
                                                      r"max_rows_per_file \(10\)"),
    ({"max_rows_per_file": -1}, "max_rows_per_file must be an int >= 0"),
    ({"max_rows_per_file": True}, "max_rows_per_file must be an int >= 0"),
    ({"max_rows_per_file": 2.5}, "max_rows_per_file must be an int >= 0"),
    ({"row_group_size": 0}, "row_group_size must be an int >= 1"),
])
def test_write_to_dataset_bad_file_or_group_size_writes_nothing(tmp_path: Path, options: dict[str, Any],
                                                                match: str) -> None:
    with pytest.raises(ValueError, match=match):
        write_to_dataset(sample_table(50), tmp_path / "ds", encryption=_config(), kms=vector_kms(),
                         bloom_filter_options={"ssn": True}, **options)
    assert not (tmp_path / "ds").exists()


def test_syncing_sink_syncs_while_writing_and_raises_a_failed_sync(tmp_path: Path) -> None:
    """Every ``step`` bytes a sync starts in the pool (the file's bytes unchanged); a sync that
    fails (fsync of a pipe: EINVAL) is raised by the next write and by wait, never dropped."""
    path = tmp_path / "spool"
    syncs: list[int] = []
    with open(path, "wb", buffering=0) as f, ThreadPoolExecutor(max_workers=1) as pool:
        sink = SyncingSink(f.write, lambda: syncs.append(os.fsync(f.fileno()) or f.tell()), pool, step=1000)
        chunks = [bytes([n]) * 300 for n in range(10)]
        for chunk in chunks:
            assert sink.write(chunk) == 300
            sink.wait()
        assert sink.tell() == 3000 and syncs == [1200, 2400]
    assert path.read_bytes() == b"".join(chunks)
    read_end, write_end = os.pipe()
    try:
        pool = ThreadPoolExecutor(max_workers=1)
        sink = SyncingSink(lambda data: os.write(write_end, data), lambda: os.fsync(write_end), pool, step=100)
        sink.write(b"x" * 150)  # starts a sync, which fails
        pool.shutdown(wait=True)
        with pytest.raises(OSError, match="Invalid argument"):
            sink.write(b"y" * 150)
        sink = SyncingSink(lambda data: os.write(write_end, data), lambda: os.fsync(write_end),
                           ThreadPoolExecutor(max_workers=1), step=100)
        sink.write(b"z" * 150)
        with pytest.raises(OSError, match="Invalid argument"):
            sink.wait()
        stopped = ThreadPoolExecutor(max_workers=1)
        stopped.shutdown()  # any submit would raise
        sink = SyncingSink(lambda data: os.write(write_end, data), None, stopped, step=100)
        for _ in range(3):
            sink.write(b"w" * 150)  # no sync for a spool file that is only uploaded
        sink.wait()
        assert sink.tell() == 450
    finally:
        os.close(read_end)
        os.close(write_end)


def test_external_key_material_to_a_filesystem_is_uploaded_beside_the_file(tmp_path: Path) -> None:
    """External key material is spooled in memory (nothing in the system's temporary folder) and
    uploaded beside the object it belongs to; both read back."""
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    table = sample_table(100)
    write_table(table, "ext.parquet", filesystem=fs, encryption=_config(internal_key_material=False),
                kms=vector_kms(), bloom_filter_options={"ssn": True})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_KEY_MATERIAL_FOR_ext.parquet.json", "ext.parquet"]
    assert read_encrypted(tmp_path / "ext.parquet").equals(table)
    with ParquetBloomReader(tmp_path / "ext.parquet", KEYS) as reader:
        assert reader.row_groups_maybe_containing("ssn", table["ssn"][5].as_py()) == [0]


def test_dictionary_column_whose_bounds_are_wider_than_its_values(tmp_path: Path) -> None:
    """Regression (issue 28 item 12): pyarrow gives a dictionary-encoded chunk that holds nulls the
    bounds of its whole dictionary (max "zz" for a row group holding only "x" and a null); the
    writer's self-check took that bound for a stored value and refused to write
    ("refusing to write a wrong filter"). attach refused pyarrow's own such file the same way."""
    table = pa.table({"s": pa.array(["zz", "x", None, "x"]).dictionary_encode(), "n": pa.array([1, 2, 3, 4])})
    path = tmp_path / "dict.parquet"
    write_table(table, path, encryption=_config(column_keys={"kc1": ["s"]}), kms=vector_kms(),
                bloom_filter_options={"s": True}, row_group_size=2)
    assert read_encrypted(path).equals(table)
    with ParquetBloomReader(path, KEYS) as reader:
        assert reader.column_metadata(reader.chunk(1, 0)).statistics.max_value == b"zz"  # wider than rg 1's values
        assert reader.row_groups_maybe_containing("s", "x") == [0, 1]
        assert 0 in reader.row_groups_maybe_containing("s", "zz")
    _same_as_attach(path, tmp_path, ["s"])
    plain = tmp_path / "pyarrow.parquet"
    pq.write_table(table, plain, row_group_size=2)
    attach_bloom_filters(plain, tmp_path / "attached.parquet", ["s"])
    with ParquetBloomReader(tmp_path / "attached.parquet") as reader:
        assert reader.row_groups_maybe_containing("s", "x") == [0, 1]


def test_the_statistics_cross_check_still_refuses_a_wrong_filter() -> None:
    """A bound that is neither in the filter nor a value of the chunk's dictionary is refused:
    dictionary values hashed by a wrong conversion do not match the stored bytes either."""

    from secure_bloom import thrift_codec
    from secure_bloom.errors import WriteError
    from secure_bloom.filter import SplitBlockBloomFilter
    from secure_bloom.parquet import ColumnInfo
    from secure_bloom.parquet.write.append import cross_check_statistics, dictionary_hashes
    from secure_bloom.types import PhysicalType
    from secure_bloom.values.arrow import leaf_values
    from secure_bloom.values.physical import hash_values

    millis = ColumnInfo(path="t", path_in_schema=("t",), ordinal=0, physical_type=PhysicalType.INT64,
                        logical_type="TIMESTAMP", time_unit="millis")
    stats = thrift_codec.idl().Statistics(min_value=(1000).to_bytes(8, "little"), max_value=(3000).to_bytes(8, "little"))
    seconds = pa.array([1, 2, 3], pa.timestamp("s")).dictionary_encode()
    used = pa.DictionaryArray.from_arrays(pa.array([0, None], pa.int32()), seconds.dictionary)  # holds 1 s and a null
    right = SplitBlockBloomFilter(32)
    right.insert_hashes(hash_values(leaf_values(used, millis), PhysicalType.INT64))
    with pytest.raises(WriteError, match="refusing to write a wrong filter"):  # 3000 ms: no value, no dictionary
        cross_check_statistics(right, stats, millis, WriteError)
    cross_check_statistics(right, stats, millis, WriteError, dictionary=dictionary_hashes([leaf_values(used, millis)],
                                                                                         millis))
    wrong = SplitBlockBloomFilter(32)  # seconds hashed as if they were the stored millis, dictionary too
    wrong.insert_hashes(hash_values(used.dictionary_decode(), PhysicalType.INT64))
    with pytest.raises(WriteError, match="refusing to write a wrong filter"):
        cross_check_statistics(wrong, stats, millis, WriteError, dictionary=dictionary_hashes([used], millis))


def test_a_plaintext_write_with_filters_is_pyarrows(tmp_path: Path) -> None:
    """Regression (issue 28 item 13): write_table(t, p, bloom_filter_options=...) without
    encryption was 'TypeError: missing 2 required keyword-only arguments'. It is pyarrow's own
    plaintext write: the same bytes, plaintext filters included."""
    table = sample_table(100)
    options = {"ssn": {"ndv": 50, "fpp": 0.01}, "id": True}
    assert write_table(table, tmp_path / "ours.parquet", bloom_filter_options=options, row_group_size=40,
                       compression="zstd") is None
    pq.write_table(table, tmp_path / "pyarrow.parquet", bloom_filter_options=options, row_group_size=40,
                   compression="zstd")
    assert (tmp_path / "ours.parquet").read_bytes() == (tmp_path / "pyarrow.parquet").read_bytes()
    with ParquetBloomReader(tmp_path / "ours.parquet") as reader:
        assert [reader.bloom_filter(rg, 1) is not None for rg in range(3)] == [True] * 3
        assert reader.row_groups_maybe_containing("ssn", table["ssn"][45].as_py()) == [1]
    write_table(table, tmp_path / "none.parquet")  # no options at all: pyarrow's write_table(t, p)
    assert pq.read_table(tmp_path / "none.parquet").equals(table)
    with pytest.raises(TypeError, match="bloom_filter_max_bytes applies to encrypted writes"):
        write_table(table, tmp_path / "never.parquet", bloom_filter_options=options, bloom_filter_max_bytes=4096)
    assert not (tmp_path / "never.parquet").exists()


def test_pyarrows_encryption_argument_is_refused_with_what_to_pass(tmp_path: Path) -> None:
    """Regression (issue 28 item 13): pyarrow's write_table(t, p, encryption_properties=...) got a
    bare TypeError about missing arguments; it now says what to pass instead."""
    table = sample_table(10)
    properties = crypto_factory().file_encryption_properties(pe.KmsConnectionConfig(), _config())
    for function in (lambda: write_table(table, tmp_path / "never.parquet", encryption_properties=properties),
                     lambda: ParquetWriter(tmp_path / "never.parquet", table.schema, encryption_properties=properties)):
        with pytest.raises(TypeError, match=r"encryption_properties=\.\.\. is pyarrow's; secure_bloom sets it: give "
                                            r"encryption= .*kms= \(a KMS client, pyarrow KmsClient factory or KeyAccess\)"):
            function()
    with pytest.raises(TypeError, match=r"write_table\(encryption=\.\.\.\) needs kms="):
        write_table(table, tmp_path / "never.parquet", encryption=_config())
    with pytest.raises(TypeError, match=r"write_table\(kms=\.\.\.\) needs encryption="):
        write_table(table, tmp_path / "never.parquet", kms=vector_kms())
    with pytest.raises(TypeError, match="for a plaintext file use pyarrow.parquet.ParquetWriter"):
        ParquetWriter(tmp_path / "never.parquet", table.schema)
    with pytest.raises(TypeError, match=r"encryption_properties=\.\.\. is pyarrow's"):
        write_to_dataset(table, tmp_path / "never", partition_cols=["flag"], encryption_properties=properties)
    with pytest.raises(TypeError, match="for a plaintext one use pyarrow.parquet.write_to_dataset"):
        write_to_dataset(table, tmp_path / "never", partition_cols=["flag"])
    with pytest.raises(TypeError, match=r"write_to_dataset\(encryption=\.\.\.\) needs kms="):
        write_to_dataset(table, tmp_path / "never", partition_cols=["flag"], encryption=_config())
    assert list(tmp_path.iterdir()) == []


def test_read_and_write_take_the_same_key_objects(tmp_path: Path) -> None:
    """Regression (issue 28 item 13): read_table(keys=kms) with a KMS client was refused while
    write_table(kms=kms) took one. Both sides take a KMS client, a pyarrow KmsClient factory and
    a KeyAccess."""
    from secure_bloom.parquet import read_table
    from secure_bloom.parquet.read.api import dataset

    kms = vector_kms()
    table = sample_table(300)
    wanted = table.filter(pa.compute.field("ssn") == table["ssn"][123])
    for i, given in enumerate([kms, lambda config: kms, KeyAccess(kms=kms)]):
        path = tmp_path / f"f{i}.parquet"
        write_table(table, path, encryption=_config(), kms=given, bloom_filter_options={"ssn": True}, row_group_size=100)
        assert read_table(path, keys=given, filters=[("ssn", "==", table["ssn"][123].as_py())]).equals(wanted)
        assert dataset(path, keys=given).to_table(filter=pa.compute.field("id") == 123).equals(wanted)
        with ParquetBloomReader(path, given) as reader:
            assert reader.row_groups_maybe_containing("ssn", table["ssn"][123].as_py()) == [1]
        assert audit(path, ["ssn"], keys=given).exit_code == 0
    with pytest.raises(TypeError, match=r"explicit keys: KeyAccess\(explicit="):
        read_table(tmp_path / "f0.parquet", keys={"kf": b"0123456789012345"})
    with pytest.raises(TypeError, match="has no kms"):
        write_table(table, tmp_path / "never.parquet", encryption=_config(), kms=KeyAccess(explicit={"kf": b"0" * 16}))
