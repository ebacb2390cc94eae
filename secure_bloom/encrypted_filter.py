"""Encrypted Bloom filters: the header and the bitset as two AES-GCM modules.

Spec: Parquet Encryption.md, "Encrypted module serialization" and the module types table;
BloomFilter.md "Encryption". On disk an encrypted filter is::

    len | nonce | GCM(BloomFilterHeader Thrift)  | tag     AAD = file_aad | 8 | rg | col
    len | nonce | GCM(bitset, numBytes bytes)    | tag     AAD = file_aad | 9 | rg | col

Both modules are always AES-GCM (also under AES_GCM_CTR_V1) and use the column's key (the footer
key for columns encrypted with it). The header module carries the exact Thrift bytes we write;
on read, zero padding after the Thrift STOP (parquet-java) is accepted. The bitset module must be
exactly ``28 + numBytes`` long, and its length prefix is checked before the bitset is read.

The public functions take the chunk's key, file AAD and ordinals as parquet-java's API does; each
also accepts them as one :class:`~secure_bloom.crypto.context.ChunkCryptoContext` (``context=``,
with the four positional arguments left out).
"""

from __future__ import annotations

from typing import BinaryIO

from .crypto.context import ChunkCryptoContext
from .crypto.gcm import GcmKey, decrypt_many
from .crypto.modules import (
    MODULE_OVERHEAD,
    ModuleType,
    ciphertext_length,
    decrypt_module,
    encrypt_module,
    module_aad,
    read_module,
)
from .errors import MalformedBitsetError, MalformedInputError, MalformedModuleError, TruncatedModuleError
from .filter import SplitBlockBloomFilter
from .header import parse_header_plaintext, serialize_header
from .spec import LENGTH_PREFIX, MAX_HEADER_BYTES, SPEC_MAX_BITSET_BYTES

__all__ = [
    "encrypt_bloom_filter",
    "decrypt_bloom_filter", "decrypt_bloom_filters",
    "decrypt_bloom_filter_with_length",
    "read_encrypted_bloom_filter", "read_encrypted_filter_num_bytes",
    "bloom_filter_aads",
    "COALESCED_FILTER_BYTES", "MAX_ENCRYPTED_FILTER_BYTES", "HEADER_READ_BYTES",
]

#: An encrypted filter whose ``bloom_filter_length`` is at most this is read in one piece (one
#: request on an object store); a larger (or lying) length costs at most this much before the
#: header module refutes it.
COALESCED_FILTER_BYTES = 4 << 20
#: The largest legal encrypted filter: two modules around a 1 KiB header and a 128 MiB bitset.
MAX_ENCRYPTED_FILTER_BYTES = 2 * MODULE_OVERHEAD + MAX_HEADER_BYTES + SPEC_MAX_BITSET_BYTES
#: Bytes read speculatively for the header module when ``bloom_filter_length`` is unknown (or
#: large): the module is about 45 bytes (4 + 12 + ~13 of Thrift + 16), so one read also holds the
#: bitset module's length prefix.
HEADER_READ_BYTES = 256


def _context(key: bytes | None, file_aad: bytes | None, row_group_ordinal: int | None,
             column_ordinal: int | None, context: ChunkCryptoContext | None) -> ChunkCryptoContext:
    loose = (key, file_aad, row_group_ordinal, column_ordinal)
    if context is not None:
        if any(arg is not None for arg in loose):
            raise TypeError("pass either context= or key, file_aad and both ordinals, not both")
        if not isinstance(context, ChunkCryptoContext):
            raise TypeError(f"context must be a ChunkCryptoContext, got {type(context).__name__}")
        return context
    if key is None or file_aad is None:
        raise TypeError("key and file_aad are required (or context=)")
    return ChunkCryptoContext(key, file_aad, row_group_ordinal, column_ordinal)  # type: ignore[arg-type]


def bloom_filter_aads(file_aad: bytes, row_group_ordinal: int, column_ordinal: int) -> tuple[bytes, bytes]:
    """AADs of the header (type 8) and bitset (type 9) modules of one column chunk
    (Encryption.md, "Additional Authenticated Data"; built by
    :func:`~secure_bloom.crypto.modules.module_aad`).

    Parameters
    ----------
    file_aad : bytes
        The file's AAD (AAD prefix + file unique).
    row_group_ordinal : int
        The row group's ordinal in the file (0..32767).
    column_ordinal : int
        The column's ordinal in the file (0..32767).

    Returns
    -------
    (bytes, bytes)
        The header module's AAD and the bitset module's: ``file_aad | type | row group |
        column`` (int16 little-endian ordinals).

    Raises
    ------
    TypeError
        ``file_aad`` is not bytes, or an ordinal not an int.
    ValueError
        An ordinal is None or outside 0..32767.
    """
    return (module_aad(file_aad, ModuleType.BLOOM_FILTER_HEADER, row_group_ordinal, column_ordinal),
            module_aad(file_aad, ModuleType.BLOOM_FILTER_BITSET, row_group_ordinal, column_ordinal))


