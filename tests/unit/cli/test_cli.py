"""The ``secure-bloom`` command line: inspect, probe, attach, audit, delegation, exit codes,
one-line errors and secret hygiene. Commands run in-process through ``main(argv)`` (capsys) and,
for exit codes and stderr format, as a real subprocess (``python -m secure_bloom.cli`` and the
installed console script)."""

from __future__ import annotations

import base64
import os
import re
import secrets
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from support import leaky_writer as lw
from support.cli_json import cli_one, cli_result
from secure_bloom import __version__
from secure_bloom.cli import main, parse_column_spec, parser
from secure_bloom.cli.keys import Redactor
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.types import PhysicalType
from support.openbao_server import OpenBaoServer
from support.paths import CLI_PROCESS, VECTORS_DIR

DATA = VECTORS_DIR
JAVA_BLOOM = str(DATA / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted")
PLAIN_BLOOM = str(DATA / "data_index_bloom_encoding_stats.parquet")
KEYS = ["--key", "kf=text:0123456789012345", "--key", "kc1=text:1234567890123450",
        "--key", "kc2=text:1234567890123451"]
ONE_LINE_ERROR = re.compile(r"\Asecure-bloom: error: [^\n]+\n\Z")


def argv_warning(*options: str) -> str:
    """The one stderr line that key material in argv always draws: it names the options only."""
    return (f"secure-bloom: warning: key material given on the command line ({', '.join(options)}) is visible to "
            "other local users (ps) and may be kept in shell history and CI logs; prefer --key-list-file PATH or "
            "$SECURE_BLOOM_KEY_LIST_FILE\n")


KEYS_WARNING = argv_warning("--key")
KEY_LIST_WARNING = argv_warning("--key-list")


def after_argv_warning(err: str, argv: Sequence[str]) -> str:
    """``err`` after the argv-key warning, which must lead it when ``argv`` gives keys inline."""
    options = [o for o in ("--key-list", "--key") if o in argv]
    if not options:
        return err
    warning = argv_warning(*options)
    assert err.startswith(warning), err
    return err[len(warning):]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def run_process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI_PROCESS, *argv], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def audit_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess

    d = tmp_path_factory.mktemp("cli")
    src = d / "src.parquet.encrypted"
    lw.write_pyarrow_encrypted(src)
    keys = KeyAccess(kms=KeyListKms(lw.key_list()))
    out = {"src": src}
    for name, modes in {"good": {"ssn": "column_key"}, "leak": {"ssn": "plaintext"}}.items():
        out[name] = d / f"{name}.parquet.encrypted"
        lw.inject_filters(src, out[name], modes, keys, values=lw.table_values())
    return out


def rebuilt_answer(values: list[Any], ptype: PhysicalType, num_bytes: int, probe: Any) -> str:
    """Independent oracle: the filter rebuilt from the known column values (byte-identical to the
    file's, SPEC_NOTES 10) answers for ``probe``."""
    bf = SplitBlockBloomFilter(num_bytes)
    bf.insert(values, ptype)
    return "maybe" if bf.might_contain(probe, ptype) else "absent"


# --- help and version ----------------------------------------------------------------------


def test_help_explains_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "--help")
    assert rc == 0
    for text in ("inspect", "probe", "attach", "audit", "dev-keys", "examples:", "exit codes:"):
        assert text in out
    for command in ("inspect", "probe", "attach", "audit"):
        rc, out, _ = run(capsys, command, "--help")
        assert rc == 0
        assert "examples:" in out and f"secure-bloom {command}" in out
        assert "--key-list" in out and "--kms-url" in out and "--aad-prefix" in out
    assert "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN" in run(capsys, "audit", "--help")[1]


def test_help_teaches_key_files_not_keys_in_argv(capsys: pytest.CaptureFixture[str]) -> None:
    """The top-level example used to pass the whole key list in argv ($(cat keys...))."""
    rc, out, _ = run(capsys, "--help")
    assert rc == 0
    assert '--key-list "$(cat' not in out and "--key-list ..." not in out
    assert "inspect data.parquet.encrypted --key-list-file keys/dev-key-list.txt" in out
    assert "export SECURE_BLOOM_KEY_LIST_FILE=keys/dev-key-list.txt" in out


VERSION_LINE = parser.version_line() + "\n"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "--version")
    assert (rc, err) == (0, "")
    assert out == VERSION_LINE
    # how it was installed (a shipped wheel's tag, a local build's, a source tree), both backends in
    # use (the compiled kernel / decoder where built, else why not) and the wheel tags shipped
    assert out.startswith(f"secure-bloom {__version__} (")
    assert re.fullmatch(r"secure-bloom \S+ \((wheel cp3\d+-cp3\d+-\S+|built from source \(cp3\d+-cp3\d+-\S+\)|"
                        r"source tree); kernel: (native \((avx2|scalar); .+\)|numpy fallback \(.+\)); "
                        r"thrift decoder: (native \(.+ -O3\)|python fallback \(.+\)); "
                        r"AES-GCM: (native \(OpenSSL .+\)|cryptography fallback \(.+\)); "
                        r"wheels shipped: cp310, cp311, cp312, cp313 for manylinux_2_17_x86_64\)\n", out)
    assert f"cp{sys.version_info.major}{sys.version_info.minor}-" in out or "source tree" in out


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys)
    assert rc == 2 and "usage:" in out


# --- inspect -------------------------------------------------------------------------------


def test_inspect_parquet_java_file(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "inspect", JAVA_BLOOM, *KEYS)
    assert (rc, err) == (0, KEYS_WARNING)
    lines = {line.split()[1]: line.split() for line in out.splitlines()
             if line.startswith("  0 ") and len(line.split()) > 6}
    assert lines["double_field"][2:] == ["yes", "encrypted", "(verified)", "column", "key", "kc1", "2048",
                                         "29667", "2212"]
    assert lines["int32_field"][2] == "no"
    assert "2 of 4 column chunks have a Bloom filter" in out
    assert "footer: encrypted, AES_GCM_V1, footer key 'kf' (available)" in out


def test_inspect_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "inspect", JAVA_BLOOM, "--json", *KEYS)
    assert rc == 0
    doc = cli_one(out)
    assert doc["num_row_groups"] == 1 and doc["footer"]["mode"] == "encrypted"
    chunks = {c["column"]: c for c in doc["row_groups"][0]["chunks"]}
    assert {k: chunks["float_field"][k] for k in ("has_bloom_filter", "encrypted", "key_id", "filter_num_bytes",
                                                   "filter_storage", "filter_verified")} == {
        "has_bloom_filter": True, "encrypted": True, "key_id": "kc2", "filter_num_bytes": 2048,
        "filter_storage": "encrypted", "filter_verified": True}
    assert chunks["name"]["has_bloom_filter"] is False and chunks["name"]["encrypted"] is False


def test_inspect_shows_a_leaked_filter(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path]) -> None:
    rc, out, _ = run(capsys, "inspect", str(audit_files["leak"]), "--key-list", lw.key_list())
    assert rc == 0
    assert "PLAINTEXT (leak)" in out
    assert "row group 1, column 'ssn': PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN" in out


