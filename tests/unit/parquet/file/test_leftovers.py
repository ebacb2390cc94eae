"""Recovering from an interrupted attach (secure_bloom.parquet.file.leftovers, `secure-bloom doctor`):
the publication journal rolls an orphaned sidecar back (or restores the one an overwrite
replaced), stale temporary files go, files a live attach holds (flock) stay, and the audit lists
leftovers as notices. The SIGKILL-at-every-stage run is tests/robustness/test_attach_atomic.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from secure_bloom.cli import main
from secure_bloom.kms.sidecar import sidecar_path
from secure_bloom.parquet.audit.auditor import audit
from secure_bloom.parquet.audit.policy import ColumnRule, Policy
from secure_bloom.parquet.file.leftovers import PairJournal, clean_leftovers, find_leftovers
from support.parquet_files import write_plain
from support.cli_json import cli_result


def _die(journal: PairJournal) -> None:
    """What a SIGKILL leaves: the journal file, its lock released."""
    os.close(journal._fd)
    journal._fd = -1


def test_a_sidecar_published_without_its_data_file_is_rolled_back(tmp_path: Path) -> None:
    data = tmp_path / "dst.parquet"
    journal = PairJournal.begin(data, sidecar_path(data))
    sidecar_path(data).write_text('{"footerKey": "..."}')       # published; then the process dies
    _die(journal)
    found = find_leftovers(tmp_path)
    assert [(Path(f.path).name, f.kind, f.live) for f in found] == [(journal.path.name, "journal", False)]
    assert "unfinished attach publication" in found[0].notice()
    done = clean_leftovers(tmp_path)
    assert [action for _, action in done] == [
        "dst.parquet was not published: removed the orphaned key material _KEY_MATERIAL_FOR_dst.parquet.json"]
    assert os.listdir(tmp_path) == []


def test_an_overwritten_sidecar_is_restored_when_the_data_file_was_not_replaced(tmp_path: Path) -> None:
    data = tmp_path / "dst.parquet"
    data.write_bytes(b"old data")
    sidecar_path(data).write_text("old key material")
    journal = PairJournal.begin(data, sidecar_path(data))
    sidecar_path(data).unlink()
    sidecar_path(data).write_text("new key material")           # replaced; dst not yet
    _die(journal)
    clean_leftovers(tmp_path)
    assert sidecar_path(data).read_text() == "old key material"
    assert sorted(os.listdir(tmp_path)) == ["_KEY_MATERIAL_FOR_dst.parquet.json", "dst.parquet"]


def test_a_finished_publication_keeps_both_files(tmp_path: Path) -> None:
    data = tmp_path / "dst.parquet"
    sidecar_path(data).write_text("old")
    journal = PairJournal.begin(data, sidecar_path(data))
    sidecar_path(data).write_text("new")
    data.write_bytes(b"new data")                                # both published; died before done()
    _die(journal)
    clean_leftovers(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["_KEY_MATERIAL_FOR_dst.parquet.json", "dst.parquet"]
    assert sidecar_path(data).read_text() == "new"


def test_files_a_live_attach_holds_are_left_alone(tmp_path: Path) -> None:
    data = tmp_path / "dst.parquet"
    journal = PairJournal.begin(data, sidecar_path(data))
    # a named temporary file, as AtomicOutput makes on filesystems without O_TMPFILE, flocked as it does
    temp_path = tmp_path / ".dst.parquet.0123456789ab.attach.tmp"
    fd = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert {(Path(f.path).name, f.live) for f in find_leftovers(tmp_path)} == {
            (journal.path.name, True), (temp_path.name, True)}
        done = clean_leftovers(tmp_path)
        assert [a for _, a in done] == ["left alone: a running attach holds it"]
        assert journal.path.exists() and temp_path.exists()
    finally:
        os.close(fd)
        journal.done()
    assert [(Path(f.path).name, f.live) for f in find_leftovers(tmp_path)] == [(temp_path.name, False)]
    clean_leftovers(tmp_path)
    assert os.listdir(tmp_path) == []


def test_doctor_cli_and_audit_notices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_plain(tmp_path / "data.parquet")
    orphan = tmp_path / "_KEY_MATERIAL_FOR_gone.parquet.json"
    orphan.write_text("{}")
    stale = tmp_path / ".data.parquet.00112233aabb.attach.tmp"
    stale.write_bytes(b"partial")
    report = audit(tmp_path, policy=Policy(rules=(ColumnRule("id", sensitive=False),)))
    assert report.notices == (
        f"{stale}: a temporary file of an interrupted attach (run 'secure-bloom doctor --fix' to clean it)",
        f"{orphan}: key material whose data file does not exist (orphaned sidecar) (run 'secure-bloom doctor "
        "--fix' to clean it)")
    assert report.exit_code == 0  # a notice is no verdict
    assert main(["doctor", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert str(orphan) in out and str(stale) in out
    assert main(["doctor", str(tmp_path), "--fix", "--json"]) == 0
    doc = cli_result(capsys.readouterr().out, "doctor")
    assert {(Path(f["path"]).name, f["action"]) for f in doc["fixed"]} == {
        (stale.name, "removed"), (orphan.name, "removed (its data file does not exist)")}
    assert sorted(os.listdir(tmp_path)) == ["data.parquet"]
    assert main(["doctor", str(tmp_path)]) == 0
    assert "no leftovers of an interrupted attach" in capsys.readouterr().out
