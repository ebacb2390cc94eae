"""secure_bloom.parquet.file.lifetime: what Arrow's threads hold is released on Python threads, and
the exit's wait ends as soon as Arrow has let go (it must not cost every process its bound)."""

from __future__ import annotations

import gc
import time
import weakref
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from secure_bloom.parquet.file import lifetime
from secure_bloom.parquet.read.api import scan


class _Held:
    pass


def test_retain_keeps_the_last_scans_and_releases_older_ones() -> None:
    first, last = _Held(), _Held()
    first_ref, last_ref = weakref.ref(first), weakref.ref(last)
    lifetime.retain(first)
    for _ in range(lifetime.RETAINED - 1):
        lifetime.retain(_Held())
    del first
    gc.collect()
    assert first_ref() is not None  # still among the last RETAINED
    lifetime.retain(last)
    del last
    gc.collect()
    assert first_ref() is None and last_ref() is not None


def test_counted_reads_are_released_by_arrow_so_the_exit_does_not_wait(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"k": range(50_000), "v": [str(i) for i in range(50_000)]}), path, row_group_size=5_000)
    pruned = scan(str(path), filters=[("k", "in", [7, 45_000])], count_reads=True)
    table = pruned.to_table()
    assert table.num_rows == 2 and pruned.report.data_requests > 0
    started = time.monotonic()
    del pruned
    assert lifetime.settle(timeout=5.0)
    assert lifetime.outstanding() == 0 and time.monotonic() - started < 2.0
    assert table.column("k").to_pylist() == [7, 45_000]  # the rows do not depend on released buffers


def test_a_tracked_object_still_referenced_bounds_the_wait() -> None:
    held = lifetime.track(_Held())
    started = time.monotonic()
    assert not lifetime.settle(timeout=0.05)
    assert time.monotonic() - started < 1.0
    del held
    assert lifetime.settle(timeout=1.0)
