"""attach_bloom_filters on pyarrow files (encrypted with key tools, and plaintext): filters found by
our reader in the right row groups, the table unchanged for pyarrow, footers preserved, atomic
writes, refusals, tampering and splicing detected (SPEC_NOTES 4-7)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.parquet_files import (
    DATA,
    ROWS_PER_GROUP,
    TESTING_KEYS,
    read_encrypted,
    ssn,
    vector_kms,
    write_encrypted,
    write_plain,
    write_uniform,
)
from secure_bloom import thrift_codec
from secure_bloom.errors import (
    AttachError,
    AttachVerificationError,
    MissingKeyError,
    ModuleAuthenticationError,
    PlaintextFilterOnEncryptedColumnError,
    UnsupportedParquetFeatureError,
)
from secure_bloom.filter import SplitBlockBloomFilter, optimal_num_bytes
from secure_bloom.parquet import ABSENT, MAYBE, KeyAccess, ParquetBloomReader, attach_bloom_filters
from secure_bloom.fileio import AtomicOutput
from secure_bloom.parquet import ColumnSpec
from secure_bloom.parquet.write.append import cross_check_statistics
from secure_bloom.parquet.file.filter_io import serialize_chunk_filter
from secure_bloom.parquet.file.schema import ColumnInfo
from secure_bloom.types import PhysicalType
from secure_bloom.values.arrow import leaf_values
from secure_bloom.values.physical import hash_values

KEYS = KeyAccess(kms=vector_kms())
COLUMNS = ["ssn", "amount", "ts", "id", "day"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp"))


def _check_values_in_their_row_groups(path: Path, keys: KeyAccess) -> None:
    """Row i lives in row group i // 1000: each probed value is "maybe" there, and mostly absent
    in the other groups."""
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    rows = list(range(0, 3000, 37))
    with ParquetBloomReader(path, keys) as r:
        for column, value in (("ssn", ssn), ("id", lambda i: i), ("amount", lambda i: Decimal(i) / 100),
                              ("ts", lambda i: base + dt.timedelta(seconds=i))):
            false_hits = 0
            for i in rows:
                groups = r.row_groups_maybe_containing(column, value(i))
                assert i // ROWS_PER_GROUP in groups, (column, i)
                false_hits += len(groups) - 1
            assert false_hits <= len(rows) * 2 * 0.05, column
        answers = r.probe("ssn", ["not-an-ssn", "999-99-9999"])
        assert all(rg.has_bloom_filter for rg in answers.row_groups)
        assert sum(a == ABSENT for rg in answers.row_groups for _, a in rg.values) >= 5


@pytest.mark.parametrize("plaintext_footer,algorithm", [(False, "AES_GCM_V1"), (True, "AES_GCM_V1"),
                                                         (False, "AES_GCM_CTR_V1")])
def test_attach_to_pyarrow_encrypted_file(tmp_path: Path, plaintext_footer: bool, algorithm: str) -> None:
    src = write_encrypted(tmp_path / "src.parquet", plaintext_footer=plaintext_footer, algorithm=algorithm)
    before = _digest(src)
    dst = tmp_path / "dst.parquet"
    report = attach_bloom_filters(src, dst, COLUMNS, KEYS)
    assert _digest(src) == before  # the source is never modified
    assert _leftovers(tmp_path) == []
    assert report.footer_mode == ("plaintext_signed" if plaintext_footer else "encrypted")
    assert len(report.filters) == 3 * len(COLUMNS) and report.verified_values > 0
    encrypted = {f.column for f in report.filters if f.encrypted}
    assert encrypted == {"ssn", "amount", "ts"}  # the column-key columns; id and day stay plaintext
    for f in report.filters:
        expected_ndv = 500 if f.column == "day" else 1000
        assert f.ndv == expected_ndv and f.values == 1000
        assert f.num_bytes == optimal_num_bytes(expected_ndv, 0.01)
    src_bytes = src.read_bytes()
    with ParquetBloomReader(src, KEYS) as r:
        footer_offset = r.tail.footer_offset
    assert dst.read_bytes()[:footer_offset] == src_bytes[:footer_offset]  # data copied verbatim
    _check_values_in_their_row_groups(dst, KEYS)
    assert read_encrypted(dst).equals(read_encrypted(src))
    with ParquetBloomReader(dst, KEYS) as r:
        assert r.footer.mode == report.footer_mode
        if plaintext_footer:
            assert r.footer.signature_verified is True
        info = {(c.row_group, c.column): c for c in r.chunks()}
        assert info[(0, "ssn")].encrypted and info[(0, "ssn")].has_bloom_filter
        assert info[(0, "score")].has_bloom_filter is False


def test_footer_fields_survive_attach(tmp_path: Path) -> None:
    """Everything but the Bloom filter fields is unchanged, also inside encrypted ColumnMetaData."""
    src = write_encrypted(tmp_path / "src.parquet", write_page_index=True)
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["ssn", "id"], KEYS)

    def stripped(path: Path) -> list[bytes]:
        with ParquetBloomReader(path, KEYS) as r:
            md, _ = thrift_codec.parse(thrift_codec.idl().FileMetaData, r.footer.metadata_thrift)
            metas = []
            for i, rg in enumerate(md.row_groups):
                for j, cc in enumerate(rg.columns):
                    full = r.column_metadata(r.chunk(i, j))
                    for meta in (cc.meta_data, full):
                        if meta is not None:
                            meta.bloom_filter_offset = meta.bloom_filter_length = None
                    cc.encrypted_column_metadata = None
                    metas.append(thrift_codec.serialize(full))
            return [thrift_codec.serialize(md)] + metas

    assert stripped(src) == stripped(dst)


def test_attach_to_plaintext_pyarrow_file(tmp_path: Path) -> None:
    src = write_plain(tmp_path / "plain.parquet")
    dst = tmp_path / "out.parquet"
    report = attach_bloom_filters(src, dst, COLUMNS, ndv={"day": 100}, fpp={"ssn": 0.001})
    assert not any(f.encrypted for f in report.filters)
    sizes = {f.column: f.num_bytes for f in report.filters}
    assert sizes["day"] == optimal_num_bytes(100, 0.01) and sizes["ssn"] == optimal_num_bytes(1000, 0.001)
    _check_values_in_their_row_groups(dst, KeyAccess())
    assert pq.read_table(dst).equals(pq.read_table(src))
    with ParquetBloomReader(dst) as r:
        got = r.bloom_filter(1, "ssn")
        rebuilt = SplitBlockBloomFilter(got.num_bytes)  # type: ignore[union-attr]
        rebuilt.insert([ssn(i) for i in range(1000, 2000)], "BYTE_ARRAY")
        assert got == rebuilt


def test_column_specs_carry_per_column_options(tmp_path: Path) -> None:
    """ColumnSpec(path, ndv, fpp) per column; the call-wide fpp/ndv (value or mapping) fill what a
    spec leaves unset; the same column twice with different options is refused."""
    src = write_plain(tmp_path / "plain.parquet")
    specs = [ColumnSpec("day", ndv=100), ColumnSpec("ssn", fpp=0.001), "id"]
    report = attach_bloom_filters(src, tmp_path / "out.parquet", specs, fpp={"id": 0.05, "day": 0.2})
    sizes = {f.column: f.num_bytes for f in report.filters}
    assert sizes == {"day": optimal_num_bytes(100, 0.2), "ssn": optimal_num_bytes(1000, 0.001),
                     "id": optimal_num_bytes(1000, 0.05)}
    with pytest.raises(ValueError, match="fpp must be in \\(0, 1\\), got 2"):
        ColumnSpec("ssn", fpp=2)
    with pytest.raises(ValueError, match="ndv must be an int >= 1, got -1"):
        ColumnSpec("ssn", ndv=-1)
    # one rule with write_table's bloom_filter_options (pyarrow's): ndv 0 would size every
    # filter to the minimum whatever the chunk holds
    with pytest.raises(ValueError, match="ndv must be an int >= 1, got 0"):
        ColumnSpec("ssn", ndv=0)
    with pytest.raises(ValueError, match="ndv must be an int >= 1, got 0"):
        attach_bloom_filters(src, tmp_path / "zero.parquet", ["ssn"], ndv=0)
    assert not (tmp_path / "zero.parquet").exists()
    assert ColumnSpec("ssn", ndv=np.int64(7)).ndv == 7 and type(ColumnSpec("ssn", ndv=np.int64(7)).ndv) is int
    with pytest.raises(AttachError, match="column .ssn. is given twice with different options"):
        attach_bloom_filters(src, tmp_path / "twice.parquet", ["ssn", ColumnSpec("ssn", ndv=7)])
    assert not (tmp_path / "twice.parquet").exists()


def test_existing_filters_are_kept_and_chosen_ones_rebuilt(tmp_path: Path) -> None:
    src = write_encrypted(tmp_path / "src.parquet")
    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    attach_bloom_filters(src, first, ["ssn"], KEYS)
    with ParquetBloomReader(first, KEYS) as r:
        ssn_filters = [r.bloom_filter(g, "ssn") for g in range(3)]
    report = attach_bloom_filters(first, second, ["amount", "ssn"], KEYS, ndv={"ssn": 5000})
    assert report.kept_filters == 0 and all(f.replaced == (f.column == "ssn") for f in report.filters)
    third = tmp_path / "third.parquet"
    report = attach_bloom_filters(first, third, ["amount"], KEYS)
    assert report.kept_filters == 3
    with ParquetBloomReader(third, KEYS) as r:
        assert [r.bloom_filter(g, "ssn") for g in range(3)] == ssn_filters
        assert r.row_groups_maybe_containing("amount", Decimal("12.34")) == [1]
    with ParquetBloomReader(second, KEYS) as r:
        assert r.bloom_filter(0, "ssn").num_bytes == optimal_num_bytes(5000, 0.01)  # type: ignore[union-attr]


def test_destination_rules(tmp_path: Path) -> None:
    src = write_plain(tmp_path / "a.parquet")
    with pytest.raises(AttachError, match="in_place"):
        attach_bloom_filters(src, src, ["id"])
    other = tmp_path / "b.parquet"
    other.write_bytes(b"keep me")
    with pytest.raises(AttachError, match="overwrite"):
        attach_bloom_filters(src, other, ["id"])
    assert other.read_bytes() == b"keep me"
    attach_bloom_filters(src, other, ["id"], overwrite=True)
    with ParquetBloomReader(other) as r:
        assert r.bloom_filter(0, "id") is not None
    table = pq.read_table(src)
    report = attach_bloom_filters(src, src, ["ssn"], in_place=True)
    assert report.dst == str(src)
    with ParquetBloomReader(src) as r:
        assert r.row_groups_maybe_containing("ssn", ssn(2500)) == [2]
    assert pq.read_table(src).equals(table)
    assert _leftovers(tmp_path) == []
    with pytest.raises(ValueError):
        attach_bloom_filters(src, tmp_path / "c.parquet", [])
    with pytest.raises(ValueError):
        attach_bloom_filters(src, tmp_path / "c.parquet", ["id"], fpp=1.5)


@pytest.mark.parametrize("where", ["start", "data", "filters", "footer"])
def test_write_failure_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    src = write_encrypted(tmp_path / "src.parquet")
    before = _digest(src)
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    full = attach_bloom_filters(src, probe_dir / "ok.parquet", COLUMNS, KEYS).dst_bytes
    fail_after = {"start": 0, "data": 5000, "filters": src.stat().st_size + 3000, "footer": full - 10}[where]
    real_write = AtomicOutput.write

    def failing_write(self: Any, data: bytes | memoryview) -> None:
        if self.written + len(data) > fail_after:
            raise OSError(28, "No space left on device")
        real_write(self, data)

    monkeypatch.setattr(AtomicOutput, "write", failing_write)
    dst = tmp_path / "dst.parquet"
    with pytest.raises(AttachError, match="No space left"):
        attach_bloom_filters(src, dst, COLUMNS, KEYS)
    assert not dst.exists() and _leftovers(tmp_path) == [] and _digest(src) == before


def _open_output_being_written(directory: Path) -> int:
    """A new descriptor (its own open file description) of the file attach is writing in
    ``directory``: found through /proc/self/fd, whether it is anonymous (O_TMPFILE, listed as
    '#123 (deleted)') or the hidden temporary file."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{directory}/") and (target.endswith(" (deleted)") or target.endswith(".attach.tmp")):
            return os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
    raise AssertionError(f"no file being written in {directory}")


