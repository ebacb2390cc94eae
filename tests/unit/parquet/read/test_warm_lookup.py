"""Warm lookups (one PruneCache and one KeyAccess across lookups) answer as cold ones do.

A warm lookup keeps pyarrow's dataset discovery while the source lists the same (:mod:`.known`),
judges cached facts without opening files, rechecks each key encryption key once per lookup and
does not scan when nothing survives. Every answer here is compared with pyarrow's own read of
the same files (``pyarrow.dataset.dataset(...).to_table(filter=...)``), after the files changed
between warm lookups: added, removed, replaced (the first file too, with another schema), hidden
files, new hive partitions; errors are those of a cold lookup.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest

from secure_bloom.errors import ColumnNotFoundError, KeyAccessDeniedError
from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory
from secure_bloom.parquet import KeyAccess, PruneCache, attach_bloom_filters
from secure_bloom.parquet.read.api import parquet_format, read_table, scan
from secure_bloom.parquet.read.known import listing
from secure_bloom.parquet.file.sources import resolve
from support.parquet_files import TESTING_KEYS, explicit_testing_keys, write_uniform

ROWS = 60
GROUP = 20


def _key(i: int) -> str:
    return f"{random.Random(i).getrandbits(64):016x}"


def _table(start: int, rows: int = ROWS, extra: bool = False) -> pa.Table:
    ids = range(start, start + rows)
    columns: dict[str, Any] = {"rid": pa.array(ids, pa.int64()), "key": pa.array([_key(i) for i in ids])}
    if extra:
        columns["extra"] = pa.array([f"x{i}" for i in ids])
    return pa.table(columns)


class CountingKms(KeyListKms):
    """The key list KMS (a real one), counting unwraps and refusing master keys named in ``refused``."""

    def __init__(self) -> None:
        super().__init__(TESTING_KEYS)
        self.unwraps = 0
        self.refused: set[str] = set()

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        self.unwraps += 1
        if master_key_identifier in self.refused:
            raise KeyAccessDeniedError(f"access to master key {master_key_identifier!r} revoked")
        return super().unwrap_key(wrapped_key, master_key_identifier)


def _write(path: Path, table: pa.Table, factory: pe.CryptoFactory | None, keys: KeyAccess | None) -> Path:
    """``table`` with Bloom filters on ``key``: plaintext, or encrypted (footer kf, ``key`` under
    kc1) with ``factory`` (one factory for a whole dataset: its files share their KEKs)."""
    staging = path.parent.parent / f".staging-{path.name}"
    if factory is None:
        pq.write_table(table, staging, row_group_size=GROUP)
    else:
        config = pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["key"]}, double_wrapping=True)
        pq.write_table(table, staging, row_group_size=GROUP,
                       encryption_properties=factory.file_encryption_properties(pe.KmsConnectionConfig(), config))
    attach_bloom_filters(staging, path, ["key"], keys, overwrite=True)
    staging.unlink()
    return path


@pytest.fixture(params=["plaintext", "encrypted"])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, KeyAccess | None, Any]:
    """Three files in ``tmp_path/lake``, the KeyAccess to read them, and a writer of more."""
    kms = CountingKms()
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms)) if request.param == "encrypted" else None
    keys = KeyAccess(kms=kms) if factory is not None else None
    root = tmp_path / "lake"
    root.mkdir()

    def write(name: str, table: pa.Table) -> Path:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        return _write(target, table, factory, keys)

    for i in range(3):
        write(f"part-{i}.parquet", _table(i * ROWS))
    return root, keys, write


def _reference(root: Path, keys: KeyAccess | None, filters: Any, columns: list[str] | None = None) -> pa.Table:
    expr = filters if isinstance(filters, pc.Expression) else pq.filters_to_expression(filters)
    return ds.dataset(root, format=parquet_format(keys), partitioning="hive").to_table(columns=columns, filter=expr)


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _same(root: Path, keys: KeyAccess | None, cache: PruneCache, filters: Any, columns: list[str] | None = None) -> None:
    ours = read_table(root, filters=filters, keys=keys, cache=cache, columns=columns)
    expected = _reference(root, keys, filters, columns)
    assert ours.schema.equals(expected.schema, check_metadata=True)
    assert _rows(ours) == _rows(expected)


def _errors(read: Any, *uses: PruneCache | None) -> list[tuple[type, str]]:
    """The error (class, message) ``read(cache)`` raises with each of ``uses``."""
    errors = []
    for use in uses:
        with pytest.raises(Exception) as caught:
            read(use)
        errors.append((type(caught.value), str(caught.value)))
    return errors


def _warm_scan(root: Path, keys: KeyAccess | None, cache: PruneCache, filters: Any) -> Any:
    return scan(root, filters=filters, keys=keys, cache=cache, count_reads=True)


def test_a_warm_lookup_discovers_nothing_again(lake: tuple[Path, KeyAccess | None, Any]) -> None:
    """The kept discovery: no footer read for the schema; nothing read at all for an absent key."""
    root, keys, _ = lake
    cache = PruneCache()
    absent = [("key", "==", "absent")]
    cold = _warm_scan(root, keys, cache, absent)
    cold.to_table()
    assert cold.report.data_bytes_read > 0  # pyarrow's discovery read the first footer
    warm = _warm_scan(root, keys, cache, absent)
    assert warm.to_table().num_rows == 0
    assert (warm.report.data_bytes_read, warm.report.data_requests, warm.report.metadata_bytes_read) == (0, 0, 0)
    assert warm.report.cache_hits == 3
    present = _warm_scan(root, keys, cache, [("key", "==", _key(70))])
    assert _rows(present.to_table()) == [(70, _key(70))]
    assert [len(f.row_groups) for f in present.report.files] == [0, 1, 0]


def test_a_surviving_file_pyarrow_opens_alone_is_not_opened_again(lake: tuple[Path, KeyAccess | None, Any]) -> None:
    """Warm, a file with row groups to read is scanned with the dataset's format when its cached
    facts say pyarrow opens it (plaintext, or key tools material): no reader opens it first."""
    root, keys, _ = lake
    cache = PruneCache()
    filters = [("key", "==", _key(70))]
    for _ in range(2):
        pruned = scan(root, filters=filters, keys=keys, cache=cache)
        assert _rows(pruned.to_table()) == [(70, _key(70))]
    assert [len(f.row_groups) for f in pruned.report.files] == [0, 1, 0]
    assert pruned.report.metadata_bytes_read == 0 and pruned.report.cache_hits == 3


def test_a_surviving_file_with_explicit_keys_gets_its_own_format(tmp_path: Path) -> None:
    """A file pyarrow's KMS path cannot open (a bare key id): its reader is opened for its format."""
    keys = explicit_testing_keys()
    root = tmp_path / "lake"
    root.mkdir()
    for i in range(2):
        staging = tmp_path / f"staging-{i}.parquet"
        write_uniform(staging, _table(i * ROWS), row_group_size=GROUP)
        attach_bloom_filters(staging, root / f"part-{i}.parquet", ["key"], keys)
    cache = PruneCache()
    for _ in range(2):
        pruned = scan(root, filters=[("key", "==", _key(70))], keys=keys, cache=cache)
        assert _rows(pruned.to_table()) == [(70, _key(70))]
        assert pruned.report.metadata_bytes_read > 0  # the surviving file's footer, for its key


