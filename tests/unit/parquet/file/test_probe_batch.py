"""Batch probes (issue 29): values hashed once (query_batch), every filter of a file probed in one
kernel call, answers as arrays. Held against the per-value reference: query_hashes of each value
and SplitBlockBloomFilter.check_hash of each hash, on random data; a value written is never
"absent"."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.parquet_files import vector_kms, write_encrypted
from secure_bloom.errors import InvalidValueError
from secure_bloom.parquet import (ABSENT, MAYBE, ColumnInfo, KeyAccess, ParquetBloomReader, ProbeValues,
                                  attach_bloom_filters, value_from_text)
from secure_bloom.types import PhysicalType
from secure_bloom.values import QueryBatch, query_batch, query_hashes

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def col(ptype: str, logical: str | None = None, **kw: Any) -> ColumnInfo:
    return ColumnInfo(path="c", path_in_schema=("c",), ordinal=0, physical_type=PhysicalType[ptype],
                      logical_type=logical, **kw)


COLUMNS = [col("BYTE_ARRAY", "STRING"), col("BYTE_ARRAY"), col("BYTE_ARRAY", "JSON"), col("INT32"), col("INT64"),
           col("INT32", "INTEGER", int_bits=8, int_signed=True), col("INT32", "INTEGER", int_bits=32, int_signed=False),
           col("INT64", "INTEGER", int_bits=64, int_signed=False), col("DOUBLE"), col("FLOAT"),
           col("INT32", "DATE"), col("INT64", "TIMESTAMP", time_unit="micros", is_adjusted_to_utc=True),
           col("FIXED_LEN_BYTE_ARRAY", "UUID", type_length=16), col("BYTE_ARRAY", "DECIMAL", scale=2, precision=10)]

VALUES = st.one_of(
    st.integers(-(2**70), 2**70), st.integers(-200, 200), st.text(max_size=8),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2),
    st.binary(max_size=8), st.floats(allow_nan=True), st.sampled_from([0.0, -0.0, float("nan")]), st.none(),
    st.booleans(), st.dates(), st.just(dt.datetime(2024, 3, 31, 2, 30)))


def _outcome(fn: Any) -> Any:
    try:
        return fn()
    except InvalidValueError as e:
        return ("error", type(e).__name__, str(e))


def _reference(values: list[Any], column: ColumnInfo, timezone: Any) -> Any:
    """The flat form of query_hashes, value by value (or the first value's error)."""
    queries = [query_hashes(v, column, timezone=timezone) for v in values]
    return ([h for q in queries for h in q.hashes], [len(q.hashes) for q in queries],
            [q.always_maybe for q in queries])


def _flat(batch: QueryBatch) -> Any:
    return batch.hashes.tolist(), np.diff(batch.starts).tolist(), batch.always_maybe.tolist()


@SETTINGS
@given(column=st.sampled_from(COLUMNS), values=st.lists(VALUES, max_size=12),
       uniform=st.sampled_from([None, "int", "str", "bytes"]), timezone=st.sampled_from([None, "Europe/Paris"]))
def test_query_batch_is_query_hashes_of_each_value(column: ColumnInfo, values: list[Any], uniform: str | None,
                                                   timezone: str | None) -> None:
    """The same hashes, counts and NaN flags in order, or the same error, whichever path runs
    (uniform batches take the one-pass paths; a mixed one is asked value by value)."""
    if uniform is not None:
        kind = {"int": int, "str": str, "bytes": bytes}[uniform]
        values = [v for v in values if type(v) is kind]
    expected = _outcome(lambda: _reference(values, column, timezone))
    got = _outcome(lambda: _flat(query_batch(values, column, timezone=timezone)))
    assert got == expected


def test_query_batch_one_pass_paths_agree_at_the_edges() -> None:
    """Integer bounds of the column's width, an int beyond int64, a lone surrogate, a None."""
    int8 = col("INT32", "INTEGER", int_bits=8, int_signed=True)
    assert _flat(query_batch([-128, 127, 0], int8)) == _reference([-128, 127, 0], int8, None)
    for values, column in (([1, 128], int8), ([1, -129], int8), ([2**63], col("INT64")),
                           (["a", "\udc80"], col("BYTE_ARRAY", "STRING")), (["a", None], col("BYTE_ARRAY"))):
        expected = _outcome(lambda: _reference(values, column, None))
        assert expected[0] == "error"
        assert _outcome(lambda: _flat(query_batch(values, column))) == expected
    batch = query_batch([0.0, float("nan"), 1.5], col("DOUBLE"))
    assert np.diff(batch.starts).tolist() == [2, 1, 1] and batch.always_maybe.tolist() == [False, True, False]
    assert batch.answers(np.array([[False, True, False, False]])).tolist() == [[True, True, False]]
    assert not batch.hashes.flags.writeable
    with pytest.raises(ValueError, match="answers for 4 hashes"):
        batch.answers(np.zeros(3, dtype=bool))
    assert query_batch([], col("DOUBLE")).answers(np.zeros((2, 0), dtype=bool)).shape == (2, 0)


# ----------------------------------------------------------------------------- files


def _table(rng: np.random.Generator, rows: int) -> pa.Table:
    ids = rng.choice(10**9, size=rows, replace=False).astype(np.int64)
    return pa.table({"id": pa.array(ids), "name": pa.array([f"n{i:x}" for i in ids]),
                     "score": pa.array(rng.normal(size=rows)), "ssn": pa.array([f"s{i}" for i in ids]),
                     "amount": pa.array(ids % 1000, pa.int64()), "ts": pa.array(ids, pa.int64())})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, pa.Table]]:
    """Two plaintext files (pyarrow's filters, one with a column without) and one encrypted file
    (attach's encrypted filters), random rows, several row groups each."""
    root = tmp_path_factory.mktemp("probe-batch")
    rng = np.random.default_rng(29)
    out = []
    for i, with_score in enumerate((True, False)):
        table = _table(rng, 1200)
        options = {"id": {"ndv": 300, "fpp": 0.05}, "name": {"ndv": 300, "fpp": 0.05}}
        if with_score:
            options["score"] = {"ndv": 300, "fpp": 0.05}
        path = root / f"plain-{i}.parquet"
        pq.write_table(table, path, row_group_size=300, bloom_filter_options=options)
        out.append((path, table))
    table = _table(rng, 900)
    src = write_encrypted(root / "src.parquet", table, row_group_size=250)
    dst = root / "encrypted.parquet"
    attach_bloom_filters(src, dst, ["id", "ssn", "score"], KeyAccess(kms=vector_kms()), fpp=0.05)
    out.append((dst, table))
    return out


