"""The key-list KMS of parquet-java's tests and Spark's documentation (SPEC_NOTES 7).

Master keys are given as ``"id1:base64key1, id2:base64key2"`` (the Hadoop property
``parquet.encryption.key.list``). ``wrap_key`` is a local AES-GCM wrap under the master key with
AAD = the master key id in UTF-8 (:mod:`secure_bloom.kms.local_wrap`), so files written with the
same key list by parquet-java, pyarrow or secure_bloom read anywhere.

Meant for development and tests: the master keys sit in the process. Use a real KMS
(:class:`~secure_bloom.kms.openbao.OpenBaoTransitKms`) in production.
:func:`write_development_key_list` (``secure-bloom dev-keys PATH``) writes a throwaway key list of
fresh random keys, marked as such, for trying the library without a checkout.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import base64
from pathlib import Path

from ..display import visible
from ..errors import DestinationExistsError, KeyNotFoundError, MalformedKeyMaterialError
from .local_wrap import decode_base64, unwrap_locally, wrap_locally

__all__ = ["KeyListKms", "parse_key_list", "write_development_key_list", "DEVELOPMENT_KEYS_HEADER",
           "DEVELOPMENT_KEY_IDS"]

#: The first line of every key list :func:`write_development_key_list` writes.
DEVELOPMENT_KEYS_HEADER = ("# THROWAWAY DEVELOPMENT KEYS made by secure-bloom: random keys for trying the library, "
                           "never for real data.")
#: The master key ids the documentation's examples use.
DEVELOPMENT_KEY_IDS = ("footer_key", "pii_key", "finance_key")


def write_development_key_list(path: str | os.PathLike[str],
                               key_ids: tuple[str, ...] | list[str] = DEVELOPMENT_KEY_IDS) -> Path:
    """Write a throwaway key list: a fresh random AES-128 master key per id, owner-only.

    The file starts with :data:`DEVELOPMENT_KEYS_HEADER`. Files encrypted under these keys can be
    read with this file and nothing else. A file this function wrote earlier is kept as it is (its
    keys still read what was written with them); any other existing file is refused.

    Parameters
    ----------
    path : str or os.PathLike
        Where to write the key list (its directory must exist).
    key_ids : sequence of str, default :data:`DEVELOPMENT_KEY_IDS`
        The master key ids to make keys for.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    DestinationExistsError
        ``path`` exists and is not a throwaway key list.
    MalformedKeyMaterialError
        ``key_ids`` is empty, or an id is empty or holds ``:`` or ``,``.
    OSError
        The file could not be written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from secure_bloom.kms import KeyListKms
    >>> path = write_development_key_list(pathlib.Path(tempfile.mkdtemp()) / "dev-keys.txt")
    >>> KeyListKms.from_file(path).master_key_ids
    ('footer_key', 'pii_key', 'finance_key')
    """
    target = Path(path)
    ids = list(dict.fromkeys(key_ids))
    if not ids or any(not k or ":" in k or "," in k or k != k.strip() for k in ids):
        raise MalformedKeyMaterialError("development key ids must be non-empty names without ':' or ','")
    try:
        with open(target, encoding="utf-8") as existing:
            if existing.readline().rstrip("\n") == DEVELOPMENT_KEYS_HEADER:
                return target
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    lines = [DEVELOPMENT_KEYS_HEADER, "# Made with os.urandom(16): files encrypted under them read with this file only."]
    lines += [f"{key_id}:{base64.b64encode(os.urandom(16)).decode()}" for key_id in ids]
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise DestinationExistsError(f"{visible(target.name)}: exists and is not a throwaway development key list; "
                                     "not overwritten") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return target


def parse_key_list(key_list: str) -> dict[str, bytes]:
    """Parse ``"id:base64, id:base64"`` into {id: key}.

    Entries are separated by commas or newlines; blank entries and lines starting with ``#`` are
    skipped. Each entry is ``id:base64`` with exactly one ``:``; keys are 16, 24 or 32 bytes; ids
    are unique. Errors name the entry number (and the id of a duplicate), never key text.

    Parameters
    ----------
    key_list : str
        The key list.

    Returns
    -------
    dict of str to bytes
        Master key id -> key.

    Raises
    ------
    TypeError
        ``key_list`` is not a str.
    secure_bloom.errors.MalformedKeyMaterialError
        An entry that does not parse, a key that is not 16, 24 or 32 bytes, an id given twice,
        or no entry at all.

    Examples
    --------
    >>> import base64
    >>> from secure_bloom.kms.key_list import parse_key_list
    >>> list(parse_key_list("# a comment\\nfooter_key:" + base64.b64encode(bytes(16)).decode()))
    ['footer_key']
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
    """A :class:`~secure_bloom.kms.client.KmsClient` over an explicit list of master keys.

    parquet-java's key-list KMS: ``wrap_key`` is a local AES-GCM wrap under the master key, AAD
    = the master key id, so files written with the same key list by parquet-java, pyarrow or
    secure_bloom read anywhere. For development and tests: the master keys sit in the process.
    Its repr names the key ids only.

    Parameters
    ----------
    key_list : str or mapping of str to bytes
        ``"id1:base64key1, id2:base64key2"`` (the Hadoop property ``parquet.encryption.key.list``),
        or ``{id: key bytes}``; keys are 16, 24 or 32 bytes.

    Raises
    ------
    secure_bloom.errors.MalformedKeyMaterialError
        An entry does not parse, a key is not 16, 24 or 32 bytes, an id appears twice, or the
        list is empty.

    Examples
    --------
    >>> import os
    >>> from secure_bloom.kms import KeyListKms
    >>> kms = KeyListKms({"footer_key": os.urandom(16), "pii_key": os.urandom(16)})
    >>> kms
    KeyListKms(master_key_ids=['footer_key', 'pii_key'])
    >>> data_key = os.urandom(16)
    >>> kms.unwrap_key(kms.wrap_key(data_key, "pii_key"), "pii_key") == data_key
    True
    """

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
        """Read a key list from a text file (same syntax; one entry per line is fine; ``#`` comments).

        Parameters
        ----------
        path : str or os.PathLike
            The key list file.

        Returns
        -------
        KeyListKms
            A client over its keys.

        Raises
        ------
        secure_bloom.errors.MalformedKeyMaterialError
            The file does not parse (messages name entry numbers, never key text).
        OSError
            The file cannot be read.
        """
        with open(path, encoding="utf-8") as f:
            return cls(f.read())

    @property
    def master_key_ids(self) -> tuple[str, ...]:
        """The master key ids of the list, in order (never the keys)."""
        return tuple(self._keys)

    def _master_key(self, master_key_identifier: str) -> bytes:
        try:
            return self._keys[master_key_identifier]
        except KeyError:
            raise KeyNotFoundError(
                f"master key {master_key_identifier!r} is not in the key list "
                f"(known ids: {', '.join(sorted(self._keys))})") from None

    def wrap_key(self, key_bytes: bytes, master_key_identifier: str) -> str:
        """Base64(nonce | AES-GCM(key) | tag) under the master key, AAD = its id (UTF-8).

        Parameters
        ----------
        key_bytes : bytes
            The key to wrap (a data key or KEK).
        master_key_identifier : str
            The master key's id.

        Returns
        -------
        str
            The wrapped key, as parquet-java's key material stores it.

        Raises
        ------
        secure_bloom.errors.KeyNotFoundError
            The id is not in the list.
        """
        master = self._master_key(master_key_identifier)
        return wrap_locally(key_bytes, master, master_key_identifier.encode("utf-8"))

    def unwrap_key(self, wrapped_key: str, master_key_identifier: str) -> bytes:
        """The key :meth:`wrap_key` wrapped (or parquet-java's key-list KMS).

        Parameters
        ----------
        wrapped_key : str
            What :meth:`wrap_key` returned.
        master_key_identifier : str
            The master key's id.

        Returns
        -------
        bytes
            The key.

        Raises
        ------
        secure_bloom.errors.KeyNotFoundError
            The id is not in the list.
        secure_bloom.errors.AuthenticationError
            The wrapped key does not authenticate under that master key.
        secure_bloom.errors.MalformedKeyMaterialError
            ``wrapped_key`` is not Base64 of a wrapped key.
        """
        master = self._master_key(master_key_identifier)
        return unwrap_locally(wrapped_key, master, master_key_identifier.encode("utf-8"),
                              wrapped_under=f"master key {master_key_identifier!r}")

    def __repr__(self) -> str:
        return f"KeyListKms(master_key_ids={list(self._keys)!r})"
