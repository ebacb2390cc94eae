"""Test helpers for users' own test suites (and ours): compliance assertions and hypothesis strategies.

Compliance assertions (no extra dependency; they raise ``AssertionError`` with every problem)::

    from secure_bloom.testing import assert_compliant, assert_filter_encrypted, assert_probe

    def test_lake_is_compliant():
        assert_compliant("warehouse/customers", "compliance.toml", keys)

* :func:`assert_compliant` ``(paths, policy, keys)`` - the audit passes (violations and files that
  could not be checked both fail);
* :func:`assert_filter_encrypted` ``(path, column, keys, master_key=None)`` - every row group of
  ``column`` has a filter encrypted with the column's key (not the footer key, not plaintext),
  under ``master_key`` if given;
* :func:`assert_probe` ``(path, column, value, expected_row_groups, keys=None)`` - the filters say
  exactly those row groups may hold ``value``.

The pytest plugin (:mod:`secure_bloom.pytest_plugin`) adds the ``secure_bloom_audit`` fixture.

Hypothesis strategies (need ``hypothesis``: ``pip install 'secure-bloom[test]'``)::

    from hypothesis import given
    from secure_bloom.testing import physical_values, populated_filters

    @given(populated_filters())
    def test_my_reader_agrees(case):
        bf, ptype, type_length, values = case
        ...

* :func:`physical_values` - valid values of one Parquet physical type (what a column stores);
* :func:`physical_types` - a physical type (BOOLEAN excluded) with a width where it needs one;
* :func:`populated_filters` - a filter with the values inserted into it, and those values;
* :func:`aes_keys`, :func:`ordinals`, :func:`file_aads` - encryption parameters in their spec ranges.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .filter import SplitBlockBloomFilter
from .spec import MAX_ORDINAL
from .types import PhysicalType

if TYPE_CHECKING:
    from hypothesis import strategies as st

    from .parquet.audit.report import AuditReport
    from .parquet.file.keys import KeyAccess
    from .parquet.audit.policy import Policy
else:
    try:
        from hypothesis import strategies as st
    except ImportError:  # the compliance assertions work without hypothesis
        st = None

__all__ = ["assert_compliant", "assert_filter_encrypted", "assert_probe", "audit_report",
           "physical_types", "physical_values", "populated_filters", "aes_keys", "ordinals", "file_aads"]


def _need_hypothesis() -> None:
    if st is None:
        raise ImportError("secure_bloom.testing strategies need hypothesis: pip install 'secure-bloom[test]'")


# --- compliance assertions ------------------------------------------------------------------------


def audit_report(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 policy: Policy | str | os.PathLike[str] | None, keys: KeyAccess | None = None, *,
                 sensitive: Iterable[str] = ()) -> AuditReport:
    """The audit of ``paths`` against ``policy`` (a Policy or a TOML file) and ``sensitive`` names.

    Parameters
    ----------
    paths : str, os.PathLike or iterable of them
        Files or directories (searched as :func:`~secure_bloom.parquet.audit.auditor.audit` does).
    policy : Policy, str, os.PathLike or None
        A policy, or a TOML policy file (:func:`~secure_bloom.parquet.audit.policy.load_policy`).
    keys : KeyAccess, optional
        The keys to decrypt footers and filters with.
    sensitive : iterable of str, optional
        Sensitive column names, beside (or instead of) the policy.

    Returns
    -------
    AuditReport
        What :func:`~secure_bloom.parquet.audit.auditor.audit` returns.

    Raises
    ------
    secure_bloom.errors.PolicyError
        The policy file is invalid (the message names ``file:line``).
    TypeError, ValueError
        As :func:`~secure_bloom.parquet.audit.auditor.audit` raises them.
    """
    from .parquet.audit.auditor import audit
    from .parquet.file.keys import NO_KEYS
    from .parquet.audit.policy import Policy, load_policy

    rules = policy if isinstance(policy, Policy) or policy is None else load_policy(policy)
    return audit(paths, list(sensitive), keys=keys if keys is not None else NO_KEYS, policy=rules)


def assert_compliant(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                     policy: Policy | str | os.PathLike[str] | None, keys: KeyAccess | None = None, *,
                     sensitive: Iterable[str] = ()) -> AuditReport:
    """Fail with one line per violation or could-not-check result unless every file complies.

    Parameters
    ----------
    paths : str, os.PathLike or iterable of them
        Files or directories (searched as :func:`~secure_bloom.parquet.audit.auditor.audit` does).
    policy : Policy, str, os.PathLike or None
        A policy, or a TOML policy file (:func:`~secure_bloom.parquet.audit.policy.load_policy`).
    keys : KeyAccess, optional
        The keys to decrypt footers and filters with.
    sensitive : iterable of str, optional
        Sensitive column names, beside (or instead of) the policy.

    Returns
    -------
    AuditReport
        The report, when every file complies.

    Raises
    ------
    AssertionError
        A violation, or a file that could not be checked (never a pass).
    secure_bloom.errors.PolicyError
        The policy file is invalid.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from secure_bloom.parquet import attach_bloom_filters
    >>> from secure_bloom.testing import assert_compliant
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> pq.write_table(pa.table({"ssn": ["123-45-6789"]}), tmp / "plain.parquet")
    >>> _ = attach_bloom_filters(tmp / "plain.parquet", tmp / "leaky.parquet", ["ssn"])
    >>> (tmp / "plain.parquet").unlink()
    >>> assert_compliant(tmp, None, sensitive=["ssn"])
    Traceback (most recent call last):
    ...
    AssertionError: ...SENSITIVE_COLUMN_NOT_ENCRYPTED...
    """
    from .parquet.audit.report import Severity

    report = audit_report(paths, policy, keys, sensitive=sensitive)
    if report.is_compliant:
        return report
    lines = []
    for f in report.findings:
        if f.severity is Severity.VIOLATION:
            lines.append(f"{f.file}: {f.code.value}: {f.message}")
    for result in report.could_not_check:
        if result.error is not None:
            lines.append(f"{result.file}: COULD NOT CHECK: {result.error}")
        lines += [f"{result.file}: COULD NOT CHECK: {u}" for c in result.columns for u in c.unchecked]
    lines += [f"policy column {name!r} is in none of the files (misspelt?)" for name in report.unknown_columns]
    if not report.files:
        lines.append("no Parquet file was found")
    raise AssertionError("not compliant:\n" + "\n".join(lines))


def assert_filter_encrypted(path: str | os.PathLike[str], column: Any, keys: KeyAccess,
                            master_key: str | None = None) -> None:
    """Every row group of ``column`` has a Bloom filter that decrypts with the column's own key
    (not plaintext, not under the footer key unless the column itself is), under ``master_key``
    (its id in the key material) if given.

    Parameters
    ----------
    path : str or os.PathLike
        The Parquet file.
    column : str or tuple of str
        The leaf column.
    keys : KeyAccess
        Keys that open the file.
    master_key : str, optional
        The master key id the column key must be wrapped under.

    Raises
    ------
    AssertionError
        A row group without a filter, a plaintext filter, a filter under another key, or
        another master key.
    secure_bloom.errors.SecureBloomError
        The file cannot be read with ``keys``.
    """
    from .parquet.audit.auditor import audit_file
    from .parquet.audit.report import Status
    from .parquet.audit.policy import ColumnRule, FilterRequirement, Policy
    from .parquet.file.reader import ParquetBloomReader

    with ParquetBloomReader(path, keys=keys) as reader:
        info = reader.column(column)
    keys_rule = None if master_key is None else (master_key,)
    rule = ColumnRule(path=info.path, filter=FilterRequirement.REQUIRED, master_keys=keys_rule)
    result = audit_file(path, keys=keys, policy=Policy(rules=(rule,)))
    if result.status is not Status.PASS:
        raise AssertionError(f"{os.fspath(path)}: the Bloom filters of column {info.path!r} are not all "
                             "encrypted as required:\n" + "\n".join(result.failure_lines()))


def assert_probe(path: str | os.PathLike[str], column: Any, value: Any, expected_row_groups: Sequence[int],
                 keys: KeyAccess | None = None) -> None:
    """The row groups whose filters may hold ``value`` are exactly ``expected_row_groups``
    (a row group without a filter always may).

    Parameters
    ----------
    path : str or os.PathLike
        The Parquet file.
    column : str or tuple of str
        The leaf column.
    value : object
        The value to probe for.
    expected_row_groups : sequence of int
        The row groups that must answer "maybe" (and no other).
    keys : KeyAccess, optional
        Keys for an encrypted file.

    Raises
    ------
    AssertionError
        Other row groups answer "maybe".
    secure_bloom.errors.SecureBloomError
        The file or its filters cannot be read.
    """
    from .parquet.file.reader import ParquetBloomReader

    with ParquetBloomReader(path, keys=keys) as reader:
        got = reader.row_groups_maybe_containing(column, value)
    if sorted(got) != sorted(expected_row_groups):
        raise AssertionError(f"{os.fspath(path)}: column {column!r}, value {value!r}: row groups that may hold it "
                             f"are {got}, expected {sorted(expected_row_groups)}")


# --- hypothesis strategies ------------------------------------------------------------------------


_INT32 = (-(2**31), 2**32 - 1)  # signed and unsigned (UINT_32) ranges share the bits
_INT64 = (-(2**63), 2**64 - 1)


def physical_types(max_width: int = 40) -> st.SearchStrategy[tuple[PhysicalType, int | None]]:
    """``(physical_type, type_length)``; type_length is set for FIXED_LEN_BYTE_ARRAY and INT96.

    Parameters
    ----------
    max_width : int, default 40
        The widest FIXED_LEN_BYTE_ARRAY.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of ``(PhysicalType, int or None)``.

    Raises
    ------
    ImportError
        hypothesis is not installed.
    """
    _need_hypothesis()
    plain = st.sampled_from([PhysicalType.INT32, PhysicalType.INT64, PhysicalType.FLOAT, PhysicalType.DOUBLE,
                             PhysicalType.BYTE_ARRAY]).map(lambda t: (t, None))
    fixed = st.integers(1, max_width).map(lambda w: (PhysicalType.FIXED_LEN_BYTE_ARRAY, w))
    return st.one_of(plain, fixed, st.just((PhysicalType.INT96, 12)))


def physical_values(physical_type: PhysicalType | str, type_length: int | None = None,
                    max_size: int = 100) -> st.SearchStrategy[Any]:
    """Valid values of ``physical_type`` as Python objects, including the edge cases writers
    meet: -0.0, NaN, infinities, subnormals, empty and long byte strings, full integer ranges.

    Parameters
    ----------
    physical_type : PhysicalType or str
        The type.
    type_length : int, optional
        The width of FIXED_LEN_BYTE_ARRAY.
    max_size : int, default 100
        The longest BYTE_ARRAY value.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of values :meth:`SplitBlockBloomFilter.insert <secure_bloom.filter.SplitBlockBloomFilter.insert>` takes.

    Raises
    ------
    ImportError
        hypothesis is not installed.
    ValueError
        A FIXED_LEN_BYTE_ARRAY without ``type_length``, or BOOLEAN.
    """
    _need_hypothesis()
    ptype = PhysicalType.coerce(physical_type)
    if ptype is PhysicalType.INT32:
        return st.integers(*_INT32)
    if ptype is PhysicalType.INT64:
        return st.integers(*_INT64)
    if ptype is PhysicalType.FLOAT:
        return st.floats(width=32, allow_nan=True, allow_infinity=True)
    if ptype is PhysicalType.DOUBLE:
        return st.floats(allow_nan=True, allow_infinity=True)
    if ptype is PhysicalType.BYTE_ARRAY:
        return st.one_of(st.binary(max_size=max_size), st.text(max_size=max_size // 4))
    if ptype is PhysicalType.INT96:
        return st.binary(min_size=12, max_size=12)
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        if type_length is None:
            raise ValueError("FIXED_LEN_BYTE_ARRAY needs type_length")
        return st.binary(min_size=type_length, max_size=type_length)
    raise ValueError(f"{ptype.name} has no Bloom filter")


def populated_filters(max_values: int = 200, max_log2_bytes: int = 12
                      ) -> st.SearchStrategy[tuple[SplitBlockBloomFilter, PhysicalType, int | None, list[Any]]]:
    """``(filter, physical_type, type_length, values)``: a filter of 32 B .. 2^max_log2_bytes B
    with ``values`` inserted (small filters put many values in one block).

    Parameters
    ----------
    max_values : int, default 200
        The most values inserted.
    max_log2_bytes : int, default 12
        The largest filter, as a power of two.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of ``(filter, physical_type, type_length, values)``.

    Raises
    ------
    ImportError
        hypothesis is not installed.
    """
    _need_hypothesis()

    @st.composite
    def build(draw: st.DrawFn) -> tuple[SplitBlockBloomFilter, PhysicalType, int | None, list[Any]]:
        ptype, width = draw(physical_types())
        values = draw(st.lists(physical_values(ptype, width), max_size=max_values))
        bf = SplitBlockBloomFilter(1 << draw(st.integers(5, max_log2_bytes)))
        bf.insert(values, ptype, type_length=width)
        return bf, ptype, width, values

    result: st.SearchStrategy[tuple[SplitBlockBloomFilter, PhysicalType, int | None, list[Any]]] = build()
    return result


def aes_keys() -> st.SearchStrategy[bytes]:
    """AES-128, -192 or -256 keys.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of 16, 24 or 32 random bytes.

    Raises
    ------
    ImportError
        hypothesis is not installed.
    """
    _need_hypothesis()
    return st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n))


def ordinals() -> st.SearchStrategy[int]:
    """Row-group / column ordinals as the AAD allows them (0..32767).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of int.

    Raises
    ------
    ImportError
        hypothesis is not installed.
    """
    _need_hypothesis()
    return st.integers(0, MAX_ORDINAL)


def file_aads() -> st.SearchStrategy[bytes]:
    """``aad_prefix | aad_file_unique``: an optional prefix and 8 unique bytes.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of bytes.

    Raises
    ------
    ImportError
        hypothesis is not installed.
    """
    _need_hypothesis()
    return st.tuples(st.binary(max_size=32), st.binary(min_size=8, max_size=8)).map(lambda t: t[0] + t[1])
