"""Compliance audit: prove that no Bloom filter leaks a sensitive column.

Policy (BloomFilter.md "Encryption", Encryption.md; SPEC_NOTES 4-5, 8): in every file and row
group, each sensitive column has no Bloom filter, or a filter encrypted with that column's own
key. Per (file, sensitive column) the audit reports :mod:`~secure_bloom.parquet.audit_report`
codes:

* ``SENSITIVE_COLUMN_NOT_ENCRYPTED``: the column's chunks have no ``crypto_metadata``;
* ``PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN``: the bytes at ``bloom_filter_offset`` parse as a
  plaintext header + bitset although the chunk is encrypted (what arrow-rs writes). This needs
  no key when the filter's location is visible (plaintext-footer files keep it in the redacted
  ``meta_data``);
* ``FILTER_UNDER_FOOTER_KEY``: the column is encrypted with the footer key, or its filter
  authenticates under the footer key (the column key *is* the footer key, or a writer used the
  wrong one); allowed with ``allow_footer_key``;
* ``FILTER_UNREADABLE``: the filter fails to authenticate under the column key (and the footer
  key) or does not parse: damaged or tampered;
* ``ORPHANED_PLAINTEXT_FILTER``: the bytes between everything the footer references (pages,
  page indexes, filters) hold a plaintext filter (canonical header + a bitset that fits), e.g.
  one a tool replaced without removing; reported on every encrypted sensitive column, since no
  reference says whose it is (:mod:`~secure_bloom.parquet.regions`);
* ``SENSITIVE_COLUMN_MISSING`` (warning): no leaf column matches the name. A name that matches
  no column in ANY file read is reported by :attr:`AuditReport.unknown_columns` (a typo must not
  pass: the report's exit code is then 2).

Files are found by :func:`~secure_bloom.parquet.discover.discover` (by content, symlinks
followed); what it could not search or read is one could-not-check result each, and the files it
found not to be Parquet are listed in :attr:`AuditReport.skipped`.

A file or chunk that cannot be examined (missing key, not Parquet, KMS down, encrypted footer
without its key) is *could not check*, never a pass. Sensitive names match a leaf path exactly,
or a group and all leaves under it (``address`` -> ``address.street``, ``address.zip``); failing
that, case-insensitively (Spark's default resolution).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..encrypted_filter import read_encrypted_bloom_filter
from ..errors import (
    AuthenticationError,
    ErrorKind,
    KeyManagementError,
    MalformedInputError,
    SecureBloomError,
    error_kind,
)
from .audit_report import AuditReport, Code, ColumnResult, FileResult, Finding, location
from .discover import discover
from ..types import ChunkEncryption, FilterForm
from .chunk import ChunkInfo
from .filter_io import read_filter_storage
from .keys import NO_KEYS, KeyAccess
from .reader import ParquetBloomReader
from .regions import filter_extent, find_plaintext_filters, gaps, merge, metadata_regions
from .schema import ColumnInfo

__all__ = ["audit", "audit_file", "match_sensitive", "Progress"]

#: ``progress(files_done, files_total, current_path)``, called before each file and at the end.
Progress = Callable[[int, int, str], None]



# --- matching sensitive names to leaves --------------------------------------------------------


def match_sensitive(name: str, columns: Sequence[ColumnInfo]) -> tuple[ColumnInfo, ...]:
    """Leaves a sensitive name covers: exact path, or a group prefix; else case-insensitively."""
    def matches(fold: Callable[[str], str]) -> tuple[ColumnInfo, ...]:
        want = fold(name)
        return tuple(c for c in columns if fold(c.path) == want or fold(c.path).startswith(want + "."))

    return matches(lambda s: s) or matches(str.casefold)


# --- per file ----------------------------------------------------------------------------------


def _error_text(path: str, error: BaseException) -> str:
    if isinstance(error, OSError) and not isinstance(error, SecureBloomError):
        return f"{path}: {error.strerror or type(error).__name__}"
    text = " ".join(str(error).split()) or type(error).__name__
    if error_kind(error) is ErrorKind.INTERNAL_ERROR:
        text = f"internal error: {type(error).__name__}: {text}"
    return text if path in text else f"{path}: {text}"


@dataclass
class _Leaf:
    """What the audit learnt about one leaf column, row group by row group."""

    findings: dict[tuple[Code, str], list[int]]
    unchecked: dict[str, list[int]]
    filters_checked: int = 0

    def find(self, code: Code, rg: int, detail: str = "") -> None:
        self.findings.setdefault((code, detail), []).append(rg)

    def cannot(self, reason: str, rg: int) -> None:
        self.unchecked.setdefault(reason, []).append(rg)


class _FileAuditor:
    """Checks the sensitive leaves of one open reader; raw filter bytes are read through its handle."""

    def __init__(self, reader: ParquetBloomReader, allow_footer_key: bool) -> None:
        self.reader = reader
        self.raw = reader.file
        self.allow_footer_key = allow_footer_key
        footer = reader.footer
        self.footer_key: bytes | None = footer.footer_key
        self.file_aad: bytes | None = footer.file_aad
        self.data_end = reader.tail.footer_offset

    def check_chunk(self, chunk: ChunkInfo, state: _Leaf) -> None:
        rg = chunk.row_group
        if not chunk.encrypted:
            detail = "it also has a plaintext Bloom filter" if chunk.has_bloom_filter else ""
            state.find(Code.SENSITIVE_COLUMN_NOT_ENCRYPTED, rg, detail)
            return
        if chunk.has_bloom_filter is None:
            state.cannot(f"its metadata is encrypted with key {chunk.key_id!r}, which is not available, "
                         "so whether it has a Bloom filter cannot be seen", rg)
            return
        if not chunk.has_bloom_filter:
            return
        offset, length = chunk.bloom_filter_offset, chunk.bloom_filter_length
        assert offset is not None
        storage = read_filter_storage(self.raw, offset, length, self.data_end)
        state.filters_checked += 1
        if storage.form is FilterForm.PLAINTEXT:
            state.find(Code.PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN, rg)
            return
        if storage.form is FilterForm.GARBAGE:
            state.find(Code.FILTER_UNREADABLE, rg, storage.detail)
            return
        self._check_encrypted(chunk, state, offset, length)

    def _check_encrypted(self, chunk: ChunkInfo, state: _Leaf, offset: int, length: int | None) -> None:
        rg = chunk.row_group
        if chunk.encryption is ChunkEncryption.FOOTER_KEY and not self.allow_footer_key:
            state.find(Code.FILTER_UNDER_FOOTER_KEY, rg, "the column itself is encrypted with the footer key")
            return
        if not chunk.key_available:
            state.cannot(f"key {chunk.key_id!r} is not available, so the encrypted filter cannot be "
                         "authenticated", rg)
            return
        try:
            self.reader.bloom_filter(rg, chunk.column_ordinal)
        except KeyManagementError as e:  # e.g. a withheld AAD prefix that was not supplied
            state.cannot(" ".join(str(e).split()), rg)
            return
        except (AuthenticationError, MalformedInputError):
            if chunk.encryption is ChunkEncryption.COLUMN_KEY and self._opens_with_footer_key(chunk, offset, length):
                state.find(Code.FILTER_UNDER_FOOTER_KEY, rg,
                           f"the column declares key {chunk.key_id!r} but its filter is encrypted with the footer key")
            else:
                state.find(Code.FILTER_UNREADABLE, rg)
            return
        if chunk.encryption is ChunkEncryption.COLUMN_KEY and not self.allow_footer_key \
                and self._opens_with_footer_key(chunk, offset, length):
            state.find(Code.FILTER_UNDER_FOOTER_KEY, rg,
                       f"the column key {chunk.key_id!r} is the footer key itself")

    def _opens_with_footer_key(self, chunk: ChunkInfo, offset: int, length: int | None) -> bool:
        if self.footer_key is None or self.file_aad is None:
            return False
        try:
            read_encrypted_bloom_filter(self.raw, offset, self.footer_key, self.file_aad,
                                        chunk.row_group_ordinal, chunk.column_ordinal, length=length)
        except (AuthenticationError, MalformedInputError):
            return False
        return True


def _check_orphans(reader: ParquetBloomReader, chunks: Sequence[ChunkInfo], states: Sequence[_Leaf]) -> None:
    """ORPHANED_PLAINTEXT_FILTER on each of ``states`` (the encrypted sensitive leaves) when a
    gap between the referenced regions holds a plaintext filter."""
    raw = reader.file
    data_end = reader.tail.footer_offset
    regions = metadata_regions(reader.footer.metadata)
    visible = [cc.meta_data for rg in reader.footer.metadata.row_groups for cc in rg.columns
               if cc.meta_data is not None]
    locations = {(c.bloom_filter_offset, c.bloom_filter_length) for c in chunks}
    locations |= {(m.bloom_filter_offset, m.bloom_filter_length) for m in visible}
    for offset, length in locations:
        if offset is None or not 4 <= offset < data_end:
            continue
        extent = filter_extent(raw, offset, length, data_end)
        regions.append(extent or (offset, offset + (length or 1)))
    orphans, unscanned = find_plaintext_filters(raw, gaps(merge(regions), 4, data_end))
    if orphans:
        where = ", ".join(f"offset {o.offset} ({o.num_bytes}-byte bitset)" for o in orphans[:5])
        detail = f"{len(orphans)} unreferenced plaintext filter(s): {where}{', ...' if len(orphans) > 5 else ''}"
        for state in states:
            state.findings.setdefault((Code.ORPHANED_PLAINTEXT_FILTER, detail), [])
    if unscanned:
        for state in states:
            state.unchecked.setdefault(f"{unscanned} bytes no column references were not scanned for orphaned "
                                       "plaintext filters (scan budget exceeded)", [])


def _column_result(file: str, name: str, leaves: Sequence[ColumnInfo], states: dict[str, _Leaf]) -> ColumnResult:
    if not leaves:
        return ColumnResult(column=name, findings=(Finding(Code.SENSITIVE_COLUMN_MISSING, file, name, name, ()),))
    findings: list[Finding] = []
    unchecked: list[str] = []
    for leaf in leaves:
        state = states[leaf.path]
        for (code, detail), rgs in state.findings.items():
            findings.append(Finding(code, file, name, leaf.path, tuple(sorted(rgs)), detail))
        for reason, rgs in state.unchecked.items():
            unchecked.append(f"{location(leaf.path, rgs)}: {reason}")
    return ColumnResult(column=name, leaves=tuple(leaf.path for leaf in leaves), findings=tuple(findings),
                        unchecked=tuple(unchecked),
                        filters_checked=sum(states[leaf.path].filters_checked for leaf in leaves))


def audit_file(path: str | os.PathLike[str], sensitive_columns: Sequence[str], *,
               keys: KeyAccess = NO_KEYS, allow_footer_key: bool = False) -> FileResult:
    """Audit one file. Never raises for a problem with the file: that is a could-not-check result."""
    file = os.fspath(path)
    try:
        with ParquetBloomReader(file, keys=keys) as reader:
            columns = reader.columns
            matched = {name: match_sensitive(name, columns) for name in sensitive_columns}
            wanted = {leaf.path for leaves in matched.values() for leaf in leaves}
            states = {leaf: _Leaf({}, {}) for leaf in wanted}
            if wanted:
                auditor = _FileAuditor(reader, allow_footer_key)
                chunks = reader.chunks(with_sizes=False)
                for chunk in chunks:
                    if chunk.column in wanted:
                        auditor.check_chunk(chunk, states[chunk.column])
                encrypted = [states[leaf.path] for leaf in columns if leaf.path in wanted and leaf.encrypted]
                if encrypted:
                    _check_orphans(reader, chunks, encrypted)
            results = tuple(_column_result(file, name, matched[name], states) for name in sensitive_columns)
            return FileResult(file=file, columns=results, row_groups=reader.num_row_groups)
    except (SecureBloomError, OSError) as e:
        return FileResult(file=file, error=_error_text(file, e), error_kind=error_kind(e))
    except Exception as e:  # noqa: BLE001 - a bug must not turn one file into a pass or stop the audit
        return FileResult(file=file, error=_error_text(file, e), error_kind=ErrorKind.INTERNAL_ERROR)


def _dedupe(names: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for name in names:
        name = name.strip()
        if not name:
            continue
        if name not in out:
            out.append(name)
    return tuple(out)


def audit(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], sensitive_columns: Iterable[str],
          keys: KeyAccess = NO_KEYS, allow_footer_key: bool = False,
          progress: Progress | None = None) -> AuditReport:
    """Audit every Parquet file under ``paths`` (files, or directories searched recursively).

    Returns an :class:`AuditReport`; ``report.is_compliant`` is True only when every file was
    fully checked and no sensitive column has a violation.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    names = _dedupe(sensitive_columns)
    if not names:
        raise ValueError("sensitive_columns names no column")
    if not isinstance(keys, KeyAccess):
        raise TypeError(f"keys must be a KeyAccess, got {type(keys).__name__}")
    found = discover(paths)
    targets = found.entries
    results: list[FileResult] = []
    for done, target in enumerate(targets):
        if progress is not None:
            progress(done, len(targets), target.path)
        if target.problem is not None:
            results.append(FileResult(file=target.path, error=f"{target.path}: {target.problem}",
                                      error_kind=target.kind))
            continue
        results.append(audit_file(target.path, names, keys=keys, allow_footer_key=allow_footer_key))
    if progress is not None:
        progress(len(targets), len(targets), "")
    return AuditReport(files=tuple(results), sensitive_columns=names, allow_footer_key=allow_footer_key,
                       skipped=tuple((s.path, s.reason) for s in found.skipped))
