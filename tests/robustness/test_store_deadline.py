"""An object store that accepts connections and never answers (a real TCP server on 127.0.0.1 that
holds every connection silent, tests/support/blackhole.py): every command returns within its
deadline with STORAGE_UNAVAILABLE, exit 2, one clean line on stderr, nothing on stdout and
nothing written (issue 20, item 3). Before, ``audit`` and ``query`` ran for more than 75 s.

The CLI runs as a real process (``python -m secure_bloom.cli``, through a launcher that notes
when the CLI's code starts): the deadline must end the process, not only the call, while a
thread may still wait on the store.

Timing, robust to a loaded machine: a command's time is counted from the moment its code starts
(starting Python and importing pyarrow can take seconds on a loaded machine, and is not the
command's); what a command does outside its deadline (parsing, one line of output, ending the
process) is milliseconds of CPU, given the deadline's own length again (:data:`OUTSIDE`). Which
timeouts a call used is shown by the connections the store accepted (one per try), which no load
changes; a call left running is shown to be left by the worker still running when it returned.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from secure_bloom.cli.deadline import DEFAULT_DEADLINE_S
from secure_bloom.errors import StorageUnavailableError
from secure_bloom.parquet import KeyAccess
from secure_bloom.parquet.file.sources import DEFAULT_STORE_TIMEOUTS
from support.parquet_files import TESTING_KEY_LIST, vector_kms

#: The deadline of the commands below (``--deadline``).
DEADLINE = 3.0
#: What a command may take beyond its deadline, counted from the start of the CLI's code: the
#: deadline's own length (the work outside it is milliseconds of CPU).
OUTSIDE = DEADLINE
#: ``python -m secure_bloom.cli``, after the imports a command makes and a note of the time
#: (``time.monotonic``, one clock for every process) in the file ``$SECURE_BLOOM_TEST_STARTED``.
_LAUNCHER = """
import os, runpy, time
import pyarrow.fs, pyarrow.parquet, secure_bloom.cli, secure_bloom.parquet
with open(os.environ.pop("SECURE_BLOOM_TEST_STARTED"), "w") as f:
    f.write(repr(time.monotonic()))