def encrypt_bloom_filter(bf: SplitBlockBloomFilter, key: bytes | None = None, file_aad: bytes | None = None,
                         row_group_ordinal: int | None = None, column_ordinal: int | None = None, *,
                         context: ChunkCryptoContext | None = None) -> bytes:
    """Header module followed by bitset module, each with its 4-byte length prefix.

    The result is what ``bloom_filter_offset`` points at; its length is ``bloom_filter_length``.
    Each module is AES-GCM with a fresh random nonce, AAD module types 8 (header) and 9 (bitset).

    Parameters
    ----------
    bf : SplitBlockBloomFilter
        The filter to encrypt.
    key : bytes, optional
        The column's data key (16, 24 or 32 bytes); with ``file_aad`` and both ordinals, instead of
        ``context``.
    file_aad : bytes, optional
        The file's AAD (AAD prefix + file unique).
    row_group_ordinal : int, optional
        The row group's ordinal in the file (the AAD binds the filter to it).
    column_ordinal : int, optional
        The column's ordinal in the file.
    context : ChunkCryptoContext, optional
        Key, file AAD and ordinals in one value.

    Returns
    -------
    bytes
        The two modules, as a file stores them.

    Raises
    ------
    TypeError
        ``bf`` is not a :class:`~secure_bloom.filter.SplitBlockBloomFilter`, or neither a
        ``context`` nor a complete key / AAD / ordinals set is given.
    ValueError
        The key is not 16, 24 or 32 bytes, or an ordinal is out of range.
    secure_bloom.errors.KeyUsageLimitError
        The key has made 2^32 encryptions.

    Examples
    --------
    >>> import os
    >>> from secure_bloom import SplitBlockBloomFilter, decrypt_bloom_filter, encrypt_bloom_filter
    >>> bf = SplitBlockBloomFilter.for_ndv(100)
    >>> _ = bf.insert([1, 2, 3], "INT64")
    >>> key, file_aad = os.urandom(16), os.urandom(8)
    >>> blob = encrypt_bloom_filter(bf, key, file_aad, row_group_ordinal=0, column_ordinal=2)
    >>> decrypt_bloom_filter(blob, key, file_aad, 0, 2) == bf
    True
    >>> decrypt_bloom_filter(blob, key, file_aad, 1, 2)  # moved to another row group
    Traceback (most recent call last):
    ...
    secure_bloom.errors.ModuleAuthenticationError: ...
    """
    if not isinstance(bf, SplitBlockBloomFilter):
        raise TypeError(f"bf must be a SplitBlockBloomFilter, got {type(bf).__name__}")
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    return (encrypt_module(serialize_header(bf.num_bytes), ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_HEADER))
            + encrypt_module(bf.bitset, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_BITSET)))


def _open_header(view: memoryview, ctx: ChunkCryptoContext) -> tuple[int, int]:
    """Decrypt and parse the header module at the start of ``view``: ``(numBytes, bytes used)``."""
    header_plain, used = decrypt_module(view, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_HEADER),
                                        module_type=ModuleType.BLOOM_FILTER_HEADER, max_plaintext=MAX_HEADER_BYTES)
    return parse_header_plaintext(header_plain).num_bytes, used


def _check_bitset_prefix(prefix: bytes | memoryview, num_bytes: int) -> None:
    """The bitset module's length prefix must be exactly ``28 + numBytes`` (checked before its body)."""
    declared = int.from_bytes(prefix[:LENGTH_PREFIX], "little")
    expected = ciphertext_length(num_bytes)
    if declared != expected:
        raise MalformedModuleError(
            f"BLOOM_FILTER_BITSET: length prefix {declared}, expected exactly {expected} for numBytes={num_bytes}")


