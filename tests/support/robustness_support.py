"""Shared pieces of the adversarial suites (tests/robustness/test_robustness_*.py): real seed inputs,
structure-aware mutation strategies, a read-bounded file object and an allocation probe.

Mutations are the ones a fuzzer applies to real inputs: bit flips, byte overwrites, truncations,
insertions, deletions, and edits of length fields (a little-endian u32 or a Thrift varint set to
an interesting size: 0, 1, 27, 28, 2^31 - 1, 2^31, 2^32 - 1, "2 GiB", around the real value).
Example counts follow the loaded Hypothesis profile (tests/conftest.py): :func:`examples` scales
a suite's count for profile "ci" (100 per test) up or down with the profile.
"""

from __future__ import annotations

import io
import struct
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.profiles import examples  # noqa: F401 (re-exported: the robustness tests import it from here)
from hypothesis import strategies as st

from secure_bloom.parquet import ParquetBloomReader
from support.paths import VECTORS_DIR

DATA = VECTORS_DIR
TESTING_KEYS = {"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"}

#: Every Parquet vector the suites mutate, with the keys of parquet-testing (explicit key ids).
PARQUET_VECTORS = (
    "data_index_bloom_encoding_stats.parquet",
    "data_index_bloom_encoding_with_length.parquet",
    "encrypt_columns_and_footer_bloom_filter.parquet.encrypted",
    "encrypt_columns_and_footer.parquet.encrypted",
    "encrypt_columns_and_footer_aad.parquet.encrypted",
    "encrypt_columns_and_footer_ctr.parquet.encrypted",
    "encrypt_columns_plaintext_footer.parquet.encrypted",
    "uniform_encryption.parquet.encrypted",
)

INTERESTING_U32 = (0, 1, 4, 27, 28, 29, 44, 100, 1024, 1 << 16, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE,
                   0xFFFFFFFF, 2 << 30)


def vector(name: str) -> bytes:
    return (DATA / name).read_bytes()


def varint(value: int) -> bytes:
    """Unsigned LEB128 (Thrift compact varint)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@st.composite
def _edit(draw: Any, data: bytes) -> bytes:
    buf = bytearray(data)
    kind = draw(st.sampled_from(("flip", "set", "truncate", "insert", "delete", "u32", "varint")))
    pos = draw(st.integers(0, len(buf)))
    if kind == "truncate":
        return bytes(buf[:pos])
    if kind == "insert":
        return bytes(buf[:pos] + draw(st.binary(min_size=1, max_size=16)) + buf[pos:])
    if not buf:
        return bytes(draw(st.binary(max_size=8)))
    pos = min(pos, len(buf) - 1)
    if kind == "flip":
        buf[pos] ^= 1 << draw(st.integers(0, 7))
    elif kind == "set":
        buf[pos] = draw(st.integers(0, 255))
    elif kind == "delete":
        del buf[pos:pos + draw(st.integers(1, 16))]
    elif kind == "u32":
        value = draw(st.sampled_from(INTERESTING_U32) | st.integers(0, 0xFFFFFFFF))
        buf[pos:pos + 4] = struct.pack("<I", value)
    else:
        value = draw(st.sampled_from((0, 1, 127, 128, 1 << 20, 0x7FFFFFFF, 1 << 31, 1 << 40, 1 << 63)))
        buf[pos:pos + draw(st.integers(1, 5))] = varint(value)
    return bytes(buf)


@st.composite
def mutated(draw: Any, seeds: st.SearchStrategy[bytes] | bytes, max_edits: int = 4) -> bytes:
    """A seed with 1..``max_edits`` fuzzer edits applied."""
    data = seeds if isinstance(seeds, bytes) else draw(seeds)
    for _ in range(draw(st.integers(1, max_edits))):
        data = draw(_edit(data))
    return data


class BoundedReadFile(io.RawIOBase):
    """A seekable read-only file over bytes that refuses any single read larger than ``limit``
    (an unbounded ``read()`` too): proof that a parser validates a size before reading it."""

    def __init__(self, data: bytes, limit: int) -> None:
        self._buf = io.BytesIO(data)
        self.limit = limit
        self.largest_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._buf.seek(offset, whence)

    def tell(self) -> int:
        return self._buf.tell()

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        if n is None or n < 0 or n > self.limit:
            raise AssertionError(f"read({n}) exceeds the {self.limit}-byte bound")
        self.largest_read = max(self.largest_read, n)
        return self._buf.read(n)


@contextmanager
def allocation_peak() -> Iterator[Callable[[], int]]:
    """``with allocation_peak() as peak: ...; peak()`` -> bytes allocated at the peak (tracemalloc)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = {"peak": 0}
    try:
        yield lambda: result["peak"]
    finally:
        result["peak"] = tracemalloc.get_traced_memory()[1] - base
        if started:
            tracemalloc.stop()


def read_everything(path: Path, keys: Any) -> dict[tuple[int, int], bytes | None]:
    """Open, describe and read every filter; {(rg, col): bitset or None}. Errors propagate."""
    out: dict[tuple[int, int], bytes | None] = {}
    with ParquetBloomReader(path, keys) as reader:
        reader.describe()
        for rg in range(reader.num_row_groups):
            for column in reader.columns:
                bf = reader.bloom_filter(rg, column.ordinal)
                out[(rg, column.ordinal)] = None if bf is None else bf.bitset
    return out