def answers_by_label(group: dict[str, Any]) -> dict[str, str]:
    """A probe JSON row group's answers by label (for tests whose labels are distinct)."""
    labels = [v["value"] for v in group["values"]]
    assert len(set(labels)) == len(labels), labels
    return {v["value"]: v["answer"] for v in group["values"]}


# --- probe ---------------------------------------------------------------------------------


def test_probe_json_exact_shape(capsys: pytest.CaptureFixture[str]) -> None:
    present = [i + 0.5 for i in range(2000)]
    probes = ["0.5", "1999.5", "2000.5", "-7.25"]
    rc, out, err = run(capsys, "probe", JAVA_BLOOM, "--column", "double_field", *sum(
        (["--value", v] for v in probes), []), "--json", *KEYS)
    assert (rc, err) == (0, KEYS_WARNING)
    assert cli_one(out) == {
        "file": JAVA_BLOOM, "column": "double_field",
        "values": probes,
        "row_groups": [{"row_group": 0, "has_bloom_filter": True, "encrypted": True, "values": [
            {"value": v, "answer": rebuilt_answer(present, PhysicalType.DOUBLE, 2048, float(v))} for v in probes]}]}
    assert answers_by_label(cli_one(out)["row_groups"][0])["0.5"] == "maybe"


def test_probe_float_column_and_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    rc, out, _ = run(capsys, "probe", JAVA_BLOOM, "--column", "float_field", "--value", "0.25",
                     "--value", "1000.25", *KEYS)
    assert rc == 0
    assert "value 0.25: may be in row group 0; absent from 0 of 1" in out
    assert "value 1000.25: may be in row group 0; absent from 0 of 1" in out
    absent = [v for v in ("0.75", "3.5", "-1", "5000.25") if rebuilt_answer(
        [np.float32(i + 0.25) for i in range(2000)], PhysicalType.FLOAT, 2048, np.float32(v)) == "absent"]
    assert absent, "at least one probe value must be absent for this test to mean something"
    _, out, _ = run(capsys, "probe", JAVA_BLOOM, "--column", "float_field", "--value", absent[0], *KEYS)
    assert f"value {absent[0]}: may be in no row group; absent from 1 of 1" in out


def test_probe_plaintext_file_without_keys(capsys: pytest.CaptureFixture[str]) -> None:
    words = ["Hello", "This is", "a", "test", "How", "are you", "doing ", "today", "the quick", "brown fox",
             "jumps", "over", "the lazy", "dog"]
    rc, out, _ = run(capsys, "probe", PLAIN_BLOOM, "--column", "String", "--value", "today",
                     "--value", "tomorrow", "--json")
    assert rc == 0
    values = answers_by_label(cli_one(out)["row_groups"][0])
    assert values == {"today": "maybe",
                      "tomorrow": rebuilt_answer(words, PhysicalType.BYTE_ARRAY, 1024, "tomorrow")}


def test_probe_row_group_without_filter_answers_maybe(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "probe", JAVA_BLOOM, "--column", "int32_field", "--value", "123456789",
                     "--json", *KEYS)
    assert rc == 0
    assert cli_one(out)["row_groups"] == [
        {"row_group": 0, "has_bloom_filter": False, "encrypted": False,
         "values": [{"value": "123456789", "answer": "maybe"}]}]


@pytest.fixture(scope="module")
def typed_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One row group, pyarrow's own Bloom filters on: strings that look like our prefixes, numbers
    that start with '-', -0.0, TIME(NANOS), and UTC / wall-clock timestamps."""
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("typed") / "typed.parquet"
    n = 300
    strings = ["hex:ab", "text:x", "-abc"] + [f"s{i}" for i in range(n - 3)]
    doubles = [-1e5, float("-inf"), -0.0] + [i + 0.5 for i in range(n - 3)]
    times = [((12 * 60 + 34) * 60 + 56) * 10**9 + 123_456_789 + i for i in range(n)]
    base = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    instants = [base + dt.timedelta(seconds=61 * i) for i in range(n)]
    table = pa.table({"s": strings, "d": pa.array(doubles, pa.float64()), "t": pa.array(times, pa.time64("ns")),
                      "ts": pa.array(instants, pa.timestamp("us", tz="UTC")),
                      "wall": pa.array([t.replace(tzinfo=None) for t in instants], pa.timestamp("us"))})
    pq.write_table(table, path, bloom_filter_options={c: {"ndv": 1000, "fpp": 0.01} for c in table.column_names})
    return path


def probe_answers(capsys: pytest.CaptureFixture[str], path: Path, column: str, *options: str) -> list[str]:
    rc, out, err = run(capsys, "probe", str(path), "--column", column, "--json", *options)
    assert (rc, err) == (0, ""), err
    return [v["answer"] for v in cli_one(out)["row_groups"][0]["values"]]


def test_probe_string_column_takes_prefixes_literally(capsys: pytest.CaptureFixture[str], typed_file: Path) -> None:
    """Regression (issue 15 item 10): 'hex:ab' and 'text:x' stored in a STRING column answered absent."""
    assert probe_answers(capsys, typed_file, "s", "--value", "hex:ab", "--value", "text:x") == ["maybe", "maybe"]
    help_text = run(capsys, "probe", "--help")[1]
    assert "Text is taken literally for string columns" in help_text


def test_probe_values_may_start_with_a_dash(capsys: pytest.CaptureFixture[str], typed_file: Path) -> None:
    """Regression (issue 15 item 19): --value -1e5 / -inf / -abc failed with 'expected one argument'."""
    assert probe_answers(capsys, typed_file, "d", "--value", "-1e5", "--value", "-inf") == ["maybe", "maybe"]
    assert probe_answers(capsys, typed_file, "s", "--value", "-abc") == ["maybe"]
    # as with getopt, the word after --value is the value whatever it looks like
    assert len(probe_answers(capsys, typed_file, "s", "--value", "--json")) == 1


def test_probe_zero_finds_negative_zero(capsys: pytest.CaptureFixture[str], typed_file: Path) -> None:
    """Regression (issue 15 item 11): 0 answered absent for a column holding -0.0; nan is always maybe."""
    assert probe_answers(capsys, typed_file, "d", "--value", "0", "--value", "nan", "--value", "-nan") == [
        "maybe"] * 3


def test_probe_time_nanos_text_keeps_every_digit(capsys: pytest.CaptureFixture[str], typed_file: Path) -> None:
    """Regression (issue 15 item 21): 12:34:56.123456789 was cut to micros and answered absent."""
    assert probe_answers(capsys, typed_file, "t", "--value", "12:34:56.123456789",
                         "--value", "12:34:56.123456790") == ["maybe", "maybe"]


def test_probe_time_offset_on_a_local_time_column_is_refused(capsys: pytest.CaptureFixture[str],
                                                            typed_file: Path) -> None:
    """Regression: the offset of '12:34:56.123456789+02:00' was dropped and the probe answered for
    12:34:56 local. pyarrow's TIME columns are local (isAdjustedToUTC=false): an offset is refused."""
    rc, out, err = run(capsys, "probe", str(typed_file), "--column", "t", "--value", "12:34:56.123456789+02:00")
    assert (rc, out) == (2, "")
    assert "column 't'" in err and "has a UTC offset, but the column holds local times of day" in err


