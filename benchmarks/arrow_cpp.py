"""Arrow C++'s own ``BlockSplitBloomFilter`` as a benchmark peer (the Arrow C++ column of
``python -m benchmarks bench``).

pyarrow exposes no Bloom filter API, but its wheel ships Arrow C++'s ``libparquet`` and headers:
:func:`arrow_bench_binary` compiles ``cpp/arrow_bloom_bench.cc`` against them with g++ (``-O2``,
as a release build of a consumer would; cached by the source's and pyarrow's content under
:func:`~secure_bloom.spark.jvm.cache_root`), and :func:`arrow_bloom_bench` runs it on a values file
(the format parquet-java's ``BloomBench`` reads), giving Arrow's ns/value for its bulk ``Hashes``,
``Hashes`` + ``InsertHashes`` and ``Hashes`` + ``FindHash``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

from secure_bloom.spark.jvm import cache_root

__all__ = ["ArrowBenchUnavailable", "arrow_bench_binary", "arrow_bloom_bench"]

SOURCE = Path(__file__).parent / "cpp" / "arrow_bloom_bench.cc"


class ArrowBenchUnavailable(Exception):
    """The Arrow C++ peer cannot run here (no g++, no libparquet in the pyarrow wheel, a failed
    build): the benchmark shows the reason instead of the column (a benchmark note, not a
    library error)."""


def _libraries(libdir: Path) -> list[str]:
    libs = [f"-l:{p.name}" for name in ("libparquet", "libarrow") for p in sorted(libdir.glob(f"{name}.so.*"))[:1]]
    if len(libs) != 2:
        raise ArrowBenchUnavailable(f"the pyarrow wheel ships no libparquet / libarrow in {libdir}")
    return libs


def arrow_bench_binary(cache_dir: Path | None = None) -> Path:
    """The compiled peer, built on first use (under a temporary name, renamed into place)."""
    import pyarrow as pa

    compiler = shutil.which("g++")
    if compiler is None:
        raise ArrowBenchUnavailable("no g++ to build the Arrow C++ peer (apt-get install g++)")
    libdir = Path(pa.__file__).parent
    libs = _libraries(libdir)
    digest = hashlib.sha256(SOURCE.read_bytes() + pa.__version__.encode() + str(libdir).encode()).hexdigest()[:16]
    out_dir = Path(cache_dir) if cache_dir is not None else cache_root() / "bin"
    final = out_dir / f"arrow_bloom_bench-{digest}"
    if final.is_file():
        return final
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".arrow_bloom_bench-", dir=out_dir)
    os.close(fd)
    try:
        build = subprocess.run([compiler, "-std=c++20", "-O2", f"-I{pa.get_include()}", str(SOURCE), "-o", tmp,
                                f"-L{libdir}", *libs, f"-Wl,-rpath,{libdir}"],
                               capture_output=True, text=True, timeout=600, check=False)
        if build.returncode != 0:
            raise ArrowBenchUnavailable(f"the Arrow C++ peer did not build: {build.stderr.strip()[-2000:]}")
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return final


def arrow_bloom_bench(kind: Literal["int64", "string"], path: str, *, num_bytes: int, warmup: int = 2,
                      reps: int = 3, timeout: float = 900) -> dict[str, Any]:
    """Arrow C++'s figures on the values file ``path`` (``kind`` as BloomBench reads it)."""
    exe = arrow_bench_binary()
    run = subprocess.run([str(exe), kind, path, str(num_bytes), str(warmup), str(reps)],
                         capture_output=True, text=True, timeout=timeout, check=False)
    if run.returncode != 0:
        raise ArrowBenchUnavailable(f"the Arrow C++ peer failed: {run.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(run.stdout)
    return result
