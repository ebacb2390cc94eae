"""Benchmark of point lookups by key (figures, not a test): ``python -m benchmarks bench-lookup``.

Generates an encrypted dataset (default 224 MB on disk in 50 files, 5 row groups each; a random
32-hex-digit key per row, so min/max statistics cannot prune; incompressible payload), written by
pyarrow with Parquet Modular Encryption (key list KMS, the key column under its own key, double
wrapping; each file by a CryptoFactory of its own, so with KEKs of its own, as separate write
calls make them) and given encrypted Bloom filters on the key column by
:func:`~secure_bloom.parquet.attach_bloom_filters`. Then, in the same run and interleaved (each
key looked up by every engine in turn, A B C A B C ..., the first engine rotating per round),
looks up absent and present keys with:

* ``ours``: :func:`secure_bloom.parquet.read_table`, cold: a fresh KeyAccess, no cache (every
  footer and filter read, decrypted and unwrapped again);
* ``ours-warm``: the same call with one :class:`~secure_bloom.parquet.PruneCache` and one
  KeyAccess reused across lookups (a long-running service);
* ``floor``: the physical floor of the same lookup (:mod:`.floor`): ``os.pread`` of exactly the
  byte ranges our reader reads, AES-GCM (cryptography's AESGCM) of the same modules and the two
  key unwraps per file through the same key list KMS; for the row groups the filters keep, the
  pread of their column chunks and the AES-GCM of the encrypted chunk's pages. Prepared from the
  footers outside the timed region;
* ``pyarrow``: ``pyarrow.dataset`` with the same filter and the same decryption (statistics only);
* ``duckdb`` / ``duckdb-warm``: DuckDB cannot decrypt these files (it asks for its own
  ``encryption_config``), so it queries a PLAINTEXT copy of the same rows written by pyarrow with
  plaintext Bloom filters on the key; one connection each, ``duckdb-warm`` with
  ``parquet_metadata_cache`` on;
* ``datafusion``: DataFusion on the plaintext copy (a new SessionContext per lookup), when the
  optional peer is installed (``pip install datafusion``; never a dependency of the project);
* ``spark`` (``--spark``, first workload only): a warm local Spark session (parquet-java's own
  Bloom filter and statistics pushdown) on the encrypted files, through our key list KMS client.

Two workloads: ``--files`` files of 5 row groups (``--size-mb``) and ``--small-files`` files of
one row group. Printed per engine: the min and median of the lookups, wall and process CPU (every
thread of this process: DuckDB's and Arrow's too; Spark's JVM is not counted), the bytes read
(ours and pyarrow: counted at the filesystem in one more, untimed lookup; every engine: the
process's ``rchar``) and the ratio to the floor. Then the pruning alone (``prune_files``, cold,
absent key) against its floor and against the preads alone, per file and per row group, and over
``--scale`` file counts; and the targets of issue 29 (:mod:`.lookup_targets`): two threads
against one, cost per file from the smallest to the largest ``--scale`` count, a file of
``--row-groups`` row groups, a footer of ``--footer-row-groups`` row groups against pyarrow's
``read_metadata``, requests per file on moto's S3 server (when moto is installed). The table of
targets ends the output, with the load average: verdicts read the minima of this run, on a shared
machine figures move; quote only figures a second run reproduces.
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
ENGINES = ("ours", "ours-warm", "floor", "pyarrow", "duckdb", "duckdb-warm", "datafusion")


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
                 seed: int, plaintext: bool, worker: bool = False, own_keks: bool = True) -> list[str]:
    """Write files ``first`` .. ``first + count - 1`` (encrypted, and their plaintext copies);
    returns one present key of each. Runs in a worker process when generation is parallel.
    ``own_keks``: each file by a CryptoFactory of its own, so with KEKs of its own (as separate
    write calls, Spark jobs or services make them); else one factory, whose KEKs all share."""
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
        if own_keks:
            factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
        props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config)
        pq.write_table(table, src, encryption_properties=props, row_group_size=-(-rows // row_groups))
        attach_bloom_filters(src, encrypted / src.name, ["key"], keys, fpp=0.01)
        src.unlink()
        if plaintext:
            pq.write_table(table, plain / src.name, row_group_size=-(-rows // row_groups),
                           bloom_filter_options={"key": {"ndv": -(-rows // row_groups), "fpp": 0.01}})
    return present


def generate_dataset(root: Path, size_mb: float, files: int, row_groups: int = 5, seed: int = 12,
                     workers: int = 1, plaintext: bool = True, files_per_task: int = _FILES_PER_TASK,
                     own_keks: bool = True) -> dict[str, Any]:
    """Write ``files`` encrypted files of about ``size_mb`` in total (plus, with ``plaintext``, a
    plaintext copy for DuckDB); returns the key list, the directories and some present keys.
    ``own_keks``: every file with KEKs of its own (the default: see :func:`_write_files`).
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
        present = _write_files(root, master, 0, files, rows, row_groups, seed + 1, plaintext, own_keks=own_keks)
    else:
        from . import process_pool

        starts = range(0, files, files_per_task)
        # spawned, not forked: a fork of a process whose Arrow threads hold locks may hang
        with process_pool(workers) as pool:
            parts = pool.map(_write_files, *zip(*[(root, master, start, min(files_per_task, files - start), rows,
                                                   row_groups, seed + 1 + start, plaintext, True, own_keks)
                                                  for start in starts]))
            present = [key for part in parts for key in part]
    shutil.rmtree(staging)
    size = sum(p.stat().st_size for p in encrypted.iterdir())
    return {"key_list": key_list, "kms": KeyListKms(master), "encrypted": encrypted, "plaintext": plain,
            "present": present, "rows": rows * files, "bytes": size}