@pytest.mark.parametrize("change", ["add", "remove", "replace", "replace-first", "hidden", "underscore",
                                    "subdirectory"])
def test_warm_lookups_follow_the_files(lake: tuple[Path, KeyAccess | None, Any], change: str) -> None:
    root, keys, write = lake
    cache = PruneCache()
    wanted = [_key(5), _key(65), _key(500), _key(905)]
    filters = [("key", "in", wanted)]
    for _ in range(2):
        _same(root, keys, cache, filters)
    time.sleep(0.01)  # a replacement gets another mtime/ctime even on coarse clocks
    if change == "add":
        write("part-9.parquet", _table(900))
    elif change == "remove":
        (root / "part-1.parquet").unlink()
    elif change == "replace":
        write("part-1.parquet", _table(480))
    elif change == "replace-first":  # the file pyarrow reads the schema from, now with another column
        write("part-0.parquet", _table(0, extra=True))
    elif change == "hidden":
        write(".part-8.parquet", _table(900))
    elif change == "underscore":
        write("_part-8.parquet", _table(900))
    else:  # files in a subdirectory are the dataset's too
        write("more/part-8.parquet", _table(900))
    for _ in range(2):
        _same(root, keys, cache, filters)
        _same(root, keys, cache, [("key", "==", "absent")])


def test_hive_partitions_added_between_warm_lookups(lake: tuple[Path, KeyAccess | None, Any]) -> None:
    root, keys, write = lake
    for name in os.listdir(root):
        os.remove(root / name)
    write("year=2023/part-0.parquet", _table(0))
    write("year=2024/part-0.parquet", _table(ROWS))
    cache = PruneCache()
    for filters in ([("year", "==", 2024)], [("year", "==", 2024), ("key", "==", _key(70))],
                    [("key", "==", _key(130))]):
        for _ in range(2):
            _same(root, keys, cache, filters)
    write("year=2025/part-0.parquet", _table(2 * ROWS))
    for _ in range(2):
        _same(root, keys, cache, [("key", "==", _key(130))])
        pruned = scan(root, filters=[("year", ">=", 2024)], keys=keys, cache=cache)
        assert pruned.report.files_skipped_by_partition == 1
    write("year=abc/part-0.parquet", _table(3 * ROWS))  # the partition field becomes a string
    for _ in range(2):
        _same(root, keys, cache, [("key", "==", _key(190))])


