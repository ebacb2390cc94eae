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


def test_replaced_between_pruning_and_a_scanners_open_raises(versions: tuple[Path, Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A PruningDataset's scanner opens its surviving local files when it is made, right after
    pruning them (PinnedFileSystem.open_native): a file replaced in between is refused there, and
    the scanner reads the version pruned or nothing."""
    data, new = versions
    opened = PinnedFileSystem.open_native

    def replaced_first(self: PinnedFileSystem, path: str) -> Any:
        os.replace(new, data)
        return opened(self, path)

    pruned = dataset(data)
    monkeypatch.setattr(PinnedFileSystem, "open_native", replaced_first)
    with pytest.raises(FileChangedError):
        pruned.scanner(filter=pc.field("k") == 2)
    monkeypatch.setattr(PinnedFileSystem, "open_native", opened)
    assert pruned.scanner(filter=pc.field("k") == 2).to_reader().read_all()["k"].to_pylist() == [2]
    assert [f.row_groups for f in pruned.last_report.files] == [(1,)]  # the new version, pruned anew


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


def test_rewritten_in_place_while_its_tail_is_read_raises(versions: tuple[Path, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The version a reader reads is the one its open saw (the fstat of the open, before any
    read): a rewrite in place right after the footer was read is another version at the scan,
    never the version the old footer's row groups are applied to."""
    from secure_bloom.parquet.file import reader as reader_module

    data, new = versions
    read_tail = reader_module.read_tail

    def then_rewrite(*args: Any, **kwargs: Any) -> Any:
        tail = read_tail(*args, **kwargs)
        if not getattr(then_rewrite, "done", False):
            then_rewrite.done = True  # type: ignore[attr-defined]
            time.sleep(0.01)  # lets a coarse clock tick past the version opened
            with open(data, "r+b") as f:  # same inode, same size, other bytes
                f.write(new.read_bytes())
        return tail

    monkeypatch.setattr(reader_module, "read_tail", then_rewrite)
    pruned = scan(data, filters=KEY)
    assert [f.row_groups for f in pruned.report.files] == [(0,)]  # the old footer's answer
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
        # a plaintext footer on a filesystem telling no inode or ETag does not prove its version:
        # the cache does not answer it (weak identities below), the open read it (version 1)
        assert [(f.row_groups, f.from_cache) for f in pruned.report.files] == [((0,), False)]
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


# ---- weak identities: filesystems that tell only a size and a modification time (issue 28, item 1) ----


class LocalHandler(ReplacingFileSystem):
    """A custom ``PyFileSystem`` handler over the local disk that tells pyarrow nothing but
    sizes and modification times (no inode, no ETag): as HDFS, GCS or a user's handler."""

    def __init__(self) -> None:
        super().__init__("", "", at=0)

    def __reduce__(self) -> Any:
        return (LocalHandler, ())


def _replace_keeping_mtime(new: Path, data: Path) -> None:
    """``cp -p`` / ``rsync -a``: another version of the same size, with the old modification time."""
    st = data.stat()
    assert new.stat().st_size == st.st_size
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, data)


def _on(kind: str, data: Path) -> tuple[pafs.FileSystem, str]:
    """``data`` on a SubTreeFileSystem over its directory, or on a custom handler."""
    if kind == "subtree":
        return pafs.SubTreeFileSystem(str(data.parent), pafs.LocalFileSystem()), data.name
    return pafs.PyFileSystem(LocalHandler()), str(data)


def _truth(data: Path, key: int) -> list[int]:
    return ds.dataset(str(data)).to_table(filter=pc.field("k") == key)["k"].to_pylist()


@pytest.mark.parametrize("kind", ["subtree", "handler"])
def test_a_warm_cache_never_answers_a_same_size_same_mtime_replacement_from_old_facts(
        versions: tuple[Path, Path], kind: str) -> None:
    data, new = versions
    fs, path = _on(kind, data)
    cache = PruneCache()
    assert read_table(path, filesystem=fs, filters=KEY, cache=cache)["k"].to_pylist() == [2]
    assert read_table(path, filesystem=fs, filters=[("k", "==", 11)], cache=cache)["k"].to_pylist() == [11]
    _replace_keeping_mtime(new, data)
    for key in (2, 11):
        assert _truth(data, key) == [key]
        assert read_table(path, filesystem=fs, filters=[("k", "==", key)], cache=cache)["k"].to_pylist() == [key]


@pytest.mark.parametrize("kind", ["subtree", "handler"])
def test_scan_then_a_same_size_same_mtime_replacement_raises(versions: tuple[Path, Path], kind: str) -> None:
    data, new = versions
    fs, path = _on(kind, data)
    pruned = scan(path, filesystem=fs, filters=KEY)
    assert [f.row_groups for f in pruned.report.files] == [(0,)]
    assert pruned.to_table()["k"].to_pylist() == [2]  # unchanged: reads, as often as asked
    _replace_keeping_mtime(new, data)
    with pytest.raises(FileChangedError):
        pruned.to_table()


def _with_filter(path: Path, first: list[int], second: list[int]) -> Path:
    """A version with a Bloom filter on ``k``: stored without dictionary or compression, so two
    versions whose row groups have the same bounds have byte-identical footers."""
    src = _version(path.with_suffix(".src"), first, second)
    from secure_bloom.parquet import attach_bloom_filters

    attach_bloom_filters(src, path, ["k"], overwrite=True)
    src.unlink()
    return path


def test_a_plaintext_footer_that_stays_the_same_does_not_prove_the_filters_the_same(tmp_path: Path) -> None:
    """Two plaintext versions with byte-identical footers (same sizes, bounds, offsets) whose
    Bloom filters differ: the footer's digest cannot tell them apart, so a cache does not
    reuse facts there, and a scan checks every byte pruning read (the filters too)."""
    data = _with_filter(tmp_path / "data.parquet", [1, 2, 3], [1, 3, 3])
    new = _with_filter(tmp_path / "next.parquet", [1, 2, 3], [1, 2, 3])
    tail = lambda p: p.read_bytes()[-(8 + int.from_bytes(p.read_bytes()[-8:-4], "little")):]  # noqa: E731
    assert tail(data) == tail(new) and data.read_bytes() != new.read_bytes()
    fs, path = _on("handler", data)
    cache = PruneCache()
    pruned = scan(path, filesystem=fs, filters=KEY)
    assert [(f.row_groups, f.pruned_by_bloom) for f in pruned.report.files] == [((0,), (1,))]
    assert read_table(path, filesystem=fs, filters=KEY, cache=cache)["k"].to_pylist() == [2]
    _replace_keeping_mtime(new, data)
    assert _truth(data, 2) == [2, 2]
    assert read_table(path, filesystem=fs, filters=KEY, cache=cache)["k"].to_pylist() == [2, 2]
    assert cache.stats.hits == 0
    with pytest.raises(FileChangedError):
        pruned.to_table()


def test_an_encrypted_footer_proves_its_version_so_the_cache_answers_on_a_weak_filesystem(tmp_path: Path) -> None:
    """An encrypted footer's bytes differ in every write (GCM under a random nonce): its digest
    tells the version, so a warm cache answers an unchanged file without reading it again and
    a re-encryption of the same size and mtime is read afresh."""
    from secure_bloom.parquet import KeyAccess
    from support.parquet_files import vector_kms, write_encrypted

    def version(path: Path, first: list[int], second: list[int]) -> Path:
        table = pa.table({"k": pa.array(first + second, pa.int64()), "v": pa.array([1] * 6, pa.int64())})
        return write_encrypted(path, table, column_keys={"kc1": ["k"]}, **OPTIONS)

    data = version(tmp_path / "data.parquet", [1, 2, 3], [10, 11, 12])
    new = version(tmp_path / "next.parquet", [10, 11, 12], [1, 2, 3])
    keys = KeyAccess(kms=vector_kms())
    fs, path = _on("handler", data)
    cache = PruneCache()
    assert read_table(path, filesystem=fs, filters=KEY, keys=keys, cache=cache)["k"].to_pylist() == [2]
    warm = scan(path, filesystem=fs, filters=KEY, keys=keys, cache=cache)
    assert [(f.row_groups, f.from_cache) for f in warm.report.files] == [((0,), True)]
    assert warm.to_table()["k"].to_pylist() == [2]
    _replace_keeping_mtime(new, data)
    again = scan(path, filesystem=fs, filters=KEY, keys=keys, cache=cache)
    assert [(f.row_groups, f.from_cache) for f in again.report.files] == [((1,), False)]
    assert again.to_table()["k"].to_pylist() == [2]
    with pytest.raises(FileChangedError):
        warm.to_table()