def test_probe_naive_text_on_a_utc_column_needs_timezone(capsys: pytest.CaptureFixture[str],
                                                         typed_file: Path) -> None:
    """Regression (issue 15 item 26): naive text was taken as UTC; now it needs --timezone or an offset."""
    rc, out, err = run(capsys, "probe", str(typed_file), "--column", "ts", "--value", "2024-05-01T14:00:00")
    assert (rc, out) == (2, "")
    assert "column 'ts'" in err and "naive" in err and "--timezone" in err
    assert probe_answers(capsys, typed_file, "ts", "--value", "2024-05-01T14:00:00", "--timezone",
                         "Europe/Paris") == ["maybe"]
    assert probe_answers(capsys, typed_file, "ts", "--value", "2024-05-01T12:00:00Z") == ["maybe"]
    assert probe_answers(capsys, typed_file, "wall", "--value", "2024-05-01T12:00:00") == ["maybe"]
    rc, _, err = run(capsys, "probe", str(typed_file), "--column", "ts", "--value", "x", "--timezone", "Mars/X")
    # usage errors never echo an argument's value (it may be key material given to the wrong option)
    assert rc == 2 and "unknown time zone '<not shown>' (e.g. UTC, Europe/Paris)" in err and "Mars" not in err


def test_probe_keeps_one_answer_per_value_typed(capsys: pytest.CaptureFixture[str], typed_file: Path) -> None:
    """Regression (issue 15 item 24): answers are a list labelled by the text typed; none collapse."""
    rc, out, _ = run(capsys, "probe", str(typed_file), "--column", "d", "--value", "0", "--value", "0.0",
                     "--value", "0", "--json")
    doc = cli_one(out)
    assert rc == 0 and doc["values"] == ["0", "0.0", "0"]
    assert doc["row_groups"][0]["values"] == [{"value": v, "answer": "maybe"} for v in ("0", "0.0", "0")]
    rc, out, _ = run(capsys, "probe", str(typed_file), "--column", "d", "--value", "0", "--value", "0")
    assert out.count("value 0: may be in row group 0; absent from 0 of 1") == 2


# --- Spark-written files -------------------------------------------------------------------


@pytest.mark.interop
def test_spark_files_with_key_list(capsys: pytest.CaptureFixture[str], spark_bloom_files: Any,
                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = spark_bloom_files.columns["s"]
    key_list = spark_bloom_files.key_list
    for name, f in spark_bloom_files.files.items():
        present = [expected.row_groups[g][5] for g in range(3)]
        argv = ["probe", str(f.path), "--column", "s", "--json", "--key-list", key_list,
                *sum((["--value", v] for v in present), [])]
        rc, out, err = run(capsys, *argv)
        assert (rc, err) == (0, KEY_LIST_WARNING), name
        doc = cli_one(out)
        assert [(g["has_bloom_filter"], g["encrypted"]) for g in doc["row_groups"]] == [(True, True)] * 3
        for g, value in enumerate(present):
            assert answers_by_label(doc["row_groups"][g])[value] == "maybe", (name, g)
    # Absent values are mostly absent (fpp 1 %); dates, timestamps and decimals parse from text.
    gcm = str(spark_bloom_files.files["gcm_footer"].path)
    absent = [f"absent-{i:05d}" for i in range(40)]
    rc, out, _ = run(capsys, "probe", gcm, "--column", "s", "--json", "--key-list", key_list,
                     *sum((["--value", v] for v in absent), []))
    answers = [a for g in cli_one(out)["row_groups"] for a in answers_by_label(g).values()]
    assert answers.count("absent") >= 0.9 * len(answers)
    for column, text in (("day", "2000-01-01"), ("ts", "2024-01-01T00:00:00Z"), ("dec", "0.00")):
        rc, out, _ = run(capsys, "probe", gcm, "--column", column, "--value", text, "--json", "--key-list", key_list)
        assert rc == 0 and answers_by_label(cli_one(out)["row_groups"][0])[text] == "maybe", column
    # inspect, with the key list from a file and from the environment.
    key_file = tmp_path / "keys.txt"
    key_file.write_text(key_list)
    rc, out, _ = run(capsys, "inspect", gcm, "--json", "--key-list-file", str(key_file))
    chunks = [c for rg in cli_one(out)["row_groups"] for c in rg["chunks"]]
    assert {c["column"] for c in chunks if c["filter_verified"]} == {
        "i32", "i64", "f32", "f64", "nested.x", "s", "dec", "day", "ts", "pub"}
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST", key_list)
    assert run(capsys, "inspect", gcm)[0] == 0
    monkeypatch.delenv("SECURE_BLOOM_KEY_LIST")
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST_FILE", str(key_file))
    assert run(capsys, "inspect", gcm)[0] == 0


def test_probe_and_inspect_a_directory(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path],
                                       tmp_path: Path) -> None:
    d = tmp_path / "dataset" / "day=1"
    d.mkdir(parents=True)
    for name in ("src", "good"):
        (d / f"part-{name}.parquet").write_bytes(audit_files[name].read_bytes())
    kl = ["--key-list", lw.key_list()]
    rc, out, _ = run(capsys, "probe", str(tmp_path / "dataset"), "--column", "ssn", "--value", "ssn-0060", "--json", *kl)
    assert rc == 0
    docs = cli_result(out)
    assert [Path(doc["file"]).name for doc in docs] == ["part-good.parquet", "part-src.parquet"]
    assert [g["has_bloom_filter"] for g in docs[0]["row_groups"]] == [True, True]
    assert answers_by_label(docs[0]["row_groups"][1]) == {"ssn-0060": "maybe"}
    assert [answers_by_label(g)["ssn-0060"] for g in docs[1]["row_groups"]] == ["maybe", "maybe"]  # no filters
    rc, out, _ = run(capsys, "probe", str(tmp_path / "dataset"), "--column", "ssn", "--value", "ssn-0060", *kl)
    assert "value ssn-0060: may be in 2 of 2 files" in out
    rc, out, _ = run(capsys, "inspect", str(tmp_path / "dataset"), "--json", *kl)
    assert rc == 0 and len(cli_result(out)) == 2


