"""Benchmark of point lookups by key (figures, not a test): ``python -m benchmarks bench-lookup``.

Generates an encrypted dataset (default 1 GiB on disk in 50 files, 5 row groups each; a random
32-hex-digit key per row, so min/max statistics cannot prune; incompressible payload), written by
pyarrow with Parquet Modular Encryption (key list KMS, the key column under its own key) and given
encrypted Bloom filters on the key column by :func:`~secure_bloom.parquet.attach_bloom_filters`.
Then, in the same run, looks up present and absent keys with:

* ``ours``: :func:`secure_bloom.parquet.read_table` (statistics + encrypted Bloom filters, then
  pyarrow on the surviving row groups); cold: every lookup reads and decrypts every footer and
  filter again (a fresh KeyAccess, no cache);
* ``ours-warm``: the same call (``read_table(..., keys=, cache=)``, as a service makes it) with
  one :class:`~secure_bloom.parquet.PruneCache` and one KeyAccess reused across that engine's
  lookups (a long-running service): the untimed warm-up fills the cache, then each lookup lists
  the directory (the discovery and schema are kept while the listing and the first file are
  unchanged), stats the files whose pruning facts it holds, and pyarrow decrypts and scans the
  surviving row groups; the page cache is as warm as for the others;
* ``pyarrow``: ``pyarrow.dataset`` with the same filter and the same decryption (statistics only);
* ``duckdb``: DuckDB cannot decrypt these files (Parquet Modular Encryption with KMS-wrapped,
  per-column keys: it asks for its own ``encryption_config``), so it queries a PLAINTEXT copy of
  the same rows written by pyarrow with plaintext Bloom filters on the key (DuckDB prunes with them);
* ``spark``: a warm local Spark session (parquet-java's own Bloom filter and statistics
  pushdown) on the encrypted files, through our key list KMS client.

Two workloads, each with every engine (the issue-22 table): ``--files`` (default 50) files of 5
row groups (``--size-mb``, default 224 MB: 1M rows), and ``--small-files`` (default 300) small
files of one row group each. Then the pruning alone (:func:`~secure_bloom.parquet.read.prune.prune_files`,
cold, absent key): the fast path against the reference path (``fast_path=False``) and against the
I/O floor (the same byte ranges read with ``os.pread``, nothing else), giving the cost per file and
per row group consulted beyond I/O (wall and CPU time: on a shared machine CPU time is the steadier
figure), and how it scales over ``--scale`` files (default 10,100,1000; add 10000 for the full
curve: the small files are generated in parallel, without plaintext copies), with a warm lookup's
time over each count. The load average is printed with every run.

Latency: the median of the lookups (each a fresh query: discovery, footers, filters, data),
timed on the plain local filesystem, with the median CPU time of the process over the same
lookups (steadier than wall time on a shared machine; Spark's runs in its JVM and is not counted). Bytes: what the process read during the timed query
(``/proc/<pid>/io`` ``rchar``: the Python process for ours, pyarrow and DuckDB, the JVM for
Spark), plus for ours and pyarrow the exact bytes their file reads returned, counted at the
filesystem in a separate, untimed run of the same lookup (the counting wrapper is Python code on
every read: timing through it would slow pyarrow's large reads more than ours). The page cache is
warm for everyone.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
from secure_bloom.cli.output import envelope

__all__ = ["main", "run_lookup_benchmark", "generate_dataset"]

_ROW_BYTES = 32 + 192  # key text + payload hex
ENGINES = ("ours", "ours-warm", "pyarrow", "duckdb", "spark")


def _rchar(pid: int | str = "self") -> int | None:
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _keys(rng: np.random.Generator, n: int) -> pa.Array:
    raw = rng.integers(0, 2**63, size=(n, 2), dtype=np.int64).view(np.uint64)
    return pa.array([f"{a:016x}{b:016x}" for a, b in raw])


#: Files written per task when generation runs in several processes.
_FILES_PER_TASK = 250


def _write_files(root: Path, master: dict[str, bytes], first: int, count: int, rows: int, row_groups: int,
                 seed: int, plaintext: bool, worker: bool = False) -> list[str]:
    """Write files ``first`` .. ``first + count - 1`` (encrypted, and their plaintext copies);
    returns one present key of each. Runs in a worker process when generation is parallel."""
    from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory
    from secure_bloom.parquet import KeyAccess, attach_bloom_filters

    if worker:
        pa.set_cpu_count(1)  # one process per core: Arrow's own threads would only contend
        pa.set_io_thread_count(1)
    rng = np.random.default_rng(seed)
    kms = KeyListKms(master)
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
    config = pe.EncryptionConfiguration(footer_key="footer", column_keys={"keys": ["key"]}, double_wrapping=True)
    encrypted, plain, staging = root / "encrypted", root / "plaintext", root / "staging"
    present = []
    keys = KeyAccess(kms=kms)
    for i in range(first, first + count):
        table = pa.table({"key": _keys(rng, rows), "seq": pa.array(np.arange(i * rows, (i + 1) * rows)),
                          "payload": pa.array([rng.bytes(96).hex() for _ in range(rows)])})
        present.append(table["key"][int(rng.integers(rows))].as_py())
        src = staging / f"part-{i:05d}.parquet"
        props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config)
        pq.write_table(table, src, encryption_properties=props, row_group_size=-(-rows // row_groups))
        attach_bloom_filters(src, encrypted / src.name, ["key"], keys, fpp=0.01)
        src.unlink()
        if plaintext:
            pq.write_table(table, plain / src.name, row_group_size=-(-rows // row_groups),
                           bloom_filter_options={"key": {"ndv": -(-rows // row_groups), "fpp": 0.01}})
    return present


def generate_dataset(root: Path, size_mb: float, files: int, row_groups: int = 5, seed: int = 12,
                     workers: int = 1, plaintext: bool = True, files_per_task: int = _FILES_PER_TASK) -> dict[str, Any]:
    """Write ``files`` encrypted files of about ``size_mb`` in total (plus, with ``plaintext``, a
    plaintext copy for DuckDB); returns the key list, the directories and some present keys.
    ``workers`` > 1: in that many processes, ``files_per_task`` files per task (the same master
    keys; other random rows than one process writes)."""
    from secure_bloom.kms import KeyListKms

    rng = np.random.default_rng(seed)
    master = {"footer": rng.bytes(16), "keys": rng.bytes(16)}
    key_list = ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in master.items())
    rows = max(row_groups, int(size_mb * 1e6 / _ROW_BYTES / files))
    encrypted, plain, staging = root / "encrypted", root / "plaintext", root / "staging"
    for d in (encrypted, plain, staging):
        d.mkdir(parents=True)
    if workers <= 1 or files <= files_per_task:
        present = _write_files(root, master, 0, files, rows, row_groups, seed + 1, plaintext)
    else:
        from . import process_pool

        starts = range(0, files, files_per_task)
        # spawned, not forked: a fork of a process whose Arrow threads hold locks may hang
        with process_pool(workers) as pool:
            parts = pool.map(_write_files, *zip(*[(root, master, start, min(files_per_task, files - start), rows,
                                                   row_groups, seed + 1 + start, plaintext, True) for start in starts]))
            present = [key for part in parts for key in part]
    shutil.rmtree(staging)
    size = sum(p.stat().st_size for p in encrypted.iterdir())
    return {"key_list": key_list, "kms": KeyListKms(master), "encrypted": encrypted, "plaintext": plain,
            "present": present, "rows": rows * files, "bytes": size}


Lookup = Callable[[str, bool], tuple[int, int | None]]


def _timed(run: Lookup, key: str, pid: int | str = "self", counts: bool = True) -> dict[str, Any]:
    """One timed lookup (reads not counted), then, for engines whose reads we can count, the same
    lookup untimed with its reads counted."""
    before = _rchar(pid)
    start, cpu = time.perf_counter(), time.process_time()
    rows, _ = run(key, False)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    after = _rchar(pid)
    if not counts:
        return {"s": elapsed, "cpu_s": cpu, "rows": rows, "bytes": None,
                "rchar": after - before if before is not None and after is not None else None}
    counted_rows, counted = run(key, True)
    if counted_rows != rows:
        raise AssertionError(f"the counted run found {counted_rows} rows, the timed one {rows}")
    return {"s": elapsed, "cpu_s": cpu, "rows": rows, "bytes": counted,
            "rchar": after - before if before is not None and after is not None else None}


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def median(key: str) -> Any:
        values = [r[key] for r in runs if r[key] is not None]
        return statistics.median(values) if values else None

    return {"median_s": round(median("s"), 4), "median_cpu_s": round(median("cpu_s"), 4),
            "median_bytes": median("bytes"), "median_rchar": median("rchar"),
            "rows": [r["rows"] for r in runs]}


def _ours(data: dict[str, Any], key: str, count: bool, warm: Any = None) -> tuple[int, int | None]:
    """One lookup through the public API, as a service makes it: ``read_table`` (``scan`` when
    its reads are counted); ``warm``: (KeyAccess, PruneCache) reused across lookups, else a
    fresh KeyAccess and no cache."""
    from secure_bloom.parquet import KeyAccess, read_table, scan

    keys, cache = warm if warm is not None else (KeyAccess(kms=data["kms"]), None)
    if not count:
        return read_table(data["encrypted"], filters=[("key", "==", key)], keys=keys, cache=cache).num_rows, None
    pruned = scan(data["encrypted"], filters=[("key", "==", key)], keys=keys, count_reads=True, cache=cache)
    table = pruned.to_table()
    return table.num_rows, pruned.report.bytes_read


def _pyarrow(data: dict[str, Any], key: str, count: bool) -> tuple[int, int | None]:
    from secure_bloom.parquet import KeyAccess
    from secure_bloom.parquet.read.api import parquet_format
    from secure_bloom.parquet.file.sources import CountingFileSystem, ReadCounter

    counter = ReadCounter()
    fs = pafs.PyFileSystem(CountingFileSystem(pafs.LocalFileSystem(), counter)) if count else pafs.LocalFileSystem()
    dataset = ds.dataset(str(data["encrypted"]), filesystem=fs, format=parquet_format(KeyAccess(kms=data["kms"])))
    table = dataset.to_table(filter=ds.field("key") == key)
    return table.num_rows, counter.bytes if count else None


def run_lookup_benchmark(size_mb: float = 224, files: int = 50, lookups: int = 5,
                         engines: Sequence[str] = ENGINES, workdir: str | None = None,
                         log: Callable[[str], None] = lambda _: None, row_groups: int = 5,
                         prune_costs: bool = False) -> dict[str, Any]:
    """Generate the data, run the lookups, return the figures and ratios (``prune_costs``: and
    the pruning costs of :func:`prune_costs` on the same files)."""
    root = Path(tempfile.mkdtemp(prefix="secure-bloom-lookup-", dir=workdir))
    try:
        start = time.perf_counter()
        data = generate_dataset(root, size_mb, files, row_groups)
        log(f"generated {data['bytes'] / 1e6:.0f} MB in {files} files ({data['rows']:,} rows) "
            f"in {time.perf_counter() - start:.0f} s")
        rng = np.random.default_rng(99)
        present = [data["present"][int(i)] for i in rng.integers(len(data["present"]), size=lookups)]
        absent = [f"{k[:31]}{'0' if k[31] != '0' else '1'}" for k in present]  # same range: no statistics prune
        result: dict[str, Any] = {"dataset": {"bytes_on_disk": data["bytes"], "files": files, "rows": data["rows"],
                                              "row_groups": files * row_groups}, "engines": {}}
        if prune_costs:
            result["prune"] = prune_costs_of(data, absent[0], row_groups)
        from secure_bloom.parquet import KeyAccess, PruneCache

        warm = (KeyAccess(kms=data["kms"]), PruneCache())
        runners: dict[str, Lookup] = {
            "ours": lambda k, count: _ours(data, k, count), "pyarrow": lambda k, count: _pyarrow(data, k, count),
            "ours-warm": lambda k, count: _ours(data, k, count, warm)}
        pids: dict[str, int | str] = {"ours": "self", "pyarrow": "self", "ours-warm": "self"}
        spark = None
        if "duckdb" in engines:
            import duckdb

            con = duckdb.connect()
            glob = str(data["plaintext"] / "*.parquet")
            runners["duckdb"] = lambda k, _count: (len(con.execute(
                "SELECT * FROM read_parquet(?) WHERE key = ?", [glob, k]).fetchall()), None)
            pids["duckdb"] = "self"
        if "spark" in engines:
            from secure_bloom.spark.policy import EncryptionPolicy, KeyListKmsConfig
            from secure_bloom.spark.session import local_spark

            policy = EncryptionPolicy(footer_key="footer", kms=KeyListKmsConfig(key_list=data["key_list"]),
                                      column_keys={"keys": ["key"]})
            spark = local_spark("secure-bloom-bench-lookup", policy=policy)
            path = str(data["encrypted"])
            runners["spark"] = lambda k, _count: (len(spark.read.parquet(path).where(f"key = '{k}'").collect()), None)
            jvm: Any = spark.sparkContext._jvm
            pids["spark"] = int(jvm.java.lang.ProcessHandle.current().pid())
        try:
            for engine in [e for e in engines if e in runners]:
                runners[engine](present[0], False)  # warm-up (JIT, session, page cache): not timed
                figures = {}
                for label, keys in (("present", present), ("absent", absent)):
                    runs = [_timed(runners[engine], k, pids[engine], engine in ("ours", "ours-warm", "pyarrow"))
                            for k in keys]
                    figures[label] = _summary(runs)
                result["engines"][engine] = figures
                log(f"{engine}: present {figures['present']['median_s']:.3f} s, "
                    f"absent {figures['absent']['median_s']:.3f} s")
        finally:
            if spark is not None:
                spark.stop()
        result["ratios"] = _ratios(result["engines"])
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _best(run: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the fastest of ``repeat`` runs (after one untimed run): the
    minimum is the figure least disturbed by other processes on a shared machine."""
    run()
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    return best


