"""The result of a Bloom filter compliance audit: frozen values, JSON and JUnit XML.

One :class:`ColumnResult` per (file, sensitive column) is the unit a compliance team signs off:
it PASSES (no filter, or every filter encrypted with the column's own key), has VIOLATIONS
(:class:`Finding` with a :class:`Code`), could NOT be CHECKED (a key or the file was not
available: never a pass), or the column is MISSING from the file (a warning). A file that cannot
be opened at all has one :class:`FileResult` with ``error`` set.

Every (file, sensitive column) with filters also says what the filters' sizes show to anyone who
can read the file, without any key (:class:`FilterSizes`): the sizes across row groups and the
distinct counts they imply at an assumed fpp. A policy rule with ``hide_filter_sizes`` fails a
file whose filters of the column differ in size (``FILTER_SIZES_VARY``).

Exit status of a report (:attr:`AuditReport.exit_code`), in this order of precedence:
1 if any violation was found (whatever else could not be checked), else 2 if anything could not
be checked (a file or directory that could not be read, a file that is not Parquet, a missing
key) or a sensitive column matched no column in any file that was read (a misspelt name must
not pass), else 0. Files found and not read because they are not Parquet are listed in
``skipped`` and do not change the status.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ...display import visible, visible_lines
from ...filter import ndv_range
from ...spec import WRITER_DEFAULT_MAX_BYTES

__all__ = ["Code", "Severity", "Status", "Finding", "FilterSizes", "ColumnResult", "FileResult", "AuditReport",
           "EXPLANATIONS", "location", "format_row_groups"]


class Code(str, Enum):
    """What is wrong. The values are stable identifiers for scripts and dashboards."""

    PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN = "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"
    SENSITIVE_COLUMN_NOT_ENCRYPTED = "SENSITIVE_COLUMN_NOT_ENCRYPTED"
    FILTER_UNDER_FOOTER_KEY = "FILTER_UNDER_FOOTER_KEY"
    FILTER_UNREADABLE = "FILTER_UNREADABLE"
    SENSITIVE_COLUMN_MISSING = "SENSITIVE_COLUMN_MISSING"
    ORPHANED_PLAINTEXT_FILTER = "ORPHANED_PLAINTEXT_FILTER"
    # policy rules (secure_bloom.parquet.audit.policy)
    WRONG_MASTER_KEY = "WRONG_MASTER_KEY"
    FILTER_WRONG_MASTER_KEY = "FILTER_WRONG_MASTER_KEY"
    FILTER_REQUIRED_MISSING = "FILTER_REQUIRED_MISSING"
    FILTER_FORBIDDEN = "FILTER_FORBIDDEN"
    FILTER_FPP_TOO_LOW = "FILTER_FPP_TOO_LOW"
    FILTER_TOO_LARGE = "FILTER_TOO_LARGE"
    FILTER_SIZES_VARY = "FILTER_SIZES_VARY"


class Severity(str, Enum):
    """How bad a finding is: a violation fails the audit (exit 1); a warning is reported only."""

    VIOLATION = "violation"
    WARNING = "warning"


class Status(str, Enum):
    """Outcome of one (file, column) check, or of a whole file."""

    PASS = "pass"
    VIOLATION = "violation"
    COULD_NOT_CHECK = "could_not_check"
    MISSING = "missing"


#: Plain-language explanation of each code, for reports read by people who are not Parquet experts.
EXPLANATIONS = {
    Code.PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN:
        "the column is encrypted but its Bloom filter is stored in plaintext: anyone who can read "
        "the file can test which values the column holds (arrow-rs writes filters this way)",
    Code.SENSITIVE_COLUMN_NOT_ENCRYPTED:
        "the sensitive column is stored without encryption: its values (and any Bloom filter) are "
        "readable by anyone with the file",
    Code.FILTER_UNDER_FOOTER_KEY:
        "the Bloom filter is encrypted with the footer key, which every reader of the file's schema "
        "holds, instead of the column's own key",
    Code.FILTER_UNREADABLE:
        "the Bloom filter fails to authenticate or parse: the file was damaged or tampered with",
    Code.SENSITIVE_COLUMN_MISSING:
        "the file has no column with this name (check the spelling; nothing to leak here)",
    Code.ORPHANED_PLAINTEXT_FILTER:
        "the encrypted file holds a plaintext Bloom filter that no column references (left behind when "
        "a filter was replaced): anyone who can read the file can test it for values, and it may "
        "describe this column",
    Code.WRONG_MASTER_KEY:
        "the column is encrypted with a key wrapped by a master key the policy does not allow for it "
        "(whoever holds that master key can read the column)",
    Code.FILTER_WRONG_MASTER_KEY:
        "the column's Bloom filter is encrypted under a master key the policy does not allow for it",
    Code.FILTER_REQUIRED_MISSING:
        "the policy requires a Bloom filter on this column and the row group has none",
    Code.FILTER_FORBIDDEN:
        "the policy forbids a Bloom filter on this column and the row group has one",
    Code.FILTER_FPP_TOO_LOW:
        "the Bloom filter answers almost exactly (its false-positive rate is below the policy's minimum): "
        "on a low-cardinality column it is a dictionary in disguise for anyone holding its key",
    Code.FILTER_TOO_LARGE:
        "the Bloom filter's bitset is larger than the policy allows",
    Code.FILTER_SIZES_VARY:
        "the column's Bloom filters differ in size (or some row groups have none) across the file's row groups; "
        "sizes are visible without any key, so they reveal each row group's distinct count to within a factor "
        "of two (write with sizing 'fixed': docs/security-model/filter-sizes.md)",
}

_SEVERITY = {code: Severity.WARNING if code is Code.SENSITIVE_COLUMN_MISSING else Severity.VIOLATION
             for code in Code}


def location(leaf: str, row_groups: Sequence[int]) -> str:
    """``column 'a.b', row groups 0-3, 7``: where a finding applies.

    Parameters
    ----------
    leaf : str
        The leaf column path.
    row_groups : sequence of int
        The row groups concerned (empty: the whole file, no row groups named).

    Returns
    -------
    str
        ``column 'LEAF'``, then ``, row group N`` or ``, row groups`` and
        :func:`format_row_groups` of them.

    Raises
    ------
    None
        Nothing of its own.
    """
    where = f"column {leaf!r}"
    if row_groups:
        plural = "s" if len(set(row_groups)) > 1 else ""
        where += f", row group{plural} {format_row_groups(row_groups)}"
    return where


def format_row_groups(numbers: Sequence[int]) -> str:
    """``0-3, 7, 9, 10``: runs of three or more collapse to a range.

    Parameters
    ----------
    numbers : sequence of int
        Row group numbers, in any order, repeats allowed.

    Returns
    -------
    str
        The distinct numbers in ascending order, comma-separated; empty for none.

    Raises
    ------
    TypeError
        A number that does not compare with the others (sorting fails).
    """
    parts: list[str] = []
    nums = sorted(set(numbers))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{nums[i]}-{nums[j]}")
        else:
            parts.extend(str(n) for n in nums[i:j + 1])
        i = j + 1
    return ", ".join(parts)


@dataclass(frozen=True)
class Finding:
    """One problem with one sensitive column of one file, over the row groups where it occurs.

    Parameters
    ----------
    code : Code
        What is wrong (``PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN``, ...).
    file : str
        The file, as shown (no URI credentials).
    column : str
        The sensitive column or rule as given.
    leaf : str
        The leaf column path (a sensitive group name expands to its leaves).
    row_groups : tuple of int
        Where it occurs.
    detail : str, default ""
        More about it (a key id, a size).
    """

    code: Code
    file: str
    column: str
    leaf: str
    row_groups: tuple[int, ...]
    detail: str = ""

    @property
    def severity(self) -> Severity:
        """Violation, warning or notice, from the finding's code."""
        return _SEVERITY[self.code]

    @property
    def message(self) -> str:
        """One line for people: where (column, row groups), what, and the detail."""
        text = f"{location(self.leaf, self.row_groups)}: {EXPLANATIONS[self.code]}"
        return f"{text} ({self.detail})" if self.detail else text

    def to_dict(self) -> dict[str, Any]:
        """The finding as JSON-ready data (an item of ``violations`` / ``warnings`` in
        ``audit --json``, docs/reference/json.md).

        Returns
        -------
        dict
            ``code``, ``severity``, ``file``, ``column``, ``leaf``, ``row_groups`` (a list) and
            ``message`` (:attr:`message`, detail included).

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"code": self.code.value, "severity": self.severity.value, "file": self.file,
                "column": self.column, "leaf": self.leaf, "row_groups": list(self.row_groups),
                "message": self.message}


@dataclass(frozen=True)
class FilterSizes:
    """What the Bloom filters of one leaf in one file show without any key: their sizes.

    ``sizes`` holds one ``(num_bytes, stored_bytes, row_groups)`` per distinct size seen (the
    bitset size and the bytes header and bitset take in the file, both length prefixes included
    when encrypted; ``(None, None, ...)``: the row groups without a filter), largest first.
    ``unseen`` are the row groups whose filter location is in metadata the audit could not
    decrypt. ``assumed_fpp`` is the false-positive rate the implied counts assume the writer
    sized for (the file does not record it).

    Parameters
    ----------
    leaf : str
        The leaf column path.
    sizes : tuple of (int or None, int or None, tuple of int)
        ``(num_bytes, stored_bytes, row_groups)`` per distinct size, largest first.
    assumed_fpp : float
        The false-positive rate the implied distinct counts assume.
    unseen : tuple of int, default ()
        Row groups whose filter location the audit could not decrypt.
    """

    leaf: str
    sizes: tuple[tuple[int | None, int | None, tuple[int, ...]], ...]
    assumed_fpp: float
    unseen: tuple[int, ...] = ()

    @property
    def uniform(self) -> bool:
        """Every row group seen has a filter of one size (and equal module lengths)."""
        return len(self.sizes) <= 1 and all(n is not None for n, _, _ in self.sizes)

    def implied_ndv(self, num_bytes: int) -> tuple[int, int | None]:
        """The distinct counts a per-row-group sizing writer gives ``num_bytes`` at
        :attr:`assumed_fpp` (:func:`secure_bloom.filter.ndv_range`).

        Parameters
        ----------
        num_bytes : int
            A bitset size in bytes.

        Returns
        -------
        tuple of (int, int or None)
            Lowest and highest count (None: no upper bound).

        Raises
        ------
        ValueError
            ``num_bytes`` outside 32 bytes .. 128 MiB.
        """
        return ndv_range(num_bytes, self.assumed_fpp)

    def _size_text(self, num_bytes: int | None, stored: int | None, rgs: Sequence[int]) -> str:
        where = f"row group{'s' if len(rgs) > 1 else ''} {format_row_groups(rgs)}"
        if num_bytes is None:
            return f"no filter in {where}"
        low, high = self.implied_ndv(num_bytes)
        implied = f"{low}-{high}" if high is not None else f"over {low}"
        capped = " (or more, if capped there)" if high is not None and num_bytes >= WRITER_DEFAULT_MAX_BYTES else ""
        return f"{num_bytes} B ({stored} stored) in {where}: {implied} distinct{capped}"

    @property
    def summary(self) -> str:
        """One line: the sizes, where, and what each implies if sized per row group."""
        seen = sum(len(r) for _, _, r in self.sizes)
        unseen = f"; row groups {format_row_groups(self.unseen)} not seen" if self.unseen else ""
        if self.uniform:
            (num_bytes, stored, _), = self.sizes
            assert num_bytes is not None
            low, high = self.implied_ndv(num_bytes)
            most = f"{low}-{high}" if high is not None else f"over {low}"
            return (f"one filter size ({num_bytes} B, {stored} stored) in all {seen} row group{'s' if seen != 1 else ''}:"
                    f" per-row-group cardinality hidden; only the largest need shows ({most} distinct at fpp "
                    f"{self.assumed_fpp:g}, if sized for it){unseen}")
        sizes = "; ".join(self._size_text(n, stored, rgs) for n, stored, rgs in self.sizes)
        return (f"{len(self.sizes)} different filter sizes across {seen} row groups reveal per-row-group cardinality "
                f"(at fpp {self.assumed_fpp:g}: {sizes}{unseen})")

    def to_dict(self) -> dict[str, Any]:
        """The sizes as JSON-ready data (an item of a column's ``filter_sizes`` in
        ``audit --json``).

        Returns
        -------
        dict
            ``leaf``, ``uniform``, ``distinct_sizes``, ``assumed_fpp``, ``sizes`` (each with
            ``num_bytes``, ``stored_bytes``, ``row_groups`` and ``implied_ndv`` as
            ``[low, high]``, high None for no bound; all None for row groups without a filter),
            ``unseen_row_groups`` and ``summary``.

        Raises
        ------
        None
            Sizes come from validated headers, within what ``implied_ndv`` takes.
        """
        return {"leaf": self.leaf, "uniform": self.uniform, "distinct_sizes": len(self.sizes),
                "assumed_fpp": self.assumed_fpp,
                "sizes": [{"num_bytes": n, "stored_bytes": stored, "row_groups": list(rgs),
                           "implied_ndv": None if n is None else list(self.implied_ndv(n))}
                          for n, stored, rgs in self.sizes],
                "unseen_row_groups": list(self.unseen), "summary": self.summary}


@dataclass(frozen=True)
class ColumnResult:
    """The check of one sensitive column in one file.

    Parameters
    ----------
    column : str
        The sensitive column or rule as given.
    leaves : tuple of str
        The leaf columns the name matched.
    findings : tuple of Finding
        What is wrong with them.
    unchecked : tuple of str
        For a could-not-check result, what was missing (e.g. the column key), row groups included.
    filters_checked : int
        Filters read and checked.
    filter_sizes : tuple of FilterSizes
        What the filters' sizes show without a key, per leaf with filters.
    """

    column: str
    leaves: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    unchecked: tuple[str, ...] = ()
    filters_checked: int = 0
    #: What the filters' sizes show without a key, per leaf with filters (:class:`FilterSizes`).
    filter_sizes: tuple[FilterSizes, ...] = ()

    @property
    def status(self) -> Status:
        """The worst of the column's findings (violation, could not check, or ok)."""
        if any(f.severity is Severity.VIOLATION for f in self.findings):
            return Status.VIOLATION
        if self.unchecked:
            return Status.COULD_NOT_CHECK
        if not self.leaves:
            return Status.MISSING
        return Status.PASS

    def to_dict(self) -> dict[str, Any]:
        """The column's check as JSON-ready data (an item of a file's ``columns`` in
        ``audit --json``).

        Returns
        -------
        dict
            ``column``, ``status``, ``leaves``, ``filters_checked``, ``findings``,
            ``could_not_check`` and ``filter_sizes`` (lists of the items' ``to_dict``).

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"column": self.column, "status": self.status.value, "leaves": list(self.leaves),
                "filters_checked": self.filters_checked,
                "findings": [f.to_dict() for f in self.findings],
                "could_not_check": list(self.unchecked),
                "filter_sizes": [s.to_dict() for s in self.filter_sizes]}


@dataclass(frozen=True)
class FileResult:
    """The audit of one file.

    Parameters
    ----------
    file : str
        The file, as shown.
    columns : tuple of ColumnResult
        One per sensitive column or rule.
    row_groups : int
        Row groups in the file.
    error, error_kind : str, optional
        Set when the file could not be opened or its footer read (then ``columns`` is empty).
    footer_mode, algorithm : str, optional
        ``plaintext`` / ``signed`` / ``encrypted`` and ``AES_GCM_V1`` / ``AES_GCM_CTR_V1``.
    bytes_read : int
        Bytes of the file the audit read.
    """

    file: str
    columns: tuple[ColumnResult, ...] = ()
    row_groups: int = 0
    error: str | None = None
    error_kind: str | None = None
    #: ``plaintext`` / ``signed`` / ``encrypted`` and ``AES_GCM_V1`` / ``AES_GCM_CTR_V1`` (None when
    #: not encrypted). Bloom filter modules are GCM under either algorithm (specs/NOTES.md).
    footer_mode: str | None = None
    algorithm: str | None = None
    #: Bytes of the file the audit read (footer, filters, unreferenced gaps): on an object store,
    #: the bytes its range requests fetched.
    bytes_read: int = 0

    @property
    def status(self) -> Status:
        """The file's status: could not check (an error), violation, or ok."""
        if self.error is not None:
            return Status.COULD_NOT_CHECK
        statuses = {c.status for c in self.columns}
        for s in (Status.VIOLATION, Status.COULD_NOT_CHECK):
            if s in statuses:
                return s
        return Status.PASS

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every finding of the file's columns, in column order."""
        return tuple(f for c in self.columns for f in c.findings)

    def failure_lines(self) -> list[str]:
        """One line per violation (file, row groups, column, code, message) and per
        could-not-check reason; empty for a pass (what the pytest plugin's failures show).

        Returns
        -------
        list of str
            One ``COULD NOT CHECK [KIND] error`` line for a file that could not be opened; else
            ``FILE: row groups ..., column 'LEAF': CODE: message`` per violation (warnings left
            out), then ``FILE: COULD NOT CHECK reason`` per unchecked reason.

        Raises
        ------
        None
            Nothing of its own.
        """
        if self.error is not None:
            return [f"COULD NOT CHECK [{self.error_kind}] {self.error}"]
        lines = []
        for finding in self.findings:
            if finding.severity is Severity.VIOLATION:
                rgs = f"row groups {format_row_groups(finding.row_groups)}" if finding.row_groups else "file-wide"
                lines.append(f"{self.file}: {rgs}, column {finding.leaf!r}: {finding.code.value}: {finding.message}")
        for column in self.columns:
            if column.status is Status.COULD_NOT_CHECK:
                lines += [f"{self.file}: COULD NOT CHECK {reason}" for reason in column.unchecked]
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The file's audit as JSON-ready data (an item of ``files`` in ``audit --json``).

        Returns
        -------
        dict
            ``file``, ``status``, ``row_groups``, ``footer_mode``, ``algorithm``, ``error``
            (None, or ``{"kind", "message"}``), ``bytes_read`` and ``columns``.

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"file": self.file, "status": self.status.value, "row_groups": self.row_groups,

                "footer_mode": self.footer_mode, "algorithm": self.algorithm,
                "error": None if self.error is None else {"kind": self.error_kind, "message": self.error},
                "bytes_read": self.bytes_read, "columns": [c.to_dict() for c in self.columns]}


