"""attach never loses data: real process kills, a real full filesystem, a KMS failing mid-way.

After every fault: ``src`` is byte-identical (SHA-256), ``dst`` is absent or complete and valid
(every chosen column's filter decrypts, the table reads back equal to ``src``'s), and the
directory holds nothing else (no temporary file, no orphan sidecar).

* SIGKILL: a child process runs attach and kills itself with SIGKILL at a chosen point (after k
  filters, after k copy blocks, before / after each rename, after verification), plus kills at
  random moments from the outside;
* ENOSPC: ``dst`` on a tmpfs mounted with a size smaller than the result (where mounting is
  allowed; the skip says so), and always EFBIG from a real RLIMIT_FSIZE in a child process;
* KMS: the key-list KMS of the file fails on its k-th call, for every k until attach succeeds.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from support.parquet_files import TESTING_KEY_LIST, read_encrypted, sample_table, write_encrypted, write_plain

from secure_bloom.errors import AttachError, KmsUnavailableError, SecureBloomError, SourceChangedError
from secure_bloom.kms import KeyListKms
from secure_bloom.kms.sidecar import sidecar_path
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.file.leftovers import clean_leftovers
from secure_bloom.parquet.write.attach import attach_bloom_filters

COLUMNS = ["ssn", "id", "ts"]
ROWS = 40_000  # ~1.5 MiB: several 1 MiB copy blocks, 40 chunks to filter

CHILD = textwrap.dedent("""
    import os, signal, sys
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess
    from secure_bloom.fileio import AtomicOutput
    from secure_bloom.parquet.write import attach as attach_module

    src, dst, stage, when = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    counts = {}

    def die_at(name):
        counts[name] = counts.get(name, 0) + 1
        if name == stage and counts[name] == when:
            os.kill(os.getpid(), signal.SIGKILL)

    def progress(name, done, total):
        die_at(name)

    real_publish, real_verify = AtomicOutput.publish, attach_module._verify

    def publish(self, target, **kwargs):
        die_at("before_publish")
        real_publish(self, target, **kwargs)
        die_at("after_publish")

    def verify(*args):
        result = real_verify(*args)
        die_at("verified")
        return result

    AtomicOutput.publish = publish
    attach_module._verify = verify
    keys = KeyAccess(kms=KeyListKms(os.environ["ATTACH_KEY_LIST"]))
    attach_module.attach_bloom_filters(src, dst, sys.argv[5].split(","), keys, progress=progress,
                                       overwrite=True)
    print("finished")
""")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _keys() -> KeyAccess:
    return KeyAccess(kms=KeyListKms(TESTING_KEY_LIST))


def _assert_intact(src: Path, digest: str, dst: Path, allowed: set[str]) -> bool:
    """src unchanged; dst absent or complete; after recovery (`secure-bloom doctor --fix`)
    nothing else in the directory, and dst's sidecar exactly when dst exists. True if dst exists."""
    assert _digest(src) == digest
    names = set(os.listdir(src.parent))
    journals = {n for n in names if n.endswith(".attach.journal")}
    # Only a kill between the sidecar's publication and dst's leaves a journal behind.
    assert journals <= {n for n in names if n.startswith(f".{dst.name}.")}
    clean_leftovers(src.parent)
    names = set(os.listdir(src.parent))
    extra = names - allowed - {src.name, dst.name, sidecar_path(src).name}
    dst_sidecar = sidecar_path(dst)
    if dst_sidecar.exists():
        # Published just before dst (so dst never lacks it); without dst, recovery removed it.
        assert dst.exists(), "orphaned sidecar survived recovery"
        assert dst_sidecar.read_bytes() == sidecar_path(src).read_bytes()
        extra.discard(dst_sidecar.name)
    assert not extra, f"left behind: {sorted(extra)}"
    if not dst.exists():
        return False
    with ParquetBloomReader(dst, _keys()) as reader:
        for rg in range(reader.num_row_groups):
            for column in COLUMNS:
                assert reader.bloom_filter(rg, column) is not None
    assert read_encrypted(dst).equals(read_encrypted(src))
    return True


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("attach-sources")
    table = sample_table(ROWS)
    yield {"internal": write_encrypted(root / "internal.parquet", table),
           "external": write_encrypted(root / "external.parquet", table, internal_key_material=False,
                                       plaintext_footer=True)}


