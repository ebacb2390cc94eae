"""The compliance audit (secure_bloom.parquet.audit.auditor): every violation code on a file built to
have it, could-not-check never passing, directory expansion, JSON and JUnit reports.

Hostile files are built by tests/support/leaky_writer.py from pyarrow-encrypted sources (pyarrow refuses
Bloom filters on encrypted files): a plaintext filter on an encrypted column as arrow-rs writes
it, a filter under the footer key, a tampered filter.
"""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support import leaky_writer as lw
from support.parquet_files import explicit_testing_keys
from secure_bloom.encrypted_filter import encrypt_bloom_filter
from secure_bloom.filter import SplitBlockBloomFilter
from secure_bloom.kms import ExplicitKeys, KeyListKms, OpenBaoTransitKms
from secure_bloom.parquet import NO_KEYS, KeyAccess, ParquetBloomReader
from secure_bloom.parquet.file.arrow_source import open_arrow_file
from secure_bloom.parquet.audit.auditor import audit, audit_file, match_sensitive
from secure_bloom.parquet.audit.report import Code, Severity, Status
from secure_bloom.errors import NotRegularFileError
from secure_bloom.fileio import open_regular_file
from secure_bloom.kms.sidecar import KeyMaterialStore
from secure_bloom.parquet.audit.discover import Skipped, discover, is_parquet_name
from secure_bloom.parquet.file.describe import describe_with_storage
from secure_bloom.parquet.file.filter_io import classify_filter_bytes
from secure_bloom.types import FilterForm, FooterMode, PhysicalType
from support.paths import VECTORS_DIR

DATA = VECTORS_DIR
JAVA_BLOOM = DATA / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
PLAIN_BLOOM = DATA / "data_index_bloom_encoding_stats.parquet"
EXPLICIT = explicit_testing_keys()


@pytest.fixture(scope="module")
def keys() -> KeyAccess:
    return lw.key_access()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, keys: KeyAccess) -> dict[str, Path]:
    """Sources and their variants; names say what the ssn column's filters are."""
    d = tmp_path_factory.mktemp("audit")
    out: dict[str, Path] = {}
    for name, kwargs in {"enc": {}, "pf": {"plaintext_footer": True}, "uniform": {"uniform": True}}.items():
        out[name] = d / f"{name}.parquet.encrypted"
        lw.write_pyarrow_encrypted(out[name], **kwargs)  # type: ignore[arg-type]
    values = lw.table_values()
    variants = {
        "good": ("enc", {"ssn": "column_key", "email": "column_key"}),
        "leak": ("enc", {"ssn": "plaintext", "email": "column_key"}),
        "footer_key": ("enc", {"ssn": "footer_key"}),
        "tampered": ("enc", {"ssn": "tampered"}),
        "pf_good": ("pf", {"ssn": "column_key"}),
        "pf_leak": ("pf", {"ssn": "plaintext"}),
        "uniform_filter": ("uniform", {"ssn": "column_key"}),
        "city_filter": ("enc", {"city": "plaintext"}),
    }
    for name, (src, modes) in variants.items():
        out[name] = d / f"{name}.parquet.encrypted"
        lw.inject_filters(out[src], out[name], modes, keys, values=values)
    out["orphan"] = d / "orphan.parquet.encrypted"  # the leak's filters replaced, their bytes left
    lw.inject_filters(out["leak"], out["orphan"], {"ssn": "column_key"}, keys, values=values)
    return out


def codes(report) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return {(f.leaf, f.code.value) for f in report.findings}


# --- the policy ----------------------------------------------------------------------------


def test_correct_file_passes(files: dict[str, Path], keys: KeyAccess) -> None:
    report = audit(files["good"], ["ssn", "email"], keys=keys)
    assert report.is_compliant and report.exit_code == 0
    assert report.findings == ()
    (result,) = report.files
    assert [c.status for c in result.columns] == [Status.PASS, Status.PASS]
    assert [c.filters_checked for c in result.columns] == [2, 2]  # both row groups authenticated