def test_probe_values_file_by_value_equals_the_per_file_answers(capsys: pytest.CaptureFixture[str],
                                                                 audit_files: dict[str, Path], tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """--values-file adds values after the --value ones (one per line, a CRLF line end is not part
    of a value); --json --by-value lists per value exactly the files and row groups the per-file
    --json answers "maybe" for (a file without filters: all its row groups)."""
    import io
    import json

    d = tmp_path / "dataset"
    d.mkdir()
    for name in ("src", "good"):
        (d / f"part-{name}.parquet").write_bytes(audit_files[name].read_bytes())
    values = ["ssn-0060", "ssn-0007", "absent-1", "ssn-2990", "absent-2", "ssn-0060"]
    listed = tmp_path / "values.txt"
    listed.write_bytes(("\n".join(values[1:4]) + "\r\n" + "\n".join(values[4:]) + "\n").encode())
    kl = ["--key-list", lw.key_list()]
    rc, out, _ = run(capsys, "probe", str(d), "--column", "ssn", *[a for v in values for a in ("--value", v)],
                     "--json", *kl)
    assert rc == 0
    docs = cli_result(out, "probe")
    expected = [[{"file": i, "row_groups": groups} for i, doc in enumerate(docs)
                 if (groups := [g["row_group"] for g in doc["row_groups"] if g["values"][v]["answer"] == "maybe"])]
                for v in range(len(values))]
    rc, out, _ = run(capsys, "probe", str(d), "--column", "ssn", "--value", values[0], "--values-file", str(listed),
                     "--json", "--by-value", *kl)
    assert rc == 0 and out.count("\n") == 1  # one line
    doc = json.loads(out)
    assert (doc["version"], doc["command"]) == (1, "probe")
    result = doc["result"]
    assert result["column"] == "ssn"
    assert result["files"] == [{"file": d["file"], "num_row_groups": len(d["row_groups"])} for d in docs]
    assert [v["value"] for v in result["values"]] == values
    assert [v["maybe"] for v in result["values"]] == expected
    # found in the filtered file / absent there (only the file without filters may hold it) / repeated
    assert {hit["file"] for hit in expected[0]} == {0, 1} and [hit["file"] for hit in expected[2]] == [1]
    assert expected[0] == expected[-1]
    monkeypatch.setattr("sys.stdin", io.StringIO("ssn-0060\n"))
    rc, out, _ = run(capsys, "probe", str(d), "--column", "ssn", "--values-file", "-", "--json", "--by-value", *kl)
    assert rc == 0 and json.loads(out)["result"]["values"] == [{"value": "ssn-0060", "maybe": expected[0]}]


def test_probe_values_options_are_checked(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path],
                                         tmp_path: Path) -> None:
    good, kl = str(audit_files["good"]), ["--key-list", lw.key_list()]
    rc, _, err = run(capsys, "probe", good, "--column", "ssn", *kl)
    assert rc == 2 and "give at least one --value V or a --values-file PATH" in err
    rc, _, err = run(capsys, "probe", good, "--column", "ssn", "--value", "x", "--by-value", *kl)
    assert rc == 2 and "--by-value is a form of --json output" in err
    rc, _, err = run(capsys, "probe", good, "--column", "ssn", "--values-file", str(tmp_path / "missing.txt"), *kl)
    assert rc != 0 and "missing.txt" in err and "Traceback" not in err
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9\n")
    rc, _, err = run(capsys, "probe", good, "--column", "ssn", "--values-file", str(tmp_path / "latin1.txt"), *kl)
    assert rc == 2 and "latin1.txt: not UTF-8 text" in err


def test_broken_pipe_is_quiet(audit_files: dict[str, Path]) -> None:
    many = [a for i in range(4000) for a in ("--value", f"value-{i:06d}")]  # > a pipe buffer of JSON
    proc = subprocess.Popen([*CLI_PROCESS, "probe", str(audit_files["good"]),
                             "--column", "ssn", *many, "--json", "--key-list", lw.key_list()],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == KEY_LIST_WARNING  # the warning only: nothing is reported about the pipe


# --- attach --------------------------------------------------------------------------------


def test_attach_then_probe_and_audit(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path],
                                     tmp_path: Path) -> None:
    dst = tmp_path / "attached.parquet.encrypted"
    kl = ["--key-list", lw.key_list()]
    rc, out, err = run(capsys, "attach", str(audit_files["src"]), str(dst), "--bloom", "ssn:fpp=0.001",
                       "--bloom", "email:ndv=10", "--json", *kl)
    assert (rc, err) == (0, KEY_LIST_WARNING)
    filters = cli_result(out)["filters"]
    assert sorted((f["column"], f["row_group"], f["encrypted"], f["ndv"]) for f in filters) == [
        ("email", 0, True, 10), ("email", 1, True, 10), ("ssn", 0, True, 50), ("ssn", 1, True, 50)]
    ssn = {f["row_group"]: f["num_bytes"] for f in filters if f["column"] == "ssn"}
    email = {f["row_group"]: f["num_bytes"] for f in filters if f["column"] == "email"}
    assert ssn[0] > email[0]  # fpp 0.001 for 50 values needs more bits than 1 % for 10
    rc, out, _ = run(capsys, "probe", str(dst), "--column", "ssn", "--value", "ssn-0001", "--value", "ssn-0099",
                     "--json", *kl)
    values = [answers_by_label(g) for g in cli_one(out)["row_groups"]]
    assert values[0]["ssn-0001"] == "maybe" and values[1]["ssn-0099"] == "maybe"
    assert run(capsys, "audit", str(dst), "--sensitive", "ssn,email", *kl)[0] == 0
    rc, _, err = run(capsys, "attach", str(audit_files["src"]), str(dst), "--bloom", "ssn", *kl)
    assert rc == 2 and "already exists (use --overwrite" in err
    assert run(capsys, "attach", str(audit_files["src"]), str(dst), "--bloom", "ssn", "--overwrite", *kl)[0] == 0


