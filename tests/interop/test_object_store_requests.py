"""Requests per file of a cold lookup on an object store (moto's S3 server, counted at a proxy).

Per file: one HEAD (pyarrow's open: the size, and the identity the scan is pinned to), one
speculative read of the file's end (the footer, and the filters written just before it), then
one read of the filters of the surviving row groups that lie outside that read (written side by
side, they come in one range of exactly their bytes). No read of the leading magic, no request
per filter. Files of 1 and 5 row groups, filters inside and outside the tail read, absent and
present keys; a column's filters apart from each other (another column's between them) are read
one by one, never the bytes between them. A file that survives is opened once more for the
scan (a HEAD: the check that it is the version pruned) and its row group's data read; its
footer is not fetched again (the tail pruning read answers for it). Per lookup: pyarrow's
discovery of the prefix (one HEAD, two listings), nothing more.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from secure_bloom.errors import NotParquetError
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters, read_table
from secure_bloom.parquet.file.tail import TAIL_READ_BYTES
from secure_bloom.parquet.read.api import scan
from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
from secure_bloom.parquet.read.prune import prune_files
from support.parquet_files import vector_kms, write_encrypted

pytestmark = pytest.mark.s3

GROUP = 2_000
FILES = 2
ABSENT = "8000000000000000x"
#: (row groups per file, ndv given to the filters: None sizes them for the chunk, 100,000 makes
#: 128 KiB filters, larger than the tail read)
LAYOUTS = {"1rg-inside": (1, None), "5rg-inside": (5, None), "1rg-outside": (1, 100_000),
           "5rg-outside": (5, 100_000)}
#: filters on two columns: each row group's filters side by side, so one column's are apart
INTERLEAVED = "5rg-two-columns"


def _key(i: int) -> str:
    return f"{random.Random(i).getrandbits(64):016x}"


@pytest.fixture(scope="module")
def lake(s3: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("s3-requests")
    keys = KeyAccess(kms=vector_kms())
    bucket = s3.bucket("requests")
    upload = s3.upload_filesystem()
    out: dict[str, Any] = {"keys": keys, "bucket": bucket}
    for name, (groups, ndv) in [*LAYOUTS.items(), (INTERLEAVED, (5, 100_000))]:
        rows = GROUP * groups
        files = []
        columns = ["key", "rid"] if name == INTERLEAVED else ["key"]
        for f in range(FILES):
            table = pa.table({"rid": pa.array(range(f * rows, (f + 1) * rows), pa.int64()),
                              "key": [_key(f * rows + i) for i in range(rows)]})
            src, dst = tmp / f"{name}-{f}.src.parquet", tmp / f"{name}-{f}.parquet"
            write_encrypted(src, table, column_keys={"kc1": ["key"]}, row_group_size=GROUP)
            attach_bloom_filters(src, dst, columns, keys, **({"ndv": ndv} if ndv else {}))
            with upload.open_output_stream(f"{bucket}/{name}/part-{f}.parquet") as stream:
                stream.write(dst.read_bytes())
            files.append(dst)
        out[name] = files
    return out


def _expected_gets(local: Path, row_groups: list[int], keys: KeyAccess) -> list[str]:
    """The tail read, then one range over the consulted filters outside it (asserted to lie side
    by side: that range holds no other byte)."""
    size = local.stat().st_size
    with ParquetBloomReader(local, keys) as reader:
        spans = {c.row_group: (c.bloom_filter_offset, c.bloom_filter_length)
                 for c in reader.chunks(with_sizes=False) if c.column == "key"}
    window = max(0, size - TAIL_READ_BYTES)
    gets = [f"bytes={window}-{size - 1}"]
    outside = sorted((o, o + n) for o, n in (spans[rg] for rg in row_groups) if o < window)
    if outside:
        assert all(a[1] == b[0] for a, b in zip(outside, outside[1:]))
        gets.append(f"bytes={outside[0][0]}-{outside[-1][1] - 1}")
    return gets


def _range_bytes(rng: str) -> int:
    first, last = rng.removeprefix("bytes=").split("-")
    return int(last) - int(first) + 1


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("present", [False, True], ids=["absent", "present"])
def test_cold_prune_makes_one_head_the_tail_read_and_one_filter_read_per_file(
        s3: Any, lake: dict[str, Any], layout: str, present: bool) -> None:
    groups, ndv = LAYOUTS[layout]
    value = _key(GROUP * groups + 3) if present else ABSENT  # in file 1, row group 0
    paths = [f"{lake['bucket']}/{layout}/part-{f}.parquet" for f in range(FILES)]
    tree = predicate_tree(to_expression([("key", "==", value)]))
    s3.reset()
    results = prune_files(paths, tree, keys=lake["keys"], filesystem=s3.filesystem(), threads=1)
    requests, body = s3.counts()
    assert [r.row_groups for r in results] == [(), (0,) if present else ()]
    expected = {path: _expected_gets(local, list(range(groups)), lake["keys"])
                for path, local in zip(paths, lake[layout])}
    gets: dict[str, list[str | None]] = {}
    for where, rng in s3.gets:
        gets.setdefault(where.lstrip("/"), []).append(rng)
    assert gets == expected
    assert requests == {"HEAD": FILES, "GET": sum(len(g) for g in expected.values())}
    assert (ndv is None) == all(len(g) == 1 for g in expected.values())  # the layouts test what they say
    assert body == sum(_range_bytes(r) for g in expected.values() for r in g)
    assert [r.metadata_requests for r in results] == [len(expected[p]) for p in paths]
    assert [r.metadata_bytes_read for r in results] == [sum(map(_range_bytes, expected[p])) for p in paths]


def test_only_the_filters_of_row_groups_left_by_the_statistics_are_fetched(s3: Any, lake: dict[str, Any]) -> None:
    """rid >= 2 row groups' worth: statistics rule out row groups 0 and 1 of file 0; the one
    filter read holds the filters of row groups 2-4 and nothing else."""
    layout = "5rg-outside"
    path = f"{lake['bucket']}/{layout}/part-0.parquet"
    tree = predicate_tree(to_expression([("rid", ">=", 2 * GROUP), ("key", "==", ABSENT)]))
    s3.reset()
    [result] = prune_files([path], tree, keys=lake["keys"], filesystem=s3.filesystem())
    assert result.pruned_by_statistics == (0, 1) and result.pruned_by_bloom == (2, 3, 4)
    assert [rng for _, rng in s3.gets] == _expected_gets(lake[layout][0], [2, 3, 4], lake["keys"])
    assert s3.counts()[0] == {"HEAD": 1, "GET": 2}


@pytest.mark.parametrize("present", [False, True], ids=["absent", "present"])
def test_scan_of_a_prefix_prunes_with_the_same_requests_per_file(s3: Any, lake: dict[str, Any], present: bool) -> None:
    layout = "5rg-outside"
    value = _key(GROUP * 5 + 3) if present else ABSENT
    pruned = scan(f"{lake['bucket']}/{layout}", filters=[("key", "==", value)], keys=lake["keys"],
                  filesystem=s3.filesystem())
    # tail, filters; a surviving file's footer, opened once more before the scan is handed out so
    # that its keys are in pyarrow's caches (read/scan_keys.py: no KMS call from Arrow's threads,
    # issue 28 item 2), is read from the tail pruning read: no request more for it
    assert [f.metadata_requests for f in pruned.report.files] == [2] * FILES
    assert pruned.to_table()["rid"].to_pylist() == ([GROUP * 5 + 3] if present else [])


@pytest.mark.parametrize("layout", ["1rg-inside", "5rg-inside", "5rg-outside"])
def test_a_surviving_file_is_not_fetched_again_for_the_bytes_pruning_read(s3: Any, lake: dict[str, Any],
                                                                          layout: str) -> None:
    """read_table of a present key: each file gets its HEAD, its tail read and (outside the tail)
    its filter read; the surviving one then only the HEAD of the scan's open (the check that it
    is the version pruned: FileChangedError) and one read of its row group's data, unless the
    tail read holds those too. Its footer, opened again to unwrap the scan's keys and by
    pyarrow's scan, comes from the tail pruning read: no range of any file is asked for twice."""
    groups = LAYOUTS[layout][0]
    value = _key(GROUP * groups + 3)  # file 1, row group 0
    fs = s3.filesystem()
    s3.reset()
    table = read_table(f"{lake['bucket']}/{layout}", filters=[("key", "==", value)], keys=lake["keys"],
                       filesystem=fs)
    assert table["rid"].to_pylist() == [GROUP * groups + 3]
    per_file: dict[str, list[tuple[str, str | None]]] = {}
    for method, where, rng in s3.log:
        if where.split("?")[0].endswith(".parquet"):
            per_file.setdefault(where.lstrip("/"), []).append((method, rng))
    for f, local in enumerate(lake[layout]):
        requests = per_file[f"{lake['bucket']}/{layout}/part-{f}.parquet"]
        pruning = _expected_gets(local, list(range(groups)), lake["keys"])
        gets = [rng for method, rng in requests if method == "GET"]
        heads = sum(1 for method, _ in requests if method == "HEAD")
        assert len(set(gets)) == len(gets), requests  # nothing read twice
        assert gets[:len(pruning)] == pruning
        if f == 0:
            assert (heads, gets) == (1, pruning), requests
        else:  # the survivor: the scan's HEAD, and its data unless the tail read held it
            data = gets[len(pruning):]
            assert heads == 2 and len(data) == (0 if local.stat().st_size <= TAIL_READ_BYTES else 1), requests


