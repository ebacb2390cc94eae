"""The one reader's batches (``ParquetBloomReader.column_metadata_many`` / ``bloom_filters``, what
every lookup reads through) against its one-chunk reads, and pruning through it.

On files of every kind (plaintext; plaintext with pyarrow's own filters; encrypted footer with
per-column keys in GCM and GCM_CTR; signed plaintext footer; explicit key ids; a withheld AAD
prefix; external key material; our write_table; several row groups; columns with and without
filters) the batches give exactly the one-chunk answers; on truncated and tampered files the same
error (type and message); the AES-GCM of a batch (in C where the extension is built) opens
modules exactly as cryptography does one by one; a lookup reads each file once, a surviving file's
tail included.
"""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet.encryption as pe
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from secure_bloom.crypto.gcm import GcmKey, decrypt, encrypt
from secure_bloom.crypto.modules import ModuleType, decrypt_module, decrypt_modules, encrypt_module
from secure_bloom.errors import AuthenticationError, SecureBloomError, TruncatedModuleError
from secure_bloom.kms import FileKeyWrapper
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters, write_table
from secure_bloom.parquet.file.chunk_metadata import ChunkFacts
from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
from secure_bloom.parquet.read.prune import prune_files
from support.parquet_files import TESTING_KEYS, vector_kms, write_encrypted, write_plain, write_uniform
from support.profiles import examples

ROWS = 600
GROUP = 100
PREFIX = b"tenant-9"
DEK = bytes(range(16))


def _key(i: int) -> str:
    return f"{random.Random(i).getrandbits(64):016x}"


def _table(start: int = 0) -> pa.Table:
    ids = list(range(start, start + ROWS))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "key": pa.array([None if i % 29 == 0 else _key(i) for i in ids]),
        "n": pa.array([None if i % 13 == 0 else i * 3 for i in ids], pa.int64()),
        "f": pa.array([float("nan") if i % 17 == 0 else i / 8 for i in ids], pa.float64()),
        "note": pa.array([f"note-{i % 7}" for i in ids]),
    })


KMS = KeyAccess(kms=vector_kms())
EXPLICIT = KeyAccess(explicit=TESTING_KEYS)


def _attach(src: Path, dst: Path, keys: KeyAccess | None, columns: list[str] = ["key", "n", "f"]) -> None:
    attach_bloom_filters(src, dst, columns, keys)
    src.unlink()


def _make(kind: str, directory: Path, start: int) -> tuple[Path, KeyAccess | None]:
    """One file of ``kind`` (its rows start at ``start``) and the keys that read it."""
    src, dst = directory / f"{kind}-src.parquet", directory / f"{kind}.parquet"
    table = _table(start)
    if kind == "plaintext":
        write_plain(src, table, row_group_size=GROUP)
        _attach(src, dst, None)
        return dst, None
    if kind == "pyarrow-filters":
        write_plain(dst, table, row_group_size=GROUP, bloom_filter_options={"key": True, "n": True})
        return dst, None
    if kind in ("gcm", "gcm-ctr", "signed", "external"):
        write_encrypted(src, table, row_group_size=GROUP, column_keys={"kc1": ["key", "f"], "kc2": ["n"]},
                        algorithm="AES_GCM_CTR_V1" if kind == "gcm-ctr" else "AES_GCM_V1",
                        plaintext_footer=kind == "signed", internal_key_material=kind != "external")
        _attach(src, dst, KMS, ["key", "n"])  # f: encrypted, no filter
        if kind == "external":
            assert (directory / f"_KEY_MATERIAL_FOR_{dst.name}.json").exists()
        return dst, KMS
    if kind == "explicit":
        write_uniform(src, table, row_group_size=GROUP)
        _attach(src, dst, EXPLICIT)
        return dst, EXPLICIT
    if kind == "withheld":
        keys = KeyAccess(kms=vector_kms(), aad_prefix=PREFIX)
        material = FileKeyWrapper(vector_kms()).wrap(DEK, "kf", is_footer_key=True)
        write_uniform(src, table, key=DEK, key_metadata=material, aad_prefix=PREFIX, store_aad_prefix=False,
                      row_group_size=GROUP)
        _attach(src, dst, keys)
        return dst, keys
    if kind == "write_table":
        config = pe.EncryptionConfiguration(footer_key="kf", column_keys={"kc1": ["key"], "kc2": ["n"]})
        write_table(table, dst, encryption=config, kms=vector_kms(), row_group_size=GROUP,
                    bloom_filter_options={"key": True, "n": {"fpp": 0.05}})
        return dst, KMS
    raise AssertionError(kind)


