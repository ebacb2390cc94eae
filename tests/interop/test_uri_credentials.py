"""URIs carrying credentials (``s3://KEY:SECRET@bucket/...``, ``?secret_key=...``) against a real
S3-API server (moto) on 127.0.0.1: no command, report, JSON document, report file, exception or
repr shows the secret, and ``encrypt`` to such a URI writes the object it names and creates
nothing on the local disk (issue 20, item 2).

Each CLI command runs in this process (``main``) in an empty working directory, with the URI as
:meth:`S3Service.uri` writes it (user info + options), and with the query-string form.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from secure_bloom.cli import main
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters
from support.parquet_files import TESTING_KEY_LIST, ssn, vector_kms, write_encrypted
from support.s3_server import ACCESS_KEY, SECRET_KEY
from support.cli_json import cli_one, cli_result

pytestmark = pytest.mark.s3

ENCRYPT = ["--footer-key", "kf", "--column-key", "kc1:ssn,amount", "--column-key", "kc2:ts", "--bloom", "ssn"]


@pytest.fixture(scope="module")
def lake(s3: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """bucket ``creds``: ``in/a.parquet`` (encrypted, filters on ssn) and ``raw/d=1/p.parquet``,
    ``raw/d=2/p.parquet`` (plaintext, to encrypt)."""
    tmp = tmp_path_factory.mktemp("creds")
    bucket = s3.bucket("creds")
    fs = s3.upload_filesystem()
    write_encrypted(tmp / "src.parquet")
    attach_bloom_filters(tmp / "src.parquet", tmp / "a.parquet", ["ssn"], KeyAccess(kms=vector_kms()))
    rows = pa.table({"id": list(range(40)), "ssn": [ssn(i) for i in range(40)]})
    pq.write_table(rows, tmp / "p.parquet", row_group_size=20)
    for local, key in ((tmp / "a.parquet", "in/a.parquet"), (tmp / "p.parquet", "raw/d=1/p.parquet"),
                       (tmp / "p.parquet", "raw/d=2/p.parquet")):
        with fs.open_output_stream(f"{bucket}/{key}") as out:
            out.write(local.read_bytes())
    return {"bucket": bucket, "rows": rows}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory (what a command creates there is a bug) and the test keys."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST", TESTING_KEY_LIST)
    return work


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Exit code and everything printed (stdout + stderr); asserts the secret is not in it."""
    rc = main(list(argv))
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert SECRET_KEY not in printed, printed
    return rc, printed


def _created(workdir: Path) -> list[str]:
    return sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*"))