#: One lookup: (key, count the bytes read) -> (rows found, bytes read or None).
Lookup = Callable[[str, bool], tuple[int | None, int | None]]


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
    from secure_bloom.parquet.file.read_counting import CountingFileSystem, ReadCounter

    counter = ReadCounter()
    fs = pafs.PyFileSystem(CountingFileSystem(pafs.LocalFileSystem(), counter)) if count else pafs.LocalFileSystem()
    dataset = ds.dataset(str(data["encrypted"]), filesystem=fs, format=parquet_format(KeyAccess(kms=data["kms"])))
    table = dataset.to_table(filter=ds.field("key") == key)
    return table.num_rows, counter.bytes if count else None


def _duckdb(data: dict[str, Any], warm: bool) -> Lookup:
    """DuckDB on the plaintext copy: one connection; ``warm``: with its Parquet metadata cache
    (``parquet_metadata_cache``), as a long-running service would set it."""
    import duckdb

    con = duckdb.connect()
    if warm:
        con.execute("SET parquet_metadata_cache = true")
    glob = str(data["plaintext"] / "*.parquet")
    return lambda k, _count: (len(con.execute("SELECT * FROM read_parquet(?) WHERE key = ?", [glob, k]).fetchall()),
                              None)


def _datafusion(data: dict[str, Any]) -> Lookup | None:
    """DataFusion on the plaintext copy, a new SessionContext per lookup (statistics and Bloom
    filter pruning on); None when the optional peer is not installed."""
    try:
        import datafusion
    except ImportError:
        return None
    path = str(data["plaintext"])

    def run(k: str, _count: bool) -> tuple[int, None]:
        ctx = datafusion.SessionContext()
        ctx.register_parquet("t", path)
        return ctx.table("t").filter(datafusion.col("key") == datafusion.lit(k)).to_arrow_table().num_rows, None

    return run


def _spark(data: dict[str, Any]) -> tuple[Any, Lookup, int]:
    """A warm local Spark session on the encrypted files, through our key list KMS client."""
    from secure_bloom.spark.policy import EncryptionPolicy, KeyListKmsConfig
    from secure_bloom.spark.session import local_spark

    policy = EncryptionPolicy(footer_key="footer", kms=KeyListKmsConfig(key_list=data["key_list"]),
                              column_keys={"keys": ["key"]})
    spark = local_spark("secure-bloom-bench-lookup", policy=policy)
    path = str(data["encrypted"])
    jvm: Any = spark.sparkContext._jvm
    return (spark, lambda k, _count: (len(spark.read.parquet(path).where(f"key = '{k}'").collect()), None),
            int(jvm.java.lang.ProcessHandle.current().pid()))


