"""Per-key probes of many keys over an encrypted dataset: the API, the CLI and the kernel (issue 29).

The question: "which of these files and row groups may hold each of 10,000 keys". The dataset is
``python -m benchmarks bench-lookup``'s (benchmarks.bench_lookup.generate_dataset): ``--files``
files (default 50) of ``--row-groups`` row groups (default 5), written by pyarrow with Parquet
Modular Encryption (the key column under its own key, double wrapping, a key list KMS) and given
encrypted Bloom filters on the key column by ``attach_bloom_filters``. The keys: the dataset's
present keys (one per file) and random absent ones, ``--keys`` in all (default 10,000).

Timed, interleaved (A B C ... A B C ..., ``--repeat`` rounds; min and median printed with the
load average):

* ``api``: a fresh ``KeyAccess`` (cold KEK cache), one ``ProbeValues`` (hashed once), and for each
  file ``ParquetBloomReader(path, keys).probe("key", values)``: footer, keys, filters decrypted,
  every filter probed in one kernel call. Target: <= 100 ms.
* ``cli``: ``secure-bloom probe DIR --column key --values-file F --json --by-value`` in a new
  process (its start-up included), output to a pipe. Target: <= 1 s.
* ``probe-step``: the checks alone, as the API makes them: ``SplitBlockBloomFilter.check_many``
  of one file's filters and the fold into per-value answers (``QueryBatch.answers``), for every
  file (filters already decrypted).
* ``kernel``: the floor of the same checks: ``check_hashes`` of each filter with the same
  hashes. Target: probe-step per check within 2x of kernel per check.

``--baseline-python PYTHON`` also times the ``api`` call once with another interpreter's
installed secure_bloom (e.g. ``/work/main/.venv/bin/python`` before this change: there a list of
values, hashed per file, one object per answer), in a process of its own.

The targets table of issue 29 (:mod:`benchmarks.targets`, the format ``bench-lookup`` prints)
ends the output, with the load average.

Usage: python -m benchmarks bench-probe [--files 50] [--row-groups 5] [--keys 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, ProbeValues
from benchmarks.bench_lookup import generate_dataset
from benchmarks.targets import at_most, targets_table

_BASELINE = r"""
import sys, time
from pathlib import Path
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
key_list, root, values_file = sys.argv[1:4]
values = Path(values_file).read_text().split("\n")[:-1]
start = time.perf_counter()
keys = KeyAccess(kms=KeyListKms(key_list))
for path in sorted(Path(root).iterdir()):
    with ParquetBloomReader(path, keys) as reader:
        reader.probe("key", values)
