"""Which bytes of a Parquet file its footer references, and plaintext Bloom filters in the rest.

Spec: parquet.thrift ``ColumnMetaData`` (``dictionary_page_offset``, ``data_page_offset``,
``total_compressed_size``: the chunk's pages, headers included; ``bloom_filter_offset`` /
``bloom_filter_length``), ``ColumnChunk`` (``column_index_offset``/``_length``,
``offset_index_offset``/``_length``), ``RowGroup`` (``file_offset``, ``total_compressed_size``);
BloomFilter.md "File Format" (SPEC_NOTES 3, 5). Regions are half-open ``[start, end)``.

A Bloom filter that no column references any more (a tool replaced it and left its bytes) is
still readable by anyone with the file. :func:`find_plaintext_filters` looks for one in the
*gaps* between referenced regions: the canonical Thrift ``BloomFilterHeader`` every known writer
emits (``15 <zigzag varint numBytes> 1c 1c 00 00 1c 1c 00 00 1c 1c 00 00 00``), confirmed by the
strict header parser, whose bitset fits in the gap. Only gaps are read (normally a few bytes),
up to a byte budget.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from ...errors import MalformedInputError
from ...header import parse_header
from ...spec import MAX_HEADER_BYTES
from ...types import FilterForm
from .filter_io import read_filter_storage

__all__ = ["Region", "OrphanFilter", "metadata_regions", "merge", "gaps", "filter_extent",
           "find_plaintext_filters", "DEFAULT_SCAN_BUDGET"]

Region = tuple[int, int]

#: Gap bytes :func:`find_plaintext_filters` reads at most per file (beyond: reported as unscanned).
DEFAULT_SCAN_BUDGET = 256 << 20
_WINDOW = 1 << 20
_HEADER = re.compile(rb"\x15[\x80-\xff]{0,4}[\x00-\x7f]\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x1c\x1c\x00\x00\x00")
_HEADER_MAX = 20  # the longest match of _HEADER


@dataclass(frozen=True)
class OrphanFilter:
    """A plaintext Bloom filter (header + bitset) at ``offset``, ``length`` bytes in all.

    Parameters
    ----------
    offset : int
        Where it starts.
    length : int
        Header and bitset bytes.
    num_bytes : int
        The bitset size.
    """

    offset: int
    length: int
    num_bytes: int


def _span(start: Any, size: Any) -> Region | None:
    if start is None or size is None or start < 0 or size <= 0:
        return None
    return int(start), int(start) + int(size)


def _pages(meta: Any) -> Region | None:
    """A chunk's pages: from its first page (dictionary, else data) for total_compressed_size."""
    start = meta.data_page_offset
    dictionary = meta.dictionary_page_offset
    if start is not None and dictionary is not None and 4 <= dictionary < start:
        start = dictionary
    return _span(start, meta.total_compressed_size)


def metadata_regions(metadata: Any, chunk_metas: Iterable[Any] = ()) -> list[Region]:
    """Pages and page indexes the (decrypted) ``FileMetaData`` references: row groups' page
    ranges, the pages of every visible ColumnMetaData and of ``chunk_metas`` (decrypted
    ColumnMetaData of encrypted chunks), column and offset indexes. Bloom filters are not
    included: the caller adds those it keeps (see :func:`filter_extent`).

    Parameters
    ----------
    metadata : FileMetaData
        The decrypted footer.
    chunk_metas : iterable of ColumnMetaData
        Decrypted metadata of encrypted chunks.

    Returns
    -------
    list of (int, int)
        The referenced byte ranges.

    Raises
    ------
    None
        Nothing of its own.
    """
    out: list[Region] = []
    metas = list(chunk_metas)
    for rg in metadata.row_groups or ():
        out.append(_span(rg.file_offset, rg.total_compressed_size) or (0, 0))
        for cc in rg.columns or ():
            out.append(_span(cc.column_index_offset, cc.column_index_length) or (0, 0))
            out.append(_span(cc.offset_index_offset, cc.offset_index_length) or (0, 0))
            if cc.meta_data is not None:
                metas.append(cc.meta_data)
    for meta in metas:
        out.append(_pages(meta) or (0, 0))
    return merge(r for r in out if r[1] > r[0])