def _fresh(sources: dict[str, Path], kind: str, folder: Path) -> Path:
    folder.mkdir()
    src = folder / "src.parquet"
    src.write_bytes(sources[kind].read_bytes())
    if kind == "external":
        sidecar_path(src).write_bytes(sidecar_path(sources[kind]).read_bytes())
    return src


def _run_child(src: Path, dst: Path, stage: str, when: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, ATTACH_KEY_LIST=TESTING_KEY_LIST)
    return subprocess.Popen([sys.executable, "-c", CHILD, str(src), str(dst), stage, str(when), ",".join(COLUMNS)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


KILL_POINTS = [("filters", 1), ("filters", 20), ("copy", 1), ("copy", 2), ("verified", 1),
               ("before_publish", 1), ("after_publish", 1), ("before_publish", 2), ("after_publish", 2),
               ("none", 0)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["internal", "external"])
@pytest.mark.parametrize(("stage", "when"), KILL_POINTS)
@pytest.mark.parametrize("replacing", [False, True], ids=["new-dst", "replacing-dst"])
def test_sigkill_at_every_stage(sources: dict[str, Path], tmp_path: Path, kind: str, stage: str,
                                when: int, replacing: bool) -> None:
    """External key material publishes two files (sidecar, then data), internal one."""
    src = _fresh(sources, kind, tmp_path / "work")
    digest = _digest(src)
    dst = src.with_name("dst.parquet")
    if replacing:  # an earlier, valid result is being replaced
        attach_bloom_filters(src, dst, COLUMNS, _keys())
        previous = _digest(dst)
    publishes = 2 if kind == "external" and not replacing else 1  # a replaced sidecar is identical
    child = _run_child(src, dst, stage, when)
    out, err = child.communicate(timeout=300)
    finished = b"finished" in out
    reached = stage == "none" or (stage.endswith("publish") and when > publishes)
    assert finished == reached, err.decode(errors="replace")[-2000:]
    if not finished:
        assert child.returncode == -signal.SIGKILL, err.decode(errors="replace")[-2000:]
    exists = _assert_intact(src, digest, dst, set())
    assert exists == (finished or replacing or (stage == "after_publish" and when == publishes))
    if replacing and exists and not finished and stage != "after_publish":
        assert _digest(dst) == previous  # killed before the rename: the old dst, untouched


@pytest.mark.slow
def test_sigkill_at_random_moments(sources: dict[str, Path], tmp_path: Path) -> None:
    rng = random.Random(7)
    for i in range(6):
        src = _fresh(sources, "internal" if i % 2 else "external", tmp_path / f"run{i}")
        digest = _digest(src)
        dst = src.with_name("dst.parquet")
        child = _run_child(src, dst, "none", 0)
        time.sleep(rng.uniform(0.2, 3.0))
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=300)
        _assert_intact(src, digest, dst, set())


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (the attached file needs ~1.5 MiB)."""
    mount_point = tmp_path / "small-fs"
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
                            capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.decode(errors='replace').strip()}): the "
                    "full-disk path ran under RLIMIT_FSIZE only (test_file_size_limit_leaves_nothing_behind)")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def test_full_filesystem_leaves_nothing_behind(sources: dict[str, Path], tmp_path: Path,
                                               small_filesystem: Path) -> None:
    src = _fresh(sources, "internal", tmp_path / "work")
    digest = _digest(src)
    dst = small_filesystem / "dst.parquet"
    with pytest.raises(AttachError, match="No space left"):
        attach_bloom_filters(src, dst, COLUMNS, _keys())
    assert _digest(src) == digest
    assert os.listdir(small_filesystem) == []
    # The same attach fits once the filesystem is large enough: the failure was the disk.
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_filesystem)], check=True)
    attach_bloom_filters(src, dst, COLUMNS, _keys())
    assert sorted(os.listdir(small_filesystem)) == ["dst.parquet"]


FSIZE_CHILD = textwrap.dedent("""
    import os, resource, signal, sys
    from secure_bloom.errors import SecureBloomError
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess
    from secure_bloom.parquet.write.attach import attach_bloom_filters

    src, dst, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        attach_bloom_filters(src, dst, sys.argv[4].split(","), KeyAccess(kms=KeyListKms(os.environ["ATTACH_KEY_LIST"])))
    except SecureBloomError as e:
        print(f"{type(e).__name__}: {e}")
        sys.exit(1)
    print("finished")
""")


def test_file_size_limit_leaves_nothing_behind(sources: dict[str, Path], tmp_path: Path) -> None:
    """The full-disk path without privileges: the kernel's RLIMIT_FSIZE (1 MiB, the attached file
    needs ~1.5 MiB) makes the child's writes fail with EFBIG, as a full disk fails them with ENOSPC."""
    src = _fresh(sources, "internal", tmp_path / "work")
    digest = _digest(src)
    out = tmp_path / "out"
    out.mkdir()
    dst = out / "dst.parquet"
    env = dict(os.environ, ATTACH_KEY_LIST=TESTING_KEY_LIST)
    child = subprocess.run([sys.executable, "-c", FSIZE_CHILD, str(src), str(dst), str(1 << 20), ",".join(COLUMNS)],
                           capture_output=True, text=True, env=env, timeout=300)
    assert child.returncode == 1 and child.stdout.startswith("AttachError: ") and "File too large" in child.stdout, \
        (child.returncode, child.stdout, child.stderr[-2000:])
    assert _digest(src) == digest
    assert os.listdir(out) == []
    # The same attach fits without the limit: the failure was the size limit.
    attach_bloom_filters(src, dst, COLUMNS, _keys())
    assert os.listdir(out) == ["dst.parquet"] and dst.stat().st_size > 1 << 20


