"""The benchmark command runs end to end on a tiny workload (figures are not asserted, only that
it ran, verified its filters and reported the fields the CLI and the README rely on)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from secure_bloom.tools import bench


def test_run_benchmarks_small_without_java() -> None:
    result = bench.run_benchmarks(3000, repeat=1, scalar_sample=400, num_bytes=4096, java=False)
    assert result["scalar_sample"] == 400 and result["n"] == 3000
    assert [(w["kind"], w["input"]) for w in result["workloads"]] == [
        ("int64", "numpy int64 array"), ("string", "pyarrow string array"), ("string", "Python list of str")]
    assert result["verified"] == {"numpy_equals_scalar": True, "all_values_found": True,
                                  "parquet_java_found_all": None, "encrypt_round_trip": True}
    for w in result["workloads"]:
        assert w["numpy"]["insert_ns"] > 0 and w["scalar"]["check_ns"] > 0
        assert "numpy_vs_scalar_insert_speedup" in w["ratios"]
    assert result["crypto"]["num_bytes"] == 4096 and result["crypto"]["encrypt_mb_s"] > 0
    report = bench.format_report(result)
    assert "scalar path timed on a sample of the first 400 values" in report
    assert "numpy filter == scalar filter: yes" in report


def test_main_json_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--n", "500", "--repeat", "1", "--scalar-sample", "100", "--bytes", "1024",
                       "--no-java", "--json"]) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert parsed["verified"]["numpy_equals_scalar"] is True
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
