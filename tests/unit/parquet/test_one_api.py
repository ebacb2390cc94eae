"""One API across the entry points (issue 23): the names and shapes pyarrow, Polars and Spark
users expect, the old ones kept as deprecated aliases, pyarrow's own names refused with a pointer."""

from __future__ import annotations

import base64
import json
import re
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


def _config() -> pe.EncryptionConfiguration:
    return pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["ssn"]})


def test_pyarrows_own_argument_names_point_to_ours(tmp_path: Path) -> None:
    from secure_bloom.parquet import dataset, write_table

    table = sample_table(10)
    with pytest.raises(TypeError, match=r"encryption_properties=\.\.\. is pyarrow's; .*give encryption="):
        write_table(table, tmp_path / "a.parquet", encryption=_config(), kms=KeyListKms(TESTING_KEYS),
                    encryption_properties=object())
    path = write_encrypted(tmp_path / "b.parquet", table)
    props = pe.CryptoFactory(lambda cfg: PyArrowKeyList(cfg)).file_decryption_properties(pe.KmsConnectionConfig())
    for call in (read_table, dataset):
        with pytest.raises(TypeError, match=r"decryption_properties=\.\.\.\) is pyarrow's: give keys=KeyAccess"):
            call(path, decryption_properties=props)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colums'"):
        read_table(path, colums=["id"])


def test_an_unknown_filter_column_is_column_not_found(tmp_path: Path) -> None:
    from secure_bloom.errors import ColumnNotFoundError
    from secure_bloom.parquet import dataset

    pa.parquet.write_table(pa.table({"x": [1, 2]}), tmp_path / "x.parquet")
    with pytest.raises(ColumnNotFoundError, match=r"column 'nope'.*\(columns: x\)"):
        read_table(tmp_path / "x.parquet", filters=[("nope", "==", 1)])
    with pytest.raises(ColumnNotFoundError, match="'nope'"):
        dataset(tmp_path / "x.parquet").to_table(filter=pa.compute.field("nope") == 1)


def test_write_to_dataset_existing_data_behavior_and_partitioning(tmp_path: Path) -> None:
    import pyarrow.dataset as pads

    from secure_bloom.errors import DestinationExistsError
    from secure_bloom.parquet import write_to_dataset

    table = pa.table({"ssn": ["a", "b", "c"], "country": ["FR", "DE", "FR"]})
    kms = KeyListKms(TESTING_KEYS)
    root = tmp_path / "lake"

    def write(**options: Any) -> None:
        write_to_dataset(table, root, encryption=_config(), kms=kms, bloom_filter_options={"ssn": True}, **options)

    write(partitioning=["country"], partitioning_flavor="hive")
    assert sorted(p.parent.name for p in root.rglob("*.parquet")) == ["country=DE", "country=FR"]
    write(partitioning=pads.partitioning(pa.schema([("country", pa.string())]), flavor="hive"))
    assert len(list(root.rglob("*.parquet"))) == 4  # overwrite_or_ignore: new names, old files kept
    write(partition_cols=["country"], existing_data_behavior="delete_matching")
    assert len(list(root.rglob("*.parquet"))) == 2
    with pytest.raises(DestinationExistsError, match="existing_data_behavior='error'"):
        write(partition_cols=["country"], existing_data_behavior="error")
    assert len(list(root.rglob("*.parquet"))) == 2
    keys = KeyAccess(kms=kms)
    assert sorted(read_table(root, keys=keys, filters=[("ssn", "in", ["a", "c"])])["ssn"].to_pylist()) == ["a", "c"]
    with pytest.raises(ValueError, match="directory partitioning"):
        write(partitioning=["country"])
    with pytest.raises(ValueError, match="hive partitions only"):
        write(partitioning=pads.partitioning(pa.schema([("country", pa.string())])))
    with pytest.raises(ValueError, match="existing_data_behavior must be one of"):
        write(existing_data_behavior="replace")


