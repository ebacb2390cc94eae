"""Adversarial Parquet files for the file layer: tail, footer (plaintext, signed, encrypted with its
FileCryptoMetaData), column chunks and the filters they point at. Every vector in
tests/data/parquet-testing is mutated the way a fuzzer mutates files (biased to the tail, where
the metadata lives) and read completely: open, describe, every filter.

Invariant: only SecureBloomError subclasses; for an encrypted-footer file every answer that is
given is the original's (nothing there is unauthenticated except FileCryptoMetaData, whose
changes must fail); nothing reads or allocates by an unvalidated size.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.robustness_support import (DATA, PARQUET_VECTORS, TESTING_KEYS, allocation_peak, examples, mutated,
                                read_everything, vector)

from secure_bloom import thrift_codec
from secure_bloom.errors import (MalformedBitsetError, MalformedInputError, MalformedThriftError, NotParquetError,
                                 SecureBloomError)
from secure_bloom.parquet import KeyAccess, ParquetBloomReader
from secure_bloom.parquet.file.tail import read_tail

_WORK = Path(tempfile.mkdtemp(prefix="secure-bloom-robustness-"))


ORIGINAL = {name: read_everything(DATA / name, KeyAccess(explicit=TESTING_KEYS)) for name in PARQUET_VECTORS}


def _tail_biased(draw: Any, data: bytes) -> bytes:
    """Most edits land in the last 2 KiB (footer, filters); some anywhere."""
    window = draw(st.sampled_from((2048, 2048, 2048, len(data))))
    cut = max(0, len(data) - window)
    return data[:cut] + draw(mutated(data[cut:]))


@pytest.mark.parametrize("name", PARQUET_VECTORS)
@settings(max_examples=examples(60))
@given(data=st.data())
def test_mutated_real_files_raise_only_library_errors(name: str, data: st.DataObject) -> None:
    blob = _tail_biased(data.draw, vector(name))
    path = _WORK / f"mutated-{os.getpid()}-{name}"
    path.write_bytes(blob)
    try:
        got = read_everything(path, KeyAccess(explicit=TESTING_KEYS))
    except SecureBloomError:
        return
    finally:
        path.unlink()
    if name.endswith(".encrypted") and "plaintext_footer" not in name:
        # Encrypted footer: the answers given are the original ones (or there is an error above).
        assert got == ORIGINAL[name]


@settings(max_examples=examples(100))
@given(data=st.data())
def test_mutated_tails_raise_only_not_parquet(data: st.DataObject) -> None:
    import io

    blob = data.draw(mutated(vector(data.draw(st.sampled_from(PARQUET_VECTORS)))[-64:], max_edits=2))
    try:
        tail = read_tail(io.BytesIO(blob))
    except NotParquetError:
        return
    assert tail.footer_offset >= 4 and len(tail.footer) <= len(blob) - 12


def test_garbage_files_of_every_small_size() -> None:
    for size in range(0, 40):
        for fill in (b"\0", b"PAR1", b"PARE"):
            path = _WORK / f"garbage-{size}"
            path.write_bytes((fill * size)[:size])
            with pytest.raises(SecureBloomError):
                read_everything(path, KeyAccess(explicit=TESTING_KEYS))


def _with_metadata(name: str, edit: Any, hole: int = 0) -> Path:
    """The plaintext vector with its FileMetaData edited, and ``hole`` sparse bytes before the footer."""
    data = vector(name)
    import io

    tail = read_tail(io.BytesIO(data))
    m = thrift_codec.idl()
    md, _ = thrift_codec.parse(m.FileMetaData, tail.footer)
    edit(md)
    footer = thrift_codec.serialize(md)
    path = _WORK / f"edited-{name}"
    with open(path, "wb") as f:
        f.write(data[:tail.footer_offset])
        f.seek(hole, os.SEEK_CUR)
        f.write(footer + len(footer).to_bytes(4, "little") + b"PAR1")
    return path


def test_plaintext_bloom_filter_length_of_2_gib_is_refused_before_reading() -> None:
    """Regression: a plaintext chunk's bloom_filter_length was read in one piece when it fit the
    data region: a 2.1 GiB (sparse) file with bloom_filter_length = 2^31 - 1 read 2 GiB."""
    def edit(md: Any) -> None:
        md.row_groups[0].columns[0].meta_data.bloom_filter_length = 0x7FFFFFFF

    path = _with_metadata("data_index_bloom_encoding_with_length.parquet", edit, hole=0x80000000)
    try:
        with allocation_peak() as peak:
            with pytest.raises(MalformedBitsetError, match="exceeds the largest filter"):
                read_everything(path, KeyAccess())
        assert peak() < 64 << 20
    finally:
        path.unlink()


@pytest.mark.parametrize(("offset", "length"), [(0, 2064), (3, None), (-1, 2064), (1 << 40, 2064), (192, 0),
                                                (192, -5), (192, 1 << 30)])
def test_filter_locations_outside_the_data_region_are_refused(offset: int, length: int | None) -> None:
    def edit(md: Any) -> None:
        meta = md.row_groups[0].columns[0].meta_data
        meta.bloom_filter_offset, meta.bloom_filter_length = offset, length

    path = _with_metadata("data_index_bloom_encoding_with_length.parquet", edit)
    with pytest.raises(SecureBloomError):
        read_everything(path, KeyAccess())


@pytest.mark.parametrize("physical_type", [-1, 8, 14, 1 << 30])
def test_unknown_physical_type_is_malformed_thrift(physical_type: int) -> None:
    """Regression (atheris, fuzz_footer): PhysicalType(14) raised a bare ValueError."""
    def edit(md: Any) -> None:
        md.schema[1].type = physical_type

    path = _with_metadata("data_index_bloom_encoding_stats.parquet", edit)
    with pytest.raises(MalformedThriftError, match="unknown physical type"):
        read_everything(path, KeyAccess())


@pytest.mark.parametrize(("delta", "match"), [(-1, "numBytes 2048 exceeds the 2047 bytes available"),
                                              (1, "bloom_filter_length 2065 but header"),
                                              (-2000, "numBytes 2048 exceeds the 48 bytes available")])
def test_lying_bloom_filter_length_of_a_plaintext_filter_fails_after_its_one_read(delta: int, match: str) -> None:
    """Header and bitset are one read of bloom_filter_length bytes: a length that is not exactly
    header + bitset is refused (never a filter over the wrong bytes), and nothing more is read."""
    def edit(md: Any) -> None:
        md.row_groups[0].columns[0].meta_data.bloom_filter_length = 2064 + delta

    path = _with_metadata("data_index_bloom_encoding_with_length.parquet", edit)
    try:
        with ParquetBloomReader(path, KeyAccess()) as reader:
            before = len(reader.read_ranges)
            with pytest.raises(MalformedInputError, match=match):
                reader.bloom_filter(0, 0)
            assert reader.read_ranges[before:] == ((253, 2064 + delta),)
    finally:
        path.unlink()


def test_plaintext_filter_with_its_length_is_one_read() -> None:
    with ParquetBloomReader(DATA / "data_index_bloom_encoding_with_length.parquet", KeyAccess()) as reader:
        before = len(reader.read_ranges)
        bf = reader.bloom_filter(0, 0)
        assert reader.read_ranges[before:] == ((253, 2064),)
    with ParquetBloomReader(DATA / "data_index_bloom_encoding_stats.parquet", KeyAccess()) as reader:
        before = len(reader.read_ranges)
        other = reader.bloom_filter(0, 0)  # without bloom_filter_length: the header, then the bitset
        assert other is not None and other.num_bytes == 1024
        assert len(reader.read_ranges[before:]) == 2
    assert bf is not None and bf.num_bytes == 2048


@pytest.mark.parametrize("name", PARQUET_VECTORS)
def test_every_truncation_of_the_tail_is_not_parquet(name: str) -> None:
    """The tail is one read of the file's end (speculatively on object stores): a file cut
    anywhere in its last bytes is refused, whatever the read size."""
    import io

    from secure_bloom.parquet.file.tail import TAIL_READ_BYTES

    data = vector(name)
    for cut in range(1, min(len(data), 300)):
        for speculative in (0, 64, TAIL_READ_BYTES):
            with pytest.raises(NotParquetError):
                read_tail(io.BytesIO(data[:-cut]), speculative_bytes=speculative)


@pytest.mark.parametrize("name", PARQUET_VECTORS)
@pytest.mark.parametrize("speculative", [0, 8, 13, 100, 1 << 16])
def test_speculative_tail_reads_give_the_same_tail(name: str, speculative: int) -> None:
    import io

    data = vector(name)
    exact = read_tail(io.BytesIO(data))
    stream = io.BytesIO(data)
    assert read_tail(stream, speculative_bytes=speculative) == exact