def test_probe_names_the_object_without_credentials(s3: Any, lake: dict[str, Any], workdir: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    uri = s3.uri(f"{lake['bucket']}/in/a.parquet")
    rc, text = run(capsys, "probe", uri, "--column", "ssn", "--value", ssn(5))
    assert rc == 0 and "file: s3://creds/in/a.parquet\n" in text
    rc, printed = run(capsys, "probe", uri, "--column", "ssn", "--value", ssn(5), "--json")
    assert rc == 0 and cli_one(printed)["file"] == "s3://creds/in/a.parquet"
    rc, printed = run(capsys, "probe", s3.uri(f"{lake['bucket']}/in"), "--column", "ssn", "--value", ssn(5))
    assert rc == 0 and "s3://creds/in/a.parquet" in printed
    assert _created(workdir) == []


def test_inspect_and_audit_reports_and_files_hold_no_credentials(s3: Any, lake: dict[str, Any], workdir: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    uri = s3.uri(f"{lake['bucket']}/in")
    for extra in ([], ["--json"]):
        rc, printed = run(capsys, "inspect", uri, *extra)
        assert rc == 0 and "s3://creds/in/a.parquet" in printed
        rc, printed = run(capsys, "audit", uri, "--sensitive", "ssn", "--junit-xml", "audit.xml", *extra)
        assert rc == 0 and "s3://creds/in/a.parquet" in printed
        xml = (workdir / "audit.xml").read_text()
        assert SECRET_KEY not in xml and "s3://creds/in/a.parquet" in xml


def test_query_rows_and_errors_hold_no_credentials(s3: Any, lake: dict[str, Any], workdir: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rc, printed = run(capsys, "query", s3.uri(f"{lake['bucket']}/raw"), "--where", f"ssn = {ssn(7)}",
                      "--format", "json", "--explain")
    assert rc == 0 and [row["id"] for row in cli_result(printed, "query")["rows"]] == [7, 7]
    rc, printed = run(capsys, "query", s3.uri(f"{lake['bucket']}/no-such-prefix"), "--where", "id = 1")
    assert rc == 2 and "s3://creds/no-such-prefix" in printed


def test_encrypt_to_a_uri_with_credentials_writes_the_named_objects_and_nothing_locally(
        s3: Any, lake: dict[str, Any], workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: encrypt created ./s3:/KEY:SECRET@bucket/out and printed the secret; a directory
    went to ``bucket/out?endpoint_override=.../d=1/p.parquet``-shaped keys."""
    store = s3.upload_filesystem()
    local = tmp_path / "plain.parquet"
    pq.write_table(lake["rows"], local)
    rc, printed = run(capsys, "encrypt", str(local), s3.uri(f"{lake['bucket']}/out/one.parquet"), *ENCRYPT[:2],
                      "--column-key", "kc1:ssn", "--bloom", "ssn", "--json")
    assert rc == 0 and cli_one(printed)["path"] == "s3://creds/out/one.parquet"
    rc, printed = run(capsys, "encrypt", s3.uri(f"{lake['bucket']}/raw"), s3.uri(f"{lake['bucket']}/out/dir"),
                      "--footer-key", "kf", "--column-key", "kc1:ssn", "--bloom", "ssn")
    assert rc == 0
    assert "wrote s3://creds/out/dir/d=1/p.parquet from s3://creds/raw/d=1/p.parquet" in printed
    listed = sorted(info.path for info in store.get_file_info(pafs.FileSelector(f"{lake['bucket']}/out",
                                                                                recursive=True))
                    if info.type == pafs.FileType.File)
    assert listed == ["creds/out/dir/d=1/p.parquet", "creds/out/dir/d=2/p.parquet", "creds/out/one.parquet"]
    with ParquetBloomReader("creds/out/dir/d=2/p.parquet", KeyAccess(kms=vector_kms()), filesystem=store) as reader:
        assert reader.row_groups_maybe_containing("ssn", ssn(25)) == [1]
    # an existing object is not replaced without --overwrite, and is named without the secret
    rc, printed = run(capsys, "encrypt", str(local), s3.uri(f"{lake['bucket']}/out/one.parquet"), *ENCRYPT[:2],
                      "--column-key", "kc1:ssn")
    assert rc == 2 and "s3://creds/out/one.parquet: already exists" in printed
    assert _created(workdir) == []


def test_attach_doctor_and_report_files_refuse_uris_without_showing_them(s3: Any, lake: dict[str, Any], workdir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    uri = s3.uri(f"{lake['bucket']}/in/a.parquet")
    rc, printed = run(capsys, "attach", uri, "out.parquet", "--column", "ssn")
    assert rc == 2 and "s3://creds/in/a.parquet: attach works on local files only" in printed
    rc, printed = run(capsys, "attach", "missing.parquet", uri, "--column", "ssn")
    assert rc == 2
    rc, printed = run(capsys, "doctor", uri)
    assert rc == 2 and "s3://creds/in/a.parquet" in printed
    rc, printed = run(capsys, "audit", "plain.parquet", "--sensitive", "ssn", "--junit-xml", uri)
    assert rc == 2 and "--junit-xml s3://creds/in/a.parquet: give a local path" in printed
    rc, printed = run(capsys, "query", "plain.parquet", "--where", "id = 1", "--format", "csv", "--output", uri)
    assert rc == 2 and "--output s3://creds/in/a.parquet: give a local path" in printed
    assert _created(workdir) == []


@pytest.mark.parametrize("command", [
    ["inspect", "{uri}"], ["probe", "{uri}", "--column", "ssn", "--value", "x"],
    ["audit", "{uri}", "--sensitive", "ssn"], ["query", "{uri}", "--where", "id = 1"],
    ["encrypt", "{uri}", "out.parquet", "--footer-key", "kf", "--uniform"],
    ["encrypt", "plain.parquet", "{uri}", "--footer-key", "kf", "--uniform"],
    ["attach", "{uri}", "o.parquet", "--column", "ssn"], ["doctor", "{uri}"],
], ids=lambda c: "-".join(c[:2]) if c[0] == "encrypt" else c[0])
def test_credentials_in_query_options_are_never_shown(s3: Any, lake: dict[str, Any], workdir: Path,
                                                      command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """``?access_key=...&secret_key=...`` (which pyarrow refuses as an S3 option): exit 2, the
    secret nowhere, nothing created."""
    pq.write_table(lake["rows"], workdir / "plain.parquet")
    uri = (f"s3://{lake['bucket']}/in/a.parquet?endpoint_override={s3.endpoint}&scheme=http"
           f"&access_key={ACCESS_KEY}&secret_key={SECRET_KEY}")
    rc, printed = run(capsys, *[part.replace("{uri}", uri) for part in command])
    assert rc == 2, printed
    assert _created(workdir) == ["plain.parquet"]


def test_python_api_exceptions_reports_and_reprs_hold_no_credentials(s3: Any, lake: dict[str, Any]) -> None:
    from secure_bloom.errors import ConfigurationError
    from secure_bloom.parquet.audit.auditor import audit
    from secure_bloom.parquet.audit.discover import discover
    from secure_bloom.parquet.read.api import read_table

    keys = KeyAccess(kms=vector_kms())
    missing = s3.uri(f"{lake['bucket']}/in/missing.parquet")
    with pytest.raises(FileNotFoundError) as caught:
        ParquetBloomReader(missing, keys)
    assert SECRET_KEY not in str(caught.value) + repr(caught.value)
    with ParquetBloomReader(s3.uri(f"{lake['bucket']}/in/a.parquet"), keys) as reader:
        assert SECRET_KEY not in repr(reader) and reader.path == "s3://creds/in/a.parquet"
    found = discover([s3.uri(f"{lake['bucket']}/raw")])
    assert len(found.files) == 2 and SECRET_KEY not in repr(found)  # the paths keep them, to be opened
    report = audit(s3.uri(f"{lake['bucket']}/raw"), ["ssn"], keys=keys)
    assert SECRET_KEY not in report.to_json() + report.to_junit_xml() + repr(report)
    bad = f"s3://{ACCESS_KEY}:{SECRET_KEY}@{lake['bucket']}/x?endpoint_override={s3.endpoint}&secret_key={SECRET_KEY}"
    for call in (lambda: read_table(bad), lambda: ParquetBloomReader(bad, keys), lambda: discover([bad])):
        with pytest.raises(ConfigurationError) as error:
            call()
        assert SECRET_KEY not in str(error.value) + repr(error.value)
    assert os.path.exists("s3:") is False