def _open_bitset(view: memoryview, ctx: ChunkCryptoContext, num_bytes: int) -> SplitBlockBloomFilter:
    """Decrypt the bitset module at the start of ``view`` (its prefix already checked when present)."""
    bitset, _ = decrypt_module(view, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_BITSET),
                               module_type=ModuleType.BLOOM_FILTER_BITSET, max_plaintext=num_bytes)
    if len(bitset) != num_bytes:
        raise MalformedBitsetError(f"decrypted bitset is {len(bitset)} bytes, the header says numBytes={num_bytes}")
    return SplitBlockBloomFilter.from_bitset(bitset)


def decrypt_bloom_filter_with_length(data: bytes | memoryview, key: bytes | None = None,
                                     file_aad: bytes | None = None, row_group_ordinal: int | None = None,
                                     column_ordinal: int | None = None, *,
                                     context: ChunkCryptoContext | None = None
                                     ) -> tuple[SplitBlockBloomFilter, int]:
    """Decrypt an encrypted filter at the start of ``data``.

    Parameters
    ----------
    data : bytes-like
        Starts with the header and bitset modules; what follows is the caller's.
    key : bytes, optional
        The column's data key (16, 24 or 32 bytes); with ``file_aad`` and both ordinals, instead of
        ``context``.
    file_aad : bytes, optional
        The file's AAD (AAD prefix + file unique).
    row_group_ordinal : int, optional
        The row group's ordinal in the file (the AAD binds the filter to it).
    column_ordinal : int, optional
        The column's ordinal in the file.
    context : ChunkCryptoContext, optional
        Key, file AAD and ordinals in one value.

    Returns
    -------
    (SplitBlockBloomFilter, int)
        The filter and the bytes its two modules took.

    Raises
    ------
    TypeError, ValueError
        Neither a ``context`` nor a complete key / AAD / ordinals set, or a key of the wrong length.
    secure_bloom.errors.ModuleAuthenticationError
        A module fails authentication: a wrong key, a filter of another chunk or file, a flipped
        byte (one error that does not say which).
    secure_bloom.errors.MalformedModuleError
        Length prefixes or sizes do not add up (``TruncatedModuleError`` for short data).
    secure_bloom.errors.MalformedHeaderError
        The decrypted header does not parse or names an unsupported algorithm.
    """
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    view = memoryview(data).cast("B")
    num_bytes, used = _open_header(view, ctx)
    rest = view[used:]
    if len(rest) >= LENGTH_PREFIX:
        _check_bitset_prefix(rest, num_bytes)
    return _open_bitset(rest, ctx, num_bytes), used + LENGTH_PREFIX + ciphertext_length(num_bytes)


def _decrypt_exact(view: memoryview, ctx: ChunkCryptoContext, what: str) -> SplitBlockBloomFilter:
    """The filter that fills ``view`` exactly; a size mismatch is refused before the bitset is
    decrypted (``what`` names the size in the message)."""
    return _open_exact(view, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_HEADER), ctx.aad(ModuleType.BLOOM_FILTER_BITSET),
                       what)


def _check_bitset_fills(view: memoryview, used: int, num_bytes: int, what: str) -> None:
    """The bitset module after the ``used`` bytes of the header module must fill ``view`` exactly
    (its prefix ``28 + numBytes``), checked before it is decrypted."""
    total = used + LENGTH_PREFIX + ciphertext_length(num_bytes)
    if len(view) < used + LENGTH_PREFIX:
        raise TruncatedModuleError(f"BLOOM_FILTER_BITSET: {what} ends inside the bitset module's length prefix")
    _check_bitset_prefix(view[used:], num_bytes)
    if len(view) < total:
        raise TruncatedModuleError(f"{what} is shorter than the modules ({used} + {total - used} bytes)")
    if len(view) > total:
        raise MalformedModuleError(
            f"{what} is longer than the modules ({used} + {total - used} bytes): {len(view) - total} trailing bytes")