def test_a_missing_key_reads_as_the_clis_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from secure_bloom.cli import main
    from secure_bloom.errors import MissingKeyError
    from secure_bloom.parquet import dataset

    path = write_encrypted(tmp_path / "e.parquet", sample_table(10))
    assert main(["inspect", str(path)]) != 0
    cli = capsys.readouterr().err.strip().removeprefix("secure-bloom: error: ")
    assert cli == f"{path}: the footer key 'kf' is needed and no keys were given"
    for call in (read_table, dataset):
        with pytest.raises(MissingKeyError) as err:
            call(path)
        assert str(err.value) == cli


@pytest.mark.parametrize("environ,expected", [({"VAULT_TOKEN": "v", "BAO_TOKEN": "b"}, "v"), ({"BAO_TOKEN": "b"}, "b")])
def test_worker_keys_read_the_token_variables_the_cli_reads(monkeypatch: pytest.MonkeyPatch,
                                                           environ: dict[str, str], expected: str) -> None:
    from secure_bloom.parquet.file.keys import key_access_from_sources
    from secure_bloom.spark.dataset import WorkerKeys

    monkeypatch.delenv("VAULT_TOKEN", raising=False)
    monkeypatch.delenv("BAO_TOKEN", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    url = f"http://127.0.0.1:8200/{expected}"  # a fresh WorkerKeys per case (its KeyAccess is cached)
    worker = WorkerKeys(transit_url=url).key_access().kms
    cli = key_access_from_sources(kms_url=url).kms
    assert worker._token == cli._token == expected
    assert "VAULT_TOKEN or BAO_TOKEN" in repr(WorkerKeys(transit_url=url))


def test_every_json_output_has_one_envelope(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """probe/inspect --json: a list for one file as for a directory, in the same envelope."""
    from secure_bloom import __version__
    from secure_bloom.cli import main

    src = tmp_path / "d" / "a.parquet"
    src.parent.mkdir()
    pa.parquet.write_table(pa.table({"v": ["x", "y"]}), tmp_path / "src.parquet")
    attach_bloom_filters(tmp_path / "src.parquet", src, ["v"])
    runs = {"probe": ["probe", str(src), "--column", "v", "--value", "x", "--json"],
            "probe-dir": ["probe", str(src.parent), "--column", "v", "--value", "x", "--json"],
            "inspect": ["inspect", str(src), "--json"], "inspect-dir": ["inspect", str(src.parent), "--json"],
            "audit": ["audit", str(src), "--sensitive", "v", "--json"], "doctor": ["doctor", str(src.parent), "--json"],
            "attach": ["attach", str(src), str(tmp_path / "b.parquet"), "--bloom", "v", "--json"],
            "query": ["query", str(src), "--where", "v = x", "--format", "json"]}
    docs = {}
    for name, argv in runs.items():
        main(argv)
        docs[name] = json.loads(capsys.readouterr().out)
        assert set(docs[name]) == {"version", "command", "secure_bloom", "result"}, name
        assert docs[name]["version"] == 1 and docs[name]["secure_bloom"] == __version__
        assert docs[name]["command"] == name.removesuffix("-dir")
    for name in ("probe", "inspect"):
        assert isinstance(docs[name]["result"], list) and docs[name]["result"] == docs[f"{name}-dir"]["result"]
    assert docs["query"]["result"] == {"rows": [{"v": "x"}], "report": None}


def test_progress_bars_count_bytes_in_byte_units(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from secure_bloom.cli.output import progress_bar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with progress_bar("attach", "chunks", {"filters": "chunks", "copy": "B"}) as bar:
        assert bar is not None
        bar(3, 10, "filters")
        assert "3/10" in screen.getvalue().rsplit("\r", 1)[-1] and "chunks" in screen.getvalue()
        bar(3 << 20, 8 << 20, "copy")
    shown = screen.getvalue()
    assert re.search(r"attach: copy.*3\.\d+M/8\.\d+M", shown), shown[-300:]
