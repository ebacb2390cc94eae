"""The benchmark command runs end to end on a tiny workload (figures are not asserted, only that
it ran, verified its filters and reported the fields the CLI and the README rely on)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from secure_bloom import kernels
from benchmarks import bench, bench_attach
from support.cli_json import cli_result


def test_run_benchmarks_small_without_java() -> None:
    result = bench.run_benchmarks(3000, repeat=1, scalar_sample=400, num_bytes=4096, java=False, arrow=False)
    assert result["scalar_sample"] == 400 and result["n"] == 3000
    assert [(w["kind"], w["input"]) for w in result["workloads"]] == [
        ("int64", "numpy int64 array"), ("string", "pyarrow string array"), ("string", "Python list of str")]
    expected = {"numpy_equals_scalar": True, "all_values_found": True, "parquet_java_found_all": None,
                "arrow_cpp_found_all": None, "encrypt_round_trip": True}
    if kernels.BACKEND == "native":
        expected["native_equals_scalar"] = True
    assert result["verified"] == expected
    for w in result["workloads"]:
        assert w["numpy"]["insert_ns"] > 0 and w["scalar"]["check_ns"] > 0
        assert "numpy_vs_scalar_insert_speedup" in w["ratios"]
        assert ("native" in w) == (kernels.BACKEND == "native")
    assert result["crypto"]["num_bytes"] == 4096 and result["crypto"]["encrypt_mb_s"] > 0
    report = bench.format_report(result)
    assert f"kernel: {kernels.kernel_summary()}" in report
    assert "scalar path timed on a sample of the first 400 values" in report
    assert "numpy filter == scalar filter: yes" in report


def test_main_json_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--n", "500", "--repeat", "1", "--scalar-sample", "100", "--bytes", "1024",
                       "--no-java", "--no-arrow", "--json"]) == 0
    parsed = cli_result(capsys.readouterr().out, "bench")
    assert parsed["verified"]["numpy_equals_scalar"] is True
    assert parsed["num_bytes"] == 1024 and parsed["kernel"]["backend"] == kernels.BACKEND
    for bad in (["--n", "0"], ["--bytes", "1000"], ["--repeat", "x"]):
        with pytest.raises(SystemExit) as info:
            bench.main(bad)
        assert info.value.code == 2


def test_workloads_and_java_value_file_format(tmp_path: object) -> None:
    ints = bench.make_int64_values(1000)
    assert ints.dtype == np.int64 and np.unique(ints).size == 1000
    strings = bench.make_string_values(1000)
    lengths = pa.compute.binary_length(strings).to_numpy()
    assert 20 <= lengths.min() and lengths.max() <= 28
    import io

    out = io.BytesIO()
    bench._write_length_prefixed(out, strings.slice(10, 5))
    raw = out.getvalue()
    pos, got = 0, []
    while pos < len(raw):
        n = int.from_bytes(raw[pos:pos + 4], "little")
        got.append(raw[pos + 4:pos + 4 + n].decode())
        pos += 4 + n
    assert got == strings.slice(10, 5).to_pylist()


@pytest.mark.interop
def test_parquet_java_column_runs() -> None:
    result = bench.run_benchmarks(2000, repeat=1, scalar_sample=200, num_bytes=4096, java=True)
    for w in result["workloads"]:
        assert "skipped" not in w["parquet_java"], w["parquet_java"]
        assert w["parquet_java"]["all_found"] is True
        assert w["parquet_java"]["num_bytes"] == 4096
    assert result["verified"]["parquet_java_found_all"] is True


@pytest.mark.arrow_cpp
def test_arrow_cpp_column_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow C++'s BlockSplitBloomFilter (built with g++ against the pyarrow wheel's libparquet)
    hashes the same values files: it finds every value, and our native hash_values has its own
    "hash" figure beside Arrow's bulk Hashes."""
    import shutil

    if shutil.which("g++") is None:
        from support.components import missing

        missing("arrow_cpp", "no g++ to build the Arrow C++ peer")
    monkeypatch.setenv("SECURE_BLOOM_CACHE", str(tmp_path))
    result = bench.run_benchmarks(2000, repeat=1, scalar_sample=200, num_bytes=4096, java=False, arrow=True)
    for w in result["workloads"]:
        assert "skipped" not in w["arrow_cpp"], w["arrow_cpp"]
        assert w["arrow_cpp"]["all_found"] is True and w["arrow_cpp"]["num_bytes"] == 4096
        assert w["arrow_cpp"]["hash_ns"] > 0
        if kernels.BACKEND == "native":
            assert w["native"]["hash_ns"] > 0 and "native_over_arrow_cpp_hash" in w["ratios"]
    assert result["verified"]["arrow_cpp_found_all"] is True
    assert "Arrow C++" in bench.format_report(result)
    assert list((tmp_path / "bin").glob("arrow_bloom_bench-*"))  # built once into the cache


def test_two_filter_sizes_in_one_run() -> None:
    result = bench.run_benchmarks(1000, repeat=1, scalar_sample=100, num_bytes=[1024, 4096], java=False,
                                  arrow=False)
    assert [(w["num_bytes"], w["input"]) for w in result["workloads"]] == [
        (size, label) for size in (1024, 4096)
        for label in ("numpy int64 array", "pyarrow string array", "Python list of str")]


def test_bench_attach_runs_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The attach benchmark end to end on a tiny file, without Spark: it wrote a real encrypted
    file, attached 3 filters per row group in a fresh process, measured its memory, cleaned up."""
    assert bench_attach.main(["--rows", "3000", "--row-group-rows", "1000", "--no-spark", "--json",
                              "--dir", str(tmp_path)]) == 0
    result = cli_result(capsys.readouterr().out, "bench-attach")
    assert result["rows"] == 3000 and result["source_bytes"] > 3000 * 40
    assert result["pyarrow_read"]["rows"] == 3000
    assert result["attach"]["filters"] == 3 * 3 and result["attach"]["kernel"] == kernels.kernel_summary()
    assert result["attach"]["peak_rss_mb"] >= result["attach"]["baseline_rss_mb"] > 0
    assert set(result["ratios"]) == {"attach_over_pyarrow_read"} and "spark_rewrite" not in result
    assert list(tmp_path.iterdir()) == []
    text = bench_attach.format_report(result)
    assert "attach / pyarrow read = " in text and f"kernel: {kernels.kernel_summary()}" in text
