"""What we hand an engine never deadlocks, and a process exits cleanly while a daemon thread reads.

Issue 28, item 2: DuckDB's reader calls pyarrow's ``Scanner.to_reader()``, which keeps the GIL;
with a Python KMS client, an Arrow I/O thread unwrapping a key held pyarrow's key mutex while
waiting for the GIL, and the caller held the GIL while waiting for the mutex: the query hung for
good. Each scan now unwraps its keys before it starts (``secure_bloom.parquet.read.scan_keys``),
so no scan calls into Python under that mutex. The KMS here is the key-list KMS with a latency
of a networked one (a few milliseconds per unwrap, the GIL released as a socket wait releases
it), which is what widens the window: without it the race is rarely lost.

Issue 28, item 3: a daemon thread inside ``read_table`` (or ``scan(count_reads=True)``) while
the interpreter exits made the process hang or abort (status 134); the exit now waits for the
scan and parks the thread (``secure_bloom.parquet.file.lifetime.scanning``).

Issue 29 (found by stressing the first scenario with both cores busy: 2 of 8 runs hung): a
second lock of the same kind. ``to_reader()`` starts the scan holding the GIL and waits for the
scan's merged-generator lock, which an Arrow thread held while it opened the next file through
the pinning filesystem (:class:`~secure_bloom.parquet.file.identity.PinnedFileSystem`, Python)
and waited for the GIL. A PruningDataset's scanner now opens its surviving local files when it is
made, each checked to be the version pruned, so its scan calls no Python from Arrow's threads.

Every scenario runs in fresh interpreters, each under a deadline, so a hang fails the test
rather than the suite; a hung interpreter's threads are dumped (faulthandler) into the failure.
"""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from importlib import import_module
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, dataset
from secure_bloom.parquet.file.identity import PinnedFileSystem
from support.parquet_files import write_encrypted

restrict = import_module("secure_bloom.parquet.read.restrict")
KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}  # the lake's (tests only)

#: A query that takes a second takes well under this; a deadlocked one never ends.
QUERY_DEADLINE_S = 30
QUERIES = 50
EXIT_RUNS = 24

