"""PruneCache: warm lookups answer exactly as cold ones, never from a changed file or other keys.

Every cached answer is compared with the uncached prune of the same files (and read_table with
pyarrow's rows): per file, the row groups kept, pruned by statistics and pruned by Bloom filters.
Files are plaintext and encrypted (footer key kf, the Bloom and statistics columns under kc1/kc2).
"""

from __future__ import annotations

import gc
import os
import random
import re
import time
import weakref
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from secure_bloom.errors import MissingKeyError
from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, PruneCache, attach_bloom_filters
from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
from secure_bloom.parquet.read.prune import FilePrune, prune_files
from secure_bloom.parquet.read.api import parquet_format, read_table, scan
from support.parquet_files import TESTING_KEYS, vector_kms, write_encrypted, write_plain

ROWS = 120
GROUP = 30
COLUMNS = ["key", "n", "dec"]


def _key(i: int) -> str:
    return f"{random.Random(i).getrandbits(64):016x}"


def _table(start: int, rows: int = ROWS) -> pa.Table:
    ids = range(start, start + rows)
    return pa.table({"rid": pa.array(ids, pa.int64()),
                     "key": pa.array([None if i % 13 == 0 else _key(i) for i in ids]),
                     "n": pa.array([None if i % 11 == 0 else i for i in ids], pa.int64()),
                     "dec": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(10, 2))})


def _write(path: Path, table: pa.Table, kind: str, keys: KeyAccess | None, **options: Any) -> Path:
    src = path.with_suffix(".src")
    if kind == "plaintext":
        write_plain(src, table, row_group_size=GROUP, **options)
    else:
        write_encrypted(src, table, column_keys={"kc1": ["key", "dec"], "kc2": ["n"]}, row_group_size=GROUP, **options)
    attach_bloom_filters(src, path, COLUMNS, keys, overwrite=True)
    src.unlink()
    return path


def _files(directory: Path, kind: str, keys: KeyAccess | None, count: int = 3) -> list[str]:
    return [str(_write(directory / f"part-{i}.parquet", _table(i * ROWS), kind, keys)) for i in range(count)]


@pytest.fixture(scope="module", params=["plaintext", "encrypted"])
def files(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], KeyAccess | None]:
    keys = KeyAccess(kms=vector_kms()) if request.param == "encrypted" else None
    return _files(tmp_path_factory.mktemp(f"cache-{request.param}"), request.param, keys), keys


def _outcome(results: list[FilePrune]) -> list[tuple[Any, ...]]:
    return [(r.path, r.num_row_groups, r.row_groups, r.pruned_by_statistics, r.pruned_by_bloom) for r in results]


def _prune(paths: list[str], filters: Any, keys: KeyAccess | None, cache: PruneCache | None = None,
           **options: Any) -> list[FilePrune]:
    return prune_files(paths, predicate_tree(to_expression(filters)), keys=keys, cache=cache, **options)


FILTERS: list[Any] = [
    [("key", "==", _key(5))],
    [("key", "==", "absent")],
    [("key", "in", [_key(3), _key(200), "absent"])],
    [("key", "not in", [_key(3)])],
    [("n", "<", 10)],
    [("n", ">=", 300), ("key", "!=", _key(310))],
    [[("n", "==", 5)], [("key", "==", _key(250))]],
    [("dec", "==", Decimal("1.23"))],
    [("dec", ">", Decimal("2.5")), ("key", "==", _key(301))],
    pc.field("key").is_null(),
    pc.field("n").is_valid() & (pc.field("n") < 3),
    ~pc.field("n").isin([1, 2, 3]),
    ~((pc.field("key") == _key(7)) | (pc.field("n") > 100)),
    (pc.field("key") == _key(7)) | (pc.field("dec") == Decimal("3.00")),
]