def test_attach_in_place(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    path.write_bytes(Path(PLAIN_BLOOM).read_bytes())
    rc, out, _ = run(capsys, "attach", str(path), str(path), "--bloom", "String:ndv=14", "--overwrite")
    assert rc == 0 and "wrote" in out
    rc, out, _ = run(capsys, "inspect", str(path), "--json")
    (chunk,) = cli_one(out)["row_groups"][0]["chunks"]
    assert chunk["filter_num_bytes"] == 32  # 14 values at 1 % -> one block (was 1024 bytes)


def test_probe_ambiguous_dotted_path_and_json_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "amb.parquet"
    pq.write_table(pa.table({"a.b": pa.array(["top"]), "a": pa.array([{"b": "nested"}])}), path)
    rc, _, err = run(capsys, "probe", str(path), "--column", "a.b", "--value", "top")
    assert rc == 2 and ONE_LINE_ERROR.match(err), err  # AMBIGUOUS_COLUMN: the caller's to fix (was 3)
    assert """it names the leaves ["a.b"] and ["a", "b"]""" in err and """--column '["a.b"]'""" in err
    for column, leaf in (('["a.b"]', "a.b"), ('["a", "b"]', "a.b")):
        rc, out, err = run(capsys, "probe", str(path), "--column", column, "--value", "top", "--json")
        assert (rc, err) == (0, ""), err
        assert cli_one(out)["column"] == leaf
    rc, out, _ = run(capsys, "attach", str(path), str(tmp_path / "out.parquet"), "--bloom", '["a", "b"]:ndv=1')
    assert rc == 0 and "Bloom filters for a.b" in out
    rc, out, _ = run(capsys, "probe", str(tmp_path / "out.parquet"), "--column", '["a", "b"]',
                     "--value", "nested", "--value", "top", "--json")
    assert answers_by_label(cli_one(out)["row_groups"][0]) == {"nested": "maybe", "top": "absent"}
    rc, out, _ = run(capsys, "probe", str(tmp_path / "out.parquet"), "--column", '["a.b"]', "--value", "top", "--json")
    assert cli_one(out)["row_groups"][0] == {"row_group": 0, "has_bloom_filter": False, "encrypted": False,
                                                "values": [{"value": "top", "answer": "maybe"}]}


@pytest.mark.parametrize("spec,expected", [
    ("email", ("email", None, None)),
    ("a.b.c:ndv=1000", ("a.b.c", 1000, None)),
    ("ssn:fpp=0.001:ndv=5", ("ssn", 5, 0.001)),
    ("odd:name", ("odd:name", None, None)),
    ('["a.b"]:ndv=3', (("a.b",), 3, None)),
    ('["a", "b:c"]', (("a", "b:c"), None, None)),
])
def test_parse_column_spec(spec: str, expected: tuple[str, int | None, float | None]) -> None:
    assert parse_column_spec(spec) == expected


@pytest.mark.parametrize("spec", ["x:ndv=many", "x:fpp=2", "x:size=3", ":ndv=3", "x:ndv=-1", "x:ndv=0", "[a.b]", "[]", '["a", 1]'])
def test_parse_column_spec_rejects(capsys: pytest.CaptureFixture[str], spec: str) -> None:
    rc, _, err = run(capsys, "attach", PLAIN_BLOOM, "/tmp/never-written.parquet", "--bloom", spec)
    assert rc == 2 and ONE_LINE_ERROR.match(err), err


def test_column_spec_errors_name_the_option_given(capsys: pytest.CaptureFixture[str]) -> None:
    """Regression (issue 28 item 11): 'attach --bloom email:fpp=2' named --column (the deprecated
    alias) in its error."""
    rc, _, err = run(capsys, "attach", PLAIN_BLOOM, "/tmp/never-written.parquet", "--bloom", "email:fpp=2")
    assert rc == 2 and ONE_LINE_ERROR.match(err), err
    assert "--bloom 'email:fpp=2': false-positive probability must be in (0, 1)" in err and "--column" not in err
    rc, _, err = run(capsys, "encrypt", PLAIN_BLOOM, "/tmp/never-written.parquet", "--footer-key", "kf", "--uniform",
                     "--bloom", "[x")
    assert rc == 2 and "--bloom '[x': not a JSON array" in err and "--column" not in err
    rc, _, err = run(capsys, "attach", PLAIN_BLOOM, "/tmp/never-written.parquet", "--column", "email:size=2")
    assert rc == 2
    assert err.splitlines() == ["secure-bloom: warning: --column is deprecated, use --bloom",
                                "secure-bloom: error: --column 'email:size=2': unknown option 'size' (use ndv=N, fpp=P, sizing=fixed or num_bytes=N)"]


# --- audit ---------------------------------------------------------------------------------


def test_audit_exit_codes_and_reports(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path],
                                      tmp_path: Path) -> None:
    kl = ["--key-list", lw.key_list()]
    rc, out, err = run(capsys, "audit", str(audit_files["good"]), "--sensitive", "ssn", *kl)
    assert (rc, err) == (0, KEY_LIST_WARNING) and "result: COMPLIANT" in out
    rc, out, _ = run(capsys, "audit", str(audit_files["leak"]), "--sensitive", "ssn", *kl)
    assert rc == 1 and "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN" in out and "NOT COMPLIANT" in out
    rc, out, _ = run(capsys, "audit", str(audit_files["good"]), "--sensitive", "ssn", "--sensitive", "city", *kl)
    assert rc == 1 and "SENSITIVE_COLUMN_NOT_ENCRYPTED" in out
    rc, out, _ = run(capsys, "audit", str(audit_files["good"]), "--sensitive", "ssn")  # no keys
    assert rc == 2 and "COULD NOT CHECK" in out and "INCOMPLETE" in out

    junit = tmp_path / "audit.xml"
    rc, out, _ = run(capsys, "audit", str(audit_files["good"]), str(audit_files["leak"]), "--sensitive", "ssn,email",
                     "--json", "--junit-xml", str(junit), *kl)
    assert rc == 1
    doc = cli_result(out)
    assert doc["exit_code"] == 1 and doc["summary"]["violations"] == 1
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "4" and suite.get("failures") == "1"
    (failure,) = suite.iter("failure")
    assert failure.get("type") == "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"


def test_audit_directory(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path]) -> None:
    rc, out, err = run(capsys, "audit", str(audit_files["src"].parent), "--sensitive", "ssn", "--json",
                       "--key-list", lw.key_list())
    assert rc == 1 and err == KEY_LIST_WARNING  # no progress bar: stderr is not a terminal
    statuses = {Path(f["file"]).name: f["status"] for f in cli_result(out)["files"]}
    assert statuses == {"good.parquet.encrypted": "pass", "leak.parquet.encrypted": "violation",
                        "src.parquet.encrypted": "pass"}


def test_audit_junit_unwritable_is_error(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path],
                                         tmp_path: Path) -> None:
    rc, _, err = run(capsys, "audit", str(audit_files["good"]), "--sensitive", "ssn", "--key-list", lw.key_list(),
                     "--junit-xml", str(tmp_path / "no" / "such" / "dir.xml"))
    assert rc == 3 and ONE_LINE_ERROR.match(after_argv_warning(err, ["--key-list"])), err


def test_inspect_and_audit_escape_control_characters(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Column and file names are the file writer's: an ANSI escape in them reached the terminal raw."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    red = "\x1b[31mred\x1b[0m"
    path = tmp_path / "evil\x1b]0;title\x07.parquet"
    pq.write_table(pa.table({red: ["a"], "ssn": ["b"]}), path)
    rc, out, _ = run(capsys, "inspect", str(path))
    assert rc == 0 and "\x1b" not in out and "\x07" not in out
    assert "\\x1b[31mred\\x1b[0m" in out and "evil\\x1b]0;title\\x07.parquet" in out
    rc, out, _ = run(capsys, "audit", str(path), "--sensitive", f"ssn,{red}")
    assert rc == 1 and "\x1b" not in out and "\\x1b[31mred" in out
    rc, out, _ = run(capsys, "inspect", str(path), "--json")
    assert rc == 0 and cli_one(out)["columns"][0]["path"] == red  # JSON keeps the exact name


def test_audit_reports_are_valid_for_any_file_name(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path],
                                                   tmp_path: Path) -> None:
    """A non-UTF-8 file name crashed --junit-xml (UnicodeEncodeError, exit 3, empty file) and a
    control character made XML that does not parse; the JSON and text reports must not crash either."""
    d = tmp_path / "names"
    d.mkdir()
    undecodable = os.fsdecode(os.fsencode(str(d)) + b"/bad\xff.parquet")
    control = str(d / "ctl\x01\x1b.parquet")
    for name in (undecodable, control):
        Path(name).write_bytes(audit_files["good"].read_bytes())
    junit = tmp_path / "audit.xml"
    kl = ["--key-list", lw.key_list()]
    rc, out, err = run(capsys, "audit", str(d), "--sensitive", "ssn", "--junit-xml", str(junit), *kl)
    assert (rc, err) == (0, KEY_LIST_WARNING)
    assert "bad\\xff.parquet" in out and "ctl\\x01\\x1b.parquet" in out
    cases = ET.parse(junit).getroot().iter("testcase")
    assert sorted(Path(c.get("classname", "")).name for c in cases) == ["bad\\xff.parquet", "ctl\\x01\\x1b.parquet"]
    rc, out, _ = run(capsys, "audit", str(d), "--sensitive", "ssn", "--json", *kl)
    assert rc == 0
    assert sorted(f["file"] for f in cli_result(out)["files"]) == sorted([undecodable, control])


