"""bench-lookup runs end to end on a tiny dataset (figures are not asserted, only the answers, that
every figure is finite and positive, and that the targets table has every target's line)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag

from benchmarks.__main__ import main
from benchmarks.bench_lookup import generate_dataset
from benchmarks.floor import Floor, batched_byte_work, plan_file
from secure_bloom.crypto.gcm import NATIVE_GCM
from secure_bloom.kms.material import KeyMetadata
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, read_table
from support.cli_json import cli_result

ENGINES = "ours,ours-warm,floor,pyarrow,duckdb,duckdb-warm,datafusion"
#: The targets of issue 29 every run's table has a line for (per workload where it says so).
PER_WORKLOAD = ["cold absent, {w}: ours / physical floor", "cold absent, {w}: ours / DuckDB (plaintext copy)",
                "cold absent, {w}: ours / DataFusion (plaintext copy)", "cold present, {w}: ours / physical floor",
                "cold present, {w}: ours / DuckDB (plaintext copy)",
                "cold present, {w}: ours / DataFusion (plaintext copy)", "warm absent, {w}: DuckDB warm / ours warm",
                "warm present, {w}: DuckDB warm / ours warm"]
ONCE = ["threads: 2 threads' cold lookups / 1 thread's (throughput)",
        "linear: prune per file, 3 files / 2 files (own KEKs)", "20-row-group file: prune per row group beyond the floor",
        "300-row-group footer: ours / pyarrow read_metadata",
        "object store, absent: pruning requests per file, ours (moto S3, 2 files)",
        "object store, present: pruning requests per file, ours (moto S3, 2 files)"]
TINY = ["--size-mb", "1", "--files", "2", "--lookups", "2", "--small-files", "3", "--small-size-mb", "0.5",
        "--scale", "2,3", "--row-groups", "20", "--footer-row-groups", "300", "--s3-files", "2", "--engines", ENGINES]


def _expected_targets() -> list[str]:
    workloads = ["2 files x 5 row groups", "3 files x 1 row group"]
    return [line.format(w=w) for w in workloads for line in PER_WORKLOAD] + ONCE


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


def test_bench_lookup_tiny(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench-lookup", *TINY, "--json"]) == 0
    result = cli_result(capsys.readouterr().out, "bench-lookup")
    assert result["dataset"]["files"] == 2
    for workload in (result, result["small_files"]):
        for engine, figures in workload["engines"].items():
            for label, found in (("present", 1), ("absent", 0)):
                f = figures[label]
                assert all(_positive(f[k]) for k in ("min_s", "median_s", "min_cpu_s", "median_cpu_s")), (engine, f)
                assert f["min_s"] <= f["median_s"]
                if engine != "floor":
                    assert f["rows"] == [found, found], engine  # every engine finds the present keys, only them
        assert {"ours", "ours-warm", "floor", "pyarrow", "duckdb", "duckdb-warm"} <= set(workload["engines"])
        warm, cold = (workload["engines"][e]["absent"]["bytes"] for e in ("ours-warm", "ours"))
        assert warm < cold  # the filters and the dataset's discovery come from the cache
    small = result["small_files"]
    assert small["dataset"]["files"] == 3 and small["dataset"]["row_groups"] == 3
    costs = [result["prune"], small["prune"], *result["scaling"]]
    assert [(c["files"], c["row_groups"]) for c in costs] == [(2, 5), (3, 1), (2, 1), (3, 1)]
    assert all(_positive(c[k]) for c in costs for k in ("prune_s", "floor_s", "io_floor_s", "prune_us_per_file"))
    assert result["threads"]["lookups"] == 2 and _positive(result["threads"]["throughput_ratio"])
    assert result["many_row_groups"]["row_groups"] == 20 and _positive(result["many_row_groups"]["many_prune_s"])
    assert result["footer_parse"]["row_groups"] == 300 and _positive(result["footer_parse"]["ratio"])
    s3 = result["object_store"]
    assert s3["ours_present"]["rows"] == s3["pyarrow_present"]["rows"] == 1
    assert s3["ours_absent"]["rows"] == 0 and s3["ours_absent"]["pruning_requests_max"] >= 2  # a HEAD and a tail read
    assert s3["ours_absent"]["requests_per_file"] >= s3["ours_absent"]["pruning_requests_max"]
    targets = {t["target"]: t for t in result["targets"]}
    assert list(targets) == _expected_targets()
    for name, t in targets.items():
        if t["verdict"] == "not run":
            assert "DataFusion" in name and t["note"]  # the optional peer only, and why
        else:
            assert _positive(t["figure"]) and t["verdict"] in ("met", "NOT met"), t


def test_bench_lookup_prints_the_targets_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench-lookup", *TINY]) == 0
    out = capsys.readouterr().out
    assert "| 2 files x 5 row groups, absent | floor |" in out and "| 3 files x 1 row group, present | ours |" in out
    assert "| target | measured | goal | verdict | note |" in out
    rows = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines() if line.startswith("| ")}
    for name in _expected_targets():
        assert name in rows, name
        assert rows[name].count(" | ") == 4 and (" met |" in rows[name] or "not run" in rows[name])
    assert "per file beyond floor" in out and "each row group consulted after a file's first" in out
    assert out.rstrip().splitlines()[-1].startswith("load average")


def test_generation_in_several_processes(tmp_path: Path) -> None:
    """What --scale 10000 relies on: files written by worker processes, each file once, every
    present key found, no plaintext copies when none are asked for, each file with KEKs of its own."""
    data = generate_dataset(tmp_path, 0.05, 7, 1, workers=2, plaintext=False, files_per_task=3)
    names = sorted(p.name for p in data["encrypted"].iterdir())
    assert names == [f"part-{i:05d}.parquet" for i in range(7)]
    assert not any(data["plaintext"].iterdir())
    keys = KeyAccess(kms=data["kms"])
    found = read_table(data["encrypted"], filters=[("key", "in", data["present"])], keys=keys)
    assert sorted(found["key"].to_pylist()) == sorted(data["present"])
    keks = set()
    for path in data["encrypted"].iterdir():
        with ParquetBloomReader(path, keys) as reader:
            for kmd in (reader.footer.footer_key_metadata, reader.column_chunks("key")[0].key_metadata):
                material = KeyMetadata.from_bytes(kmd).material
                assert material is not None
                keks.add(material.kek_id)
    assert len(keks) == 2 * 7


def test_the_floor_reads_and_authenticates_what_the_reader_reads(tmp_path: Path) -> None:
    """The floor's plan reads the reader's ranges and opens every module it lists (the tags are
    checked: a wrong AAD fails), plus the data of the row groups asked for."""
    data = generate_dataset(tmp_path, 0.3, 2, 3, plaintext=False)
    keys = KeyAccess(kms=data["kms"])
    paths = sorted(str(p) for p in data["encrypted"].iterdir())
    plans = [plan_file(p, keys, "key") for p in paths]
    for path, plan in zip(paths, plans):
        with ParquetBloomReader(path, keys) as reader:
            for rg in range(reader.num_row_groups):
                reader.bloom_filter(rg, "key")
            assert [tuple(r) for r in reader.read_ranges] == plan.reads
        assert len(plan.modules) == 1 + 2 * 3 and len(plan.metadata) == 3 and len(plan.unwraps) == 2
        assert all(len(plan.row_groups[rg][1]) >= 2 for rg in range(3))  # the key column's page modules
    floor = Floor(plans, data["kms"])
    metadata = sum(n for plan in plans for _, n in plan.reads)
    assert floor.run() == metadata
    with_data = floor.run([[0], [1, 2]])
    assert with_data == metadata + sum(n for plan, rgs in zip(plans, [[0], [1, 2]]) for rg in rgs
                                       for _, n in plan.row_groups[rg][0])
    batched = batched_byte_work(plans[0], data["kms"])  # the same modules, opened in native batches
    if NATIVE_GCM:
        assert batched is not None
        batched()
    else:
        assert batched is None
    plans[1].modules[-1].aad = plans[1].modules[-2].aad  # the bitset opened with the header's AAD
    assert batched_byte_work(plans[1], data["kms"]) is None  # a tag fails: no figure of it
    with pytest.raises(InvalidTag):
        floor.run()