@pytest.mark.parametrize("columns", [None, ["key"], ["year", "rid"], ["rid", "key", "year"]])
def test_an_all_pruned_result_is_pyarrows_empty_table(lake: tuple[Path, KeyAccess | None, Any],
                                                      columns: list[str] | None) -> None:
    root, keys, write = lake
    write("year=2024/part-0.parquet", _table(ROWS * 10))
    cache = PruneCache()
    expr = pc.field("key") == "absent"
    for _ in range(2):
        ours = read_table(root, filters=expr, keys=keys, cache=cache, columns=columns)
        expected = _reference(root, keys, expr, columns)
        assert ours.num_rows == 0 and ours.schema.equals(expected.schema, check_metadata=True)


@pytest.mark.parametrize("mistake", ["filter-column", "select-column", "filter-type"])
def test_errors_of_warm_lookups_are_those_of_cold_ones(lake: tuple[Path, KeyAccess | None, Any], mistake: str) -> None:
    root, keys, _ = lake
    cache = PruneCache()
    read_table(root, filters=[("key", "==", "absent")], keys=keys, cache=cache)  # fills the cache
    options: dict[str, Any] = {
        "filter-column": {"filters": [("nope", "==", 1)]},
        "select-column": {"filters": [("key", "==", "absent")], "columns": ["nope"]},
        "filter-type": {"filters": pc.field("rid") == pc.scalar("text")},
    }[mistake]
    errors = _errors(lambda use: read_table(root, keys=keys, cache=use, **options), None, cache, cache)
    assert errors[0] == errors[1] == errors[2]
    if mistake == "filter-column":
        assert errors[0][0] is ColumnNotFoundError


def test_a_removed_source_fails_as_cold(lake: tuple[Path, KeyAccess | None, Any]) -> None:
    root, keys, _ = lake
    cache = PruneCache()
    read_table(root, filters=[("key", "==", "absent")], keys=keys, cache=cache)
    shutil.rmtree(root)
    warm, cold = _errors(lambda use: read_table(root, filters=[("key", "==", "absent")], keys=keys, cache=use),
                         cache, None)
    assert warm == cold


def test_a_listed_file_removed_fails_as_cold(lake: tuple[Path, KeyAccess | None, Any]) -> None:
    root, keys, _ = lake
    files = [str(root / f"part-{i}.parquet") for i in range(3)]
    cache = PruneCache()
    read_table(files, filters=[("key", "==", "absent")], keys=keys, cache=cache)
    os.remove(files[2])
    warm, cold = _errors(lambda use: read_table(files, filters=[("key", "==", "absent")], keys=keys, cache=use),
                         cache, None)
    assert warm == cold


def test_each_key_encryption_key_is_asked_once_per_lookup(tmp_path: Path) -> None:
    """With cache_lifetime_s=0 every lookup asks the KMS again: once per KEK (footer and column
    KEKs shared by the files one writer wrote), not once per file and key."""
    kms = CountingKms()
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
    write_keys = KeyAccess(kms=kms)
    root = tmp_path / "lake"
    root.mkdir()
    for i in range(6):
        _write(root / f"part-{i}.parquet", _table(i * ROWS), factory, write_keys)
    keys = KeyAccess(kms=kms, cache_lifetime_s=0)
    cache = PruneCache()
    read_table(root, filters=[("key", "==", "absent")], keys=keys, cache=cache)
    before = kms.unwraps
    table = read_table(root, filters=[("key", "==", "absent")], keys=keys, cache=cache)
    assert table.num_rows == 0
    assert kms.unwraps - before == 2  # the footer KEK (kf) and the column KEK (kc1)

    kms.refused.add("kc1")  # revoked: no answer from what the cache holds, as without a cache
    with pytest.raises(KeyAccessDeniedError, match="kc1"):
        read_table(root, filters=[("key", "==", "absent")], keys=keys)
    with pytest.raises(KeyAccessDeniedError, match="kc1"):
        read_table(root, filters=[("key", "==", "absent")], keys=keys, cache=cache)


def test_the_listing_sees_every_entry(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / ".hidden").write_bytes(b"")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    (tmp_path / "f.parquet").write_bytes(b"")
    seen = listing(resolve(str(tmp_path)))
    assert seen is not None and {p for p, _ in seen[2:]} == {
        str(tmp_path / "a"), str(tmp_path / "a" / ".hidden"), str(tmp_path / "_SUCCESS"), str(tmp_path / "f.parquet")}
    os.symlink(tmp_path / "f.parquet", tmp_path / "link.parquet")
    assert listing(resolve(str(tmp_path))) is None  # what a link names may change unseen: not kept
