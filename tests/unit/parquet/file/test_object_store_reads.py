"""How a reader reads a file on an object store: the tail in one read without the leading magic,
the filters of a column in one coalesced read (prefetch_filters), each filter then answered from
memory with the same bytes and the same errors as without it.

The "object store" here is a real ``pyarrow.fs`` filesystem that is not the local one
(``PyFileSystem(CountingFileSystem(LocalFileSystem()))``): the reader treats it as it treats S3
(every read a request), and the counter sees every read.
"""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from secure_bloom.errors import MissingKeyError, NotParquetError
from secure_bloom.fileio import RecordingFile
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters
from secure_bloom.parquet.file.filter_reads import COALESCE_GAP_BYTES, coalesce
from secure_bloom.parquet.file.read_counting import CountingFileSystem, ReadCounter
from secure_bloom.parquet.file.tail import TAIL_READ_BYTES, read_tail
from support.parquet_files import TESTING_KEYS, vector_kms, write_encrypted

GROUP = 1_000
GROUPS = 5


@pytest.mark.parametrize("spans,gap,limit,merged", [
    ([], 10, 100, []),
    ([(0, 10)], 0, 100, [(0, 10)]),
    ([(10, 20), (0, 10)], 0, 100, [(0, 20)]),            # side by side, any order
    ([(0, 10), (15, 20)], 5, 100, [(0, 20)]),            # a gap of exactly `gap`
    ([(0, 10), (16, 20)], 5, 100, [(0, 10), (16, 20)]),  # one byte more
    ([(0, 10), (5, 8)], 0, 100, [(0, 10)]),              # inside another
    ([(0, 60), (60, 120)], 0, 100, [(0, 60), (60, 120)]),  # would exceed the limit
    ([(0, 200)], 0, 100, [(0, 200)]),                    # one span longer than the limit stays whole
])
def test_coalesce(spans: list[tuple[int, int]], gap: int, limit: int, merged: list[tuple[int, int]]) -> None:
    assert coalesce(spans, gap, limit) == merged


def test_recording_file_answers_reads_inside_any_held_region() -> None:
    data = bytes(range(256)) * 4
    f = RecordingFile(io.BytesIO(data))
    f.hold(900, data[900:])
    assert f.read_ahead(100, 50, keep_bytes=1000) == data[100:150]
    assert f.ranges == [(100, 50)]
    for offset, n in [(100, 50), (120, 10), (900, 124), (1000, 24)]:
        f.seek(offset)
        assert f.read(n) == data[offset:offset + n]
    assert f.ranges == [(100, 50)]  # all answered from memory
    assert f.holds(120, 30) and not f.holds(120, 31) and not f.holds(890, 20)
    f.seek(140)
    assert f.read(20) == data[140:160]  # straddles the end of a region: read
    assert f.ranges == [(100, 50), (140, 20)]
    f.close()
    assert not f.holds(120, 10) and not f.holds(900, 10)


def test_reads_ahead_are_dropped_oldest_first_beyond_their_budget() -> None:
    data = bytes(range(256)) * 4
    f = RecordingFile(io.BytesIO(data))
    f.hold(1000, data[1000:])  # kept whatever the budget
    f.read_ahead(0, 40, keep_bytes=100)
    f.read_ahead(100, 40, keep_bytes=100)
    assert f.holds(0, 40) and f.holds(100, 40)
    f.read_ahead(200, 40, keep_bytes=100)  # 120 bytes > 100: the oldest goes
    assert not f.holds(0, 40) and f.holds(100, 40) and f.holds(200, 40) and f.holds(1000, 24)
    f.read_ahead(300, 500, keep_bytes=100)  # larger than the budget alone: kept, the rest dropped
    assert f.holds(300, 500) and not f.holds(100, 40) and not f.holds(200, 40)


def _key(i: int) -> str:
    return f"{random.Random(i).getrandbits(64):016x}"


