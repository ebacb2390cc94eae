"""The BloomFilterHeader: Thrift compact bytes in front of every Bloom filter bitset.

Spec: Parquet BloomFilter.md "File Format" and parquet.thrift ``BloomFilterHeader``::

    struct BloomFilterHeader {
      1: required i32 numBytes;                         // bitset size, bytes
      2: required BloomFilterAlgorithm algorithm;       // union {1: SplitBlockAlgorithm BLOCK}
      3: required BloomFilterHash hash;                 // union {1: XxHash XXHASH}
      4: required BloomFilterCompression compression;   // union {1: Uncompressed UNCOMPRESSED}
    }

numBytes = 1024 serialises to the 16 bytes ``15 80 10 1c 1c 00 00 1c 1c 00 00 1c 1c 00 00 00``.
Readers accept only BLOCK / XXHASH / UNCOMPRESSED and 32 <= numBytes <= 128 MiB. numBytes need not
be a multiple of 32 (parquet-java caps filters at ``parquet.bloom.filter.max.bytes`` unrounded):
floor(numBytes / 32) blocks are indexed and the tail bytes are kept as stored (SPEC_NOTES 3).

Decrypted headers written by parquet-java carry zero padding after the Thrift STOP (it encrypts
its whole serialisation buffer: SPEC_NOTES section 6); :func:`parse_header_plaintext` accepts
that padding and nothing else.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from . import thrift_codec
from .errors import MalformedHeaderError
from .spec import BYTES_PER_BLOCK, MAX_HEADER_BYTES, SPEC_MAX_BITSET_BYTES

__all__ = [
    "BloomFilterHeaderInfo",
    "serialize_header",
    "parse_header",
    "parse_header_plaintext",
    "validate_num_bytes",
]

@dataclass(frozen=True)
class BloomFilterHeaderInfo:
    """A validated header. Algorithm, hash and compression are the only supported values.

    Parameters
    ----------
    num_bytes : int
        The bitset size.
    algorithm, hash, compression : str
        ``BLOCK``, ``XXHASH``, ``UNCOMPRESSED``.
    """

    num_bytes: int
    algorithm: str = "BLOCK"
    hash: str = "XXHASH"
    compression: str = "UNCOMPRESSED"


def validate_num_bytes(num_bytes: int, available: int | None = None) -> int:
    """Check a declared bitset size before anything is allocated for it.

    Parameters
    ----------
    num_bytes : int
        The declared size.
    available : int, optional
        The bytes there are.

    Returns
    -------
    int
        ``num_bytes``.

    Raises
    ------
    secure_bloom.errors.MalformedHeaderError
        Bad Thrift, an unsupported algorithm / hash / compression, or numBytes out of range.
    """
    if not 0 < num_bytes <= SPEC_MAX_BITSET_BYTES:
        raise MalformedHeaderError(f"numBytes {num_bytes} outside 1..{SPEC_MAX_BITSET_BYTES}")
    if num_bytes < BYTES_PER_BLOCK:
        # parquet-java would index block 0 of a filter with no whole block and read past its end.
        raise MalformedHeaderError(f"numBytes {num_bytes} is less than one {BYTES_PER_BLOCK}-byte block; "
                                   "no reader can probe such a filter")
    if available is not None and num_bytes > available:
        raise MalformedHeaderError(f"numBytes {num_bytes} exceeds the {available} bytes available")
    return num_bytes


def serialize_header(num_bytes: int) -> bytes:
    """The exact compact-protocol header every writer emits for a bitset of ``num_bytes``.

    Parameters
    ----------
    num_bytes : int
        The bitset size.

    Returns
    -------
    bytes
        The Thrift compact header.

    Raises
    ------
    secure_bloom.errors.MalformedHeaderError
        Bad Thrift, an unsupported algorithm / hash / compression, or numBytes out of range.
    """
    validate_num_bytes(num_bytes)
    m = thrift_codec.idl()
    header = m.BloomFilterHeader(
        numBytes=num_bytes,
        algorithm=m.BloomFilterAlgorithm(BLOCK=m.SplitBlockAlgorithm()),
        hash=m.BloomFilterHash(XXHASH=m.XxHash()),
        compression=m.BloomFilterCompression(UNCOMPRESSED=m.Uncompressed()),
    )
    return thrift_codec.serialize(header)


def parse_header(data: bytes | memoryview) -> tuple[BloomFilterHeaderInfo, int]:
    """Parse a header at the start of ``data``; returns ``(header, bytes consumed)``.

    Validates the unions and numBytes (not against the data left: the caller knows where the
    bitset lives and checks that with :func:`validate_num_bytes`).

    Parameters
    ----------
    data : bytes-like
        Starts with a header.

    Returns
    -------
    (BloomFilterHeaderInfo, int)
        The header and the bytes it took.

    Raises
    ------
    secure_bloom.errors.MalformedHeaderError
        Bad Thrift, an unsupported algorithm / hash / compression, or numBytes out of range.
    """
    view = memoryview(data)[:MAX_HEADER_BYTES]
    m = thrift_codec.idl()
    raw, consumed = thrift_codec.parse(m.BloomFilterHeader, view, error=MalformedHeaderError)
    if raw.algorithm.BLOCK is None:
        raise MalformedHeaderError("unsupported Bloom filter algorithm (only BLOCK exists)")
    if raw.hash.XXHASH is None:
        raise MalformedHeaderError("unsupported Bloom filter hash (only XXHASH exists)")
    if raw.compression.UNCOMPRESSED is None:
        raise MalformedHeaderError("unsupported Bloom filter compression (only UNCOMPRESSED exists)")
    validate_num_bytes(raw.numBytes)
    return BloomFilterHeaderInfo(num_bytes=raw.numBytes), consumed


def parse_header_plaintext(plaintext: bytes) -> BloomFilterHeaderInfo:
    """Parse a decrypted header module: Thrift, then only zero padding (parquet-java) or nothing.

    The few distinct headers of a dataset (one per bitset size) are parsed once each: the result
    depends on the bytes alone, and a header that fails raises every time (nothing is cached).

    Parameters
    ----------
    plaintext : bytes
        A decrypted header module.

    Returns
    -------
    BloomFilterHeaderInfo
        The header.

    Raises
    ------
    secure_bloom.errors.MalformedHeaderError
        Bad Thrift, an unsupported algorithm / hash / compression, or numBytes out of range.
    """
    return _parse_header_plaintext(bytes(plaintext))


@functools.lru_cache(maxsize=256)
def _parse_header_plaintext(plaintext: bytes) -> BloomFilterHeaderInfo:
    if len(plaintext) > MAX_HEADER_BYTES:
        raise MalformedHeaderError(
            f"decrypted header module is {len(plaintext)} bytes, more than {MAX_HEADER_BYTES}")
    header, consumed = parse_header(plaintext)
    padding = plaintext[consumed:]
    if padding.count(0) != len(padding):
        raise MalformedHeaderError(
            f"{len(padding)} bytes after the header's Thrift STOP are not zero padding")
    return header
