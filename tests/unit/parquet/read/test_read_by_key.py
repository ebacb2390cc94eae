"""read_table / dataset / scan: the rows pyarrow returns, fewer row groups read.

Every read is compared with pyarrow's own filtered read of the same files (pyarrow.dataset with
the same filter), on plaintext and encrypted files with Bloom filters attached by us, including
nulls, NaN and -0.0, time zones, decimals, unsigned integers, strings and hive partitions; a
property test does the same for random tables and random filters. The encrypted files are read
through pyarrow's KMS path (key tools material) or, for files it cannot open (explicit key ids, a
withheld AAD prefix), with the footer key given to pyarrow per file; those are compared with
pyarrow's own read given that key (``create_decryption_properties``).
"""

from __future__ import annotations

import datetime as dt
import math
import random
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from secure_bloom.errors import InvalidValueError, MissingKeyError, UnsupportedParquetFeatureError
from secure_bloom.kms import FileKeyWrapper
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters
from secure_bloom.parquet.read.predicate import AllOf, AnyOf, Leaf, Unknown, predicate_tree, to_expression
from secure_bloom.parquet.read.api import dataset, parquet_format, read_table, scan
from support.parquet_files import (
    TESTING_KEYS,
    VECTORS_DIR,
    sample_table,
    ssn,
    vector_kms,
    write_encrypted,
    write_plain,
    write_uniform,
)

PARIS = "Europe/Paris"
ROWS = 240
GROUP = 40
BLOOM_COLUMNS = ["key", "n", "f", "dec", "ts", "u"]


def _key(i: int) -> str:
    return f"{random.Random(i).getrandbits(64):016x}"  # random: statistics cannot prune


def _table(start: int, rows: int = ROWS) -> pa.Table:
    ids = list(range(start, start + rows))
    floats = [float("nan"), -0.0, 0.0, 1.5, None, -2.25]
    base = dt.datetime(2024, 3, 31, 0, 30, tzinfo=dt.timezone.utc)
    return pa.table({
        "rid": pa.array(ids, pa.int64()),
        "key": pa.array([None if i % 37 == 0 else _key(i) for i in ids]),
        "n": pa.array([None if i % 11 == 0 else i for i in ids], pa.int64()),
        "u": pa.array([(2**32 - 1 - i) if i % 2 else i for i in ids], pa.uint32()),
        "f": pa.array([floats[i % len(floats)] if i % 7 else i / 4 for i in ids], pa.float64()),
        "dec": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(10, 2)),
        "ts": pa.array([base + dt.timedelta(minutes=i) for i in ids], pa.timestamp("us", tz=PARIS)),
    })


#: The footer key of the KMS-wrapped files with a withheld AAD prefix (fixed, to read them with
#: pyarrow's own reader for the reference).
UNIFORM_DEK = bytes(range(16))
PREFIX = b"tenant-7"
#: How the test files are encrypted: None, pyarrow's KMS path (per-column keys), or the footer key
#: given to pyarrow per file (explicit key id kf; with a withheld AAD prefix; KMS-wrapped with one).
KINDS = ["plaintext", "encrypted", "explicit", "explicit-withheld", "kms-withheld"]


def _keys(kind: str) -> KeyAccess | None:
    return {"plaintext": None, "encrypted": KeyAccess(kms=vector_kms()),
            "explicit": KeyAccess(explicit=TESTING_KEYS),
            "explicit-withheld": KeyAccess(explicit=TESTING_KEYS, aad_prefix=PREFIX),
            "kms-withheld": KeyAccess(kms=vector_kms(), aad_prefix=PREFIX)}[kind]


def _write_kind(src: Path, table: pa.Table, kind: str, **options: Any) -> None:
    if kind == "plaintext":
        write_plain(src, table, **options)
    elif kind == "encrypted":
        write_encrypted(src, table, column_keys={"kc1": ["key", "dec"], "kc2": ["f", "ts"]}, **options)
    elif kind == "explicit":
        write_uniform(src, table, **options)
    elif kind == "explicit-withheld":
        write_uniform(src, table, aad_prefix=PREFIX, store_aad_prefix=False, **options)
    else:
        material = FileKeyWrapper(vector_kms()).wrap(UNIFORM_DEK, "kf", is_footer_key=True)
        write_uniform(src, table, key=UNIFORM_DEK, key_metadata=material, aad_prefix=PREFIX, store_aad_prefix=False,
                      **options)


