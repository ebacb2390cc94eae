"""AES-GCM: key checks, sealing with fresh nonces, and the one place a failed tag is converted.

Spec: NIST SP 800-38D (GCM; section 8.3, the random-nonce invocation limit) as Parquet
Encryption.md uses it ("AES_GCM_V1": 12-byte nonce, 16-byte tag). Knows nothing of Parquet
modules or Bloom filters: :mod:`secure_bloom.crypto.modules` frames what this seals, and local key
wrapping (:mod:`secure_bloom.kms.local_wrap`) uses it directly.

A sealed value is ``nonce (12) | ciphertext | tag (16)``. Every :func:`encrypt` takes a fresh
96-bit nonce from ``os.urandom`` and counts one invocation of its key: one key (identified by a
salted digest of its bytes, never stored in a readable form) may encrypt at most 2^32 times,
after which :class:`KeyUsageLimitError` is raised. :func:`decrypt` turns cryptography's
``InvalidTag`` into the :class:`AuthenticationError` the caller names; nothing else in the package
catches ``InvalidTag``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import AuthenticationError, KeyUsageLimitError
from ..spec import NONCE_LENGTH, TAG_LENGTH

__all__ = ["AES_KEY_LENGTHS", "GCM_INVOCATION_LIMIT", "check_key", "encrypt", "decrypt", "sign", "GcmKey"]

#: AES-128, AES-192, AES-256.
AES_KEY_LENGTHS = (16, 24, 32)
#: Random-nonce AES-GCM invocation limit per key (NIST SP 800-38D section 8.3).
GCM_INVOCATION_LIMIT = 2**32


def check_key(key: object, name: str = "key") -> bytes:
    """Validate an AES key argument; the message names the argument and length, never the bytes.

    Parameters
    ----------
    key : object
        The argument.
    name : str, default "key"
        Its name, for messages.

    Returns
    -------
    bytes
        The key.

    Raises
    ------
    TypeError
        Not bytes.
    ValueError
        Not 16, 24 or 32 bytes.
    """
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, got {type(key).__name__}")
    key_bytes = bytes(key)
    if len(key_bytes) not in AES_KEY_LENGTHS:
        raise ValueError(f"{name} must be 16, 24 or 32 bytes (AES-128/192/256), got {len(key_bytes)}")
    return key_bytes


def _check_nonce(nonce: bytes) -> bytes:
    nonce = bytes(nonce)
    if len(nonce) != NONCE_LENGTH:
        raise ValueError(f"nonce must be {NONCE_LENGTH} bytes")
    return nonce


class _InvocationCounter:
    """Counts GCM encryptions per key. Keys are remembered only as a salted digest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._salt = os.urandom(16)
        self._counts: dict[bytes, int] = {}

    def take(self, key: bytes, limit: int = GCM_INVOCATION_LIMIT) -> None:
        ident = hashlib.blake2b(key, key=self._salt, digest_size=16).digest()
        with self._lock:
            n = self._counts.get(ident, 0)
            if n >= limit:
                raise KeyUsageLimitError(
                    f"this key has performed {n} AES-GCM encryptions, the limit is {limit}; "
                    "rotate the data key")
            self._counts[ident] = n + 1

    def _set(self, key: bytes, count: int) -> None:
        """Test hook: pretend ``key`` already did ``count`` encryptions."""
        ident = hashlib.blake2b(key, key=self._salt, digest_size=16).digest()
        with self._lock:
            self._counts[ident] = count


_COUNTER = _InvocationCounter()


def encrypt(key: bytes, plaintext: bytes, aad: bytes, *, _nonce: bytes | None = None) -> bytes:
    """``nonce | ciphertext | tag`` of ``plaintext`` under ``key`` with a fresh nonce; counts one
    invocation of ``key``. ``_nonce`` exists for known-answer tests only.

    Parameters
    ----------
    key : bytes
        The AES key.
    plaintext : bytes
        What to encrypt.
    aad : bytes
        The AAD.
    _nonce : bytes, optional
        For known-answer tests only.

    Returns
    -------
    bytes
        ``nonce | ciphertext | tag``.

    Raises
    ------
    secure_bloom.errors.KeyUsageLimitError
        The key has made 2^32 encryptions.
    TypeError, ValueError
        A key of the wrong type or length.
    """
    key_bytes = check_key(key)
    nonce = os.urandom(NONCE_LENGTH) if _nonce is None else _check_nonce(_nonce)
    _COUNTER.take(key_bytes)
    return nonce + AESGCM(key_bytes).encrypt(nonce, bytes(plaintext), bytes(aad))


class GcmKey:
    """One key's AES-GCM context, made once and reused for every module it opens (making one
    costs more than decrypting a small module with it). For :func:`decrypt` and :func:`sign`
    (signature checks) only: never for :func:`encrypt`, which counts each key's invocations.
    Holds the key as long as it lives (keep it no longer than the key); its repr never shows it.

    Parameters
    ----------
    key : bytes
        An AES key (16, 24 or 32 bytes).

    Raises
    ------
    TypeError
        The key is not bytes.
    ValueError
        The key is not 16, 24 or 32 bytes.
    """

    __slots__ = ("_aead", "_length")

    def __init__(self, key: bytes) -> None:
        key_bytes = check_key(key)
        self._aead = AESGCM(key_bytes)
        self._length = len(key_bytes)

    def __repr__(self) -> str:
        return f"GcmKey(<{self._length} bytes>)"


def decrypt(key: bytes | GcmKey, sealed: bytes | bytearray | memoryview, aad: bytes, *,
            error: Callable[[], AuthenticationError]) -> bytes:
    """The plaintext of ``nonce | ciphertext | tag``; raises ``error()`` if the tag does not verify
    (wrong key, wrong AAD or tampered data: deliberately not said which). ``key`` is the key's
    bytes or its reusable :class:`GcmKey`.

    Parameters
    ----------
    key : bytes or GcmKey
        The key.
    sealed : bytes-like
        ``nonce | ciphertext | tag``.
    aad : bytes
        The AAD.
    error : callable
        Makes the error for a failed tag.

    Returns
    -------
    bytes
        The plaintext.

    Raises
    ------
    secure_bloom.errors.AuthenticationError
        ``error()``: the tag does not verify.
    """
    aead = key._aead if isinstance(key, GcmKey) else AESGCM(check_key(key))
    view = memoryview(sealed)
    try:
        return aead.decrypt(view[:NONCE_LENGTH], view[NONCE_LENGTH:], bytes(aad))
    except InvalidTag:
        raise error() from None


def sign(key: bytes | GcmKey, plaintext: bytes, aad: bytes, nonce: bytes) -> bytes:
    """``nonce | tag`` of ``plaintext`` encrypted with the given nonce (the ciphertext is dropped):
    a GCM signature, as the plaintext footer's (Encryption.md, "Plaintext footer mode").
    Verification recomputes it with the stored nonce; a writer passes a fresh one.

    Parameters
    ----------
    key : bytes or GcmKey
        The key.
    plaintext : bytes
        What to sign.
    aad : bytes
        The AAD.
    nonce : bytes
        12 bytes.

    Returns
    -------
    bytes
        ``nonce | tag`` (28 bytes).

    Raises
    ------
    TypeError, ValueError
        A nonce that is not 12 bytes, or a key of the wrong type or length.
    """
    aead = key._aead if isinstance(key, GcmKey) else AESGCM(check_key(key))
    nonce = _check_nonce(nonce)
    return nonce + aead.encrypt(nonce, bytes(plaintext), bytes(aad))[-TAG_LENGTH:]
