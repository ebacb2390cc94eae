"""Per-column Bloom filter options for attach, and the writer's defaults.

Sizing follows parquet-java (BloomFilter.md "Sizing"; SPEC_NOTES 2): a filter is sized for the
chunk's distinct values (``ndv``, counted when not given) at false-positive rate ``fpp``, and
capped at ``max_bytes`` - by default parquet-java's ``parquet.bloom.filter.max.bytes`` (1 MiB,
:data:`~secure_bloom.spec.WRITER_DEFAULT_MAX_BYTES`),
well below the format's own limit (:data:`~secure_bloom.spec.SPEC_MAX_BITSET_BYTES`, 128 MiB).
The defaults live in :mod:`secure_bloom.spec`.

Length hiding (:class:`~secure_bloom.types.FilterSizing`, docs/security-model/filter-sizes.md):
a filter's size is visible without any key, so by default (``PER_ROW_GROUP``) it reveals each row
group's distinct count to within 2x. ``FIXED`` gives every filter of a column one size: from
``num_bytes`` when given, else from ``ndv`` (every row group sized for it), else for the largest
row group's distinct count, found once every row group is counted. Filters are then built at an
upper bound (:func:`build_num_bytes`) and folded down to that one size
(:meth:`~secure_bloom.filter.SplitBlockBloomFilter.folded`, exact for power-of-two sizes).
"""

from __future__ import annotations

import numbers

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...filter import optimal_num_bytes, round_num_bytes
from ...spec import DEFAULT_FPP, MIN_BITSET_BYTES, SPEC_MAX_BITSET_BYTES, WRITER_DEFAULT_MAX_BYTES
from ...types import FilterSizing
from ..file.schema import ColumnInfo, ColumnRef

__all__ = ["ColumnSpec", "DEFAULT_FPP", "WRITER_DEFAULT_MAX_BYTES", "FilterSizing", "column_specs", "check_fpp",
           "check_ndv", "check_sizing", "build_num_bytes", "needed_num_bytes", "size_cap"]


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
    """A distinct count a caller gives, checked (None: count the chunk's values): an int >= 1,
    pyarrow's rule for ``bloom_filter_options`` (``ndv`` 0 would size every filter to the
    32-byte minimum whatever the chunk holds).

    Parameters
    ----------
    ndv : int or None
        The value.

    Returns
    -------
    int or None
        It, as a Python int (numpy integers accepted).

    Raises
    ------
    ValueError
        Not an int >= 1.
    """
    if ndv is None:
        return None
    if isinstance(ndv, bool) or not isinstance(ndv, numbers.Integral) or ndv < 1:
        raise ValueError(f"ndv must be an int >= 1, got {ndv!r}")
    return int(ndv)


def check_sizing(sizing: Any, num_bytes: Any, max_bytes: int | None = None) -> tuple[FilterSizing, int | None]:
    """A column's sizing mode and fixed size, checked.

    Parameters
    ----------
    sizing : FilterSizing, str or None
        The mode; None: ``FIXED`` when ``num_bytes`` is given, else ``PER_ROW_GROUP``.
    num_bytes : int or None
        One bitset size for every filter of the column: a power of two from 32 bytes to
        ``max_bytes`` (128 MiB when None).
    max_bytes : int or None
        The writer's size cap (``bloom_filter_max_bytes``).

    Returns
    -------
    tuple of (FilterSizing, int or None)

    Raises
    ------
    ValueError
        An unknown mode, a bad ``num_bytes``, or ``num_bytes`` with ``PER_ROW_GROUP``.
    """
    mode = (FilterSizing.FIXED if num_bytes is not None else FilterSizing.PER_ROW_GROUP) if sizing is None \
        else FilterSizing.coerce(sizing)
    if num_bytes is None:
        return mode, None
    cap = SPEC_MAX_BITSET_BYTES if max_bytes is None else round_num_bytes(SPEC_MAX_BITSET_BYTES, max_bytes)
    if (isinstance(num_bytes, bool) or not isinstance(num_bytes, int) or not MIN_BITSET_BYTES <= num_bytes <= cap
            or num_bytes & (num_bytes - 1)):
        raise ValueError(f"num_bytes must be a power of two from {MIN_BITSET_BYTES} to {cap} (the size cap), "
                         f"got {num_bytes!r}")
    if mode is FilterSizing.PER_ROW_GROUP:
        raise ValueError("num_bytes gives every filter one size: it needs sizing 'fixed' (or no sizing)")
    return mode, num_bytes


def needed_num_bytes(distinct: int, ndv: int | None, fpp: float, max_bytes: int, num_bytes: int | None) -> int:
    """The bitset size one chunk needs: ``num_bytes`` when fixed by the caller, else sized for
    ``ndv`` (or the chunk's ``distinct`` count) at ``fpp``, capped at ``max_bytes``.

    Parameters
    ----------
    distinct : int
        The chunk's distinct count.
    ndv : int or None
        The configured distinct count (None: ``distinct``).
    fpp : float
    max_bytes : int
    num_bytes : int or None

    Returns
    -------
    int
        A power of two in [32, 128 MiB].

    Raises
    ------
    ValueError
        ``fpp`` out of (0, 1).
    """
    if num_bytes is not None:
        return num_bytes
    return optimal_num_bytes(distinct if ndv is None else ndv, fpp, max_bytes)