def _without_dac_override() -> None:
    """preexec_fn: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so that
    the exec'd process, even as root, obeys file permissions (chmod 000 then really blocks)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_unreadable_subdirectory_does_not_hide_violations(audit_files: dict[str, Path], tmp_path: Path) -> None:
    """One unreadable subdirectory made inspect say "no Parquet files" and audit report
    NO_PARQUET_FILES (exit 2), hiding the leak in the readable file. A real EACCES: the CLI runs
    with the permission-override capabilities dropped (root otherwise reads a mode-000 directory)."""
    root = tmp_path / "lake"
    (root / "ok").mkdir(parents=True)
    (root / "locked").mkdir()
    (root / "ok" / "leak.parquet").write_bytes(audit_files["leak"].read_bytes())
    (root / "locked" / "x.parquet").write_bytes(audit_files["good"].read_bytes())
    key_file = tmp_path / "keys.txt"
    key_file.write_text(lw.key_list())
    (root / "locked").chmod(0)

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI_PROCESS, *argv, "--key-list-file", str(key_file)],
                              capture_output=True, text=True, timeout=120, env=dict(os.environ),
                              preexec_fn=_without_dac_override if os.geteuid() == 0 else None)

    try:
        probe = subprocess.run(["ls", str(root / "locked")], capture_output=True,
                               preexec_fn=_without_dac_override if os.geteuid() == 0 else None)
        assert probe.returncode != 0, "the directory must really be unreadable for the test to mean anything"
        audited = cli("audit", str(root), "--sensitive", "ssn", "--json")
        inspected = cli("inspect", str(root))
    finally:
        (root / "locked").chmod(0o755)
    assert audited.returncode == 1, audited.stderr
    doc = cli_result(audited.stdout)
    assert [(Path(f["file"]).name, f["status"], (f["error"] or {}).get("kind")) for f in doc["files"]] == [
        ("locked", "could_not_check", "UNREADABLE_DIRECTORY"), ("leak.parquet", "violation", None)]
    assert inspected.returncode == 2
    assert "file: " + str(root / "ok" / "leak.parquet") in inspected.stdout
    assert inspected.stderr == (f"secure-bloom: error: could not check 1 path (the output above is incomplete): "
                                f"{root / 'locked'}: cannot read directory: Permission denied\n")


# --- errors: one line, right exit code, no traceback ---------------------------------------


def _error_cases(tmp_path: Path) -> list[tuple[str, list[str], int, str]]:
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"this is not parquet, it is text" * 3)
    (tmp_path / "empty").mkdir(exist_ok=True)
    fifo = tmp_path / "fifo.parquet"  # it used to hang inspect (open() waits for a writer)
    if not fifo.exists():
        os.mkfifo(fifo)
    return [
        ("missing file", ["probe", str(tmp_path / "missing.parquet"), "--column", "a", "--value", "1"], 2,
         "No such file or directory"),
        ("not parquet", ["inspect", str(junk)], 2, "magic"),
        ("unknown column", ["probe", JAVA_BLOOM, "--column", "nope", "--value", "1", *KEYS], 2, "no leaf column 'nope'"),
        ("bad value", ["probe", JAVA_BLOOM, "--column", "double_field", "--value", "twelve", *KEYS], 2,
         "'twelve' is not a number"),
        ("bad hex", ["probe", str(DATA / "encrypt_columns_plaintext_footer.parquet.encrypted"), "--column", "ba_field",
                     "--value", "hex:zz"], 2, "not valid hex"),
        ("wrong footer key", ["inspect", JAVA_BLOOM, "--key", "kf=text:0123456789012399"], 2, "authentication failed"),
        ("wrong column key", ["probe", JAVA_BLOOM, "--column", "double_field", "--value", "1",
                              "--key", "kf=text:0123456789012345", "--key", "kc1=text:0000000000000000"], 2,
         "authentication failed"),
        ("missing key", ["probe", JAVA_BLOOM, "--column", "double_field", "--value", "1"], 2, "footer key 'kf'"),
        ("empty directory", ["inspect", str(tmp_path / "empty")], 2, "no Parquet files in this directory"),
        ("a FIFO", ["inspect", str(fifo)], 2, "fifo.parquet: is a FIFO, not a regular file; not read"),
        ("bad key spec", ["inspect", JAVA_BLOOM, "--key", "kf=text:short"], 2, "16, 24 or 32 bytes"),
        ("bad key list", ["inspect", JAVA_BLOOM, "--key-list", "kf=notbase64"], 2, "key list entry 1"),
        ("two key lists", ["inspect", JAVA_BLOOM, "--key-list", "a:b", "--key-list-file", "x"], 2, "not both"),
        ("unknown option", ["inspect", JAVA_BLOOM, "--frobnicate"], 2, "unrecognized option --frobnicate"),
        ("missing option", ["probe", JAVA_BLOOM, "--column", "x"], 2, "--value"),
        ("KMS token not set", ["inspect", JAVA_BLOOM, "--kms-url", "http://127.0.0.1:9", "--kms-token-env",
                               "SECURE_BLOOM_TEST_UNSET_VARIABLE"], 2, "needs a token"),
        ("bad fpp", ["attach", PLAIN_BLOOM, str(tmp_path / "o.parquet"), "--bloom", "String", "--fpp", "7"], 2,
         "(0, 1)"),
    ]


def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name, argv, code, text in _error_cases(tmp_path):
        for debug in ([], ["--debug"]):
            rc, out, err = run(capsys, *argv, *debug)
            assert rc == code, (name, err)
            assert out == "", name
            last = err.splitlines()[-1] + "\n"
            assert ONE_LINE_ERROR.match(last) and text in last, (name, err)
            if debug:
                continue
            assert ONE_LINE_ERROR.match(after_argv_warning(err, argv)), (name, err)
            assert "Traceback" not in err, name


def test_debug_shows_a_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, _, err = run(capsys, "--debug", "probe", str(tmp_path / "x.parquet"), "--column", "a", "--value", "1")
    assert rc == 2 and "Traceback (most recent call last)" in err
    assert err.splitlines()[-1].startswith("secure-bloom: error: ")


def test_subprocess_exit_codes_and_stderr(audit_files: dict[str, Path], tmp_path: Path) -> None:
    ok = run_process("probe", JAVA_BLOOM, "--column", "double_field", "--value", "0.5", "--json", *KEYS)
    assert ok.returncode == 0 and ok.stderr == KEYS_WARNING  # scripts too: ps shows argv to everyone
    assert answers_by_label(cli_one(ok.stdout)["row_groups"][0]) == {"0.5": "maybe"}
    for name, argv, code, text in _error_cases(tmp_path)[:5]:
        proc = run_process(*argv)
        assert proc.returncode == code, (name, proc.stderr)
        assert ONE_LINE_ERROR.match(after_argv_warning(proc.stderr, argv)) and text in proc.stderr, (name, proc.stderr)
    kl = ["--key-list", lw.key_list()]
    assert run_process("audit", str(audit_files["good"]), "--sensitive", "ssn", *kl).returncode == 0
    assert run_process("audit", str(audit_files["leak"]), "--sensitive", "ssn", *kl).returncode == 1
    assert run_process("audit", str(audit_files["good"]), "--sensitive", "ssn").returncode == 2


def test_console_script() -> None:
    script = Path(sys.executable).parent / "secure-bloom"
    if not script.exists():
        pytest.skip("secure-bloom is not installed in this environment (scripts/test installs it)")
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, VERSION_LINE)
    proc = subprocess.run([str(script), "inspect", "/nonexistent.parquet"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and ONE_LINE_ERROR.match(proc.stderr)


# --- developer tooling is not in the CLI; dev-keys -----------------------------------------


@pytest.mark.parametrize("name", ["bench", "bench-lookup", "demo", "vectors"])
def test_benchmarks_and_the_demo_are_not_cli_commands(capsys: pytest.CaptureFixture[str], name: str) -> None:
    """They moved to the checkout's benchmarks/ folder (``python -m benchmarks NAME``)."""
    rc, out, err = run(capsys, name, "--help")
    assert rc == 2 and out == "" and "invalid choice" in err