def decrypt_bloom_filters(filters: list[bytes | memoryview], key: GcmKey, header_aads: list[bytes],
                          bitset_aads: list[bytes]) -> list[SplitBlockBloomFilter]:
    """Many encrypted filters of one key, each filling its buffer exactly: :func:`decrypt_bloom_filter`
    of each, with the same answers and errors, all their modules opened in one call into C (the
    GIL released) where the extension is built; without it, or when anything fails there, they
    are checked and opened one by one (cryptography), which names what fails.

    Parameters
    ----------
    filters : list of bytes-like
        Per filter: its bytes (``bloom_filter_length`` of them; messages name that length).
    key : GcmKey
        The chunks' data key.
    header_aads, bitset_aads : list of bytes
        Each filter's header module AAD (type 8) and bitset module AAD (type 9).

    Returns
    -------
    list of SplitBlockBloomFilter
        The filters, in order.

    Raises
    ------
    secure_bloom.errors.ModuleAuthenticationError
        A module fails authentication.
    secure_bloom.errors.MalformedModuleError
        Length prefixes or sizes do not add up (``TruncatedModuleError`` for short data).
    secure_bloom.errors.MalformedHeaderError
        A decrypted header does not parse or names an unsupported algorithm.
    """
    views = [memoryview(data) for data in filters]
    opened = _open_together(views, key, header_aads, bitset_aads)
    if opened is not None:
        return opened
    return [_open_exact(view, key, h, b, f"bloom_filter_length {len(view)}")
            for view, h, b in zip(views, header_aads, bitset_aads)]


def _open_together(views: list[memoryview], key: GcmKey, header_aads: list[bytes],
                   bitset_aads: list[bytes]) -> list[SplitBlockBloomFilter] | None:
    """Every filter's two modules opened in one call into C, None when the C binding is not in
    use or anything fails or does not add up: :func:`_open_exact` then checks them one by one
    and names what fails. It accepts exactly what :func:`_open_exact` accepts: a header module
    of at most ``MAX_HEADER_BYTES`` that parses, then a bitset module filling the rest, of numBytes."""
    modules: list[bytes | memoryview] = []
    aads: list[bytes] = []
    for view, header_aad, bitset_aad in zip(views, header_aads, bitset_aads):
        if len(view) < 2 * LENGTH_PREFIX:
            return None
        end = LENGTH_PREFIX + int.from_bytes(view[:LENGTH_PREFIX], "little")
        if end + LENGTH_PREFIX > len(view):
            return None
        modules += (view[:end], view[end:])
        aads += (header_aad, bitset_aad)
    plains = decrypt_many(key, modules, aads, MAX_HEADER_BYTES + SPEC_MAX_BITSET_BYTES)
    if plains is None:
        return None
    out = []
    for at in range(0, len(plains), 2):
        header, bitset = plains[at], plains[at + 1]
        if len(header) > MAX_HEADER_BYTES:
            return None
        try:
            num_bytes = parse_header_plaintext(header).num_bytes
        except MalformedInputError:
            return None
        if len(bitset) != num_bytes:
            return None
        out.append(SplitBlockBloomFilter.from_bitset(bitset))
    return out


def _open_exact(view: memoryview, key: bytes | GcmKey, header_aad: bytes, bitset_aad: bytes,
                what: str) -> SplitBlockBloomFilter:
    """The filter that fills ``view`` exactly, checked step by step: the header module opened and
    parsed, the bitset module's size refused before it is decrypted when it does not match
    (``what`` names the size in messages), then the bitset opened."""
    header_plain, used = decrypt_module(view, key, header_aad, module_type=ModuleType.BLOOM_FILTER_HEADER,
                                        max_plaintext=MAX_HEADER_BYTES)
    num_bytes = parse_header_plaintext(header_plain).num_bytes
    _check_bitset_fills(view, used, num_bytes, what)
    bitset, _ = decrypt_module(view[used:], key, bitset_aad, module_type=ModuleType.BLOOM_FILTER_BITSET,
                               max_plaintext=num_bytes)
    if len(bitset) != num_bytes:
        raise MalformedBitsetError(f"decrypted bitset is {len(bitset)} bytes, the header says numBytes={num_bytes}")
    return SplitBlockBloomFilter.from_bitset(bitset)


