"""``secure-bloom query``: conditions parsed per column type, pyarrow's rows, the prune report."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from secure_bloom.cli import main
from secure_bloom.errors import InvalidValueError
from secure_bloom.parquet import KeyAccess, attach_bloom_filters
from secure_bloom.parquet.read.api import read_table
from secure_bloom.parquet.read.where import parse_condition
from support.cli_json import cli_result
from support.parquet_files import (
    TESTING_KEY_LIST,
    TESTING_KEYS,
    VECTORS_DIR,
    sample_table,
    ssn,
    vector_kms,
    write_encrypted,
    write_uniform,
)

#: --key options for the parquet-testing explicit keys (kf, kc1, kc2).
EXPLICIT_KEYS = [arg for key_id, key in TESTING_KEYS.items() for arg in ("--key", f"{key_id}=text:{key.decode()}")]


@pytest.fixture(scope="module")
def encrypted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("cli-query")
    write_encrypted(tmp / "src.parquet")
    attach_bloom_filters(tmp / "src.parquet", tmp / "data.parquet", ["ssn", "id", "ts"],
                         KeyAccess(kms=vector_kms()))
    keys = tmp / "keys.txt"
    keys.write_text(TESTING_KEY_LIST)
    return tmp / "data.parquet", keys


def test_parse_condition() -> None:
    assert parse_condition("email = a@b.c") == ("email", "==", ["a@b.c"])
    assert parse_condition("n>=5") == ("n", ">=", ["5"])
    assert parse_condition("ssn in (a, 'b, c', \"d\")") == ("ssn", "in", ["a", "b, c", "d"])
    assert parse_condition("ssn NOT IN (x)") == ("ssn", "not in", ["x"])
    assert parse_condition("x <> 1") == ("x", "!=", ["1"])
    with pytest.raises(InvalidValueError, match="parenthesised list"):
        parse_condition("ssn in a, b")
    with pytest.raises(InvalidValueError, match="expected COLUMN OP VALUE"):
        parse_condition("just text")


def test_query_json_with_explain(encrypted: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    data, keys = encrypted
    code = main(["query", str(data), "--where", f"ssn in ({ssn(1500)}, {ssn(7)}, nobody)", "--columns", "id,ssn",
                 "--format", "json", "--explain", "--key-list-file", str(keys)])
    assert code == 0
    doc = cli_result(capsys.readouterr().out, "query")
    assert doc["rows"] == [{"id": 7, "ssn": ssn(7)}, {"id": 1500, "ssn": ssn(1500)}]
    report = doc["report"]
    assert (report["row_groups_total"], report["row_groups_read"], report["rows"]) == (3, 2, 2)
    assert report["row_groups_pruned_by_statistics"] + report["row_groups_pruned_by_bloom"] == 1


def test_query_timestamp_needs_a_zone_and_takes_one(encrypted: tuple[Path, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    data, keys = encrypted
    code = main(["query", str(data), "--where", "ts = 2024-01-01T01:00:05", "--key-list-file", str(keys)])
    assert code == 2
    assert "naive" in capsys.readouterr().err
    code = main(["query", str(data), "--where", "ts = 2024-01-01T01:00:05", "--timezone", "Europe/Paris",
                 "--columns", "id", "--format", "csv", "--key-list-file", str(keys)])
    assert code == 0
    assert capsys.readouterr().out.splitlines() == ['"id"', "5"]


def test_query_parquet_output(encrypted: tuple[Path, Path], tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    data, keys = encrypted
    out = tmp_path / "rows.parquet"
    code = main(["query", str(data), "--where", "id < 3", "--where", "amount >= 0.01", "--format", "parquet",
                 "--output", str(out), "--explain", "--key-list-file", str(keys)])
    assert code == 0
    assert read_table(out, keys=KeyAccess(kms=vector_kms()))["id"].to_pylist() == [1, 2]  # encrypted, as its source
    assert "2 pruned by statistics" in capsys.readouterr().err


def test_query_table_and_bad_value(encrypted: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    data, keys = encrypted
    assert main(["query", str(data), "--where", f"ssn = {ssn(42)}", "--columns", "id", "--key-list-file",
                 str(keys)]) == 0
    assert capsys.readouterr().out.split() == ["id", "42", "(1", "row)"]
    assert main(["query", str(data), "--where", "id = forty", "--key-list-file", str(keys)]) == 2
    assert "id" in capsys.readouterr().err


def test_query_explicit_key_with_withheld_aad_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Key metadata that is a bare key id and an AAD prefix the file withholds: pyarrow's KMS path
    opens neither; the footer key we resolve is given to pyarrow for the file."""
    write_uniform(tmp_path / "src.parquet", aad_prefix=b"tenant-7", store_aad_prefix=False)
    keys = KeyAccess(explicit=TESTING_KEYS, aad_prefix=b"tenant-7")
    attach_bloom_filters(tmp_path / "src.parquet", tmp_path / "data.parquet", ["ssn"], keys)
    code = main(["query", str(tmp_path / "data.parquet"), "--where", f"ssn in ({ssn(1500)}, {ssn(2999)}, x)",
                 "--columns", "id,ssn", "--format", "json", "--explain", "--aad-prefix", "tenant-7", *EXPLICIT_KEYS])
    assert code == 0
    doc = cli_result(capsys.readouterr().out, "query")
    assert doc["rows"] == [{"id": 1500, "ssn": ssn(1500)}, {"id": 2999, "ssn": ssn(2999)}]
    assert (doc["report"]["row_groups_total"], doc["report"]["row_groups_read"]) == (3, 2)
    assert main(["query", str(tmp_path / "data.parquet"), "--where", f"ssn = {ssn(1)}", *EXPLICIT_KEYS]) == 2
    assert "withheld AAD prefix" in capsys.readouterr().err


