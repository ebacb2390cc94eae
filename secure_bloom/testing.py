"""Hypothesis strategies for users' own test suites (and ours).

Needs the ``hypothesis`` package (``pip install secure-bloom[test]``)::

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

from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("secure_bloom.testing needs hypothesis: pip install 'secure-bloom[test]'") from e

from .filter import SplitBlockBloomFilter
from .spec import MAX_ORDINAL
from .types import PhysicalType

__all__ = ["physical_types", "physical_values", "populated_filters", "aes_keys", "ordinals", "file_aads"]

_INT32 = st.integers(-(2**31), 2**32 - 1)  # signed and unsigned (UINT_32) ranges share the bits
_INT64 = st.integers(-(2**63), 2**64 - 1)


def physical_types(max_width: int = 40) -> st.SearchStrategy[tuple[PhysicalType, int | None]]:
    """``(physical_type, type_length)``; type_length is set for FIXED_LEN_BYTE_ARRAY and INT96."""
    plain = st.sampled_from([PhysicalType.INT32, PhysicalType.INT64, PhysicalType.FLOAT, PhysicalType.DOUBLE,
                             PhysicalType.BYTE_ARRAY]).map(lambda t: (t, None))
    fixed = st.integers(1, max_width).map(lambda w: (PhysicalType.FIXED_LEN_BYTE_ARRAY, w))
    return st.one_of(plain, fixed, st.just((PhysicalType.INT96, 12)))


def physical_values(physical_type: PhysicalType | str, type_length: int | None = None,
                    max_size: int = 100) -> st.SearchStrategy[Any]:
    """Valid values of ``physical_type`` as Python objects, including the edge cases writers
    meet: -0.0, NaN, infinities, subnormals, empty and long byte strings, full integer ranges."""
    ptype = PhysicalType.coerce(physical_type)
    if ptype is PhysicalType.INT32:
        return _INT32
    if ptype is PhysicalType.INT64:
        return _INT64
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


@st.composite
def populated_filters(draw: st.DrawFn, max_values: int = 200, max_log2_bytes: int = 12
                      ) -> tuple[SplitBlockBloomFilter, PhysicalType, int | None, list[Any]]:
    """``(filter, physical_type, type_length, values)``: a filter of 32 B .. 2^max_log2_bytes B
    with ``values`` inserted (small filters put many values in one block)."""
    ptype, width = draw(physical_types())
    values = draw(st.lists(physical_values(ptype, width), max_size=max_values))
    bf = SplitBlockBloomFilter(1 << draw(st.integers(5, max_log2_bytes)))
    bf.insert(values, ptype, type_length=width)
    return bf, ptype, width, values


def aes_keys() -> st.SearchStrategy[bytes]:
    """AES-128, -192 or -256 keys."""
    return st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n))


def ordinals() -> st.SearchStrategy[int]:
    """Row-group / column ordinals as the AAD allows them (0..32767)."""
    return st.integers(0, MAX_ORDINAL)


def file_aads() -> st.SearchStrategy[bytes]:
    """``aad_prefix | aad_file_unique``: an optional prefix and 8 unique bytes."""
    return st.tuples(st.binary(max_size=32), st.binary(min_size=8, max_size=8)).map(lambda t: t[0] + t[1])
