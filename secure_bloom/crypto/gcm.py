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

Two bindings, one per language: cryptography's ``AESGCM`` in Python, and OpenSSL's EVP interface
in C (the optional extension ``secure_bloom.native_gcm``, which loads the system's libcrypto at
run time). A :class:`GcmKey` holds both contexts; :func:`decrypt_many` opens many sealed values
with one key in one call into C, the GIL released (the lookups' batches of ColumnMetaData and
Bloom filter modules). Without the extension, or with ``SECURE_BLOOM_GCM=cryptography``, the same
call opens them one by one with cryptography: the same answers, slower.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import AuthenticationError, KeyUsageLimitError
from ..extensions import load_extension
from ..spec import NONCE_LENGTH, TAG_LENGTH

__all__ = ["AES_KEY_LENGTHS", "GCM_INVOCATION_LIMIT", "check_key", "encrypt", "decrypt", "decrypt_many", "sign",
           "GcmKey", "NATIVE_GCM", "NATIVE_GCM_UNAVAILABLE", "GCM_ENV_VAR", "gcm_summary"]

#: The switch of the C binding: ``auto`` (default), ``native`` (demand it) or ``cryptography``.
GCM_ENV_VAR = "SECURE_BLOOM_GCM"
_native, NATIVE_GCM_UNAVAILABLE = load_extension(
    "native_gcm", GCM_ENV_VAR, "cryptography", fallback_text="cryptography's AES-GCM, one module per call",
    remedy="Install OpenSSL's libcrypto (1.1 or 3: the libssl3 or openssl-libs package), which it loads at run "
           "time, or reinstall with a C compiler and the Python headers")
#: Whether :func:`decrypt_many` opens its values in C (OpenSSL), the GIL released.
NATIVE_GCM = _native is not None

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


def gcm_summary() -> str:
    """Which AES-GCM opens the lookups' batches of modules, for ``secure-bloom --version``.

    Returns
    -------
    str
        ``native (OpenSSL VERSION)`` or ``cryptography fallback (why)``.

    Raises
    ------
    None
        It describes what it finds.
    """
    if _native is None:
        return f"cryptography fallback ({NATIVE_GCM_UNAVAILABLE})"
    return f"native ({_native.info()['openssl']})"


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

    __slots__ = ("_aead", "_key", "_length", "_native")

    def __init__(self, key: bytes) -> None:
        key_bytes = check_key(key)
        self._aead = AESGCM(key_bytes)
        self._key = bytes(key_bytes)
        self._length = len(key_bytes)
        #: the OpenSSL context of the same key, made on the first batch (:func:`decrypt_many`):
        #: a key that opens one module (a KEK, most footers) never needs it
        self._native: Any = None

    def native(self) -> Any:
        """The OpenSSL context of this key (made once, on first use), or None without the
        extension.

        Returns
        -------
        native_gcm.GcmKey or None
            The context.

        Raises
        ------
        None
            The key was checked when this object was made.
        """
        if self._native is None and _native is not None:
            self._native = _native.GcmKey(self._key)
        return self._native

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


def decrypt_many(key: GcmKey, modules: list[bytes | memoryview], aads: list[bytes], max_plaintext: int) -> list[bytes] | None:
    """The plaintexts of Parquet modules (``length | nonce | ciphertext | tag``, each buffer
    exactly one module, its length prefix already checked by the caller) opened with one key in
    one call into OpenSSL, the GIL released; None when any of them fails (a tag, or a length
    above ``max_plaintext``) or the C binding is not in use: the caller then opens them one by
    one (:func:`decrypt`), which tells which one fails.

    Parameters
    ----------
    key : GcmKey
        The key.
    modules : list of bytes-like
        The modules, length prefix first.
    aads : list of bytes
        Each module's AAD.
    max_plaintext : int
        The most plaintext bytes a module may hold.

    Returns
    -------
    list of bytes or None
        The plaintexts, or None (see above).

    Raises
    ------
    None
        Nothing of its own: a failure is None.
    """
    native = key.native()
    if native is None or _native is None:
        return None
    try:
        plains: list[bytes] = native.decrypt_modules(modules, aads, max_plaintext)
    except (_native.Failed, ValueError, TypeError, OverflowError):
        return None
    return plains


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