def test_query_columns_with_their_own_explicit_keys(capsys: pytest.CaptureFixture[str]) -> None:
    """pyarrow takes one key per file from Python: columns under their own explicit keys are
    refused before the scan (exit 3), naming them; the other columns are read."""
    vector = str(VECTORS_DIR / "encrypt_columns_and_footer.parquet.encrypted")
    assert main(["query", vector, "--where", "ba_field = parquet002", *EXPLICIT_KEYS]) == 3
    err = " ".join(capsys.readouterr().err.split())
    assert "columns 'float_field', 'double_field' need keys of their own ('kc1', 'kc2')" in err
    assert "create_decryption_properties" in err and "What works" in err
    assert main(["query", vector, "--where", "ba_field = parquet002", "--columns", "ba_field",
                 "--format", "csv", *EXPLICIT_KEYS]) == 0
    assert capsys.readouterr().out.splitlines() == ['"ba_field"', '"parquet002"']


def test_plain_table_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(sample_table(100), tmp_path / "p.parquet", row_group_size=10)
    assert main(["query", str(tmp_path / "p.parquet"), "--where", "score > 48", "--columns", "id",
                 "--format", "json"]) == 0
    assert cli_result(capsys.readouterr().out, "query") == {"rows": [{"id": 97}, {"id": 98}, {"id": 99}], "report": None}


def test_time_literal_offset_is_applied_for_utc_time_and_refused_for_local_time(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: a TIME literal's UTC offset was dropped ('t = 12:00:00+02:00' matched 12:00)."""
    import datetime as dt

    import pyarrow as pa

    from secure_bloom.parquet import ColumnInfo
    from secure_bloom.parquet.read.where import conditions_expression
    from secure_bloom.types import PhysicalType

    table = pa.table({"t": pa.array([dt.time(9), dt.time(10), dt.time(12)], pa.time64("us"))})
    utc_time = ColumnInfo(path="t", path_in_schema=("t",), ordinal=0, physical_type=PhysicalType.INT64,
                          logical_type="TIME", time_unit="micros", is_adjusted_to_utc=True)
    expression = conditions_expression([("t", "==", ["12:00:00+02:00"])], [utc_time], table.schema)
    assert table.filter(expression)["t"].to_pylist() == [dt.time(10)]
    before = conditions_expression([("t", "<", ["01:00:00+02:00"])], [utc_time], table.schema)  # 23:00 UTC
    assert table.filter(before)["t"].to_pylist() == [dt.time(9), dt.time(10), dt.time(12)]
    # pyarrow writes TIME as local (isAdjustedToUTC=false): an offset there names no stored value
    pq.write_table(table, tmp_path / "times.parquet")
    assert main(["query", str(tmp_path / "times.parquet"), "--where", "t = 10:00:00+02:00"]) == 2
    err = capsys.readouterr().err
    assert "has a UTC offset, but the column holds local times of day" in err
    assert main(["query", str(tmp_path / "times.parquet"), "--where", "t = 10:00:00", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ['"t"', "10:00:00.000000"]
