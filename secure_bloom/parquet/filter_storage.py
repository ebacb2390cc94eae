"""How a Bloom filter is stored, judged from its framing alone: plaintext, encrypted, or neither.

Spec: BloomFilter.md "File Format" (plaintext: Thrift ``BloomFilterHeader`` then the bitset) and
Encryption.md "Encrypted module serialization" (two GCM modules: ``len | nonce | ciphertext |
tag``, header then bitset; SPEC_NOTES 3-5). No key is needed, so this tells a compliance check
whether an encrypted column's filter was written in the clear (arrow-rs does), and lets
``inspect`` show it instead of failing to decrypt it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..errors import MalformedInputError, SecureBloomError
from ..header import parse_header
from ..spec import LENGTH_PREFIX, MAX_HEADER_BYTES, MIN_BITSET_BYTES, NONCE_LENGTH, SPEC_MAX_BITSET_BYTES, TAG_LENGTH

__all__ = ["FilterStorage", "classify_filter_bytes", "read_filter_storage", "describe_with_storage", "PLAINTEXT",
           "ENCRYPTED", "GARBAGE"]

PLAINTEXT = "plaintext"
ENCRYPTED = "encrypted"
GARBAGE = "garbage"
_GCM_OVERHEAD = NONCE_LENGTH + TAG_LENGTH
_HEAD_READ = MAX_HEADER_BYTES + LENGTH_PREFIX


@dataclass(frozen=True)
class FilterStorage:
    """How a filter is stored, from its framing alone (no key needed).

    ``form`` is :data:`PLAINTEXT` (Thrift header + bitset), :data:`ENCRYPTED` (two GCM modules
    with plausible length prefixes) or :data:`GARBAGE` (neither, or outside the data region);
    ``num_bytes`` is the bitset size the framing implies (None for garbage).
    """

    form: str
    num_bytes: int | None = None
    detail: str = ""


def classify_filter_bytes(head: bytes, length: int | None, available: int,
                          read_at: Callable[[int, int], bytes]) -> FilterStorage:
    """Is the filter at some offset stored in plaintext, as two GCM modules, or neither?

    ``head`` holds the first bytes at the offset (up to ``MAX_HEADER_BYTES + 4``), ``length`` is
    ``bloom_filter_length`` (None in files before parquet-java 1.14), ``available`` the bytes from
    the offset to the footer, ``read_at(relative_offset, n)`` reads more. A plaintext header must
    parse and its bitset fit exactly; modules must be a header module of plausible size followed
    by a bitset module of ``28 + numBytes`` for a valid numBytes. The two forms cannot be
    confused: a plaintext header's first four bytes, read as a length prefix, exceed any header
    module, and a module's length prefix is not valid header Thrift.
    """
    limit = min(length, available) if length is not None else available
    try:
        header, used = parse_header(head)
    except MalformedInputError:
        pass
    else:
        total = used + header.num_bytes
        if (length is None and total <= available) or total == length:
            return FilterStorage(PLAINTEXT, header.num_bytes)
    if len(head) < LENGTH_PREFIX:
        return FilterStorage(GARBAGE, detail="too short")
    (first,) = struct.unpack_from("<I", head, 0)
    if not _GCM_OVERHEAD < first <= _GCM_OVERHEAD + MAX_HEADER_BYTES:
        return FilterStorage(GARBAGE, detail="neither a plaintext filter header nor an encrypted module")
    second_at = LENGTH_PREFIX + first
    if second_at + LENGTH_PREFIX > limit:
        return FilterStorage(GARBAGE, detail="the bitset module is missing")
    (second,) = struct.unpack_from("<I", read_at(second_at, LENGTH_PREFIX), 0)
    num_bytes = second - _GCM_OVERHEAD
    if not MIN_BITSET_BYTES <= num_bytes <= SPEC_MAX_BITSET_BYTES:
        return FilterStorage(GARBAGE, detail=f"the bitset module's length prefix {second} is invalid")
    end = second_at + LENGTH_PREFIX + second
    if (length is not None and end != length) or end > available:
        return FilterStorage(GARBAGE, detail=f"the modules take {end} bytes, bloom_filter_length is {length}")
    return FilterStorage(ENCRYPTED, num_bytes)


def read_filter_storage(raw: BinaryIO, offset: int, length: int | None, data_end: int) -> FilterStorage:
    """:func:`classify_filter_bytes` for the filter at ``offset`` of the open file ``raw``, whose
    data region ends (the footer starts) at ``data_end``."""
    available = data_end - offset
    if offset < 4 or available <= 0 or (length is not None and not 0 < length <= available):
        return FilterStorage(GARBAGE, detail=f"offset {offset} / length {length} lies outside the data region")

    def read_at(at: int, n: int) -> bytes:
        raw.seek(offset + at)
        return raw.read(n)

    head = read_at(0, min(_HEAD_READ, available, length if length is not None else available))
    return classify_filter_bytes(head, length, available, read_at)


def describe_with_storage(reader: Any) -> dict[str, Any]:
    """``reader.describe()`` with every filter's storage checked, for ``inspect``.

    Each chunk with a filter gains ``filter_storage`` (``plaintext`` / ``encrypted`` /
    ``unreadable`` / ``garbage``), ``filter_verified`` (read and, if encrypted, authenticated
    with the key) and ``filter_problem``: ``PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN`` or the read
    error. ``filter_num_bytes`` comes from the framing when the filter cannot be read. Unlike
    ``describe()``, a leaked or damaged filter is reported, not raised.
    """
    desc: dict[str, Any] = reader.describe(with_sizes=False)
    data_end = reader.tail.footer_offset
    with open(reader.path, "rb") as raw:
        for rg in desc["row_groups"]:
            for chunk in rg["chunks"]:
                chunk.update(filter_storage=None, filter_verified=None, filter_problem=None)
                if not chunk.get("has_bloom_filter"):
                    continue
                storage = read_filter_storage(raw, chunk["bloom_filter_offset"], chunk["bloom_filter_length"],
                                              data_end)
                chunk["filter_storage"] = storage.form
                chunk["filter_num_bytes"] = storage.num_bytes
                chunk["filter_verified"] = False
                if storage.form == GARBAGE:
                    chunk["filter_problem"] = storage.detail
                    continue
                if storage.form == PLAINTEXT and chunk["encrypted"]:
                    chunk["filter_problem"] = "PLAINTEXT_FILTER_ON_ENCRYPTED_COLUMN"
                    continue
                if storage.form == ENCRYPTED and not chunk["encrypted"]:
                    chunk["filter_problem"] = "an encrypted filter on a plaintext column"
                    continue
                if not chunk.get("key_available", True):
                    continue
                try:
                    bf = reader.bloom_filter(rg["row_group"], chunk["column_ordinal"])
                except (SecureBloomError, ValueError) as e:
                    chunk["filter_storage"] = "unreadable"
                    chunk["filter_problem"] = " ".join(str(e).split())
                    continue
                chunk["filter_verified"] = True
                chunk["filter_num_bytes"] = bf.num_bytes if bf is not None else None
    return desc
