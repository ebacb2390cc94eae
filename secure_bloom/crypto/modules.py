"""AES-GCM encrypted modules of Parquet Modular Encryption. Knows nothing about Bloom filters.

Spec: Parquet Encryption.md, "Encrypted module serialization" and "Additional Authenticated Data".

A GCM module on disk is::

    length (4 bytes, little-endian) | nonce (12) | ciphertext | tag (16)

where ``length`` counts nonce + ciphertext + tag but not itself. The AAD of a module is::

    file_aad | module_type (1 byte) | row_group_ordinal (int16 LE) | column_ordinal (int16 LE)
             | page_ordinal (int16 LE, data pages and data page headers only)

The footer (type 0) has no ordinals at all. ``file_aad = aad_prefix | aad_file_unique``.

The cipher is :mod:`secure_bloom.crypto.gcm`: a fresh 96-bit nonce per module, at most 2^32
encryptions per key, and the one conversion of a failed tag (here into
:class:`ModuleAuthenticationError`). This module adds the framing: the length prefix, its checks
before any body is read, and the ciphertext/plaintext length arithmetic.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import BinaryIO

from ..errors import MalformedModuleError, ModuleAuthenticationError, TruncatedModuleError
from ..spec import LENGTH_PREFIX, MAX_ORDINAL, NONCE_LENGTH, TAG_LENGTH
from . import gcm

__all__ = [
    "decrypt_modules",
    "check_module_length",
    "ModuleType",
    "NONCE_LENGTH",
    "TAG_LENGTH",
    "LENGTH_PREFIX",
    "MODULE_OVERHEAD",
    "MAX_ORDINAL",
    "module_aad",
    "module_aad_prefix",
    "chunk_ordinals",
    "footer_aad",
    "encrypt_module",
    "decrypt_module",
    "read_module",
    "ciphertext_length",
    "plaintext_length",
]

#: Bytes a module adds to its plaintext, counting the length prefix: 4 + 12 + 16.
MODULE_OVERHEAD = LENGTH_PREFIX + NONCE_LENGTH + TAG_LENGTH


class ModuleType(IntEnum):
    """Module types of Parquet Encryption.md, "Module types" table."""

    FOOTER = 0
    COLUMN_META_DATA = 1
    DATA_PAGE = 2
    DICTIONARY_PAGE = 3
    DATA_PAGE_HEADER = 4
    DICTIONARY_PAGE_HEADER = 5
    COLUMN_INDEX = 6
    OFFSET_INDEX = 7
    BLOOM_FILTER_HEADER = 8
    BLOOM_FILTER_BITSET = 9


_HAS_PAGE_ORDINAL = {ModuleType.DATA_PAGE, ModuleType.DATA_PAGE_HEADER}
#: The type byte of every module type.
_TYPE_BYTE = {t: bytes([t]) for t in ModuleType}
#: The type byte of the module types whose AAD is ``file_aad | type | rg ordinal | column ordinal``.
_CHUNK_TYPE_BYTE = {t: b for t, b in _TYPE_BYTE.items() if t is not ModuleType.FOOTER and t not in _HAS_PAGE_ORDINAL}


def _ordinal(name: str, value: int | None) -> bytes:
    if value is None:
        raise ValueError(f"{name} is required for this module type")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= value <= MAX_ORDINAL:
        raise ValueError(f"{name} must be in 0..{MAX_ORDINAL}, got {value}")
    return struct.pack("<h", value)


_PACK_ORDINALS = struct.Struct("<hh").pack


def chunk_ordinals(row_group_ordinal: int, column_ordinal: int) -> bytes:
    """The AAD tail ``row_group_ordinal | column_ordinal`` (int16 LE each) of a chunk's modules,
    validated as :func:`module_aad` validates them (same errors).

    Parameters
    ----------
    row_group_ordinal : int
        The row group's ordinal (0..32767).
    column_ordinal : int
        The column's ordinal (0..32767).

    Returns
    -------
    bytes
        Four bytes.

    Raises
    ------
    ValueError
        An ordinal is out of range.
    """
    if type(row_group_ordinal) is int and type(column_ordinal) is int \
            and 0 <= row_group_ordinal <= MAX_ORDINAL and 0 <= column_ordinal <= MAX_ORDINAL:
        return _PACK_ORDINALS(row_group_ordinal, column_ordinal)
    return _ordinal("row_group_ordinal", row_group_ordinal) + _ordinal("column_ordinal", column_ordinal)


def module_aad_prefix(file_aad: bytes, module_type: ModuleType | int) -> bytes:
    """``file_aad | module_type``: the AAD of a module up to its ordinals (all of the footer's).

    ``module_aad(file_aad, t, rg, col) == module_aad_prefix(file_aad, t) + chunk_ordinals(rg, col)``
    for the chunk modules without a page ordinal: a reader of many chunks makes the prefix once.

    Parameters
    ----------
    file_aad : bytes
        ``aad_prefix | aad_file_unique``.
    module_type : ModuleType or int

    Returns
    -------
    bytes

    Raises
    ------
    TypeError
        ``file_aad`` is not bytes.
    ValueError
        Not a module type.
    """
    if not isinstance(file_aad, (bytes, bytearray)):
        raise TypeError("file_aad must be bytes")
    return bytes(file_aad) + _TYPE_BYTE[ModuleType(module_type)]


def module_aad(file_aad: bytes, module_type: ModuleType | int, row_group_ordinal: int | None = None,
               column_ordinal: int | None = None, page_ordinal: int | None = None) -> bytes:
    """The AAD of one module (Encryption.md, "Additional Authenticated Data"): the one builder
    (every other AAD of a module is made by it or by its two parts, :func:`module_aad_prefix`
    and :func:`chunk_ordinals`).

    The footer takes no ordinals; every other module takes the row-group and column ordinals;
    only data pages and data page headers take a page ordinal.

    Parameters
    ----------
    file_aad : bytes
        AAD prefix + file unique.
    module_type : ModuleType or int
        The module's type (8: Bloom filter header, 9: bitset...).
    row_group_ordinal : int, optional
        The row group's ordinal (0..32767).
    column_ordinal : int, optional
        The column's ordinal (0..32767).
    page_ordinal : int, optional
        A data page's ordinal.

    Returns
    -------
    bytes
        ``file_aad | type | [row group | column | [page]]`` (int16 little-endian ordinals).

    Raises
    ------
    ValueError
        An ordinal is missing, not allowed for the type, or out of range.
    """
    chunk_type: bytes | None = _CHUNK_TYPE_BYTE.get(module_type) if page_ordinal is None else None  # type: ignore[call-overload]
    if chunk_type is not None and type(file_aad) is bytes and type(row_group_ordinal) is int \
            and type(column_ordinal) is int and 0 <= row_group_ordinal <= MAX_ORDINAL \
            and 0 <= column_ordinal <= MAX_ORDINAL:  # a chunk module, checked at once
        return file_aad + chunk_type + _PACK_ORDINALS(row_group_ordinal, column_ordinal)
    mtype = ModuleType(module_type)
    if not isinstance(file_aad, (bytes, bytearray)):
        raise TypeError("file_aad must be bytes")
    if mtype is ModuleType.FOOTER:
        if row_group_ordinal is not None or column_ordinal is not None or page_ordinal is not None:
            raise ValueError("the footer module AAD has no ordinals")
        return bytes(file_aad) + _TYPE_BYTE[mtype]
    aad = bytes(file_aad) + _TYPE_BYTE[mtype] + _ordinal("row_group_ordinal", row_group_ordinal) \
        + _ordinal("column_ordinal", column_ordinal)
    if mtype in _HAS_PAGE_ORDINAL:
        aad += _ordinal("page_ordinal", page_ordinal)
    elif page_ordinal is not None:
        raise ValueError(f"{mtype.name} modules have no page ordinal")
    return aad


def footer_aad(file_aad: bytes) -> bytes:
    """AAD of the footer module: ``file_aad | 0x00``.

    Parameters
    ----------
    file_aad : bytes
        AAD prefix + file unique.

    Returns
    -------
    bytes
        The footer's AAD.

    Raises
    ------
    None
        Nothing of its own.
    """
    return module_aad(file_aad, ModuleType.FOOTER)


def ciphertext_length(plaintext_len: int) -> int:
    """Value of the length prefix for a plaintext of ``plaintext_len`` bytes (nonce+ct+tag).

    Parameters
    ----------
    plaintext_len : int
        Plaintext bytes.

    Returns
    -------
    int
        ``12 + plaintext_len + 16``.

    Raises
    ------
    None
        Nothing of its own.
    """
    return NONCE_LENGTH + plaintext_len + TAG_LENGTH


def plaintext_length(length_prefix: int) -> int:
    """Plaintext bytes inside a module whose length prefix is ``length_prefix``.

    Parameters
    ----------
    length_prefix : int
        The module's length prefix.

    Returns
    -------
    int
        ``length_prefix - 28`` (negative for a prefix too short to be a module).

    Raises
    ------
    None
        Nothing of its own.
    """
    return length_prefix - NONCE_LENGTH - TAG_LENGTH


def encrypt_module(plaintext: bytes, key: bytes, aad: bytes, *, _nonce: bytes | None = None) -> bytes:
    """Encrypt ``plaintext`` into one serialised module: ``length | nonce | ciphertext | tag``.

    The nonce is fresh from ``os.urandom``; a per-key counter refuses more than 2^32 encryptions.

    Parameters
    ----------
    plaintext : bytes
        What to encrypt.
    key : bytes
        The AES key (16, 24 or 32 bytes).
    aad : bytes
        The module's AAD (:func:`module_aad`).
    _nonce : bytes, optional
        For known-answer tests only; production callers never pass it.

    Returns
    -------
    bytes
        ``length | nonce | ciphertext | tag``.

    Raises
    ------
    ValueError
        The key is not 16, 24 or 32 bytes.
    secure_bloom.errors.KeyUsageLimitError
        The key has made 2^32 encryptions.
    """
    sealed = gcm.encrypt(key, plaintext, aad, _nonce=_nonce)
    if len(sealed) > 0x7FFFFFFF:
        raise ValueError("module too large for a 4-byte length prefix")
    return struct.pack("<I", len(sealed)) + sealed


def check_module_length(length: int, available: int | None, module_type: ModuleType | None,
                        max_plaintext: int | None) -> None:
    """Check a module's length prefix before anything is decrypted or read past it.

    Parameters
    ----------
    length : int
        The length prefix (nonce + ciphertext + tag).
    available : int or None
        The bytes that follow the prefix (None: not known yet).
    module_type : ModuleType or None
        Names the module in errors.
    max_plaintext : int or None
        The most plaintext bytes the module may hold.

    Returns
    -------
    None

    Raises
    ------
    secure_bloom.errors.MalformedModuleError
        Shorter than nonce + tag, or above ``max_plaintext``.
    secure_bloom.errors.TruncatedModuleError
        Fewer than ``length`` bytes follow.
    """
    label = module_type.name if module_type is not None else "module"
    minimum = NONCE_LENGTH + TAG_LENGTH
    if length < minimum:
        raise MalformedModuleError(
            f"{label}: length prefix {length} is smaller than nonce + tag ({minimum})")
    if max_plaintext is not None and length > minimum + max_plaintext:
        raise MalformedModuleError(
            f"{label}: length prefix {length} exceeds the maximum {minimum + max_plaintext} for this module")
    if available is not None and length > available:
        raise TruncatedModuleError(
            f"{label}: length prefix declares {length} bytes but only {available} follow")


def _open(body: bytes | bytearray | memoryview, key: bytes | gcm.GcmKey, aad: bytes, module_type: ModuleType | None) -> bytes:
    """Decrypt a module body (nonce | ciphertext | tag); a failed tag is ModuleAuthenticationError."""
    return gcm.decrypt(key, body, aad,
                       error=lambda: ModuleAuthenticationError(module_type if module_type is not None else "GCM"))


def decrypt_module(buffer: bytes | memoryview, key: bytes | gcm.GcmKey, aad: bytes, *,
                   module_type: ModuleType | None = None,
                   max_plaintext: int | None = None) -> tuple[bytes, int]:
    """Decrypt the module at the start of ``buffer``; returns ``(plaintext, consumed)``.

    ``key`` is the key's bytes or its reusable :class:`~secure_bloom.crypto.gcm.GcmKey`.
    ``consumed`` includes the 4-byte length prefix. ``module_type`` only labels errors (the AAD
    already binds it). ``max_plaintext`` rejects a module larger than its type allows before any
    copy is made.

    Parameters
    ----------
    buffer : bytes-like
        Starts with the module's length prefix.
    key : bytes or GcmKey
        The key's bytes or its reusable :class:`~secure_bloom.crypto.gcm.GcmKey`.
    aad : bytes
        The module's AAD.
    module_type : ModuleType, optional
        Names the module in errors.
    max_plaintext : int, optional
        The most plaintext bytes the module may hold.

    Returns
    -------
    (bytes, int)
        The plaintext and the bytes consumed (the 4-byte prefix included).

    Raises
    ------
    secure_bloom.errors.ModuleAuthenticationError
        The module fails authentication (wrong key, wrong AAD or tampered bytes: one error that
        does not say which).
    secure_bloom.errors.TruncatedModuleError
        Fewer bytes than the length prefix says.
    secure_bloom.errors.MalformedModuleError
        The length prefix is shorter than nonce + tag, or above ``max_plaintext`` /
        ``expected_length``.
    """
    key_bytes = key if isinstance(key, gcm.GcmKey) else gcm.check_key(key)
    view = memoryview(buffer)
    label = module_type.name if module_type is not None else "module"
    if len(view) < LENGTH_PREFIX:
        raise TruncatedModuleError(f"{label}: {len(view)} bytes, too short for the 4-byte length prefix")
    (length,) = struct.unpack_from("<I", view, 0)
    check_module_length(length, len(view) - LENGTH_PREFIX, module_type, max_plaintext)
    body = view[LENGTH_PREFIX:LENGTH_PREFIX + length]  # decrypted in place: no copy of the ciphertext
    return _open(body, key_bytes, bytes(aad), module_type), LENGTH_PREFIX + length


def decrypt_modules(buffers: list[bytes | memoryview], key: gcm.GcmKey, aads: list[bytes], *,
                    module_type: ModuleType, max_plaintext: int) -> list[bytes]:
    """Decrypt many modules with one key, each buffer exactly one module: :func:`decrypt_module`
    of each, their AES-GCM in one call into C (:func:`~secure_bloom.crypto.gcm.decrypt_many`,
    the GIL released) where the extension is built. The length prefixes are checked first, as
    :func:`decrypt_module` checks them; when a tag fails, the modules are opened one by one so
    the error is the one :func:`decrypt_module` raises.

    Parameters
    ----------
    buffers : list of bytes-like
        The modules, each with its length prefix and nothing after it.
    key : GcmKey
        The key.
    aads : list of bytes
        Each module's AAD.
    module_type : ModuleType
        Names the modules in errors.
    max_plaintext : int
        The most plaintext bytes a module may hold.

    Returns
    -------
    list of bytes
        The plaintexts, in order.

    Raises
    ------
    secure_bloom.errors.ModuleAuthenticationError
        A module fails authentication.
    secure_bloom.errors.TruncatedModuleError
        A buffer is shorter than its length prefix says.
    secure_bloom.errors.MalformedModuleError
        A length prefix out of bounds, or bytes after a module.
    """
    label = module_type.name
    for buffer in buffers:
        view = memoryview(buffer)
        if len(view) < LENGTH_PREFIX:
            raise TruncatedModuleError(f"{label}: {len(view)} bytes, too short for the 4-byte length prefix")
        (length,) = struct.unpack_from("<I", view, 0)
        check_module_length(length, len(view) - LENGTH_PREFIX, module_type, max_plaintext)
        if length != len(view) - LENGTH_PREFIX:
            raise MalformedModuleError(f"{label}: {len(view) - LENGTH_PREFIX - length} bytes after the module")
    plains = gcm.decrypt_many(key, buffers, aads, max_plaintext) if buffers else []
    if plains is not None:
        return plains
    return [decrypt_module(b, key, a, module_type=module_type, max_plaintext=max_plaintext)[0]
            for b, a in zip(buffers, aads)]


_READ_CHUNK = 1 << 24


def _read_body(stream: BinaryIO, length: int) -> bytes | bytearray:
    """Up to ``length`` bytes, in chunks: ``read(n)`` of a file object allocates ``n`` bytes up
    front, so a prefix claiming 2 GiB must not be read in one call before EOF proves it false."""
    if length <= _READ_CHUNK:
        return stream.read(length)
    body = bytearray()
    while len(body) < length:
        part = stream.read(min(_READ_CHUNK, length - len(body)))
        if not part:
            break
        body += part
    return body


def read_module(stream: BinaryIO, key: bytes, aad: bytes, *, module_type: ModuleType | None = None,
                max_plaintext: int | None = None,
                expected_length: int | None = None) -> tuple[bytes, int]:
    """Read exactly one module from a binary file object positioned at its length prefix.

    Reads the prefix, validates it (against ``max_plaintext`` and ``expected_length``, the exact
    length prefix required, if given) *before* reading the body, then reads only the body.

    Parameters
    ----------
    stream : binary file
        Positioned at the module's length prefix.
    key : bytes
        The AES key.
    aad : bytes
        The module's AAD.
    module_type : ModuleType, optional
        Names the module in errors.
    max_plaintext : int, optional
        The most plaintext bytes the module may hold.
    expected_length : int, optional
        The exact length prefix required.

    Returns
    -------
    (bytes, int)
        The plaintext and the bytes consumed.

    Raises
    ------
    secure_bloom.errors.ModuleAuthenticationError
        The module fails authentication (wrong key, wrong AAD or tampered bytes: one error that
        does not say which).
    secure_bloom.errors.TruncatedModuleError
        Fewer bytes than the length prefix says.
    secure_bloom.errors.MalformedModuleError
        The length prefix is shorter than nonce + tag, or above ``max_plaintext`` /
        ``expected_length``.
    OSError
        The stream cannot be read.
    """
    key_bytes = gcm.check_key(key)
    label = module_type.name if module_type is not None else "module"
    prefix = stream.read(LENGTH_PREFIX)
    if len(prefix) < LENGTH_PREFIX:
        raise TruncatedModuleError(f"{label}: end of file inside the 4-byte length prefix")
    (length,) = struct.unpack("<I", prefix)
    check_module_length(length, None, module_type, max_plaintext)
    if expected_length is not None and length != expected_length:
        raise MalformedModuleError(
            f"{label}: length prefix {length}, expected exactly {expected_length}")
    body = _read_body(stream, length)
    if len(body) < length:
        raise TruncatedModuleError(
            f"{label}: length prefix declares {length} bytes but the file has only {len(body)}")
    return _open(body, key_bytes, bytes(aad), module_type), LENGTH_PREFIX + length