def decrypt_bloom_filter(data: bytes | memoryview, key: bytes | None = None, file_aad: bytes | None = None,
                         row_group_ordinal: int | None = None, column_ordinal: int | None = None, *,
                         context: ChunkCryptoContext | None = None) -> SplitBlockBloomFilter:
    """Decrypt an encrypted filter that fills ``data`` exactly (trailing bytes are an error).

    Parameters
    ----------
    data : bytes-like
        The header and bitset modules (:func:`encrypt_bloom_filter`'s output).
    key : bytes, optional
        The column's data key (16, 24 or 32 bytes); with ``file_aad`` and both ordinals, instead of
        ``context``.
    file_aad : bytes, optional
        The file's AAD (AAD prefix + file unique).
    row_group_ordinal : int, optional
        The row group's ordinal in the file (the AAD binds the filter to it).
    column_ordinal : int, optional
        The column's ordinal in the file.
    context : ChunkCryptoContext, optional
        Key, file AAD and ordinals in one value.

    Returns
    -------
    SplitBlockBloomFilter
        The filter.

    Raises
    ------
    TypeError, ValueError
        Neither a ``context`` nor a complete key / AAD / ordinals set, or a key of the wrong length.
    secure_bloom.errors.ModuleAuthenticationError
        A module fails authentication: a wrong key, a filter of another chunk or file, a flipped
        byte (one error that does not say which).
    secure_bloom.errors.MalformedModuleError
        Length prefixes or sizes do not add up (``TruncatedModuleError`` for short data).
    secure_bloom.errors.MalformedHeaderError
        The decrypted header does not parse or names an unsupported algorithm.
    secure_bloom.errors.MalformedBitsetError
        Bytes follow the bitset module.
    """
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    view = memoryview(data).cast("B")
    return _decrypt_exact(view, ctx, f"the data ({len(view)} bytes)")


def _check_filter_length(length: int) -> None:
    if length < 2 * MODULE_OVERHEAD:
        raise MalformedModuleError(f"bloom_filter_length {length} is too small for two encrypted modules")
    if length > MAX_ENCRYPTED_FILTER_BYTES:
        raise MalformedModuleError(
            f"bloom_filter_length {length} exceeds the largest encrypted filter ({MAX_ENCRYPTED_FILTER_BYTES} bytes)")


def _read_header_module(stream: BinaryIO, offset: int, ctx: ChunkCryptoContext,
                        length: int | None) -> tuple[int, int, bytes]:
    """Decrypt the header module at ``offset`` from one speculative read of :data:`HEADER_READ_BYTES`
    bytes (more only if the module is longer); ``(numBytes, module size, bytes read)``. Checks
    ``length`` against numBytes; leaves the stream after the bytes read."""
    if offset < 0:
        raise MalformedModuleError(f"negative Bloom filter offset {offset}")
    if length is not None:
        _check_filter_length(length)
    stream.seek(offset)
    head = stream.read(HEADER_READ_BYTES)
    try:
        num_bytes, used = _open_header(memoryview(head), ctx)
    except TruncatedModuleError:
        if len(head) < HEADER_READ_BYTES:  # the file ended
            raise
        # The prefix was validated (<= MAX_HEADER_BYTES of plaintext) before Truncated was raised.
        head += stream.read(LENGTH_PREFIX + int.from_bytes(head[:LENGTH_PREFIX], "little") - len(head))
        num_bytes, used = _open_header(memoryview(head), ctx)
    expected = ciphertext_length(num_bytes)
    if length is not None and length != used + LENGTH_PREFIX + expected:
        raise MalformedModuleError(
            f"bloom_filter_length {length} does not match the modules ({used} + {LENGTH_PREFIX + expected} bytes)")
    return num_bytes, used, head


def read_encrypted_filter_num_bytes(stream: BinaryIO, offset: int, key: bytes | None = None,
                                    file_aad: bytes | None = None, row_group_ordinal: int | None = None,
                                    column_ordinal: int | None = None, *, length: int | None = None,
                                    context: ChunkCryptoContext | None = None) -> int:
    """numBytes of an encrypted filter, from its authenticated header module alone (the bitset is
    not read: sizes for ``inspect`` cost one small read per chunk, not the bitset).

    Parameters
    ----------
    stream : binary file
        Seekable, opened for reading.
    offset : int
        Where the filter starts (``bloom_filter_offset``).
    key : bytes, optional
        The column's data key (16, 24 or 32 bytes); with ``file_aad`` and both ordinals, instead of
        ``context``.
    file_aad : bytes, optional
        The file's AAD (AAD prefix + file unique).
    row_group_ordinal : int, optional
        The row group's ordinal in the file.
    column_ordinal : int, optional
        The column's ordinal in the file.
    length : int, optional
        ``bloom_filter_length`` when the file stores it: must equal what the two modules take.
    context : ChunkCryptoContext, optional
        Key, file AAD and ordinals in one value.

    Returns
    -------
    int
        The bitset's size in bytes as the authenticated header states it: at least one 32-byte
        block, at most the spec's 128 MiB.


    Raises
    ------
    TypeError, ValueError
        Neither a ``context`` nor a complete key / AAD / ordinals set, or a key of the wrong length.
    secure_bloom.errors.ModuleAuthenticationError
        The header module fails authentication (one error that does not say why).
    secure_bloom.errors.MalformedModuleError
        A negative offset, a length prefix out of bounds, or ``length`` not matching the modules
        (``TruncatedModuleError`` when the file ends inside the header module).
    secure_bloom.errors.MalformedHeaderError
        The decrypted header does not parse or names an unsupported algorithm.
    OSError
        The stream cannot be read.
    """

    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    return _read_header_module(stream, offset, ctx, length)[0]