def test_dev_keys_writes_a_marked_throwaway_key_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import stat

    from secure_bloom.kms import KeyListKms
    from secure_bloom.kms.key_list import DEVELOPMENT_KEYS_HEADER

    path = tmp_path / "dev-keys.txt"
    rc, out, err = run(capsys, "dev-keys", str(path), "--key-id", "footer_key", "--key-id", "pii_key")
    assert (rc, err) == (0, "")
    text = path.read_text(encoding="utf-8")
    assert text.startswith(DEVELOPMENT_KEYS_HEADER + "\n") and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert KeyListKms.from_file(path).master_key_ids == ("footer_key", "pii_key")
    assert all(line.split(":")[1] not in out for line in text.splitlines() if not line.startswith("#"))
    assert run(capsys, "dev-keys", str(path))[0] == 0 and path.read_text(encoding="utf-8") == text  # kept
    other = tmp_path / "notes.txt"
    other.write_text("mine\n", encoding="utf-8")
    rc, out, err = run(capsys, "dev-keys", str(other))
    assert rc == 2 and other.read_text(encoding="utf-8") == "mine\n"
    assert err == "secure-bloom: error: notes.txt: exists and is not a throwaway development key list; not overwritten\n"


# --- progress ------------------------------------------------------------------------------


def test_progress_bar_only_on_a_terminal(audit_files: dict[str, Path]) -> None:
    """With stderr on a pseudo-terminal the audit draws a tqdm bar; on a pipe it stays silent."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal has a size
    try:
        proc = subprocess.Popen([*CLI_PROCESS, "audit", str(audit_files["src"].parent),
                                 "--sensitive", "ssn", "--key-list", lw.key_list()],
                                stdout=subprocess.DEVNULL, stderr=slave, env=dict(os.environ))
        os.close(slave)
        chunks = []
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 1
    finally:
        os.close(master)
    drawn = b"".join(chunks).decode(errors="replace")
    assert "audit" in drawn and "files" in drawn
    # Key material in argv, typed at a terminal: one warning line (ps, shell history).
    assert drawn.count("secure-bloom: warning: key material given on the command line") == 1
    piped = run_process("audit", str(audit_files["src"].parent), "--sensitive", "ssn", "--key-list", lw.key_list())
    assert piped.returncode == 1 and piped.stderr == KEY_LIST_WARNING  # the same one line, and no bar


# --- secret hygiene ------------------------------------------------------------------------


def _forms(raw: bytes) -> set[str]:
    forms = {raw.hex(), raw.hex().upper(), base64.b64encode(raw).decode(), base64.b64encode(raw).decode().rstrip("="),
             base64.urlsafe_b64encode(raw).decode().rstrip("="), repr(raw)[2:-1]}
    try:
        forms.add(raw.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    return forms


def test_key_material_never_printed(capsys: pytest.CaptureFixture[str], audit_files: dict[str, Path],
                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text_canary = secrets.token_hex(8)                 # a 16-character text key
    list_canary = os.urandom(16)                        # a key-list master key
    env_canary = os.urandom(16)                         # the key list in the environment
    token_canary = "hvs." + secrets.token_hex(12)       # a KMS token
    forbidden = (_forms(text_canary.encode()) | _forms(list_canary) | _forms(env_canary)
                 | {token_canary, token_canary[4:]})
    list_entry = f"zz:{base64.b64encode(list_canary).decode()}"
    canary_keys = ["--key", f"zz=text:{text_canary}", "--key-list", f"{lw.key_list()}, {list_entry}"]
    wrong_keys = ["--key", f"kf=text:{text_canary}"]
    src, leak = str(audit_files["src"]), str(audit_files["leak"])
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST", f"kz:{base64.b64encode(env_canary).decode()}")
    monkeypatch.setenv("CANARY_TOKEN", token_canary)
    invocations = [
        ["inspect", src, *canary_keys],
        ["inspect", src, "--json", *canary_keys],
        ["inspect", JAVA_BLOOM, *wrong_keys],                                     # wrong key
        ["inspect", JAVA_BLOOM],                                                   # env key list only
        ["probe", src, "--column", "ssn", "--value", "ssn-0001", *canary_keys],
        ["probe", src, "--column", "ssn", "--value", "ssn-0001", "--json", *canary_keys],
        ["probe", src, "--column", "id", "--value", "not-a-number", *canary_keys],  # bad value
        ["probe", src, "--column", "nope", "--value", "1", *canary_keys],          # unknown column
        ["probe", str(tmp_path / "missing.parquet"), "--column", "a", "--value", "1", *canary_keys],
        ["probe", JAVA_BLOOM, "--column", "double_field", "--value", "1", "--key", "kf=text:0123456789012345",
         "--key", f"kc1=text:{text_canary}"],                                      # wrong column key
        ["attach", src, str(tmp_path / "a.parquet.encrypted"), "--bloom", "ssn", *canary_keys],
        ["attach", JAVA_BLOOM, str(tmp_path / "b.parquet"), "--bloom", "double_field", *wrong_keys],
        ["audit", src, leak, "--sensitive", "ssn,email", "--json", *canary_keys],
        ["audit", src, "--sensitive", "ssn", "--junit-xml", str(tmp_path / "j.xml"), *canary_keys],
        ["audit", JAVA_BLOOM, "--sensitive", "double_field", *wrong_keys],
        ["inspect", src, "--kye", f"kf=text:{text_canary}"],                       # misspelt option
        [f"--key=kf=text:{text_canary}", "inspect"],                              # option before command
        ["inspect", src, "--key", f"kf=hex:{text_canary}zz"],                     # malformed key spec
        ["inspect", src, "--key-list", f"kf:{base64.b64encode(list_canary).decode()}:extra"],  # malformed list
        ["inspect", src, "--key-list", f"{base64.b64encode(list_canary).decode()}"],           # no id
        ["inspect", src, "--kms-url", "http://127.0.0.1:9", "--kms-token-env", "CANARY_TOKEN"],  # KMS down
        ["dev-keys", str(tmp_path / "dev-keys.txt"), "--key-list", list_entry],  # an option it does not take
    ]
    for argv in invocations:
        for debug in ([], ["--debug"]):
            rc = main([*argv, *debug])
            captured = capsys.readouterr()
            printed = captured.out + captured.err
            leaked = [f for f in forbidden if f in printed]
            assert not leaked, (argv, debug, rc)
    for path in (tmp_path / "j.xml",):
        content = path.read_text()
        assert not [f for f in forbidden if f in content]


def test_redactor_covers_every_encoding() -> None:
    key = bytes(range(16))
    red = Redactor.from_invocation(["--key-list", f"m:{base64.b64encode(key).decode()}",
                                    "--key", "a=text:abcdefghijklmnop"], {})
    for form in _forms(key) | {"abcdefghijklmnop", b"abcdefghijklmnop".hex()}:
        assert form not in red(f"error: ... {form} ..."), form
    assert red("column 'ssn' needs key 'kc1'") == "column 'ssn' needs key 'kc1'"


def test_usage_errors_never_echo_argument_values(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A misspelt key option, a key list given as a positional and an invented --kms-token used to
    print the secret in argparse's "unrecognized arguments" / "invalid choice" messages."""
    key = os.urandom(16)
    entry = f"kf:{base64.b64encode(key).decode()}"
    token = "hvs." + secrets.token_hex(12)
    forbidden = _forms(key) | {token, token[4:]}
    hidden = "(<not shown>: may be key material) (see 'secure-bloom --help')"
    cases = [
        (["inspect", PLAIN_BLOOM, "--key-lst", entry],
         f"inspect: unrecognized option --key-lst (did you mean --key-list?), and 1 unexpected value {hidden}"),
        (["inspect", PLAIN_BLOOM, f"--keylist={entry}"],
         f"inspect: unrecognized option --keylist (did you mean --key-list?), and 1 unexpected value {hidden}"),
        (["inspect", PLAIN_BLOOM, entry], f"inspect: unrecognized arguments: 1 unexpected value {hidden}"),
        (["inspect", PLAIN_BLOOM, "--kms-token", token],
         f"inspect: unrecognized option --kms-token (did you mean --kms-token-env?), and 1 unexpected value {hidden}"),
        (["--kms-token", token, "inspect", PLAIN_BLOOM], "argument COMMAND: invalid choice: '<not shown>'"),
        (["inspect", PLAIN_BLOOM, f"--json={token}"], "inspect: argument --json: ignored explicit argument "
                                                       "'<not shown>' (see 'secure-bloom inspect --help')"),
        (["audit", str(tmp_path), entry, "--sensitive", "ssn"],
         "audit: a PATH argument looks like key material (<not shown>); give keys with --key-list-file or "
         "$SECURE_BLOOM_KEY_LIST_FILE"),
    ]
    for argv, message in cases:
        for debug in ([], ["--debug"]):
            rc, out, err = run(capsys, *argv, *debug)
            assert rc == 2, argv
            assert not [f for f in forbidden if f in out + err], argv
            assert message in err.splitlines()[-1], (argv, err)
            assert debug or ONE_LINE_ERROR.match(err), err


