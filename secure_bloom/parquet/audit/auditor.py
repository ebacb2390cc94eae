"""Compliance audit: prove that no Bloom filter leaks a sensitive column.

Policy (BloomFilter.md "Encryption", Encryption.md; SPEC_NOTES 4-5, 8): in every file and row
group, each sensitive column has no Bloom filter, or a filter encrypted with that column's own
key. Per (file, sensitive column) the audit reports :mod:`~secure_bloom.parquet.audit.report`
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
  reference says whose it is (:mod:`~secure_bloom.parquet.file.regions`);
* ``FILTER_SIZES_VARY`` (rules with ``hide_filter_sizes``): the column's filters differ in size
  (numBytes or stored length) across the file's row groups, or some row groups have none. For
  every sensitive column with filters the result also says what the sizes show without any key
  (:class:`~secure_bloom.parquet.audit.report.FilterSizes`, read from the framing alone) and the
  distinct counts they imply at ``assumed_fpp``;
* ``SENSITIVE_COLUMN_MISSING`` (warning): no leaf column matches the name. A name that matches
  no column in ANY file read is reported by :attr:`AuditReport.unknown_columns` (a typo must not
  pass: the report's exit code is then 2).

Files are found by :func:`~secure_bloom.parquet.audit.discover.discover` (by content, symlinks
followed); what it could not search or read is one could-not-check result each, and the files it
found not to be Parquet are listed in :attr:`AuditReport.skipped`.

A file or chunk that cannot be examined (missing key, not Parquet, KMS down, encrypted footer
without its key) is *could not check*, never a pass. Sensitive names match a leaf path exactly,
or a group and all leaves under it (``address`` -> ``address.street``, ``address.zip``); failing
that, case-insensitively (Spark's default resolution).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...encrypted_filter import read_encrypted_bloom_filter
from ...errors import (
    AuthenticationError,
    ErrorKind,
    KeyManagementError,
    MalformedInputError,
    SecureBloomError,
    error_kind,
)
from ...filter import SplitBlockBloomFilter
from ...spec import DEFAULT_FPP
from .report import AuditReport, Code, ColumnResult, FileResult, FilterSizes, Finding, location
from .discover import discover
from ...types import ChunkEncryption, FilterForm
from ..file.chunk import ChunkInfo
from ..file.filter_io import read_filter_storage
from ..file.keys import NO_KEYS, KeyAccess, as_key_access
from ..file.leftovers import find_leftovers
from .policy import ColumnRule, FilterRequirement, Policy, match_sensitive
from ..file.reader import ParquetBloomReader
from ..file.sources import StoreTimeouts, display_source, is_local_source, storage_error, store_timeouts
from ..file.regions import filter_extent, find_plaintext_filters, gaps, merge, metadata_regions

__all__ = ["audit", "audit_file", "match_sensitive", "Progress"]

#: ``progress(files_done, files_total, current_path)``, called before each file and at the end.
Progress = Callable[[int, int, str], None]


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
    """What the audit learnt about one leaf column under one rule, row group by row group."""

    findings: dict[tuple[Code, str], list[int]]
    unchecked: dict[str, list[int]]
    filters_checked: int = 0
    #: row group -> (numBytes, stored bytes) as the framing shows them; (None, None): no filter
    sizes: dict[int, tuple[int | None, int | None]] = dataclasses.field(default_factory=dict)
    #: row groups whose filter's size could not be seen
    unseen: list[int] = dataclasses.field(default_factory=list)

    def find(self, code: Code, rg: int, detail: str = "") -> None:
        self.findings.setdefault((code, detail), []).append(rg)

    def cannot(self, reason: str, rg: int) -> None:
        self.unchecked.setdefault(reason, []).append(rg)


def _unknown_key_id(key_id: str | None) -> bool:
    return key_id is None or key_id.startswith(("external:", "<"))


def _keys_text(keys: Sequence[str]) -> str:
    return ", ".join(repr(k) for k in keys)


class _FileAuditor:
    """Checks the leaves one rule covers in one open reader; raw filter bytes are read through
    its handle."""

    def __init__(self, reader: ParquetBloomReader, policy: Policy) -> None:
        self.reader = reader
        self.raw = reader.file
        self.allow_footer_key = policy.allow_footer_key
        footer = reader.footer
        self.footer_key: bytes | None = footer.footer_key
        self.file_aad: bytes | None = footer.file_aad
        self.footer_key_id = reader.footer_key_id
        self.data_end = reader.tail.footer_offset

    def check_chunk(self, chunk: ChunkInfo, state: _Leaf, rule: ColumnRule) -> None:
        rg = chunk.row_group
        if rule.sensitive and not chunk.encrypted:
            detail = "it also has a plaintext Bloom filter" if chunk.has_bloom_filter else ""
            state.find(Code.SENSITIVE_COLUMN_NOT_ENCRYPTED, rg, detail)
        if chunk.encrypted and rule.master_keys is not None:
            self._check_master_key(chunk, state, rule)
        if chunk.has_bloom_filter is None:
            state.cannot(f"its metadata is encrypted with key {chunk.key_id!r}, which is not available, "
                         "so whether it has a Bloom filter cannot be seen", rg)
            state.unseen.append(rg)
            return
        if not chunk.has_bloom_filter:
            state.sizes[rg] = (None, None)
            if rule.filter is FilterRequirement.REQUIRED:
                state.find(Code.FILTER_REQUIRED_MISSING, rg)
            return
        if rule.filter is FilterRequirement.FORBIDDEN:
            state.find(Code.FILTER_FORBIDDEN, rg)
        offset, length = chunk.bloom_filter_offset, chunk.bloom_filter_length
        assert offset is not None
        storage = read_filter_storage(self.raw, offset, length, self.data_end)  # the framing: no key
        if storage.form is FilterForm.GARBAGE:
            state.unseen.append(rg)
        else:
            state.sizes[rg] = (storage.num_bytes, storage.stored_bytes)
        if not chunk.encrypted:  # a plaintext column's filter: read only if its shape is checked
            if self._shape_checks(rule):
                state.filters_checked += 1
                self._check_shape(chunk, state, rule, self._read_filter(chunk, state))
            return
        state.filters_checked += 1
        if storage.form is FilterForm.GARBAGE:
            state.find(Code.FILTER_UNREADABLE, rg, storage.detail)
            return
        if storage.form is FilterForm.PLAINTEXT:
            state.find(Code.PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN, rg)
            if rule.required_filter_keys is not None:
                state.find(Code.FILTER_WRONG_MASTER_KEY, rg, "the filter is not encrypted at all")
            return
        self._check_encrypted(chunk, state, rule, offset, length)

    @staticmethod
    def _shape_checks(rule: ColumnRule) -> bool:
        return rule.min_fpp is not None or rule.max_bitset_bytes is not None

    def _check_master_key(self, chunk: ChunkInfo, state: _Leaf, rule: ColumnRule) -> None:
        assert rule.master_keys is not None
        if _unknown_key_id(chunk.key_id):
            state.cannot(f"the master key of its key {chunk.key_id!r} cannot be determined (external key "
                         "material needs its sidecar beside the file)", chunk.row_group)
        elif chunk.key_id not in rule.master_keys:
            how = "the footer key's master key" if chunk.encryption is ChunkEncryption.FOOTER_KEY else "master key"
            state.find(Code.WRONG_MASTER_KEY, chunk.row_group,
                       f"encrypted under {how} {chunk.key_id!r}; the policy requires {_keys_text(rule.master_keys)}")

    def _read_filter(self, chunk: ChunkInfo, state: _Leaf) -> SplitBlockBloomFilter | None:
        try:
            return self.reader.bloom_filter(chunk.row_group, chunk.column_ordinal)
        except KeyManagementError as e:  # e.g. a withheld AAD prefix that was not supplied
            state.cannot(" ".join(str(e).split()), chunk.row_group)
        except (AuthenticationError, MalformedInputError):
            state.find(Code.FILTER_UNREADABLE, chunk.row_group)
        return None

    def _check_encrypted(self, chunk: ChunkInfo, state: _Leaf, rule: ColumnRule, offset: int,
                         length: int | None) -> None:
        rg = chunk.row_group
        if rule.sensitive and chunk.encryption is ChunkEncryption.FOOTER_KEY and not self.allow_footer_key:
            state.find(Code.FILTER_UNDER_FOOTER_KEY, rg, "the column itself is encrypted with the footer key")
            if not self._shape_checks(rule) and rule.required_filter_keys is None:
                return
        if not chunk.key_available:
            state.cannot(f"key {chunk.key_id!r} is not available, so the encrypted filter cannot be "
                         "authenticated", rg)
            return
        filter_key_id = chunk.key_id
        try:
            bf = self.reader.bloom_filter(rg, chunk.column_ordinal)
        except KeyManagementError as e:  # e.g. a withheld AAD prefix that was not supplied
            state.cannot(" ".join(str(e).split()), rg)
            return
        except (AuthenticationError, MalformedInputError):
            if chunk.encryption is ChunkEncryption.COLUMN_KEY and self._opens_with_footer_key(chunk, offset, length):
                if rule.sensitive:
                    state.find(Code.FILTER_UNDER_FOOTER_KEY, rg,
                               f"the column declares key {chunk.key_id!r} but its filter is encrypted with the "
                               "footer key")
                self._check_filter_key(chunk, state, rule, self.footer_key_id)
            else:
                state.find(Code.FILTER_UNREADABLE, rg)
            return
        if rule.sensitive and chunk.encryption is ChunkEncryption.COLUMN_KEY and not self.allow_footer_key \
                and self._opens_with_footer_key(chunk, offset, length):
            state.find(Code.FILTER_UNDER_FOOTER_KEY, rg, f"the column key {chunk.key_id!r} is the footer key itself")
        self._check_filter_key(chunk, state, rule, filter_key_id)
        self._check_shape(chunk, state, rule, bf)

    def _check_filter_key(self, chunk: ChunkInfo, state: _Leaf, rule: ColumnRule, key_id: str | None) -> None:
        wanted = rule.required_filter_keys
        if wanted is None:
            return
        if _unknown_key_id(key_id):
            state.cannot(f"the master key of the filter's key {key_id!r} cannot be determined", chunk.row_group)
        elif key_id not in wanted:
            state.find(Code.FILTER_WRONG_MASTER_KEY, chunk.row_group,
                       f"the filter is encrypted under master key {key_id!r}; the policy requires "
                       f"{_keys_text(wanted)}")

    def _check_shape(self, chunk: ChunkInfo, state: _Leaf, rule: ColumnRule, bf: SplitBlockBloomFilter | None) -> None:
        if bf is None:
            return
        rg = chunk.row_group
        if rule.max_bitset_bytes is not None and bf.num_bytes > rule.max_bitset_bytes:
            state.find(Code.FILTER_TOO_LARGE, rg,
                       f"{bf.num_bytes}-byte bitset; the policy allows at most {rule.max_bitset_bytes}")
        if rule.min_fpp is not None:
            fpp = bf.effective_fpp()
            if fpp < rule.min_fpp:
                values = self._value_counts(chunk)
                state.find(Code.FILTER_FPP_TOO_LOW, rg,
                           f"effective fpp {fpp:.3g} (from the bits set in its {bf.num_bytes}-byte bitset{values}) "
                           f"is below the policy's min_fpp {rule.min_fpp:g}")

    def _value_counts(self, chunk: ChunkInfo) -> str:
        """``; 1000 values, 12 distinct`` from the chunk's metadata, where it says."""
        try:
            meta = self.reader.column_metadata(self.reader.chunk(chunk.row_group, chunk.column_ordinal))
        except SecureBloomError:
            return ""
        parts = [f"{int(meta.num_values)} values"] if meta.num_values is not None else []
        stats = meta.statistics
        if stats is not None and stats.distinct_count is not None:
            parts.append(f"{int(stats.distinct_count)} distinct")
        return f"; chunk of {', '.join(parts)}" if parts else ""

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