def test_parquet_java_file_passes_with_explicit_keys() -> None:
    report = audit(JAVA_BLOOM, ["double_field", "float_field"], keys=EXPLICIT)
    assert report.is_compliant, report.to_json()
    assert [c.filters_checked for c in report.files[0].columns] == [1, 1]


def test_plaintext_filter_on_encrypted_column_as_arrow_rs_writes(files: dict[str, Path], keys: KeyAccess) -> None:
    report = audit(files["leak"], ["ssn", "email"], keys=keys)
    assert report.exit_code == 1 and not report.is_compliant
    (finding,) = report.violations
    assert finding.code is Code.PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN
    assert (finding.leaf, finding.row_groups) == ("ssn", (0, 1))
    assert "plaintext" in finding.message and "row groups 0, 1" in finding.message
    assert report.files[0].columns[1].status is Status.PASS  # email's filters are fine


def test_orphaned_plaintext_filter_that_no_column_references(files: dict[str, Path], keys: KeyAccess) -> None:
    """The leak's plaintext filters replaced by encrypted ones but their bytes left in the file
    (what attach did): every reference is fine, the bytes are still readable by anyone."""
    report = audit(files["orphan"], ["ssn", "email", "id"], keys=keys)
    assert codes(report) == {("ssn", "ORPHANED_PLAINTEXT_FILTER"), ("email", "ORPHANED_PLAINTEXT_FILTER"),
                             ("id", "SENSITIVE_COLUMN_NOT_ENCRYPTED")}
    assert report.exit_code == 1
    ssn_finding = next(f for f in report.violations if f.leaf == "ssn")
    with ParquetBloomReader(files["leak"], keys) as r:
        leaked = [c.bloom_filter_offset for c in r.chunks(with_sizes=False) if c.column == "ssn"]
    assert ssn_finding.detail.startswith(f"2 unreferenced plaintext filter(s): offset {leaked[0]} ")
    assert f"offset {leaked[1]} " in ssn_finding.detail and ssn_finding.row_groups == ()
    assert audit(files["good"], ["ssn", "email"], keys=keys).is_compliant  # no orphans there


def test_orphan_scan_reads_only_gaps_and_stops_at_its_budget() -> None:
    import io

    from secure_bloom.parquet.file.regions import OrphanFilter, find_plaintext_filters, gaps, merge

    bf = SplitBlockBloomFilter(64)
    bf.insert([b"secret"], PhysicalType.BYTE_ARRAY)
    blob = bf.to_bytes()
    data = b"PAR1" + bytes(100) + blob + b"\x15" * 50 + blob
    regions = merge([(0, 4), (104 + len(blob) + 50, len(data))])  # the second copy is referenced
    assert gaps(regions, 4, len(data)) == [(4, 104 + len(blob) + 50)]
    found, unscanned = find_plaintext_filters(io.BytesIO(data), gaps(regions, 4, len(data)))
    assert (found, unscanned) == ([OrphanFilter(104, len(blob), 64)], 0)
    found, unscanned = find_plaintext_filters(io.BytesIO(data), [(4, len(data))], budget=50)
    assert (found, unscanned) == ([], len(data) - 4 - 50)
    # a header whose bitset would run past the gap is not a filter
    assert find_plaintext_filters(io.BytesIO(data), [(104, 104 + len(blob) - 1)]) == ([], 0)


def test_plaintext_filter_found_without_any_key(files: dict[str, Path]) -> None:
    """Plaintext footer: the filter's location is visible, so the leak needs no key to prove."""
    report = audit(files["pf_leak"], ["ssn"], keys=NO_KEYS)
    assert codes(report) == {("ssn", "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN")}
    assert report.exit_code == 1


def test_encrypted_filter_without_its_key_is_could_not_check(files: dict[str, Path], keys: KeyAccess) -> None:
    report = audit(files["pf_good"], ["ssn"], keys=NO_KEYS)
    assert report.exit_code == 2 and not report.is_compliant and not report.violations
    column = report.files[0].columns[0]
    assert column.status is Status.COULD_NOT_CHECK
    assert "kc1" in column.unchecked[0] and "row groups 0, 1" in column.unchecked[0]
    assert audit(files["pf_good"], ["ssn"], keys=keys).exit_code == 0