@pytest.mark.parametrize("encrypted,where,inner", [
    (False, "footer", "FileMetaData: invalid Thrift compact encoding"),
    (True, "footer", "authentication"),
    (True, "filter", "authentication"),
])
def test_verification_failure_is_an_attach_error_and_leaves_nothing_behind(
        tmp_path: Path, encrypted: bool, where: str, inner: str) -> None:
    """Regression: output bytes that no longer parsed at verification surfaced as the reader's
    MalformedThriftError / ModuleAuthenticationError, not as an AttachError. Here another writer
    changes the written file (through its own descriptor) after attach wrote it, before verification."""
    src = tmp_path / "src.parquet"
    write_encrypted(src) if encrypted else write_plain(src)
    keys = KEYS if encrypted else None
    with ParquetBloomReader(src, keys) as r:
        filters_start = r.tail.footer_offset  # the copy holds src's pages, then the new filters

    def scribble(stage: str, done: int, total: int) -> None:
        if stage != "copy" or done != total or total == 0:
            return
        fd = _open_output_being_written(tmp_path)
        try:
            at = total - 20 if where == "footer" else filters_start + 40
            os.pwrite(fd, bytes([os.pread(fd, 1, at)[0] ^ 0xFF]), at)
        finally:
            os.close(fd)

    dst = tmp_path / "dst.parquet"
    part = "the footer" if where == "footer" else "the filter of row group 0, column 'ssn'"
    with pytest.raises(AttachVerificationError, match=f"verification failed: {part} of the file written does "
                                                      f"not read back: .*{inner}") as caught:
        attach_bloom_filters(src, dst, ["ssn"], keys, progress=scribble)
    assert caught.value.__cause__ is None and caught.value.__context__ is None  # nothing chained
    assert "/proc/self/fd" not in str(caught.value)
    assert not dst.exists() and _leftovers(tmp_path) == []