@pytest.mark.parametrize("filters", FILTERS, ids=[f"f{i}" for i in range(len(FILTERS))])
def test_cold_and_warm_prunes_equal_the_uncached_prune(files: tuple[list[str], KeyAccess | None],
                                                       filters: Any) -> None:
    paths, keys = files
    expected = _outcome(_prune(paths, filters, keys))
    cache = PruneCache()
    cold = _prune(paths, filters, keys, cache)
    warm = _prune(paths, filters, keys, cache)
    assert _outcome(cold) == expected
    assert _outcome(warm) == expected
    assert [r.from_cache for r in cold] == [False] * len(paths)
    assert [r.from_cache for r in warm] == [True] * len(paths)
    assert all(r.metadata_requests == 0 for r in warm)  # everything it needed was cached: not opened
    assert all(r.file_size == os.stat(p).st_size for r, p in zip(warm, paths))


def test_one_cache_across_predicates_fills_partially_and_stays_exact(files: tuple[list[str], KeyAccess | None]) -> None:
    """Each predicate finds what earlier ones cached and adds what it needs: still exact."""
    paths, keys = files
    cache = PruneCache()
    for filters in [*FILTERS, *reversed(FILTERS)]:
        assert _outcome(_prune(paths, filters, keys, cache)) == _outcome(_prune(paths, filters, keys))


_VALUES = st.one_of(st.sampled_from([_key(i) for i in (0, 5, 77, 150, 299, 359)]), st.just("absent"))
_LEAF = st.one_of(
    st.builds(lambda v: pc.field("key") == v, _VALUES),
    st.builds(lambda vs: pc.field("key").isin(vs), st.lists(_VALUES, min_size=1, max_size=3)),
    st.builds(lambda op, v: getattr(pc.field("n"), op)(v), st.sampled_from(["__lt__", "__ge__", "__eq__", "__ne__"]),
              st.integers(-5, 400)),
    st.builds(lambda v: pc.field("dec") == pa.scalar(Decimal(v) / 100, pa.decimal128(10, 2)), st.integers(0, 400)),
    st.just(pc.field("key").is_null()),
    st.just(pc.field("n").is_null()),
)
_EXPR = st.recursive(_LEAF, lambda inner: st.one_of(
    st.builds(lambda a, b: a & b, inner, inner), st.builds(lambda a, b: a | b, inner, inner),
    st.builds(lambda a: ~a, inner)), max_leaves=5)


@pytest.fixture(scope="module")
def shared_cache() -> PruneCache:
    return PruneCache()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expression=_EXPR)
def test_property_cached_answer_equals_uncached(files: tuple[list[str], KeyAccess | None], shared_cache: PruneCache,
                                                expression: pc.Expression) -> None:
    paths, keys = files
    assert _outcome(_prune(paths, expression, keys, shared_cache)) == _outcome(_prune(paths, expression, keys))


def test_read_table_with_a_cache_returns_pyarrows_rows(files: tuple[list[str], KeyAccess | None]) -> None:
    paths, keys = files
    cache = PruneCache()
    for filters in FILTERS:
        expected = ds.dataset(paths, format=parquet_format(keys)).to_table(filter=to_expression(filters))
        for _ in range(2):
            ours = read_table(paths, filters=filters, keys=keys, cache=cache)
            assert ours.sort_by("rid").equals(expected.sort_by("rid"))


def test_report_counts_hits_and_misses(files: tuple[list[str], KeyAccess | None]) -> None:
    paths, keys = files
    cache = PruneCache()
    cold = scan(paths, filters=[("key", "==", "absent")], keys=keys, cache=cache).report
    warm = scan(paths, filters=[("key", "==", "absent")], keys=keys, cache=cache).report
    assert (cold.cache_hits, cold.cache_misses) == (0, 3)
    assert (warm.cache_hits, warm.cache_misses) == (3, 0)
    assert warm.metadata_bytes_read == 0 and cold.metadata_bytes_read > 0
    assert warm.cache is not None and warm.cache.files == 3 and warm.cache.bytes > 0
    assert warm.to_dict()["cache_hits"] == 3 and warm.to_dict()["cache"]["hits"] == 3
    assert "cache: 3 files hit, 0 missed; holds 3 files" in warm.summary()
    plain = scan(paths, filters=[("key", "==", "absent")], keys=keys).report
    assert plain.cache is None and "cache_hits" not in plain.to_dict() and "cache" not in plain.summary()
    assert [f.from_cache for f in plain.files] == [None] * 3


