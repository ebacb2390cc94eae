"""Dataset-level operations on Spark, one file per task (issue 6)."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def dataset_dir(spark_bloom_files, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The four Spark-written variants side by side in one directory tree."""
    root = tmp_path_factory.mktemp("dataset")
    for name, f in spark_bloom_files.files.items():
        (root / name).mkdir()
        shutil.copy(f.path, root / name / f.path.name)
    return root


@pytest.fixture(scope="module")
def worker_keys(spark_bloom_files):  # type: ignore[no-untyped-def]
    from secure_bloom.spark.dataset import WorkerKeys

    return WorkerKeys(key_list=spark_bloom_files.key_list)


def test_worker_keys_pickle_and_hide_secrets(spark_bloom_files, worker_keys):  # type: ignore[no-untyped-def]
    import base64

    from secure_bloom.kms.key_list import parse_key_list

    assert pickle.loads(pickle.dumps(worker_keys)) == worker_keys
    text = repr(worker_keys)
    for key in parse_key_list(spark_bloom_files.key_list).values():
        assert key.hex() not in text and base64.b64encode(key).decode() not in text
    assert "kc1" in text


def test_probe_dataset_finds_each_value_in_its_row_group(spark, dataset_dir, spark_bloom_files, worker_keys):  # type: ignore[no-untyped-def]
    from secure_bloom.spark.dataset import probe_dataset

    col = spark_bloom_files.columns["s"]
    present = [col.row_groups[g][17] for g in range(len(col.row_groups))]
    absent = list(col.absent[:5])
    rows = probe_dataset(spark, dataset_dir, "s", present + absent, worker_keys)
    files = {r["file"] for r in rows}
    assert len(files) == len(spark_bloom_files.files)
    assert all(r["error"] is None for r in rows)
    for r in rows:
        assert r["has_bloom_filter"] is True and r["encrypted"] is True
        if r["value"] in present:
            # "maybe" in the row group that holds it (other groups: almost surely "absent").
            holder = present.index(r["value"])
            if r["row_group"] == holder:
                assert r["verdict"] == "maybe"
    wrong_groups = sum(1 for r in rows if r["value"] in present and r["row_group"] != present.index(r["value"])
                       and r["verdict"] == "maybe")
    assert wrong_groups <= 2
    absent_maybes = sum(1 for r in rows if r["value"] in absent and r["verdict"] == "maybe")
    assert absent_maybes <= 3


def test_probe_dataset_same_as_local_reader(spark, dataset_dir, spark_bloom_files, worker_keys):  # type: ignore[no-untyped-def]
    from secure_bloom.parquet import ParquetBloomReader
    from secure_bloom.spark.dataset import dataset_files, probe_dataset

    col = spark_bloom_files.columns["i64"]
    values = [col.row_groups[1][3], col.absent[0]]
    df = probe_dataset(spark, dataset_dir, "i64", values, worker_keys, as_dataframe=True)
    got = sorted((r.file, r.row_group, r.value, r.verdict) for r in df.collect())
    want = []
    for path in dataset_files(dataset_dir):
        with ParquetBloomReader(path, keys=worker_keys.key_access()) as reader:
            for rg in reader.probe("i64", values).to_dict()["row_groups"]:
                for answer in rg["values"]:
                    want.append((path, rg["row_group"], answer["value"], answer["answer"]))
    assert got == sorted(want)


def test_probe_dataset_reports_unreadable_files(spark, tmp_path, worker_keys):  # type: ignore[no-untyped-def]
    from secure_bloom.spark.dataset import probe_dataset

    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    rows = probe_dataset(spark, tmp_path, "s", ["x"], worker_keys)
    assert len(rows) == 1 and rows[0]["error"] and "NotParquetError" in rows[0]["error"]
    assert rows[0]["error_kind"] == "NOT_PARQUET"  # the kind from secure_bloom.errors, as audit reports it
    frame = probe_dataset(spark, tmp_path, "s", ["x"], worker_keys, as_dataframe=True)
    assert [(r["error_kind"], r["verdict"]) for r in frame.collect()] == [("NOT_PARQUET", None)]


