"""Files whose Bloom column has skewed per-row-group cardinality, and what their filters' sizes
show without any key (issue 33, docs/security-model/filter-sizes.md).

:func:`skewed_table` holds ``code`` (strings) and ``n`` (int64) whose row groups have 8, 300,
5000 and 60000 distinct values (:data:`SKEWED_NDV`, each row group :data:`ROWS_PER_GROUP` rows
when written with ``row_group_size=ROWS_PER_GROUP``). :func:`visible_sizes` reads, per row group,
the numBytes and the two module lengths (or the plaintext header length) straight from the file
bytes at the filter's offset, as anyone who can read the file can.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa

from secure_bloom.parquet import KeyAccess, ParquetBloomReader

#: Distinct values of each row group of :func:`skewed_table`.
SKEWED_NDV = (8, 300, 5000, 60000)
ROWS_PER_GROUP = 60000


def skewed_table(ndvs: tuple[int, ...] = SKEWED_NDV, rows: int = ROWS_PER_GROUP, seed: int = 7) -> pa.Table:
    """Row groups (of ``rows`` rows) with exactly ``ndvs`` distinct values each in ``code`` and
    ``n`` (every value of a group appears; the values differ per group)."""
    rng = np.random.default_rng(seed)
    ints = []
    base = 0
    for ndv in ndvs:
        values = np.concatenate([np.arange(ndv), rng.integers(0, ndv, rows - ndv)]) + base
        rng.shuffle(values)
        ints.append(values)
        base += ndv
    n = np.concatenate(ints).astype(np.int64)
    return pa.table({"id": pa.array(np.arange(n.size, dtype=np.int64)), "n": pa.array(n),
                     "code": pa.array([f"code-{v}" for v in n.tolist()])})


def visible_sizes(path: str | Path, column: str, keys: KeyAccess | None = None) -> list[tuple[int, ...] | None]:
    """Per row group, what the filter of ``column`` shows without its key: ``(numBytes, header
    module length, bitset module length)`` for an encrypted filter, ``(numBytes, header bytes)``
    for a plaintext one, None for no filter. The offsets come from the footer (``keys`` opens an
    encrypted footer; the lengths are read from the raw bytes, never decrypted)."""
    out: list[tuple[int, ...] | None] = []
    with ParquetBloomReader(path, keys) as reader:
        chunks = [c for c in reader.chunks(with_sizes=False) if c.column == column]
        data = Path(path).read_bytes()
    for chunk in sorted(chunks, key=lambda c: c.row_group):
        if not chunk.has_bloom_filter:
            out.append(None)
            continue
        at = chunk.bloom_filter_offset
        assert at is not None
        if chunk.encrypted:
            (header,) = struct.unpack_from("<I", data, at)
            (bitset,) = struct.unpack_from("<I", data, at + 4 + header)
            out.append((bitset - 28, header, bitset))
        else:
            length = chunk.bloom_filter_length
            assert length is not None
            num_bytes = 1 << (int(length).bit_length() - 1)  # the header is under 32 bytes, the bitset a power of two
            out.append((num_bytes, length - num_bytes))
    return out
