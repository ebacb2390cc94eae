"""Benchmark: hash + insert and hash + check, native kernel vs numpy vs scalar vs parquet-java.

``python -m benchmarks.bench`` (also ``python -m benchmarks bench``) times, on one machine and in one run:

* N int64 values and N UTF-8 strings (about 24 bytes each; as a pyarrow string array and as a
  Python list) into a 1 MiB and a 16 MiB filter: ns/value for hash+insert and hash+check;
* the native path (:meth:`SplitBlockBloomFilter.insert` / :meth:`might_contain_many` on the
  compiled kernel, :mod:`secure_bloom.kernels`) and the numpy fallback (the same calls under
  :func:`~secure_bloom.kernels.forced_backend` ``("numpy")``);
* the scalar path (:func:`hash_value` + :meth:`insert_hash` / :meth:`check_hash` per value) on a
  sample of the values (100k by default: it is slow by design);
* parquet-java's ``BlockSplitBloomFilter`` on the same values and filter sizes, through the Java
  harness ``io.securebloom.BloomBench`` (its phases ``hash_insert`` and ``hash_check``); skipped,
  with a note, when java or pyspark is missing;
* Arrow C++'s ``BlockSplitBloomFilter`` (the libparquet of the pyarrow wheel, through the g++
  harness of :mod:`.arrow_cpp`) on the same values files: its bulk ``Hashes`` alone, ``Hashes`` +
  ``InsertHashes`` and ``Hashes`` + ``FindHash``; beside it the native ``hash_values`` alone (the
  "hash" column); skipped, with a note, without g++;
* encrypt + decrypt of the 1 MiB filter as two AES-GCM modules (MB/s of bitset).

It also verifies, and reports (never asserts): the native, numpy and scalar filters of the sample
are equal bit for bit, every inserted value is found, and parquet-java found every value. Figures
are the median of ``--repeat`` runs (best also kept in the JSON); the output names the kernel
backend (:func:`~secure_bloom.kernels.kernel_summary`) and the machine's load. Targets (issue 13):
native <= 0.5x parquet-java's time at 1 MiB for int64 and pyarrow strings, <= 1.0x at 16 MiB,
Python lists of str <= 1.0x; numpy >= 20x the scalar path.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from secure_bloom.cli.output import envelope
from secure_bloom import kernels
from secure_bloom.encrypted_filter import decrypt_bloom_filter, encrypt_bloom_filter
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.spec import WRITER_DEFAULT_MAX_BYTES
from secure_bloom.types import PhysicalType
from secure_bloom.values.physical import hash_value, hash_values
from .arrow_cpp import ArrowBenchUnavailable, arrow_bloom_bench

__all__ = ["run_benchmarks", "main", "make_int64_values", "make_string_values", "TARGETS"]

#: The issue's targets: numpy speed-up over scalar; native time / parquet-java time per input and
#: filter size ("1MiB": at most 1 MiB, "large": above), and for the numpy fallback (issue 3).
TARGETS: dict[str, Any] = {
    "numpy_vs_scalar_speedup": 20.0,
    "native_vs_parquet_java": {"1MiB": {"numpy int64 array": 0.5, "pyarrow string array": 0.5,
                                        "Python list of str": 1.0},
                               "large": {"numpy int64 array": 1.0, "pyarrow string array": 1.0,
                                         "Python list of str": 1.0}},
    "numpy_vs_parquet_java": {"int64": 1.0, "string": 1.5},
}
_DEFAULT_SIZES = (WRITER_DEFAULT_MAX_BYTES, 16 << 20)
_KEY = bytes(range(16))  # a fixed benchmark key: it protects nothing and is never printed


def make_int64_values(n: int, seed: int = 42) -> np.ndarray:
    """``n`` uniformly random int64 values (distinct with overwhelming probability)."""
    return np.random.default_rng(seed).integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64)


def make_string_values(n: int, seed: int = 43) -> pa.StringArray:
    """``n`` random lowercase ASCII strings of 20..28 bytes (mean 24) as a pyarrow string array."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 29, size=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("a"), ord("z") + 1, size=int(offsets[-1]), dtype=np.uint8)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes()))