class FailingOnCall:
    """The real key-list KMS, failing (as an unreachable KMS does) from its ``fail_at``-th call on."""

    def __init__(self, fail_at: int) -> None:
        self._real = KeyListKms(TESTING_KEY_LIST)
        self.calls = 0
        self.fail_at = fail_at

    def _count(self) -> None:
        self.calls += 1
        if self.calls >= self.fail_at:
            raise KmsUnavailableError(f"injected: KMS down at call {self.calls}")

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        self._count()
        return self._real.wrap_key(key_bytes, master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        self._count()
        return self._real.unwrap_key(wrapped_key, master_key_identifier)


@pytest.mark.parametrize("kind", ["internal", "external"])
def test_kms_failing_mid_way(sources: dict[str, Path], tmp_path: Path, kind: str) -> None:
    src = _fresh(sources, kind, tmp_path / "work")
    digest = _digest(src)
    dst = src.with_name("dst.parquet")
    failures = 0
    for fail_at in range(1, 50):
        kms: Any = FailingOnCall(fail_at)
        try:
            attach_bloom_filters(src, dst, COLUMNS, KeyAccess(kms=kms))
        except SecureBloomError as e:
            failures += 1
            # the injected KMS failure itself surfaced, not some other error on the way
            assert isinstance(e, KmsUnavailableError) and str(e).startswith(f"injected: KMS down at call {fail_at}"), \
                repr(e)
            assert not _assert_intact(src, digest, dst, set())
            continue
        assert _assert_intact(src, digest, dst, set())
        break
    else:
        pytest.fail("attach never succeeded")
    assert failures >= 2  # the KMS failed at several different points before attach got through


def test_plaintext_source_kill_before_rename(sources: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    src = write_plain(folder / "src.parquet", sample_table(ROWS))
    digest = _digest(src)
    dst = folder / "dst.parquet"
    child = _run_child(src, dst, "before_publish", 1)
    child.communicate(timeout=300)
    assert child.returncode == -signal.SIGKILL
    assert _digest(src) == digest and sorted(os.listdir(folder)) == ["src.parquet"]


# --- the source read once, the destination never replaced by surprise, in-place serialised -------


def test_source_replaced_while_attaching_is_refused(tmp_path: Path) -> None:
    """The source renamed over while its filters are built: the pages must not come from the new
    file (under the old footer): attach reads one descriptor and refuses to publish."""
    src, dst = write_plain(tmp_path / "src.parquet"), tmp_path / "dst.parquet"
    other = write_plain(tmp_path / "other.parquet", sample_table(4000).slice(1000))  # other values, no smaller

    def replace_source(stage: str, done: int, total: int) -> None:
        if stage == "filters" and done == 1:
            os.replace(other, src)

    with pytest.raises(SourceChangedError, match="was replaced or removed while attach read it"):
        attach_bloom_filters(src, dst, ["id", "ssn"], progress=replace_source)
    assert not dst.exists() and sorted(os.listdir(tmp_path)) == ["src.parquet"]


def test_source_modified_while_attaching_is_refused(tmp_path: Path) -> None:
    src, dst = write_plain(tmp_path / "src.parquet"), tmp_path / "dst.parquet"
    os.utime(src, ns=(10**18, 10**18))  # so that the write below surely changes the mtime

    def scribble(stage: str, done: int, total: int) -> None:
        if stage == "filters" and done == 1:
            with open(src, "r+b") as f:
                f.seek(100)
                f.write(b"\xff")

    with pytest.raises(SourceChangedError, match="was modified while attach read it"):
        attach_bloom_filters(src, dst, ["id"], progress=scribble)
    assert not dst.exists()


def _attach_worker(src: str, dst: str, columns: list[str], in_place: bool, events: dict[str, Any],
                   results: Any) -> None:
    """One attach in its own process. At the first built filter: wait at ``events["barrier"]``
    (both processes are then past their checks), set ``events["set"]``, wait (boundedly) for
    ``events["wait"]`` once ``events["started"]`` is set. ``events["started"]`` is set before
    attach starts unless "wait" is given."""
    def progress(stage: str, done: int, total: int) -> None:
        if stage != "filters" or done != 1:
            return
        if "barrier" in events:
            events["barrier"].wait(timeout=120)
        if "set" in events:
            events["set"].set()
        if "wait" in events:
            events["started"].wait(timeout=120)  # the other attach is running...
            events["wait"].wait(timeout=5)         # ...and may get as far as having parsed the file

    if "started" in events and "wait" not in events:
        events["started"].set()
    try:
        attach_bloom_filters(src, dst, columns, in_place=in_place, progress=progress)
        results.put((columns[0], "ok"))
    except SecureBloomError as e:
        results.put((columns[0], f"{type(e).__name__}: {e}"))


def _run_workers(jobs: list[tuple[Any, ...]]) -> dict[str, str]:
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=_attach_worker, args=(*job, results)) for job in jobs]
    for p in procs:
        p.start()
    out = dict(results.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return out


def test_destination_that_appears_meanwhile_is_never_replaced(tmp_path: Path) -> None:
    """Two processes attach to the same new dst, both past the "dst does not exist" check: one
    publishes, the other must fail and leave that file alone (linkat, never rename over)."""
    src, dst = write_plain(tmp_path / "src.parquet"), tmp_path / "dst.parquet"
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    out = _run_workers([(str(src), str(dst), [column], False, {"barrier": barrier}) for column in ("id", "ssn")])
    assert sorted(out.values())[1] == "ok", out
    loser = next(c for c, r in out.items() if r != "ok")
    assert out[loser].startswith(f"DestinationExistsError: destination {dst} appeared while attach ran")
    winner = "ssn" if loser == "id" else "id"
    with ParquetBloomReader(dst) as r:
        assert r.bloom_filter(0, winner) is not None and r.bloom_filter(0, loser) is None
    assert sorted(os.listdir(tmp_path)) == ["dst.parquet", "src.parquet"]


def test_concurrent_in_place_attaches_lose_no_filters(tmp_path: Path) -> None:
    """Two in-place attaches of one file (columns id and ssn): the first holds the file's lock
    from parse to publish, the second waits and then adds its filters to the first's result.
    Without the lock both parse the original and the last rename drops the other's filters."""
    src = write_plain(tmp_path / "src.parquet")
    table = pq.read_table(src)
    ctx = multiprocessing.get_context("spawn")
    started, parsed = ctx.Event(), ctx.Event()
    results = ctx.Queue()
    first = ctx.Process(target=_attach_worker, args=(str(src), str(src), ["id"], True,
                                                     {"wait": parsed, "started": started}, results))
    second = ctx.Process(target=_attach_worker, args=(str(src), str(src), ["ssn"], True,
                                                      {"started": started, "set": parsed}, results))
    first.start()
    second.start()
    out = dict(results.get(timeout=300) for _ in range(2))
    for p in (first, second):
        p.join(timeout=60)
        assert p.exitcode == 0
    assert out == {"id": "ok", "ssn": "ok"}
    with ParquetBloomReader(src) as r:
        for rg in range(r.num_row_groups):
            assert r.bloom_filter(rg, "id") is not None and r.bloom_filter(rg, "ssn") is not None
    assert pq.read_table(src).equals(table)
    assert sorted(os.listdir(tmp_path)) == ["src.parquet"]