def test_sensitive_column_not_encrypted(files: dict[str, Path], keys: KeyAccess) -> None:
    report = audit(files["enc"], ["city"], keys=keys)
    (finding,) = report.violations
    assert finding.code is Code.SENSITIVE_COLUMN_NOT_ENCRYPTED and finding.row_groups == (0, 1)
    with_filter = audit(files["city_filter"], ["city"], keys=keys).violations[0]
    assert with_filter.code is Code.SENSITIVE_COLUMN_NOT_ENCRYPTED
    assert "plaintext Bloom filter" in with_filter.message
    # A plaintext Parquet file: every sensitive column is unencrypted.
    assert codes(audit(PLAIN_BLOOM, ["String"])) == {("String", "SENSITIVE_COLUMN_NOT_ENCRYPTED")}


def test_plaintext_file_is_a_violation_even_when_keys_are_given(files: dict[str, Path], keys: KeyAccess,
                                                                tmp_path: Path) -> None:
    """Keys given do not make a plaintext file pass: in a mixed dataset (legitimate, and so still
    readable with keys) the file without crypto metadata is flagged, column by column."""
    root = tmp_path / "mixed"
    root.mkdir()
    shutil.copy(files["good"], root / "a.parquet.encrypted")
    plain = open_arrow_file(files["good"], keys).read()  # the same rows, decrypted
    pq.write_table(plain, root / "b.parquet", row_group_size=lw.ROWS_PER_GROUP,
                   bloom_filter_options={"ssn": {"ndv": 100, "fpp": 0.01}})
    with ParquetBloomReader(root / "b.parquet", keys) as reader:  # readable with keys, and says it is plaintext
        assert reader.footer.encrypted is False and reader.footer.mode is FooterMode.PLAINTEXT
        assert not any(c.encrypted for c in reader.columns)
        assert reader.row_groups_maybe_containing("ssn", "ssn-0075") == [1]
    report = audit(root, ["ssn", "email"], keys=keys)
    assert report.exit_code == 1 and not report.is_compliant
    assert [(os.path.basename(r.file), r.status, r.footer_mode) for r in report.files] == [
        ("a.parquet.encrypted", Status.PASS, "encrypted"), ("b.parquet", Status.VIOLATION, "plaintext")]
    assert {(os.path.basename(f.file), f.leaf, f.code) for f in report.violations} == {
        ("b.parquet", "ssn", Code.SENSITIVE_COLUMN_NOT_ENCRYPTED),
        ("b.parquet", "email", Code.SENSITIVE_COLUMN_NOT_ENCRYPTED)}
    ssn_finding = next(f for f in report.violations if f.leaf == "ssn")
    assert "plaintext Bloom filter" in ssn_finding.message


def test_filter_under_footer_key_when_column_declares_its_own(files: dict[str, Path], keys: KeyAccess) -> None:
    for allow in (False, True):  # a filter no reader of the column key can open: never allowed
        report = audit(files["footer_key"], ["ssn"], keys=keys, allow_footer_key=allow)
        (finding,) = report.violations
        assert finding.code is Code.FILTER_UNDER_FOOTER_KEY
        assert "kc1" in finding.message


def test_column_encrypted_with_footer_key(files: dict[str, Path], keys: KeyAccess) -> None:
    report = audit(files["uniform_filter"], ["ssn", "email"], keys=keys)
    assert codes(report) == {("ssn", "FILTER_UNDER_FOOTER_KEY")}  # email has no filter: fine
    allowed = audit(files["uniform_filter"], ["ssn"], keys=keys, allow_footer_key=True)
    assert allowed.is_compliant
    assert allowed.files[0].columns[0].filters_checked == 2


