"""The fast pruning path (secure_bloom.parquet.read.fast_prune) against the reference path.

Differential: on files of every kind (plaintext; plaintext with pyarrow's own filters; encrypted
footer with per-column keys in GCM and GCM_CTR; signed plaintext footer; explicit key ids; a
withheld AAD prefix; external key material; our write_table; several row groups; columns with
and without filters), every filter gives the same FilePrune (row groups kept and why the others
were dropped, footer/filter bytes read and requests) with ``fast_path=True`` as with
``fast_path=False``, and the fast path really answers those files itself (it does not decline
them). Robustness: truncated and tampered files, a wrong key and missing keys give the same
error (type and message) or the same answer through both paths.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet.encryption as pe
import pytest

from secure_bloom.crypto.gcm import GcmKey, decrypt, encrypt
from secure_bloom.errors import AuthenticationError, SecureBloomError
from secure_bloom.kms import FileKeyWrapper
from secure_bloom.parquet import KeyAccess, attach_bloom_filters, write_table
from secure_bloom.parquet.read.fast_prune import Declined, LookupKeys, close_source, fast_source
from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
from secure_bloom.parquet.read.prune import _judge, prune_files
from support.parquet_files import TESTING_KEYS, vector_kms, write_encrypted, write_plain, write_uniform

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


def _both(paths: list[str], tree: Any, keys: KeyAccess | None) -> tuple[list[Any], list[Any]]:
    fast = prune_files(paths, tree, keys=keys, schema=_table().schema, progress=False)
    reference = prune_files(paths, tree, keys=keys, schema=_table().schema, progress=False, fast_path=False)
    return fast, reference


@pytest.mark.parametrize("kind", KINDS)
def test_fast_path_answers_every_kind_itself_and_as_the_reference(
        files: dict[str, tuple[Path, KeyAccess | None]], kind: str) -> None:
    path, keys = files[kind]
    lookup = LookupKeys(keys or KeyAccess())
    for filters in FILTERS:
        tree = _tree(filters, path, keys)
        source = fast_source(str(path), None, keys or KeyAccess(), lookup)  # never Declined for these files
        try:
            direct = _judge(source, str(path), tree, _table().schema, None, {})
        finally:
            close_source(source)
        fast, reference = _both([str(path)], tree, keys)
        assert fast == reference, (kind, filters)
        ref = reference[0]
        assert (direct.row_groups, direct.pruned_by_statistics, direct.pruned_by_bloom) == \
               (ref.row_groups, ref.pruned_by_statistics, ref.pruned_by_bloom), (kind, filters)
        assert (sum(n for _, n in source.reads), len(source.reads)) == (ref.metadata_bytes_read, ref.metadata_requests)


def test_fast_path_prunes_something_by_bloom_filters(files: dict[str, tuple[Path, KeyAccess | None]]) -> None:
    """A control: the differential test would pass vacuously if nothing were ever pruned."""
    path, keys = files["gcm"]
    fast, _ = _both([str(path)], _tree([("key", "==", _key(10_000))], path, keys), keys)
    assert fast[0].row_groups == () and len(fast[0].pruned_by_bloom) == ROWS // GROUP


def test_many_files_in_one_call_and_threads(files: dict[str, tuple[Path, KeyAccess | None]]) -> None:
    paths = [str(files[k][0]) for k in ("gcm", "gcm-ctr", "signed", "write_table")]
    for filters in FILTERS:
        tree = _tree(filters, Path(paths[0]), KMS)
        fast, reference = _both(paths, tree, KMS)
        assert fast == reference
        assert prune_files(paths, tree, keys=KMS, schema=_table().schema, progress=False, threads=2) == reference


def test_one_key_context_per_data_key_for_the_whole_lookup(tmp_path: Path) -> None:
    """Files sharing an explicit footer key: one GcmKey in the lookup, not one per file or chunk."""
    paths = []
    for i in range(4):
        src, dst = tmp_path / f"s{i}.parquet", tmp_path / f"p{i}.parquet"
        write_uniform(src, _table(i * ROWS), row_group_size=GROUP)
        _attach(src, dst, EXPLICIT)
        paths.append(dst)
    lookup = LookupKeys(EXPLICIT)
    tree = _tree([("key", "==", _key(10_000))], paths[0], EXPLICIT)
    for p in paths:
        source = fast_source(str(p), None, EXPLICIT, lookup)
        try:
            assert _judge(source, str(p), tree, None, None, {}).row_groups == ()
        finally:
            close_source(source)
    assert repr(lookup) == "LookupKeys(keys held=1)"


def _damaged(path: Path, tmp_path: Path, name: str, edit: Any) -> Path:
    data = bytearray(path.read_bytes())
    out = tmp_path / name
    out.write_bytes(bytes(edit(data)))
    return out


def _same_outcome(path: Path, tree: Any, keys: KeyAccess | None) -> None:
    """Both paths give the same FilePrune, or the same error type and message."""
    outcomes = []
    for fast in (True, False):
        try:
            outcomes.append(prune_files([str(path)], tree, keys=keys, schema=_table().schema, progress=False,
                                        fast_path=fast))
        except (SecureBloomError, OSError) as e:
            outcomes.append((type(e), str(e)))
    assert outcomes[0] == outcomes[1]


def _filter_offset(path: Path, keys: KeyAccess | None) -> int:
    from secure_bloom.parquet import ParquetBloomReader

    with ParquetBloomReader(path, keys) as reader:
        location = reader.filter_location(reader.chunk(2, "key"))
        assert location is not None
        return location.offset


@pytest.mark.parametrize("kind", ["plaintext", "gcm", "signed", "explicit"])
def test_truncated_and_tampered_files_fail_alike(files: dict[str, tuple[Path, KeyAccess | None]], kind: str,
                                                 tmp_path: Path) -> None:
    path, keys = files[kind]
    tree = _tree([("key", "==", _key(10_000))], path, keys)
    size = path.stat().st_size
    offset = _filter_offset(path, keys)

    def flip(at: int) -> Any:
        def edit(data: bytearray) -> bytearray:
            data[at] ^= 0x01
            return data
        return edit

    damaged = [
        _damaged(path, tmp_path, "truncated.parquet", lambda d: d[: len(d) // 2]),
        _damaged(path, tmp_path, "no-tail.parquet", lambda d: d[:-3]),
        _damaged(path, tmp_path, "footer-byte.parquet", flip(size - 40)),
        _damaged(path, tmp_path, "length.parquet", flip(size - 6)),
        _damaged(path, tmp_path, "filter-byte.parquet", flip(offset + 30)),
        _damaged(path, tmp_path, "filter-prefix.parquet", flip(offset + 1)),
    ]
    for bad in damaged:
        _same_outcome(bad, tree, keys)
    with pytest.raises((SecureBloomError, OSError)):
        prune_files([str(damaged[0])], tree, keys=keys, progress=False)


@pytest.mark.parametrize("kind", ["gcm", "explicit", "withheld", "external"])
def test_wrong_and_missing_keys_fail_or_answer_alike(files: dict[str, tuple[Path, KeyAccess | None]],
                                                     kind: str) -> None:
    path, _ = files[kind]
    wrong = {k: bytes(reversed(v)) for k, v in TESTING_KEYS.items()}
    for keys in (None, KeyAccess(), KeyAccess(explicit=wrong), KeyAccess(explicit={"kf": TESTING_KEYS["kf"]}),
                 KeyAccess(kms=vector_kms()), KeyAccess(kms=vector_kms(), aad_prefix=b"other")):
        for filters in ([("key", "==", _key(10_000))], [("n", "==", 7)]):
            _same_outcome(path, _tree(filters, path, keys), keys)


def test_a_file_the_fast_path_declines_is_answered_by_the_reference(tmp_path: Path) -> None:
    """A filter without bloom_filter_length (files before parquet-java 1.14) is declined by the
    fast path; prune_files still answers through the reference path."""
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
    tree = _tree([("key", "==", _key(10_000))], dst, None)
    source = fast_source(str(dst), None, KeyAccess(), LookupKeys(KeyAccess()))
    try:
        with pytest.raises(Declined):
            _judge(source, str(dst), tree, None, None, {})
    finally:
        close_source(source)
    fast, reference = _both([str(dst)], tree, None)
    assert fast == reference and fast[0].row_groups == ()


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


def test_a_filter_over_immutable_bitset_bytes_without_a_copy_is_read_only() -> None:
    import numpy as np

    from secure_bloom.filter import SplitBlockBloomFilter

    source = SplitBlockBloomFilter(1024)
    hashes = np.array([1, 2**40 + 7, 2**63 + 5], dtype=np.uint64)
    source.insert_hashes(hashes)
    view = SplitBlockBloomFilter.from_bitset(source.bitset, copy=False)
    assert view == source and view.check_hashes(hashes).all()
    with pytest.raises((TypeError, ValueError)):  # the kernel refuses a read-only bitset
        view.insert_hashes(np.array([99], dtype=np.uint64))
    assert view == source
    mutable = bytearray(source.bitset)
    copied = SplitBlockBloomFilter.from_bitset(mutable, copy=False)  # a bytearray is still copied
    mutable[:] = bytes(len(mutable))
    assert copied == source


def test_on_reader_gets_an_open_reader_for_the_files_with_row_groups_to_read(
        files: dict[str, tuple[Path, KeyAccess | None]]) -> None:
    paths = [str(files[k][0]) for k in ("gcm", "signed", "write_table")]
    present = _key(5)  # rows 0..599 are in the files written at start 0 (gcm, write_table), not signed
    tree = _tree([("key", "==", present)], Path(paths[0]), KMS)
    seen: dict[str, Any] = {}

    def on_reader(path: str, reader: Any, result: Any) -> None:
        seen[path] = (reader.footer.mode, result.row_groups, reader.num_row_groups)

    fast = prune_files(paths, tree, keys=KMS, schema=_table().schema, progress=False, on_reader=on_reader)
    reference = prune_files(paths, tree, keys=KMS, schema=_table().schema, progress=False, fast_path=False)
    assert [f.row_groups for f in fast] == [r.row_groups for r in reference]
    kept = {p for p, f in zip(paths, fast) if f.row_groups}
    assert kept and set(seen) == kept  # only the files with row groups to read, each with its reader open
    for path, f, r in zip(paths, fast, reference):
        if path in kept:
            assert seen[path][1:] == (f.row_groups, f.num_row_groups)
            # the reader's tail (leading magic, length and magic, footer: three reads) again, counted
            assert f.metadata_requests == r.metadata_requests + 3
            assert f.metadata_bytes_read > r.metadata_bytes_read
        else:
            assert (f.metadata_bytes_read, f.metadata_requests) == (r.metadata_bytes_read, r.metadata_requests)


@pytest.mark.parametrize("size", [32, 64, 1024, 32 * 37 + 5])
def test_bitset_probe_answers_as_the_filter_bit_for_bit(size: int) -> None:
    """The fast path probes the decrypted bitset in place: the same answer as
    SplitBlockBloomFilter.check_hash for every hash (tail bytes past the last block ignored)."""
    from secure_bloom.filter import SplitBlockBloomFilter
    from secure_bloom.parquet.read.fast_prune import BitsetProbe

    rng = random.Random(size)
    bitset = bytes(rng.getrandbits(8) | rng.getrandbits(8) for _ in range(size))  # about 3 bits in 4 set
    reference = SplitBlockBloomFilter.from_bitset(bitset)
    probe = BitsetProbe(memoryview(bitset))
    hashes = [rng.getrandbits(64) for _ in range(3000)] + [0, (1 << 64) - 1, 1 << 32, (1 << 32) - 1]
    answers = [probe.check_hash(h) for h in hashes]
    assert answers == [reference.check_hash(h) for h in hashes]
    assert any(answers) and not all(answers)
    for bad in (b"", bytes(31)):
        with pytest.raises(Declined):
            BitsetProbe(bad)


def test_layouts_shared_only_between_equal_schemas() -> None:
    """LookupKeys.leaf_columns: a schema equal field for field to one seen shares its columns; one
    differing in any field (a leaf's logical type, its repetition, a name), one element more, or
    elements of a subclass are built anew."""
    from secure_bloom.thrift_codec import idl

    m = idl()

    def schema(name: str = "key", logical: Any = None, repetition: int = 1, extra: bool = False) -> list[Any]:
        leaves = [m.SchemaElement(name=name, type=6, repetition_type=repetition, logicalType=logical),
                  m.SchemaElement(name="n", type=2, repetition_type=1)]
        if extra:
            leaves.append(m.SchemaElement(name="x", type=2, repetition_type=1))
        return [m.SchemaElement(name="schema", num_children=len(leaves)), *leaves]

    lookup = LookupKeys(KeyAccess())
    first = lookup.leaf_columns(schema(logical=m.LogicalType(STRING=m.StringType())))
    assert lookup.leaf_columns(schema(logical=m.LogicalType(STRING=m.StringType()))) is first
    assert lookup.leaf_columns(schema()) is not first  # no logical type: another layout
    assert lookup.leaf_columns(schema()) != first
    assert lookup.leaf_columns(schema(logical=m.LogicalType(STRING=m.StringType()), repetition=0)) != first
    assert lookup.leaf_columns(schema(name="other", logical=m.LogicalType(STRING=m.StringType())))[0].path == "other"
    assert len(lookup.leaf_columns(schema(logical=m.LogicalType(STRING=m.StringType()), extra=True))) == 3

    class Element(m.SchemaElement):  # type: ignore[misc, name-defined]
        pass

    odd = schema(logical=m.LogicalType(STRING=m.StringType()))
    odd[1] = Element(**odd[1].__dict__)
    assert lookup.leaf_columns(odd) is not first
    assert lookup.leaf_columns(odd) == first  # the same columns, built again


@pytest.mark.parametrize("kind", KINDS)
def test_a_surviving_file_pyarrow_opens_itself_is_not_opened_again(
        files: dict[str, tuple[Path, KeyAccess | None]], kind: str) -> None:
    """``on_reader_unless_shared`` (what a scan asks): a file with row groups to read whose footer
    says pyarrow's one KMS-configured format opens it (plaintext, or key tools material for the
    footer and every column key, the AAD prefix stored) is not opened a second time for a
    reader; one pyarrow cannot open that way (explicit key ids, a withheld prefix) still is. The
    fast path's answer is the reference path's, which reads that file's reader to decide."""
    from secure_bloom.parquet.file.arrow_source import shared_format_opens
    from secure_bloom.parquet.file.reader import ParquetBloomReader

    path, keys = files[kind]
    tree = _tree([("n", ">=", 0)], path, keys)  # every row group survives
    opened: list[str] = []
    fast = prune_files([str(path)], tree, keys=keys, schema=_table().schema, progress=False,
                       on_reader=lambda p, reader, result: opened.append(p), on_reader_unless_shared=True)
    with ParquetBloomReader(path, keys) as reader:
        expected = shared_format_opens(reader)
    assert fast[0].row_groups and fast[0].shared_format_opens is expected
    assert opened == ([] if expected else [str(path)])
    if expected:  # only the fast path's own reads: no second tail read
        reference = prune_files([str(path)], tree, keys=keys, schema=_table().schema, progress=False,
                                fast_path=False)
        assert fast[0].metadata_requests <= reference[0].metadata_requests
    assert expected is (kind not in ("explicit", "withheld"))