def _floor_runner(data: dict[str, Any], keys: Sequence[str]) -> tuple[Lookup, Any]:
    """The physical floor (:mod:`.floor`) of each of ``keys``' lookups: the plans and each key's
    surviving row groups are prepared here, outside any timed region."""
    from secure_bloom.parquet import KeyAccess, ParquetBloomReader

    from .floor import Floor, plan_file

    paths = sorted(str(p) for p in Path(data["encrypted"]).iterdir())
    prepare = KeyAccess(kms=data["kms"])
    floor = Floor([plan_file(p, prepare, "key") for p in paths], data["kms"])
    surviving: dict[str, list[list[int]]] = {k: [] for k in keys}
    for path in paths:
        with ParquetBloomReader(path, prepare) as reader:
            for k in keys:
                surviving[k].append(reader.row_groups_maybe_containing("key", k))
    return (lambda k, _count: (None, floor.run(surviving[k]))), floor


def _sample(run: Lookup, key: str, pid: int | str) -> dict[str, Any]:
    """One timed lookup: wall, process CPU, rows, rchar (what the process read)."""
    before = _rchar(pid)
    start, cpu = time.perf_counter(), time.process_time()
    rows, _ = run(key, False)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    after = _rchar(pid)
    return {"s": elapsed, "cpu_s": cpu, "rows": rows,
            "rchar": after - before if before is not None and after is not None else None}


def _summary(runs: list[dict[str, Any]], counted: int | None) -> dict[str, Any]:
    def stat(key: str, how: Callable[[list[float]], float]) -> Any:
        values = [r[key] for r in runs if r[key] is not None]
        return how(values) if values else None

    return {"min_s": round(stat("s", min), 5), "median_s": round(stat("s", statistics.median), 5),
            "min_cpu_s": round(stat("cpu_s", min), 5), "median_cpu_s": round(stat("cpu_s", statistics.median), 5),
            "median_rchar": stat("rchar", statistics.median), "bytes": counted, "rows": [r["rows"] for r in runs]}


