"""bench-write and bench-probe run end to end on tiny workloads (figures are not asserted: only
that they are finite and positive, that the spread and the targets table are printed)."""

from __future__ import annotations

import math

import pytest

from benchmarks.__main__ import main
from support.cli_json import cli_result


def test_bench_write_interleaves_and_reports_the_spread(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench-write", "--rows", "3000", "--row-group-size", "1000", "--repeat", "2", "--no-spark"]
    assert main([*args, "--json"]) == 0
    result = cli_result(capsys.readouterr().out, "bench-write")
    f, r = result["figures"], result["ratios"]
    for name in ("a_pyarrow", "b_ours", "d_pyarrow_attach"):
        low, mid, high = f[f"{name}_s"], f[f"{name}_median_s"], f[f"{name}_max_s"]
        assert math.isfinite(high) and 0 < low <= mid <= high, name
    assert r["ours_vs_pyarrow_round_min"] <= r["ours_vs_pyarrow_round_max"]
    assert result["repeat"] == 2 and math.isfinite(result["load_1min"])
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "interleaved, 2 rounds: min / median / max wall" in out
    assert "of the minima" in out and "of the medians; per round" in out and "(target <= 1.25: " in out


def test_bench_probe_prints_the_targets_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench-probe", "--files", "2", "--row-groups", "2", "--keys", "40", "--repeat", "1",
                 "--size-mb", "0.2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "| target | measured | goal | verdict | note |" in lines
    rows = [line for line in lines if line.startswith("| probe") or line.startswith("| probe-step")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| probe of 40 keys over 2 files x 2 row groups, API (min)",
        "| probe of 40 keys over 2 files x 2 row groups, CLI --json, start-up included (min)",
        "| probe-step per check / kernel check_hashes per check"]
    for row in rows:
        figure = float(row.split(" | ")[1].split()[0].rstrip("x"))
        assert math.isfinite(figure) and figure > 0 and (" met |" in row)
    assert lines[-1].startswith("load average")