def test_a_present_key_answered_from_the_cache_still_opens_its_file_for_the_scan(
        files: tuple[list[str], KeyAccess | None]) -> None:
    paths, keys = files
    cache = PruneCache()
    filters = [("key", "==", _key(ROWS + 5))]  # in the second file
    for _ in range(2):
        pruned = scan(paths, filters=filters, keys=keys, cache=cache)
        assert pruned.to_table()["rid"].to_pylist() == [ROWS + 5]
    assert [len(f.row_groups) for f in pruned.report.files] == [0, 1, 0]
    assert pruned.report.cache_hits == 3


@pytest.mark.parametrize("how", ["replace", "in-place", "in-place-same-mtime"])
def test_a_rewritten_file_is_read_again(tmp_path: Path, how: str) -> None:
    keys = KeyAccess(kms=vector_kms())
    path = tmp_path / "data.parquet"
    # same shape, other keys: the same size on disk (asserted), different content
    options = {"compression": "NONE", "use_dictionary": False}
    _write(path, _table(0), "encrypted", keys, **options)
    other = _write(tmp_path / "other.parquet", _table(1000), "encrypted", keys, **options)
    assert other.stat().st_size == path.stat().st_size
    cache = PruneCache()
    old, new = [("key", "==", _key(5))], [("key", "==", _key(1005))]
    assert [len(r.row_groups) for r in _prune([str(path)], old, keys, cache)] == [1]
    assert [len(r.row_groups) for r in _prune([str(path)], new, keys, cache)] == [0]
    before = path.stat()
    time.sleep(0.05)  # lets the clock tick past the cached mtime/ctime on coarse-grained filesystems
    if how == "replace":
        os.replace(other, path)
    else:
        with open(path, "r+b") as f:
            f.write(other.read_bytes())
        if how == "in-place-same-mtime":  # the modification time put back: the change time still differs
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = _prune([str(path)], new, keys, cache)
    assert after[0].from_cache is False
    assert _outcome(after) == _outcome(_prune([str(path)], new, keys))
    assert [len(r.row_groups) for r in after] == [1]
    assert [len(r.row_groups) for r in _prune([str(path)], old, keys, cache)] == [0]


def test_a_missing_column_key_is_not_cached(tmp_path: Path) -> None:
    full = KeyAccess(kms=vector_kms())
    paths = _files(tmp_path, "encrypted", full, count=2)
    partial = KeyAccess(kms=KeyListKms({k: v for k, v in TESTING_KEYS.items() if k != "kc1"}))
    cache = PruneCache()
    absent = [("key", "==", "absent")]
    for _ in range(2):  # without kc1 the key column's filters and statistics are "maybe": kept
        results = _prune(paths, absent, partial, cache)
        assert _outcome(results) == _outcome(_prune(paths, absent, partial))
        assert all(len(r.row_groups) == 4 for r in results)
    assert all(r.from_cache and r.metadata_requests > 0 for r in results)  # opened again to try the key
    assert all(r.row_groups == () for r in _prune(paths, absent, full, cache))


def test_entries_are_scoped_by_key_access(tmp_path: Path) -> None:
    keys = KeyAccess(kms=vector_kms())
    paths = _files(tmp_path, "encrypted", keys, count=2)
    cache = PruneCache()
    _prune(paths, [("key", "==", "absent")], keys, cache)
    with pytest.raises(MissingKeyError, match="footer"):  # as without a cache: no answer from keys not given
        _prune(paths, [("key", "==", "absent")], None, cache)
    other = KeyAccess(kms=vector_kms())
    assert [r.from_cache for r in _prune(paths, [("key", "==", "absent")], other, cache)] == [False, False]


