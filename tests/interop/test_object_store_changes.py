"""Objects replaced on a real S3-API server (moto) between pruning and the scan, and under a cache.

An object overwritten with another of the same size, in the same second, has the same size and
Last-Modified as before: only its ETag tells the versions apart. A pruned read whose object was
replaced raises FileChangedError instead of applying the old row-group indices to the new object,
and a PruneCache never answers the new version with the old one's facts (issue 19, item 6).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from secure_bloom.errors import FileChangedError
from secure_bloom.parquet import PruneCache
from secure_bloom.parquet.read.api import dataset, read_table, scan

pytestmark = pytest.mark.s3

KEY = [("k", "==", 2)]
T = TypeVar("T")


def _version(first: list[int], second: list[int]) -> bytes:
    """Two row groups of 3 rows (values of one width: every version has the same size)."""
    out = io.BytesIO()
    pq.write_table(pa.table({"k": pa.array(first + second, pa.int64())}), out, row_group_size=3,
                   compression="NONE", use_dictionary=False)
    return out.getvalue()


OLD = _version([1, 2, 3], [10, 11, 12])  # key 2 in row group 0
NEW = _version([10, 11, 12], [1, 2, 3])  # key 2 in row group 1


def _put(s3: Any, path: str, data: bytes) -> None:
    with s3.upload_filesystem().open_output_stream(path) as out:
        out.write(data)


def _replaced_within_the_second(s3: Any, path: str, prepare: Callable[[], T]) -> T:
    """Upload OLD to ``path``, run ``prepare`` (pruning it), then overwrite it with NEW in the
    same second, so that size and Last-Modified cannot tell the versions apart (retried, from
    the upload of OLD, until NEW lands in OLD's second). Returns what ``prepare`` returned."""
    upload = s3.upload_filesystem()
    for _ in range(20):
        _put(s3, path, OLD)
        before = upload.get_file_info(path)
        prepared = prepare()
        _put(s3, path, NEW)
        after = upload.get_file_info(path)
        if after.mtime_ns == before.mtime_ns:
            assert after.size == before.size
            return prepared
    pytest.fail("could not replace the object within one second of its previous version")


def test_versions_have_the_same_size() -> None:
    assert len(OLD) == len(NEW) and OLD != NEW


def test_replaced_between_scan_and_to_table_raises(s3: Any) -> None:
    """scan() chose row groups from the old version: reading them from the new one raises; a
    dataset() prunes at each scan, so it reads the new version's row groups."""
    bucket = s3.bucket("changes")
    path = f"{bucket}/scan/data.parquet"
    fs = s3.filesystem()

    def prune() -> tuple[Any, Any]:
        counted = scan(path, filters=KEY, filesystem=fs, count_reads=True)
        assert [f.row_groups for f in counted.report.files] == [(0,)]
        return dataset(path, filters=KEY, filesystem=fs), counted

    pruned, counted = _replaced_within_the_second(s3, path, prune)
    assert ds.dataset(path, filesystem=fs).to_table().num_rows == 6  # pyarrow's own dataset made now
    with pytest.raises(FileChangedError, match="changed after its row groups were chosen"):
        counted.to_table()
    assert pruned.to_table()["k"].to_pylist() == [2]
    assert pruned.last_report is not None and [f.row_groups for f in pruned.last_report.files] == [(1,)]
    assert read_table(path, filters=KEY, filesystem=fs)["k"].to_pylist() == [2]  # a new read: new version


def test_an_unchanged_object_is_scanned_with_one_identity_check(s3: Any) -> None:
    bucket = s3.bucket("unchanged")
    path = f"{bucket}/data.parquet"
    _put(s3, path, OLD)
    fs = s3.filesystem()
    pruned = scan(path, filters=KEY, filesystem=fs)
    s3.reset()
    assert pruned.to_table()["k"].to_pylist() == [2]
    requests, _ = s3.counts()
    assert requests.get("HEAD", 0) == 1  # the open that checks the ETag; then range GETs only
    # the object is smaller than the tail pruning read (TAIL_READ_BYTES): once the HEAD proves it
    # the version pruned, its footer and data come from that read (no GET)
    assert requests == {"HEAD": 1}
    s3.reset()
    assert pruned.to_table()["k"].to_pylist() == [2]  # scanned again: those bytes served one open only
    assert s3.counts()[0]["HEAD"] == 1 and s3.counts()[0]["GET"] >= 1


def test_a_cache_never_answers_a_replaced_object_with_the_old_facts(s3: Any) -> None:
    """Same size, same Last-Modified second, other content: the cache tells the versions apart
    by ETag (by size and mtime alone it answered the new object with the old row groups)."""
    bucket = s3.bucket("cached")
    path = f"{bucket}/data.parquet"
    fs = s3.filesystem()

    def warm() -> PruneCache:
        cache = PruneCache()
        assert read_table(path, filters=KEY, filesystem=fs, cache=cache)["k"].to_pylist() == [2]
        return cache

    cache = _replaced_within_the_second(s3, path, warm)
    pruned = scan(path, filters=KEY, filesystem=fs, cache=cache)
    assert [(f.row_groups, f.from_cache) for f in pruned.report.files] == [((1,), False)]
    assert pruned.to_table()["k"].to_pylist() == [2]
    again = scan(path, filters=KEY, filesystem=fs, cache=cache)  # the new version, now cached
    assert [(f.row_groups, f.from_cache) for f in again.report.files] == [((1,), True)]
    assert again.to_table()["k"].to_pylist() == [2]