def test_column_key_equal_to_footer_key(tmp_path: Path) -> None:
    """A writer that gave double_field (key id kc1) the footer key's bytes: its filter
    authenticates under the footer key, so the column has no key of its own."""
    kf, kc1 = b"0123456789012345", b"1234567890123450"
    same = KeyAccess(explicit=ExplicitKeys({"kf": kf, "kc1": kf, "kc2": b"1234567890123451"}))
    rekeyed = tmp_path / "rekeyed.parquet.encrypted"
    lw.rekey_column_metadata(DATA / "encrypt_columns_and_footer.parquet.encrypted", rekeyed, "double_field",
                             EXPLICIT, old_key=kc1, new_key=kf)
    dst = tmp_path / "same.parquet.encrypted"
    with ParquetBloomReader(rekeyed, keys=same) as reader:
        values = {"double_field": [[0.5, 1.5]] * reader.num_row_groups}
    lw.inject_filters(rekeyed, dst, {"double_field": "column_key"}, same, values=values)
    report = audit(dst, ["double_field"], keys=same)
    assert codes(report) == {("double_field", "FILTER_UNDER_FOOTER_KEY")}
    assert "is the footer key itself" in report.violations[0].message
    assert audit(dst, ["double_field"], keys=same, allow_footer_key=True).is_compliant


def test_tampered_filter_is_unreadable(files: dict[str, Path], keys: KeyAccess) -> None:
    report = audit(files["tampered"], ["ssn"], keys=keys)
    (finding,) = report.violations
    assert finding.code is Code.FILTER_UNREADABLE and finding.row_groups == (0, 1)


def test_filter_bytes_that_are_neither_form_are_unreadable(files: dict[str, Path], keys: KeyAccess,
                                                           tmp_path: Path) -> None:
    bad = tmp_path / "garbage.parquet.encrypted"
    data = bytearray(files["good"].read_bytes())
    with ParquetBloomReader(files["good"], keys=keys) as reader:
        chunk = next(c for c in reader.chunks(with_sizes=False) if c.column == "ssn" and c.row_group == 1)
    data[chunk.bloom_filter_offset:chunk.bloom_filter_offset + 4] = b"\xff\xff\xff\x7f"
    bad.write_bytes(bytes(data))
    report = audit(bad, ["ssn"], keys=keys)
    assert {(f.code, f.row_groups) for f in report.violations} == {(Code.FILTER_UNREADABLE, (1,))}


def test_column_missing_from_some_files_is_a_warning(files: dict[str, Path], keys: KeyAccess,
                                                     tmp_path: Path) -> None:
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), other)
    report = audit([files["good"], other], ["ssn"], keys=keys)
    assert report.is_compliant and report.exit_code == 0 and report.unknown_columns == ()
    (warning,) = report.warnings
    assert warning.code is Code.SENSITIVE_COLUMN_MISSING and warning.severity is Severity.WARNING
    assert warning.file == str(other) and report.files[1].columns[0].status is Status.MISSING


def test_sensitive_column_in_no_file_is_not_a_pass(files: dict[str, Path], keys: KeyAccess) -> None:
    """A typo in --sensitive ("sns") used to pass with exit 0: a name that matches no column in
    any file read is reported and the audit is incomplete (exit 2), still with the per-file warning."""
    report = audit(files["good"], ["ssn", "sns"], keys=keys)
    assert report.unknown_columns == ("sns",)
    assert not report.is_compliant and report.exit_code == 2
    assert [w.code for w in report.warnings] == [Code.SENSITIVE_COLUMN_MISSING]
    assert report.to_dict()["unknown_sensitive_columns"] == ["sns"]
    suite = ET.fromstring(report.to_junit_xml()).find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    assert [e.get("type") for e in suite.iter("error")] == ["SENSITIVE_COLUMN_UNKNOWN"]
    leaked = audit([files["leak"]], ["ssn", "sns"], keys=keys)
    assert leaked.exit_code == 1  # a violation still outranks it


# --- files that cannot be checked ----------------------------------------------------------