@pytest.fixture(scope="module")
def big_filters(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5 row groups; an encrypted 128 KiB filter on "key" (column key kc1) per row group, larger
    than the tail read; "rid" under the footer key."""
    tmp = tmp_path_factory.mktemp("prefetch")
    rows = GROUP * GROUPS
    table = pa.table({"rid": pa.array(range(rows), pa.int64()), "key": [_key(i) for i in range(rows)]})
    src, dst = tmp / "src.parquet", tmp / "big.parquet"
    write_encrypted(src, table, column_keys={"kc1": ["key"]}, row_group_size=GROUP)
    attach_bloom_filters(src, dst, ["key"], KeyAccess(kms=vector_kms()), ndv=100_000)
    return dst


def _store() -> tuple[Any, ReadCounter]:
    counter = ReadCounter()
    return pafs.PyFileSystem(CountingFileSystem(pafs.LocalFileSystem(), counter)), counter


def test_a_probe_reads_the_tail_then_every_filter_in_one_read(big_filters: Path) -> None:
    keys = KeyAccess(kms=vector_kms())
    size = big_filters.stat().st_size
    with ParquetBloomReader(big_filters, keys) as local:
        expected = local.probe("key", [_key(3), _key(GROUP * 4 + 1), "absent"]).to_dict()
        expected["file"] = f"local://{big_filters}"
        spans = [(c.bloom_filter_offset, c.bloom_filter_length) for c in local.chunks(with_sizes=False)
                 if c.column == "key"]
        local_reads = local.read_ranges
    fs, counter = _store()
    with ParquetBloomReader(str(big_filters), keys, filesystem=fs) as remote:
        assert remote.probe("key", [_key(3), _key(GROUP * 4 + 1), "absent"]).to_dict() == expected
        reads = remote.read_ranges
    first, last = spans[0][0], spans[-1][0] + spans[-1][1]  # type: ignore[operator]
    assert first + sum(n for _, n in spans) == last  # side by side: the one read holds nothing else
    assert reads == ((size - TAIL_READ_BYTES, TAIL_READ_BYTES), (first, last - first))
    assert counter.requests == 2 and counter.bytes == TAIL_READ_BYTES + last - first
    assert (0, 4) in local_reads  # a local file: leading magic read, one read per filter
    assert len(local_reads) > len(reads)


def test_prefetch_leaves_out_what_it_cannot_locate_and_the_errors_stay(big_filters: Path) -> None:
    """Without kc1 the filters cannot be located: nothing is fetched, and each filter read
    raises MissingKeyError as without the prefetch."""
    fs, counter = _store()
    keys = KeyAccess(kms=KeyListKms({"kf": TESTING_KEYS["kf"]}))
    with ParquetBloomReader(str(big_filters), keys, filesystem=fs) as reader:
        assert reader.prefetch_filters(reader.column_chunks("key")) == 0
        assert counter.requests == 1  # the tail
        with pytest.raises(MissingKeyError):
            reader.bloom_filter(0, "key")


def test_prefetch_skips_what_is_held_or_cached_and_reads_only_the_chunks_asked(big_filters: Path) -> None:
    fs, counter = _store()
    with ParquetBloomReader(str(big_filters), KeyAccess(kms=vector_kms()), filesystem=fs) as reader:
        chunks = reader.column_chunks("key")
        reader.bloom_filter(0, "key")  # cached now
        before = counter.requests
        assert reader.prefetch_filters(chunks[2:4]) == 1
        assert counter.requests == before + 1
        spans = [(c.bloom_filter_offset, c.bloom_filter_length) for c in reader.chunks(with_sizes=False)
                 if c.column == "key"]
        assert reader.read_ranges[-1] == (spans[2][0], spans[2][1] + spans[3][1])  # type: ignore[operator]
        assert reader.prefetch_filters(chunks[:4]) == 1  # only row group 1 is neither cached nor held
        assert reader.read_ranges[-1] == spans[1]
        assert reader.prefetch_filters(chunks[:4]) == 0
        filters = [reader.bloom_filter(rg, "key") for rg in range(4)]
        assert counter.requests == before + 2
    with ParquetBloomReader(big_filters, KeyAccess(kms=vector_kms())) as local:
        assert [local.bloom_filter(rg, "key") for rg in range(4)] == filters
        assert local.prefetch_filters(local.column_chunks("key")) == 0  # local: nothing fetched ahead


def test_read_ahead_goes_a_step_at_a_time_and_reads_each_filter_once(big_filters: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With steps of at most 300 KB (two 128 KiB filters), a probe of 5 row groups reads the tail, then
    filters 0-1, 2-3 and 4, each byte once; probing again reads nothing (cached)."""
    from secure_bloom.parquet.file import filter_reads

    monkeypatch.setattr(filter_reads, "COALESCE_MAX_BYTES", 300_000)
    fs, counter = _store()
    with ParquetBloomReader(str(big_filters), KeyAccess(kms=vector_kms()), filesystem=fs) as reader:
        spans = [(c.bloom_filter_offset, c.bloom_filter_length) for c in reader.chunks(with_sizes=False)
                 if c.column == "key"]
        assert reader.probe("key", ["absent"]).maybe_row_groups(0) == []
        steps = [(spans[0][0], spans[0][1] + spans[1][1]), (spans[2][0], spans[2][1] + spans[3][1]), spans[4]]
        assert list(reader.read_ranges[1:]) == steps  # type: ignore[operator]
        assert counter.requests == 4
        reader.probe("key", [_key(1)])
        assert counter.requests == 4


def test_by_default_only_filters_side_by_side_are_read_together() -> None:
    """No byte between two filters is read (a lookup reads what it read filter by filter)."""
    assert COALESCE_GAP_BYTES == 0
    assert coalesce([(0, 10), (10, 20), (21, 30)], COALESCE_GAP_BYTES) == [(0, 20), (21, 30)]


def test_without_the_leading_magic_check_only_a_tail_read_holding_it_checks_it(big_filters: Path) -> None:
    data = big_filters.read_bytes()
    bad = b"PAR1" + data[4:]
    exact = read_tail(io.BytesIO(data))
    assert read_tail(io.BytesIO(bad), speculative_bytes=TAIL_READ_BYTES, leading_magic=False) == exact
    with pytest.raises(NotParquetError, match="leading magic"):
        read_tail(io.BytesIO(bad), speculative_bytes=TAIL_READ_BYTES)
    with pytest.raises(NotParquetError, match="leading magic"):  # the tail read holds the whole file
        read_tail(io.BytesIO(bad), speculative_bytes=len(bad), leading_magic=False)
    f = RecordingFile(io.BytesIO(data))
    read_tail(f, speculative_bytes=TAIL_READ_BYTES, leading_magic=False)  # type: ignore[arg-type]
    assert f.ranges == [(len(data) - TAIL_READ_BYTES, TAIL_READ_BYTES)]
