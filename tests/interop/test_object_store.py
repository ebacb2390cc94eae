"""Files on an object store: a real S3-API server (moto) on 127.0.0.1, traffic counted at a proxy.

A probe and a prune fetch the footer and the filters by range requests, never a whole file;
read_table fetches only the surviving row groups and returns pyarrow's rows.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters
from secure_bloom.parquet.read import parquet_format, read_table, scan
from support.parquet_files import vector_kms, write_encrypted

pytestmark = pytest.mark.s3

ROWS = 20_000
GROUP = 2_000


def _key(i: int) -> str:
    return f"{random.Random(i).getrandbits(64):016x}"


def _upload(s3: Any, local: Path, bucket: str, name: str) -> str:
    fs = s3.upload_filesystem()
    with fs.open_output_stream(f"{bucket}/{name}") as out:
        out.write(local.read_bytes())
    return f"{bucket}/{name}"


@pytest.fixture(scope="module")
def stored(s3: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("s3-data")
    keys = KeyAccess(kms=vector_kms())
    bucket = s3.bucket("lake")
    table = pa.table({"rid": pa.array(range(ROWS), pa.int64()), "key": [_key(i) for i in range(ROWS)],
                      "payload": [random.Random(-i).randbytes(48).hex() for i in range(ROWS)]})
    paths = []
    for part in range(2):
        src = tmp / f"src{part}.parquet"
        write_encrypted(src, table.slice(part * ROWS // 2, ROWS // 2), column_keys={"kc1": ["key"]},
                        row_group_size=GROUP)
        dst = tmp / f"part-{part}.parquet"
        attach_bloom_filters(src, dst, ["key"], keys)
        paths.append(_upload(s3, dst, bucket, f"people/part-{part}.parquet"))
    return {"keys": keys, "paths": paths, "size": (tmp / "part-0.parquet").stat().st_size, "table": table}


def test_probe_on_s3_reads_footer_and_filters_only(s3: Any, stored: dict[str, Any]) -> None:
    s3.reset()
    with ParquetBloomReader(f"s3://{stored['paths'][0]}", stored["keys"], filesystem=s3.filesystem()) as reader:
        result = reader.probe("key", [_key(2500), "absent"])
        read = reader.bytes_read
    requests, body = s3.counts()
    assert result.maybe_row_groups(0) == [1]
    assert result.maybe_row_groups(1) == []
    assert body == read  # every byte fetched was asked for by the reader
    assert body < stored["size"] // 10
    assert set(requests) <= {"GET", "HEAD"}
    assert all(r.startswith("bytes=") for r in s3.get_ranges)
    assert requests["GET"] == len(s3.get_ranges)  # no GET without a range


def test_read_table_on_s3_fetches_only_surviving_row_groups(s3: Any, stored: dict[str, Any]) -> None:
    fs = s3.filesystem()
    keys = stored["keys"]
    s3.reset()
    absent = scan([f"s3://{p}" for p in stored["paths"]], filters=[("key", "==", "8000000000000000x")], keys=keys,
                  filesystem=fs)
    assert absent.to_table().num_rows == 0
    _, absent_bytes = s3.counts()
    assert absent.report.row_groups_read == 0
    assert absent.report.row_groups_total == 10

    s3.reset()
    full = ds.dataset(stored["paths"], filesystem=fs, format=parquet_format(keys)).to_table(
        filter=absent.expression)
    assert full.num_rows == 0
    _, full_bytes = s3.counts()
    print(f"S3 absent-key lookup: ours {absent_bytes} bytes, pyarrow {full_bytes} bytes")
    assert absent_bytes * 10 < full_bytes  # pyarrow alone downloads every row group's key chunk

    s3.reset()
    ours = read_table(stored["paths"], filters=[("key", "in", [_key(7), _key(15000)])], keys=keys, filesystem=fs,
                      columns=["rid", "key"])
    _, present_bytes = s3.counts()
    assert sorted(ours["rid"].to_pylist()) == [7, 15000]
    assert present_bytes < full_bytes


# --------------------------------------------------------------------------- writing to the store


def _write_config() -> Any:
    import pyarrow.parquet.encryption as pe

    return pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["key"]}, double_wrapping=True)


def test_write_table_to_s3_uploads_one_complete_verified_object(s3: Any, tmp_path: Path) -> None:
    """write_table on the real S3 server: one object, pyarrow reads the identical table from it,
    and a probe of the encrypted filters on S3 finds every key in its row group by range reads."""
    from secure_bloom.parquet import write_table

    bucket = s3.bucket("written")
    table = pa.table({"rid": pa.array(range(6_000), pa.int64()), "key": [_key(i) for i in range(6_000)]})
    s3.reset()
    report = write_table(table, f"{bucket}/people.parquet", filesystem=s3.filesystem(), encryption=_write_config(),
                         kms=vector_kms(), bloom_filter_options={"key": True}, row_group_size=GROUP)
    import pyarrow.fs as pafs

    assert [(f.row_group, f.column, f.encrypted) for f in report.filters] == [(g, "key", True) for g in range(3)]
    listed = s3.filesystem().get_file_info(pafs.FileSelector(bucket, recursive=True))
    assert [(info.path, info.size > 0) for info in listed] == [(f"{bucket}/people.parquet", True)]
    keys = KeyAccess(kms=vector_kms())
    read_back = ds.dataset(f"{bucket}/people.parquet", filesystem=s3.filesystem(),
                           format=parquet_format(keys)).to_table()
    assert read_back.equals(table)
    s3.reset()
    with ParquetBloomReader(f"{bucket}/people.parquet", keys, filesystem=s3.filesystem()) as reader:
        assert reader.row_groups_maybe_containing("key", _key(4_321)) == [2]
        assert reader.row_groups_maybe_containing("key", _key(10)) == [0]
    assert all(r.startswith("bytes=") for r in s3.get_ranges)


def test_write_table_to_s3_leaves_no_object_when_the_kms_fails(s3: Any) -> None:
    """A KMS that fails while the file is written: nothing is uploaded, not even a partial object."""
    import pyarrow.fs as pafs

    from secure_bloom.errors import KmsUnavailableError
    from secure_bloom.parquet import write_table

    class FailingUnwrap:
        """Test double: wraps like the key-list KMS, refuses every unwrap (after pyarrow wrote the
        pages, when our side opens the file to append the filters)."""

        def __init__(self) -> None:
            self._kms = vector_kms()

        def wrap_key(self, key: bytes, master_key_id: str) -> str:
            return self._kms.wrap_key(key, master_key_id)

        def unwrap_key(self, wrapped: str, master_key_id: str) -> bytes:
            raise KmsUnavailableError("injected: KMS down")

    bucket = s3.bucket("failed")
    table = pa.table({"key": [_key(i) for i in range(3_000)]})
    with pytest.raises(KmsUnavailableError, match="injected: KMS down"):
        write_table(table, f"{bucket}/people.parquet", filesystem=s3.filesystem(), encryption=_write_config(),
                    kms=FailingUnwrap(), bloom_filter_options={"key": True}, row_group_size=GROUP)
    listed = s3.filesystem().get_file_info(pafs.FileSelector(bucket, recursive=True))
    assert listed == []