def test_encrypted_footer_without_keys_is_could_not_check(files: dict[str, Path]) -> None:
    report = audit(files["leak"], ["ssn"], keys=NO_KEYS)
    assert report.exit_code == 2 and not report.is_compliant
    (result,) = report.files
    assert result.status is Status.COULD_NOT_CHECK and result.error_kind == "MISSING_KEY"
    assert "footer key" in (result.error or "")


def test_wrong_key_is_could_not_check() -> None:
    wrong = KeyAccess(explicit=ExplicitKeys.from_specs(["kf=text:0123456789012399"]))
    (result,) = audit(JAVA_BLOOM, ["double_field"], keys=wrong).files
    assert result.error_kind == "AUTHENTICATION_FAILED"


def test_kms_down_is_could_not_check(files: dict[str, Path]) -> None:
    """A real OpenBao client pointed at a closed port: the footer key cannot be unwrapped."""
    down = KeyAccess(kms=OpenBaoTransitKms("http://127.0.0.1:9", token="t", retries=0, timeout=(1.0, 1.0)))
    report = audit(files["good"], ["ssn"], keys=down)
    assert report.exit_code == 2
    assert report.files[0].error_kind == "KMS_UNAVAILABLE"


def test_not_parquet_missing_path_and_empty_directory(tmp_path: Path) -> None:
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not a parquet file at all")
    empty = tmp_path / "empty"
    empty.mkdir()
    report = audit([junk, tmp_path / "nope.parquet", empty], ["ssn"])
    assert [r.error_kind for r in report.files] == ["NOT_PARQUET", "FILE_NOT_FOUND", "NO_PARQUET_FILES"]
    assert report.exit_code == 2 and not report.is_compliant


def test_error_kinds_come_from_the_one_table(tmp_path: Path) -> None:
    """A directory given as a file was "IO_ERROR" in audit while the CLI called it the caller's
    (exit 2); both now use secure_bloom.errors.ErrorKind."""
    result = audit_file(tmp_path, ["ssn"])
    assert (result.status, result.error_kind) == (Status.COULD_NOT_CHECK, "IS_A_DIRECTORY")
    assert json.loads(json.dumps(result.to_dict()))["error"] == {"kind": "IS_A_DIRECTORY",
                                                                  "message": f"{tmp_path}: Is a directory"}


def test_violation_outranks_could_not_check(files: dict[str, Path], keys: KeyAccess, tmp_path: Path) -> None:
    report = audit([files["leak"], tmp_path / "missing.parquet"], ["ssn"], keys=keys)
    assert report.exit_code == 1
    assert [r.status for r in report.files] == [Status.VIOLATION, Status.COULD_NOT_CHECK]


# --- directories ---------------------------------------------------------------------------


