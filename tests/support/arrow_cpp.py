"""Arrow C++'s own reader as a judge of our Bloom filters (issue 11: "Arrow C++ must read").

pyarrow exposes no Bloom filter API, but its wheel ships Arrow C++'s ``libparquet`` and headers:
:func:`arrow_bloom_check` compiles ``arrow_bloom_check.cc`` (next to this file) against them once
per session, and runs it on a file. The harness reads every column chunk's values with Arrow C++'s
typed column readers (it decrypts and decodes the pages itself), hashes each with the filter's own
``Hash()`` and asks ``FindHash()``: no value passes through our Python code. Data keys go to it on
stdin, never on the command line.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa

from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from support.components import missing

__all__ = ["build_harness", "arrow_bloom_check", "data_keys", "results"]

SOURCE = Path(__file__).resolve().parent / "arrow_bloom_check.cc"
_built: dict[str, Path] = {}


def build_harness(workdir: Path) -> Path:
    """The compiled harness (built on first use with g++ against pyarrow's own Arrow C++)."""
    if "exe" in _built:
        return _built["exe"]
    compiler = shutil.which("g++")
    if compiler is None:
        missing("arrow_cpp", "no g++ to build the Arrow C++ harness (apt-get install g++)")
    libdir = Path(pa.__file__).parent
    libs = [f"-l:{p.name}" for name in ("libparquet", "libarrow") for p in sorted(libdir.glob(f"{name}.so.*"))[:1]]
    if len(libs) != 2:
        missing("arrow_cpp", f"pyarrow ships no libparquet/libarrow in {libdir}")
    exe = workdir / "arrow_bloom_check"
    build = subprocess.run([compiler, "-std=c++20", "-O1", f"-I{pa.get_include()}", str(SOURCE), "-o", str(exe),
                            f"-L{libdir}", *libs, f"-Wl,-rpath,{libdir}"], capture_output=True, text=True, timeout=600)
    if build.returncode != 0:
        raise AssertionError(f"the Arrow C++ harness did not build:\n{build.stderr[-4000:]}")
    _built["exe"] = exe
    return exe


def data_keys(path: Path, keys: KeyAccess | None) -> str:
    """The harness's stdin: the file's footer key and each encrypted column's data key, unwrapped
    through our reader (the KMS part; Arrow C++ then decrypts everything itself)."""
    if keys is None:
        return ""
    lines = []
    with ParquetBloomReader(path, keys) as reader:
        if reader.footer.encrypted and reader.footer.footer_key is not None:
            lines.append(f"footer {reader.footer.footer_key.hex()}")
        for ordinal in range(len(reader.columns)):
            chunk = reader.chunk(0, ordinal)
            if chunk.encrypted:
                lines.append(f"column {chunk.column.path} {reader.key_for(chunk).hex()}")
    return "\n".join(lines) + "\n"


def arrow_bloom_check(exe: Path, path: Path, stdin: str) -> subprocess.CompletedProcess[str]:
    """Run the harness on ``path``; its stdout is one JSON line per (row group, column)."""
    return subprocess.run([str(exe), str(path)], input=stdin, capture_output=True, text=True, timeout=600)


def results(run: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The harness's per-chunk answers (asserting it succeeded)."""
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