def test_entries_of_a_key_access_that_is_gone_are_dropped(tmp_path: Path) -> None:
    """Scopes are ids, held weakly: once the KeyAccess is collected its entries go, so an object
    that later gets the same id never finds them."""
    paths = _files(tmp_path, "encrypted", KeyAccess(kms=vector_kms()), count=2)
    cache = PruneCache()
    keys, kept = KeyAccess(kms=vector_kms()), KeyAccess(kms=vector_kms())
    _prune(paths, [("key", "==", "absent")], keys, cache)
    _prune(paths[:1], [("key", "==", "absent")], kept, cache)
    assert cache.stats.files == 3
    alive = weakref.ref(keys)
    del keys
    gc.collect()
    assert alive() is None  # the cache does not keep the KeyAccess alive
    assert cache.stats.files == 1
    assert [r.from_cache for r in _prune(paths[:1], [("key", "==", "absent")], kept, cache)] == [True]


def test_eviction_keeps_within_max_bytes_and_answers_stay_exact(files: tuple[list[str], KeyAccess | None]) -> None:
    paths, keys = files
    full = PruneCache()
    _prune(paths, [("key", "==", "absent")], keys, full)
    one_file = full.stats.bytes // 3 + 1
    small = PruneCache(max_bytes=one_file)
    for filters in FILTERS[:4]:
        for _ in range(2):
            assert _outcome(_prune(paths, filters, keys, small)) == _outcome(_prune(paths, filters, keys))
            assert small.stats.bytes <= one_file
    assert small.stats.evictions > 0 and small.stats.files <= 1
    nothing = PruneCache(max_bytes=0)
    assert _outcome(_prune(paths, FILTERS[0], keys, nothing)) == _outcome(_prune(paths, FILTERS[0], keys))
    assert nothing.stats.files == 0 and nothing.stats.bytes == 0


def test_threads_share_one_cache(files: tuple[list[str], KeyAccess | None]) -> None:
    paths, keys = files
    cache = PruneCache()
    many = paths * 6
    for filters in FILTERS[:5]:
        expected = _outcome(_prune(many, filters, keys))
        for _ in range(2):
            assert _outcome(_prune(many, filters, keys, cache, threads=4)) == expected


def test_clear_and_stats(files: tuple[list[str], KeyAccess | None]) -> None:
    paths, keys = files
    cache = PruneCache()
    _prune(paths, FILTERS[0], keys, cache)
    _prune(paths, FILTERS[0], keys, cache)
    assert (cache.stats.hits, cache.stats.misses, cache.stats.files, len(cache)) == (3, 3, 3, 3)
    cache.clear()
    assert cache.stats.to_dict() == {"hits": 0, "misses": 0, "uncacheable": 0, "evictions": 0, "files": 0,
                                     "bytes": 0, "max_bytes": cache.max_bytes}
    assert [r.from_cache for r in _prune(paths, FILTERS[0], keys, cache)] == [False] * 3


def test_get_many_answers_and_counts_as_get_does(files: tuple[list[str], KeyAccess | None]) -> None:
    """get_many (one hold of the lock for a warm lookup's files) answers each file as get does,
    counts alike, drops an entry of another version, and refuses identities not one per path."""
    from secure_bloom.parquet.file.identity import file_identity

    paths, keys = files
    twin, cache = PruneCache(), PruneCache()
    for c in (twin, cache):
        _prune(paths, FILTERS[0], keys, c)
    scope, twin_scope = cache.scope(keys), twin.scope(keys)
    names = [f"local:{p}" for p in paths]
    identities = [file_identity(p) for p in paths]
    stale = (*identities[0][:3], identities[0][3] + 1, *identities[0][4:])  # another version of file 0
    asked = [*identities[:-1], None]
    got = cache.get_many(scope, [*names, names[0]], [*asked, stale])
    assert got == [*[twin.get(twin_scope, n, i) for n, i in zip(names, asked)], twin.get(twin_scope, names[0], stale)]
    assert all(f is not None for f in got[:-2]) and got[-2:] == [None, None]
    assert cache.stats.to_dict() == twin.stats.to_dict()
    assert cache.get_many(scope, names[:1], identities[:1]) == [None]  # the stale ask dropped file 0's entry
    with pytest.raises(ValueError, match="one identity per path"):
        cache.get_many(scope, names, identities[:1])


