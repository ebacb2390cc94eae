"""Benchmark of point lookups by key (figures, not a test): ``secure-bloom bench-lookup``.

Generates an encrypted dataset (default 1 GiB on disk in 50 files, 5 row groups each; a random
32-hex-digit key per row, so min/max statistics cannot prune; incompressible payload), written by
pyarrow with Parquet Modular Encryption (key list KMS, the key column under its own key) and given
encrypted Bloom filters on the key column by :func:`~secure_bloom.parquet.attach_bloom_filters`.
Then, in the same run, looks up present and absent keys with:

* ``ours``: :func:`secure_bloom.parquet.read_table` (statistics + encrypted Bloom filters, then
  pyarrow on the surviving row groups); cold: every lookup reads and decrypts every footer and
  filter again (a fresh KeyAccess, no cache);
* ``ours-warm``: the same with one :class:`~secure_bloom.parquet.PruneCache` and one KeyAccess
  reused across that engine's lookups (a long-running service): the untimed warm-up fills the
  cache, then each lookup only stats the files whose pruning facts it holds and opens the files
  with row groups to read (pyarrow still lists the directory and reads one footer for the
  schema, and decrypts and scans the surviving row groups); the page cache is as warm as for
  the others;
* ``pyarrow``: ``pyarrow.dataset`` with the same filter and the same decryption (statistics only);
* ``duckdb``: DuckDB cannot decrypt these files (Parquet Modular Encryption with KMS-wrapped,
  per-column keys: it asks for its own ``encryption_config``), so it queries a PLAINTEXT copy of
  the same rows written by pyarrow with plaintext Bloom filters on the key (DuckDB prunes with them);
* ``spark``: a warm local Spark session (parquet-java's own Bloom filter and statistics
  pushdown) on the encrypted files, through our key list KMS client.

Latency: the median of the lookups (each a fresh query: discovery, footers, filters, data),
timed on the plain local filesystem. Bytes: what the process read during the timed query
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
from ..cli.output import envelope

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


def generate_dataset(root: Path, size_mb: float, files: int, row_groups: int = 5, seed: int = 12) -> dict[str, Any]:
    """Write ``files`` encrypted files of about ``size_mb`` in total (plus a plaintext copy for
    DuckDB); returns the key list, the directories and some present keys."""
    from ..kms import KeyListKms, pyarrow_kms_client_factory
    from ..parquet import KeyAccess, attach_bloom_filters

    rng = np.random.default_rng(seed)
    master = {"footer": rng.bytes(16), "keys": rng.bytes(16)}
    key_list = ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in master.items())
    kms = KeyListKms(master)
    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
    config = pe.EncryptionConfiguration(footer_key="footer", column_keys={"keys": ["key"]}, double_wrapping=True)
    rows = max(row_groups, int(size_mb * 1e6 / _ROW_BYTES / files))
    encrypted, plain, staging = root / "encrypted", root / "plaintext", root / "staging"
    for d in (encrypted, plain, staging):
        d.mkdir(parents=True)
    present = []
    keys = KeyAccess(kms=kms)
    for i in range(files):
        table = pa.table({"key": _keys(rng, rows), "seq": pa.array(np.arange(i * rows, (i + 1) * rows)),
                          "payload": pa.array([rng.bytes(96).hex() for _ in range(rows)])})
        present.append(table["key"][int(rng.integers(rows))].as_py())
        src = staging / f"part-{i:05d}.parquet"
        props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config)
        pq.write_table(table, src, encryption_properties=props, row_group_size=-(-rows // row_groups))
        attach_bloom_filters(src, encrypted / src.name, ["key"], keys, fpp=0.01)
        src.unlink()
        pq.write_table(table, plain / src.name, row_group_size=-(-rows // row_groups),
                       bloom_filter_options={"key": {"ndv": -(-rows // row_groups), "fpp": 0.01}})
    shutil.rmtree(staging)
    size = sum(p.stat().st_size for p in encrypted.iterdir())
    return {"key_list": key_list, "kms": kms, "encrypted": encrypted, "plaintext": plain, "present": present,
            "rows": rows * files, "bytes": size}


Lookup = Callable[[str, bool], tuple[int, int | None]]


def _timed(run: Lookup, key: str, pid: int | str = "self", counts: bool = True) -> dict[str, Any]:
    """One timed lookup (reads not counted), then, for engines whose reads we can count, the same
    lookup untimed with its reads counted."""
    before = _rchar(pid)
    start = time.perf_counter()
    rows, _ = run(key, False)
    elapsed = time.perf_counter() - start
    after = _rchar(pid)
    if not counts:
        return {"s": elapsed, "rows": rows, "bytes": None,
                "rchar": after - before if before is not None and after is not None else None}
    counted_rows, counted = run(key, True)
    if counted_rows != rows:
        raise AssertionError(f"the counted run found {counted_rows} rows, the timed one {rows}")
    return {"s": elapsed, "rows": rows, "bytes": counted,
            "rchar": after - before if before is not None and after is not None else None}


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def median(key: str) -> Any:
        values = [r[key] for r in runs if r[key] is not None]
        return statistics.median(values) if values else None

    return {"median_s": round(median("s"), 4), "median_bytes": median("bytes"), "median_rchar": median("rchar"),
            "rows": [r["rows"] for r in runs]}


def _ours(data: dict[str, Any], key: str, count: bool, warm: Any = None) -> tuple[int, int | None]:
    """One lookup; ``warm``: (KeyAccess, PruneCache) reused across lookups, else a fresh KeyAccess."""
    from ..parquet import KeyAccess
    from ..parquet.read import scan

    keys, cache = warm if warm is not None else (KeyAccess(kms=data["kms"]), None)
    pruned = scan(data["encrypted"], filters=[("key", "==", key)], keys=keys, count_reads=count, cache=cache)
    table = pruned.to_table()
    return table.num_rows, pruned.report.bytes_read if count else None


def _pyarrow(data: dict[str, Any], key: str, count: bool) -> tuple[int, int | None]:
    from ..parquet import KeyAccess
    from ..parquet.read import parquet_format
    from ..parquet.sources import CountingFileSystem, ReadCounter

    counter = ReadCounter()
    fs = pafs.PyFileSystem(CountingFileSystem(pafs.LocalFileSystem(), counter)) if count else pafs.LocalFileSystem()
    dataset = ds.dataset(str(data["encrypted"]), filesystem=fs, format=parquet_format(KeyAccess(kms=data["kms"])))
    table = dataset.to_table(filter=ds.field("key") == key)
    return table.num_rows, counter.bytes if count else None


def run_lookup_benchmark(size_mb: float = 1024, files: int = 50, lookups: int = 5,
                         engines: Sequence[str] = ENGINES, workdir: str | None = None,
                         log: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Generate the data, run the lookups, return the figures and ratios."""
    root = Path(tempfile.mkdtemp(prefix="secure-bloom-lookup-", dir=workdir))
    try:
        start = time.perf_counter()
        data = generate_dataset(root, size_mb, files)
        log(f"generated {data['bytes'] / 1e6:.0f} MB in {files} files ({data['rows']:,} rows) "
            f"in {time.perf_counter() - start:.0f} s")
        rng = np.random.default_rng(99)
        present = [data["present"][int(i)] for i in rng.integers(len(data["present"]), size=lookups)]
        absent = [f"{k[:31]}{'0' if k[31] != '0' else '1'}" for k in present]  # same range: no statistics prune
        result: dict[str, Any] = {"dataset": {"bytes_on_disk": data["bytes"], "files": files, "rows": data["rows"],
                                              "row_groups": files * 5}, "engines": {}}
        from ..parquet import KeyAccess, PruneCache

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
            from ..spark.policy import EncryptionPolicy, KeyListKmsConfig
            from ..spark.session import local_spark

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="secure-bloom bench-lookup", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=1024, help="dataset size on disk (default 1024 MB)")
    parser.add_argument("--files", type=int, default=50, help="number of files (default 50)")
    parser.add_argument("--lookups", type=int, default=5, help="present and absent keys each (default 5)")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma list of {','.join(ENGINES)}")
    parser.add_argument("--workdir", help="where to generate the data (default: the temp directory)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args(argv)
    engines = [e for e in args.engines.split(",") if e]
    unknown = set(engines) - set(ENGINES)
    if unknown:
        parser.error(f"unknown engines: {', '.join(sorted(unknown))}")
    log = (lambda _: None) if args.json else (lambda text: print(text, flush=True))
    result = run_lookup_benchmark(args.size_mb, args.files, args.lookups, engines, args.workdir, log)
    result["load_average"] = os.getloadavg()
    if args.json:
        print(json.dumps(envelope("bench-lookup", result), indent=2))
        return 0
    print(f"\n{'engine':<10} {'key':<8} {'median s':>9} {'bytes read':>14} {'rchar':>14}")
    for engine, figures in result["engines"].items():
        for label in ("present", "absent"):
            f = figures[label]
            print(f"{engine:<10} {label:<8} {f['median_s']:>9.4f} {f['median_bytes'] or '-':>14} "
                  f"{f['median_rchar'] or '-':>14}")
    print("\n" + "\n".join(f"{k}: {v}" for k, v in result["ratios"].items()))
    print(f"load average: {result['load_average']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