@dataclass(frozen=True)
class AuditReport:
    """Everything :func:`secure_bloom.parquet.audit.auditor.audit` found, in file order.

    Parameters
    ----------
    files : tuple of FileResult
        One per file checked.
    sensitive_columns : tuple of str
        The ``sensitive_columns`` given.
    allow_footer_key : bool, default False
        Whether filters under the footer key were accepted.
    skipped : tuple of (str, str)
        ``(path, reason)`` of each file found under a directory and not read (not Parquet).
    policy : Policy, optional
        The policy checked.
    notices : tuple of str
        Things worth knowing that are no verdict (leftovers of an interrupted attach).
    """

    files: tuple[FileResult, ...]
    sensitive_columns: tuple[str, ...]
    allow_footer_key: bool = False
    #: ``(path, reason)`` of each file found under a directory and not read (not Parquet).
    skipped: tuple[tuple[str, str], ...] = ()
    #: The policy checked, when one was given (a ``secure_bloom.parquet.audit.policy.Policy``).
    policy: Any = None
    #: Things worth knowing that are no verdict, e.g. leftovers of an interrupted ``attach``
    #: (``secure-bloom doctor`` removes them).
    notices: tuple[str, ...] = ()

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every finding, in file order."""
        return tuple(f for r in self.files for f in r.findings)

    @property
    def violations(self) -> tuple[Finding, ...]:
        """The findings that are violations."""
        return tuple(f for f in self.findings if f.severity is Severity.VIOLATION)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """The findings that are warnings."""
        return tuple(f for f in self.findings if f.severity is Severity.WARNING)

    @property
    def could_not_check(self) -> tuple[FileResult, ...]:
        """The files that could not be checked (never counted as passes)."""
        return tuple(r for r in self.files if r.status is Status.COULD_NOT_CHECK)

    @property
    def unknown_rules(self) -> tuple[int, ...]:
        """Indices (into :attr:`sensitive_columns`, the policy's rules) of the rules that matched
        no column in any file that was read (misspelt?). Tracked per rule, not per text: a
        literal ``path = "emai?"`` matching nothing stays unknown when a ``glob = "emai?"`` rule
        matches ``email``. Empty when no file could be read (that is already "could not check")."""
        read = [r for r in self.files if r.error is None]
        if not read:
            return ()
        return tuple(i for i in range(len(self.sensitive_columns))
                     if all(r.columns[i].status is Status.MISSING for r in read))

    @property
    def rule_labels(self) -> tuple[str, ...]:
        """One label per rule (:attr:`sensitive_columns`): its text, with ``" (glob)"`` after a
        glob whose text a path rule also has, so the two never read as one."""
        rules = getattr(self.policy, "rules", None)
        if rules is None or len(rules) != len(self.sensitive_columns):
            return self.sensitive_columns
        paths = {r.path for r in rules if not r.glob}
        return tuple(f"{r.path} (glob)" if r.glob and r.path in paths else r.path for r in rules)

    @property
    def unknown_columns(self) -> tuple[str, ...]:
        """The labels (:attr:`rule_labels`) of :attr:`unknown_rules`."""
        labels = self.rule_labels
        return tuple(labels[i] for i in self.unknown_rules)

    @property
    def is_compliant(self) -> bool:
        """True only if every file was fully checked, every sensitive name matched a column in
        some file, and nothing violated the policy."""
        return bool(self.files) and all(r.status is Status.PASS for r in self.files) and not self.unknown_columns

    @property
    def exit_code(self) -> int:
        """1 violations; else 2 could not check or unknown column; else 0 (module doc)."""
        if self.violations:
            return 1
        return 0 if self.is_compliant else 2

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able values (``audit --json``: ``summary``, ``files``, ``violations``).

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
        return {
            "compliant": self.is_compliant,
            "exit_code": self.exit_code,
            "sensitive_columns": list(self.sensitive_columns),
            "allow_footer_key": self.allow_footer_key,
            "policy": None if self.policy is None else self.policy.to_dict(),
            "summary": {
                "files": len(self.files),
                "compliant": sum(r.status is Status.PASS for r in self.files),
                "with_violations": sum(r.status is Status.VIOLATION for r in self.files),
                "could_not_check": len(self.could_not_check),
                "violations": len(self.violations),
                "warnings": len(self.warnings),
                "skipped": len(self.skipped),
                "bytes_read": sum(r.bytes_read for r in self.files),
            },
            "unknown_sensitive_columns": list(self.unknown_columns),
            "files": [r.to_dict() for r in self.files],
            "skipped": [{"path": path, "reason": reason} for path, reason in self.skipped],
            "violations": [f.to_dict() for f in self.violations],
            "warnings": [f.to_dict() for f in self.warnings],
            "notices": list(self.notices),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text.

        Parameters
        ----------
        indent : int or None, default 2
            Passed to ``json.dumps``.

        Returns
        -------
        str
            The ``audit --json`` result.

        Raises
        ------
        None
            Nothing of its own.
        """
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_junit_xml(self) -> str:
        """JUnit XML: one testcase per file x sensitive column (classname = file, name = column).

        Violations are ``<failure>``s, could-not-check results ``<error>``s, and a column missing
        from a file is ``<skipped>`` (a warning), so CI dashboards show each class distinctly. A
        sensitive name that matched no column in any file is one more ``<error>`` testcase.
        Every name and message is passed through :func:`~secure_bloom.display.visible`, so the
        XML is well-formed whatever bytes a file name holds.

        Returns
        -------
        str
            Well-formed XML, whatever the file names hold.

        Raises
        ------
        None
            Nothing of its own.
        """
        suite = ET.Element("testsuite", name="secure-bloom audit")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for result in self.files:
            for i, column in enumerate(self.rule_labels):  # one result per rule, in rule order
                counts["tests"] += 1
                case = ET.SubElement(suite, "testcase", classname=result.file, name=column)
                col = result.columns[i] if i < len(result.columns) else None
                if result.error is not None or col is None:
                    counts["errors"] += 1
                    msg = result.error or "not checked"
                    el = ET.SubElement(case, "error", type=result.error_kind or "COULD_NOT_CHECK", message=msg)
                    el.text = msg
                    continue
                status = col.status
                if status is Status.VIOLATION:
                    counts["failures"] += 1
                    bad = [f for f in col.findings if f.severity is Severity.VIOLATION]
                    el = ET.SubElement(case, "failure", type=",".join(sorted({f.code.value for f in bad})),
                                       message=bad[0].message)
                    el.text = "\n".join(f"{f.code.value}: {f.message}" for f in bad)
                elif status is Status.COULD_NOT_CHECK:
                    counts["errors"] += 1
                    el = ET.SubElement(case, "error", type="COULD_NOT_CHECK", message=col.unchecked[0])
                    el.text = "\n".join(col.unchecked)
                elif status is Status.MISSING:
                    counts["skipped"] += 1
                    warning = next((f.message for f in col.findings), "column not in file")
                    ET.SubElement(case, "skipped", message=warning)
                if col.filter_sizes:  # what the sizes show, for every column with filters
                    ET.SubElement(case, "system-out").text = "\n".join(
                        f"filter sizes of {s.leaf!r}: {s.summary}" for s in col.filter_sizes)
        for column in self.unknown_columns:
            counts["tests"] += 1
            counts["errors"] += 1
            case = ET.SubElement(suite, "testcase", classname="sensitive columns", name=column)
            msg = f"sensitive column {column!r} is in none of the files read (misspelt?): not a pass"
            ET.SubElement(case, "error", type="SENSITIVE_COLUMN_UNKNOWN", message=msg).text = msg
        for name, value in counts.items():
            suite.set(name, str(value))
        totals = {k: v for k, v in suite.attrib.items() if k != "name"}
        root = ET.Element("testsuites", {"name": "secure-bloom", **totals})
        root.append(suite)
        for el in root.iter():
            el.attrib = {k: visible(v) for k, v in el.attrib.items()}
            if el.text:
                el.text = visible_lines(el.text)
        ET.indent(root)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