def _time(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median, best) seconds of ``repeat`` calls, after one untimed warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def _ns(seconds: float, n: int) -> float:
    return round(seconds * 1e9 / max(n, 1), 2)


def _path_figures(values: Any, ptype: PhysicalType, num_bytes: int, n: int, repeat: int,
                  backend: str) -> dict[str, Any]:
    """SplitBlockBloomFilter.insert / might_contain_many on one kernel backend."""
    with kernels.forced_backend(backend):
        bf = SplitBlockBloomFilter(num_bytes)
        hash_med, _ = _time(lambda: hash_values(values, ptype), repeat)

        def insert() -> None:
            SplitBlockBloomFilter(num_bytes).insert(values, ptype)

        bf.insert(values, ptype)
        ins_med, ins_best = _time(insert, repeat)
        chk_med, chk_best = _time(lambda: bf.might_contain_many(values, ptype), repeat)
        found = bool(bf.might_contain_many(values, ptype).all())
    return {"hash_ns": _ns(hash_med, n), "insert_ns": _ns(ins_med, n), "check_ns": _ns(chk_med, n),
            "insert_best_ns": _ns(ins_best, n), "check_best_ns": _ns(chk_best, n), "all_found": found}


def _scalar_figures(sample: list[Any], ptype: PhysicalType, num_bytes: int) -> tuple[dict[str, Any], SplitBlockBloomFilter]:
    bf = SplitBlockBloomFilter(num_bytes)
    start = time.perf_counter()
    for v in sample:
        bf.insert_hash(hash_value(v, ptype))
    insert = time.perf_counter() - start
    start = time.perf_counter()
    found = sum(1 for v in sample if bf.check_hash(hash_value(v, ptype)))
    check = time.perf_counter() - start
    return ({"insert_ns": _ns(insert, len(sample)), "check_ns": _ns(check, len(sample)),
             "sample": len(sample), "all_found": found == len(sample)}, bf)


def _peer_figures(kind: Literal["int64", "string"], values: Any, num_bytes: int, repeat: int,
                  java: bool, arrow: bool) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """parquet-java's and Arrow C++'s figures on one values file (each None when not asked)."""
    fd, path = tempfile.mkstemp(prefix=f"secure-bloom-bench-{kind}-", suffix=".bin")
    try:
        with os.fdopen(fd, "wb") as out:
            if kind == "int64":
                out.write(np.ascontiguousarray(values, dtype="<i8").tobytes())
            else:
                _write_length_prefixed(out, values)
        return (_java_figures(kind, path, num_bytes, repeat) if java else None,
                _arrow_figures(kind, path, num_bytes, repeat, len(values)) if arrow else None)
    finally:
        os.unlink(path)


def _arrow_figures(kind: Literal["int64", "string"], path: str, num_bytes: int, repeat: int,
                   n: int) -> dict[str, Any]:
    """Arrow C++'s BlockSplitBloomFilter via the g++ harness (:mod:`.arrow_cpp`), or a skip note."""
    try:
        result = arrow_bloom_bench(kind, path, num_bytes=num_bytes, warmup=2, reps=max(repeat, 1))
    except (ArrowBenchUnavailable, OSError, subprocess.TimeoutExpired, ValueError) as e:
        return {"skipped": f"{e}; Arrow C++ column skipped"}
    per, best = result["ns_per_value"], result["best_ns_per_value"]
    return {"hash_ns": round(per["hash"], 2), "insert_ns": round(per["hash_insert"], 2),
            "check_ns": round(per["hash_check"], 2), "insert_best_ns": round(best["hash_insert"], 2),
            "check_best_ns": round(best["hash_check"], 2), "num_bytes": result["num_bytes"],
            "found": result["found"], "all_found": result["found"] == n == result["n"]}