def test_in_place_failure_keeps_the_original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_plain(tmp_path / "src.parquet")
    before = _digest(src)

    def failing_write(self: Any, data: bytes | memoryview) -> None:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(AtomicOutput, "write", failing_write)
    with pytest.raises(AttachError):
        attach_bloom_filters(src, src, ["id"], in_place=True)
    assert _digest(src) == before and _leftovers(tmp_path) == []


@pytest.mark.parametrize("prefix", [None, b"tenant-7"])
def test_explicit_footer_key_files_get_filters(tmp_path: Path, prefix: bytes | None) -> None:
    """Bare key ids, a withheld AAD prefix: pyarrow reads the values with the footer key we resolve
    (uniform files, and the footer-key columns of the parquet-testing per-column file)."""
    keys = KeyAccess(explicit=TESTING_KEYS, aad_prefix=prefix)
    src = write_uniform(tmp_path / "src.parquet", aad_prefix=prefix, store_aad_prefix=prefix is None)
    attach_bloom_filters(src, tmp_path / "bloom.parquet", ["ssn", "id"], keys)
    with ParquetBloomReader(tmp_path / "bloom.parquet", keys) as reader:
        assert reader.row_groups_maybe_containing("ssn", ssn(1500)) == [1]
        assert reader.row_groups_maybe_containing("id", 2999) == [2]
    vector = DATA / "encrypt_columns_and_footer.parquet.encrypted"
    attach_bloom_filters(vector, tmp_path / "vector.parquet", ["ba_field"], KeyAccess(explicit=TESTING_KEYS))
    with ParquetBloomReader(tmp_path / "vector.parquet", KeyAccess(explicit=TESTING_KEYS)) as reader:
        assert reader.row_groups_maybe_containing("ba_field", b"parquet002") == [0]
        assert reader.row_groups_maybe_containing("ba_field", b"absent-value") == []


def test_refusals(tmp_path: Path) -> None:
    src = write_encrypted(tmp_path / "src.parquet")
    with pytest.raises(UnsupportedParquetFeatureError, match="BOOLEAN"):
        attach_bloom_filters(src, tmp_path / "x.parquet", ["flag"], KEYS)
    with pytest.raises(MissingKeyError):
        attach_bloom_filters(src, tmp_path / "x.parquet", ["ssn"])  # no keys
    # a column under its own explicit key: pyarrow takes only the footer key from Python
    explicit = KeyAccess(explicit=TESTING_KEYS)
    with pytest.raises(UnsupportedParquetFeatureError, match="explicit key"):
        attach_bloom_filters(DATA / "encrypt_columns_and_footer.parquet.encrypted", tmp_path / "y.parquet",
                             ["double_field"], explicit)
    assert _leftovers(tmp_path) == [] and not (tmp_path / "x.parquet").exists()
    with pytest.raises(PlaintextFilterOnEncryptedColumnError, match="'ssn'"):
        serialize_chunk_filter(SplitBlockBloomFilter(32), column="ssn", encrypted=True, key=None,
                               file_aad=b"x" * 8, row_group_ordinal=0, column_ordinal=1)