print(time.perf_counter() - start)
"""


def _api(data: dict[str, Any], files: list[Path], values: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of the probe through the API."""
    start, cpu = time.perf_counter(), time.process_time()
    keys = KeyAccess(kms=data["kms"])
    prepared = ProbeValues(values)
    for path in files:
        with ParquetBloomReader(path, keys) as reader:
            reader.probe("key", prepared)
    return time.perf_counter() - start, time.process_time() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli(root: Path, values_file: Path, key_file: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of the probe through the CLI, its process start-up included."""
    sibling = Path(sys.executable).with_name("secure-bloom")  # the venv's, when it is not on PATH
    exe = shutil.which("secure-bloom") or (str(sibling) if sibling.is_file() else None)
    command = [exe] if exe else [sys.executable, "-m", "secure_bloom.cli"]
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([*command, "probe", str(root), "--column", "key", "--values-file", str(values_file), "--json",
                           "--by-value", "--key-list-file", str(key_file)], capture_output=True, timeout=600)
    elapsed = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"secure-bloom probe failed: {done.stderr.decode(errors='replace')[-400:]}")
    return elapsed


def _filters(data: dict[str, Any], files: list[Path]) -> list[list[SplitBlockBloomFilter]]:
    keys = KeyAccess(kms=data["kms"])
    out = []
    for path in files:
        with ParquetBloomReader(path, keys) as reader:
            out.append([bf for _, bf in reader.iter_filters("key") if bf is not None])
    return out


def _probe_step(filters: list[list[SplitBlockBloomFilter]], batch: Any) -> float:
    start = time.perf_counter()
    for file_filters in filters:
        batch.answers(SplitBlockBloomFilter.check_many(file_filters, batch.hashes))
    return time.perf_counter() - start


def _kernel(filters: list[list[SplitBlockBloomFilter]], hashes: np.ndarray) -> float:
    start = time.perf_counter()
    for file_filters in filters:
        for bf in file_filters:
            bf.check_hashes(hashes)
    return time.perf_counter() - start


def _line(name: str, runs: list[float], checks: int, note: str = "", cpu: list[float] | None = None) -> str:
    best, median = min(runs), statistics.median(runs)
    used = f"{min(cpu) * 1e3:>9.1f} ms" if cpu else f"{'':>12}"
    return (f"{name:<12} {best * 1e3:>9.1f} ms {median * 1e3:>9.1f} ms {used} {best / checks * 1e9:>9.1f} ns"
            f"   {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--row-groups", type=int, default=5)
    parser.add_argument("--size-mb", type=float, default=20.0, help="dataset size on disk (default 20 MB)")
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline-python", help="also time the api once with this interpreter's secure_bloom")
    parser.add_argument("--workdir", help="where to write the dataset (default: a temporary folder)")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="sb-probe-", dir=args.workdir))
    try:
        data = generate_dataset(root, args.size_mb, args.files, args.row_groups, plaintext=False)
        files = sorted(data["encrypted"].iterdir())
        rng = np.random.default_rng(29)
        present = list(data["present"])
        values = present + [f"{a:016x}{b:016x}" for a, b in rng.integers(0, 2**63, size=(args.keys - len(present), 2))]
        values_file = root / "values.txt"
        values_file.write_text("".join(v + "\n" for v in values))
        key_file = root / "keys.txt"
        key_file.write_text(data["key_list"] + "\n")
        os.chmod(key_file, 0o600)
        # An installed package has its bytecode; a source checkout under PYTHONDONTWRITEBYTECODE=1 would
        # compile every module at each CLI start (about 0.5 s): compile them once, as pip does.
        import compileall

        import secure_bloom

        compileall.compile_dir(os.path.dirname(secure_bloom.__file__), quiet=1)
        filters = _filters(data, files)
        checks = sum(len(f) for f in filters) * len(values)
        with ParquetBloomReader(files[0], KeyAccess(kms=KeyListKms(data["key_list"]))) as reader:
            batch = ProbeValues(values).batch(reader.column("key"))
        hash_runs = []
        runs: dict[str, list[float]] = {"api": [], "cli": [], "probe-step": [], "kernel": []}
        cpu: dict[str, list[float]] = {"api": [], "cli": []}
        for _ in range(args.repeat):
            for name, run in (("api", lambda: _api(data, files, values)),
                              ("cli", lambda: _cli(data["encrypted"], values_file, key_file))):
                wall, used = run()
                runs[name].append(wall)
                cpu[name].append(used)
            runs["probe-step"].append(_probe_step(filters, batch))
            runs["kernel"].append(_kernel(filters, batch.hashes))
            start = time.perf_counter()
            ProbeValues(values).batch(reader.column("key"))
            hash_runs.append(time.perf_counter() - start)
        baseline = None
        if args.baseline_python:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            done = subprocess.run([args.baseline_python, "-I", "-c", _BASELINE, data["key_list"], str(data["encrypted"]),
                                   str(values_file)], capture_output=True, text=True, env=env, timeout=3600, cwd=root)
            baseline = float(done.stdout.split()[-1]) if done.returncode == 0 else None
            if baseline is None:
                print(f"(baseline failed: {done.stderr[-300:]})", file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"load average {os.getloadavg()[0]:.1f}; {len(files)} files x {args.row_groups} row groups "
          f"({sum(len(f) for f in filters)} encrypted filters), {len(values)} keys ({len(present)} present): "
          f"{checks:,} filter checks; {args.repeat} interleaved rounds")
    print(f"{'':<12} {'min':>12} {'median':>12} {'CPU min':>12} {'per check':>12}   (wall clock; CPU: the process's)")
    ratio = min(runs["probe-step"]) / min(runs["kernel"])
    print(_line("api", runs["api"], checks, "", cpu["api"]))
    print(_line("cli", runs["cli"], checks, "", cpu["cli"]))
    print(_line("probe-step", runs["probe-step"], checks, f"{ratio:.2f}x kernel"))
    print(_line("kernel", runs["kernel"], checks, "check_hashes of each filter, the same hashes"))
    print(_line("hash once", hash_runs, checks, f"query_batch of {len(values)} keys (inside api)"))
    if baseline is not None:
        print(f"{'baseline':<12} {baseline * 1e3:>9.1f} ms (one run, {args.baseline_python}): "
              f"api is {baseline / min(runs['api']):.0f}x faster")
    what = f"{len(values):,} keys over {len(files)} files x {args.row_groups} row groups"
    print()
    print("\n".join(targets_table([
        at_most(f"probe of {what}, API (min)", 1e3 * min(runs["api"]), 100, "ms",
                note=f"median {1e3 * statistics.median(runs['api']):.1f} ms"),
        at_most(f"probe of {what}, CLI --json, start-up included (min)", min(runs["cli"]), 1, "s",
                note=f"median {statistics.median(runs['cli']):.2f} s"),
        at_most("probe-step per check / kernel check_hashes per check", ratio, 2,
                note=f"{min(runs['probe-step']) / checks * 1e9:.1f} vs {min(runs['kernel']) / checks * 1e9:.1f} ns")])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