def _per_value(reader: ParquetBloomReader, column: str, values: list[Any]) -> list[list[bool]]:
    """The reference: per row group and value, any hash of the value's query in the filter
    (check_hash, one at a time), a NaN and a row group without a filter "maybe"."""
    info = reader.column(column)
    queries = [query_hashes(v, info) for v in values]
    answers = []
    for rg in range(reader.num_row_groups):
        bf = reader.bloom_filter(rg, column)
        answers.append([bf is None or q.always_maybe or any(bf.check_hash(h) for h in q.hashes) for q in queries])
    return answers


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("column", ["id", "name", "score", "ssn"])
def test_batch_probe_equals_the_per_value_reference(files: list[tuple[Path, pa.Table]], column: str, backend: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from secure_bloom import kernels

    if backend == "numpy":
        monkeypatch.setattr(kernels, "_native", None)
    rng = np.random.default_rng(7)
    keys = KeyAccess(kms=vector_kms())
    for path, table in files:
        if column not in table.column_names:
            continue
        stored = table[column].to_pylist()
        present = [stored[int(i)] for i in rng.integers(len(stored), size=200)]
        absent: list[Any] = {"id": [int(x) for x in rng.integers(10**9, 2 * 10**9, size=300)],
                             "score": [float(x) + 100 for x in rng.normal(size=300)] + [0.0, float("nan")]
                             }.get(column, [f"absent{i}" for i in range(300)])
        values = present + absent
        with ParquetBloomReader(path, keys) as reader:
            if column == "ssn" and not reader.column("ssn").encrypted:
                continue
            result = reader.probe(column, values)
            assert result.maybe.tolist() == _per_value(reader, column, values)
            ends = np.cumsum([int(rg.num_rows) for rg in reader.footer.metadata.row_groups])
        for i, value in enumerate(present):  # never a false "absent"
            at = int(np.searchsorted(ends, stored.index(value), side="right"))
            assert result.maybe[at, i], (path.name, column, value)
        if all(result.has_bloom_filter):  # and the filters do answer "absent"
            assert result.maybe[:, len(present):].mean() < 0.5
        else:
            assert result.maybe[[not f for f in result.has_bloom_filter]].all()


def test_probe_values_are_hashed_once_for_every_file(files: list[tuple[Path, pa.Table]],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from secure_bloom.parquet.file import probe as probe_module

    calls: list[int] = []
    real = probe_module.query_batch

    def counting(values: Any, column: Any, **kw: Any) -> Any:
        calls.append(len(values))
        return real(values, column, **kw)

    monkeypatch.setattr(probe_module, "query_batch", counting)
    texts = [str(v) for v in files[0][1]["id"].to_pylist()[:50]] + ["5", "-7"]
    prepared = ProbeValues(texts, from_text=True)
    keys = KeyAccess(kms=vector_kms())
    results = []
    for path, _ in files:
        with ParquetBloomReader(path, keys) as reader:
            results.append(reader.probe("id", prepared))
            assert reader.probe("id", prepared) == results[-1]
            one_by_one = [value_from_text(t, reader.column("id")) for t in texts]
            assert reader.probe("id", one_by_one, labels=texts).to_dict() == results[-1].to_dict()
    # the ProbeValues hashed once for every file (one column type), each plain list once per probe
    assert calls == [len(texts)] * (1 + len(files))
    assert results[0].labels == tuple(texts)
    assert all(results[0].maybe[:, :50].any(axis=0))


def test_probe_result_forms_agree(files: list[tuple[Path, pa.Table]]) -> None:
    path, table = files[0]
    values = table["name"].to_pylist()[::97] + ["absent-1", "absent-2", table["name"][0].as_py()]
    with ParquetBloomReader(path) as reader:
        result = reader.probe("name", values)
    doc = result.to_dict()
    assert [[v["answer"] == MAYBE for v in g["values"]] for g in doc["row_groups"]] == result.maybe.tolist()
    assert [rg.to_dict() for rg in result.row_groups] == doc["row_groups"]
    assert all(a in (MAYBE, ABSENT) for g in doc["row_groups"] for a in (v["answer"] for v in g["values"]))
    by_value = result.maybe_by_value()
    assert by_value == [result.maybe_row_groups(i) for i in range(len(values))]
    assert list(zip(*result.maybe_pairs())) == [(v, rg) for v, groups in enumerate(by_value) for rg in groups]
    compact = result.to_compact_dict()
    assert compact["num_row_groups"] == result.num_row_groups == len(doc["row_groups"])
    assert [(v["value"], v["row_groups"]) for v in compact["values"]] == list(zip(result.labels, by_value))
    json.dumps(compact)
    arrow = result.to_arrow()
    assert arrow.column("value").to_pylist() == list(result.labels)
    assert arrow.column("row_groups").to_pylist() == by_value
    assert arrow.column("value_index").to_pylist() == list(range(len(values)))
    assert result.any_maybe and result.maybe_row_groups(-1) == by_value[-1]
    with pytest.raises(IndexError):
        result.maybe_row_groups(len(values))
    with pytest.raises(KeyError, match="2 values probed are labelled"):
        result.row_groups_maybe_containing(values[0])


def test_probe_refuses_bad_arguments(files: list[tuple[Path, pa.Table]]) -> None:
    with ParquetBloomReader(files[0][0]) as reader:
        with pytest.raises(ValueError, match="ProbeValues' own"):
            reader.probe("id", ProbeValues([1]), labels=["x"])
        with pytest.raises(ValueError, match="2 labels for 1 values"):
            reader.probe("id", [1], labels=["a", "b"])
        with pytest.raises(InvalidValueError, match="is not an integer"):
            reader.probe("id", ProbeValues(["x"]))
        with pytest.raises(InvalidValueError):
            reader.probe("id", ProbeValues(["12x"], from_text=True))
    with pytest.raises(TypeError, match="from_text=True takes str"):
        ProbeValues([1], from_text=True)
    assert math.isnan(ProbeValues([float("nan")]).values[0])