def interleave(runners: dict[str, Lookup], keys: dict[str, list[str]], pids: dict[str, int | str] | None = None,
               counted: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """Every engine of ``runners`` on every key, interleaved: round i looks up ``keys[label][i]``
    for each label with each engine in turn (A B C A B C ..., the first engine of a round
    rotating), so a change of load touches every engine alike. One untimed warm-up lookup per
    engine first; the engines of ``counted`` then each make one more untimed lookup per label
    with their reads counted. Checks that every engine found the same rows."""
    pids = pids or {}
    names = list(runners)
    labels = list(keys)
    for name in names:
        runners[name](keys[labels[0]][0], False)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {n: {label: [] for label in labels} for n in names}
    for i in range(len(keys[labels[0]])):
        order = names[i % len(names):] + names[:i % len(names)]
        for label in labels:
            for name in order:
                samples[name][label].append(_sample(runners[name], keys[label][i], pids.get(name, "self")))
    out = {}
    for name in names:
        out[name] = {label: _summary(samples[name][label],
                                     runners[name](keys[label][0], True)[1] if name in counted else None)
                     for label in labels}
    for label in labels:
        answers = {n: tuple(out[n][label]["rows"]) for n in names if out[n][label]["rows"][0] is not None}
        if len(set(answers.values())) > 1:
            raise AssertionError(f"the engines disagree on the {label} keys: {answers}")
    return out


def run_lookup_benchmark(size_mb: float = 224, files: int = 50, lookups: int = 5, engines: Sequence[str] = ENGINES,
                         workdir: str | None = None, log: Callable[[str], None] = lambda _: None,
                         row_groups: int = 5, prune_costs: bool = False,
                         extra: Callable[[dict[str, Any], list[str], list[str]], dict[str, Any]] | None = None
                         ) -> dict[str, Any]:
    """Generate the data, run the lookups interleaved, return the figures (``prune_costs``: and
    the pruning costs of :func:`prune_costs_of`; ``extra(data, present, absent)``: more
    figures on the same data, under ``"extra"``)."""
    root = Path(tempfile.mkdtemp(prefix="secure-bloom-lookup-", dir=workdir))
    spark = None
    try:
        start = time.perf_counter()
        data = generate_dataset(root, size_mb, files, row_groups)
        log(f"generated {data['bytes'] / 1e6:.0f} MB in {files} files ({data['rows']:,} rows), each file with "
            f"KEKs of its own, in {time.perf_counter() - start:.0f} s")
        rng = np.random.default_rng(99)
        present = [data["present"][int(i)] for i in rng.integers(len(data["present"]), size=lookups)]
        absent = [f"{k[:31]}{'0' if k[31] != '0' else '1'}" for k in present]  # same range: no statistics prune
        result: dict[str, Any] = {"dataset": {"bytes_on_disk": data["bytes"], "files": files, "rows": data["rows"],
                                              "row_groups": files * row_groups}}
        from secure_bloom.parquet import KeyAccess, PruneCache

        warm = (KeyAccess(kms=data["kms"]), PruneCache())
        runners: dict[str, Lookup] = {}
        pids: dict[str, int | str] = {}
        for engine in engines:
            if engine == "ours":
                runners[engine] = lambda k, count: _ours(data, k, count)
            elif engine == "ours-warm":
                runners[engine] = lambda k, count: _ours(data, k, count, warm)
            elif engine == "floor":
                runners[engine], _ = _floor_runner(data, present + absent)
            elif engine == "pyarrow":
                runners[engine] = lambda k, count: _pyarrow(data, k, count)
            elif engine in ("duckdb", "duckdb-warm"):
                runners[engine] = _duckdb(data, engine == "duckdb-warm")
            elif engine == "datafusion":
                found = _datafusion(data)
                if found is None:
                    log("datafusion: not run (the optional peer: pip install datafusion)")
                    result.setdefault("not_run", {})[engine] = "peer not installed (pip install datafusion)"
                    continue
                runners[engine] = found
            elif engine == "spark":
                spark, runners[engine], pids[engine] = _spark(data)
        result["engines"] = interleave(runners, {"absent": absent, "present": present}, pids,
                                       counted=("ours", "ours-warm", "pyarrow"))
        for engine, figures in result["engines"].items():
            log(f"{engine}: absent {1e3 * figures['absent']['min_s']:.1f} ms min, "
                f"present {1e3 * figures['present']['min_s']:.1f} ms min")
        if spark is not None:
            spark.stop()
            spark = None
        if prune_costs:
            result["prune"] = prune_costs_of(data, absent[0], row_groups)
        if extra is not None:
            result["extra"] = extra(data, present, absent)
        return result
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(root, ignore_errors=True)


def interleaved_best(runs: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds of the fastest of ``repeat`` rounds of each of ``runs``, the runs
    taking turns within each round (after one untimed round): the minimum is the figure least
    disturbed by other processes on a shared machine."""
    for run in runs.values():
        run()
    best = {name: (float("inf"), float("inf")) for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            wall, cpu = time.perf_counter(), time.process_time()
            run()
            best[name] = min(best[name], (time.perf_counter() - wall, time.process_time() - cpu))
    return best


def pruner(data: dict[str, Any], key: str, paths: Sequence[str] | None = None) -> Callable[[], Any]:
    """The pruning alone, cold, through the public API: ``prune_files`` of ``paths`` (default:
    every file of ``data``) for ``key == key`` with a fresh KeyAccess per call."""
    from secure_bloom.parquet import KeyAccess
    from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
    from secure_bloom.parquet.read.prune import prune_files

    files = list(paths) if paths is not None else sorted(str(p) for p in Path(data["encrypted"]).iterdir())
    tree = predicate_tree(to_expression([("key", "==", key)]))
    return lambda: prune_files(files, tree, keys=KeyAccess(kms=data["kms"]), progress=False)


def _io_only(floor: Any) -> Callable[[], None]:
    """The preads of the floor's plans and nothing else (the I/O part of the floor)."""
    def run() -> None:
        for plan in floor.plans:
            fd = os.open(plan.path, os.O_RDONLY)
            try:
                for offset, n in plan.reads:
                    os.pread(fd, n, offset)
            finally:
                os.close(fd)
    return run


def prune_costs_of(data: dict[str, Any], key: str, row_groups: int, repeat: int = 7) -> dict[str, Any]:
    """Pruning alone over ``data``'s encrypted files for the absent ``key``, cold, against its
    physical floor (:mod:`.floor`: preads, AES-GCM, key unwraps) and the preads alone, taking
    turns; per file and per row group."""
    from secure_bloom.parquet import KeyAccess

    from .floor import Floor, plan_file

    paths = sorted(str(p) for p in Path(data["encrypted"]).iterdir())
    prepare = KeyAccess(kms=data["kms"])
    floor = Floor([plan_file(p, prepare, "key") for p in paths], data["kms"])
    best = interleaved_best({"prune": pruner(data, key, paths), "floor": floor.run, "io": _io_only(floor)}, repeat)
    n = len(paths)
    (prune, prune_cpu), (fl, fl_cpu), (io, io_cpu) = best["prune"], best["floor"], best["io"]
    return {"files": n, "row_groups": row_groups, "prune_s": round(prune, 6), "prune_cpu_s": round(prune_cpu, 6),
            "floor_s": round(fl, 6), "floor_cpu_s": round(fl_cpu, 6),
            # 7 digits: the floor of a few preads is a few microseconds, 0.0 at 5 digits on a fast machine
            "io_floor_s": round(io, 7), "io_floor_cpu_s": round(io_cpu, 7),
            "prune_us_per_file": round(1e6 * prune / n, 1), "prune_cpu_us_per_file": round(1e6 * prune_cpu / n, 1),
            "beyond_floor_us_per_file": round(1e6 * (prune - fl) / n, 1),
            "beyond_io_us_per_file": round(1e6 * (prune - io) / n, 1),
            "beyond_io_cpu_us_per_file": round(1e6 * (prune_cpu - io_cpu) / n, 1)}


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
    group each (about 20 KB, 80 rows; no plaintext copies; each file with KEKs of its own): is
    the cost per file flat as the count grows? From 2,000 files generation runs in ``workers``
    processes (default: every core; fewer files do not repay starting them)."""
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
                                     repeat=3 if count >= 1000 else 7)
            figures["generated_s"] = round(generated, 1)
            figures["warm_lookup_s"] = _warm_lookup_s(data, k)
            log(f"scaling {count} files (generated in {generated:.0f} s): prune {figures['prune_s']:.4f} s, "
                f"floor {figures['floor_s']:.4f} s, preads {figures['io_floor_s']:.4f} s, "
                f"warm lookup {figures['warm_lookup_s']:.4f} s")
            out.append(figures)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return out


def per_row_group_us(many: dict[str, Any], single: dict[str, Any]) -> dict[str, float] | None:
    """The cost beyond I/O of each row group consulted after a file's first (wall and CPU): from
    files of ``many['row_groups']`` row groups against files of one (``single``)."""
    extra = many["row_groups"] - 1
    if extra <= 0:
        return None
    return {kind: round((many[f"beyond_io_{kind}us_per_file"] - single[f"beyond_io_{kind}us_per_file"]) / extra, 1)
            for kind in ("", "cpu_")}


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{1e3 * seconds:.1f}"


def _engine_lines(workloads: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Per workload and key: every engine's min and median, wall and process CPU (ms), and the
    bytes it read."""
    lines = ["| workload, key | engine | min ms (CPU) | median ms (CPU) | bytes read (rchar) | / floor (min) |",
             "|---|---|---|---|---|---|"]
    for name, result in workloads:
        engines = result["engines"]
        for label in ("absent", "present"):
            floor = engines.get("floor", {}).get(label, {}).get("min_s")
            for engine, figures in engines.items():
                f = figures[label]
                read = f["bytes"] if f["bytes"] is not None else "-"
                versus = f"{f['min_s'] / floor:.2f}x" if floor else "-"
                lines.append(f"| {name}, {label} | {engine} | {_ms(f['min_s'])} ({_ms(f['min_cpu_s'])}) | "
                             f"{_ms(f['median_s'])} ({_ms(f['median_cpu_s'])}) | {read} ({f['median_rchar']}) | "
                             f"{versus} |")
    return lines


def _cost_lines(costs: list[dict[str, Any]]) -> list[str]:
    lines = ["| files x row groups | prune (CPU) | physical floor | preads alone | per file | per file beyond floor | "
             "per file beyond preads (CPU) |", "|---|---|---|---|---|---|---|"]
    for c in costs:
        lines.append(f"| {c['files']} x {c['row_groups']} | {_ms(c['prune_s'])} ms ({_ms(c['prune_cpu_s'])}) | "
                     f"{_ms(c['floor_s'])} ms | {1e3 * c['io_floor_s']:.2f} ms | {c['prune_us_per_file']:.0f} us | "
                     f"{c['beyond_floor_us_per_file']:.0f} us | {c['beyond_io_us_per_file']:.0f} us "
                     f"({c['beyond_io_cpu_us_per_file']:.0f} us) |")
    return lines


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def lookup_targets(workloads: list[tuple[str, dict[str, Any]]], result: dict[str, Any]) -> list[Any]:
    """The targets of issue 29 from this run's figures (minima; see :mod:`.targets`)."""
    from .targets import at_least, at_most, not_run

    out = []

    def figure(figures: dict[str, Any], engine: str, label: str) -> float | None:
        found = figures["engines"].get(engine)
        return None if found is None else found[label]["min_s"]

    for name, figures in workloads:
        for label in ("absent", "present"):
            cold = figure(figures, "ours", label)
            out.append(at_most(f"cold {label}, {name}: ours / physical floor", _ratio(cold, figure(figures, "floor", label)), 2))
            for peer, title in (("duckdb", "DuckDB"), ("datafusion", "DataFusion")):
                if peer in figures["engines"]:
                    out.append(at_most(f"cold {label}, {name}: ours / {title} (plaintext copy)",
                                       _ratio(cold, figure(figures, peer, label)), 1.0))
                else:
                    out.append(not_run(f"cold {label}, {name}: ours / {title} (plaintext copy)", "<= 1",
                                       figures.get("not_run", {}).get(peer, "not among --engines")))
        for label in ("absent", "present"):
            warm = _ratio(figure(figures, "duckdb-warm", label), figure(figures, "ours-warm", label))
            out.append(at_least(f"warm {label}, {name}: DuckDB warm / ours warm", warm, 3,
                                note="" if warm is not None else "ours-warm or duckdb-warm not among --engines"))
    threads = result.get("threads")
    out.append(at_least("threads: 2 threads' cold lookups / 1 thread's (throughput)",
                        threads["throughput_ratio"] if threads else None, 1.6,
                        note=f"{threads['lookups']} lookups a thread" if threads else "not run"))
    scaling = result.get("scaling") or []
    if len(scaling) >= 2:
        first, last = scaling[0], scaling[-1]
        out.append(at_most(f"linear: prune per file, {last['files']} files / {first['files']} files (own KEKs)",
                           last["prune_us_per_file"] / first["prune_us_per_file"], 1.3,
                           note=f"{first['prune_us_per_file']:.0f} -> {last['prune_us_per_file']:.0f} us per file; "
                                f"CPU {first['prune_cpu_us_per_file']:.0f} -> {last['prune_cpu_us_per_file']:.0f} us"))
    else:
        out.append(not_run("linear: prune per file over --scale (own KEKs)", "<= 1.3", "needs two --scale counts"))
    many = result.get("many_row_groups")
    out.append(at_most(f"{many['row_groups'] if many else 2000}-row-group file: prune per row group beyond the floor",
                       many["beyond_floor_us_per_row_group"] if many else None, 2, "us",
                       note=(f"beyond preads alone: {many['beyond_io_us_per_row_group']:.2f} us"
                             + (f"; its modules' AES-GCM in native batches: {many['native_aes_gcm_us_per_row_group']:.2f} us"
                                if "native_aes_gcm_us_per_row_group" in many else "") if many else "not run")))
    footer = result.get("footer_parse")
    out.append(at_most(f"{footer['row_groups'] if footer else 100000:,}-row-group footer: ours / pyarrow read_metadata",
                       footer["ratio"] if footer else None, 2,
                       note=(f"{footer['ours_s']:.3f} s vs {footer['pyarrow_s']:.3f} s" if footer else "not run")))
    s3 = result.get("object_store") or {"not_run": "not asked"}
    if "not_run" in s3:
        out.append(not_run("object store: requests per file, cold absent lookup (moto S3)", "<= 2", s3["not_run"], ""))
    else:
        for label in ("absent", "present"):
            ours, arrow = s3[f"ours_{label}"], s3[f"pyarrow_{label}"]
            out.append(at_most(f"object store, {label}: pruning requests per file, ours (moto S3, {s3['files']} files)",
                               ours["pruning_requests_max"], 2, "",
                               note=f"the most one object got while pruning (its HEAD, tail, filters); "
                                    f"all requests on objects per file: ours {ours['requests_per_file']}, pyarrow "
                                    f"{arrow['requests_per_file']} (a survivor's scan adds its HEAD and data read); "
                                    f"once per lookup: ours {ours['per_lookup']}, pyarrow {arrow['per_lookup']} "
                                    f"(prefix HEAD, listings); bytes per file ours {ours['bytes_per_file']:,}, "
                                    f"pyarrow {arrow['bytes_per_file']:,}"))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks bench-lookup", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=224, help="first workload's size on disk (default 224 MB)")
    parser.add_argument("--files", type=int, default=50, help="first workload's files, 5 row groups each (default 50)")
    parser.add_argument("--small-files", type=int, default=300,
                        help="second workload's files, 1 row group each (default 300; 0 skips it)")
    parser.add_argument("--small-size-mb", type=float, default=30, help="second workload's size (default 30 MB)")
    parser.add_argument("--scale", default="10,100,1000",
                        help="file counts for the pruning cost curve and the linear target (default 10,100,1000; "
                             "'' skips it; 10,100,1000,10000 for the full curve: 10,000 small files are generated "
                             "on every core, about a minute on two)")
    parser.add_argument("--lookups", type=int, default=5, help="present and absent keys each (default 5)")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma list of {','.join(ENGINES)}")
    parser.add_argument("--spark", action="store_true", help="add Spark (first workload only)")
    parser.add_argument("--row-groups", type=int, default=2000,
                        help="row groups of the per-row-group target's file (default 2000; 0 skips it)")
    parser.add_argument("--footer-row-groups", type=int, default=100_000,
                        help="row groups of the footer-parse target's file (default 100,000; 0 skips it)")
    parser.add_argument("--s3-files", type=int, default=10,
                        help="files of the first workload looked up on moto's S3 server (default 10; 0 skips it)")
    parser.add_argument("--workdir", help="where to generate the data (default: the temp directory)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e] + (["spark"] if args.spark else [])
    unknown = set(engines) - set(ENGINES) - {"spark"}
    if unknown:
        parser.error(f"unknown engines: {', '.join(sorted(unknown))}")
    try:
        counts = [int(c) for c in args.scale.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--scale must be a comma list of file counts, got {args.scale!r}")
    from . import lookup_targets as more
    from .targets import targets_table

    log = (lambda _: None) if args.json else (lambda text: print(text, flush=True))
    load_before = os.getloadavg()

    def on_first(data: dict[str, Any], present: list[str], absent: list[str]) -> dict[str, Any]:
        figures: dict[str, Any] = {"threads": more.threads(lambda k: _ours(data, k, False), absent[:4])}
        log(f"threads: {figures['threads']}")
        if args.s3_files > 0:
            # present: a key of the first file, which is among those uploaded
            figures["object_store"] = more.object_store_requests(
                data, {"absent": absent[0], "present": data["present"][0]}, args.s3_files)
            log(f"object store: {figures['object_store']}")
        return figures

    result = run_lookup_benchmark(args.size_mb, args.files, args.lookups, engines, args.workdir, log,
                                  prune_costs=True, extra=on_first)
    result.update(result.pop("extra"))
    workloads = [(f"{args.files} files x 5 row groups", result)]
    costs = [result["prune"]]
    if args.small_files > 0:
        small = run_lookup_benchmark(args.small_size_mb, args.small_files, args.lookups,
                                     [e for e in engines if e != "spark"], args.workdir, log, row_groups=1,
                                     prune_costs=True)
        result["small_files"] = small
        workloads.append((f"{args.small_files} files x 1 row group", small))
        costs.append(small["prune"])
        result["per_row_group_us"] = per_row_group_us(result["prune"], small["prune"])
    result["scaling"] = run_scaling(counts, args.workdir, log)
    if args.row_groups > 1:
        result["many_row_groups"] = more.many_row_groups(args.row_groups, workdir=args.workdir)
        log(f"many row groups: {result['many_row_groups']}")
    if args.footer_row_groups > 0:
        result["footer_parse"] = more.footer_parse(args.footer_row_groups, workdir=args.workdir)
        log(f"footer parse: {result['footer_parse']}")
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    targets = lookup_targets(workloads, result)
    result["targets"] = [{"target": t.name, "figure": t.figure, "goal": t.goal, "unit": t.unit, "verdict": t.verdict,
                          "note": t.note} for t in targets]
    if args.json:
        print(json.dumps(envelope("bench-lookup", result), indent=2))
        return 0
    print(f"\nlookups, {args.lookups} absent and {args.lookups} present keys, engines interleaved per key "
          f"(min and median; CPU: this process's, every thread; Spark's JVM not counted):")
    print("\n".join(_engine_lines(workloads)))
    print("\npruning alone, absent key, cold (fastest of several rounds taking turns):")
    print("\n".join(_cost_lines(costs + result["scaling"])))
    per_rg = result.get("per_row_group_us")
    if per_rg is not None:
        print(f"each row group consulted after a file's first: {per_rg['']} us beyond the preads "
              f"({per_rg['cpu_']} us CPU)")
    print(f"load average: before {load_before}, after {result['load_average']['after']}")
    print()
    print("\n".join(targets_table(targets)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
