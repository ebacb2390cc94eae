"""Benchmark: attach Bloom filters to a big pyarrow-encrypted file vs Spark rewriting it (figures, not a test).

``python -m benchmarks bench-attach`` writes, with
pyarrow, an encrypted Parquet file of ``--rows`` synthetic rows (default 8M, about 760 MB: six
columns of random, incompressible values; footer key and two column keys, key tools with a fresh
in-memory key list), then times, in one run on one machine:

* **pyarrow read**: ``pyarrow.parquet.read_table`` of the three filtered columns alone (decrypt +
  decode, pyarrow's own threads) - the floor for anything that must read those values;
* **attach**: :func:`secure_bloom.parquet.attach_bloom_filters` of the same three columns (exact
  NDV per chunk, fpp 0.01, 1 MiB cap): read, hash, count, insert, copy the pages, encrypt the
  filters, verify the result;
* **Spark rewrite**: Spark (parquet-java, ``local[2]``) reading the file and writing it again,
  encrypted, with Bloom filters on the same columns (ndv = rows per row group, fpp 0.01, 1 MiB
  cap: the same filter sizes). Session start-up is not timed.

pyarrow read and attach each run in a fresh (spawned) process, so their peak memory (``VmHWM``) is
their own; the baseline (interpreter, numpy, pyarrow loaded) is printed beside it. Targets (issue 13):
attach <= 0.33x Spark's time and <= 1.5x pyarrow's read of the columns.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import process_pool
from secure_bloom.cli.output import envelope
from secure_bloom import kernels
from secure_bloom.spec import DEFAULT_FPP, WRITER_DEFAULT_MAX_BYTES

__all__ = ["main", "run_attach_benchmark", "write_source", "TARGETS", "FILTERED"]

#: attach time / Spark's rewrite time, and attach time / pyarrow's read of the columns.
TARGETS = {"attach_over_spark": 0.33, "attach_over_pyarrow_read": 1.5}
#: The columns that get filters (a string, an int64, a short string).
FILTERED = ("email", "account_id", "ssn")
_COLUMN_KEYS = {"pii_key": ["email", "ssn"], "finance_key": ["account_id", "amount"]}
_FOOTER_KEY = "footer_key"


def _key_list() -> str:
    """A fresh key list for this run only (never printed)."""
    ids = [_FOOTER_KEY, *_COLUMN_KEYS]
    return ", ".join(f"{key_id}:{base64.b64encode(os.urandom(16)).decode()}" for key_id in ids)


def _strings(rng: np.random.Generator, n: int, low: int, high: int, prefix: bytes = b"",
             suffix: bytes = b"") -> Any:
    """``n`` random lowercase strings of ``low..high`` letters between ``prefix`` and ``suffix``."""
    import pyarrow as pa

    core = rng.integers(low, high + 1, size=n)
    lengths = core + len(prefix) + len(suffix)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("a"), ord("z") + 1, size=int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    for k, byte in enumerate(prefix):
        data[starts + k] = byte
    for k, byte in enumerate(suffix):
        data[offsets[1:] - len(suffix) + k] = byte
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data)).cast(pa.string())


def write_source(path: Path, rows: int, row_group_rows: int, key_list: str, seed: int = 1) -> int:
    """Write the encrypted source file with pyarrow, one row group at a time; returns its size."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyarrow.parquet.encryption as pe

    from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory

    factory = pe.CryptoFactory(pyarrow_kms_client_factory(KeyListKms(key_list)))
    config = pe.EncryptionConfiguration(footer_key=_FOOTER_KEY, column_keys=_COLUMN_KEYS, double_wrapping=True)
    props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config)
    schema = pa.schema([("email", pa.string()), ("account_id", pa.int64()), ("ssn", pa.string()),
                        ("amount", pa.float64()), ("ts", pa.timestamp("us", tz="UTC")), ("note", pa.string())])
    rng = np.random.default_rng(seed)
    with pq.ParquetWriter(path, schema, encryption_properties=props, use_dictionary=False,
                          compression="snappy") as writer:
        for start in range(0, rows, row_group_rows):
            n = min(row_group_rows, rows - start)
            digits = rng.integers(ord("0"), ord("9") + 1, size=(n, 11), dtype=np.uint8)
            digits[:, [3, 6]] = ord("-")                         # ddd-dd-dddd
            ssn = pa.StringArray.from_buffers(n, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * 11),
                                              pa.py_buffer(digits))
            table = pa.table({
                "email": _strings(rng, n, 10, 18, suffix=b"@example.com"),
                "account_id": pa.array(rng.integers(0, 2**62, size=n, dtype=np.int64)),
                "ssn": ssn,
                "amount": pa.array(rng.random(n) * 1e6),
                "ts": pa.array(rng.integers(1_500_000_000_000_000, 1_800_000_000_000_000, size=n),
                               pa.timestamp("us", tz="UTC")),
                "note": _strings(rng, n, 24, 40),
            }, schema=schema)
            writer.write_table(table, row_group_size=n)
    return path.stat().st_size


