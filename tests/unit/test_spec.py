"""The formats' constants: named once (secure_bloom.spec), with the values their sources give."""

from __future__ import annotations

import inspect

from secure_bloom import spec
from secure_bloom.filter import optimal_num_bytes
from secure_bloom.parquet.write.attach import attach_bloom_filters
from secure_bloom.spark.build import build_bloom_filter


def test_spec_values() -> None:
    assert (spec.BYTES_PER_BLOCK, spec.MIN_BITSET_BYTES, spec.MAX_HEADER_BYTES) == (32, 32, 1024)
    assert spec.SPEC_MAX_BITSET_BYTES == 134_217_728 and spec.WRITER_DEFAULT_MAX_BYTES == 1_048_576
    assert spec.DEFAULT_FPP == 0.01
    assert (spec.NONCE_LENGTH, spec.TAG_LENGTH, spec.LENGTH_PREFIX, spec.MAX_ORDINAL) == (12, 16, 4, 32767)
    assert spec.JULIAN_DAY_OF_UNIX_EPOCH == 2_440_588 and spec.NANOS_PER_DAY == 86_400_000_000_000
    assert spec.NANOS_PER_UNIT == {"millis": 1_000_000, "micros": 1_000, "nanos": 1}


def test_the_two_size_caps_have_two_names() -> None:
    """The filter kernel may size up to the format's maximum; file writers default to parquet-java's cap."""
    assert optimal_num_bytes(10**9) == spec.SPEC_MAX_BITSET_BYTES
    assert inspect.signature(attach_bloom_filters).parameters["bloom_filter_max_bytes"].default == spec.WRITER_DEFAULT_MAX_BYTES
    assert inspect.signature(build_bloom_filter).parameters["bloom_filter_max_bytes"].default == spec.WRITER_DEFAULT_MAX_BYTES
