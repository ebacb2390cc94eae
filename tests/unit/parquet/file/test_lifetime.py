"""secure_bloom.parquet.file.lifetime: what Arrow's threads hold is released on Python threads, and
the exit's wait ends as soon as Arrow has let go (it must not cost every process its bound).

Timing, robust to a loaded machine without weaker claims: a wait is given a generous timeout and
must return well before it (proof that it ended on its condition, not at its bound), and a
bounded wait is shown to be bounded by what it returns (False: it gave up while the object was
still alive) rather than by a wall-clock ceiling on how fast this process was scheduled.
"""

from __future__ import annotations

import gc
import threading
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
    # A long timeout, so that a loaded machine cannot make Arrow miss it; the exit's own bound
    # (EXIT_WAIT_S) is what the wait must stay under: returning True before it is Arrow letting
    # go within the exit's bound, and the wait ending then, not at its timeout.
    assert lifetime.settle(timeout=12 * lifetime.EXIT_WAIT_S)
    waited = time.monotonic() - started
    print(f"Arrow released the counted read's objects {waited:.3f} s after the scan was dropped")
    assert lifetime.outstanding() == 0 and waited < lifetime.EXIT_WAIT_S
    assert table.column("k").to_pylist() == [7, 45_000]  # the rows do not depend on released buffers


def test_a_tracked_object_still_referenced_bounds_the_wait() -> None:
    """The wait gives up at its timeout, not when the object goes: the object is released by a
    timer only long after the timeout, so a wait that ignored its bound would return True (at
    the release), however slowly this process runs. It also waits at least its timeout."""
    timeout = 0.2
    holder = [lifetime.track(_Held())]
    release = threading.Timer(60 * timeout, holder.clear)
    release.start()
    try:
        started = time.monotonic()
        gave_up = not lifetime.settle(timeout=timeout)
        waited = time.monotonic() - started
        assert gave_up and release.is_alive() and lifetime.outstanding() >= 1
        assert waited >= timeout
    finally:
        release.cancel()
    holder.clear()
    assert lifetime.settle(timeout=60 * timeout)


def test_the_wait_ends_when_the_last_object_goes_not_at_its_timeout() -> None:
    """Released on another thread after a short while, the tracked object ends the wait then: a
    wait that slept its whole timeout (60 times longer) would be caught whatever the load."""
    timeout = 30.0
    holder = [lifetime.track(_Held())]
    release = threading.Timer(0.1, holder.clear)
    started = time.monotonic()
    release.start()
    assert lifetime.settle(timeout=timeout)
    waited = time.monotonic() - started
    release.join()
    assert lifetime.outstanding() == 0 and 0.1 <= waited < timeout / 2
