"""Local key wrapping with AES-GCM (SPEC_NOTES 7), as parquet-java's ``KeyToolkit`` does it.

    wrapped = Base64( nonce (12) | AES-GCM ciphertext | tag (16) )

with no length prefix (this is not a Parquet module). Used twice in key tools: the key-list KMS
wraps under a master key with AAD = the master key id (UTF-8), and double wrapping wraps a data
key under a KEK with AAD = the raw 16-byte KEK id.

The cipher is :mod:`secure_bloom.crypto.gcm`, which turns a failed tag into the
:class:`AuthenticationError` raised here; its message names what the key was wrapped under (ids only).
"""

from __future__ import annotations

import base64
import binascii

from ..crypto import gcm
from ..errors import AuthenticationError, MalformedKeyMaterialError
from ..spec import NONCE_LENGTH, TAG_LENGTH

__all__ = ["wrap_locally", "unwrap_locally", "decode_base64"]


def decode_base64(text: str, what: str) -> bytes:
    """Strict standard Base64 (padding optional, as Java's decoder allows); ``what`` labels errors.

    The message never repeats the text, which may be key material.

    Parameters
    ----------
    text : str
        Base64 text.
    what : str
        What messages call it.

    Returns
    -------
    bytes
        The bytes.

    Raises
    ------
    secure_bloom.errors.MalformedKeyMaterialError
        Not strict standard Base64 (the text is not repeated).
    """
    if not isinstance(text, str):
        raise MalformedKeyMaterialError(f"{what} must be a Base64 string, got {type(text).__name__}")
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise MalformedKeyMaterialError(f"{what} is not valid Base64 ({len(text)} characters)") from None


def wrap_locally(key: bytes, wrapping_key: bytes, aad: bytes, *, _nonce: bytes | None = None) -> str:
    """Encrypt ``key`` under ``wrapping_key``; returns Base64(nonce | ciphertext | tag).

    ``_nonce`` exists for known-answer tests only.

    Parameters
    ----------
    key : bytes
        The key to wrap.
    wrapping_key : bytes
        The AES key wrapping it.
    aad : bytes
        The AAD (a master key id, a KEK id).
    _nonce : bytes, optional
        For known-answer tests only.

    Returns
    -------
    str
        Base64(nonce | ciphertext | tag).

    Raises
    ------
    TypeError, ValueError
        A key of the wrong type or length.
    """
    key_bytes = gcm.check_key(key, "key")
    kek = gcm.check_key(wrapping_key, "wrapping_key")
    return base64.b64encode(gcm.encrypt(kek, key_bytes, aad, _nonce=_nonce)).decode("ascii")


def unwrap_locally(wrapped: str, wrapping_key: bytes | gcm.GcmKey, aad: bytes, *, wrapped_under: str) -> bytes:
    """Decrypt a locally wrapped key. ``wrapped_under`` names the wrapping key for messages, e.g.
    ``"master key 'kf'"``; ``wrapping_key`` is its bytes or its reusable :class:`~secure_bloom.crypto.gcm.GcmKey`
    (checked when made). Raises :class:`AuthenticationError` (wrong key, AAD or tampered text) or
    :class:`MalformedKeyMaterialError` (not Base64, too short, not an AES key length).

    Parameters
    ----------
    wrapped : str
        Base64(nonce | ciphertext | tag).
    wrapping_key : bytes or GcmKey
        The wrapping key.
    aad : bytes
        The AAD.
    wrapped_under : str
        Names the wrapping key in messages.

    Returns
    -------
    bytes
        The key.

    Raises
    ------
    secure_bloom.errors.AuthenticationError
        Wrong key, AAD or tampered text.
    secure_bloom.errors.MalformedKeyMaterialError
        Not Base64, too short, or not an AES key length.
    """
    kek = wrapping_key if isinstance(wrapping_key, gcm.GcmKey) else gcm.check_key(wrapping_key, "wrapping_key")
    blob = decode_base64(wrapped, f"key wrapped under {wrapped_under}")
    if len(blob) < NONCE_LENGTH + TAG_LENGTH + 16:
        raise MalformedKeyMaterialError(
            f"key wrapped under {wrapped_under} is {len(blob)} bytes, shorter than nonce + 16-byte key + tag")
    key = gcm.decrypt(kek, blob, aad, error=lambda: AuthenticationError(
        f"cannot unwrap a key wrapped under {wrapped_under}: authentication failed "
        "(wrong key or tampered key material)"))
    if len(key) not in gcm.AES_KEY_LENGTHS:
        raise MalformedKeyMaterialError(
            f"key wrapped under {wrapped_under} is {len(key)} bytes, not an AES key length")
    return key