def test_progress_is_reported(tmp_path: Path) -> None:
    src = write_plain(tmp_path / "src.parquet")
    events: list[tuple[str, int, int]] = []
    report = attach_bloom_filters(src, tmp_path / "dst.parquet", ["id", "ssn"],
                                  progress=lambda *e: events.append(e))
    assert [e for e in events if e[0] == "filters"][-1] == ("filters", 6, 6)
    last_copy = [e for e in events if e[0] == "copy"][-1]
    assert last_copy[1] == last_copy[2] == report.dst_bytes == os.path.getsize(tmp_path / "dst.parquet")


def test_external_key_material_gets_its_sidecar(tmp_path: Path) -> None:
    src = write_encrypted(tmp_path / "src.parquet", internal_key_material=False)
    assert (tmp_path / "_KEY_MATERIAL_FOR_src.parquet.json").exists()
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["ssn"], KEYS)
    assert (tmp_path / "_KEY_MATERIAL_FOR_dst.parquet.json").read_bytes() == \
        (tmp_path / "_KEY_MATERIAL_FOR_src.parquet.json").read_bytes()
    with ParquetBloomReader(dst, KEYS) as r:
        assert r.row_groups_maybe_containing("ssn", ssn(1500)) == [1]
    assert read_encrypted(dst).equals(read_encrypted(src))


def _filter_span(path: Path, keys: KeyAccess, row_group: int, column: str) -> tuple[int, int]:
    with ParquetBloomReader(path, keys) as r:
        c = next(c for c in r.chunks(with_sizes=False) if c.row_group == row_group and c.column == column)
        assert c.bloom_filter_offset is not None and c.bloom_filter_length is not None
        return c.bloom_filter_offset, c.bloom_filter_length


def _swap(path: Path, out: Path, a: tuple[int, int], b: tuple[int, int]) -> None:
    assert a[1] == b[1]
    data = bytearray(path.read_bytes())
    sa, sb = bytes(data[a[0]:a[0] + a[1]]), bytes(data[b[0]:b[0] + b[1]])
    data[a[0]:a[0] + a[1]], data[b[0]:b[0] + b[1]] = sb, sa
    out.write_bytes(bytes(data))


def test_spliced_filters_are_detected_by_their_ordinals(tmp_path: Path) -> None:
    """Uniform encryption: every filter is under the one footer key, so only the AAD's row-group
    and column ordinals tell them apart. Exchanging two filters of equal size must fail."""
    src = write_encrypted(tmp_path / "src.parquet", uniform=True)
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["ssn", "id"], KEYS)
    rg0 = _filter_span(dst, KEYS, 0, "ssn")
    for label, other in (("row group", _filter_span(dst, KEYS, 1, "ssn")),
                         ("column", _filter_span(dst, KEYS, 0, "id"))):
        spliced = tmp_path / f"spliced-{label}.parquet"
        _swap(dst, spliced, rg0, other)
        with ParquetBloomReader(spliced, KEYS) as r:
            with pytest.raises(ModuleAuthenticationError, match="BLOOM_FILTER_HEADER"):
                r.bloom_filter(0, "ssn")


def test_tampered_attached_filter_fails_authentication(tmp_path: Path) -> None:
    src = write_encrypted(tmp_path / "src.parquet")
    dst = tmp_path / "dst.parquet"
    attach_bloom_filters(src, dst, ["ssn"], KEYS)
    offset, length = _filter_span(dst, KEYS, 2, "ssn")
    data = bytearray(dst.read_bytes())
    data[offset + length - 5] ^= 0x80  # the bitset module's tag
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(data))
    with ParquetBloomReader(bad, KEYS) as r:
        assert r.bloom_filter(1, "ssn") is not None
        with pytest.raises(ModuleAuthenticationError, match="BLOOM_FILTER_BITSET"):
            r.probe("ssn", [ssn(2500)])