def test_directories_expand_to_parquet_files(files: dict[str, Path], keys: KeyAccess, tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    (root / "year=2024" / "month=01").mkdir(parents=True)
    (root / ".hidden").mkdir()
    shutil.copy(files["good"], root / "a.parquet")
    shutil.copy(files["leak"], root / "year=2024" / "month=01" / "part-00000-abc-c000.snappy.parquet")
    shutil.copy(files["good"], root / "year=2024" / "part-00001")
    shutil.copy(files["good"], root / "year=2024" / "b.parquet.encrypted")
    shutil.copy(files["leak"], root / ".hidden" / "x.parquet")  # Parquet by content: audited, not skipped
    for skipped in ("_SUCCESS", ".part-00000.crc", "_KEY_MATERIAL_FOR_a.parquet.json", "notes.txt"):
        (root / skipped).write_text("x")
    found = discover([root])
    assert [os.path.relpath(p, root) for p in found.files] == [
        "a.parquet", ".hidden/x.parquet", "year=2024/b.parquet.encrypted", "year=2024/part-00001",
        "year=2024/month=01/part-00000-abc-c000.snappy.parquet"]
    assert found.skipped == (Skipped(str(root / "notes.txt"), "not Parquet (no PAR1/PARE magic)"),)
    calls: list[tuple[int, int, str]] = []
    report = audit(root, ["ssn"], keys=keys, progress=lambda d, t, p: calls.append((d, t, p)))
    assert [r.status for r in report.files] == [Status.PASS, Status.VIOLATION, Status.PASS, Status.PASS,
                                                Status.VIOLATION]
    assert [(d, t) for d, t, _ in calls] == [(0, 5), (1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
    assert report.skipped == ((str(root / "notes.txt"), "not Parquet (no PAR1/PARE magic)"),)


def test_parquet_found_by_content_and_through_symlinks(files: dict[str, Path], keys: KeyAccess,
                                                       tmp_path: Path) -> None:
    """Hive's 000000_0, Impala's .parq and a file in a symlinked directory were never checked and
    the audit passed with exit 0; a directory linked twice (and a link loop) is searched once."""
    root = tmp_path / "lake"
    elsewhere = tmp_path / "elsewhere"
    (root / "hive").mkdir(parents=True)
    elsewhere.mkdir()
    shutil.copy(files["leak"], root / "hive" / "000000_0")
    shutil.copy(files["leak"], root / "impala.parq")
    shutil.copy(files["leak"], elsewhere / "data")
    (root / "linked").symlink_to(elsewhere)
    (root / "linked-again").symlink_to(elsewhere)
    (root / "hive" / "loop").symlink_to(root)
    (root / "hive" / "000001_0").write_text("a Hive text file, not Parquet\n")
    found = discover([root])
    assert [os.path.relpath(p, root) for p in found.files] == ["impala.parq", "hive/000000_0", "linked/data"]
    assert [(os.path.relpath(s.path, root), s.reason) for s in found.skipped] == [
        ("linked-again", f"the same directory as {root / 'linked'}, searched once"),
        ("hive/000001_0", "not Parquet (no PAR1/PARE magic)"),
        ("hive/loop", f"the same directory as {root}, searched once")]
    report = audit(root, ["ssn"], keys=keys)
    assert report.exit_code == 1
    assert [f.code for f in report.violations] == [Code.PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN] * 3


def test_unreadable_entries_are_reported_not_skipped(files: dict[str, Path], keys: KeyAccess, tmp_path: Path) -> None:
    """A dangling link, a link loop and a FIFO in a directory: each is "could not check" (exit 2),
    and the readable file is still audited; the FIFO is never opened for a blocking read."""
    root = tmp_path / "dir"
    root.mkdir()
    shutil.copy(files["good"], root / "a.parquet")
    (root / "gone.parquet").symlink_to(tmp_path / "deleted.parquet")
    (root / "self").symlink_to(root / "self")
    os.mkfifo(root / "pipe.parquet")
    report = audit(root, ["ssn"], keys=keys)
    assert [(os.path.basename(r.file), r.status, r.error_kind) for r in report.files] == [
        ("a.parquet", Status.PASS, None),
        ("gone.parquet", Status.COULD_NOT_CHECK, "DANGLING_SYMLINK"),
        ("pipe.parquet", Status.COULD_NOT_CHECK, "NOT_REGULAR_FILE"),
        ("self", Status.COULD_NOT_CHECK, "DANGLING_SYMLINK")]
    assert report.exit_code == 2
    assert "is a FIFO, not a regular file" in report.files[2].error  # type: ignore[operator]
    shutil.copy(files["leak"], root / "leak.parquet")
    assert audit(root, ["ssn"], keys=keys).exit_code == 1  # a violation outranks "could not check"


def test_a_fifo_given_as_a_file_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "data.parquet"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError, match=r"data\.parquet: is a FIFO, not a regular file"):
        ParquetBloomReader(fifo)
    report = audit(fifo, ["ssn"])
    assert (report.exit_code, report.files[0].error_kind) == (2, "NOT_REGULAR_FILE")


def test_a_fifo_sidecar_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "_KEY_MATERIAL_FOR_x.parquet.json"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError, match=r"is a FIFO, not a regular file"):
        KeyMaterialStore.load(fifo)


def test_open_regular_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"PAR1")
    with open_regular_file(tmp_path / "f") as f:
        assert f.read() == b"PAR1"
    with pytest.raises(IsADirectoryError, match="Is a directory"):
        open_regular_file(tmp_path)
    with pytest.raises(NotRegularFileError, match="is a character device"):
        open_regular_file("/dev/null")