KINDS = ["plaintext", "pyarrow-filters", "gcm", "gcm-ctr", "signed", "external", "explicit", "withheld",
         "write_table"]

FILTERS: list[Any] = [
    [("key", "==", _key(5))], [("key", "==", _key(10_000))], [("key", "in", [_key(250), _key(10_001)])],
    [("n", "==", 3 * 420)], [("n", "==", 7)], [("n", "<", 150)], [("n", ">=", 1500)], [("n", "!=", 0)],
    [("f", "==", 12.5)], [("f", "==", float("nan"))], [("note", "==", "note-3")],
    [[("key", "==", _key(10_000))], [("n", "==", 600)]],
    [("key", "==", _key(110)), ("n", "==", 330)], pc.field("key").is_null(),
    pc.field("n").is_valid() & (pc.field("key") == _key(10_002)),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, KeyAccess | None]]:
    out = {}
    for i, kind in enumerate(KINDS):
        directory = tmp_path_factory.mktemp(kind)
        out[kind] = _make(kind, directory, (i % 2) * ROWS)
    return out


def _tree(filters: Any, path: Path, keys: KeyAccess | None) -> Any:
    return predicate_tree(to_expression(filters), _table().schema)


def _tree(filters: Any) -> Any:
    return predicate_tree(to_expression(filters), _table().schema)


def _outcome(call: Any) -> Any:
    try:
        return ("ok", call())
    except (SecureBloomError, OSError) as e:
        return (type(e), str(e))


FACTS = ChunkFacts._fields


def _facts_of(metas: list[Any]) -> list[tuple[Any, ...]]:
    return [tuple(getattr(meta, name) for name in FACTS) for meta in metas]


def _single(path: Path, keys: KeyAccess | None, column: str) -> tuple[Any, Any, Any]:
    """The column's ColumnMetaData, what a lookup reads of them, and the filter bitsets, chunk by
    chunk, from a fresh reader."""
    with ParquetBloomReader(path, keys, filter_cache_bytes=0) as reader:
        rgs = range(reader.num_row_groups)
        metas = _outcome(lambda: [reader.column_metadata(reader.chunk(rg, column)) for rg in rgs])
        filters = _outcome(lambda: [None if (bf := reader.bloom_filter(rg, column)) is None else bf.bitset
                                    for rg in rgs])
    facts = ("ok", _facts_of(metas[1])) if metas[0] == "ok" else metas
    return metas, facts, filters


def _batched(path: Path, keys: KeyAccess | None, column: str) -> tuple[Any, Any, Any]:
    """The same through the batches, from fresh readers: the facts first (then the full
    ColumnMetaData from the plaintexts they kept), and the ColumnMetaData first."""
    with ParquetBloomReader(path, keys, filter_cache_bytes=0) as reader:
        rgs = list(range(reader.num_row_groups))
        facts = _outcome(lambda: _facts_of(reader.column_facts_many(column, rgs)))
        after_facts = _outcome(lambda: reader.column_metadata_many(column, rgs))
        filters = _outcome(lambda: [None if bf is None else bf.bitset for bf in reader.bloom_filters(column, rgs)])
    with ParquetBloomReader(path, keys, filter_cache_bytes=0) as reader:
        metas = _outcome(lambda: reader.column_metadata_many(column, rgs))
        facts_after = _outcome(lambda: _facts_of(reader.column_facts_many(column, rgs)))
    assert after_facts == metas and facts_after == facts, (path.name, column)
    return metas, facts, filters


@pytest.mark.parametrize("kind", KINDS)
def test_batches_answer_as_the_one_chunk_reads(files: dict[str, tuple[Path, KeyAccess | None]], kind: str) -> None:
    path, keys = files[kind]
    for column in ("key", "n", "f", "note"):
        single, batched = _single(path, keys, column), _batched(path, keys, column)
        assert batched == single, (kind, column)
        assert single[0][0] == "ok"  # the control: these files are readable
    with ParquetBloomReader(path, keys) as reader:  # some row groups, in any order, repeated
        assert [bf.bitset for bf in reader.bloom_filters("key", [3, 1, 3]) if bf is not None] == \
               [bf.bitset for bf in (reader.bloom_filter(3, "key"), reader.bloom_filter(1, "key"),
                                     reader.bloom_filter(3, "key")) if bf is not None]