def test_survivors_beyond_the_held_tail_bytes_fetch_their_footer_again(s3: Any, lake: dict[str, Any],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A restricted dataset keeps at most HELD_TAIL_BYTES of survivors' tails for its scan; a
    survivor beyond them is scanned as pyarrow scans it (its footer fetched again): same rows."""
    from secure_bloom.parquet.read import restrict

    layout = "5rg-outside"
    value = _key(GROUP * 5 + 3)
    logs = []
    for budget in (restrict.HELD_TAIL_BYTES, 0):
        monkeypatch.setattr(restrict, "HELD_TAIL_BYTES", budget)
        s3.reset()
        table = read_table(f"{lake['bucket']}/{layout}", filters=[("key", "==", value)], keys=lake["keys"],
                           filesystem=s3.filesystem())
        assert table["rid"].to_pylist() == [GROUP * 5 + 3]
        logs.append([rng for method, where, rng in s3.log if method == "GET" and where.endswith("part-1.parquet")])
    held, fetched = logs
    size = lake[layout][1].stat().st_size
    assert fetched[:len(held) - 1] == held[:-1] and len(fetched) > len(held)  # the scan's footer reads on top
    assert f"bytes={size - TAIL_READ_BYTES}-{size - 1}" in fetched[len(held) - 1:]


@pytest.mark.parametrize("present", [False, True], ids=["absent", "present"])
def test_a_lookup_checks_the_prefix_once_and_lists_it_once(s3: Any, lake: dict[str, Any], present: bool) -> None:
    """Beside the files' own requests, read_table of a prefix makes what pyarrow's discovery
    makes: one HEAD of the prefix (an object, or a directory?), the listing a "no such object"
    leads to (max-keys=1), then the one recursive listing of the files. Not a second check of the
    directory, nor a read of the first file's footer for the schema (the pruning reader's tail
    gives it)."""
    layout = "5rg-inside"
    value = _key(GROUP * 5 + 3) if present else ABSENT
    s3.reset()
    rows = read_table(f"{lake['bucket']}/{layout}", filters=[("key", "==", value)], keys=lake["keys"],
                      filesystem=s3.filesystem()).num_rows
    assert rows == present
    other = [(method, where) for method, where, _ in s3.log if not where.split("?")[0].endswith(".parquet")]
    assert [method for method, _ in other] == ["HEAD", "GET", "GET"], other
    assert other[0][1] == f"/{lake['bucket']}/{layout}" and "max-keys=1&" in other[1][1], other
    assert "delimiter" not in other[2][1], other  # recursive
    heads = [where for method, where, _ in s3.log if method == "HEAD" and where.endswith(".parquet")]
    assert len(heads) == FILES + present  # one per file, and the survivor's open for the scan


def test_filters_apart_are_read_one_by_one_and_no_byte_between_them(s3: Any, lake: dict[str, Any]) -> None:
    """Filters on "key" and "rid": a lookup on "key" reads the tail, then each "key" filter
    outside it on its own (the "rid" filters between them are not read: no byte more than
    filter by filter)."""
    path = f"{lake['bucket']}/{INTERLEAVED}/part-0.parquet"
    local = lake[INTERLEAVED][0]
    size = local.stat().st_size
    with ParquetBloomReader(local, lake["keys"]) as reader:
        spans = [(c.bloom_filter_offset, c.bloom_filter_length) for c in reader.chunks(with_sizes=False)
                 if c.column == "key"]
    window = size - TAIL_READ_BYTES
    outside = [(o, n) for o, n in spans if o < window]  # type: ignore[operator]
    assert len(outside) >= 4 and all(a[0] + a[1] < b[0] for a, b in zip(outside, outside[1:]))  # apart
    tree = predicate_tree(to_expression([("key", "==", ABSENT)]))
    s3.reset()
    [result] = prune_files([path], tree, keys=lake["keys"], filesystem=s3.filesystem())
    assert result.pruned_by_bloom == (0, 1, 2, 3, 4)
    assert [rng for _, rng in s3.gets] == [f"bytes={window}-{size - 1}",
                                           *(f"bytes={o}-{o + n - 1}" for o, n in outside)]
    assert s3.counts() == ({"HEAD": 1, "GET": 1 + len(outside)}, TAIL_READ_BYTES + sum(n for _, n in outside))


def test_a_cache_miss_reads_through_the_open_that_told_the_identity(s3: Any, lake: dict[str, Any]) -> None:
    """With a PruneCache the object's identity (ETag...) comes from one open (a HEAD); a miss
    reads the tail and the filters through that same open: no second HEAD. A hit: the HEAD
    alone."""
    from secure_bloom.parquet import PruneCache

    layout = "5rg-outside"
    paths = [f"{lake['bucket']}/{layout}/part-{f}.parquet" for f in range(FILES)]
    tree = predicate_tree(to_expression([("key", "==", ABSENT)]))
    cache = PruneCache()
    s3.reset()
    cold = prune_files(paths, tree, keys=lake["keys"], filesystem=s3.filesystem(), cache=cache)
    assert s3.counts()[0] == {"HEAD": FILES, "GET": 2 * FILES}
    assert [r.from_cache for r in cold] == [False] * FILES and [r.metadata_requests for r in cold] == [2] * FILES
    s3.reset()
    warm = prune_files(paths, tree, keys=lake["keys"], filesystem=s3.filesystem(), cache=cache)
    assert s3.counts() == ({"HEAD": FILES}, 0)
    assert [r.row_groups for r in warm] == [r.row_groups for r in cold] == [()] * FILES


# --------------------------------------------------------------------------- damaged objects


def _put(s3: Any, path: str, data: bytes) -> str:
    with s3.upload_filesystem().open_output_stream(path) as out:
        out.write(data)
    return path


@pytest.mark.parametrize("cut", [1, 4, 8, 100])
def test_a_truncated_object_is_not_parquet_as_on_a_local_disk(s3: Any, lake: dict[str, Any], tmp_path: Path,
                                                              cut: int) -> None:
    data = lake["5rg-outside"][0].read_bytes()[:-cut]
    local = tmp_path / "cut.parquet"
    local.write_bytes(data)
    with pytest.raises(NotParquetError) as on_disk:
        ParquetBloomReader(local, lake["keys"])
    path = _put(s3, f"{lake['bucket']}/damaged/cut-{cut}.parquet", data)
    with pytest.raises(NotParquetError) as remote:
        ParquetBloomReader(path, lake["keys"], filesystem=s3.filesystem())
    assert str(remote.value).split(": ", 1)[1] == str(on_disk.value).split(": ", 1)[1]


def test_a_bad_trailing_magic_is_not_parquet(s3: Any, lake: dict[str, Any]) -> None:
    data = lake["5rg-outside"][0].read_bytes()
    path = _put(s3, f"{lake['bucket']}/damaged/tail-magic.parquet", data[:-4] + b"PARX")
    with pytest.raises(NotParquetError, match="bad trailing magic"):
        ParquetBloomReader(path, lake["keys"], filesystem=s3.filesystem())


def test_the_leading_magic_is_checked_only_where_the_tail_read_holds_it(s3: Any, lake: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    """As Arrow C++ and parquet-java: an object larger than the tail read is not refused for its
    first 4 bytes (reading them would be a request per file); one the tail read holds whole, and
    every local file, still is."""
    large = lake["5rg-outside"][0].read_bytes()
    small = lake["1rg-inside"][0].read_bytes()
    assert len(small) <= TAIL_READ_BYTES < len(large)
    fs = s3.filesystem()
    path = _put(s3, f"{lake['bucket']}/damaged/head-large.parquet", b"PAR1" + large[4:])
    with ParquetBloomReader(path, lake["keys"], filesystem=fs) as reader:
        assert reader.probe("key", [_key(5)]).maybe_row_groups(0) == [0]
    local = tmp_path / "head.parquet"
    local.write_bytes(b"PAR1" + large[4:])
    with pytest.raises(NotParquetError, match="leading magic"):
        ParquetBloomReader(local, lake["keys"])
    path = _put(s3, f"{lake['bucket']}/damaged/head-small.parquet", b"PAR1" + small[4:])
    with pytest.raises(NotParquetError, match="leading magic"):
        ParquetBloomReader(path, lake["keys"], filesystem=fs)
