"""One API across the entry points (issue 23): the names and shapes pyarrow, Polars and Spark
users expect, the old ones kept as deprecated aliases, pyarrow's own names refused with a pointer."""

from __future__ import annotations

import base64
import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
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
