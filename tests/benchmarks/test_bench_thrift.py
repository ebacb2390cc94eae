"""``python -m benchmarks bench-thrift``: prints the decoder in use and, per footer, the
parse time of both decoders and their ratio (figures only; no timing is asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks import bench_thrift
from support.paths import VECTORS_DIR
from support.thrift_backends import require_native_thrift


@pytest.mark.native
def test_bench_prints_both_decoders_per_footer(capsys: pytest.CaptureFixture[str]) -> None:
    require_native_thrift()
    path = VECTORS_DIR / "data_index_bloom_encoding_stats.parquet"
    assert bench_thrift.main([str(path), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "backend: native" in out
    row = re.search(r"footer=data_index_bloom_encoding_stats.parquet  bytes=(\d+)  python_us=([\d.]+)  "
                    r"native_us=([\d.]+)  speedup=([\d.]+)", out)
    assert row is not None, out
    assert int(row[1]) == 403 and float(row[2]) > 0 and float(row[3]) > 0


def test_bench_refuses_a_file_without_a_plaintext_footer() -> None:
    encrypted = VECTORS_DIR / "uniform_encryption.parquet.encrypted"
    with pytest.raises(ValueError, match="not a Parquet file with a plaintext footer"):
        bench_thrift.main([str(encrypted)])