def _filter_sizes(leaf: str, state: _Leaf, assumed_fpp: float) -> FilterSizes | None:
    """What ``leaf``'s filters show by their sizes (None: it has no filter in this file)."""
    if all(n is None for n, _ in state.sizes.values()):
        return None
    by_size: dict[tuple[int | None, int | None], list[int]] = {}
    for rg, size in sorted(state.sizes.items()):
        by_size.setdefault(size, []).append(rg)
    order = sorted(by_size, key=lambda s: (s[0] is not None, s[0] or 0, s[1] or 0), reverse=True)
    return FilterSizes(leaf=leaf, sizes=tuple((n, stored, tuple(by_size[(n, stored)])) for n, stored in order),
                       assumed_fpp=assumed_fpp, unseen=tuple(sorted(set(state.unseen))))


def _column_result(file: str, rule: ColumnRule, leaves: Sequence[str], states: dict[str, _Leaf],
                   assumed_fpp: float = DEFAULT_FPP) -> ColumnResult:
    name = rule.path
    if not leaves:
        return ColumnResult(column=name, findings=(Finding(Code.SENSITIVE_COLUMN_MISSING, file, name, name, ()),))
    findings: list[Finding] = []
    unchecked: list[str] = []
    sizes: list[FilterSizes] = []
    for leaf in leaves:
        state = states[leaf]
        shown = _filter_sizes(leaf, state, assumed_fpp)
        if shown is not None:
            sizes.append(shown)
            if rule.hide_filter_sizes and not shown.uniform:
                findings.append(Finding(Code.FILTER_SIZES_VARY, file, name, leaf, tuple(sorted(state.sizes)),
                                        shown.summary))
        for (code, detail), rgs in state.findings.items():
            findings.append(Finding(code, file, name, leaf, tuple(sorted(rgs)), detail))
        for reason, rgs in state.unchecked.items():
            unchecked.append(f"{location(leaf, rgs)}: {reason}")
    return ColumnResult(column=name, leaves=tuple(leaves), findings=tuple(findings),
                        unchecked=tuple(unchecked),
                        filters_checked=sum(states[leaf].filters_checked for leaf in leaves),
                        filter_sizes=tuple(sizes))