def build_num_bytes(sizing: FilterSizing, ndv: int | None, fpp: float, max_bytes: int, num_bytes: int | None,
                    distinct: int, bound_values: int | None = None) -> int:
    """The size to build a chunk's filter at: what it needs (:func:`needed_num_bytes`), except
    for ``FIXED`` sizing with neither ``num_bytes`` nor ``ndv``, where the one size is known only
    once every chunk is counted: an upper bound of every chunk's need, to fold down from
    (sized for ``bound_values``, the most values any chunk of the column holds, when known;
    else the cap).

    Parameters
    ----------
    sizing : FilterSizing
    ndv, fpp, max_bytes, num_bytes, distinct
        As :func:`needed_num_bytes`.
    bound_values : int or None
        At least as many values as any chunk of the column holds (None: unknown).

    Returns
    -------
    int
        A power of two, at least the chunk's need.

    Raises
    ------
    ValueError
        ``fpp`` out of (0, 1).
    """
    if sizing is FilterSizing.FIXED and num_bytes is None and ndv is None:
        return optimal_num_bytes(SPEC_MAX_BITSET_BYTES if bound_values is None else bound_values, fpp, max_bytes)
    return needed_num_bytes(distinct, ndv, fpp, max_bytes, num_bytes)


@dataclass(frozen=True)
class ColumnSpec:
    """A column to give Bloom filters, with its own options.

    ``path`` names the leaf (a dotted path, path parts, an ordinal or a ColumnInfo); ``ndv`` is
    the distinct count to size each chunk's filter for (None: count each chunk's values);
    ``fpp`` the false-positive rate (None: attach's ``fpp`` argument); ``sizing``
    (:class:`~secure_bloom.types.FilterSizing`, None: attach's ``sizing`` argument) and
    ``num_bytes`` (one size for all the column's filters; implies ``FIXED``) choose whether the
    filters' sizes may differ across row groups.

    Parameters
    ----------
    path : str, tuple of str, int or ColumnInfo
        The leaf: a dotted path, path parts, an ordinal or a ColumnInfo.
    ndv : int, optional
        The distinct count to size each chunk's filter for (None: count each chunk's values).
    fpp : float, optional
        The false-positive rate (None: attach's ``fpp`` argument).
    sizing : FilterSizing or str, optional
        ``"fixed"``: one size for all the column's filters (None: attach's ``sizing`` argument).
    num_bytes : int, optional
        That one size (a power of two; implies ``"fixed"``).

    Raises
    ------
    ValueError
        ``ndv`` is not an int >= 1, ``fpp`` not in (0, 1), ``sizing`` not a
        :class:`~secure_bloom.types.FilterSizing` value, or ``num_bytes`` not a power of two from
        32 bytes to 128 MiB (checked when the spec is made, before anything is read or written).

    Examples
    --------
    >>> from secure_bloom.parquet import ColumnSpec
    >>> ColumnSpec("ssn", fpp=0.001)
    ColumnSpec(path='ssn', ndv=None, fpp=0.001, sizing=None, num_bytes=None)
    """

    path: ColumnRef
    ndv: int | None = None
    fpp: float | None = None
    sizing: FilterSizing | None = None
    num_bytes: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ndv", check_ndv(self.ndv))
        if self.fpp is not None:
            check_fpp(self.fpp)
        if self.sizing is not None or self.num_bytes is not None:
            sizing, _ = check_sizing(self.sizing, self.num_bytes)
            object.__setattr__(self, "sizing", sizing)

    def resolved(self, info: ColumnInfo, fpp: float | Mapping[str, float],
                 ndv: int | Mapping[str, int] | None, sizing: FilterSizing = FilterSizing.PER_ROW_GROUP) -> ColumnSpec:
        """This spec for the leaf ``info``, each unset option taken from the call-wide ``fpp`` /
        ``ndv`` (one value, or a mapping leaf path -> value) and ``sizing``.

        Parameters
        ----------
        info : ColumnInfo
            The leaf this spec was matched to (its path becomes the spec's).
        fpp : float or mapping of str to float
            The call-wide false-positive rate; a leaf missing from a mapping gets
            :data:`DEFAULT_FPP`.
        ndv : int, mapping of str to int, or None
            The call-wide distinct count (None, or a leaf missing from a mapping: count each
            chunk's values).
        sizing : FilterSizing, default PER_ROW_GROUP
            The call-wide sizing.

        Returns
        -------
        ColumnSpec
            A new spec with ``path`` the leaf's dotted path and every option set (``ndv`` may
            stay None).

        Raises
        ------
        ValueError
            A call-wide value taken is out of range (the new spec checks it as any spec does).
        """

        return ColumnSpec(info.path,
                          ndv=self.ndv if self.ndv is not None else _per_column(ndv, info.path, None),
                          fpp=self.fpp if self.fpp is not None else float(_per_column(fpp, info.path, DEFAULT_FPP)),
                          sizing=self.sizing if self.sizing is not None else sizing, num_bytes=self.num_bytes)


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
