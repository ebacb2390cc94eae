"""Benchmark of the distributed Bloom filter build (figures, not a test).

``python -m benchmarks bench-spark`` measures, on one machine:

* the distributed build of N values (default 10M, INT64 and STRING) with ``local[1]`` and
  ``local[2]``: the speed-up of the second core;
* parquet-java building the same filter while Spark writes: a Parquet write of the column with
  and without ``parquet.bloom.filter.enabled`` (same size cap), whose difference is parquet-java's
  cost of the filter; the ratio is our build time over that difference.

The input is cached in memory first so that data generation is not timed. Each figure is the best
of ``--repeat`` runs. The report names the kernel backend of the driver and of Spark's Python
workers (a one-row ``mapInArrow`` job asks them): the partition builds run
:meth:`SplitBlockBloomFilter.insert`, i.e. the compiled kernel where it is built.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from secure_bloom import kernels
from secure_bloom.filter import optimal_num_bytes
from secure_bloom.spec import DEFAULT_FPP
from .timing import best_seconds
from secure_bloom.cli.output import envelope

__all__ = ["main", "run_spark_benchmark"]


def _frame(spark: Any, n: int, kind: str, partitions: int) -> Any:
    from pyspark.sql import functions as F

    df = spark.range(0, n, numPartitions=partitions)
    if kind == "int64":
        col = F.xxhash64(F.col("id")).alias("v")
    else:
        col = F.concat(F.lit("customer-"), F.col("id").cast("string"), F.lit("@example.com")).alias("v")
    return df.select(col).cache()


def _worker_kernel(batches: Any) -> Any:
    """mapInArrow: one row naming the kernel backend of the Python worker that ran it."""
    import pyarrow as pa

    for _ in batches:
        pass
    yield pa.RecordBatch.from_arrays([pa.array([kernels.kernel_summary()])], names=["kernel"])


def _measure(cores: int, n: int, kinds: Sequence[str], num_bytes: int, repeat: int,
             with_parquet_java: bool) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from secure_bloom.spark.build import build_bloom_filter
    from secure_bloom.spark.session import local_spark

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    spark = local_spark(f"secure-bloom-bench-{cores}", cores=cores)
    out: dict[str, Any] = {}
    tmp = Path(tempfile.mkdtemp(prefix="secure-bloom-bench-"))
    try:
        rows = spark.range(1, numPartitions=1).mapInArrow(_worker_kernel, "kernel string").collect()
        out["worker_kernel"] = rows[0]["kernel"] if rows else None
        for kind in kinds:
            df = _frame(spark, n, kind, partitions=4 * cores)
            df.count()  # materialise the cache
            build = best_seconds(lambda: build_bloom_filter(df, "v", num_bytes=num_bytes), repeat)
            figures = {"build_s": round(build, 3), "ns_per_value": round(build * 1e9 / n, 1)}
            if with_parquet_java:
                def write(bloom: bool) -> None:
                    target = tmp / f"{kind}-{bloom}"
                    writer = df.coalesce(cores).write.mode("overwrite").option("parquet.bloom.filter.max.bytes",
                                                                               str(num_bytes))
                    if bloom:
                        writer = (writer.option("parquet.bloom.filter.enabled#v", "true")
                                  .option("parquet.bloom.filter.expected.ndv#v", str(n // cores)))
                    writer.parquet(str(target))
                plain = best_seconds(lambda: write(False), repeat)
                bloom = best_seconds(lambda: write(True), repeat)
                figures.update({"spark_write_s": round(plain, 3), "spark_write_bloom_s": round(bloom, 3),
                                "parquet_java_filter_s": round(max(bloom - plain, 0.0), 3)})
            df.unpersist()
            out[kind] = figures
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_spark_benchmark(n: int = 10_000_000, kinds: Sequence[str] = ("int64", "string"),
                        max_bytes: int = 16 << 20, repeat: int = 2) -> dict[str, Any]:
    """Run the benchmark; returns the figures and ratios as a dict."""
    num_bytes = optimal_num_bytes(n, DEFAULT_FPP, max_bytes)
    one = _measure(1, n, kinds, num_bytes, repeat, with_parquet_java=False)
    one.pop("worker_kernel", None)
    two = _measure(2, n, kinds, num_bytes, repeat, with_parquet_java=True)
    ratios: dict[str, Any] = {}
    for kind in kinds:
        r: dict[str, Any] = {"speedup_local2_vs_local1": round(one[kind]["build_s"] / two[kind]["build_s"], 2)}
        pj = two[kind].get("parquet_java_filter_s")
        if pj:
            r["ours_vs_parquet_java_filter_cost"] = round(two[kind]["build_s"] / pj, 2)
        ratios[kind] = r
    return {"n": n, "num_bytes": num_bytes, "kernel": kernels.kernel_summary(),
            "worker_kernel": two.pop("worker_kernel", None), "local1": one, "local2": two, "ratios": ratios,
            "load_average_1min": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks bench-spark", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000_000, help="values (default 10M)")
    parser.add_argument("--kinds", default="int64,string", help="comma list of int64,string")
    parser.add_argument("--max-bytes", type=int, default=16 << 20, help="filter size cap (default 16 MiB)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per figure; the best is kept")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args(argv)
    result = run_spark_benchmark(args.n, tuple(k for k in args.kinds.split(",") if k), args.max_bytes, args.repeat)
    if args.json:
        print(json.dumps(envelope("bench-spark", result), indent=2))
        return 0
    print(f"distributed Bloom filter build: {result['n']:,} values, {result['num_bytes']:,}-byte filter")
    print(f"kernel: driver {result['kernel']}; Spark Python workers {result['worker_kernel']}")
    print(f"machine: {result['cpus']} CPUs, load average {result['load_average_1min']} at the end")
    for kind in result["ratios"]:
        one, two, r = result["local1"][kind], result["local2"][kind], result["ratios"][kind]
        print(f"  {kind:<7} local[1] {one['build_s']:7.2f} s ({one['ns_per_value']} ns/value)   "
              f"local[2] {two['build_s']:7.2f} s ({two['ns_per_value']} ns/value)   "
              f"speed-up {r['speedup_local2_vs_local1']}x")
        if "parquet_java_filter_s" in two:
            print(f"          Spark write {two['spark_write_s']:.2f} s, with Bloom filter "
                  f"{two['spark_write_bloom_s']:.2f} s -> parquet-java's filter cost "
                  f"{two['parquet_java_filter_s']:.2f} s; ours / parquet-java = "
                  f"{r.get('ours_vs_parquet_java_filter_cost', 'n/a')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