def _policy_of(sensitive_columns: Iterable[str] | None, allow_footer_key: bool, policy: Policy | None,
               hide_filter_sizes: bool = False) -> Policy:
    names = _dedupe(sensitive_columns or ())
    if policy is None:
        if not names:
            raise ValueError("sensitive_columns names no column (and no policy was given)")
        return Policy.from_sensitive(names, allow_footer_key=allow_footer_key, hide_filter_sizes=hide_filter_sizes)
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a Policy (secure_bloom.parquet.audit.policy.load_policy), got {type(policy).__name__}")
    if names:
        policy = policy.with_rules(ColumnRule(path=name, hide_filter_sizes=hide_filter_sizes) for name in names)
    if allow_footer_key and not policy.allow_footer_key:
        policy = Policy(rules=policy.rules, allow_footer_key=True, source=policy.source)
    return policy


def audit_file(path: str | os.PathLike[str], sensitive_columns: Sequence[str] | None = None, *,
               keys: KeyAccess = NO_KEYS, allow_footer_key: bool = False,
               policy: Policy | None = None, filesystem: Any = None, hide_filter_sizes: bool = False,
               assumed_fpp: float = DEFAULT_FPP) -> FileResult:
    """Audit one file against ``policy`` (or the sensitive names). Never raises for a problem
    with the file: that is a could-not-check result.

    ``hide_filter_sizes``: the sensitive names' rules require one filter size per column
    (``FILTER_SIZES_VARY``); ``assumed_fpp``: the rate the distinct counts implied by filter sizes
    assume (:class:`~secure_bloom.parquet.audit.report.FilterSizes`; the file does not say).

    ``path``: a local path, a URI (``s3://bucket/key?endpoint_override=...``) or a path on
    ``filesystem`` (a ``pyarrow.fs`` filesystem); on an object store every read is a range read
    (:attr:`FileResult.bytes_read` says how many bytes). The result names the file by
    :func:`~secure_bloom.parquet.file.sources.display_source` (a URI without its options).

    Parameters
    ----------
    path : str or os.PathLike
        A local path, a URI or a path on ``filesystem``.
    sensitive_columns : sequence of str, optional
        Sensitive column names.
    keys : KeyAccess
        The caller's keys.
    allow_footer_key : bool, default False
        Accept filters under the footer key.
    policy : Policy, optional
        A compliance policy.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem.

    Returns
    -------
    FileResult
        The file's audit (``error`` set when it could not be checked).

    Raises
    ------
    ValueError
        Neither ``policy`` nor ``sensitive_columns`` names a column.
    """
    file = display_source(path, filesystem)
    rules = _policy_of(sensitive_columns, allow_footer_key, policy, hide_filter_sizes)
    if isinstance(assumed_fpp, bool) or not isinstance(assumed_fpp, (int, float)) or not 0.0 < assumed_fpp < 1.0:
        raise ValueError(f"assumed_fpp must be in (0, 1), got {assumed_fpp!r}")
    try:
        with ParquetBloomReader(path, keys=keys, filesystem=filesystem) as reader:
            try:
                return _audit_reader(file, reader, rules, float(assumed_fpp))
            except OSError as e:
                raise storage_error(e, file) from None
    except (SecureBloomError, OSError) as e:
        return FileResult(file=file, error=_error_text(file, e), error_kind=error_kind(e))
    except Exception as e:  # noqa: BLE001 - a bug must not turn one file into a pass or stop the audit
        return FileResult(file=file, error=_error_text(file, e), error_kind=ErrorKind.INTERNAL_ERROR)