def _write(directory: Path, kind: str) -> KeyAccess | None:
    keys = _keys(kind)
    for part, region in enumerate(["eu", "us"]):
        folder = directory / f"region={region}"
        folder.mkdir(parents=True)
        src = directory / f"src-{region}.parquet.tmp"
        _write_kind(src, _table(part * ROWS), kind, row_group_size=GROUP)
        attach_bloom_filters(src, folder / "part-0.parquet", BLOOM_COLUMNS, keys)
        src.unlink()
    return keys


@pytest.fixture(scope="module", params=KINDS)
def data(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, KeyAccess | None]:
    directory = tmp_path_factory.mktemp(f"read-{request.param}")
    return directory, _write(directory, request.param)


def _pyarrow_format(keys: KeyAccess | None) -> ds.ParquetFileFormat:
    """pyarrow's own format for the test files: its KMS path, or the footer key itself."""
    if keys is None or (keys.explicit is None and keys.aad_prefix is None):
        return parquet_format(keys)
    key = TESTING_KEYS["kf"] if keys.explicit is not None else UNIFORM_DEK
    decryption = pe.create_decryption_properties(key, aad_prefix=keys.aad_prefix)
    return ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(decryption_properties=decryption))


def _reference(path: Path, filters: Any, keys: KeyAccess | None, columns: list[str] | None = None) -> pa.Table:
    expression = to_expression(filters)
    return ds.dataset(path, format=_pyarrow_format(keys), partitioning="hive").to_table(columns=columns, filter=expression)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows sorted by rid, floats by repr (NaN equals NaN, -0.0 differs from 0.0), schema checked."""
    rows = table.sort_by("rid").to_pylist() if "rid" in table.column_names else table.to_pylist()
    return [{k: repr(v) if isinstance(v, float) else v for k, v in row.items()} for row in rows]


def _same(ours: pa.Table, expected: pa.Table) -> bool:
    return ours.schema.equals(expected.schema) and _rows(ours) == _rows(expected)


FILTERS: list[Any] = [
    [("key", "==", _key(5))],
    [("key", "==", "0000000000000000")],
    [("key", "in", [_key(3), _key(300), "absent"])],
    [("key", "not in", [_key(3)])],
    [("key", "!=", _key(4))],
    [("n", "<", 10)],
    [("n", ">=", 470), ("key", "!=", _key(475))],
    [[("n", "==", 5)], [("key", "==", _key(250))]],
    [("n", "==", 100000)],
    [("u", ">", 2**31)],
    [("u", "==", 2**32 - 2)],
    [("f", "==", 0.0)],
    [("f", "==", -0.0)],
    [("f", "==", float("nan"))],
    [("f", "!=", 1.5)],
    [("f", ">", 0.5)],
    [("f", "<=", -0.0)],
    [("dec", "==", Decimal("1.23"))],
    [("dec", ">", Decimal("4.5"))],
    [("ts", "==", dt.datetime(2024, 3, 31, 3, 30, tzinfo=dt.timezone.utc))],
    [("ts", ">=", dt.datetime(2024, 3, 31, 9, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))))],
    [("region", "==", "us"), ("key", "==", _key(250))],
    [("region", "==", "eu"), ("key", "==", _key(250))],
    pc.field("key").is_null(),
    pc.field("n").is_valid() & (pc.field("n") < 3),
    ~pc.field("n").isin([1, 2, 3]),
    ~(pc.field("n") < 400),
    (pc.field("key") == _key(7)) | (pc.field("f") == 0.0),
    pc.field("key") == pa.scalar(_key(8), pa.large_string()),
    pc.field("n") == 6.0,
    pc.field("n") == 6.5,
]


@pytest.mark.parametrize("filters", FILTERS, ids=[f"f{i}" for i in range(len(FILTERS))])
def test_read_table_returns_pyarrows_rows(data: tuple[Path, KeyAccess | None], filters: Any) -> None:
    path, keys = data
    ours = read_table(path, filters=filters, keys=keys)
    assert _same(ours, _reference(path, filters, keys))


def test_absent_key_reads_no_row_group_and_no_data_page(data: tuple[Path, KeyAccess | None]) -> None:
    path, keys = data
    pruned = scan(path, filters=[("key", "==", "8000000000000000x")], keys=keys, count_reads=True)
    # random keys span the whole range: statistics keep every row group, the Bloom filters drop them
    assert pruned.report.row_groups_total == 12
    assert pruned.report.row_groups_pruned_by_statistics == 0
    assert pruned.report.row_groups_pruned_by_bloom == 12
    assert pruned.report.row_groups_read == 0
    assert pruned.to_table().num_rows == 0
    with ParquetBloomReader(path / "region=eu" / "part-0.parquet", keys) as reader:
        data_end = min(reader.column_metadata(c).data_page_offset for c in reader.column_chunks())
        size = reader.tail.file_size
    assert pruned.report.files[0].metadata_bytes_read < size - data_end


def test_present_key_reads_one_row_group(data: tuple[Path, KeyAccess | None]) -> None:
    path, keys = data
    pruned = scan(path, filters=[("key", "==", _key(301))], keys=keys)
    table = pruned.to_table(columns=["rid", "key"])
    assert table.to_pylist() == [{"rid": 301, "key": _key(301)}]
    assert pruned.report.row_groups_read == 1  # Bloom filters at fpp 0.01: the other 11 are ruled out
    assert pruned.report.files_skipped_by_partition == 0


def test_statistics_prune_ranges_and_partitions_skip_files(data: tuple[Path, KeyAccess | None]) -> None:
    path, keys = data
    pruned = scan(path, filters=[("region", "==", "us"), ("n", "<", 280)], keys=keys)
    assert pruned.report.files_skipped_by_partition == 1
    assert [f.row_groups for f in pruned.report.files] == [(0,)]
    assert pruned.report.row_groups_pruned_by_statistics == 5
    assert sorted(pruned.to_table(columns=["rid"])["rid"].to_pylist()) == [i for i in range(240, 280) if i % 11]


def test_polars_and_duckdb_query_the_pruned_dataset(data: tuple[Path, KeyAccess | None]) -> None:
    path, keys = data
    filters = [("key", "in", [_key(10), _key(400)])]
    restricted = dataset(path, filters=filters, keys=keys)
    expected = sorted(_reference(path, filters, keys)["rid"].to_pylist())
    assert expected == [10, 400]
    frame = pl.scan_pyarrow_dataset(restricted).select("rid", "key").collect()
    assert sorted(frame["rid"].to_list()) == expected
    con = duckdb.connect()
    con.register("people", restricted)
    rows = con.execute("SELECT rid FROM people WHERE n IS NOT NULL ORDER BY rid").fetchall()
    assert [r[0] for r in rows] == expected
    assert sorted(r[0] for r in duckdb.from_arrow(restricted).project("rid").fetchall()) == expected


def test_list_of_files_and_file_uri(data: tuple[Path, KeyAccess | None]) -> None:
    path, keys = data
    files = [path / "region=eu" / "part-0.parquet", f"file://{path / 'region=us' / 'part-0.parquet'}"]
    ours = read_table(files, filters=[("n", "in", [3, 300])], keys=keys, columns=["rid", "n"])
    assert sorted(ours["rid"].to_pylist()) == [3, 300]


def test_encrypted_without_keys_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "encrypted"
    path.mkdir()
    keys = _write(path, "encrypted")
    assert keys is not None
    with pytest.raises(MissingKeyError, match=r"part-0.parquet: the footer key .* is needed and no keys were given"):
        read_table(path / "region=eu" / "part-0.parquet", filters=[("key", "==", _key(1))])


# ---------------------------------------------------------------- the predicate tree


def test_predicate_tree_reads_pyarrow_expressions() -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.float64())])
    tree = predicate_tree((pc.field("a") == 5) & ((pc.scalar(3) < pc.field("a")) | ~pc.field("b").isin(["x"])), schema)
    assert isinstance(tree, AllOf)
    first, second = tree.parts
    assert isinstance(first, Leaf) and (first.column, first.op, first.values.to_pylist()) == ("a", "==", [5])
    assert isinstance(second, AnyOf)
    assert [(p.column, p.op, p.values.to_pylist()) for p in second.parts] == [("a", ">", [3]), ("b", "not in", ["x"])]
    assert isinstance(predicate_tree(~(pc.field("c") < 1.0), schema), Unknown)  # NaN: no complement
    assert isinstance(predicate_tree((pc.field("a") + 1) == 3, schema), Unknown)
    assert isinstance(predicate_tree(pc.field(("s", "x")) == 3, schema), Unknown)
    assert isinstance(predicate_tree(pc.field("b").isin(["x", None]), schema), Unknown)
    assert predicate_tree(pc.field("b") == 'a"b\nc', schema) == Leaf("b", "==", pa.array(['a"b\nc']))


def test_bad_filters_are_refused() -> None:
    with pytest.raises(InvalidValueError, match="invalid filters"):
        to_expression([("a", "~~", 1)])
    with pytest.raises(TypeError, match="filters must be"):
        to_expression("a = 1")


# ---------------------------------------------------------------- property: same rows as pyarrow

_INTS = st.one_of(st.none(), st.integers(-3, 3))
_STRS = st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", "é", "zz"]))
_FLOATS = st.one_of(st.none(), st.sampled_from([float("nan"), -0.0, 0.0, 1.0, -1.0, 2.5]))


def _leaf(column: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[pc.Expression]:
    field = pc.field(column)
    plain = values.filter(lambda v: v is not None)
    return st.one_of(
        st.builds(lambda v: field == v, plain), st.builds(lambda v: field != v, plain),
        st.builds(lambda v: field < v, plain), st.builds(lambda v: field <= v, plain),
        st.builds(lambda v: field > v, plain), st.builds(lambda v: field >= v, plain),
        st.builds(lambda vs: field.isin(vs), st.lists(plain, max_size=3)),
        st.just(field.is_null()), st.just(field.is_valid()))


_LEAVES = st.one_of(_leaf("i", _INTS), _leaf("s", _STRS), _leaf("x", _FLOATS))
_EXPRESSIONS = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.builds(lambda a, b: a & b, inner, inner), st.builds(lambda a, b: a | b, inner, inner),
    st.builds(lambda a: ~a, inner)), max_leaves=4)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(_INTS, _STRS, _FLOATS), min_size=1, max_size=30), group=st.integers(1, 8),
       expression=_EXPRESSIONS)
def test_property_same_rows_as_pyarrow(rows: list[tuple[Any, Any, Any]], group: int, expression: pc.Expression) -> None:
    table = pa.table({"rid": pa.array(range(len(rows)), pa.int64()),
                      "i": pa.array([r[0] for r in rows], pa.int32()),
                      "s": pa.array([r[1] for r in rows], pa.string()),
                      "x": pa.array([r[2] for r in rows], pa.float64())})
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "src.parquet", Path(tmp) / "t.parquet"
        pq.write_table(table, src, row_group_size=group)
        attach_bloom_filters(src, dst, ["i", "s", "x"])
        try:
            expected = ds.dataset(dst).to_table(filter=expression)
        except pa.ArrowException:
            return  # pyarrow itself refuses this filter (e.g. a type it cannot compare)
        ours = read_table(dst, filters=expression)
    assert _same(ours, expected), expression


def test_nan_and_zero_queries_keep_their_row_groups(tmp_path: Path) -> None:
    """One value per row group: NaN, -0.0, 0.0 each kept for the SQL-equal query."""
    table = pa.table({"x": pa.array([float("nan"), -0.0, 0.0, 7.0], pa.float64())})
    pq.write_table(table, tmp_path / "src.parquet", row_group_size=1)
    attach_bloom_filters(tmp_path / "src.parquet", tmp_path / "t.parquet", ["x"])
    report = scan(tmp_path / "t.parquet", filters=[("x", "==", 0.0)]).report
    assert report.files[0].row_groups == (1, 2)
    report = scan(tmp_path / "t.parquet", filters=[("x", "==", -0.0)]).report
    assert report.files[0].row_groups == (1, 2)
    nan = scan(tmp_path / "t.parquet", filters=[("x", "==", float("nan"))])
    assert nan.report.files[0].row_groups == (0, 1, 2, 3)  # NaN: always maybe
    assert nan.to_table().num_rows == 0  # and pyarrow's NaN == NaN is false
    assert not math.isnan(7.0)


# ---------------------------------------------------------------- keys pyarrow cannot be given

PER_COLUMN_VECTORS = {  # parquet-testing, explicit keys: footer kf, double_field kc1, float_field kc2
    "encrypt_columns_and_footer.parquet.encrypted": None,
    "encrypt_columns_plaintext_footer.parquet.encrypted": None,
    "encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted": b"tester",
}


@pytest.mark.parametrize("name", list(PER_COLUMN_VECTORS))
def test_columns_with_keys_of_their_own_are_refused_before_scanning(name: str) -> None:
    path = VECTORS_DIR / name
    prefix = PER_COLUMN_VECTORS[name]
    keys = KeyAccess(explicit=TESTING_KEYS, aad_prefix=prefix)
    why = "explicit key ids, not KMS key material"
    with pytest.raises(UnsupportedParquetFeatureError, match=rf"'float_field', 'double_field' need keys of their "
                                                             rf"own \('kc1', 'kc2'\).*{why}.*single key"):
        read_table(path, keys=keys)
    with pytest.raises(UnsupportedParquetFeatureError, match=r"columns 'float_field', 'double_field' need"):
        dataset(path, keys=keys, filters=[("boolean_field", "==", True)])  # dataset(): every column
    with pytest.raises(UnsupportedParquetFeatureError, match=r"column 'double_field' need keys of their own \('kc1'\)"):
        read_table(path, keys=keys, columns=["int32_field"], filters=[("double_field", ">", 1.0)])  # the filter's
    # the columns under the footer key: exactly pyarrow's rows, read with the footer key
    footer_only = pe.create_decryption_properties(TESTING_KEYS["kf"], aad_prefix=prefix)
    columns = ["boolean_field", "int96_field", "ba_field"]
    for filters in ([("ba_field", "==", b"parquet002")], [("boolean_field", "==", True)], None):
        ours = read_table(path, keys=keys, columns=columns, filters=filters)
        expected = pq.read_table(path, columns=columns, filters=filters, decryption_properties=footer_only)
        assert ours.equals(expected) and (filters is None or 0 < ours.num_rows < 50), filters
    with pytest.raises(ValueError, match="scan was made for the columns"):
        scan(path, keys=keys, columns=["ba_field"]).to_table(["ba_field", "double_field"])


def test_uniform_vector_reads_as_pyarrow_with_the_footer_key() -> None:
    path = VECTORS_DIR / "uniform_encryption.parquet.encrypted"
    keys = KeyAccess(explicit={"kf": TESTING_KEYS["kf"]})
    decryption = pe.create_decryption_properties(TESTING_KEYS["kf"])
    for filters in ([("double_field", "<", 5.0)], [("float_field", "in", [1.0, 2.0, 3.0])], None):
        assert read_table(path, keys=keys, filters=filters).equals(
            pq.read_table(path, filters=filters, decryption_properties=decryption))
    with pytest.raises(MissingKeyError, match="'kf'"):
        read_table(path, keys=KeyAccess(explicit={"kc1": TESTING_KEYS["kc1"]}))


@pytest.mark.parametrize("partitioning", [["year"], "hive", None], ids=["field-names", "hive", "none"])
def test_explicit_keys_with_any_partitioning(tmp_path: Path, partitioning: Any) -> None:
    """Regression: a directory of explicit-key files partitioned by field names (``["year"]``)
    raised ArrowInvalid "No match for FieldRef.Name(year)" from the listing that finds the file
    pyarrow inspects for the schema (made with an empty schema and the partitioning)."""
    path = VECTORS_DIR / "uniform_encryption.parquet.encrypted"
    (tmp_path / "2024").mkdir()
    (tmp_path / "2024" / "a.parquet").write_bytes(path.read_bytes())
    keys = KeyAccess(explicit={"kf": TESTING_KEYS["kf"]})
    decryption = pe.create_decryption_properties(TESTING_KEYS["kf"])
    fmt = ds.ParquetFileFormat(default_fragment_scan_options=ds.ParquetFragmentScanOptions(
        decryption_properties=decryption))
    expected = ds.dataset(tmp_path, format=fmt, partitioning=partitioning).to_table(
        filter=pc.field("double_field") < 2.0)
    got = read_table(tmp_path, keys=keys, partitioning=partitioning, filters=[("double_field", "<", 2.0)])
    assert got.num_rows == expected.num_rows > 0 and got.sort_by("int32_field").equals(expected.sort_by("int32_field"))


def test_a_file_refused_for_its_columns_is_fine_once_pruned_away(tmp_path: Path) -> None:
    """Only the files scanned must be readable by pyarrow: a row group ruled out is never read."""
    keys = KeyAccess(explicit=TESTING_KEYS)
    (tmp_path / "a.parquet").write_bytes((VECTORS_DIR / "encrypt_columns_and_footer.parquet.encrypted").read_bytes())
    pruned = scan(tmp_path, keys=keys, filters=[("double_field", "<", -1.0)])
    assert pruned.report.row_groups_pruned_by_statistics == 1
    assert pruned.to_table().num_rows == 0


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, KeyAccess]:
    """One directory: a file with explicit key ids (listed first: pyarrow inspects it for the
    schema), one with KMS key material and per-column keys, one plaintext; Bloom filters on ssn."""
    directory = tmp_path_factory.mktemp("read-mixed")
    keys = KeyAccess(kms=vector_kms(), explicit=TESTING_KEYS)
    for name, kind, start in (("a-explicit", "explicit", 0), ("b-kms", "encrypted", 3000), ("c-plain", "plaintext", 6000)):
        src = directory / f"{name}.tmp"
        table = sample_table(9000).slice(start, 3000)
        if kind == "encrypted":
            write_encrypted(src, table)
        else:
            _write_kind(src, table, kind)
        attach_bloom_filters(src, directory / f"{name}.parquet", ["ssn"], keys)
        src.unlink()
    return directory, keys


def _pyarrow_mixed(directory: Path, filters: Any) -> pa.Table:
    kms = _pyarrow_format(KeyAccess(kms=vector_kms()))
    explicit = _pyarrow_format(KeyAccess(explicit=TESTING_KEYS))
    parts = [ds.dataset(directory / f"{name}.parquet", format=fmt).to_table(filter=to_expression(filters))
             for name, fmt in (("a-explicit", explicit), ("b-kms", kms), ("c-plain", ds.ParquetFileFormat()))]
    return pa.concat_tables(parts)


@pytest.mark.parametrize("filters", [[("ssn", "in", [ssn(5), ssn(4500), ssn(8999), "nobody"])],
                                     [("id", ">=", 2990), ("id", "<", 6010)], None])
def test_a_directory_mixing_explicit_kms_and_plaintext_files(mixed: tuple[Path, KeyAccess], filters: Any) -> None:
    directory, keys = mixed
    ours = read_table(directory, keys=keys, filters=filters)
    assert ours.equals(_pyarrow_mixed(directory, filters))


def test_mixed_directory_prunes_and_polars_and_duckdb_see_its_rows(mixed: tuple[Path, KeyAccess]) -> None:
    directory, keys = mixed
    filters = [("ssn", "in", [ssn(5), ssn(4500), ssn(8999)])]
    pruned = scan(directory, keys=keys, filters=filters)
    assert pruned.report.row_groups_total == 9 and pruned.report.row_groups_read == 3  # one per file
    restricted = dataset(directory, keys=keys, filters=filters)
    frame = pl.scan_pyarrow_dataset(restricted).select("id", "ssn").collect()
    assert sorted(frame["id"].to_list()) == [5, 4500, 8999]
    rows = duckdb.from_arrow(restricted).filter("id > 100").project("id").fetchall()
    assert sorted(r[0] for r in rows) == [4500, 8999]


@pytest.mark.parametrize("kind", ["explicit-withheld", "kms-withheld"])
def test_a_withheld_prefix_not_given_is_a_missing_key(tmp_path: Path, kind: str) -> None:
    _write_kind(tmp_path / "w.parquet", sample_table(10), kind)
    keys = _keys(kind)
    assert keys is not None
    without = KeyAccess(kms=keys.kms, explicit=keys.explicit)
    with pytest.raises(MissingKeyError, match=r"withheld AAD prefix \(supply_aad_prefix\); pass it"):
        read_table(tmp_path / "w.parquet", keys=without)
    assert read_table(tmp_path / "w.parquet", keys=keys).equals(sample_table(10))


def test_prune_threads_default_to_one_locally_and_many_on_object_stores(tmp_path: Path) -> None:
    import pyarrow.fs as pafs

    from secure_bloom.parquet.read.prune import DEFAULT_PRUNE_THREADS, default_prune_threads

    assert default_prune_threads([str(tmp_path / "a.parquet")], None) == 1
    assert default_prune_threads([str(tmp_path / "a.parquet")], pafs.LocalFileSystem()) == 1
    assert default_prune_threads([f"file://{tmp_path}/a.parquet"], None) == 1
    s3 = pafs.S3FileSystem(anonymous=True, region="us-east-1")
    assert default_prune_threads(["bucket/a.parquet"], s3) == DEFAULT_PRUNE_THREADS
    assert default_prune_threads(["s3://bucket/a.parquet"], None) == DEFAULT_PRUNE_THREADS