def test_missing_directory_is_an_error(spark, tmp_path, worker_keys):  # type: ignore[no-untyped-def]
    from secure_bloom.spark.dataset import probe_dataset

    with pytest.raises(FileNotFoundError):
        probe_dataset(spark, tmp_path / "nope", "s", ["x"], worker_keys)


def test_audit_dataset(spark, dataset_dir, spark_bloom_files, worker_keys):  # type: ignore[no-untyped-def]
    from secure_bloom.spark.dataset import audit_dataset

    results = audit_dataset(spark, dataset_dir, ["s", "i64"], worker_keys)
    assert len(results) == len(spark_bloom_files.files)
    assert all(r["compliant"] for r in results), results
    # "pub" is stored unencrypted: declaring it sensitive is a violation in every file.
    results = audit_dataset(spark, dataset_dir, ["pub"], worker_keys)
    assert not any(r["compliant"] for r in results)


def test_attach_dataset_on_pyarrow_files(spark, tmp_path, spark_bloom_files):  # type: ignore[no-untyped-def]
    import pyarrow as pa
    import pyarrow.parquet as pq

    from secure_bloom.parquet import ParquetBloomReader
    from secure_bloom.spark.dataset import WorkerKeys, attach_dataset

    src = tmp_path / "src"
    (src / "day=1").mkdir(parents=True)
    (src / "day=2").mkdir()
    for i, part in enumerate(("day=1", "day=2")):
        table = pa.table({"id": pa.array(range(i * 1000, (i + 1) * 1000), pa.int64()),
                          "name": pa.array([f"n{j}" for j in range(i * 1000, (i + 1) * 1000)])})
        pq.write_table(table, src / part / "part-0.parquet", row_group_size=400)
    results = attach_dataset(spark, src, tmp_path / "dst", ["id", "name"], WorkerKeys())
    assert [r["ok"] for r in results] == [True, True], results
    for i, part in enumerate(("day=1", "day=2")):
        out = Path(tmp_path / "dst" / part / "part-0.parquet")
        assert pq.read_table(out).equals(pq.read_table(src / part / "part-0.parquet"))
        with ParquetBloomReader(out) as reader:
            assert reader.row_groups_maybe_containing("id", i * 1000 + 450) == [1]
            assert reader.row_groups_maybe_containing("name", f"n{i * 1000 + 999}") == [2]


def test_prune_dataset_returns_the_row_groups_to_read(spark, dataset_dir, spark_bloom_files, worker_keys):  # type: ignore[no-untyped-def]
    """Same filters syntax as read_table; the holder of the value is always kept, and the result
    equals the local pruner's, file by file."""
    from secure_bloom.parquet import ParquetBloomReader
    from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
    from secure_bloom.parquet.read.prune import prune_reader
    from secure_bloom.spark.dataset import dataset_files, prune_dataset

    col = spark_bloom_files.columns["s"]
    value = col.row_groups[1][17]
    filters = [("s", "in", [value, col.absent[0]])]
    rows = prune_dataset(spark, dataset_dir, filters, worker_keys)
    assert [r["file"] for r in rows] == dataset_files(dataset_dir)
    for r in rows:
        assert r["error"] is None and 1 in r["row_groups"]
        with ParquetBloomReader(r["file"], keys=worker_keys.key_access()) as reader:
            local = prune_reader(reader, predicate_tree(to_expression(filters)))
        assert (r["row_groups"], r["pruned_by_bloom"]) == (list(local.row_groups), list(local.pruned_by_bloom))
        assert r["pruned_by_statistics"] == list(local.pruned_by_statistics)
    assert sum(len(r["pruned_by_statistics"]) + len(r["pruned_by_bloom"]) for r in rows) >= len(rows)