def _java_figures(kind: Literal["int64", "string"], path: str, num_bytes: int, repeat: int) -> dict[str, Any]:
    """parquet-java's BlockSplitBloomFilter via io.securebloom.BloomBench, or a skip note."""
    from secure_bloom.errors import JavaNotFoundError, JvmError
    from .parquet_java import bloom_bench

    try:
        result = bloom_bench(kind, path, num_bytes=num_bytes, warmup=3, reps=max(repeat, 1), timeout=900)
    except JavaNotFoundError as e:
        return {"skipped": f"java or pyspark is missing ({e}); parquet-java column skipped"}
    except (JvmError, OSError) as e:
        return {"skipped": f"the parquet-java harness failed: {e}"}
    per = result["ns_per_value"]
    best = result["best_ns_per_value"]
    return {"insert_ns": round(per["hash_insert"], 2), "check_ns": round(per["hash_check"], 2),
            "insert_best_ns": round(best["hash_insert"], 2), "check_best_ns": round(best["hash_check"], 2),
            "phases_ns": {k: round(v, 2) for k, v in per.items()},
            "num_bytes": result["num_bytes"], "found": result["found"],
            "all_found": result["found"] == result["n"] and result["found_hash_check"] == result["n"],
            "parquet_version": result.get("parquet_version"), "java_version": result.get("java_version")}


def _write_length_prefixed(out: Any, strings: pa.Array) -> None:
    """BloomBench's string file: per value a uint32 LE byte length, then the UTF-8 bytes."""
    arr = strings.cast(pa.large_binary()) if not pa.types.is_large_binary(strings.type) else strings
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=len(arr) + 1 + arr.offset)[arr.offset:]
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)
    lengths = np.diff(offsets).astype("<u4")
    record_starts = offsets[:-1] - offsets[0] + 4 * np.arange(len(arr), dtype=np.int64)
    buf = np.empty(int(offsets[-1] - offsets[0]) + 4 * len(arr), dtype=np.uint8)
    prefix_pos = record_starts[:, None] + np.arange(4)
    buf[prefix_pos.ravel()] = lengths.view(np.uint8)
    mask = np.ones(buf.size, dtype=bool)
    mask[prefix_pos.ravel()] = False
    buf[mask] = data[offsets[0]:offsets[-1]]
    out.write(buf.tobytes())


def _ratios(paths: dict[str, dict[str, Any]], java_fig: dict[str, Any] | None,
            arrow_fig: dict[str, Any] | None = None) -> dict[str, Any]:
    numpy_fig, scalar_fig = paths["numpy"], paths["scalar"]
    out: dict[str, Any] = {
        "numpy_vs_scalar_insert_speedup": round(scalar_fig["insert_ns"] / numpy_fig["insert_ns"], 1),
        "numpy_vs_scalar_check_speedup": round(scalar_fig["check_ns"] / numpy_fig["check_ns"], 1),
    }
    if "native" in paths:
        out["native_vs_numpy_insert_speedup"] = round(numpy_fig["insert_ns"] / paths["native"]["insert_ns"], 1)
        out["native_vs_numpy_check_speedup"] = round(numpy_fig["check_ns"] / paths["native"]["check_ns"], 1)
    if java_fig and "skipped" not in java_fig:
        for name in ("native", "numpy"):
            if name in paths:
                out[f"{name}_over_parquet_java_insert"] = round(paths[name]["insert_ns"] / java_fig["insert_ns"], 2)
                out[f"{name}_over_parquet_java_check"] = round(paths[name]["check_ns"] / java_fig["check_ns"], 2)
    if arrow_fig and "skipped" not in arrow_fig and "native" in paths:
        for phase in ("hash", "insert", "check"):
            out[f"native_over_arrow_cpp_{phase}"] = round(paths["native"][f"{phase}_ns"] / arrow_fig[f"{phase}_ns"], 2)
    return out