@pytest.mark.parametrize("kind", ["gcm", "gcm-ctr", "external"])
def test_filters_asked_first_open_their_metadata_together(files: dict[str, tuple[Path, KeyAccess | None]],
                                                          kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """bloom_filters on a fresh reader: where each filter lies is in its chunk's encrypted
    ColumnMetaData, opened together (one native call per key), never one module at a time."""
    import secure_bloom.parquet.file.crypto_context as crypto_context

    path, keys = files[kind]
    with ParquetBloomReader(path, keys, filter_cache_bytes=0) as reader:
        rgs = list(range(reader.num_row_groups))
        expected = [None if bf is None else bf.bitset for bf in
                    (reader.bloom_filter(rg, "key") for rg in rgs)]
    one_by_one: list[ModuleType] = []
    real = crypto_context.decrypt_module

    def counting(*args: Any, **kwargs: Any) -> Any:
        one_by_one.append(kwargs["module_type"])
        return real(*args, **kwargs)

    monkeypatch.setattr(crypto_context, "decrypt_module", counting)
    with ParquetBloomReader(path, keys, filter_cache_bytes=0) as reader:
        assert reader.chunk(0, "key").encrypted_metadata is not None  # the control: encrypted metadata
        got = [None if bf is None else bf.bitset for bf in reader.bloom_filters("key", rgs)]
        assert ModuleType.COLUMN_META_DATA not in one_by_one
        reader.column_metadata(reader.chunk(0, "n"))  # the control: the counter sees the one-by-one path
        assert ModuleType.COLUMN_META_DATA in one_by_one
    assert got == expected and any(b is not None for b in got)


def test_pruning_through_the_reader_prunes_by_bloom_filters(files: dict[str, tuple[Path, KeyAccess | None]]) -> None:
    """A control: the differential tests against pyarrow would pass vacuously if nothing were pruned."""
    path, keys = files["gcm"]
    result = prune_files([str(path)], _tree([("key", "==", _key(10_000))]), keys=keys, schema=_table().schema,
                         progress=False)[0]
    assert result.row_groups == () and len(result.pruned_by_bloom) == ROWS // GROUP


def test_many_files_in_one_call_and_threads(files: dict[str, tuple[Path, KeyAccess | None]]) -> None:
    paths = [str(files[k][0]) for k in ("gcm", "gcm-ctr", "signed", "write_table")]
    for filters in FILTERS:
        tree = _tree(filters)
        one = prune_files(paths, tree, keys=KMS, schema=_table().schema, progress=False)
        assert prune_files(paths, tree, keys=KMS, schema=_table().schema, progress=False, threads=2) == one
        alone = [prune_files([p], tree, keys=KMS, schema=_table().schema, progress=False)[0] for p in paths]
        assert alone == one


def _damaged(path: Path, tmp_path: Path, name: str, edit: Any) -> Path:
    data = bytearray(path.read_bytes())
    out = tmp_path / name
    out.write_bytes(bytes(edit(data)))
    return out


def _filter_offset(path: Path, keys: KeyAccess | None) -> int:
    with ParquetBloomReader(path, keys) as reader:
        location = reader.filter_location(reader.chunk(2, "key"))
        assert location is not None
        return location.offset


def _flip(at: int) -> Any:
    def edit(data: bytearray) -> bytearray:
        data[at] ^= 0x01
        return data
    return edit


@pytest.mark.parametrize("kind", ["plaintext", "gcm", "signed", "explicit"])
def test_tampered_filters_fail_alike_in_batches(files: dict[str, tuple[Path, KeyAccess | None]], kind: str,
                                                tmp_path: Path) -> None:
    path, keys = files[kind]
    offset = _filter_offset(path, keys)
    for name, at in (("filter-byte", offset + 30), ("filter-prefix", offset + 1), ("filter-last", offset + 60)):
        bad = _damaged(path, tmp_path, f"{name}.parquet", _flip(at))
        single, batched = _single(bad, keys, "key"), _batched(bad, keys, "key")
        assert batched == single, name
        assert single[2][0] != "ok" or kind == "plaintext", name  # an error (or a plaintext bit flip)
        tree = _tree([("key", "==", _key(10_000))])
        if single[2][0] != "ok":
            with pytest.raises(SecureBloomError):
                prune_files([str(bad)], tree, keys=keys, schema=_table().schema, progress=False)


@pytest.mark.parametrize("kind", ["gcm", "gcm-ctr", "external"])
def test_damaged_column_metadata_is_named_alike_by_the_facts(files: dict[str, tuple[Path, KeyAccess | None]],
                                                             kind: str) -> None:
    """An encrypted ColumnMetaData module with a byte flipped, cut short or re-encrypted around
    Thrift that is not a ColumnMetaData (or is one followed by bytes that are not padding): the
    facts batch raises what the one-chunk read raises for it, naming the chunk."""
    path, keys = files[kind]
    with ParquetBloomReader(path, keys) as reader:
        good = reader.chunks_of("key", [0, 1, 2])
        module = good[2].encrypted_metadata
        assert module is not None
        context = reader.chunk_keys.crypto_context(good[2])
        aad = context.aad(ModuleType.COLUMN_META_DATA)
        plain, _ = decrypt_module(module, context.key, aad, module_type=ModuleType.COLUMN_META_DATA)
        flipped = bytearray(module)
        flipped[-3] ^= 0x01
        edits = {"flipped": bytes(flipped), "cut": module[:-5],
                 "required field missing": encrypt_module(b"\x00", context.key, aad),
                 "cut Thrift": encrypt_module(plain[:-4], context.key, aad),
                 "not padding": encrypt_module(plain + b"\x00\x07", context.key, aad),
                 "padding": encrypt_module(plain + b"\x00\x00", context.key, aad)}
    for name, bad in edits.items():
        outcomes = []
        for read in ("one", "facts", "full"):
            with ParquetBloomReader(path, keys) as reader:
                chunks = reader.chunks_of("key", [0, 1, 2])
                chunks[2] = dataclasses.replace(chunks[2], encrypted_metadata=bad)
                metadata = reader.chunk_metadata
                outcomes.append(_outcome(lambda: _facts_of(
                    [metadata.of(chunk)[0] for chunk in chunks] if read == "one"
                    else metadata.facts_many(chunks) if read == "facts" else metadata.many(chunks))))
        assert outcomes[1] == outcomes[0] == outcomes[2], name
        if name == "padding":
            assert outcomes[0][0] == "ok"
        else:
            assert outcomes[0][0] != "ok" and "row group 2, column 'key'" in outcomes[0][1], (name, outcomes[0])
        if name == "cut":
            assert outcomes[0][0] is TruncatedModuleError


@pytest.mark.parametrize("kind", ["plaintext", "gcm", "signed", "explicit"])
def test_truncated_and_damaged_footers_raise(files: dict[str, tuple[Path, KeyAccess | None]], kind: str,
                                             tmp_path: Path) -> None:
    path, keys = files[kind]
    size = path.stat().st_size
    tree = _tree([("key", "==", _key(10_000))])
    for name, edit in (("truncated", lambda d: d[: len(d) // 2]), ("no-tail", lambda d: d[:-3]),
                       ("footer-byte", _flip(size - 40)), ("length", _flip(size - 6))):
        bad = _damaged(path, tmp_path, f"{name}.parquet", edit)
        pruned = _outcome(lambda: prune_files([str(bad)], tree, keys=keys, schema=_table().schema, progress=False))
        opened = _outcome(lambda: ParquetBloomReader(bad, keys).close())
        if opened[0] != "ok":  # the lookup names the error the reader names
            assert pruned == opened, name
        else:
            assert pruned[0] == "ok" or issubclass(pruned[0], SecureBloomError), name


@pytest.mark.parametrize("kind", ["gcm", "explicit", "withheld", "external"])
def test_wrong_and_missing_keys_raise_or_keep(files: dict[str, tuple[Path, KeyAccess | None]], kind: str) -> None:
    """A wrong key is an error; a missing column key keeps its row groups (never "absent")."""
    path, _ = files[kind]
    wrong = {k: bytes(reversed(v)) for k, v in TESTING_KEYS.items()}
    for keys in (None, KeyAccess(), KeyAccess(explicit=wrong), KeyAccess(explicit={"kf": TESTING_KEYS["kf"]}),
                 KeyAccess(kms=vector_kms()), KeyAccess(kms=vector_kms(), aad_prefix=b"other")):
        for filters in ([("key", "==", _key(10_000))], [("n", "==", 7)]):
            got = _outcome(lambda: prune_files([str(path)], _tree(filters), keys=keys, schema=_table().schema,
                                               progress=False))
            if got[0] == "ok":
                with ParquetBloomReader(path, keys) as reader:  # every row group whose key is missing is kept
                    for rg in range(reader.num_row_groups):
                        column = filters[0][0]
                        if not reader.key_available(reader.chunk(rg, column)):
                            assert rg in got[1][0].row_groups, (kind, keys, filters, rg)


def test_a_filter_without_bloom_filter_length_is_read_header_first(tmp_path: Path) -> None:
    """Files before parquet-java 1.14 store no bloom_filter_length: the same reader reads such a
    filter header first, then its bitset, and the lookup prunes with it."""
    from secure_bloom import thrift_codec

    src = tmp_path / "src.parquet"
    write_plain(src, _table(), row_group_size=GROUP)
    dst = tmp_path / "old.parquet"
    _attach(src, dst, None)
    data = dst.read_bytes()
    length = int.from_bytes(data[-8:-4], "little")
    md, _ = thrift_codec.parse(thrift_codec.idl().FileMetaData, data[-8 - length:-8])
    for rg in md.row_groups:
        for cc in rg.columns:
            if cc.meta_data.bloom_filter_offset is not None:
                cc.meta_data.bloom_filter_length = None
    footer = thrift_codec.serialize(md)
    dst.write_bytes(data[:-8 - length] + footer + len(footer).to_bytes(4, "little") + b"PAR1")
    assert _batched(dst, None, "key") == _single(dst, None, "key")
    result = prune_files([str(dst)], _tree([("key", "==", _key(10_000))]), progress=False)[0]
    assert result.row_groups == () and len(result.pruned_by_bloom) == ROWS // GROUP


_MODULE_TYPES = [ModuleType.COLUMN_META_DATA, ModuleType.BLOOM_FILTER_HEADER, ModuleType.BLOOM_FILTER_BITSET]


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=6), st.sampled_from([16, 24, 32]),
       st.sampled_from(_MODULE_TYPES), st.data())
def test_batched_aes_gcm_opens_modules_as_cryptography_does_one_by_one(
        plains: list[bytes], key_length: int, module_type: ModuleType, data: st.DataObject) -> None:
    """decrypt_modules (OpenSSL in one call where the extension is built) against
    decrypt_module (cryptography, one by one): the same plaintexts, and for a tampered module,
    a wrong AAD or a wrong key, the same error."""
    key = os.urandom(key_length)
    aads = [f"aad-{i}".encode() for i in range(len(plains))]
    modules = [encrypt_module(p, key, a) for p, a in zip(plains, aads)]
    gcm = GcmKey(key)
    assert decrypt_modules(modules, gcm, aads, module_type=module_type, max_plaintext=300) == plains
    damage = data.draw(st.sampled_from(["byte", "aad", "key", "length", "tail"]))
    at = data.draw(st.integers(0, len(modules) - 1))
    bad, bad_aads, bad_key = list(modules), list(aads), gcm
    if damage == "byte":
        body = bytearray(bad[at])
        body[data.draw(st.integers(4, len(body) - 1))] ^= 0x80
        bad[at] = bytes(body)
    elif damage == "aad":
        bad_aads[at] = b"other"
    elif damage == "key":
        bad_key = GcmKey(bytes(reversed(key)))
    elif damage == "length":
        bad[at] = bad[at][:-1]
    else:
        bad[at] = bad[at] + b"\0"

    def one_by_one() -> Any:
        for m, a in zip(bad, bad_aads):
            plain, used = decrypt_module(m, bad_key, a, module_type=module_type, max_plaintext=300)
            if used != len(m):
                raise AssertionError("trailing bytes")
        return None

    batched = _outcome(lambda: decrypt_modules(bad, bad_key, bad_aads, module_type=module_type, max_plaintext=300))
    assert batched[0] != "ok"
    if damage != "tail":  # the one-by-one call reads one module and leaves what follows to its caller
        assert batched == _outcome(one_by_one)


def test_gcm_key_is_reused_and_never_shown() -> None:
    key = bytes(range(16))
    sealed = encrypt(key, b"module", b"aad")
    context = GcmKey(key)
    assert decrypt(context, sealed, b"aad", error=lambda: AuthenticationError("x")) == b"module"
    assert decrypt(context, sealed, b"aad", error=lambda: AuthenticationError("x")) == b"module"
    with pytest.raises(AuthenticationError, match="named"):
        decrypt(context, sealed, b"other", error=lambda: AuthenticationError("named"))
    assert repr(context) == "GcmKey(<16 bytes>)" and key.hex() not in repr(context)
    with pytest.raises(ValueError):
        GcmKey(b"short")


def test_a_lookup_reads_each_file_once(files: dict[str, tuple[Path, KeyAccess | None]]) -> None:
    """A surviving file's reader is the one its pruning read: on_reader gets it open, and its
    tail is read once (leading magic, length and magic, footer), then its filters."""
    paths = [str(files[k][0]) for k in ("gcm", "gcm-ctr", "signed", "write_table")]
    tree = _tree([("key", "==", _key(5))])  # rows 0..599: in gcm, signed and write_table, not in gcm-ctr
    seen: dict[str, Any] = {}

    def on_reader(path: str, reader: Any, result: Any) -> None:
        seen[path] = (result.row_groups, reader.read_ranges)

    results = prune_files(paths, tree, keys=KMS, schema=_table().schema, progress=False, on_reader=on_reader)
    kept = {p for p, f in zip(paths, results) if f.row_groups}
    assert kept == {paths[0], paths[2], paths[3]} and set(seen) == set(paths)
    for path, result in zip(paths, results):
        rows, ranges = seen[path]
        assert rows == result.row_groups
        assert len(ranges) == len(set(ranges)) and (result.metadata_bytes_read, result.metadata_requests) == \
               (sum(n for _, n in ranges), len(ranges))
        assert sum(1 for offset, _ in ranges if offset == 0) == 1  # the leading magic: one tail read


@pytest.mark.parametrize("kind", KINDS)
def test_a_surviving_file_pyarrow_opens_itself_is_not_handed_over(
        files: dict[str, tuple[Path, KeyAccess | None]], kind: str) -> None:
    """``on_reader_unless_shared`` (what a scan asks) skips the files pyarrow's one KMS-configured
    format opens, when answered from a cache (a cold lookup has the reader open anyway)."""
    from secure_bloom.parquet import PruneCache
    from secure_bloom.parquet.file.arrow_source import shared_format_opens

    path, keys = files[kind]
    tree = _tree([("n", ">=", 0)])  # every row group survives
    cache = PruneCache()
    opened: list[str] = []
    for _ in range(2):
        got = prune_files([str(path)], tree, keys=keys, schema=_table().schema, progress=False, cache=cache,
                          on_reader=lambda p, reader, result: opened.append(p), on_reader_unless_shared=True)
    with ParquetBloomReader(path, keys) as reader:
        expected = shared_format_opens(reader)
    assert got[0].row_groups and got[0].from_cache
    assert got[0].shared_format_opens is expected
    assert opened == ([str(path)] if expected else [str(path), str(path)])
    assert expected is (kind not in ("explicit", "withheld"))


def test_local_reads_are_positional_and_recorded(files: dict[str, tuple[Path, KeyAccess | None]],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A local file's reader reads with os.pread (one system call per range, the file object's
    position untouched); every range is still recorded; a stream the caller opened is read with
    seek + read (it may be no regular file)."""
    path, keys = files["gcm"]
    preads: list[tuple[int, int]] = []
    real = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        preads.append((offset, n))
        return real(fd, n, offset)

    monkeypatch.setattr(os, "pread", counting)
    with ParquetBloomReader(path, keys) as reader:
        key = reader.column("key").ordinal
        position = reader.file.tell()
        reader.bloom_filters(key, range(reader.num_row_groups))
        assert preads == list(reader.read_ranges) and len(preads) >= 4  # magic, length, footer, filters
        assert reader.file.tell() == position
    preads.clear()
    with open(path, "rb") as stream, ParquetBloomReader(stream, keys) as reader:
        reader.bloom_filters(reader.column("key").ordinal, range(reader.num_row_groups))
        assert preads == [] and reader.read_ranges


def test_chunks_are_made_when_first_asked_for(files: dict[str, tuple[Path, KeyAccess | None]]) -> None:
    """The open checks the row groups' widths only; a chunk is made (and its crypto metadata
    checked) on first use, once: the same object every time, whichever call asks."""
    path, keys = files["gcm"]
    with ParquetBloomReader(path, keys) as reader:
        key = reader.column("key").ordinal
        first = reader.chunk(0, key)
        assert reader.chunk(0, key) is first and reader.column_chunks(key)[0] is first
        assert len(reader.column_chunks()) == reader.num_row_groups * len(reader.leaves)
        assert reader.column_chunks()[key] is first