def test_many_arrow_types_and_nesting(tmp_path: Path) -> None:
    """Values of every common Arrow type, hashed from what pyarrow reads, are found by probes with
    Python values (INT96, FLOAT16, unsigned, time, decimal256, fixed binary, struct and list leaves)."""
    n = 200
    base = dt.datetime(2023, 6, 1, 12, 0, 0)
    table = pa.table({
        "u8": pa.array(np.arange(n) % 250, pa.uint8()),
        "i16": pa.array(np.arange(n) - 100, pa.int16()),
        "u64": pa.array(np.arange(n, dtype=np.uint64) + np.uint64(2**63), pa.uint64()),
        "f32": pa.array(np.arange(n) / 4, pa.float32()),
        "f16": pa.array(np.arange(n, dtype=np.float16) / np.float16(2), pa.float16()),
        "t_ms": pa.array([dt.time(0, 0, i % 60, 1000 * i) for i in range(n)], pa.time32("ms")),
        "t_us": pa.array([dt.time(1, i % 60, 0, i) for i in range(n)], pa.time64("us")),
        "ts_ns": pa.array([np.datetime64("2024-01-01T00:00:00", "ns") + np.timedelta64(i * 1001, "ns")
                           for i in range(n)], pa.timestamp("ns")),
        "ts96": pa.array([base + dt.timedelta(microseconds=i * 17) for i in range(n)], pa.timestamp("us")),
        "dec": pa.array([Decimal(i * 10**25 + 7).scaleb(-3) for i in range(n)], pa.decimal256(40, 3)),
        "fixed": pa.array([i.to_bytes(4, "big") for i in range(n)], pa.binary(4)),
        "raw": pa.array([bytes([i % 256]) * (i % 5) for i in range(n)], pa.binary()),
        "big": pa.array([f"v{i}" for i in range(n)], pa.large_string()),
        "person": pa.array([{"name": f"p{i}", "age": i if i % 7 else None} for i in range(n)]),
        "tags": pa.array([[f"t{i}", f"t{i + 1}"] if i % 3 else None for i in range(n)]),
    })
    src = write_plain(tmp_path / "types.parquet", table, row_group_size=100, use_deprecated_int96_timestamps=True,
                      coerce_timestamps=None)
    with ParquetBloomReader(src) as r:
        leaves = [c.path for c in r.columns]
        types = {c.path: c.type_name for c in r.columns}
    assert types["ts96"] == "INT96" and types["f16"].endswith("FLOAT16")
    dst = tmp_path / "out.parquet"
    attach_bloom_filters(src, dst, leaves)
    probes: dict[str, Any] = {
        "u8": lambda i: i % 250, "i16": lambda i: i - 100, "u64": lambda i: i + 2**63, "f32": lambda i: i / 4,
        "f16": lambda i: i / 2, "t_ms": lambda i: dt.time(0, 0, i % 60, 1000 * i),
        "t_us": lambda i: dt.time(1, i % 60, 0, i),
        "ts_ns": lambda i: np.datetime64("2024-01-01T00:00:00", "ns") + np.timedelta64(i * 1001, "ns"),
        "ts96": lambda i: (base + dt.timedelta(microseconds=i * 17)).replace(tzinfo=dt.timezone.utc),  # an instant
        "dec": lambda i: Decimal(i * 10**25 + 7).scaleb(-3), "fixed": lambda i: i.to_bytes(4, "big"),
        "big": lambda i: f"v{i}", "person.name": lambda i: f"p{i}",
        "tags.list.element": lambda i: f"t{i + 1}",
    }
    with ParquetBloomReader(dst) as r:
        for column, value in probes.items():
            for i in range(1, n, 13):
                if column == "tags.list.element" and i % 3 == 0:
                    continue
                assert i // 100 in r.row_groups_maybe_containing(column, value(i)), (column, i)
            assert r.bloom_filter(0, column) is not None
        assert r.row_groups_maybe_containing("person.age", 14) == []  # age 14 is null (14 % 7 == 0)
        assert 1 in r.row_groups_maybe_containing("person.age", 150)
        assert r.row_groups_maybe_containing("raw", b"") == [0, 1]  # b"" is stored in both row groups
    assert pq.read_table(dst).equals(pq.read_table(src))


def test_arrow_units_that_differ_from_the_stored_unit(tmp_path: Path) -> None:
    """pyarrow stores timestamp[s] / time32[s] as millis and date64 as INT32 days: the filters must
    hold the stored values."""
    n = 300
    base = dt.datetime(2022, 3, 4, 5, 6, 7)
    table = pa.table({
        "ts_s": pa.array([base + dt.timedelta(seconds=i) for i in range(n)], pa.timestamp("s")),
        "t_s": pa.array([dt.time(2, i // 60, i % 60) for i in range(n)], pa.time32("s")),
        "d64": pa.array([dt.date(2001, 1, 1) + dt.timedelta(days=i) for i in range(n)], pa.date64()),
    })
    src = write_plain(tmp_path / "units.parquet", table, row_group_size=100)
    with ParquetBloomReader(src) as r:
        assert [c.type_name for c in r.columns] == ["INT64/TIMESTAMP(millis)", "INT32/TIME(millis)", "INT32/DATE"]
    dst = tmp_path / "out.parquet"
    attach_bloom_filters(src, dst, ["ts_s", "t_s", "d64"])
    with ParquetBloomReader(dst) as r:
        for i in range(0, n, 7):
            assert i // 100 in r.row_groups_maybe_containing("ts_s", base + dt.timedelta(seconds=i))
            assert i // 100 in r.row_groups_maybe_containing("ts_s", int((base + dt.timedelta(seconds=i)).replace(
                tzinfo=dt.timezone.utc).timestamp()) * 1000)
            assert i // 100 in r.row_groups_maybe_containing("t_s", dt.time(2, i // 60, i % 60))
            assert i // 100 in r.row_groups_maybe_containing("d64", dt.date(2001, 1, 1) + dt.timedelta(days=i))