def _audit_reader(file: str, reader: ParquetBloomReader, policy: Policy, assumed_fpp: float) -> FileResult:
    columns = reader.columns
    matched = {i: tuple(leaf.path for leaf in rule.matches(columns)) for i, rule in enumerate(policy.rules)}
    states = {(i, leaf): _Leaf({}, {}) for i, leaves in matched.items() for leaf in leaves}
    if states:
        auditor = _FileAuditor(reader, policy)
        chunks = reader.chunks(with_sizes=False)
        by_leaf: dict[str, list[int]] = {}
        for i, leaf in states:
            by_leaf.setdefault(leaf, []).append(i)
        conflicts = {leaf: policy.conflict(leaf) for leaf in by_leaf if len(by_leaf[leaf]) > 1}
        for chunk in chunks:
            for i in by_leaf.get(chunk.column, ()):
                state = states[(i, chunk.column)]
                if conflicts.get(chunk.column):
                    state.cannot(str(conflicts[chunk.column]), chunk.row_group)
                    continue
                auditor.check_chunk(chunk, state, policy.rules[i])
        encrypted = {c.path for c in columns if c.encrypted}
        sensitive = [state for (i, leaf), state in states.items()
                     if leaf in encrypted and policy.rules[i].sensitive]
        if sensitive:
            _check_orphans(reader, chunks, sensitive)
    results = tuple(_column_result(file, rule, matched[i], {leaf: states[(i, leaf)] for leaf in matched[i]},
                                   assumed_fpp)
                    for i, rule in enumerate(policy.rules))
    params = reader.footer.params
    return FileResult(file=file, columns=results, row_groups=reader.num_row_groups,
                      footer_mode=str(reader.footer.mode), algorithm=None if params is None else params.algorithm,
                      bytes_read=reader.bytes_read)


