"""``secure-bloom encrypt``: a plaintext or encrypted file or directory -> encrypted copies with encrypted filters."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
import pytest
from support.parquet_files import (
    TESTING_KEY_LIST,
    TESTING_KEYS,
    read_encrypted,
    sample_table,
    vector_kms,
    write_encrypted,
    write_plain,
)

from secure_bloom.cli import main
from secure_bloom.errors import AuthenticationError, MissingKeyError
from secure_bloom.kms import KeyListKms
from secure_bloom.kms.pyarrow_adapter import pyarrow_kms_client_factory
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.file.arrow_source import open_arrow_file
from secure_bloom.parquet.audit.auditor import audit
from support.cli_json import cli_one

KEYS = KeyAccess(kms=vector_kms())
ENCRYPT = ["--footer-key", "kf", "--column-key", "kc1:ssn,amount", "--column-key", "kc2:ts"]


@pytest.fixture
def keys_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key_file = tmp_path / "keys.txt"
    key_file.write_text(TESTING_KEY_LIST)
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST_FILE", str(key_file))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_encrypt_a_file_keeps_row_groups_and_adds_encrypted_filters(tmp_path: Path, keys_env: None,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    src = write_plain(tmp_path / "plain.parquet")
    dst = tmp_path / "enc.parquet"
    rc, out, err = run(capsys, "encrypt", str(src), str(dst), *ENCRYPT, "--bloom", "ssn", "--bloom", "id:fpp=0.001",
                       "--json")
    assert (rc, err) == (0, "")
    report = cli_one(out)
    assert report["num_rows"] == 3000 and report["row_groups"] == 3
    assert {(f["column"], f["encrypted"]) for f in report["filters"]} == {("ssn", True), ("id", False)}
    assert read_encrypted(dst).equals(pq.read_table(src))
    with ParquetBloomReader(dst, KEYS) as reader:
        assert reader.row_groups_maybe_containing("ssn", sample_table()["ssn"][2500].as_py()) == [2]
    assert audit([dst], ["ssn"], keys=KEYS).exit_code == 0


def test_encrypt_a_directory_mirrors_it(tmp_path: Path, keys_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "raw" / "day=1").mkdir(parents=True)
    write_plain(tmp_path / "raw" / "a.parquet", sample_table(100))
    write_plain(tmp_path / "raw" / "day=1" / "b.parquet", sample_table(50))
    rc, out, err = run(capsys, "encrypt", str(tmp_path / "raw"), str(tmp_path / "enc"), *ENCRYPT, "--bloom", "ssn:ndv=10")
    assert (rc, err) == (0, "")
    assert out.count("wrote ") == 2 and "encrypted footer" in out
    assert read_encrypted(tmp_path / "enc" / "day=1" / "b.parquet").num_rows == 50
    assert audit([tmp_path / "enc"], ["ssn"], keys=KEYS).exit_code == 0


@pytest.mark.parametrize("extra,message,code", [
    (["--bloom", "flag"], "column 'flag' is BOOLEAN", 3),
    (["--bloom", "nope"], "no leaf column 'nope'", 2),
    (["--bloom", "ssn:fpp=1.5"], r"must be in \(0, 1\)", 2),
    (["--bloom", "ssn:ndv=0"], "ndv must be >= 1", 2),
    (["--column-key", "kc2:missing"], "no leaf column 'missing'", 2),
    (["--column-key", "kc2"], "expected ID:COL", 2),
])
def test_bad_options_are_one_line_errors_and_write_nothing(tmp_path: Path, keys_env: None,
                                                           capsys: pytest.CaptureFixture[str], extra: list[str],
                                                           message: str, code: int) -> None:
    src = write_plain(tmp_path / "plain.parquet", sample_table(20))
    rc, out, err = run(capsys, "encrypt", str(src), str(tmp_path / "out.parquet"), *ENCRYPT, *extra)
    assert rc == code and out == ""
    assert err.count("\n") == 1 and err.startswith("secure-bloom: error: ")
    assert re.search(message, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.txt", "plain.parquet"]


def test_existing_destination_needs_overwrite(tmp_path: Path, keys_env: None,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    src = write_plain(tmp_path / "plain.parquet", sample_table(20))
    dst = tmp_path / "out.parquet"
    dst.write_bytes(b"keep")
    rc, _, err = run(capsys, "encrypt", str(src), str(dst), *ENCRYPT, "--bloom", "ssn")
    assert rc == 2 and "already exists (use --overwrite" in err and dst.read_bytes() == b"keep"
    rc, _, err = run(capsys, "encrypt", str(src), str(dst), *ENCRYPT, "--bloom", "ssn", "--overwrite")
    assert (rc, err) == (0, "") and read_encrypted(dst).num_rows == 20


def test_no_kms_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("SECURE_BLOOM_KEY_LIST_FILE", "SECURE_BLOOM_KEY_LIST"):
        monkeypatch.delenv(name, raising=False)
    src = write_plain(tmp_path / "plain.parquet", sample_table(20))
    rc, _, err = run(capsys, "encrypt", str(src), str(tmp_path / "o.parquet"), *ENCRYPT, "--bloom", "ssn")
    assert rc == 2 and "needs a KMS" in err


NEW_KEYS = {"kf_new": b"abcdefghijklmnop", "kc_new": b"ponmlkjihgfedcba"}


def _key_list(path: Path, keys: dict[str, bytes]) -> Path:
    path.write_text(", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in keys.items()))
    return path


@pytest.mark.parametrize("plaintext_footer", [False, True], ids=["encrypted-footer", "plaintext-footer"])
def test_encrypted_source_is_re_encrypted_under_new_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str],
                                                         plaintext_footer: bool) -> None:
    """Regression: an encrypted SRC failed in pyarrow ('no decryption found'). Key rotation: the old
    and the new master keys in one key list; the copy needs only the new ones."""
    # pyarrow: footer kf, kc1 ssn+amount, kc2 ts
    src = write_encrypted(tmp_path / "old.parquet.encrypted", plaintext_footer=plaintext_footer)
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST_FILE", str(_key_list(tmp_path / "both.txt",
                                                                    {**TESTING_KEYS, **NEW_KEYS})))
    dst = tmp_path / "rotated.parquet.encrypted"
    rc, out, err = run(capsys, "encrypt", str(src), str(dst), "--footer-key", "kf_new",
                       "--column-key", "kc_new:ssn,amount,ts", "--bloom", "ssn", "--json")
    assert (rc, err) == (0, "")
    assert cli_one(out)["num_rows"] == 3000
    new_only = KeyListKms(NEW_KEYS)
    props = pe.CryptoFactory(pyarrow_kms_client_factory(new_only)).file_decryption_properties(
        pe.KmsConnectionConfig(), parquet_file_path=str(dst))
    assert pq.read_table(dst, decryption_properties=props).equals(read_encrypted(src))
    with ParquetBloomReader(dst, KeyAccess(kms=new_only)) as reader:
        assert reader.footer.encrypted and reader.footer_key_id == "kf_new"
        assert {c.path: c.key_id for c in reader.columns if c.encrypted} == {
            "ssn": "kc_new", "amount": "kc_new", "ts": "kc_new"}
        assert reader.row_groups_maybe_containing("ssn", sample_table()["ssn"][2500].as_py()) == [2]


@pytest.mark.parametrize("keys,error_class,message", [
    ({"kf": TESTING_KEYS["kf"], "kc2": TESTING_KEYS["kc2"], **NEW_KEYS}, MissingKeyError,
     "column 'ssn' needs key 'kc1': master key 'kc1' is not in the key list"),
    (NEW_KEYS, MissingKeyError, "footer key 'kf' not available"),
    ({**TESTING_KEYS, "kf": b"not-the-footer-k", **NEW_KEYS}, AuthenticationError,
     "cannot unwrap a key wrapped under master key 'kf': authentication failed"),
], ids=["column-key-missing", "footer-key-missing", "footer-key-wrong"])
def test_encrypted_source_without_its_keys_is_a_key_error_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        keys: dict[str, bytes], error_class: type[Exception], message: str) -> None:
    src = write_encrypted(tmp_path / "old.parquet.encrypted", sample_table(20))
    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST_FILE", str(_key_list(tmp_path / "keys.txt", keys)))
    for dst in (tmp_path / "out.parquet", tmp_path / "out-dir" / "x.parquet"):
        rc, out, err = run(capsys, "encrypt", str(src), str(dst), "--footer-key", "kf_new",
                           "--column-key", "kc_new:ssn", "--bloom", "ssn")
        assert (rc, out) == (2, "") and message in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.txt", "old.parquet.encrypted"]  # no DST, no dir
    with pytest.raises(error_class, match=re.escape(message)):
        open_arrow_file(src, KeyAccess(kms=KeyListKms(keys)))
