"""A lookup leaves nothing for the cyclic garbage collector: readers, footers and facts are freed
by reference counting when they are dropped.

A reader in a reference cycle (it was: the reader held its ChunkKeys, which held a bound method
of the reader) keeps its whole footer (hundreds of objects per file) alive until a collection
finds the cycle; the collections that walk them (promoted to older generations on the way) took
a quarter to a third of a cold lookup over 50 or 300 encrypted files. These tests run lookups
with the collector off and then ask it what it would have had to free.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from secure_bloom.parquet import KeyAccess, ParquetBloomReader, PruneCache, attach_bloom_filters, read_table
from secure_bloom.parquet.read.api import dataset as pruned_dataset
from secure_bloom.parquet.read.api import scan
from support.parquet_files import sample_table, vector_kms, write_encrypted


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Three encrypted files (their own KEKs: one factory each), Bloom filters on ssn and id."""
    root = tmp_path / "data"
    root.mkdir()
    for i in range(3):
        staging = write_encrypted(tmp_path / f"staging-{i}.parquet", sample_table(600), row_group_size=200)
        attach_bloom_filters(staging, root / f"part-{i}.parquet", ["ssn", "id"], KeyAccess(kms=vector_kms()))
    return root


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The collector off for the test (restored after), nothing pending when it starts."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()


def _ours_in_cycles(run: Callable[[], Any]) -> list[str]:
    """The types of our objects (and Thrift structs) the collector finds unreachable after ``run``."""
    run()
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = sorted({type(o).__qualname__ for o in gc.garbage
                    if type(o).__module__.startswith(("secure_bloom", "secure_bloom_parquet_thrift"))})
    gc.set_debug(0)
    gc.garbage.clear()
    return found


@pytest.mark.usefixtures("collector_off")
def test_a_closed_reader_is_freed_when_dropped(dataset: Path) -> None:
    path = dataset / "part-0.parquet"
    with ParquetBloomReader(path, KeyAccess(kms=vector_kms())) as reader:
        row_groups = list(range(reader.num_row_groups))
        assert len(reader.column_metadata_many("ssn", row_groups)) == 3
        assert reader.row_groups_maybe_containing("ssn", "000-00-0000") == [0]
        assert all(f is not None for f in reader.bloom_filters("ssn", row_groups))
        gone = weakref.ref(reader)
        footer = weakref.ref(reader.footer.metadata.row_groups[0])
    del reader
    assert gone() is None, "the reader is in a reference cycle"
    assert footer() is None, "the footer outlives its reader"


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize("value", ["000-00-0000", "absent-ssn"], ids=["present", "absent"])
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_lookup_leaves_no_cycles_of_ours(dataset: Path, value: str, warm: bool) -> None:
    keys, cache = KeyAccess(kms=vector_kms()), PruneCache() if warm else None

    def lookup() -> pa.Table:
        return read_table(dataset, filters=[("ssn", "==", value)], keys=keys, cache=cache)

    expected = 3 if value != "absent-ssn" else 0
    assert lookup().num_rows == expected  # the warm one fills the cache first
    assert _ours_in_cycles(lambda: [lookup() for _ in range(2)]) == []


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize("how", ["scan", "dataset"])
def test_scans_and_pruning_datasets_leave_no_cycles_of_ours(dataset: Path, how: str) -> None:
    keys = KeyAccess(kms=vector_kms())
    filters = [("ssn", "==", "000-00-0000")]

    def lookup() -> int:
        if how == "scan":
            return scan(dataset, filters=filters, keys=keys).to_table().num_rows
        return pruned_dataset(dataset, filters=filters, keys=keys).to_table().num_rows

    assert lookup() == 3
    assert _ours_in_cycles(lambda: [lookup() for _ in range(2)]) == []
