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
import pytest

from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters
from secure_bloom.parquet.read.api import parquet_format, read_table, scan
from secure_bloom.parquet.file.tail import TAIL_READ_BYTES
from support.parquet_files import vector_kms, write_encrypted
from support.cli_json import cli_result

pytestmark = pytest.mark.s3
pytest_plugins = ["pytester"]

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


def test_cold_prune_on_s3_reads_filters_from_the_tail_read(s3: Any, stored: dict[str, Any],
                                                           tmp_path: Path) -> None:
    """Filters written just before the footer lie inside the tail's one speculative read: a cold
    prune then asks for each file's size and identity (HEAD) and its tail, and nothing else (no
    leading magic, no request per filter), with the answer of a local prune."""
    from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
    from secure_bloom.parquet.read.prune import prune_files

    tree = predicate_tree(to_expression([("key", "in", ["8000000000000000x", _key(7)])]))
    s3.reset()
    remote = prune_files(stored["paths"], tree, keys=stored["keys"], filesystem=s3.filesystem())
    requests, body = s3.counts()
    assert [r.row_groups for r in remote] == [(0,), ()]
    assert [r.pruned_by_bloom for r in remote] == [(1, 2, 3, 4), (0, 1, 2, 3, 4)]
    assert requests == {"HEAD": 2, "GET": 2}  # per file: size and identity, tail
    assert all(r.metadata_requests == 1 and r.metadata_bytes_read == TAIL_READ_BYTES for r in remote)
    assert body == sum(r.metadata_bytes_read for r in remote)


def test_warm_prune_on_s3_makes_only_the_identity_requests(s3: Any, stored: dict[str, Any]) -> None:
    """With a PruneCache, a warm prune asks the store for each file's size and mtime (one HEAD)
    and reads nothing; a filesystem made again with the same options finds the same entries."""
    from secure_bloom.parquet import PruneCache
    from secure_bloom.parquet.read.predicate import predicate_tree, to_expression
    from secure_bloom.parquet.read.prune import prune_files

    tree = predicate_tree(to_expression([("key", "==", "8000000000000000x")]))
    cache = PruneCache()
    s3.reset()
    cold = prune_files(stored["paths"], tree, keys=stored["keys"], filesystem=s3.filesystem(), cache=cache)
    cold_requests, cold_bytes = s3.counts()
    s3.reset()
    warm = prune_files(stored["paths"], tree, keys=stored["keys"], filesystem=s3.filesystem(), cache=cache)
    requests, body = s3.counts()
    assert [r.row_groups for r in warm] == [r.row_groups for r in cold] == [(), ()]
    assert [r.from_cache for r in cold] == [False, False] and [r.from_cache for r in warm] == [True, True]
    assert requests == {"HEAD": 2} and body == 0
    assert cold_requests == {"HEAD": 2, "GET": 2} and cold_bytes > 0  # per file: one open (identity), tail
    print(f"S3 absent-key prune of 2 files: cold {cold_requests} {cold_bytes} bytes, warm {requests} {body} bytes")


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


# --------------------------------------------------------------------------- audit, inspect, discovery

SENSITIVE = ["key", "ssn"]
LARGE = 64 << 10  # an object this size or larger must never be fetched whole


