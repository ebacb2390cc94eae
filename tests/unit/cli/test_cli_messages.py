"""Errors the CLI prints are the library's own messages, never a bare class name (issue 20 item 8),
and the demo finds (or makes) development keys wherever it is run."""

from __future__ import annotations

import base64
import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO_DIR

from secure_bloom.cli.exits import describe
from secure_bloom.kms import KeyListKms
from benchmarks.demo import COLUMN_KEYS, FOOTER_KEY, THROWAWAY_HEADER, find_dev_key_list, throwaway_key_list


def _outside_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SECURE_BLOOM_KEY_LIST")}


def test_an_oserror_raised_with_a_message_is_shown_by_its_message() -> None:
    assert describe(None, FileNotFoundError("development key list not found: pass --key-list-file")) == \
        "development key list not found: pass --key-list-file"
    # the system's errors keep their form: the file, then strerror
    assert describe(None, FileNotFoundError(errno.ENOENT, "No such file or directory", "data.parquet")) == \
        "data.parquet: No such file or directory"
    assert describe("x.parquet", PermissionError(errno.EACCES, "Permission denied")) == "x.parquet: Permission denied"
    assert describe(None, OSError()) == "OSError"


def test_demo_outside_the_repository_says_what_is_missing(tmp_path: Path) -> None:
    """Run as a user would, from a folder that is not the repository: a missing --key-list-file is
    named with the reason (the old CLI printed only 'FileNotFoundError')."""
    run_benchmarks = (f"import sys; sys.path.insert(0, {str(REPO_DIR)!r}); import benchmarks.__main__ as m; "
                      "sys.exit(m.main(sys.argv[1:]))")  # benchmarks/ drops the checkout again: installed package
    proc = subprocess.run([sys.executable, "-c", run_benchmarks, "demo", "--out", "o", "--rows", "100",
                           "--key-list-file", "missing-keys.txt"],
                          cwd=tmp_path, env=_outside_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "python -m benchmarks demo: error: --key-list-file missing-keys.txt: no such file\n"
    assert not (tmp_path / "o").exists()


def test_demo_outside_the_repository_makes_throwaway_development_keys(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("SECURE_BLOOM_KEY_LIST_FILE", "SECURE_BLOOM_KEY_LIST"):
        monkeypatch.delenv(name, raising=False)
    assert find_dev_key_list() is None  # the installed package ships no keys
    out = tmp_path / "demo-output"
    out.mkdir()
    path = throwaway_key_list(out)
    text = path.read_text(encoding="utf-8")
    assert path.parent == out and "DEVELOPMENT-KEYS" in path.name
    assert text.startswith(THROWAWAY_HEADER) and "never for real data" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    kms = KeyListKms.from_file(path)
    assert set(kms.master_key_ids) == {FOOTER_KEY, *COLUMN_KEYS.values()}
    # fresh random keys, not the repository's development keys
    repo_keys = Path(__file__).resolve().parents[2] / "keys" / "dev-key-list.txt"
    if repo_keys.is_file():
        repo = KeyListKms.from_file(repo_keys)
        wrapped = repo.wrap_key(b"k" * 16, FOOTER_KEY)
        with pytest.raises(Exception):
            kms.unwrap_key(wrapped, FOOTER_KEY)
    # a rerun into the same folder keeps them (its earlier files stay readable); another folder gets new ones
    assert throwaway_key_list(out).read_text(encoding="utf-8") == text
    other = tmp_path / "other"
    other.mkdir()
    assert throwaway_key_list(other).read_text(encoding="utf-8") != text
    assert all(len(base64.b64decode(line.split(":")[1])) == 16
               for line in text.splitlines() if line and not line.startswith("#"))