def _dedupe(names: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for name in names:
        name = name.strip()
        if not name:
            continue
        if name not in out:
            out.append(name)
    return tuple(out)


def audit(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
          sensitive_columns: Iterable[str] | None = None,
          keys: KeyAccess = NO_KEYS, allow_footer_key: bool = False,
          progress: Progress | None = None, *, policy: Policy | None = None,
          filesystem: Any = None, timeouts: StoreTimeouts | None = None, hide_filter_sizes: bool = False,
          assumed_fpp: float = DEFAULT_FPP) -> AuditReport:
    """Audit every Parquet file under ``paths`` (files, or directories searched recursively)
    against ``policy`` (:func:`~secure_bloom.parquet.audit.policy.load_policy`) and/or the
    ``sensitive_columns`` (each: sensitive, filters allowed).

    ``paths`` may be object-store URIs (``s3://bucket/prefix?endpoint_override=...``), or paths
    on ``filesystem`` (a ``pyarrow.fs`` filesystem): prefixes are listed and objects recognised
    as locally (:func:`~secure_bloom.parquet.audit.discover.discover`), and files are read by range
    reads only.

    A problem with a file (missing, not Parquet, a key the caller lacks, a store that does not
    answer) is not raised: the file is "could not check" in the report, and the audit goes on.
    Leftovers of an interrupted ``attach`` in the directories searched are listed in
    ``report.notices``.

    Parameters
    ----------
    paths : str, os.PathLike or iterable of them
        Files, or directories searched recursively (Parquet files recognised by content), or
        object-store URIs (``s3://bucket/prefix?endpoint_override=...``: prefixes are listed and
        files read by range requests only), or paths on ``filesystem``.
    sensitive_columns : iterable of str, optional
        Column paths that are sensitive (filters allowed, if encrypted with the column's key).
    keys : KeyAccess, KMS client or pyarrow KmsClient factory, optional
        The keys to decrypt footers and filters with, the objects ``read_table(keys=...)`` takes
        (without them, encrypted files are "could not check").
    allow_footer_key : bool, default False
        Accept filters encrypted under the footer key.
    progress : callable, optional
        Called with progress events (the CLI's progress bar).
    policy : Policy, optional
        A compliance policy (:func:`~secure_bloom.parquet.audit.policy.load_policy`).
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem ``paths`` are on.
    timeouts : StoreTimeouts, optional
        How long each request to the store of a URI path waits
        (:class:`~secure_bloom.parquet.file.sources.StoreTimeouts`; default: those of
        ``store_timeouts``): a store that never answers makes its files "could not check"
        (``STORAGE_UNAVAILABLE``) after about ``attempts * request_s`` each.
    hide_filter_sizes : bool, default False
        Fail (``FILTER_SIZES_VARY``) a file whose sensitive columns' filters differ in size or
        module length, or that some row groups lack (sizes are visible without a key).
    assumed_fpp : float, default 0.01
        The fpp at which the report turns filter sizes into the distinct counts they imply.

    Returns
    -------
    AuditReport
        Per file and row group; ``report.is_compliant`` is True only when every file was fully
        checked and no rule was violated.

    Raises
    ------
    TypeError
        ``keys`` is none of those, or ``policy`` is not a :class:`~secure_bloom.parquet.audit.policy.Policy`.
    ValueError
        Neither ``policy`` nor ``sensitive_columns`` names a column to check, or
        ``assumed_fpp`` is outside (0, 1). A path that does not exist is not raised: it is a
        "could not check" file (``FILE_NOT_FOUND``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import KeyAccess, write_table
    >>> from secure_bloom.parquet.audit import audit
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> (tmp / "lake").mkdir()
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> _ = write_table(pa.table({"email": ["a@example.com", "b@example.com"]}), tmp / "lake" / "x.parquet", kms=kms,
    ...                 encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                       column_keys={"pii_key": ["email"]}),
    ...                 bloom_filter_options={"email": True})
    >>> report = audit(tmp / "lake", ["email"], keys=KeyAccess(kms=kms))
    >>> report.is_compliant, len(report.files), report.violations
    (True, 1, ())
    """
    with store_timeouts(timeouts):
        return _audit(paths, sensitive_columns, keys, allow_footer_key, progress, policy, filesystem,
                      hide_filter_sizes, assumed_fpp)


def _audit(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], sensitive_columns: Iterable[str] | None,
           keys: KeyAccess, allow_footer_key: bool, progress: Progress | None, policy: Policy | None,
           filesystem: Any, hide_filter_sizes: bool, assumed_fpp: float) -> AuditReport:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = list(paths)
    rules = _policy_of(sensitive_columns, allow_footer_key, policy, hide_filter_sizes)
    keys = as_key_access(keys) or NO_KEYS  # a KMS client or factory too, as write_table(kms=...) takes
    found = discover(paths, filesystem)
    targets = found.entries
    results: list[FileResult] = []
    for done, target in enumerate(targets):
        shown = display_source(target.path, filesystem)
        if progress is not None:
            progress(done, len(targets), shown)
        if target.problem is not None:
            results.append(FileResult(file=shown, error=f"{shown}: {target.problem}", error_kind=target.kind))
            continue
        results.append(audit_file(target.path, keys=keys, policy=rules, filesystem=filesystem,
                                  assumed_fpp=assumed_fpp))
    if progress is not None:
        progress(len(targets), len(targets), "")
    local = [os.fspath(p) for p in paths if is_local_source(os.fspath(p), filesystem)]
    directories = sorted({os.path.dirname(os.path.abspath(t.path)) for t in targets if t.origin in local}
                         | {os.path.abspath(p) for p in local if os.path.isdir(p)})
    notices = tuple(leftover.notice() for d in directories for leftover in find_leftovers(d))
    return AuditReport(files=tuple(results), sensitive_columns=rules.names, allow_footer_key=rules.allow_footer_key,
                       skipped=tuple((s.path, s.reason) for s in found.skipped), policy=rules if policy else None,
                       notices=notices)
