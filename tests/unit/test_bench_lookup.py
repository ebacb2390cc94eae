"""bench-lookup runs end to end on a tiny dataset (figures are not asserted: only the answers)."""

from __future__ import annotations


import pytest

from secure_bloom.cli import main
from support.cli_json import cli_result


def test_bench_lookup_tiny(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench-lookup", "--size-mb", "1", "--files", "2", "--lookups", "2",
                 "--engines", "ours,ours-warm,pyarrow,duckdb", "--json"])
    assert code == 0
    result = cli_result(capsys.readouterr().out, "bench-lookup")
    assert result["dataset"]["files"] == 2
    for engine in ("ours", "ours-warm", "pyarrow", "duckdb"):
        figures = result["engines"][engine]
        assert figures["present"]["rows"] == [1, 1]  # every engine finds the present keys
        assert figures["absent"]["rows"] == [0, 0]
    assert figures["absent"]["median_rchar"] is not None
    assert set(result["ratios"]) >= {"absent_speedup_vs_pyarrow", "absent_bytes_vs_pyarrow_pct",
                                     "warm_absent_speedup_vs_pyarrow", "warm_absent_speedup_vs_ours"}
    warm, cold = (result["engines"][e]["absent"]["median_bytes"] for e in ("ours-warm", "ours"))
    assert warm < cold  # the filters come from the cache (pyarrow still reads a footer for the schema)