def test_arrow_arrays_are_hashed_in_the_stored_unit() -> None:
    """An Arrow array whose unit differs from the column's (a restored Arrow schema) is cast to the
    stored unit; and the cross-check refuses an array whose buffer hashes disagree with its values."""
    millis = ColumnInfo(path="t", path_in_schema=("t",), ordinal=0, physical_type=PhysicalType.INT64,
                        logical_type="TIMESTAMP", time_unit="millis")
    seconds = pa.array([1, 2, None], pa.timestamp("s"))
    assert leaf_values(seconds, millis).cast(pa.int64()).to_pylist() == [1000, 2000, None]
    time_ms = dataclasses.replace(millis, physical_type=PhysicalType.INT32, logical_type="TIME")
    assert leaf_values(pa.array([3], pa.time32("s")), time_ms).cast(pa.int32()).to_pylist() == [3000]
    date = dataclasses.replace(millis, physical_type=PhysicalType.INT32, logical_type="DATE", time_unit=None)
    assert leaf_values(pa.array([dt.date(1970, 1, 3)], pa.date64()), date).type == pa.date32()
    # The cross-check probes the stored min / max (footer statistics, plain bytes) in the new filter.
    stats = thrift_codec.idl().Statistics(min_value=(1000).to_bytes(8, "little"), max_value=(2000).to_bytes(8, "little"))
    wrong = SplitBlockBloomFilter(32)
    wrong.insert_hashes(hash_values(seconds, PhysicalType.INT64))  # seconds hashed as if they were the stored millis
    with pytest.raises(AttachError, match="not in the filter built from the values pyarrow read"):
        cross_check_statistics(wrong, stats, millis, AttachError)
    right = SplitBlockBloomFilter(32)
    right.insert_hashes(hash_values(leaf_values(seconds, millis), PhysicalType.INT64))
    cross_check_statistics(right, stats, millis, AttachError)


_EPOCH_DAY = dt.date(1970, 1, 1)


def _int96_stored(when: dt.datetime, extra_nanos: int = 0) -> bytes:
    """INT96 bytes computed from the calendar, independently of the library: nanoseconds of the day
    (8 bytes LE), then the Julian day (4 bytes LE; 1970-01-01 is Julian day 2440588)."""
    of_day = ((when.hour * 60 + when.minute) * 60 + when.second) * 10**9 + when.microsecond * 1000 + extra_nanos
    julian = (when.date() - _EPOCH_DAY).days + 2440588
    return of_day.to_bytes(8, "little") + julian.to_bytes(4, "little")


def _xxh64(raw: bytes) -> int:
    import xxhash

    return int(xxhash.xxh64_intdigest(raw))