# --- a real KMS ----------------------------------------------------------------------------


@pytest.mark.kms
def test_openbao_transit_kms(capsys: pytest.CaptureFixture[str], openbao: OpenBaoServer, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Files whose keys OpenBao transit wraps: inspect, probe and audit with --kms-url; a bad token
    makes the audit "could not check"; the token is never printed."""
    from secure_bloom.kms import OpenBaoTransitKms
    from secure_bloom.parquet import KeyAccess

    kms = OpenBaoTransitKms(openbao.url, token=openbao.token)
    for name in ("kf", "kc1", "kc2"):
        kms.create_key(name)
    src, good = tmp_path / "src.parquet.encrypted", tmp_path / "good.parquet.encrypted"
    lw.write_pyarrow_encrypted(src, kms=kms)
    lw.inject_filters(src, good, {"ssn": "column_key"}, KeyAccess(kms=kms), values=lw.table_values())
    monkeypatch.setenv("SB_TEST_BAO_TOKEN", openbao.token)
    monkeypatch.setenv("SB_TEST_BAD_TOKEN", "hvs.not-a-valid-token-" + secrets.token_hex(8))
    kms_args = ["--kms-url", openbao.url, "--kms-token-env", "SB_TEST_BAO_TOKEN"]
    rc, out, err = run(capsys, "probe", str(good), "--column", "ssn", "--value", "ssn-0060", "--json", *kms_args)
    assert (rc, err) == (0, "")
    assert [answers_by_label(g)["ssn-0060"] for g in cli_one(out)["row_groups"]][1] == "maybe"
    rc, out, _ = run(capsys, "audit", str(good), "--sensitive", "ssn,city", "--json", *kms_args)
    assert rc == 1 and {v["code"] for v in cli_result(out)["violations"]} == {"SENSITIVE_COLUMN_NOT_ENCRYPTED"}
    assert run(capsys, "audit", str(good), "--sensitive", "ssn", *kms_args)[0] == 0
    rc, out, err = run(capsys, "audit", str(good), "--sensitive", "ssn", "--json", "--kms-url", openbao.url,
                       "--kms-token-env", "SB_TEST_BAD_TOKEN", "--debug")
    assert rc == 2 and cli_result(out)["files"][0]["error"]["kind"] == "KEY_ACCESS_DENIED"
    rc, out, err = run(capsys, "inspect", str(good), *kms_args, "--debug")
    assert rc == 0
    for printed in (out, err):
        assert openbao.token not in printed and os.environ["SB_TEST_BAD_TOKEN"] not in printed
