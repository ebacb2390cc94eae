"""The README's main job runs to completion (issue 6): `python -m benchmarks demo` on a small table."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.interop


def test_demo_end_to_end(tmp_path, spark, dev_key_list_file, capsys):  # type: ignore[no-untyped-def]
    from benchmarks.demo import main

    out = tmp_path / "demo"
    assert main(["--out", str(out), "--rows", "20000", "--key-list-file", str(dev_key_list_file)]) == 0
    # The narrative alone on stdout (steps, indented results); what the JVM, log4j, py4j and
    # Python warnings print goes to jvm.log under --out.
    narrative = capsys.readouterr().out.splitlines()
    assert narrative[0].startswith("secure_bloom demo:")
    assert [ln for ln in narrative[1:] if ln and not ln.startswith(("== ", "   "))] == []
    assert (out / "jvm.log").is_file()
    report = json.loads((out / "report.json").read_text())
    summary = report["summary"]
    assert summary["present_values_found"] is True
    assert summary["spark_queries_ok"] is True
    assert summary["read_by_key_ok"] is True
    # Pruned reads by ssn (hash-like values: statistics cannot prune): the same rows as the data
    # holds, absent keys read no row group (ruled out by the Bloom filters), present keys few.
    reads = report["read_by_key"]
    assert [r["rows"] for r in reads] == [r["expected_rows"] for r in reads]
    assert all(r["rows"] >= 1 for r in reads if r["kind"] == "present")
    assert all(r["row_groups_read"] == 0 and r["pruned_by_bloom"] >= 1 for r in reads if r["kind"] == "absent")
    assert all(r["row_groups_read"] < r["row_groups"] for r in reads if r["kind"] == "present")
    # DuckDB SQL over the same file (secure_bloom.parquet.duckdb.register): the same rows, pruned alike.
    assert [r["duckdb_rows"] for r in reads] == [r["rows"] for r in reads]
    assert [r["duckdb_row_groups_read"] for r in reads] == [r["row_groups_read"] for r in reads]
    # Cold lookups use no cache (and a fresh KeyAccess): nothing answered from a cache; pyarrow's
    # own scan of the same file returns the same rows, reading more bytes for an absent key.
    assert all(r["cold_cache_hits"] == 0 for r in reads)
    assert [r["pyarrow_rows"] for r in reads] == [r["rows"] for r in reads]
    assert all(r["bytes_read"] < r["pyarrow_bytes_read"] for r in reads if r["kind"] == "absent")
    assert all(r["cold_ms"] > 0 and r["warm_ms"] > 0 and r["pyarrow_ms"] > 0 for r in reads)
    assert report["plot"].endswith("lookups_vs_pyarrow.png") and (out / "lookups_vs_pyarrow.png").stat().st_size > 0
    # Asked again with the warm PruneCache: answered from it, the same rows and row groups.
    assert [r["warm_rows"] for r in reads] == [r["rows"] for r in reads]
    assert [r["warm_row_groups_read"] for r in reads] == [r["row_groups_read"] for r in reads]
    assert all(r["warm_cache_hits"] == 1 for r in reads)
    assert summary["audits_compliant"] is True
    assert summary["parquet_java_finds_present_values"] is True
    # Several row groups, and absent values let a reader skip most of them.
    absent = [p for p in report["probes"] if p["kind"] == "absent"]
    assert all(p["row_groups"] >= 4 for p in report["probes"])
    skipped = sum(p["skipped"] for p in absent)
    assert skipped >= 0.9 * sum(p["row_groups"] for p in absent)
    # Present values are never skipped in the row group that holds them.
    assert all(p["maybe"] for p in report["probes"] if p["kind"] == "present")
    assert "not currently supported" in report["pyarrow_refusal"]
