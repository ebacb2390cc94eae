"""Explicit keys: files whose key_metadata is a plain key id (SPEC_NOTES 7, "Explicit keys").

Parquet lets a writer store any bytes as key_metadata, and the low-level writers of
parquet-testing store a key id such as ``kf`` or ``kc1``; the reader maps the id to the key
itself, with no KMS. Keys are given in code as a mapping, or as CLI-style specifications::

    ID=base64:<Base64 key>    ID=hex:<hex key>    ID=text:<key as UTF-8 text>

(``kf=text:0123456789012345`` is the parquet-testing footer key).
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Mapping

from ..errors import MalformedKeyMaterialError, MissingKeyError
from .local_wrap import decode_base64

__all__ = ["ExplicitKeys", "parse_key_spec", "describe_key_id"]

_ENCODINGS = ("base64", "hex", "text")


def describe_key_id(key_metadata: bytes) -> str:
    """A printable, bounded rendering of a key id for messages (key ids are not secret).

    Parameters
    ----------
    key_metadata : bytes
        A column's or the footer's ``key_metadata`` (under explicit keys: the key id's bytes).

    Returns
    -------
    str
        The ``repr`` of its first 64 bytes decoded as UTF-8 (undecodable bytes replaced),
        followed by ``...`` when it is longer.

    Raises
    ------
    None
        Any bytes render.
    """

    text = bytes(key_metadata[:64]).decode("utf-8", errors="replace")
    return repr(text) + ("..." if len(key_metadata) > 64 else "")


def _check_length(key_id: str, key: bytes) -> bytes:
    if len(key) not in (16, 24, 32):
        raise MalformedKeyMaterialError(
            f"key {key_id!r} is {len(key)} bytes; AES keys are 16, 24 or 32 bytes")
    return key


def parse_key_spec(spec: str) -> tuple[str, bytes]:
    """Parse ``"ID=base64:..."``, ``"ID=hex:..."`` or ``"ID=text:..."`` into ``(id, key)``.

    Messages name the id only once the spec's shape is recognised, and never the key text.

    Parameters
    ----------
    spec : str
        The key spec (what ``--key`` takes).

    Returns
    -------
    (str, bytes)
        The key id and the key.

    Raises
    ------
    secure_bloom.errors.MalformedKeyMaterialError
        The spec does not have the shape, does not decode, or the key is not 16, 24 or 32 bytes.

    Examples
    --------
    >>> from secure_bloom.kms import parse_key_spec
    >>> parse_key_spec("kf=text:0123456789abcdef")
    ('kf', b'0123456789abcdef')
    """
    if not isinstance(spec, str):
        raise TypeError(f"spec must be str, got {type(spec).__name__}")
    key_id, eq, rest = spec.partition("=")
    key_id = key_id.strip()
    if not eq or not key_id:
        raise MalformedKeyMaterialError("key spec must look like ID=base64:...|hex:...|text:...")
    encoding, colon, value = rest.partition(":")
    encoding = encoding.strip()
    if not colon or encoding not in _ENCODINGS:
        # The "id" is not echoed: without a recognised encoding it may be key text (a spec
        # missing "ID=" whose Base64 padding supplied the '=').
        raise MalformedKeyMaterialError("key spec must give the key as ID=base64:..., ID=hex:... or ID=text:...")
    if encoding == "base64":
        key = decode_base64(value.strip(), f"key {key_id!r}")
    elif encoding == "hex":
        try:
            key = bytes.fromhex(value.strip())
        except ValueError:
            raise MalformedKeyMaterialError(f"key {key_id!r} is not valid hex") from None
    else:
        try:
            key = value.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: undecodable bytes in argv (surrogateescape)
            raise MalformedKeyMaterialError(f"key {key_id!r} given as text: is not valid UTF-8") from None
    return key_id, _check_length(key_id, key)


class ExplicitKeys:
    """Key ids -> keys, for key_metadata that is a plain key id.

    Its repr names the key ids only, never key bytes.

    Parameters
    ----------
    keys : mapping of str to bytes
        Key id -> AES key (16, 24 or 32 bytes).

    Raises
    ------
    secure_bloom.errors.MalformedKeyMaterialError
        A key is not 16, 24 or 32 bytes (the message names the id, not the key).

    Examples
    --------
    >>> import os
    >>> from secure_bloom.kms import ExplicitKeys
    >>> ExplicitKeys.from_specs(["kf=hex:" + os.urandom(16).hex()])
    ExplicitKeys(key_ids=['kf'])
    """

    def __init__(self, keys: Mapping[str, bytes]) -> None:
        self._keys = {str(k): _check_length(str(k), bytes(v)) for k, v in keys.items()}

    @classmethod
    def from_specs(cls, specs: Iterable[str]) -> ExplicitKeys:
        """From ``ID=base64:...|hex:...|text:...`` strings (what ``--key`` takes).

        Parameters
        ----------
        specs : iterable of str
            The key specs (:func:`parse_key_spec`).

        Returns
        -------
        ExplicitKeys
            Their keys.

        Raises
        ------
        secure_bloom.errors.MalformedKeyMaterialError
            A spec does not parse, or an id is given twice.
        """
        keys: dict[str, bytes] = {}
        for spec in specs:
            key_id, key = parse_key_spec(spec)
            if key_id in keys:
                raise MalformedKeyMaterialError(f"key id {key_id!r} is given twice")
            keys[key_id] = key
        return cls(keys)

    @property
    def key_ids(self) -> tuple[str, ...]:
        """The key ids, in the order given (never the keys)."""
        return tuple(self._keys)

    def key_for(self, key_metadata: bytes) -> bytes:
        """The key whose id is ``key_metadata`` (UTF-8).

        Parameters
        ----------
        key_metadata : bytes
            A chunk's or the footer's key metadata.

        Returns
        -------
        bytes
            The key.

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            No key for that id (the message lists the ids given, never keys).
        """
        try:
            key_id = bytes(key_metadata).decode("utf-8")
        except (UnicodeDecodeError, binascii.Error):
            key_id = None
        if key_id is None or key_id not in self._keys:
            raise MissingKeyError(
                f"no key given for key id {describe_key_id(key_metadata)} "
                f"(explicit key ids: {', '.join(sorted(self._keys)) or 'none'})")
        return self._keys[key_id]

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def __repr__(self) -> str:
        return f"ExplicitKeys(key_ids={list(self._keys)!r})"
