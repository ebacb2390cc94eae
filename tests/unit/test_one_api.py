"""One API across the entry points (issue 23): the names and shapes pyarrow, Polars and Spark
users expect, the old ones kept as deprecated aliases, pyarrow's own names refused with a pointer."""

from __future__ import annotations

import base64
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet  # noqa: F401 - pa.parquet
import pyarrow.parquet.encryption as pe
import pytest

from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters, read_table
from support.parquet_files import TESTING_KEYS, sample_table, write_encrypted


class PyArrowKeyList(pe.KmsClient):  # type: ignore[misc]
    """A pyarrow KmsClient built from a KmsConnectionConfig, as pyarrow users write them."""

    def __init__(self, config: pe.KmsConnectionConfig) -> None:
        super().__init__()
        assert isinstance(config, pe.KmsConnectionConfig)
        self.inner = KeyListKms(TESTING_KEYS)

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        return self.inner.wrap_key(key_bytes, master_key_identifier)

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        return self.inner.unwrap_key(wrapped_key, master_key_identifier)


@pytest.mark.parametrize("factory", [lambda cfg: PyArrowKeyList(cfg), PyArrowKeyList],
                         ids=["lambda", "class"])
def test_key_access_takes_pyarrows_kms_client_factory(tmp_path: Path, factory: Any) -> None:
    src, dst = tmp_path / "a.tmp", tmp_path / "a.parquet"
    write_encrypted(src, sample_table(300), row_group_size=100)
    keys = KeyAccess(kms=factory)
    attach_bloom_filters(src, dst, ["ssn"], keys)
    with ParquetBloomReader(dst, keys) as reader:
        assert [p.encrypted and p.values[0][1].value for p in reader.probe("ssn", ["005-05-0005"]).row_groups] == \
            ["maybe", "absent", "absent"]
    table = read_table(dst, keys=keys, filters=[("ssn", "==", "005-05-0005")])
    assert table["id"].to_pylist() == [5]


KEY_LIST = ", ".join(f"{k}:{base64.b64encode(v).decode()}" for k, v in TESTING_KEYS.items())


def test_encryption_policy_takes_pyarrows_column_keys_shape() -> None:
    from secure_bloom.spark.policy import EncryptionPolicy, KeyListKmsConfig

    kms = KeyListKmsConfig(KEY_LIST)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy = EncryptionPolicy(footer_key="kf", kms=kms, column_keys={"kc1": ["ssn", "a.b"], "kc2": ("ts",)})
    assert policy.hadoop_conf()["parquet.encryption.column.keys"] == "kc1:ssn,a.b;kc2:ts"
    assert dict(policy.column_keys) == {"kc1": ("ssn", "a.b"), "kc2": ("ts",)}
    with pytest.warns(DeprecationWarning, match=r"\{key_id: \[columns\]\}"):
        old = EncryptionPolicy(footer_key="kf", kms=kms, column_keys={"ssn": "kc1", "a.b": "kc1", "ts": "kc2"})
    assert old.hadoop_conf() == policy.hadoop_conf()
    with pytest.raises(TypeError, match="list of column paths"):
        EncryptionPolicy(footer_key="kf", kms=kms, column_keys={"kc1": ["ssn"], "kc2": "ts"})
    with pytest.raises(ValueError, match="two keys"):
        EncryptionPolicy(footer_key="kf", kms=kms, column_keys={"kc1": ["ssn"], "kc2": ["ssn"]})


def test_one_name_for_the_filter_size_cap(tmp_path: Path) -> None:
    from secure_bloom.parquet import write_table

    table = pa.table({"v": [f"value-{i}" for i in range(20_000)]})
    src = tmp_path / "src.parquet"
    pa.parquet.write_table(table, src)
    report = attach_bloom_filters(src, tmp_path / "a.parquet", ["v"], bloom_filter_max_bytes=1024)
    assert report.filters[0].num_bytes == 1024 and report.filters[0].capped
    with pytest.warns(DeprecationWarning, match="bloom_filter_max_bytes"):
        old = attach_bloom_filters(src, tmp_path / "b.parquet", ["v"], max_bytes=2048)
    assert old.filters[0].num_bytes == 2048
    encryption = pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["v"]})
    written = write_table(table, tmp_path / "w.parquet", encryption=encryption, kms=KeyListKms(TESTING_KEYS),
                          bloom_filter_options={"v": True}, bloom_filter_max_bytes=4096)
    assert written.filters[0].num_bytes == 4096
    with pytest.warns(DeprecationWarning):
        written = write_table(table, tmp_path / "x.parquet", encryption=encryption, kms=KeyListKms(TESTING_KEYS),
                              bloom_filter_options={"v": True}, max_bytes=8192)
    assert written.filters[0].num_bytes == 8192


def test_cli_adds_filters_with_bloom_everywhere_old_spellings_warn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from secure_bloom.cli import main

    src = tmp_path / "src.parquet"
    pa.parquet.write_table(pa.table({"v": [f"value-{i}" for i in range(20_000)]}), src)
    assert main(["attach", str(src), str(tmp_path / "a.parquet"), "--bloom", "v:fpp=0.1",
                 "--bloom-filter-max-bytes", "1024", "--json"]) == 0
    out, err = capsys.readouterr()
    assert '"num_bytes": 1024' in out and "deprecated" not in err
    assert main(["attach", str(src), str(tmp_path / "b.parquet"), "--column", "v", "--max-bytes", "2048", "--json"]) == 0
    out, err = capsys.readouterr()
    assert '"num_bytes": 2048' in out
    assert "--column is deprecated, use --bloom" in err and "--max-bytes is deprecated, use --bloom-filter-max-bytes" in err
    assert main(["attach", str(src), str(tmp_path / "c.parquet")]) == 2
    assert "give at least one --bloom" in capsys.readouterr().err