@pytest.mark.parametrize("name,expected", [
    ("x.parquet", True), ("x.PARQUET", True), ("x.parquet.encrypted", True), ("part-00000", True), ("x.parq", True),
    ("part-00000-1.c000.snappy.parquet", True), ("_SUCCESS", False), (".x.parquet", False),
    ("_KEY_MATERIAL_FOR_x.parquet.json", False), ("part-00000.crc", False), ("x.csv", False),
])
def test_is_parquet_name(name: str, expected: bool) -> None:
    assert is_parquet_name(name) is expected


def test_sensitive_names_match_groups_and_case(files: dict[str, Path], keys: KeyAccess) -> None:
    with ParquetBloomReader(JAVA_BLOOM, keys=EXPLICIT) as reader:
        columns = reader.columns
    assert [c.path for c in match_sensitive("DOUBLE_FIELD", columns)] == ["double_field"]
    assert match_sensitive("double", columns) == ()  # a prefix of a name is not a group
    from dataclasses import replace

    nested = [replace(columns[0], path="address.street"), replace(columns[1], path="address.zip"),
              replace(columns[2], path="addressbook")]
    assert [c.path for c in match_sensitive("address", nested)] == ["address.street", "address.zip"]


# --- reports -------------------------------------------------------------------------------


def test_json_report(files: dict[str, Path], keys: KeyAccess) -> None:
    report = audit([files["good"], files["leak"]], ["ssn", "email"], keys=keys)
    doc = json.loads(report.to_json())
    assert doc["compliant"] is False and doc["exit_code"] == 1
    read = doc["summary"].pop("bytes_read")
    assert doc["summary"] == {"files": 2, "compliant": 1, "with_violations": 1, "could_not_check": 0,
                              "violations": 1, "warnings": 0, "skipped": 0}
    assert read == sum(f["bytes_read"] for f in doc["files"])
    assert 0 < read < files["good"].stat().st_size + files["leak"].stat().st_size  # the tail and filters only
    assert doc["unknown_sensitive_columns"] == [] and doc["skipped"] == []
    (violation,) = doc["violations"]
    assert violation["code"] == "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"
    assert violation["file"] == str(files["leak"]) and violation["row_groups"] == [0, 1]
    assert [f["status"] for f in doc["files"]] == ["pass", "violation"]


def test_junit_xml_one_testcase_per_file_and_column(files: dict[str, Path], keys: KeyAccess,
                                                    tmp_path: Path) -> None:
    paths = [files["good"], files["leak"], files["tampered"], tmp_path / "missing.parquet"]
    report = audit(paths, ["ssn", "email", "nope"], keys=keys)
    root = ET.fromstring(report.to_junit_xml())
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == 4 * 3 + 1 == int(suite.get("tests", "0"))  # + "nope" is in no file
    by = {(c.get("classname"), c.get("name")): c for c in cases}
    leak = by[(str(files["leak"]), "ssn")].find("failure")
    assert leak is not None and leak.get("type") == "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"
    assert by[(str(files["tampered"]), "ssn")].find("failure").get("type") == "FILTER_UNREADABLE"  # type: ignore[union-attr]
    assert by[(str(files["good"]), "ssn")].find("failure") is None
    assert by[(str(files["good"]), "nope")].find("skipped") is not None
    assert by[(str(tmp_path / "missing.parquet"), "ssn")].find("error") is not None
    assert by[("sensitive columns", "nope")].find("error").get("type") == "SENSITIVE_COLUMN_UNKNOWN"  # type: ignore[union-attr]
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("2", "4", "3")


# --- the framing classifier ----------------------------------------------------------------