runpy.run_module("secure_bloom.cli", run_name="__main__", alter_sys=True)
"""


def _uri(endpoint: str, path: str = "lake/events") -> str:
    return f"s3://AKID:sEcReT-deadline@{path}?endpoint_override={endpoint}&scheme=http&region=us-east-1"


def _cli(args: list[str], cwd: Path, timeout: float = 60.0) -> tuple[int, str, str, float]:
    """Run the CLI in a new process: exit code, stdout, stderr, and the seconds from the start of
    the CLI's code (Python started and pyarrow imported) to the end of the process."""
    started_file = cwd.parent / "cli-started"
    env = {**os.environ, "SECURE_BLOOM_KEY_LIST": TESTING_KEY_LIST, "SECURE_BLOOM_TEST_STARTED": str(started_file)}
    done = subprocess.run([sys.executable, "-c", _LAUNCHER, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    ended = time.monotonic()
    started = float(started_file.read_text())
    started_file.unlink()
    return done.returncode, done.stdout, done.stderr, ended - started


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "cwd"
    work.mkdir()
    pq.write_table(pa.table({"id": list(range(10)), "ssn": [f"s{i}" for i in range(10)]}), work / "plain.parquet")
    return work


COMMANDS = {
    "audit": ["audit", "{uri}", "--sensitive", "ssn", "--junit-xml", "audit.xml", "--json"],
    "query": ["query", "{uri}", "--where", "id = 1", "--format", "csv", "--output", "rows.csv"],
    "probe": ["probe", "{uri}", "--column", "ssn", "--value", "s1"],
    "inspect": ["inspect", "{uri}", "--json"],
    "encrypt-to-store": ["encrypt", "plain.parquet", "{uri}", "--footer-key", "kf", "--uniform"],
    "encrypt-from-store": ["encrypt", "{uri}", "out.parquet", "--footer-key", "kf", "--uniform"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_gives_up_at_its_deadline(name: str, blackhole: Any, workdir: Path) -> None:
    argv = [part.replace("{uri}", _uri(blackhole.endpoint)) for part in COMMANDS[name]]
    rc, out, err, elapsed = _cli([*argv, "--deadline", str(DEADLINE)], workdir)
    print(f"{name} against a blackhole, --deadline {DEADLINE:g}: exit {rc} {elapsed:.2f} s after the CLI started")
    assert blackhole.connections() > 0  # it did wait on the store
    assert (rc, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("secure-bloom: error: ") and "STORAGE_UNAVAILABLE" in err
    assert "sEcReT" not in err
    assert elapsed < DEADLINE + OUTSIDE
    assert sorted(p.name for p in workdir.iterdir()) == ["plain.parquet"]  # nothing written, not even partly


def test_without_a_deadline_the_store_timeouts_end_an_audit_soon(blackhole: Any, workdir: Path) -> None:
    """No --deadline: a URI gets the default (120 s), but the filesystem's own timeouts (2 s
    without an answer, 3 tries) end the audit as "could not check" well before it (a report on
    stdout: the deadline would have printed none)."""
    rc, out, err, elapsed = _cli(["audit", _uri(blackhole.endpoint), "--sensitive", "ssn"], workdir, timeout=100)
    print(f"audit against a blackhole, default timeouts: exit {rc} {elapsed:.2f} s after the CLI started, "
          f"{blackhole.connections()} connections")
    assert rc == 2 and "STORAGE_UNAVAILABLE" in out + err and "COULD NOT CHECK" in out
    assert blackhole.connections() == DEFAULT_STORE_TIMEOUTS.attempts  # one request's tries, no more
    assert elapsed < DEFAULT_DEADLINE_S / 6  # 7-10 s of waiting on the store (StoreTimeouts), not 120 s


def test_deadline_zero_is_none_and_bad_values_are_usage_errors(workdir: Path) -> None:
    rc, _, err, _ = _cli(["inspect", "plain.parquet", "--deadline", "-1"], workdir)
    assert rc == 2 and "--deadline must be >= 0" in err
    rc, out, err, _ = _cli(["inspect", "plain.parquet", "--deadline", "0"], workdir)
    assert (rc, err) == (0, "") and "plain.parquet" in out


def test_python_api_takes_the_timeouts(blackhole: Any) -> None:
    from secure_bloom.parquet import ParquetBloomReader
    from secure_bloom.parquet.audit.auditor import audit
    from secure_bloom.parquet.read.api import read_table
    from secure_bloom.parquet.file.sources import StoreTimeouts, store_timeouts

    QUICK = StoreTimeouts(connect_s=0.5, request_s=0.5, attempts=1)  # one try of at most 0.5 s per request
    keys = KeyAccess(kms=vector_kms())
    connections = [blackhole.connections()]
    start = time.monotonic()
    report = audit(_uri(blackhole.endpoint), ["ssn"], keys=keys, timeouts=QUICK)
    audited = time.monotonic() - start
    connections.append(blackhole.connections())
    assert [(f.status.value, f.error_kind) for f in report.files] == [("could_not_check", "STORAGE_UNAVAILABLE")]
    assert report.exit_code == 2
    start = time.monotonic()
    with pytest.raises(StorageUnavailableError, match=r"^s3://lake/events: the object store cannot be reached"):
        read_table(_uri(blackhole.endpoint), filters=[("id", "==", 1)], keys=keys, timeouts=QUICK)
    read = time.monotonic() - start
    connections.append(blackhole.connections())
    start = time.monotonic()
    with store_timeouts(QUICK), pytest.raises(StorageUnavailableError):
        ParquetBloomReader(_uri(blackhole.endpoint, "lake/a.parquet"), keys)
    opened = time.monotonic() - start
    connections.append(blackhole.connections())
    tries = [b - a for a, b in zip(connections, connections[1:])]
    print(f"Python API against a blackhole, 0.5 s x 1 try: audit {audited:.2f} s, read_table {read:.2f} s, "
          f"reader {opened:.2f} s; connections {tries}")
    # QUICK's one try each, not the default's three (a count no load changes) ...
    assert tries == [QUICK.attempts] * 3
    # ... and its 0.5 s wait, not the default's: one request's tries at the defaults wait at least
    # attempts * request_s (6 s) on a store that never answers; the rest is the calls' own work.
    assert max(audited, read, opened) < DEFAULT_STORE_TIMEOUTS.attempts * DEFAULT_STORE_TIMEOUTS.request_s


def test_a_command_left_running_after_its_deadline_publishes_nothing(blackhole: Any, workdir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """In a caller's process (``main(argv)``) the worker thread is left behind, not killed: when it
    finishes later (the store timeouts end its requests), its report and JUnit file are dropped."""
    from secure_bloom.cli import main
    from secure_bloom.cli.deadline import abandoned

    monkeypatch.chdir(workdir)
    deadline = 1.0  # the worker's store timeouts, shortened to fit it, still wait 1 s per try (curl's unit)
    start = time.monotonic()
    rc = main(["audit", _uri(blackhole.endpoint), "--sensitive", "ssn", "--junit-xml", "audit.xml",
               "--deadline", f"{deadline:g}"])
    returned = time.monotonic() - start
    # Returned after its deadline and before its worker ended: at the deadline, not waiting for
    # the worker (whose tries take ~3 s), whatever the load. Bounded above as the CLI's are.
    assert rc == 2 and abandoned()
    assert deadline <= returned < deadline + OUTSIDE
    while abandoned() and time.monotonic() - start < 30:  # the worker's audit ends: could not check
        time.sleep(0.1)
    assert not abandoned()
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "STORAGE_UNAVAILABLE" in captured.err
    assert sorted(p.name for p in workdir.iterdir()) == ["plain.parquet"]


def _library_calls() -> dict[str, Any]:
    import pyarrow.parquet.encryption as pe

    from secure_bloom.parquet import ParquetBloomReader, ParquetWriter, PruneCache, write_table
    from secure_bloom.parquet.read.api import dataset, read_table, scan

    keys = KeyAccess(kms=vector_kms())
    table = pa.table({"id": [1, 2], "ssn": ["a", "b"]})
    uniform = pe.EncryptionConfiguration(footer_key="kf", uniform_encryption=True)
    external = pe.EncryptionConfiguration(footer_key="kf", uniform_encryption=True, internal_key_material=False)
    return {
        "read_table of a prefix": lambda uri: read_table(uri("lake/events"), filters=[("id", "==", 1)], keys=keys),
        "read_table with a PruneCache": lambda uri: read_table(uri("lake/a.parquet"), filters=[("id", "==", 1)],
                                                               keys=keys, cache=PruneCache()),
        "scan": lambda uri: scan(uri("lake/a.parquet"), filters=[("id", "==", 1)], keys=keys).to_table(),
        "dataset": lambda uri: dataset(uri("lake/events"), keys=keys),
        "ParquetBloomReader": lambda uri: ParquetBloomReader(uri("lake/a.parquet"), keys),
        "write_table encrypted": lambda uri: write_table(table, uri("lake/out.parquet"), encryption=uniform,
                                                         kms=vector_kms(), bloom_filter_options={"ssn": True}),
        "write_table external key material": lambda uri: write_table(table, uri("lake/out.parquet"),
                                                                     encryption=external, kms=vector_kms()),
        "write_table plaintext": lambda uri: write_table(table, uri("lake/out.parquet"),
                                                         bloom_filter_options={"ssn": True}),
        "ParquetWriter": lambda uri: ParquetWriter(uri("lake/out.parquet"), table.schema, encryption=uniform,
                                                   kms=vector_kms()).close(),
    }


@pytest.mark.parametrize("name", list(_library_calls()))
def test_a_library_call_waits_on_a_silent_store_for_one_requests_tries(name: str, blackhole: Any) -> None:
    """Regression (issue 28 item 15): the documented wait on a store that never answers held per
    request, and a call made several in a row: read_table(cache=PruneCache()) waited on two
    (its listing swallowed the first failure), and writes to a URI raised a bare OSError. Every
    library call now fails with StorageUnavailableError after ONE request's tries (the whole
    call's wait: StoreTimeouts' figure), counted by the connections the store accepted."""
    from secure_bloom.parquet.file.sources import StoreTimeouts, store_timeouts

    two_tries = StoreTimeouts(connect_s=1.0, request_s=1.0, attempts=2)
    call = _library_calls()[name]
    start = time.monotonic()
    with store_timeouts(two_tries), pytest.raises(StorageUnavailableError,
                                                  match=r"^s3://lake/\S+: the object store cannot be reached"):
        call(lambda path: _uri(blackhole.endpoint, path))
    elapsed = time.monotonic() - start
    print(f"{name} against a blackhole, 1 s x 2 tries: StorageUnavailableError after {elapsed:.2f} s, "
          f"{blackhole.connections()} connections")
    assert 0 < blackhole.connections() <= two_tries.attempts  # one request's tries, not two requests' in a row
    assert elapsed < 20  # generous (about 2-4 s here): a bound exists
