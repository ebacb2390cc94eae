"""``secure-bloom query --output FILE`` never writes decrypted values of encrypted columns in plaintext
by accident (issue 20 item 5): Parquet output is encrypted under the source's master keys; csv, json
and table output of encrypted columns to a file needs --plaintext-output."""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from secure_bloom.cli import main
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.read.api import read_table
from secure_bloom.types import ChunkEncryption, FooterMode
from support.parquet_files import (TESTING_KEY_LIST, TESTING_KEYS, sample_table, ssn, vector_kms, write_encrypted,
                                   write_uniform)

EXPLICIT_KEYS = [arg for key_id, key in TESTING_KEYS.items() for arg in ("--key", f"{key_id}=text:{key.decode()}")]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Encrypted footer (kf); ssn and amount under kc1, ts under kc2; id, day, score, flag plaintext."""
    tmp = tmp_path_factory.mktemp("query-output")
    write_encrypted(tmp / "data.parquet")
    keys = tmp / "keys.txt"
    keys.write_text(TESTING_KEY_LIST)
    return tmp / "data.parquet", keys


def test_parquet_output_is_encrypted_under_the_source_master_keys(source: tuple[Path, Path], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    data, keys = source
    out = tmp_path / "rows.parquet"
    assert main(["query", str(data), "--where", "id < 50", "--format", "parquet", "--output", str(out),
                 "--key-list-file", str(keys)]) == 0
    err = capsys.readouterr().err
    assert f"{out}: encrypted under the master keys of the files read (footer: kf; amount, ssn: kc1; ts: kc2)" in err
    assert out.read_bytes()[-4:] == b"PARE"  # an encrypted footer, as the source's
    with pytest.raises(Exception, match="(?i)encrypt|decrypt|key"):
        pq.read_table(out)  # nobody without the keys reads it
    access = KeyAccess(kms=vector_kms())
    with ParquetBloomReader(out, access) as reader:
        assert reader.footer.mode is FooterMode.ENCRYPTED and reader.master_key_id() == "kf"
        keys_of = {c.column.path: (c.encryption, reader.master_key_id(c)) for c in reader.column_chunks()}
    assert keys_of["ssn"] == keys_of["amount"] == (ChunkEncryption.COLUMN_KEY, "kc1")
    assert keys_of["ts"] == (ChunkEncryption.COLUMN_KEY, "kc2")
    assert keys_of["id"] == (ChunkEncryption.PLAINTEXT, None)
    rows = read_table(out, keys=access)
    assert rows.to_pylist() == sample_table().slice(0, 50).to_pylist()


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_text_output_of_encrypted_columns_to_a_file_is_refused(source: tuple[Path, Path], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    data, keys = source
    out = tmp_path / f"rows.{fmt}"
    assert main(["query", str(data), "--where", "id < 5", "--columns", "id,ssn", "--format", fmt,
                 "--output", str(out), "--key-list-file", str(keys)]) == 2
    err = capsys.readouterr().err
    assert "decrypted values of the encrypted column(s) ssn" in err and "--plaintext-output" in err
    assert "nothing was written" in err and not out.exists()


def test_plaintext_output_is_explicit_and_said(source: tuple[Path, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    data, keys = source
    out = tmp_path / "rows.csv"
    assert main(["query", str(data), "--where", "id < 3", "--columns", "id,ssn", "--format", "csv",
                 "--output", str(out), "--plaintext-output", "--key-list-file", str(keys)]) == 0
    assert "--plaintext-output: " in capsys.readouterr().err
    assert list(csv.reader(out.read_text().splitlines()))[1:] == [[str(i), ssn(i)] for i in range(3)]
    plain = tmp_path / "rows.parquet"
    assert main(["query", str(data), "--where", "id < 3", "--format", "parquet", "--output", str(plain),
                 "--plaintext-output", "--key-list-file", str(keys)]) == 0
    assert pq.read_table(plain)["ssn"].to_pylist() == [ssn(i) for i in range(3)]


def test_plaintext_columns_and_standard_output_need_no_flag(source: tuple[Path, Path], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    data, keys = source
    out = tmp_path / "ids.csv"
    assert main(["query", str(data), "--where", "id < 3", "--columns", "id", "--format", "csv",
                 "--output", str(out), "--key-list-file", str(keys)]) == 0
    assert out.read_text().split() == ['"id"', "0", "1", "2"]
    assert main(["query", str(data), "--where", "id < 2", "--columns", "id,ssn", "--format", "csv",
                 "--key-list-file", str(keys)]) == 0
    assert ssn(1) in capsys.readouterr().out


def test_parquet_output_that_cannot_keep_the_keys_is_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # bare explicit key ids: no KMS wraps them
    write_uniform(tmp_path / "explicit.parquet")
    out = tmp_path / "rows.parquet"
    assert main(["query", str(tmp_path / "explicit.parquet"), "--where", "id < 3", "--format", "parquet",
                 "--output", str(out), *EXPLICIT_KEYS]) == 2
    assert "nothing was written" in capsys.readouterr().err and not out.exists()
    # one column under different master keys in different files
    lake = tmp_path / "lake"
    lake.mkdir()
    write_encrypted(lake / "a.parquet", column_keys={"kc1": ["ssn"]})
    write_encrypted(lake / "b.parquet", column_keys={"kc2": ["ssn"]})
    keys = tmp_path / "keys.txt"
    keys.write_text(TESTING_KEY_LIST)
    assert main(["query", str(lake), "--where", "id < 3", "--format", "parquet", "--output", str(out),
                 "--key-list-file", str(keys)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "column 'ssn' is encrypted under different master keys in the files read (kc1, kc2)" in err
    assert not out.exists()