DUCKDB_SCRIPT = textwrap.dedent("""
    import faulthandler, os, signal, sys, threading, time
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the parent's dump of a hang
    import duckdb
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, dataset
    from secure_bloom.parquet.duckdb import register

    lake, queries = sys.argv[1], int(sys.argv[2])
    KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}

    class NetworkLatencyKms:
        '''The key-list KMS answering after a few milliseconds, as a KMS across a network does.'''
        def __init__(self):
            self.kms = KeyListKms(KEYS)
        def wrap_key(self, key, master):
            return self.kms.wrap_key(key, master)
        def unwrap_key(self, wrapped, master):
            time.sleep(0.02)
            return self.kms.unwrap_key(wrapped, master)

    con = duckdb.connect()
    for i in range(queries):
        keys = KeyAccess(kms=NetworkLatencyKms())  # a new client: its keys are not cached yet
        sql = f"SELECT count(*), min(s), sum(n) FROM {{}} WHERE id >= {i} AND n >= 0"
        if i % 2:
            register(con, "lake", lake, keys=keys)
            got = con.sql(sql.format("lake")).fetchall()
        else:
            data = dataset(lake, keys=keys)
            got = con.sql(sql.format("data")).fetchall()
        assert got[0][0] == 5 * 400 - i, got
        print(f"query {i} answered", flush=True)
    print("done", flush=True)
""")


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five encrypted files (pyarrow's key tools, double wrapping, column keys), each written by
    its own writer: each has key-encryption keys of its own, as files of separate jobs do."""
    root = tmp_path_factory.mktemp("lake")
    for f in range(5):
        ids = range(f * 400, (f + 1) * 400)
        table = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"v{i:05d}" for i in ids],
                          "n": pa.array([i % 7 for i in ids], pa.int64())})
        write_encrypted(root / f"part-{f}.parquet", table, column_keys={"kc1": ["s"], "kc2": ["n"]},
                        row_group_size=100)
    return root


def _every_query_answers(lake: str, queries: int) -> None:
    """DUCKDB_SCRIPT over ``lake`` in a fresh interpreter: each query answers within its deadline,
    kept from outside (a deadlocked process holds the GIL: no thread of its own runs)."""
    proc = subprocess.Popen([sys.executable, "-c", DUCKDB_SCRIPT, lake, str(queries)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    answered = []
    try:
        for i in range(queries):
            try:
                answered.append(lines.get(timeout=QUERY_DEADLINE_S).strip())
            except queue.Empty:
                pytest.fail(f"query {i} did not answer within {QUERY_DEADLINE_S} s (after {len(answered)} answered); "
                            f"its threads:\n{_thread_dump(proc)}")
            assert answered[-1] == f"query {i} answered", (answered[-1], proc.stderr)
        assert proc.wait(timeout=QUERY_DEADLINE_S) == 0, proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _thread_dump(proc: subprocess.Popen[str]) -> str:
    """The Python stacks of every thread of a hung ``proc`` (faulthandler, on SIGUSR1: it needs
    no GIL), then ``proc`` killed."""
    proc.send_signal(signal.SIGUSR1)
    time.sleep(1)
    proc.kill()
    _, err = proc.communicate(timeout=QUERY_DEADLINE_S)
    return err[-20_000:]


def test_duckdb_queries_over_encrypted_files_never_deadlock(lake: Path) -> None:
    """50 DuckDB queries (a registered view, a dataset variable), each with a KMS client whose
    keys are not cached yet, over 5 encrypted files with default thread pools: each answers
    within its deadline (before the fix most runs hung within the first 10 queries)."""
    _every_query_answers(str(lake), QUERIES)


def test_a_pruning_datasets_scan_calls_no_python_from_arrow_threads(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps to_reader() from that second deadlock, checked without a race: a scan of a
    PruningDataset (what DuckDB and Polars are handed) never opens a local file through the
    pinning filesystem's Python handler; its rows are pyarrow's."""
    opens: list[str] = []
    handler_open = PinnedFileSystem.open_input_file

    def counted(self: PinnedFileSystem, path: str) -> Any:
        opens.append(threading.current_thread().name)
        return handler_open(self, path)

    monkeypatch.setattr(PinnedFileSystem, "open_input_file", counted)
    data = dataset(lake, keys=KeyAccess(kms=KeyListKms(KEYS)))
    where = (pc.field("id") >= 3) & (pc.field("n") >= 0)
    got = data.scanner(columns=["id", "s", "n"], filter=where).to_reader().read_all()
    assert opens == []
    assert sorted(got["id"].to_pylist()) == list(range(3, 2000))
    assert [f.row_groups for f in data.last_report.files] == [(0, 1, 2, 3)] * 5
    assert data.to_table(filter=pc.field("id") == 401)["s"].to_pylist() == ["v00401"]  # to_table alike
    assert opens == []


def test_a_scan_that_names_its_files_still_names_them(lake: Path) -> None:
    """``__filename`` among the columns: the files open through the pinning filesystem, which
    names them (an open file would be ``<Buffer>``)."""
    data = dataset(lake, keys=KeyAccess(kms=KeyListKms(KEYS)))
    named = data.scanner(columns=["id", "__filename"], filter=pc.field("id") == 401).to_table()
    assert named.to_pydict() == {"id": [401], "__filename": [str(lake / "part-1.parquet")]}


def test_files_beyond_the_open_budget_open_when_the_scan_reaches_them(lake: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan opens at most ``native_open_budget()`` files when it is made (a quarter of the
    open-file limit, at most NATIVE_OPENS_MAX): the others open through the pinning filesystem
    as the scan reaches them, and every row is still read."""
    assert 0 < restrict.native_open_budget() <= restrict.NATIVE_OPENS_MAX
    monkeypatch.setattr(restrict, "native_open_budget", lambda: 2)
    opens: list[str] = []
    handler_open = PinnedFileSystem.open_input_file

    def counted(self: PinnedFileSystem, path: str) -> Any:
        opens.append(Path(path).name)
        return handler_open(self, path)

    monkeypatch.setattr(PinnedFileSystem, "open_input_file", counted)
    data = dataset(lake, keys=KeyAccess(kms=KeyListKms(KEYS)))
    got = data.scanner(columns=["id"], filter=pc.field("id") >= 0).to_table()
    assert sorted(got["id"].to_pylist()) == list(range(2000))
    assert sorted(opens) == ["part-2.parquet", "part-3.parquet", "part-4.parquet"]


@pytest.mark.s3
def test_duckdb_queries_over_encrypted_objects_never_deadlock(lake: Path, s3: Any) -> None:
    """The same files on moto's S3 server: there the scan reads each surviving file through a
    Python file object (the footer answered from the tail pruning read, the rest from the store)
    on Arrow's threads; every query still answers (20 queries, each with its own KMS client)."""
    bucket = s3.bucket("deadlock")
    upload = s3.upload_filesystem()
    for path in sorted(lake.iterdir()):
        with upload.open_output_stream(f"{bucket}/lake/{path.name}") as out:
            out.write(path.read_bytes())
    s3.reset()
    _every_query_answers(s3.uri(f"{bucket}/lake"), 20)
    assert s3.counts()[0]["HEAD"] >= 20 * 2 * 5  # each query pruned the objects and scanned them


EXIT_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from secure_bloom.parquet import read_table, scan

    lake, how, wait = sys.argv[1], sys.argv[2], float(sys.argv[3])
    where = [("k", ">=", 0)]

    def read_forever():
        while True:
            if how == "count_reads":
                scan(lake, filters=where, count_reads=True).to_table()
            else:
                read_table(lake, filters=where)

    threading.Thread(target=read_forever, daemon=True).start()
    time.sleep(wait)
    print("exiting", flush=True)
""")


@pytest.fixture(scope="module")
def plain_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plain")
    for f in range(8):
        pq.write_table(pa.table({"k": pa.array(range(f * 5_000, (f + 1) * 5_000), pa.int64()),
                                 "v": pa.array(range(5_000), pa.float64())}),
                       root / f"part-{f}.parquet", row_group_size=500)
    return root


def test_the_process_exits_0_while_a_daemon_thread_reads(plain_lake: Path) -> None:
    """The interpreter exits at a random moment of a daemon thread's read_table, or of a scan
    counting its reads: every run exits 0 within its deadline (before: 2-5 of 8 runs hung or
    aborted with status 134)."""
    rng = random.Random(28)
    outcomes = []
    for run in range(EXIT_RUNS):
        how = "count_reads" if run % 2 else "read_table"
        wait = f"{rng.uniform(0.05, 0.9):.2f}"
        try:
            proc = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, str(plain_lake), how, wait],
                                  capture_output=True, text=True, timeout=60, env=os.environ)
            outcomes.append((how, wait, proc.returncode, proc.stderr.strip()[-300:]))
        except subprocess.TimeoutExpired:
            outcomes.append((how, wait, "hung", ""))
    assert [o[2] for o in outcomes] == [0] * EXIT_RUNS, [o for o in outcomes if o[2] != 0]
