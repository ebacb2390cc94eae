"""CPU per file of unwrapping the keys of N files that each have their own KEKs (issue 29).

Each file is written by its own ``FileKeyWrapper`` (as each ``write_table`` call, Spark job or
CryptoFactory makes its own), so each has its own KEK per master key: a footer key and a column
key, double-wrapped, 2 KEKs per file. A fresh ``KeyUnwrapper`` (cold KEK cache) then unwraps the
two keys of every file: 2 KEK-cache misses per file. The KMS is a local key list (no network),
so the figure is the library's own CPU.

Peers in the same run, interleaved (A B A B ...): the current ``ExpiringCache`` and the one of
``--baseline-ref`` (default: 26daffa, the last commit whose cache scanned every entry on every
miss), loaded from git and put in the unwrapper's place. Prints per-file CPU (min and median of
``--repeat`` runs), the ratio before / after, and each one's growth from the smallest N.

Usage: python benchmarks/kek_cache.py [--files 10 300 2000] [--repeat 5] [--baseline-ref REF]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

from secure_bloom.kms import FileKeyWrapper, KeyListKms, KeyUnwrapper
from secure_bloom.kms import unwrapper as unwrapper_module

MASTER_KEYS = {"footer_master": bytes(range(16)), "column_master": bytes(range(16, 32))}


def _baseline_cache(ref: str) -> Any:
    """``ExpiringCache`` of ``secure_bloom/kms/cache.py`` at git ``ref`` (None without git)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        source = subprocess.run(["git", "-C", root, "show", f"{ref}:secure_bloom/kms/cache.py"], check=True,
                                capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    module = types.ModuleType("baseline_cache")
    exec(compile(source, f"{ref}:secure_bloom/kms/cache.py", "exec"), module.__dict__)
    return module.ExpiringCache


@contextlib.contextmanager
def _cache_class(cls: Any) -> Iterator[None]:
    """Unwrappers made inside use ``cls`` for their KEK and client caches."""
    saved = unwrapper_module.ExpiringCache
    unwrapper_module.ExpiringCache = cls
    try:
        yield
    finally:
        unwrapper_module.ExpiringCache = saved


def _key_metadata(n: int) -> list[bytes]:
    """Footer and column key metadata of ``n`` files, each file with its own wrapper (KEKs)."""
    kms = KeyListKms(MASTER_KEYS)
    blobs = []
    for _ in range(n):
        wrapper = FileKeyWrapper(kms)
        blobs.append(wrapper.footer_key("footer_master").key_metadata)
        blobs.append(wrapper.column_key("column_master").key_metadata)
    return blobs


def _cpu_per_file(cls: Any, blobs: list[bytes]) -> float:
    """CPU seconds per file of a cold unwrap of every blob (2 per file)."""
    kms = KeyListKms(MASTER_KEYS)
    with _cache_class(cls):
        unwrapper = KeyUnwrapper(kms)
    start = time.process_time()
    for blob in blobs:
        unwrapper.unwrap(blob)
    return (time.process_time() - start) / (len(blobs) // 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, nargs="+", default=[10, 300, 2000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline-ref", default="26daffa")
    args = parser.parse_args(argv)
    peers: dict[str, Any] = {"after": unwrapper_module.ExpiringCache}
    baseline = _baseline_cache(args.baseline_ref)
    if baseline is not None:
        peers = {"before": baseline, **peers}
    else:
        print(f"(no baseline: git show {args.baseline_ref} failed)", file=sys.stderr)
    print(f"load average {os.getloadavg()[0]:.1f}; CPU per file (2 KEK-cache misses each), "
          f"min / median of {args.repeat} interleaved runs")
    print(f"{'files':>6} " + " ".join(f"{name + ' min':>12} {name + ' med':>12}" for name in peers)
          + ("   before/after" if len(peers) == 2 else ""))
    first: dict[str, float] = {}
    for n in args.files:
        blobs = _key_metadata(n)
        runs: dict[str, list[float]] = {name: [] for name in peers}
        for _ in range(args.repeat):
            for name, cls in peers.items():
                runs[name].append(_cpu_per_file(cls, blobs))
        mins = {name: min(r) for name, r in runs.items()}
        line = f"{n:>6} " + " ".join(f"{mins[name] * 1e6:>9.1f} us {statistics.median(r) * 1e6:>9.1f} us"
                                     for name, r in runs.items())
        if len(peers) == 2:
            line += f"   {mins['before'] / mins['after']:>6.2f}x"
        for name in peers:
            first.setdefault(name, mins[name])
        line += "   growth from the first N: " + ", ".join(f"{name} {mins[name] / first[name]:.2f}x" for name in peers)
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