def merge(regions: Iterable[Region]) -> list[Region]:
    """Sorted, overlapping or touching regions joined.

    Parameters
    ----------
    regions : iterable of (int, int)
        ``(start, end)`` byte ranges.

    Returns
    -------
    list of (int, int)
        Sorted, disjoint ranges.

    Raises
    ------
    None
        Nothing of its own.
    """
    out: list[Region] = []
    for start, end in sorted(regions):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def gaps(regions: Sequence[Region], start: int, end: int) -> list[Region]:
    """The parts of ``[start, end)`` outside the merged ``regions``.

    Parameters
    ----------
    regions : sequence of (int, int)
        Referenced ranges.
    start : int
        The span's start.
    end : int
        The span's end.

    Returns
    -------
    list of (int, int)
        The unreferenced ranges.

    Raises
    ------
    None
        Nothing of its own.
    """
    out: list[Region] = []
    pos = start
    for r_start, r_end in regions:
        if r_start > pos:
            out.append((pos, min(r_start, end)))
        pos = max(pos, r_end)
        if pos >= end:
            break
    if pos < end:
        out.append((pos, end))
    return [g for g in out if g[1] > g[0]]


def filter_extent(raw: BinaryIO, offset: int, length: int | None, data_end: int) -> Region | None:
    """The bytes of the filter at ``offset`` (plaintext or encrypted, framing checked), or None
    when its framing is neither form and no length bounds it.

    Parameters
    ----------
    raw : binary file
        The open file.
    offset : int
        The filter's offset.
    length : int or None
        ``bloom_filter_length``.
    data_end : int
        Where the footer starts.

    Returns
    -------
    (int, int) or None
        The filter's byte range.

    Raises
    ------
    OSError
        The file or store cannot be read or written.
    """
    storage = read_filter_storage(raw, offset, length, data_end)
    if storage.form is FilterForm.GARBAGE:
        return None
    if length is not None:
        return offset, offset + length
    raw.seek(offset)
    head = raw.read(min(MAX_HEADER_BYTES + 8, data_end - offset))
    assert storage.num_bytes is not None
    if storage.form is FilterForm.PLAINTEXT:
        _, used = parse_header(head)
        return offset, offset + used + storage.num_bytes
    first = int.from_bytes(head[:4], "little")
    raw.seek(offset + 4 + first)
    second = int.from_bytes(raw.read(4), "little")
    return offset, offset + 8 + first + second


def find_plaintext_filters(raw: BinaryIO, holes: Sequence[Region], *,
                           budget: int = DEFAULT_SCAN_BUDGET) -> tuple[list[OrphanFilter], int]:
    """Plaintext filters lying wholly inside one of ``holes``; returns them and the number of
    hole bytes left unscanned because ``budget`` ran out (0: everything was scanned).

    Parameters
    ----------
    raw : binary file
        The open file.
    holes : sequence of (int, int)
        Unreferenced byte ranges.
    budget : int
        The most bytes to scan.

    Returns
    -------
    (list of OrphanFilter, int)
        The filters found and the bytes left unscanned.

    Raises
    ------
    OSError
        The file or store cannot be read or written.
    """
    found: list[OrphanFilter] = []
    unscanned = 0
    for start, end in holes:
        pos = start
        while pos < end:
            if budget <= 0:
                unscanned += end - pos
                break
            n = min(_WINDOW, end - pos, budget)
            raw.seek(pos)
            window = raw.read(n + _HEADER_MAX)[: end - pos]
            budget -= n
            next_pos = pos + n
            for match in _HEADER.finditer(window):
                at = pos + match.start()
                if at >= pos + n:
                    break
                try:
                    header, used = parse_header(window[match.start():match.start() + _HEADER_MAX])
                except MalformedInputError:
                    continue
                if at + used + header.num_bytes <= end:
                    found.append(OrphanFilter(at, used + header.num_bytes, header.num_bytes))
                    next_pos = at + used + header.num_bytes  # go on after its bitset
                    break
            pos = next_pos
    return found, unscanned
