"""``secure-bloom query``: conditions parsed per column type, pyarrow's rows, the prune report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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


def test_parse_condition_and_or_parentheses_and_quotes() -> None:
    """Regression (issue 28 item 9): the text after '=' was one literal, so
    'country = NL AND email = a@example.com' asked for country 'NL AND email = a@example.com'."""
    from secure_bloom.parquet.read.where import Connective, Junction

    country, email = ("country", "==", ["NL"]), ("email", "==", ["a@example.com"])
    assert parse_condition("country = NL AND email = a@example.com") == Junction(Connective.AND, (country, email))
    assert parse_condition("country = NL and email = a@example.com or x in (1, 2)") == Junction(
        Connective.OR, (Junction(Connective.AND, (country, email)), ("x", "in", ["1", "2"])))
    assert parse_condition("country = NL AND (email = a@example.com OR x != 1)") == Junction(
        Connective.AND, (country, Junction(Connective.OR, (email, ("x", "!=", ["1"])))))
    assert parse_condition("name = 'John Smith AND co' OR name = \"O'Brien\" or name = 'it''s'") == Junction(
        Connective.OR, (("name", "==", ["John Smith AND co"]), ("name", "==", ["O'Brien"]), ("name", "==", ["it's"])))
    assert parse_condition("city in (New York, 'Paris, TX')") == ("city", "in", ["New York", "Paris, TX"])
    assert parse_condition("x in ()") == ("x", "in", [])
    assert parse_condition("k = abc== AND t >= 2024-05-01T00:00:00+02:00") == Junction(
        Connective.AND, (("k", "==", ["abc=="]), ("t", ">=", ["2024-05-01T00:00:00+02:00"])))
    for text, why in [("name = John Smith", "quote a value"), ("a = 1 AND", "expected COLUMN OP VALUE"),
                      ("(a = 1", "expected ')'"), ("a = 1)", "unmatched ')'"), ("x = 'abc", "unterminated"),
                      ("x in (a,)", "expected a list item"), ("a=1AND b=2", "expected AND, OR"),
                      ("(" * 100 + "a = 1" + ")" * 100, "nested deeper"), ("", "empty condition")]:
        with pytest.raises(InvalidValueError, match=re.escape(why)):
            parse_condition(text)


def _render(where: Any, rng: Any) -> str:
    """``where`` as text a user could type: values quoted (a quote inside doubled) or bare,
    keywords in random case, optional parentheses."""
    from secure_bloom.parquet.read.where import Junction

    if isinstance(where, Junction):
        word = where.connective.value
        word = "".join(c.upper() if rng.random() < 0.5 else c for c in word)
        parts = []
        for part in where.parts:
            text = _render(part, rng)
            parts.append(f"({text})" if isinstance(part, Junction) else text)  # a group: one part
        return f" {word} ".join(parts)
    column, op, values = where

    def value(v: str) -> str:
        if re.fullmatch(r"[A-Za-z0-9@._:+-]+", v) and v.lower() not in ("and", "or") and rng.random() < 0.5:
            return v
        quote = rng.choice("'\"")
        return quote + v.replace(quote, quote * 2) + quote

    if op in ("in", "not in"):
        return f"{column} {op} ({', '.join(value(v) for v in values)})"
    op = rng.choice({"==": ["=", "=="], "!=": ["!=", "<>"]}.get(op, [op]))
    return f"{column}{rng.choice(['', ' '])}{op}{rng.choice(['', ' '])}{value(values[0])}"


def test_parse_condition_reads_back_what_is_rendered() -> None:
    """Property: any tree of conditions, rendered with quoting (inner junctions in parentheses),
    parses back to itself."""
    import random

    from hypothesis import given
    from hypothesis import strategies as st

    from secure_bloom.parquet.read.where import Connective, Junction

    texts = st.text(st.sampled_from("ab Z9@.-:'\"(),=<>!AND or\u00e9 "), max_size=12)
    leaf = st.one_of(
        st.tuples(st.sampled_from(["email", "a.b", "n", "and", "x_1"]), st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
                  st.lists(texts, min_size=1, max_size=1)),
        st.tuples(st.sampled_from(["ssn", "c"]), st.sampled_from(["in", "not in"]),
                  st.lists(texts.filter(lambda t: t.strip() == t and t != ""), max_size=4)))

    def junctions(children: Any) -> Any:
        return st.builds(lambda c, parts: Junction(c, tuple(parts)), st.sampled_from(list(Connective)),
                         st.lists(children, min_size=2, max_size=3))

    @given(st.recursive(leaf, junctions, max_leaves=8), st.integers(0, 2**32))
    def check(where: Any, seed: int) -> None:
        text = _render(where, random.Random(seed))
        assert parse_condition(text) == where, text

    check()


@pytest.mark.parametrize("where", [
    "ssn = {s42} AND id = 42", "ssn = {s42} AND id = 43", "ssn = {s42} OR id = 2500",
    "(ssn = {s42} OR ssn = {s7}) AND id < 40", "id = 1 OR id = 1500 OR (ssn in ({s2999}, nobody) AND id > 2000)",
    "ssn not in ({s1}) AND id <= 2", "id = 5 or ssn = nobody"])
def test_query_compound_conditions_give_pyarrows_rows(encrypted: tuple[Path, Path], where: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """AND / OR / parentheses answer what pyarrow's own filtered read of the same expression does
    (row groups pruned by statistics and Bloom filters under OR too)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    data, keys = encrypted
    text = where.format(s42=ssn(42), s7=ssn(7), s2999=ssn(2999), s1=ssn(1))
    code = main(["query", str(data), "--where", text, "--columns", "id", "--json", "--key-list-file", str(keys)])
    assert code == 0, capsys.readouterr().err
    got = sorted(row["id"] for row in cli_result(capsys.readouterr().out, "query")["rows"])
    every = read_table(data, keys=KeyAccess(kms=vector_kms()))
    expected = {  # the same conditions as pyarrow expressions, evaluated by pyarrow on every row
        "ssn = {s42} AND id = 42": (pc.field("ssn") == ssn(42)) & (pc.field("id") == 42),
        "ssn = {s42} AND id = 43": (pc.field("ssn") == ssn(42)) & (pc.field("id") == 43),
        "ssn = {s42} OR id = 2500": (pc.field("ssn") == ssn(42)) | (pc.field("id") == 2500),
        "(ssn = {s42} OR ssn = {s7}) AND id < 40":
            ((pc.field("ssn") == ssn(42)) | (pc.field("ssn") == ssn(7))) & (pc.field("id") < 40),
        "id = 1 OR id = 1500 OR (ssn in ({s2999}, nobody) AND id > 2000)":
            (pc.field("id") == 1) | (pc.field("id") == 1500)
            | (pc.field("ssn").isin([ssn(2999), "nobody"]) & (pc.field("id") > 2000)),
        "ssn not in ({s1}) AND id <= 2": ~pc.field("ssn").isin([ssn(1)]) & (pc.field("id") <= 2),
        "id = 5 or ssn = nobody": (pc.field("id") == 5) | (pc.field("ssn") == "nobody"),
    }[where]
    assert got == sorted(ds.dataset(every).to_table(filter=expected)["id"].to_pylist())