def _workload(kind: str, label: str, values: Any, sample: list[Any], ptype: PhysicalType, num_bytes: int,
              n: int, repeat: int, java_fig: dict[str, Any] | None,
              arrow_fig: dict[str, Any] | None = None) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    built: dict[str, SplitBlockBloomFilter] = {}
    for backend in (["native"] if kernels.kernel_info()["unavailable_reason"] is None else []) + ["numpy"]:
        paths[backend] = _path_figures(values, ptype, num_bytes, n, repeat, backend)
        with kernels.forced_backend(backend):
            built[backend] = SplitBlockBloomFilter(num_bytes)
            built[backend].insert(sample, ptype)
    paths["scalar"], scalar_bf = _scalar_figures(sample, ptype, num_bytes)
    out: dict[str, Any] = {"kind": kind, "input": label, "n": n, "num_bytes": num_bytes, **paths,
                           "numpy_equals_scalar": built["numpy"] == scalar_bf,
                           "native_equals_scalar": built["native"] == scalar_bf if "native" in built else None}
    if java_fig is not None:
        out["parquet_java"] = java_fig
    if arrow_fig is not None:
        out["arrow_cpp"] = arrow_fig
    out["ratios"] = _ratios(paths, java_fig, arrow_fig)
    return out


def _crypto_figures(num_bytes: int, repeat: int) -> dict[str, Any]:
    bf = SplitBlockBloomFilter(num_bytes)
    bf.insert_hashes(np.arange(num_bytes // 8, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    file_aad = b"\x00" * 8
    enc = encrypt_bloom_filter(bf, _KEY, file_aad, 0, 0)
    enc_med, _ = _time(lambda: encrypt_bloom_filter(bf, _KEY, file_aad, 0, 0), repeat)
    dec_med, _ = _time(lambda: decrypt_bloom_filter(enc, _KEY, file_aad, 0, 0), repeat)
    mb = num_bytes / 1e6
    return {"num_bytes": num_bytes, "encrypt_ms": round(enc_med * 1e3, 3), "decrypt_ms": round(dec_med * 1e3, 3),
            "encrypt_mb_s": round(mb / enc_med, 1), "decrypt_mb_s": round(mb / dec_med, 1),
            "round_trip_equal": decrypt_bloom_filter(enc, _KEY, file_aad, 0, 0) == bf}


def run_benchmarks(n: int = 1_000_000, *, repeat: int = 3, scalar_sample: int = 100_000,
                   num_bytes: int | Sequence[int] = _DEFAULT_SIZES, java: bool = True, arrow: bool = True,
                   progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every figure for each filter size in ``num_bytes``; returns them as a JSON-ready dict
    (see the module docstring)."""
    if n < 1 or repeat < 1 or scalar_sample < 1:
        raise ValueError("n, repeat and scalar_sample must be >= 1")
    sizes = [num_bytes] if isinstance(num_bytes, int) else list(num_bytes)
    say = progress or (lambda _msg: None)
    sample_n = min(scalar_sample, n)
    say(f"generating {n:,} int64 values and {n:,} strings; kernel: {kernels.kernel_summary()}")
    ints = make_int64_values(n)
    strings = make_string_values(n)
    string_list = strings.to_pylist()
    load_start = os.getloadavg()[0]
    workloads = []
    for size in sizes:
        say(f"int64, {size:,}-byte filter")
        java_int, arrow_int = _peer_figures("int64", ints, size, repeat, java, arrow)
        workloads.append(_workload("int64", "numpy int64 array", ints, ints[:sample_n].tolist(),
                                   PhysicalType.INT64, size, n, repeat, java_int, arrow_int))
        say(f"strings (pyarrow), {size:,}-byte filter")
        java_str, arrow_str = _peer_figures("string", strings, size, repeat, java, arrow)
        workloads.append(_workload("string", "pyarrow string array", strings, string_list[:sample_n],
                                   PhysicalType.BYTE_ARRAY, size, n, repeat, java_str, arrow_str))
        say(f"strings (Python list), {size:,}-byte filter")
        workloads.append(_workload("string", "Python list of str", string_list, string_list[:sample_n],
                                   PhysicalType.BYTE_ARRAY, size, n, repeat, java_str, arrow_str))
    say("encrypt + decrypt")
    result: dict[str, Any] = {
        "n": n, "repeat": repeat, "num_bytes": sizes[0] if len(sizes) == 1 else sizes, "scalar_sample": sample_n,
        "kernel": kernels.kernel_info(), "kernel_summary": kernels.kernel_summary(),
        "python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
        "cpus": os.cpu_count(), "load_average_1min_start": round(load_start, 2),
        "load_average_1min": round(os.getloadavg()[0], 2), "workloads": workloads,
        "crypto": _crypto_figures(min(sizes), repeat), "targets": TARGETS,
    }
    result["verified"] = {
        "numpy_equals_scalar": all(w["numpy_equals_scalar"] for w in workloads),
        "all_values_found": all(w[p]["all_found"] for w in workloads for p in ("native", "numpy", "scalar") if p in w),
        "parquet_java_found_all": (None if not java or any("skipped" in w.get("parquet_java", {})
                                                             for w in workloads)
                                   else all(w["parquet_java"]["all_found"] for w in workloads)),
        "arrow_cpp_found_all": (None if not arrow or any("skipped" in w.get("arrow_cpp", {}) for w in workloads)
                                else all(w["arrow_cpp"]["all_found"] for w in workloads)),
        "encrypt_round_trip": result["crypto"]["round_trip_equal"],
    }
    if any(w["native_equals_scalar"] is not None for w in workloads):
        result["verified"]["native_equals_scalar"] = all(w["native_equals_scalar"] for w in workloads)
    return result


def _target_line(w: dict[str, Any]) -> str:
    r = w["ratios"]
    speed = min(r["numpy_vs_scalar_insert_speedup"], r["numpy_vs_scalar_check_speedup"])
    parts = [f"numpy vs scalar {r['numpy_vs_scalar_insert_speedup']}x insert, "
             f"{r['numpy_vs_scalar_check_speedup']}x check "
             f"({'meets' if speed >= TARGETS['numpy_vs_scalar_speedup'] else 'misses'} >= 20x)"]
    if "native_over_parquet_java_insert" in r:
        band = "1MiB" if w["num_bytes"] <= WRITER_DEFAULT_MAX_BYTES else "large"
        limit = TARGETS["native_vs_parquet_java"][band][w["input"]]
        worst = max(r["native_over_parquet_java_insert"], r["native_over_parquet_java_check"])
        parts.append(f"native / parquet-java {r['native_over_parquet_java_insert']}x insert, "
                     f"{r['native_over_parquet_java_check']}x check "
                     f"({'meets' if worst <= limit else 'misses'} <= {limit}x)")
    if "native_over_arrow_cpp_insert" in r:
        parts.append(f"native / Arrow C++ {r['native_over_arrow_cpp_insert']}x insert, "
                     f"{r['native_over_arrow_cpp_check']}x check, {r['native_over_arrow_cpp_hash']}x hash")
    if "numpy_over_parquet_java_insert" in r:
        parts.append(f"numpy / parquet-java {r['numpy_over_parquet_java_insert']}x insert, "
                     f"{r['numpy_over_parquet_java_check']}x check")
    return "; ".join(parts)


def format_report(result: dict[str, Any]) -> str:
    """The human-readable table printed by :func:`main`."""
    sizes = result["num_bytes"] if isinstance(result["num_bytes"], list) else [result["num_bytes"]]
    load = max(result["load_average_1min_start"], result["load_average_1min"])
    lines = [f"secure_bloom benchmark: {result['n']:,} values into filters of "
             f"{', '.join(f'{s:,}' for s in sizes)} bytes, median of {result['repeat']} runs "
             "(wall clock, ns/value; lower is better)",
             f"kernel: {result['kernel_summary']}",
             f"machine: {result['cpus']} CPUs, load average {result['load_average_1min_start']} at the start, "
             f"{result['load_average_1min']} at the end"
             + (" - busy: other processes share the CPUs, figures are noisy" if load > (result["cpus"] or 1) else ""),
             f"scalar path timed on a sample of the first {result['scalar_sample']:,} values "
             "(hash_value + insert_hash / check_hash per value)", ""]
    header = f"{'workload':<44}{'path':<14}{'hash+insert':>12}{'hash+check':>12}{'hash':>8}"
    lines.append(header)
    lines.append("-" * len(header))
    for w in result["workloads"]:
        name = f"{w['kind']} ({w['input']}), {w['num_bytes'] >> 20 or w['num_bytes']}" + \
            (" MiB" if w["num_bytes"] >= 1 << 20 else " B")
        rows = [(p, w[p]) for p in ("native", "numpy", "scalar") if p in w]
        pj = w.get("parquet_java")
        if pj and "skipped" not in pj:
            rows.append(("parquet-java", pj))
        ac = w.get("arrow_cpp")
        if ac and "skipped" not in ac:
            rows.append(("Arrow C++", ac))
        for i, (path, fig) in enumerate(rows):
            hashed = f"{fig['hash_ns']:>8.1f}" if "hash_ns" in fig else f"{'-':>8}"
            lines.append(f"{name if i == 0 else '':<44}{path:<14}{fig['insert_ns']:>12.1f}{fig['check_ns']:>12.1f}"
                         + hashed)
        if pj and "skipped" in pj:
            lines.append(f"{'':<44}parquet-java  skipped: {pj['skipped']}")
        if ac and "skipped" in ac:
            lines.append(f"{'':<44}Arrow C++     skipped: {ac['skipped']}")
        lines.append(f"{'':<44}{_target_line(w)}")
    c = result["crypto"]
    lines += ["", f"encrypt {c['num_bytes']:,}-byte filter: {c['encrypt_mb_s']} MB/s ({c['encrypt_ms']} ms); "
                  f"decrypt: {c['decrypt_mb_s']} MB/s ({c['decrypt_ms']} ms)"]
    v = result["verified"]
    pj_found = {None: "not run", True: "yes", False: "NO"}[v["parquet_java_found_all"]]
    native = {None: "not built", True: "yes", False: "NO"}[v.get("native_equals_scalar")]
    lines.append(f"verified: numpy filter == scalar filter: {'yes' if v['numpy_equals_scalar'] else 'NO'}; "
                 f"native filter == scalar filter: {native}; "
                 f"all inserted values found: {'yes' if v['all_values_found'] else 'NO'}; "
                 f"parquet-java found all: {pj_found}; "
                 f"Arrow C++ found all: {({None: 'not run', True: 'yes', False: 'NO'})[v['arrow_cpp_found_all']]}; "
                 f"encrypt/decrypt round trip: {'yes' if v['encrypt_round_trip'] else 'NO'}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.bench``: exit 0 when it ran (whatever the figures), 2 on bad usage."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="values per workload (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure; the median is shown (default 3)")
    parser.add_argument("--scalar-sample", type=int, default=100_000,
                        help="values timed on the scalar path (default 100,000)")
    parser.add_argument("--bytes", type=int, action="append", dest="num_bytes",
                        help="filter size in bytes, a power of two; repeatable (default 1 MiB and 16 MiB)")
    parser.add_argument("--no-java", action="store_true", help="skip the parquet-java column")
    parser.add_argument("--no-arrow", action="store_true", help="skip the Arrow C++ column (built with g++)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = parser.parse_args(argv)
    if args.n < 1 or args.repeat < 1 or args.scalar_sample < 1:
        parser.error("--n, --repeat and --scalar-sample must be >= 1")
    sizes = args.num_bytes or list(_DEFAULT_SIZES)
    try:
        for size in sizes:
            SplitBlockBloomFilter(size)
    except (TypeError, ValueError) as e:
        parser.error(f"--bytes: {e}")
    progress = None if args.json else (lambda msg: print(f"... {msg}", file=sys.stderr, flush=True))
    result = run_benchmarks(args.n, repeat=args.repeat, scalar_sample=args.scalar_sample,
                            num_bytes=sizes, java=not args.no_java, arrow=not args.no_arrow, progress=progress)
    print(json.dumps(envelope("bench", result), indent=2) if args.json else format_report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
