"""A file that changes between pruning and the scan: never another version's rows, silently.

``scan()`` / ``dataset()`` choose row groups by index from one version of each file; pyarrow
reads them later. Every test here changes a real file in between (``os.replace`` of a rewritten
file with the same row-group layout, an in-place rewrite) and checks that the read raises
:class:`FileChangedError` instead of applying the old indices to the new file (issue 19, item 6),
that an unchanged file reads as before, and that a PruneCache never answers a file with facts of
another version, even when the file is replaced between the cache lookup and the open.
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from secure_bloom.errors import FileChangedError, SecureBloomError, SourceChangedError
from secure_bloom.parquet import PruneCache
from secure_bloom.parquet.file.identity import PinnedFileSystem, file_identity, opened_identity
from secure_bloom.parquet.read.api import dataset, read_table, scan
from secure_bloom.parquet.file.reader import ParquetBloomReader

GROUP = 3
OPTIONS: dict[str, Any] = {"row_group_size": GROUP, "compression": "NONE", "use_dictionary": False}


def _version(path: Path, first: list[int], second: list[int]) -> Path:
    """Two row groups of 3 rows: ``first`` then ``second`` (values of equal byte width, so that
    every version has the same size and layout)."""
    pq.write_table(pa.table({"k": pa.array(first + second, pa.int64()), "v": pa.array([1] * 6, pa.int64())}),
                   path, **OPTIONS)
    return path


@pytest.fixture
def versions(tmp_path: Path) -> tuple[Path, Path]:
    """data.parquet holds key 2 in row group 0; next.parquet, the same layout and size, holds it
    in row group 1 (what a rewrite by a compaction job looks like)."""
    data = _version(tmp_path / "data.parquet", [1, 2, 3], [10, 11, 12])
    new = _version(tmp_path / "next.parquet", [10, 11, 12], [1, 2, 3])
    assert data.stat().st_size == new.stat().st_size
    assert pq.ParquetFile(new).metadata.num_row_groups == 2
    return data, new


KEY = [("k", "==", 2)]


def test_replaced_between_dataset_and_to_table_prunes_the_new_version(versions: tuple[Path, Path]) -> None:
    """dataset() prunes at each scan (PruningDataset): a file replaced before the scan is pruned
    and read as the version it is then, never with the old version's row-group indices."""
    data, new = versions
    pruned = dataset(data, filters=KEY)
    assert pruned.to_table()["k"].to_pylist() == [2]
    assert [f.row_groups for f in pruned.last_report.files] == [(0,)]
    os.replace(new, data)
    reference = ds.dataset(data).to_table(filter=pc.field("k") == 2)
    assert reference["k"].to_pylist() == [2]  # pyarrow's own dataset made now finds it (row group 1)
    assert pruned.to_table()["k"].to_pylist() == [2]
    assert [f.row_groups for f in pruned.last_report.files] == [(1,)]
    assert read_table(data, filters=KEY)["k"].to_pylist() == [2]


@pytest.mark.parametrize("count_reads", [False, True])
def test_replaced_between_scan_and_to_table_raises(versions: tuple[Path, Path], count_reads: bool) -> None:
    data, new = versions
    pruned = scan(data, filters=KEY, count_reads=count_reads)
    assert [f.row_groups for f in pruned.report.files] == [(0,)]
    os.replace(new, data)
    with pytest.raises(FileChangedError) as raised:
        pruned.to_table()
    assert isinstance(raised.value, SecureBloomError) and not isinstance(raised.value, SourceChangedError)


@pytest.mark.parametrize("count_reads", [False, True])
def test_a_pickled_pruned_dataset_keeps_its_check(versions: tuple[Path, Path], count_reads: bool) -> None:
    """A restricted dataset sent to another process (pickled) reads as before and still refuses
    a replaced file."""
    data, new = versions
    pruned = scan(data, filters=KEY, count_reads=count_reads)
    copy = pickle.loads(pickle.dumps(pruned.dataset))
    assert copy.to_table(filter=pc.field("k") == 2)["k"].to_pylist() == [2]
    os.replace(new, data)
    with pytest.raises(FileChangedError):
        pickle.loads(pickle.dumps(pruned.dataset)).to_table(filter=pc.field("k") == 2)


def test_rewritten_in_place_raises(versions: tuple[Path, Path]) -> None:
    data, new = versions
    pruned = scan(data, filters=KEY)
    time.sleep(0.01)  # lets a coarse clock tick past the pruned version's modification time
    with open(data, "r+b") as f:  # same inode, same size, other bytes
        f.write(new.read_bytes())
    with pytest.raises(FileChangedError):
        pruned.to_table()


def test_an_unchanged_file_reads_every_time_and_others_may_change(versions: tuple[Path, Path]) -> None:
    data, new = versions
    other = _version(data.parent / "other.parquet", [4, 5, 6], [7, 8, 9])
    pruned = scan([data, other], filters=KEY)
    assert [f.row_groups for f in pruned.report.files] == [(0,), ()]
    os.replace(new, other)  # a file pruned away entirely is not read: its change does not matter
    assert pruned.to_table()["k"].to_pylist() == [2]
    assert pruned.to_table()["k"].to_pylist() == [2]  # a dataset may be scanned again


