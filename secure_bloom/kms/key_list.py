"""The key-list KMS of parquet-java's tests and Spark's documentation (SPEC_NOTES 7).

Master keys are given as ``"id1:base64key1, id2:base64key2"`` (the Hadoop property
``parquet.encryption.key.list``). ``wrap_key`` is a local AES-GCM wrap under the master key with
AAD = the master key id in UTF-8 (:mod:`secure_bloom.kms.local_wrap`), so files written with the
same key list by parquet-java, pyarrow or secure_bloom read anywhere.

Meant for development and tests: the master keys sit in the process. Use a real KMS
(:class:`~secure_bloom.kms.openbao.OpenBaoTransitKms`) in production.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..errors import KeyNotFoundError, MalformedKeyMaterialError
from .local_wrap import decode_base64, unwrap_locally, wrap_locally

__all__ = ["KeyListKms", "parse_key_list"]


def parse_key_list(key_list: str) -> dict[str, bytes]:
    """Parse ``"id:base64, id:base64"`` into {id: key}.

    Entries are separated by commas or newlines; blank entries and lines starting with ``#`` are
    skipped. Each entry is ``id:base64`` with exactly one ``:``; keys are 16, 24 or 32 bytes; ids
    are unique. Errors name the entry number (and the id of a duplicate), never key text.
    """
    if not isinstance(key_list, str):
        raise TypeError(f"key_list must be str, got {type(key_list).__name__}")
    keys: dict[str, bytes] = {}
    entries = [e.strip() for line in key_list.splitlines()
               if not line.lstrip().startswith("#") for e in line.split(",")]
    for number, entry in enumerate((e for e in entries if e), start=1):
        if entry.count(":") != 1:
            raise MalformedKeyMaterialError(
                f"key list entry {number} is not 'id:base64key' (it has {entry.count(':')} ':')")
        key_id, encoded = (part.strip() for part in entry.split(":"))
        if not key_id:
            raise MalformedKeyMaterialError(f"key list entry {number} has an empty master key id")
        # Until the entry parses, errors name its number only: in a swapped "key:id" the id is key text.
        key = decode_base64(encoded, f"the key of key list entry {number}")
        if len(key) not in (16, 24, 32):
            raise MalformedKeyMaterialError(
                f"the key of key list entry {number} is {len(key)} bytes; AES keys are 16, 24 or 32 bytes")
        if key_id in keys:
            raise MalformedKeyMaterialError(f"master key id {key_id!r} appears twice in the key list")
        try:
            key_id.encode("utf-8")  # the id is the AAD of every wrap under this key
        except UnicodeEncodeError:
            raise MalformedKeyMaterialError(f"the master key id of key list entry {number} is not valid UTF-8") from None
        keys[key_id] = key
    if not keys:
        raise MalformedKeyMaterialError("the key list has no entries")
    return keys


class KeyListKms:
    """A :class:`~secure_bloom.kms.client.KmsClient` over an explicit list of master keys."""

    def __init__(self, key_list: str | Mapping[str, bytes]) -> None:
        if isinstance(key_list, Mapping):
            self._keys = {str(k): bytes(v) for k, v in key_list.items()}
            for key_id, key in self._keys.items():
                if len(key) not in (16, 24, 32):
                    raise MalformedKeyMaterialError(
                        f"master key {key_id!r} is {len(key)} bytes; AES keys are 16, 24 or 32 bytes")
        else:
            self._keys = parse_key_list(key_list)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> KeyListKms:
        """Read a key list from a text file (same syntax; one entry per line is fine)."""
        with open(path, encoding="utf-8") as f:
            return cls(f.read())

    @property
    def master_key_ids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    def _master_key(self, master_key_identifier: str) -> bytes:
        try:
            return self._keys[master_key_identifier]
        except KeyError:
            raise KeyNotFoundError(
                f"master key {master_key_identifier!r} is not in the key list "
                f"(known ids: {', '.join(sorted(self._keys))})") from None

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Base64(nonce | AES-GCM(key) | tag) under the master key, AAD = its id (UTF-8)."""
        master = self._master_key(master_key_identifier)
        return wrap_locally(key_bytes, master, master_key_identifier.encode("utf-8"))

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        master = self._master_key(master_key_identifier)
        return unwrap_locally(wrapped_key, master, master_key_identifier.encode("utf-8"),
                              wrapped_under=f"master key {master_key_identifier!r}")

    def __repr__(self) -> str:
        return f"KeyListKms(master_key_ids={list(self._keys)!r})"
