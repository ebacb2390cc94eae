"""Per-column Bloom filter options for attach, and the writer's defaults.

Sizing follows parquet-java (BloomFilter.md "Sizing"; SPEC_NOTES 2): a filter is sized for the
chunk's distinct values (``ndv``, counted when not given) at false-positive rate ``fpp``, and
capped at ``max_bytes`` - by default parquet-java's ``parquet.bloom.filter.max.bytes`` (1 MiB,
:data:`~secure_bloom.spec.WRITER_DEFAULT_MAX_BYTES`),
well below the format's own limit (:data:`~secure_bloom.spec.SPEC_MAX_BITSET_BYTES`, 128 MiB).
The defaults live in :mod:`secure_bloom.spec`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...spec import DEFAULT_FPP, WRITER_DEFAULT_MAX_BYTES
from ..file.schema import ColumnInfo, ColumnRef

__all__ = ["ColumnSpec", "DEFAULT_FPP", "WRITER_DEFAULT_MAX_BYTES", "column_specs", "check_fpp", "check_ndv",
           "size_cap"]


def size_cap(bloom_filter_max_bytes: int, max_bytes: int | None) -> int:
    """The filter size cap: ``bloom_filter_max_bytes`` (its one name everywhere, parquet-java's
    ``parquet.bloom.filter.max.bytes``), or the deprecated ``max_bytes`` when that is given.

    Parameters
    ----------
    bloom_filter_max_bytes : int
        The cap.
    max_bytes : int or None
        The deprecated spelling.

    Returns
    -------
    int
        The cap in force.

    Raises
    ------
    TypeError
        Both are given.
    """
    if max_bytes is None:
        return bloom_filter_max_bytes
    import warnings

    warnings.warn("max_bytes= is deprecated: the filter size cap is bloom_filter_max_bytes=", DeprecationWarning,
                  stacklevel=3)
    if bloom_filter_max_bytes != WRITER_DEFAULT_MAX_BYTES and bloom_filter_max_bytes != max_bytes:
        raise TypeError("give bloom_filter_max_bytes= (max_bytes= is its deprecated name), not both")
    return max_bytes


def check_fpp(fpp: Any) -> float:
    """A false-positive probability, checked.

    Parameters
    ----------
    fpp : float
        The value.

    Returns
    -------
    float
        It, as a float.

    Raises
    ------
    ValueError
        Not a number in (0, 1).
    """
    if isinstance(fpp, bool) or not isinstance(fpp, (float, int)) or not 0.0 < fpp < 1.0:
        raise ValueError(f"fpp must be in (0, 1), got {fpp!r}")
    return float(fpp)


def check_ndv(ndv: Any) -> int | None:
    """A distinct count, checked (None: count the chunk's values).

    Parameters
    ----------
    ndv : int or None
        The value.

    Returns
    -------
    int or None
        It.

    Raises
    ------
    ValueError
        Not an int >= 0.
    """
    if ndv is not None and (isinstance(ndv, bool) or not isinstance(ndv, int) or ndv < 0):
        raise ValueError(f"ndv must be a non-negative int, got {ndv!r}")
    return ndv


@dataclass(frozen=True)
class ColumnSpec:
    """A column to give Bloom filters, with its own options.

    Parameters
    ----------
    path : str, tuple of str, int or ColumnInfo
        The leaf: a dotted path, path parts, an ordinal or a ColumnInfo.
    ndv : int, optional
        The distinct count to size each chunk's filter for (None: count each chunk's values).
    fpp : float, optional
        The false-positive rate (None: attach's ``fpp`` argument).

    Raises
    ------
    None
        Nothing when made; attach and the writers check ``ndv`` >= 1 and ``fpp`` in (0, 1)
        (``ValueError``) before they read or write anything.

    Examples
    --------
    >>> from secure_bloom.parquet import ColumnSpec
    >>> ColumnSpec("ssn", fpp=0.001)
    ColumnSpec(path='ssn', ndv=None, fpp=0.001)
    """

    path: ColumnRef
    ndv: int | None = None
    fpp: float | None = None

    def __post_init__(self) -> None:
        check_ndv(self.ndv)
        if self.fpp is not None:
            check_fpp(self.fpp)

    def resolved(self, info: ColumnInfo, fpp: float | Mapping[str, float],
                 ndv: int | Mapping[str, int] | None) -> ColumnSpec:
        """This spec for the leaf ``info``, each unset option taken from the call-wide ``fpp`` /
        ``ndv`` (one value, or a mapping leaf path -> value)."""
        return ColumnSpec(info.path,
                          ndv=self.ndv if self.ndv is not None else _per_column(ndv, info.path, None),
                          fpp=self.fpp if self.fpp is not None else float(_per_column(fpp, info.path, DEFAULT_FPP)))


def _per_column(option: Any, column: str, default: Any) -> Any:
    if isinstance(option, Mapping):
        return option.get(column, default)
    return default if option is None else option


def column_specs(columns: Iterable[ColumnRef | ColumnSpec], fpp: float | Mapping[str, float],
                 ndv: int | Mapping[str, int] | None) -> tuple[ColumnSpec, ...]:
    """``columns`` as specs, with the call-wide ``fpp`` and ``ndv`` (single values or mappings)
    checked; raises ValueError for no column or an option out of range.

    Parameters
    ----------
    columns : iterable of str or ColumnSpec
        The columns.
    fpp : float or mapping
        The call-wide fpp.
    ndv : int, mapping or None
        The call-wide ndv.

    Returns
    -------
    tuple of ColumnSpec
        One per column, options filled in.

    Raises
    ------
    ValueError
        No column, or an option out of range.
    """
    specs = tuple(c if isinstance(c, ColumnSpec) else ColumnSpec(c) for c in columns)
    if not specs:
        raise ValueError("columns must name at least one column")
    for p in (fpp.values() if isinstance(fpp, Mapping) else [fpp]):
        check_fpp(p)
    for n in (ndv.values() if isinstance(ndv, Mapping) else [ndv]):
        check_ndv(n)
    return specs