def test_the_scan_reads_the_pruned_inode_once_it_is_open(versions: tuple[Path, Path]) -> None:
    """The check is made on the descriptor pyarrow reads: a replacement after the open does not
    reach it (the inode that was pruned stays readable through it)."""
    data, new = versions
    identity = file_identity(str(data))
    assert identity is not None and identity[0] == "local"
    pinned = PinnedFileSystem(pafs.LocalFileSystem(), {str(data): identity})
    with pinned.open_input_file(str(data)) as f:
        os.replace(new, data)
        content = f.read()
    assert pq.read_table(pa.BufferReader(content))["k"].to_pylist()[:3] == [1, 2, 3]
    with pytest.raises(FileChangedError):
        pinned.open_input_file(str(data))


def test_the_reader_identity_is_its_descriptors(versions: tuple[Path, Path]) -> None:
    data, new = versions
    with ParquetBloomReader(data) as reader:
        assert reader.identity == file_identity(str(data))
        os.replace(new, data)
        assert reader.identity != file_identity(str(data))  # it still reads the version it opened
        with open(new.parent / "data.parquet", "rb") as now:
            assert opened_identity(now, None, str(data)) == file_identity(str(data))
    with open(data, "rb") as stream:
        assert ParquetBloomReader(stream).identity is None  # a caller's stream: not told


class ReplacingFileSystem(pafs.FileSystemHandler):  # type: ignore[misc]
    """A local filesystem on which another process replaces ``path`` with ``replacement`` just
    before the ``at``-th open of ``path``: the race between a cache lookup and the open, made
    to happen every time (a real ``os.replace`` of real files)."""

    def __init__(self, path: str, replacement: str, at: int) -> None:
        self.inner = pafs.LocalFileSystem()
        self.path, self.replacement, self.at, self.opens = path, replacement, at, 0

    def get_type_name(self) -> str:
        return "replacing"

    def normalize_path(self, path: str) -> str:
        return path

    def equals(self, other: Any) -> bool:
        return other is self

    def get_file_info(self, paths: Any) -> Any:
        return self.inner.get_file_info(paths)

    def get_file_info_selector(self, selector: Any) -> Any:
        return self.inner.get_file_info(selector)

    def open_input_file(self, path: str) -> Any:
        if path == self.path:
            self.opens += 1
            if self.opens == self.at:
                os.replace(self.replacement, self.path)
        return self.inner.open_input_file(path)

    def open_input_stream(self, path: str) -> Any:
        return self.open_input_file(path)

    def _read_only(self, *_: Any, **__: Any) -> Any:
        raise OSError("read-only")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only

    def __reduce__(self) -> Any:  # pickles (the cache names a filesystem by its pickled options)
        return (ReplacingFileSystem, (self.path, self.replacement, self.at))


@pytest.mark.parametrize("at", [2, 3])
def test_a_cached_file_replaced_around_its_one_open_is_never_answered_with_old_facts(
        versions: tuple[Path, Path], at: int) -> None:
    """Warm cache for version 1. The cache lookup's open (its identity) is also the open the
    reader reads through (one open per file), so what the cache is asked about and what is
    read are one version. Replaced just before that open (``at=2``, after pyarrow's discovery):
    the identity is version 2's, the cache misses and the row groups come from version 2.
    Replaced after it (``at=3``, the scan's open): pruned from version 1, and the scan raises
    FileChangedError, never version 1's facts applied to version 2."""
    data, new = versions
    cache = PruneCache()
    handler = ReplacingFileSystem(str(data), str(new), at=at)  # one filesystem: one cache key
    fs = pafs.PyFileSystem(handler)
    handler.opens = -100  # no replacement while the cache is warmed
    assert read_table(str(data), filters=KEY, filesystem=fs, cache=cache)["k"].to_pylist() == [2]
    time.sleep(0.01)
    os.utime(new)  # version 2 has a later modification time than version 1 on any clock
    handler.opens = 0
    pruned = scan(str(data), filters=KEY, filesystem=fs, cache=cache)
    if at == 2:
        # the kept discovery's check of the first file (open 1: version 1), then the cache lookup
        # (open 2: replaced just before it, so version 2's identity: a miss, pruned and learned
        # from version 2); the listing's first file changed, so the lookup starts again from
        # pyarrow's discovery (open 3), prunes from the facts just learned of version 2 (open 4:
        # its identity), and keeps the new discovery (opens 5-6: its schema, its identity)
        assert [f.row_groups for f in pruned.report.files] == [(1,)]
        assert handler.opens == 6
        assert pruned.to_table()["k"].to_pylist() == [2]  # the scan: open 7, version 2
    else:
        assert [(f.row_groups, f.from_cache) for f in pruned.report.files] == [((0,), True)]
        with pytest.raises(FileChangedError):
            pruned.to_table()
        # the kept discovery's check of the first file, the cache lookup (its identity), the scan
        assert handler.opens == 3


def test_without_proc_fd_the_path_is_checked_after_its_open(versions: tuple[Path, Path],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Where /proc/self/fd is missing (not Linux), the scan opens the path and checks it again
    after the open: unchanged files read, replaced ones raise."""
    from secure_bloom.parquet.file import identity

    monkeypatch.setattr(identity, "_PROC_FD", str(versions[0].parent / "no-proc"))
    data, new = versions
    pruned = scan(data, filters=KEY)
    assert pruned.to_table()["k"].to_pylist() == [2]
    os.replace(new, data)
    with pytest.raises(FileChangedError):
        pruned.to_table()