def _once(run: Callable[[], Any]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def prune_costs_of(data: dict[str, Any], key: str, row_groups: int, repeat: int = 7,
                   reference_repeat: int | None = None) -> dict[str, Any]:
    """Pruning alone over ``data``'s encrypted files for the absent ``key``, cold (a fresh
    KeyAccess each time): the fast path, the reference path (``reference_repeat`` runs after an
    untimed one, default ``max(2, repeat // 2)``; 0: one run, no untimed one), and the I/O floor
    (the byte ranges the pruner reads, read with ``os.pread`` and nothing else); per file and
    per row group."""
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader
    from secure_bloom.parquet.read.api import parquet_format
    from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
    from secure_bloom.parquet.read.prune import prune_files, prune_reader

    paths = sorted(str(p) for p in Path(data["encrypted"]).iterdir())
    schema = ds.dataset(paths[0], format=parquet_format(KeyAccess(kms=data["kms"]))).schema
    tree = predicate_tree(to_expression([("key", "==", key)]), schema)
    ranges = []
    for path in paths:
        with ParquetBloomReader(path, KeyAccess(kms=data["kms"])) as reader:
            prune_reader(reader, tree, schema)  # a false positive keeps a row group: same reads either way
            ranges.append(reader.read_ranges)

    def floor() -> None:
        for path, reads in zip(paths, ranges):
            fd = os.open(path, os.O_RDONLY)
            try:
                for offset, n in reads:
                    os.pread(fd, n, offset)
            finally:
                os.close(fd)

    def prune(fast: bool) -> Callable[[], Any]:
        return lambda: prune_files(paths, tree, keys=KeyAccess(kms=data["kms"]), schema=schema, progress=False,
                                   fast_path=fast)

    if reference_repeat is None:
        reference_repeat = max(2, repeat // 2)
    fast, io = _best(prune(True), repeat), _best(floor, repeat)
    reference = _best(prune(False), reference_repeat) if reference_repeat > 0 else _once(prune(False))
    n = len(paths)
    return {"files": n, "row_groups": row_groups, "fast_s": round(fast[0], 5), "fast_cpu_s": round(fast[1], 5),
            "reference_s": round(reference[0], 5), "reference_cpu_s": round(reference[1], 5),
            # 7 digits: the floor of a few preads is a few microseconds, 0.0 at 5 digits on a fast machine
            "io_floor_s": round(io[0], 7), "io_floor_cpu_s": round(io[1], 7),
            "beyond_io_us_per_file": round(1e6 * (fast[0] - io[0]) / n, 1),
            "beyond_io_cpu_us_per_file": round(1e6 * (fast[1] - io[1]) / n, 1)}


def _warm_lookup_s(data: dict[str, Any], present: str, lookups: int = 5) -> float:
    """The median of ``lookups`` warm absent-key lookups (one KeyAccess and PruneCache, filled
    by an untimed lookup of ``present``) through ``read_table``."""
    from secure_bloom.parquet import KeyAccess, PruneCache

    warm = (KeyAccess(kms=data["kms"]), PruneCache())
    _ours(data, present, False, warm)
    times = []
    for i in range(lookups):
        absent = f"{present[:30]}{i:x}{'0' if present[31] != '0' else '1'}"
        start = time.perf_counter()
        _ours(data, absent, False, warm)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 5)


def run_scaling(counts: Sequence[int], workdir: str | None = None,
                log: Callable[[str], None] = lambda _: None, workers: int | None = None) -> list[dict[str, Any]]:
    """Pruning costs (:func:`prune_costs_of`) over ``counts`` small encrypted files of one row
    group each (about 20 KB, 80 rows; no plaintext copies): is the cost per file flat as the
    count grows? From 2,000 files generation runs in ``workers`` processes (default: every core;
    fewer files do not repay starting them); from 5,000 files the reference path runs once (it
    is the slow one) and the fast path three times."""
    out = []
    workers = workers or os.cpu_count() or 1
    for count in counts:
        root = Path(tempfile.mkdtemp(prefix="secure-bloom-scale-", dir=workdir))
        try:
            start = time.perf_counter()
            data = generate_dataset(root, count * 0.018, count, 1, seed=count, workers=workers if count >= 2000 else 1,
                                    plaintext=False)
            generated = time.perf_counter() - start
            rng = np.random.default_rng(7)
            k = data["present"][int(rng.integers(len(data["present"])))]
            figures = prune_costs_of(data, f"{k[:31]}{'0' if k[31] != '0' else '1'}", 1,
                                     repeat=3 if count >= 1000 else 7, reference_repeat=0 if count >= 5000 else None)
            figures["generated_s"] = round(generated, 1)
            figures["warm_lookup_s"] = _warm_lookup_s(data, k)
            log(f"scaling {count} files (generated in {generated:.0f} s): fast {figures['fast_s']:.4f} s, "
                f"reference {figures['reference_s']:.4f} s, I/O floor {figures['io_floor_s']:.4f} s, "
                f"warm lookup {figures['warm_lookup_s']:.4f} s")
            out.append(figures)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return out


def _ratios(engines: dict[str, Any]) -> dict[str, Any]:
    """ours (cold) against every other engine; ours-warm against pyarrow and against ours."""
    out: dict[str, Any] = {}
    for mine_name, prefix, others in (("ours", "", [e for e in engines if e not in ("ours", "ours-warm")]),
                                      ("ours-warm", "warm_", ["pyarrow", "ours"])):
        mine_figures = engines.get(mine_name)
        if mine_figures is None:
            continue
        for other in [o for o in others if o in engines]:
            figures = engines[other]
            for label in ("present", "absent"):
                speed = figures[label]["median_s"] / mine_figures[label]["median_s"]
                out[f"{prefix}{label}_speedup_vs_{other}"] = round(speed, 1)
                theirs = figures[label]["median_bytes"] or figures[label]["median_rchar"]
                mine = mine_figures[label]["median_bytes"]
                if theirs and mine is not None:
                    out[f"{prefix}{label}_bytes_vs_{other}_pct"] = round(100 * mine / theirs, 3)
    return out


def _table(workloads: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The issue-22 table: absent-key medians per engine and the ratios that matter."""
    def cell(figures: dict[str, Any], engine: str, label: str = "absent", kind: str = "median_s") -> float | None:
        found = figures["engines"].get(engine)
        return None if found is None or found[label].get(kind) is None else float(found[label][kind])

    def ms(v: float | None, cpu: float | None = None) -> str:
        shown = "-" if v is None else f"{1e3 * v:.1f} ms"
        return shown if v is None or cpu is None else f"{shown} (CPU {1e3 * cpu:.1f})"

    def ratio(a: float | None, b: float | None) -> str:
        return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"

    lines = ["| workload (absent key / present key) | ours cold | ours warm | DuckDB (plaintext) | pyarrow.dataset "
             "| cold / DuckDB | cold / pyarrow | DuckDB / warm |", "|---|---|---|---|---|---|---|---|"]
    for name, figures in workloads:
        for label in ("absent", "present"):
            cold, warm = cell(figures, "ours", label), cell(figures, "ours-warm", label)
            duck, arrow = cell(figures, "duckdb", label), cell(figures, "pyarrow", label)
            cpu = {e: cell(figures, e, label, "median_cpu_s") for e in ("ours", "ours-warm", "duckdb", "pyarrow")}
            lines.append(f"| {name}, {label} | {ms(cold, cpu['ours'])} | {ms(warm, cpu['ours-warm'])} | "
                         f"{ms(duck, cpu['duckdb'])} | {ms(arrow, cpu['pyarrow'])} | "
                         f"{ratio(cold, duck)} | {ratio(cold, arrow)} | {ratio(duck, warm)} |")
    return lines


def _cost_lines(costs: list[dict[str, Any]]) -> list[str]:
    lines = ["| files x row groups | prune, fast path | reference path | I/O floor | beyond I/O per file (CPU) |",
             "|---|---|---|---|---|"]
    for c in costs:
        lines.append(f"| {c['files']} x {c['row_groups']} | {1e3 * c['fast_s']:.1f} ms | {1e3 * c['reference_s']:.1f} ms"
                     f" | {1e3 * c['io_floor_s']:.1f} ms | {c['beyond_io_us_per_file']:.0f} us "
                     f"({c['beyond_io_cpu_us_per_file']:.0f} us) |")
    return lines


def per_row_group_us(many: dict[str, Any], single: dict[str, Any]) -> dict[str, float] | None:
    """The cost beyond I/O of each row group consulted after a file's first (wall and CPU): from
    files of ``many['row_groups']`` row groups against files of one (``single``)."""
    extra = many["row_groups"] - 1
    if extra <= 0:
        return None
    return {kind: round((many[f"beyond_io_{kind}us_per_file"] - single[f"beyond_io_{kind}us_per_file"]) / extra, 1)
            for kind in ("", "cpu_")}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks bench-lookup", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=224, help="first workload's size on disk (default 224 MB)")
    parser.add_argument("--files", type=int, default=50, help="first workload's files, 5 row groups each (default 50)")
    parser.add_argument("--small-files", type=int, default=300,
                        help="second workload's files, 1 row group each (default 300; 0 skips it)")
    parser.add_argument("--small-size-mb", type=float, default=30, help="second workload's size (default 30 MB)")
    parser.add_argument("--scale", default="10,100,1000",
                        help="file counts for the pruning cost curve and warm lookups over them (default "
                             "10,100,1000; '' skips it; 10,100,1000,10000 for the full curve: 10,000 small files "
                             "are generated on every core, about a minute on two)")
    parser.add_argument("--lookups", type=int, default=5, help="present and absent keys each (default 5)")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma list of {','.join(ENGINES)}")
    parser.add_argument("--workdir", help="where to generate the data (default: the temp directory)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    unknown = set(engines) - set(ENGINES)
    if unknown:
        parser.error(f"unknown engines: {', '.join(sorted(unknown))}")
    try:
        counts = [int(c) for c in args.scale.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--scale must be a comma list of file counts, got {args.scale!r}")
    log = (lambda _: None) if args.json else (lambda text: print(text, flush=True))
    load_before = os.getloadavg()
    result = run_lookup_benchmark(args.size_mb, args.files, args.lookups, engines, args.workdir, log,
                                  prune_costs=True)
    workloads = [(f"{args.files} files x 5 row groups", result)]
    costs = [result["prune"]]
    if args.small_files > 0:
        small = run_lookup_benchmark(args.small_size_mb, args.small_files, args.lookups,
                                     [e for e in engines if e != "spark"], args.workdir, log, row_groups=1,
                                     prune_costs=True)
        result["small_files"] = small
        workloads.append((f"{args.small_files} small files x 1 row group", small))
        costs.append(small["prune"])
        result["per_row_group_us"] = per_row_group_us(result["prune"], small["prune"])
    result["scaling"] = run_scaling(counts, args.workdir, log)
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    if args.json:
        print(json.dumps(envelope("bench-lookup", result), indent=2))
        return 0
    print(f"\n{'engine':<10} {'key':<8} {'median s':>9} {'CPU s':>8} {'bytes read':>14} {'rchar':>14}")
    for engine, figures in result["engines"].items():
        for label in ("present", "absent"):
            f = figures[label]
            print(f"{engine:<10} {label:<8} {f['median_s']:>9.4f} {f['median_cpu_s']:>8.4f} "
                  f"{f['median_bytes'] or '-':>14} {f['median_rchar'] or '-':>14}")
    print("\n" + "\n".join(f"{k}: {v}" for k, v in result["ratios"].items()))
    print("\n" + "\n".join(_table(workloads)))
    print("\npruning alone, absent key, cold (fastest of several runs):")
    print("\n".join(_cost_lines(costs + result["scaling"])))
    per_rg = result.get("per_row_group_us")
    if per_rg is not None:
        print(f"each row group consulted after a file's first: {per_rg['']} us beyond I/O "
              f"({per_rg['cpu_']} us CPU)")
    print(f"load average: before {load_before}, after {result['load_average']['after']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