def _classify(blob: bytes, length: int | None) -> tuple[str, int | None]:
    st = classify_filter_bytes(blob[:1028], length, len(blob), lambda at, n: blob[at:at + n])
    return st.form, st.num_bytes


def test_classify_filter_bytes() -> None:
    plain = (DATA / "bloom_filter.xxhash.bin").read_bytes()
    assert _classify(plain, len(plain)) == (FilterForm.PLAINTEXT, 1024)
    assert _classify(plain, None) == (FilterForm.PLAINTEXT, 1024)
    bf = SplitBlockBloomFilter.for_ndv(100)
    bf.insert(["a", "b"], PhysicalType.BYTE_ARRAY)
    enc = encrypt_bloom_filter(bf, b"k" * 16, b"aad", 0, 0)
    assert _classify(enc, len(enc)) == (FilterForm.ENCRYPTED, bf.num_bytes)
    assert _classify(enc, None) == (FilterForm.ENCRYPTED, bf.num_bytes)
    assert _classify(enc, len(enc) - 1)[0] == FilterForm.GARBAGE        # length disagrees with the framing
    assert _classify(enc[:-5], None)[0] == FilterForm.GARBAGE           # truncated bitset module
    assert _classify(plain[:100], None)[0] == FilterForm.GARBAGE        # bitset runs past the region
    assert _classify(os.urandom(64), None)[0] == FilterForm.GARBAGE
    assert _classify(b"", None)[0] == FilterForm.GARBAGE


def test_inspect_description_reports_a_leak_instead_of_failing(files: dict[str, Path], keys: KeyAccess) -> None:
    with ParquetBloomReader(files["leak"], keys=keys) as reader:
        desc = describe_with_storage(reader)
    chunks = {(c["row_group"], c["column"]): c for rg in desc["row_groups"] for c in rg["chunks"]}
    assert chunks[(0, "ssn")]["filter_storage"] == "plaintext"
    assert chunks[(0, "ssn")]["filter_problem"] == "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"
    assert chunks[(0, "email")]["filter_storage"] == "encrypted" and chunks[(0, "email")]["filter_verified"]
    assert chunks[(0, "id")]["filter_storage"] is None


def test_inspect_reads_filters_through_the_readers_logged_handle(files: dict[str, Path], keys: KeyAccess) -> None:
    """The storage check reads the reader's one handle (so its read log shows every filter read),
    and the leaked filter, which no key opens, is classified from that handle too."""
    with ParquetBloomReader(files["leak"], keys=keys) as reader:
        before = len(reader.read_ranges)
        desc = describe_with_storage(reader)
        read_offsets = {offset for offset, _ in reader.read_ranges[before:]}
    leak = next(c for rg in desc["row_groups"] for c in rg["chunks"] if (rg["row_group"], c["column"]) == (0, "ssn"))
    assert leak["filter_storage"] == "plaintext" and leak["bloom_filter_offset"] in read_offsets


# --- Spark / parquet-java files ------------------------------------------------------------


@pytest.mark.interop
def test_spark_files(spark_bloom_files) -> None:  # type: ignore[no-untyped-def]
    keys = KeyAccess(kms=KeyListKms(spark_bloom_files.key_list))
    encrypted = ["i32", "i64", "f32", "f64", "nested", "s", "dec", "day", "ts", "cat"]
    paths = [f.path for f in spark_bloom_files.files.values()]
    report = audit(paths, encrypted, keys=keys)
    assert report.is_compliant, report.to_json()
    checked = {c.column: c.filters_checked for c in report.files[0].columns}
    assert checked["s"] == 3 and checked["cat"] == 0 and checked["nested"] == 3  # cat: no filters
    assert codes(audit(paths[0], ["pub"], keys=keys)) == {("pub", "SENSITIVE_COLUMN_NOT_ENCRYPTED")}
    # Without keys: encrypted footers cannot be checked, plaintext footers not verified: never a pass.
    no_keys = audit(paths, ["s"], keys=NO_KEYS)
    assert no_keys.exit_code == 2 and not no_keys.violations