def _memory_mb(field: str) -> float:
    """``VmHWM`` (peak) or ``VmRSS`` (now) of this process in MB, from /proc (reset by exec, unlike
    ``ru_maxrss``, which Linux carries over from the parent that forked the process); elsewhere
    ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)  # kB
    except OSError:
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(maxrss / (1 << 20) if sys.platform == "darwin" else maxrss / 1024, 1)


def _phase(name: str, src: str, dst: str, key_list: str) -> dict[str, Any]:
    """One timed phase in this (fresh) process: its seconds and peak memory."""
    import pyarrow.parquet as pq
    import pyarrow.parquet.encryption as pe

    from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory
    from secure_bloom.parquet import KeyAccess, attach_bloom_filters

    kms = KeyListKms(key_list)
    baseline = _memory_mb("VmRSS")
    start = time.perf_counter()
    if name == "pyarrow_read":
        factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
        props = factory.file_decryption_properties(pe.KmsConnectionConfig())
        table = pq.read_table(src, columns=list(FILTERED), decryption_properties=props)
        extra: dict[str, Any] = {"rows": table.num_rows}
        del table
    else:
        report = attach_bloom_filters(src, dst, list(FILTERED), KeyAccess(kms=kms), fpp=DEFAULT_FPP,
                                      bloom_filter_max_bytes=WRITER_DEFAULT_MAX_BYTES, overwrite=True)
        extra = {"filters": len(report.filters), "dst_bytes": report.dst_bytes,
                 "filter_bytes": sum(f.length for f in report.filters), "kernel": kernels.kernel_summary()}
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 3), "peak_rss_mb": _memory_mb("VmHWM"), "baseline_rss_mb": baseline, **extra}


def _in_fresh_process(name: str, src: Path, dst: Path, key_list: str) -> dict[str, Any]:
    with process_pool(1) as pool:
        result: dict[str, Any] = pool.submit(_phase, name, str(src), str(dst), key_list).result()
    return result


def _spark_rewrite(src: Path, out: Path, key_list: str, rows_per_group: int, cores: int) -> dict[str, Any]:
    """Spark reads the file and writes it again with the same filters; session start not timed."""
    from secure_bloom.errors import JavaNotFoundError
    from secure_bloom.spark.policy import BloomFilterSpec, EncryptionPolicy, KeyListKmsConfig
    from secure_bloom.spark.session import local_spark

    policy = EncryptionPolicy(
        footer_key=_FOOTER_KEY, kms=KeyListKmsConfig(key_list=key_list),
        column_keys=_COLUMN_KEYS,
        bloom_filters={c: BloomFilterSpec(ndv=rows_per_group, fpp=DEFAULT_FPP) for c in FILTERED},
        bloom_filter_max_bytes=WRITER_DEFAULT_MAX_BYTES)
    try:
        spark = local_spark("secure-bloom-bench-attach", cores=cores, policy=policy)
    except (JavaNotFoundError, ImportError) as e:
        return {"skipped": f"Spark is not available ({e})"}
    try:
        start = time.perf_counter()
        spark.read.parquet(str(src)).write.mode("overwrite").options(**policy.write_options()).parquet(str(out))
        seconds = time.perf_counter() - start
        written = sum(p.stat().st_size for p in out.glob("*.parquet"))
        return {"seconds": round(seconds, 3), "cores": cores, "files": len(list(out.glob("*.parquet"))),
                "bytes": written, "spark": spark.version}
    finally:
        spark.stop()


def run_attach_benchmark(rows: int = 8_000_000, *, row_group_rows: int = 1_000_000, spark: bool = True,
                         workdir: str | os.PathLike[str] | None = None, keep: bool = False,
                         progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write the source, run the three phases; returns figures and ratios as a JSON-ready dict."""
    if rows < 1 or row_group_rows < 1:
        raise ValueError("rows and row_group_rows must be >= 1")
    say = progress or (lambda _msg: None)
    root = Path(tempfile.mkdtemp(prefix="secure-bloom-bench-attach-", dir=workdir))
    key_list = _key_list()
    try:
        src, dst = root / "source.parquet", root / "attached.parquet"
        say(f"writing {rows:,} rows with pyarrow (encrypted) to {src}")
        start = time.perf_counter()
        size = write_source(src, rows, row_group_rows, key_list)
        result: dict[str, Any] = {
            "rows": rows, "row_group_rows": row_group_rows, "source_bytes": size,
            "columns": list(FILTERED), "write_s": round(time.perf_counter() - start, 3),
            "kernel": kernels.kernel_info(), "kernel_summary": kernels.kernel_summary(),
            "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_average_1min_start": round(os.getloadavg()[0], 2), "targets": TARGETS}
        say("pyarrow reads the three columns (fresh process)")
        result["pyarrow_read"] = _in_fresh_process("pyarrow_read", src, dst, key_list)
        say("attach (fresh process)")
        result["attach"] = _in_fresh_process("attach", src, dst, key_list)
        if spark:
            say("Spark rewrites the file with the same filters (local[2])")
            result["spark_rewrite"] = _spark_rewrite(src, root / "spark_out", key_list,
                                                     min(rows, row_group_rows), cores=2)
        result["load_average_1min"] = round(os.getloadavg()[0], 2)
        attach_s = result["attach"]["seconds"]
        ratios = {"attach_over_pyarrow_read": round(attach_s / result["pyarrow_read"]["seconds"], 2)}
        if "seconds" in result.get("spark_rewrite", {}):
            ratios["attach_over_spark"] = round(attach_s / result["spark_rewrite"]["seconds"], 2)
        result["ratios"] = ratios
        result["attach"]["mb_per_s"] = round(size / 1e6 / attach_s, 1)
        return result
    finally:
        if keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def format_report(result: dict[str, Any]) -> str:
    load = max(result["load_average_1min_start"], result["load_average_1min"])
    lines = [f"attach benchmark: {result['rows']:,} rows, {result['source_bytes'] / 1e6:,.0f} MB pyarrow-encrypted "
             f"file, row groups of {result['row_group_rows']:,} rows, filters on {', '.join(result['columns'])}",
             f"kernel: {result['kernel_summary']}",
             f"machine: {result['cpus']} CPUs, load average {result['load_average_1min_start']} at the start, "
             f"{result['load_average_1min']} at the end"
             + (" - busy: other processes share the CPUs, figures are noisy" if load > (result["cpus"] or 1) else ""),
             ""]
    pr, at = result["pyarrow_read"], result["attach"]
    lines.append(f"  pyarrow read of the 3 columns {pr['seconds']:8.2f} s   peak {pr['peak_rss_mb']:8.0f} MB "
                 f"(baseline {pr['baseline_rss_mb']:.0f} MB)")
    lines.append(f"  attach (3 columns)            {at['seconds']:8.2f} s   peak {at['peak_rss_mb']:8.0f} MB "
                 f"(baseline {at['baseline_rss_mb']:.0f} MB), {at['mb_per_s']} MB/s of file, "
                 f"{at['filters']} filters")
    sp = result.get("spark_rewrite")
    if sp is not None:
        if "skipped" in sp:
            lines.append(f"  Spark rewrite                 skipped: {sp['skipped']}")
        else:
            lines.append(f"  Spark rewrite (local[{sp['cores']}])     {sp['seconds']:8.2f} s   "
                         f"({sp['files']} files, Spark {sp['spark']}; JVM peak not measured)")
    r = result["ratios"]
    lines.append("")
    verdict = "meets" if r["attach_over_pyarrow_read"] <= TARGETS["attach_over_pyarrow_read"] else "misses"
    lines.append(f"attach / pyarrow read = {r['attach_over_pyarrow_read']}x ({verdict} <= "
                 f"{TARGETS['attach_over_pyarrow_read']}x)")
    if "attach_over_spark" in r:
        verdict = "meets" if r["attach_over_spark"] <= TARGETS["attach_over_spark"] else "misses"
        lines.append(f"attach / Spark rewrite = {r['attach_over_spark']}x ({verdict} <= {TARGETS['attach_over_spark']}x)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks bench-attach``: exit 0 when it ran (whatever the figures), 2 on bad usage."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks bench-attach", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=8_000_000, help="rows of the source file (default 8M, ~760 MB)")
    parser.add_argument("--row-group-rows", type=int, default=1_000_000, help="rows per row group (default 1M)")
    parser.add_argument("--dir", default=None, help="where to write the files (default: the temp directory)")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark rewrite")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.row_group_rows < 1:
        parser.error("--rows and --row-group-rows must be >= 1")
    progress = None if args.json else (lambda msg: print(f"... {msg}", file=sys.stderr, flush=True))
    result = run_attach_benchmark(args.rows, row_group_rows=args.row_group_rows, spark=not args.no_spark,
                                  workdir=args.dir, keep=args.keep, progress=progress)
    print(json.dumps(envelope("bench-attach", result), indent=2) if args.json else format_report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
