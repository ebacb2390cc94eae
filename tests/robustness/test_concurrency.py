"""Concurrency: probing one directory from 8 threads gives exactly the single-thread answers, with
one shared KeyAccess (its unwrapper's KEK and client caches shared by every thread), one shared
reader per file, and the audit; the expiring cache computes a missing entry once however many
threads ask, and never serves it after its lifetime.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.kms_support import CountingKms, SettableClock
from support.parquet_files import TESTING_KEYS, write_encrypted, write_plain
from support.robustness_support import DATA

from secure_bloom.kms import KeyListKms
from secure_bloom.kms.cache import ExpiringCache
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.write.attach import attach_bloom_filters
from secure_bloom.parquet.audit.auditor import audit
from secure_bloom.parquet.audit.discover import expand_paths

THREADS = 8
VALUES = {"double_field": [0.5, 1.5, 1999.5, 2000.5, -1.0], "float_field": [0.25, 1.25, 3000.25],
          "ssn": ["000-00-0000", "001-01-0001", "no-such-ssn"], "id": [0, 1, 2999, 3000, -5],
          "ts": ["2024-01-01T00:00:00Z", "1999-01-01T00:00:00Z"], "name": ["a", "b"],
          "amount": ["0.01", "29.99", "12345.67"]}


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Vectors with filters, and pyarrow files (encrypted, plaintext) that attach gave filters."""
    root = tmp_path_factory.mktemp("concurrency")
    for name in ("encrypt_columns_and_footer_bloom_filter.parquet.encrypted",
                 "data_index_bloom_encoding_stats.parquet", "data_index_bloom_encoding_with_length.parquet"):
        shutil.copy(DATA / name, root / name)
    keys = KeyAccess(kms=KeyListKms(TESTING_KEYS))
    scratch = tmp_path_factory.mktemp("concurrency-src")
    for i, plaintext_footer in enumerate((False, True)):
        src = write_encrypted(scratch / f"enc{i}.parquet", plaintext_footer=plaintext_footer)
        attach_bloom_filters(src, root / f"enc{i}.parquet", ["ssn", "id", "amount", "ts"], keys)
    attach_bloom_filters(write_plain(scratch / "plain.parquet"), root / "plain.parquet", ["ssn", "id"])
    return root


def _keys(kms: Any = None) -> KeyAccess:
    return KeyAccess(kms=kms or KeyListKms(TESTING_KEYS), explicit=TESTING_KEYS)


def _probe_file(path: str, keys: KeyAccess) -> dict[str, Any]:
    with ParquetBloomReader(path, keys) as reader:
        out = {}
        for column in reader.columns:
            if column.path in VALUES:
                out[column.path] = reader.probe(column, VALUES[column.path]).to_dict()
        return out


def _probe_directory(root: Path, keys: KeyAccess) -> dict[str, Any]:
    return {p.path: _probe_file(p.path, keys) for p in expand_paths([root])}


def _in_threads(work: Callable[[int], Any]) -> list[Any]:
    barrier = threading.Barrier(THREADS)

    def run(i: int) -> Any:
        barrier.wait()  # all threads start together
        return work(i)

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(run, range(THREADS)))


def test_eight_threads_probe_a_directory_like_one(directory: Path) -> None:
    single = CountingKms(KeyListKms(TESTING_KEYS))
    expected = _probe_directory(directory, _keys(single))
    assert len(expected) == 6 and single.unwraps > 0
    answers = [a for doc in expected.values() for col in doc.values() for rg in col["row_groups"]
               for a in (v["answer"] for v in rg["values"])]
    assert "maybe" in answers and "absent" in answers
    kms = CountingKms(KeyListKms(TESTING_KEYS))
    shared = _keys(kms)
    for got in _in_threads(lambda i: _probe_directory(directory, shared)):
        assert got == expected
    # One shared unwrapper: each KEK fetched once, however many threads wanted it at once.
    assert kms.unwraps == single.unwraps


def test_eight_threads_share_one_reader_per_file(directory: Path) -> None:
    keys = _keys()
    files = [p.path for p in expand_paths([directory])]
    expected = {f: _probe_file(f, keys) for f in files}
    readers = {f: ParquetBloomReader(f, keys) for f in files}
    try:
        def work(i: int) -> dict[str, Any]:
            out = {}
            for f in files[i % len(files):] + files[:i % len(files)]:  # different orders
                reader = readers[f]
                out[f] = {c.path: reader.probe(c, VALUES[c.path]).to_dict()
                          for c in reader.columns if c.path in VALUES}
            return out

        for got in _in_threads(work):
            assert got == expected
    finally:
        for reader in readers.values():
            reader.close()


def test_eight_threads_audit_like_one(directory: Path) -> None:
    keys = _keys()
    expected = audit([directory], ["ssn", "double_field", "id"], keys).to_dict()
    for got in _in_threads(lambda i: audit([directory], ["ssn", "double_field", "id"], keys).to_dict()):
        assert got == expected


def test_cache_computes_a_missing_entry_once() -> None:
    cache: ExpiringCache[str, int] = ExpiringCache(60.0)
    calls: list[int] = []
    gate = threading.Event()

    def create() -> int:
        calls.append(1)
        gate.wait(5)
        return 42

    def work(i: int) -> int:
        if i == THREADS - 1:
            gate.set()
        return cache.get_or_create("k", create)

    assert _in_threads(work) == [42] * THREADS
    assert len(calls) == 1


def test_cache_failure_is_not_cached_and_other_keys_proceed() -> None:
    cache: ExpiringCache[int, int] = ExpiringCache(60.0)
    attempts: list[int] = []

    def work(i: int) -> int | str:
        def create() -> int:
            attempts.append(i)
            if i % 2:
                raise RuntimeError("KMS down")
            return i
        try:
            return cache.get_or_create(i, create)
        except RuntimeError:
            return "failed"

    assert _in_threads(work) == [i if i % 2 == 0 else "failed" for i in range(THREADS)]
    assert len(cache) == THREADS // 2


def test_cache_never_serves_an_entry_after_its_lifetime_under_contention() -> None:
    clock = SettableClock()
    cache: ExpiringCache[str, int] = ExpiringCache(10.0, clock)
    generation = [0]
    lock = threading.Lock()

    def create() -> int:
        with lock:
            generation[0] += 1
            return generation[0]

    for step in range(5):
        results = _in_threads(lambda i: cache.get_or_create("k", create))
        assert results == [step + 1] * THREADS  # every thread sees this period's value only
        clock.now += 10.0                      # exactly the lifetime: expired