def test_repr_shows_counts_only(tmp_path: Path) -> None:
    keys = KeyAccess(kms=vector_kms())
    paths = _files(tmp_path, "encrypted", keys, count=1)
    cache = PruneCache()
    _prune(paths, [("key", "==", _key(5)), ("n", ">", 3), ("dec", "<", Decimal("9"))], keys, cache)
    text = repr(cache) + str(cache)
    assert re.fullmatch(r"(PruneCache\(files=1, bytes=\d+, max_bytes=\d+, hits=0, misses=1\)){2}", text)
    facts = [entry for _, entry in cache._entries.values()]  # noqa: SLF001 - the entries' own repr
    assert len(facts) == 1 and facts[0].bounds and facts[0].filters
    assert re.fullmatch(r"FileFacts\(row_groups=4, columns=4, bounds=\d+, filters=\d+\)", repr(facts[0]))


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_bytes must be an int >= 0, got -1"):
        PruneCache(-1)
    with pytest.raises(ValueError, match="max_bytes must be an int >= 0, got True"):
        PruneCache(True)
    with pytest.raises(TypeError, match="cache must be a PruneCache, got dict"):
        prune_files([], predicate_tree(None), cache={})  # type: ignore[arg-type]


def test_a_file_whose_identity_cannot_be_determined_is_not_cached(tmp_path: Path) -> None:
    cache = PruneCache()
    with pytest.raises(FileNotFoundError):
        _prune([str(tmp_path / "missing.parquet")], [("key", "==", "x")], None, cache)
    assert cache.stats.uncacheable == 1 and cache.stats.files == 0


def test_files_judged_together_are_told_what_each_alone_is(tmp_path: Path) -> None:
    """A warm lookup judges the files its cache answers alone together (one evaluation over
    their joined facts, one per column layout): each file gets exactly the uncached answer,
    with files of two layouts, per-file row group choices, a file the cache does not hold and
    one changed since it was cached judged on their own among them."""
    keys = KeyAccess(kms=vector_kms())
    paths = [str(_write(tmp_path / f"a-{i}.parquet", _table(i * ROWS), "encrypted" if i % 2 else "plaintext", keys))
             for i in range(4)]
    other = _table(4 * ROWS).append_column("extra", pa.array([f"x{i}" for i in range(ROWS)]))
    paths.append(str(_write(tmp_path / "b-4.parquet", other, "plaintext", keys)))
    groups: list[list[int] | None] = [None, [1, 3], None, [0, 2, 3], None]
    for filters in FILTERS:
        cache = PruneCache()
        _prune(paths[:-1], filters, keys, cache, row_groups=groups[:-1])  # the last file is not cached
        late = tmp_path / "a-2.parquet"  # changed after it was cached: read again
        os.utime(late, ns=(time.time_ns(), time.time_ns() + 10_000_000_000))
        expected = _outcome(_prune(paths, filters, keys, row_groups=groups))
        warm = _prune(paths, filters, keys, cache, row_groups=groups)
        assert _outcome(warm) == expected, filters
        assert [r.from_cache for r in warm] == [True, True, False, True, False]
        again = _prune(paths, filters, keys, cache, row_groups=groups)
        assert _outcome(again) == expected and all(r.from_cache for r in again)


def test_a_file_prune_is_made_with_every_field_as_declared() -> None:
    """FilePrune's own __init__ (one dict update, not a setattr per field) takes the declared
    fields in their order, with their defaults, sets each one and stays frozen."""
    import dataclasses
    import inspect

    from secure_bloom.parquet.read.outcome import FilePrune

    fields = dataclasses.fields(FilePrune)
    parameters = inspect.signature(FilePrune).parameters
    assert list(parameters) == [f.name for f in fields]
    for f in fields:
        default = parameters[f.name].default
        assert default is (inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default), f.name
    made = FilePrune(*(f"value {i}" for i in range(len(fields))))
    assert [getattr(made, f.name) for f in fields] == [f"value {i}" for i in range(len(fields))]
    assert vars(made).keys() == {f.name for f in fields}
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.path = "other"  # type: ignore[misc]
    assert dataclasses.replace(made, path="other").path == "other"