def test_query_refuses_what_is_not_conditions(encrypted: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (issue 28 item 9): unquoted words after a value were part of one literal (exit 0, 0 rows)."""
    data, keys = encrypted
    assert main(["query", str(data), "--where", f"ssn = {ssn(42)} AND id = 42", "--columns", "id", "--format",
                 "csv", "--key-list-file", str(keys)]) == 0
    assert capsys.readouterr().out.splitlines() == ['"id"', "42"]
    assert main(["query", str(data), "--where", f"ssn = {ssn(42)} extra words", "--key-list-file", str(keys)]) == 2
    err = capsys.readouterr().err
    assert "expected AND, OR or the end" in err and "quote a value" in err and err.count("\n") == 1


def test_query_takes_json_like_every_command(encrypted: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (issue 28 item 10): 'query --json' was 'unrecognized option --json (did you mean --json?)'."""
    data, keys = encrypted
    assert main(["query", str(data), "--where", "id < 2", "--columns", "id", "--json", "--key-list-file",
                 str(keys)]) == 0
    assert cli_result(capsys.readouterr().out, "query") == {"rows": [{"id": 0}, {"id": 1}], "report": None}
    assert main(["query", str(data), "--where", "id < 2", "--json", "--format", "json", "--key-list-file",
                 str(keys)]) == 0
    assert cli_result(capsys.readouterr().out, "query")["rows"][1]["id"] == 1
    assert main(["query", str(data), "--where", "id < 2", "--json", "--format", "csv"]) == 2
    assert "--json and --format csv exclude each other" in capsys.readouterr().err
    # a misspelt option is matched against the command's own options, never against itself
    assert main(["query", str(data), "--where", "id < 2", "--jsn"]) == 2
    assert "unrecognized option --jsn (did you mean --json?)" in capsys.readouterr().err
    assert main(["inspect", str(data), "--explain"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized option --explain" in err and "did you mean --explain" not in err


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