def test_attach_int96_hashes_the_stored_bytes_of_extreme_timestamps(tmp_path: Path) -> None:
    """Issue 15 item 1: INT96 read by pyarrow in nanoseconds wraps outside 1677-2262, and the
    filter was built from the wrapped values: 9999-12-31 answered "absent". The filter must hold
    the 12 bytes the file stores (found in its plain, uncompressed data page)."""
    extremes = [dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(9999, 12, 31), dt.datetime(1, 1, 1),
                dt.datetime(1, 1, 1, 0, 0, 0, 1), dt.datetime(1677, 9, 21), dt.datetime(2262, 4, 12),
                dt.datetime(1970, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999)]
    ns_edges = [-(1 << 63) + 1, (1 << 63) - 1, -1, 0]
    table = pa.table({"ts": pa.array(extremes + [None], pa.timestamp("us")),
                      "ns": pa.array(ns_edges + [None] * (len(extremes) + 1 - len(ns_edges)), pa.timestamp("ns"))})
    src = write_plain(tmp_path / "int96.parquet", table, use_deprecated_int96_timestamps=True,
                      use_dictionary=False, compression="NONE")
    stored = {"ts": [_int96_stored(v) for v in extremes],
              "ns": [_int96_stored(dt.datetime(1970, 1, 1) + dt.timedelta(days=d, microseconds=n // 1000), n % 1000)
                     for d, n in (divmod(v, 86_400 * 10**9) for v in ns_edges)]}
    data = src.read_bytes()
    for raw in stored["ts"] + stored["ns"]:
        assert raw in data  # the independent computation is what the page holds
    dst = tmp_path / "out.parquet"
    attach_bloom_filters(src, dst, ["ts", "ns"])
    with ParquetBloomReader(dst) as r:
        for column, raws in stored.items():
            bf = r.bloom_filter(0, column)
            assert bf is not None
            assert [bf.check_hash(_xxh64(raw)) for raw in raws] == [True] * len(raws)
        assert r.row_groups_maybe_containing("ts", dt.datetime(9999, 12, 31), timezone="UTC") == [0]
        assert r.row_groups_maybe_containing("ts", dt.datetime(1, 1, 1), timezone="UTC") == [0]


def test_attach_nanos_view_and_uuid_columns_without_pandas(tmp_path: Path) -> None:
    """Issue 15 item 14: TIMESTAMP(NANOS) / TIME(NANOS) failed without pandas (the cross-check
    called to_pylist) and string_view, binary_view and arrow.uuid had no count_distinct kernel.
    Run in a process where pandas cannot be imported; every stored value is then found."""
    import subprocess
    import sys
    import uuid

    n = 50
    uuids = [uuid.UUID(int=(i * 0x9E3779B97F4A7C15) % (1 << 128)) for i in range(n)]
    table = pa.table({
        "ts_ns": pa.array([(1 << 63) - 1 - i * 999_999_937 for i in range(n)], pa.timestamp("ns")),
        "t_ns": pa.array([86_399_999_999_999 - i * 1_000_001 for i in range(n)], pa.time64("ns")),
        "sv": pa.array([f"s{i}" * (i % 20) for i in range(n)], pa.string_view()),
        "bv": pa.array([bytes([i]) * (i % 40) for i in range(n)], pa.binary_view()),
        "id": pa.array([u.bytes for u in uuids], pa.uuid()),
    })
    src = write_plain(tmp_path / "src.parquet", table)
    dst = tmp_path / "out.parquet"
    script = ("import sys\n"
              "class NoPandas:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name.split('.')[0] == 'pandas':\n"
              "            raise ModuleNotFoundError(name)\n"
              "sys.meta_path.insert(0, NoPandas())\n"
              "from secure_bloom.parquet import attach_bloom_filters\n"
              f"attach_bloom_filters({str(src)!r}, {str(dst)!r}, ['ts_ns', 't_ns', 'sv', 'bv', 'id'])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    stored = {"ts_ns": [((1 << 63) - 1 - i * 999_999_937).to_bytes(8, "little", signed=True) for i in range(n)],
              "t_ns": [(86_399_999_999_999 - i * 1_000_001).to_bytes(8, "little") for i in range(n)],
              "sv": [(f"s{i}" * (i % 20)).encode() for i in range(n)],
              "bv": [bytes([i]) * (i % 40) for i in range(n)],
              "id": [u.bytes for u in uuids]}
    with ParquetBloomReader(dst) as r:
        for column, raws in stored.items():
            bf = r.bloom_filter(0, column)
            assert bf is not None, column
            assert [bf.check_hash(_xxh64(raw)) for raw in raws] == [True] * n, column


def test_expected_fpp_counts_the_values_inserted_not_the_ndv_given(tmp_path: Path) -> None:
    """Issue 15 item 19: --column ssn:ndv=1 gave a 32-byte filter holding 2,000 values and reported
    expected_fpp 0.000% while it answers "maybe" to every probe. The estimate comes from the
    distinct values inserted and matches the measured rate."""
    src = write_plain(tmp_path / "src.parquet", row_group_size=2000)
    report = attach_bloom_filters(src, tmp_path / "out.parquet", ["ssn"], ndv=1)
    f = report.filters[0]
    assert (f.num_bytes, f.ndv, f.values) == (32, 1, 2000)
    with ParquetBloomReader(tmp_path / "out.parquet") as r:
        bf = r.bloom_filter(0, "ssn")
        assert bf is not None
        measured = float(bf.might_contain_many([f"absent-{i}" for i in range(4000)], "BYTE_ARRAY").mean())
    assert measured == 1.0 and f.expected_fpp == pytest.approx(1.0, abs=1e-6)


def test_replacing_a_leaked_plaintext_filter_leaves_none_of_its_bytes(tmp_path: Path) -> None:
    """arrow-rs shape: a plaintext filter on an encrypted column. attach rebuilds it encrypted and
    zeroes the old bytes (every other offset stays valid), so the output has no copy of the leak
    and the audit, orphan scan included, passes."""
    from support import leaky_writer as lw

    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet.audit.auditor import audit

    keys = KeyAccess(kms=KeyListKms(lw.key_list()))
    src, leak, dst = tmp_path / "src.parquet", tmp_path / "leak.parquet", tmp_path / "dst.parquet"
    lw.write_pyarrow_encrypted(src)
    lw.inject_filters(src, leak, {"ssn": "plaintext", "email": "column_key"}, keys, values=lw.table_values())
    with ParquetBloomReader(leak, keys) as r:
        old = [(c.bloom_filter_offset, c.bloom_filter_length) for c in r.chunks(with_sizes=False) if c.column == "ssn"]
    leaked = leak.read_bytes()
    old_bytes = [leaked[o:o + n] for o, n in old]  # type: ignore[operator]
    assert all(b.startswith(b"\x15") for b in old_bytes)  # plaintext headers

    report = attach_bloom_filters(leak, dst, ["ssn"], keys)
    assert [f.replaced for f in report.filters] == [True, True] and report.kept_filters == 2
    out = dst.read_bytes()
    for (offset, length), data in zip(old, old_bytes):
        assert out[offset:offset + length] == bytes(length)  # type: ignore[operator]
        assert data[16:] not in out  # the bitset is nowhere else either
    assert out[:old[0][0]] == leaked[:old[0][0]]  # type: ignore[index]
    assert audit(dst, ["ssn", "email"], keys=keys).is_compliant
    with ParquetBloomReader(dst, keys) as r:
        assert r.row_groups_maybe_containing("ssn", "ssn-0007") == [0]
        assert r.row_groups_maybe_containing("ssn", "ssn-0077") == [1]
    assert _read_lw(dst, keys).equals(_read_lw(leak, keys))


def _read_lw(path: Path, keys: KeyAccess) -> pa.Table:
    import pyarrow.parquet.encryption as pe

    from secure_bloom.kms import pyarrow_kms_client_factory

    factory = pe.CryptoFactory(pyarrow_kms_client_factory(keys.kms))
    props = factory.file_decryption_properties(pe.KmsConnectionConfig(), pe.DecryptionConfiguration())
    return pq.read_table(path, decryption_properties=props)


def test_in_place_on_a_symlink_replaces_its_target(tmp_path: Path) -> None:
    src = write_plain(tmp_path / "data.parquet")
    link = tmp_path / "link.parquet"
    link.symlink_to("data.parquet")
    report = attach_bloom_filters(link, link, ["id"], in_place=True)
    assert report.dst == str(link)
    assert link.is_symlink() and os.readlink(link) == "data.parquet"
    with ParquetBloomReader(src) as r:
        assert [r.bloom_filter(g, "id") is not None for g in range(r.num_row_groups)] == [True, True, True]
    assert _leftovers(tmp_path) == []


def test_dangling_symlink_destination_exists(tmp_path: Path) -> None:
    from secure_bloom.errors import DestinationExistsError

    src = write_plain(tmp_path / "src.parquet")
    dst = tmp_path / "dst.parquet"
    dst.symlink_to("nowhere.parquet")
    with pytest.raises(DestinationExistsError, match="exists; pass overwrite=True"):
        attach_bloom_filters(src, dst, ["id"])
    assert dst.is_symlink() and os.readlink(dst) == "nowhere.parquet" and not (tmp_path / "nowhere.parquet").exists()
    attach_bloom_filters(src, dst, ["id"], overwrite=True)  # asked for: the link is replaced
    assert not dst.is_symlink()
    with ParquetBloomReader(dst) as r:
        assert r.bloom_filter(0, "id") is not None


def test_attach_refuses_an_ambiguous_path_and_takes_path_parts(tmp_path: Path) -> None:
    from secure_bloom.errors import AmbiguousColumnError

    src = tmp_path / "amb.parquet"
    pq.write_table(pa.table({"a.b": pa.array(["top1", "top2"]), "a": pa.array([{"b": "nested1"}, {"b": "n2"}])}), src)
    with pytest.raises(AmbiguousColumnError, match=r"""'a.b' is ambiguous: it names the leaves \["a.b"\] and \["a", "b"\]"""):
        attach_bloom_filters(src, tmp_path / "x.parquet", ["a.b"])
    assert not (tmp_path / "x.parquet").exists()
    for parts, other, values in ((("a.b",), ("a", "b"), ["top1", "top2"]), (("a", "b"), ("a.b",), ["nested1", "n2"])):
        dst = tmp_path / f"{len(parts)}.parquet"
        attach_bloom_filters(src, dst, [parts])
        with ParquetBloomReader(dst) as r:
            assert r.bloom_filter(0, other) is None
            assert r.probe(r.column(parts), values + ["elsewhere"]).row_groups[0].values == \
                ((values[0], MAYBE), (values[1], MAYBE), ("elsewhere", ABSENT))


def test_attach_without_footer_key_names_the_key_not_its_material(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from support.parquet_files import write_encrypted

    from secure_bloom.errors import MissingKeyError
    from secure_bloom.parquet import NO_KEYS
    from secure_bloom.parquet.write.attach import attach_bloom_filters

    src = write_encrypted(tmp_path / "signed.parquet", plaintext_footer=True)
    with pytest.raises(MissingKeyError) as info:
        attach_bloom_filters(src, tmp_path / "out.parquet", ["id"], keys=NO_KEYS)
    message = str(info.value)
    assert "'kf'" in message  # the master key id
    for material in ("wrappedDEK", "wrappedKEK", "keyMaterialType", "{"):
        assert material not in message
    assert not (tmp_path / "out.parquet").exists()


def test_attach_reports_expected_fpp_and_the_size_cap(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import pyarrow as pa
    import pyarrow.parquet as pq

    from secure_bloom.cli import main
    from secure_bloom.parquet.write.attach import attach_bloom_filters

    src = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"v": pa.array(range(20_000), pa.int64())}), src, row_group_size=20_000)
    roomy = attach_bloom_filters(src, tmp_path / "roomy.parquet", ["v"], fpp=0.01)
    assert not roomy.filters[0].capped and roomy.filters[0].expected_fpp < 0.01
    tight = attach_bloom_filters(src, tmp_path / "tight.parquet", ["v"], fpp=0.01, bloom_filter_max_bytes=1024)
    assert tight.filters[0].capped and tight.filters[0].num_bytes == 1024
    assert tight.filters[0].expected_fpp > 0.5  # 20k values in 1 KiB: nearly every probe says "maybe"
    assert main(["attach", str(src), str(tmp_path / "cli.parquet"), "--bloom", "v", "--bloom-filter-max-bytes", "1024"]) == 0
    assert "hit the size cap" in capsys.readouterr().out
    assert main(["attach", str(src), str(tmp_path / "bad.parquet"), "--bloom", "v", "--bloom-filter-max-bytes", "1000"]) == 2


def test_ndv_is_counted_exactly_from_the_hashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13: exact NDV from the chunk's hashes (kernels.count_distinct_hashes), not from
    pyarrow.compute.count_distinct (61% of attach's time on a big file)."""
    import pyarrow.compute as pc

    def no_count_distinct(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("attach must size filters from the hashes")

    monkeypatch.setattr(pc, "count_distinct", no_count_distinct)
    table = pa.table({"day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i % 37) for i in range(3000)]),
                      "word": pa.array([None if i % 5 == 0 else f"w{i % 101}" for i in range(3000)])})
    src = write_encrypted(tmp_path / "src.parquet", table, column_keys={"kc1": ["word"], "kc2": ["day"]})
    report = attach_bloom_filters(src, tmp_path / "dst.parquet", ["day", "word"], KEYS, fpp=0.01)
    expected = {}
    for rg in range(3):
        part = table.slice(rg * ROWS_PER_GROUP, ROWS_PER_GROUP)
        for name in ("day", "word"):
            present = [v for v in part.column(name).to_pylist() if v is not None]
            expected[rg, name] = (len(set(present)), len(present))
    assert {(f.row_group, f.column): (f.ndv, f.values) for f in report.filters} == expected
    assert all(f.num_bytes == optimal_num_bytes(f.ndv, 0.01) for f in report.filters)


def test_a_read_failure_while_the_pages_are_copied_leaves_nothing_behind(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pages are copied on a thread while the filters are built: a failure in the build stops
    the copy and removes the partial output."""
    from secure_bloom.parquet.file.arrow_source import ArrowChunkSource

    src = write_encrypted(tmp_path / "src.parquet")
    before = _digest(src)
    real_values = ArrowChunkSource.row_group_values
    calls = []

    def failing_values(self: Any, row_group: int, columns: Any) -> Any:
        calls.append(row_group)
        if len(calls) == 2:
            raise OSError(5, "I/O error reading a page")
        return real_values(self, row_group, columns)

    monkeypatch.setattr(ArrowChunkSource, "row_group_values", failing_values)
    dst = tmp_path / "dst.parquet"
    with pytest.raises(AttachError, match="I/O error reading a page"):
        attach_bloom_filters(src, dst, ["ssn", "id"], KEYS)
    assert calls == [0, 1]  # the read ahead stops at the failure
    assert not dst.exists() and _leftovers(tmp_path) == [] and _digest(src) == before
