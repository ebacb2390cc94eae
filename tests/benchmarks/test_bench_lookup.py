"""bench-lookup runs end to end on a tiny dataset (figures are not asserted: only the answers)."""

from __future__ import annotations


from pathlib import Path

import pytest

from benchmarks.__main__ import main
from secure_bloom.parquet import KeyAccess, read_table
from benchmarks.bench_lookup import generate_dataset
from support.cli_json import cli_result


def test_bench_lookup_tiny(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench-lookup", "--size-mb", "1", "--files", "2", "--lookups", "2", "--small-files", "3",
                 "--small-size-mb", "0.5", "--scale", "2", "--engines", "ours,ours-warm,pyarrow,duckdb", "--json"])
    assert code == 0
    result = cli_result(capsys.readouterr().out, "bench-lookup")
    assert result["dataset"]["files"] == 2
    for engine in ("ours", "ours-warm", "pyarrow", "duckdb"):
        figures = result["engines"][engine]
        assert figures["present"]["rows"] == [1, 1]  # every engine finds the present keys
        assert figures["absent"]["rows"] == [0, 0]
    assert figures["absent"]["median_rchar"] is not None
    assert all(result["engines"][e]["absent"]["median_cpu_s"] > 0 for e in ("ours", "ours-warm", "pyarrow"))
    assert set(result["ratios"]) >= {"absent_speedup_vs_pyarrow", "absent_bytes_vs_pyarrow_pct",
                                     "warm_absent_speedup_vs_pyarrow", "warm_absent_speedup_vs_ours"}
    warm, cold = (result["engines"][e]["absent"]["median_bytes"] for e in ("ours-warm", "ours"))
    assert warm < cold  # the filters and the dataset's discovery come from the cache
    small = result["small_files"]
    assert small["dataset"]["files"] == 3 and small["dataset"]["row_groups"] == 3
    assert small["engines"]["ours"]["absent"]["rows"] == [0, 0]
    costs = [result["prune"], small["prune"], *result["scaling"]]
    assert [(c["files"], c["row_groups"]) for c in costs] == [(2, 5), (3, 1), (2, 1)]
    assert all(c["fast_s"] > 0 and c["reference_s"] > 0 and c["io_floor_s"] > 0 for c in costs)
    assert result["scaling"][0]["warm_lookup_s"] > 0 and result["scaling"][0]["generated_s"] >= 0
    assert set(result["load_average"]) == {"before", "after"}


def test_bench_lookup_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench-lookup", "--size-mb", "0.5", "--files", "2", "--lookups", "1", "--small-files", "2",
                 "--small-size-mb", "0.3", "--scale", "", "--engines", "ours,ours-warm,pyarrow,duckdb"])
    assert code == 0
    out = capsys.readouterr().out
    assert "| 2 files x 5 row groups, absent |" in out and "| 2 small files x 1 row group, present |" in out
    assert "ms (CPU " in out  # CPU times next to the wall times of the lookups
    assert "beyond I/O per file" in out and "each row group consulted after a file's first" in out
    assert "load average: before" in out


def test_generation_in_several_processes(tmp_path: Path) -> None:
    """What --scale 10000 relies on: files written by worker processes, each file once, every
    present key found, no plaintext copies when none are asked for."""
    data = generate_dataset(tmp_path, 0.05, 7, 1, workers=2, plaintext=False, files_per_task=3)
    names = sorted(p.name for p in data["encrypted"].iterdir())
    assert names == [f"part-{i:05d}.parquet" for i in range(7)]
    assert not any(data["plaintext"].iterdir())
    keys = KeyAccess(kms=data["kms"])
    found = read_table(data["encrypted"], filters=[("key", "in", data["present"])], keys=keys)
    assert sorted(found["key"].to_pylist()) == sorted(data["present"])
