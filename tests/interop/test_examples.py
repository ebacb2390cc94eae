"""Every example in examples/ runs to completion and prints what it promises."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO_DIR

EXAMPLES = REPO_DIR / "examples"


def _run(name: str, *args: str, timeout: float = 300) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=EXAMPLES.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_filter_basics() -> None:
    out = _run("01_filter_basics.py")
    assert "customer42@example.com may be present: True" in out
    assert "mallory@example.com may be present:    False" in out
    assert "moved to another column -> authentication failed" in out


def test_probe_parquet_java_file() -> None:
    out = _run("02_probe_parquet_java_file.py")
    assert re.search(r'"value": "1999.5",\s*"answer": "maybe"', out)
    assert re.search(r'"value": "-7.0",\s*"answer": "absent"', out)
    assert "bytes read for all of this" in out


def test_attach_to_pyarrow_file(tmp_path: Path) -> None:
    out = _run("03_attach_to_pyarrow_file.py", str(tmp_path))
    assert "attached 5 encrypted filters" in out
    assert "row groups that may hold 313-43-2013: [2]" in out
    assert "audit compliant: True" in out


@pytest.mark.interop
def test_spark_pipeline(tmp_path: Path) -> None:
    out = _run("04_spark_pipeline.py", str(tmp_path), timeout=600)
    assert "has user000042: True" in out
    lines = [ln for ln in out.splitlines() if "user000042@example.com" in ln and "part-00000" in ln]
    assert lines and lines[0].endswith("maybe")


def test_read_by_key_with_polars_and_duckdb() -> None:
    out = _run("05_read_by_key.py")
    assert "[{'email': 'user231141969162@example.com', 'amount': 3655}]" in out
    assert "row groups: 10 total, 0 pruned by statistics, 9 pruned by Bloom filters, 1 read" in out
    assert "│ user231141969162@example.com ┆ 3655   │" in out  # Polars
    assert "[('user231141969162@example.com', 3655)]" in out  # DuckDB
    assert out.count("lookup: ") == 3  # the first fills the PruneCache, the next two are answered from it
    assert "lookup: 1 row(s), 1 row group(s) read, 0 file(s) answered from the cache" in out
    assert "lookup: 0 row(s), 0 row group(s) read, 1 file(s) answered from the cache" in out
    assert "lookup: 1 row(s), 1 row group(s) read, 1 file(s) answered from the cache" in out


def test_polars_and_duckdb_prune_with_their_own_predicates() -> None:
    out = _run("06_polars_duckdb.py")
    pruned = [ln for ln in out.splitlines() if "row groups read: 1 of 8" in ln]
    unpruned = [ln for ln in out.splitlines() if "row groups read: all 8" in ln]
    assert len(pruned) == 4 and len(unpruned) == 2, out
    most = max(int(ln.split()[-3].replace(",", "")) for ln in pruned)
    least = min(int(ln.split()[-3].replace(",", "")) for ln in unpruned)
    assert most * 3 < least, out  # a lookup reads under a third of what pyarrow's own dataset reads
    assert all(" 1 row(s)" in ln for ln in pruned + unpruned)