@pytest.fixture(scope="module")
def mixed(s3: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A local directory of mixed files, uploaded as it is to ``lake-mixed/mixed/``:

    big/part-0.parquet   large, compliant, external key material (its sidecar beside it)
    leak.parquet.encrypted   ssn has a plaintext filter (the leaky writer)
    sub/orphan.parquet   ssn's filters replaced, the plaintext ones left unreferenced
    000000_0             compliant, no Parquet name: found by content
    notes.txt, sub/empty.bin   not Parquet (skipped, listed);  _SUCCESS   quietly skipped
    """
    from support import leaky_writer as lw

    tmp = tmp_path_factory.mktemp("mixed-src")
    root = tmp_path_factory.mktemp("mixed") / "mixed"
    (root / "big").mkdir(parents=True)
    (root / "sub").mkdir()
    keys = KeyAccess(kms=vector_kms())
    table = pa.table({"rid": pa.array(range(ROWS), pa.int64()), "key": [_key(i) for i in range(ROWS)],
                      "payload": [random.Random(-i).randbytes(48).hex() for i in range(ROWS)]})
    write_encrypted(tmp / "big.parquet", table, column_keys={"kc1": ["key"]}, row_group_size=GROUP,
                    internal_key_material=False)
    attach_bloom_filters(tmp / "big.parquet", root / "big" / "part-0.parquet", ["key"], keys)
    assert (root / "big" / "_KEY_MATERIAL_FOR_part-0.parquet.json").exists()
    lw.write_pyarrow_encrypted(tmp / "plain.parquet")
    values = lw.table_values()
    lw.inject_filters(tmp / "plain.parquet", root / "leak.parquet.encrypted", {"ssn": "plaintext"}, keys,
                      values=values)
    lw.inject_filters(root / "leak.parquet.encrypted", root / "sub" / "orphan.parquet", {"ssn": "column_key"}, keys,
                      values=values)
    lw.inject_filters(tmp / "plain.parquet", root / "000000_0", {"ssn": "column_key"}, keys, values=values)
    (root / "notes.txt").write_text("not a Parquet file\n" * 10)
    (root / "_SUCCESS").write_bytes(b"")
    (root / "sub" / "empty.bin").write_bytes(b"")
    bucket = s3.bucket("lake-mixed")
    sizes = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = _upload(s3, path, bucket, f"mixed/{path.relative_to(root).as_posix()}")
        sizes[f"/{name}"] = path.stat().st_size
    return {"root": root, "keys": keys, "bucket": bucket, "prefix": f"{bucket}/mixed", "sizes": sizes}


def _shape(report: Any, root: str) -> dict[str, Any]:
    """A report with the files named relative to ``root``: what must not depend on the storage
    (bytes read do: an object store reads a file's tail speculatively, see _bytes_read_match)."""
    def rel(name: str) -> str:
        assert name.startswith(root), name
        return name[len(root):].lstrip("/")

    files = [(rel(f.file), f.status.value, f.error_kind, f.row_groups,
              [(c.column, c.status.value, c.filters_checked, list(c.unchecked)) for c in f.columns],
              sorted((x.code.value, x.leaf, x.row_groups, x.message) for x in f.findings)) for f in report.files]
    return {"exit_code": report.exit_code, "unknown": report.unknown_columns, "files": files,
            "skipped": [(rel(p), reason) for p, reason in report.skipped]}


def _bytes_read_match(remote: list[int], local: list[int]) -> None:
    """On the store a file's tail is one speculative read of up to TAIL_READ_BYTES (a small file
    whole), which also answers the reads inside it (filters just before the footer); the rest of
    what is read is the same as on a local disk."""
    assert len(remote) == len(local)
    for r, loc in zip(remote, local):
        assert min(loc, TAIL_READ_BYTES) <= r <= loc + TAIL_READ_BYTES, (r, loc)


def test_audit_of_an_s3_prefix_matches_the_local_audit_of_the_same_files(s3: Any, mixed: dict[str, Any]) -> None:
    from secure_bloom.parquet.audit.auditor import audit

    local = audit(str(mixed["root"]), SENSITIVE, keys=mixed["keys"])
    by_uri = audit(s3.uri(mixed["prefix"]), SENSITIVE, keys=mixed["keys"])
    by_fs = audit(mixed["prefix"], SENSITIVE, keys=mixed["keys"], filesystem=s3.filesystem())
    expected = _shape(local, str(mixed["root"]))
    assert _shape(by_uri, f"s3://{mixed['prefix']}") == expected
    assert _shape(by_fs, f"s3://{mixed['prefix']}") == expected
    _bytes_read_match([f.bytes_read for f in by_uri.files], [f.bytes_read for f in local.files])
    # and what that is: the sidecar was read from the store (big's filters checked under kc1)
    assert [(f, status) for f, status, *_ in expected["files"]] == [
        ("000000_0", "pass"), ("leak.parquet.encrypted", "violation"), ("big/part-0.parquet", "pass"),
        ("sub/orphan.parquet", "violation")]
    assert expected["files"][2][4][0] == ("key", "pass", 10, [])
    assert {code for *_, findings in expected["files"] for code, *_ in findings} >= {
        "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN", "ORPHANED_PLAINTEXT_FILTER"}
    assert expected["skipped"] == [("notes.txt", "not Parquet (no PAR1/PARE magic)"),
                                   ("sub/empty.bin", "not Parquet (no PAR1/PARE magic)")]
    assert expected["exit_code"] == 1
    from support.s3_server import SECRET_KEY

    assert SECRET_KEY not in by_uri.to_json()  # the URI's credentials are never shown


def test_audit_on_s3_reads_by_range_only_and_a_small_fraction_of_the_bytes(s3: Any, mixed: dict[str, Any]) -> None:
    from secure_bloom.parquet.audit.auditor import audit

    s3.reset()
    report = audit(mixed["prefix"], SENSITIVE, keys=mixed["keys"], filesystem=s3.filesystem())
    requests, body = s3.counts()
    gets = s3.gets
    sizes = mixed["sizes"]
    assert set(requests) <= {"GET", "HEAD"}
    objects = [(path, rng) for path, rng in gets if "list-type=" not in path]
    assert objects and all(rng is not None and rng.startswith("bytes=") for _, rng in objects)  # no whole GET
    for path, rng in objects:
        first, last = (int(x) for x in rng.removeprefix("bytes=").split("-"))
        if sizes[path] >= LARGE:
            assert last - first + 1 < sizes[path] // 10, (path, rng)  # never a large object fetched whole
    total = sum(sizes.values())
    listing = sum(1 for path, _ in gets if "list-type=" in path)
    print(f"S3 audit: {len(objects)} range GETs, {listing} listings, {requests.get('HEAD', 0)} HEADs, "
          f"{body} of {total} bytes ({body / total:.2%})")
    assert body < total // 10
    assert sum(f.bytes_read for f in report.files) <= body  # the audit's own reads, the rest is discovery


def test_cli_audit_and_inspect_of_an_s3_prefix(s3: Any, mixed: dict[str, Any],
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:

    from secure_bloom.cli import main
    from support.parquet_files import TESTING_KEY_LIST
    from support.s3_server import SECRET_KEY

    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST", TESTING_KEY_LIST)
    local_rc = main(["audit", str(mixed["root"]), "--sensitive", ",".join(SENSITIVE), "--json"])
    local = cli_result(capsys.readouterr().out, "audit")
    rc = main(["audit", s3.uri(mixed["prefix"]), "--sensitive", ",".join(SENSITIVE), "--json"])
    captured = capsys.readouterr()
    remote = cli_result(captured.out, "audit")
    assert rc == local_rc == 1
    _bytes_read_match([f["bytes_read"] for f in remote["files"]], [f["bytes_read"] for f in local["files"]])
    assert {**remote["summary"], "bytes_read": None} == {**local["summary"], "bytes_read": None}
    assert [f["file"].removeprefix(f"s3://{mixed['prefix']}/") for f in remote["files"]] == \
        [f["file"].removeprefix(f"{mixed['root']}/") for f in local["files"]]
    assert SECRET_KEY not in captured.out + captured.err

    rc = main(["inspect", s3.uri(mixed["prefix"]), "--json"])
    captured = capsys.readouterr()
    assert rc == 0
    described = cli_result(captured.out, "inspect")
    assert sorted(d["file"] for d in described) == sorted(
        f"s3://{mixed['prefix']}/{name}" for name in ("000000_0", "leak.parquet.encrypted", "big/part-0.parquet",
                                                      "sub/orphan.parquet"))
    assert SECRET_KEY not in captured.out + captured.err


def test_sidecar_on_s3_opens_external_key_material_and_a_missing_one_is_named(
        s3: Any, mixed: dict[str, Any]) -> None:
    from secure_bloom.errors import MissingKeyError

    path = f"{mixed['prefix']}/big/part-0.parquet"
    s3.reset()
    with ParquetBloomReader(path, mixed["keys"], filesystem=s3.filesystem()) as reader:
        assert reader.row_groups_maybe_containing("key", _key(4_321)) == [2]
        assert reader.column("key").key_id == "kc1"  # the master key id, from the sidecar on the store
    assert any(p.endswith("/_KEY_MATERIAL_FOR_part-0.parquet.json") for p, _ in s3.gets)
    lone = _upload(s3, mixed["root"] / "big" / "part-0.parquet", mixed["bucket"], "lone/part-0.parquet")
    with pytest.raises(MissingKeyError,
                       match=r"footer key 'external:footerKey' not available \(external key material file s3://lake-mixed/lone/_KEY_MATERIAL_FOR_part-0\.parquet"
                             r"\.json does not exist"):
        ParquetBloomReader(lone, mixed["keys"], filesystem=s3.filesystem())


def test_pytest_plugin_expands_an_s3_prefix(s3: Any, mixed: dict[str, Any], pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from support.parquet_files import TESTING_KEY_LIST
    from support.s3_server import SECRET_KEY

    monkeypatch.setenv("SECURE_BLOOM_KEY_LIST", TESTING_KEY_LIST)
    result = pytester.runpytest("-p", "secure_bloom.pytest_plugin", "--secure-bloom-audit", s3.uri(mixed["prefix"]),
                                "--secure-bloom-sensitive", "key,ssn", "-v")
    prefix = f"s3://{mixed['prefix']}"
    result.stdout.fnmatch_lines([f"*secure_bloom_audit?{prefix}/000000_0? PASSED*",
                                 f"*secure_bloom_audit?{prefix}/leak.parquet.encrypted? FAILED*",
                                 f"*secure_bloom_audit?{prefix}/big/part-0.parquet? PASSED*",
                                 f"*secure_bloom_audit?{prefix}/sub/orphan.parquet? FAILED*"])
    result.assert_outcomes(passed=3, failed=2)  # + policy-coverage
    assert SECRET_KEY not in result.stdout.str()


# --------------------------------------------------------------------------- a store that is not there


def test_dead_object_store_is_could_not_check_with_a_specific_error(
        s3: Any, mixed: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from secure_bloom.cli import main
    from secure_bloom.errors import StorageUnavailableError
    from secure_bloom.parquet.audit.auditor import audit
    from support.s3_server import CountingProxy

    host, port = s3.server_endpoint.split(":")
    gateway = CountingProxy((host, int(port)))
    endpoint = f"127.0.0.1:{gateway.port}"
    assert s3.filesystem(endpoint).get_file_info(f"{mixed['prefix']}/notes.txt").size > 0  # alive through the gateway
    gateway.stop()  # the store goes away (new connections are refused)
    fs = s3.filesystem(endpoint)

    report = audit(s3.uri(mixed["prefix"], endpoint), SENSITIVE, keys=mixed["keys"])
    (result,) = report.files
    assert (result.status.value, result.error_kind, report.exit_code) == ("could_not_check", "STORAGE_UNAVAILABLE", 2)
    assert result.error is not None
    assert result.error.startswith(f"s3://{mixed['prefix']}: the object store cannot be reached (AWS Error")
    with pytest.raises(StorageUnavailableError, match=r"^s3://lake-mixed/mixed/big/part-0\.parquet: the object "
                                                      r"store cannot be reached \(AWS Error NETWORK_CONNECTION"):
        ParquetBloomReader(f"{mixed['prefix']}/big/part-0.parquet", mixed["keys"], filesystem=fs)

    rc = main(["audit", s3.uri(mixed["prefix"], endpoint), "--sensitive", "ssn"])
    err = capsys.readouterr()
    assert rc == 2 and "STORAGE_UNAVAILABLE" in err.out + err.err
    rc = main(["inspect", s3.uri(f"{mixed['prefix']}/000000_0", endpoint)])
    err = capsys.readouterr()
    assert rc == 2  # STORAGE_UNAVAILABLE: could not check
    assert "the object store cannot be reached" in err.err and err.err.count("\n") == 1


def test_missing_bucket_and_missing_prefix_are_file_not_found(s3: Any, mixed: dict[str, Any]) -> None:
    from secure_bloom.parquet.audit.auditor import audit

    report = audit([s3.uri("no-such-bucket/x"), s3.uri(f"{mixed['bucket']}/no-such-prefix")], SENSITIVE,
                   keys=mixed["keys"])
    assert [(f.file, f.error_kind) for f in report.files] == [
        ("s3://no-such-bucket/x", "FILE_NOT_FOUND"), (f"s3://{mixed['bucket']}/no-such-prefix", "FILE_NOT_FOUND")]
    assert report.exit_code == 2


def test_probe_on_s3_reads_the_tail_in_one_request_and_the_filters_in_one(s3: Any, stored: dict[str, Any]) -> None:
    """Footer: one speculative read of the file's end (length, magic and the whole encrypted
    footer, FileCryptoMetaData included; no read of the leading magic); then the header and
    bitset modules of every encrypted filter outside that read in one coalesced range request
    (bloom_filter_length is set; the filters lie side by side); a filter inside it (written
    just before the footer) costs no request."""
    uri, keys, fs = f"s3://{stored['paths'][0]}", stored["keys"], s3.filesystem()
    with ParquetBloomReader(uri, keys, filesystem=fs) as reader:
        spans = [(c.bloom_filter_offset, c.bloom_filter_length) for c in reader.chunks(with_sizes=False)
                 if c.has_bloom_filter]
        footer_offset = reader.tail.footer_offset
    assert len(spans) == ROWS // 2 // GROUP and all(n is not None for _, n in spans)
    s3.reset()
    with ParquetBloomReader(uri, keys, filesystem=fs) as reader:
        assert reader.footer.encrypted
        footer_gets = s3.get_ranges
        result = reader.probe("key", ["absent"])
    assert result.maybe_row_groups(0) == []
    size = stored["size"]
    assert footer_gets == [f"bytes={size - TAIL_READ_BYTES}-{size - 1}"]
    assert size - TAIL_READ_BYTES <= footer_offset
    window = size - TAIL_READ_BYTES
    outside = [(o, o + n) for o, n in spans if o < window]  # type: ignore[operator]
    assert s3.get_ranges[1:] == ([f"bytes={outside[0][0]}-{outside[-1][1] - 1}"] if outside else [])
    # (filters outside the tail read: tests/interop/test_object_store_requests.py)