def read_encrypted_bloom_filter(stream: BinaryIO, offset: int, key: bytes | None = None,
                                file_aad: bytes | None = None, row_group_ordinal: int | None = None,
                                column_ordinal: int | None = None, *, length: int | None = None,
                                context: ChunkCryptoContext | None = None) -> SplitBlockBloomFilter:
    """Read an encrypted filter from a seekable binary file at ``offset``, in as few reads as its
    size allows, never sized by an unvalidated length.

    ``length`` (``bloom_filter_length``, absent in files before parquet-java 1.14) must, if given,
    equal the bytes the two modules take. Up to :data:`COALESCED_FILTER_BYTES` it is read in one
    piece (header and bitset modules together; on an object store, one request). Otherwise the
    header module is read first (one speculative read that also holds the bitset module's length
    prefix), the bitset module's prefix must be exactly ``28 + numBytes``, and only then is the
    rest of the bitset read.

    Parameters
    ----------
    stream : binary file
        Seekable, opened for reading.
    offset : int
        Where the filter starts (``bloom_filter_offset``).
    key : bytes, optional
        The column's data key (16, 24 or 32 bytes); with ``file_aad`` and both ordinals, instead of
        ``context``.
    file_aad : bytes, optional
        The file's AAD (AAD prefix + file unique).
    row_group_ordinal : int, optional
        The row group's ordinal in the file (the AAD binds the filter to it).
    column_ordinal : int, optional
        The column's ordinal in the file.
    context : ChunkCryptoContext, optional
        Key, file AAD and ordinals in one value.
    length : int, optional
        ``bloom_filter_length`` when the file stores it.

    Returns
    -------
    SplitBlockBloomFilter
        The filter.

    Raises
    ------
    TypeError, ValueError
        Neither a ``context`` nor a complete key / AAD / ordinals set, or a key of the wrong length.
    secure_bloom.errors.ModuleAuthenticationError
        A module fails authentication: a wrong key, a filter of another chunk or file, a flipped
        byte (one error that does not say which).
    secure_bloom.errors.MalformedModuleError
        Length prefixes or sizes do not add up (``TruncatedModuleError`` for short data).
    secure_bloom.errors.MalformedHeaderError
        The decrypted header does not parse or names an unsupported algorithm.
    OSError
        The stream cannot be read.
    """
    ctx = _context(key, file_aad, row_group_ordinal, column_ordinal, context)
    if length is not None and offset >= 0 and length <= COALESCED_FILTER_BYTES:
        _check_filter_length(length)
        stream.seek(offset)
        data = stream.read(length)
        if len(data) != length:
            raise TruncatedModuleError(f"bloom_filter_length {length} but the file has only {len(data)} bytes there")
        return _decrypt_exact(memoryview(data), ctx, f"bloom_filter_length {length}")
    num_bytes, used, head = _read_header_module(stream, offset, ctx, length)
    rest = memoryview(head)[used:]
    if len(rest) < LENGTH_PREFIX:  # the header module filled the speculative read
        stream.seek(offset + used)
        bitset, _ = read_module(stream, ctx.key, ctx.aad(ModuleType.BLOOM_FILTER_BITSET),
                                module_type=ModuleType.BLOOM_FILTER_BITSET, max_plaintext=num_bytes,
                                expected_length=ciphertext_length(num_bytes))
        return SplitBlockBloomFilter.from_bitset(bitset)
    _check_bitset_prefix(rest, num_bytes)
    missing = LENGTH_PREFIX + ciphertext_length(num_bytes) - len(rest)
    if missing < 0:
        rest = rest[:missing]
    elif missing:
        more = stream.read(missing)  # numBytes is authenticated and validated (<= 128 MiB)
        if len(more) != missing:
            raise TruncatedModuleError(
                f"BLOOM_FILTER_BITSET: length prefix declares {ciphertext_length(num_bytes)} bytes but the file "
                f"has only {len(rest) + len(more) - LENGTH_PREFIX}")
        rest = memoryview(bytes(rest) + more)
    return _open_bitset(rest, ctx, num_bytes)
