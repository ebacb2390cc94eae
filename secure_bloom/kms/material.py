"""Key material and key metadata of Parquet key tools (SPEC_NOTES 7), as parquet-java writes them.

*Key material* is what wrapping a data key (DEK) produced; *key metadata* is what a Parquet file
stores in ``key_metadata`` (FileCryptoMetaData / ColumnCryptoMetaData): either the key material
itself (internal storage) or a reference into the file's external key-material sidecar.
JSON is written byte for byte as parquet-java writes it (HashMap order, see ``_java_json``);
reading accepts any field order (pyarrow writes another).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import MalformedKeyMaterialError
from ._java_json import java_hashmap_json

__all__ = ["KeyMaterial", "KeyMetadata", "KEY_MATERIAL_TYPE", "FOOTER_KEY_REFERENCE",
           "column_key_reference"]

#: The only key material format: "PKMT1".
KEY_MATERIAL_TYPE = "PKMT1"
FOOTER_KEY_REFERENCE = "footerKey"
_COLUMN_KEY_PREFIX = "columnKey"
_MAX_JSON_CHARS = 1 << 20
# new HashMap<>(10) in KeyMaterial.createSerialized, new HashMap<>(3) in KeyMetadata.
_MATERIAL_MAP_CAPACITY = 10
_METADATA_MAP_CAPACITY = 3
T = TypeVar("T")


def column_key_reference(n: int) -> str:
    """The external-storage reference of a file's n-th column key: ``columnKey<n>``, the id
    parquet-java's ``FileKeyWrapper`` gives it in the key-material sidecar (the footer key's is
    :data:`FOOTER_KEY_REFERENCE`).

    Parameters
    ----------
    n : int
        The column key's number in the file's sidecar, counted from 0 in the order they are stored.

    Returns
    -------
    str
        ``"columnKey0"``, ``"columnKey1"``...

    Raises
    ------
    None
        ``n`` is not checked.
    """

    return f"{_COLUMN_KEY_PREFIX}{n}"


def _load_object(text: str | bytes, what: str) -> dict[str, Any]:
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedKeyMaterialError(f"{what} is not UTF-8") from None
    if len(text) > _MAX_JSON_CHARS:
        raise MalformedKeyMaterialError(f"{what} is {len(text)} characters, over {_MAX_JSON_CHARS}")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as e:  # ValueError: JSONDecodeError, or an int over 4300 digits
        where = f" (line {e.lineno}, column {e.colno})" if isinstance(e, json.JSONDecodeError) else ""
        raise MalformedKeyMaterialError(f"{what} is not valid JSON{where}") from None
    if not isinstance(obj, dict):
        raise MalformedKeyMaterialError(f"{what} is not a JSON object")
    if obj.get("keyMaterialType") != KEY_MATERIAL_TYPE:
        found = obj.get("keyMaterialType")
        shown = repr(found)[:40] if isinstance(found, str) else type(found).__name__
        raise MalformedKeyMaterialError(f"{what}: keyMaterialType is {shown}, expected {KEY_MATERIAL_TYPE!r}")
    return obj


def _field(obj: dict[str, Any], name: str, kind: type, what: str, required: bool = True) -> Any:
    value = obj.get(name)
    if value is None:
        if required:
            raise MalformedKeyMaterialError(f"{what}: required field {name!r} is missing")
        return None
    if type(value) is not kind:
        raise MalformedKeyMaterialError(
            f"{what}: field {name!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _built(what: str, make: Callable[[], T]) -> T:
    """``make()``, with the constructor's argument checks (ValueError) reported as malformed input."""
    try:
        return make()
    except MalformedKeyMaterialError:
        raise
    except ValueError as e:
        raise MalformedKeyMaterialError(f"{what}: {e}") from None


@dataclass(frozen=True)
class KeyMaterial:
    """Key material type PKMT1: one wrapped data key. This docstring is the JSON format.

    ::

        {"keyMaterialType": "PKMT1",
         "internalStorage": true,            only in a file's key_metadata (absent in the sidecar)
         "isFooterKey": bool,
         "kmsInstanceID": str,               footer key only
         "kmsInstanceURL": str,              footer key only
         "masterKeyID": str,                 master key in the KMS
         "wrappedDEK": str,                  single: kms.wrap_key(DEK, masterKeyID);
                                             double: Base64(nonce|AES-GCM(DEK)|tag) under the KEK,
                                                     AAD = the raw 16-byte KEK id
         "doubleWrapping": bool,
         "keyEncryptionKeyID": str,          double only: Base64(16-byte KEK id)
         "wrappedKEK": str}                  double only: kms.wrap_key(KEK, masterKeyID)

    :meth:`to_json` emits the fields in parquet-java's order, compact, so a parquet-java file's
    material re-serialises to the same bytes.

    Parameters
    ----------
    master_key_id : str
        ``masterKeyID``.
    wrapped_dek : str
        ``wrappedDEK``.
    is_footer_key : bool
        ``isFooterKey``.
    double_wrapping : bool
        ``doubleWrapping``.
    kek_id : str, optional
        ``keyEncryptionKeyID`` (double wrapping only).
    wrapped_kek : str, optional
        ``wrappedKEK`` (double wrapping only).
    kms_instance_id, kms_instance_url : str, optional
        ``kmsInstanceID`` / ``kmsInstanceURL`` (footer key only).
    internal_storage : bool, default True
        ``internalStorage`` (False: the material sits in the sidecar).

    Raises
    ------
    ValueError
        An empty ``master_key_id`` or ``wrapped_dek``, or KEK fields that do not match
        ``double_wrapping``.
    """

    master_key_id: str
    wrapped_dek: str
    is_footer_key: bool
    double_wrapping: bool
    kek_id: str | None = None
    wrapped_kek: str | None = None
    kms_instance_id: str | None = None
    kms_instance_url: str | None = None
    internal_storage: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.master_key_id, str) or not self.master_key_id:
            raise ValueError("master_key_id must be a non-empty str")
        if not isinstance(self.wrapped_dek, str) or not self.wrapped_dek:
            raise ValueError("wrapped_dek must be a non-empty str")
        if self.double_wrapping != (self.kek_id is not None and self.wrapped_kek is not None):
            raise ValueError("kek_id and wrapped_kek are given exactly when double_wrapping is true")
        if not self.is_footer_key and (self.kms_instance_id is not None or self.kms_instance_url is not None):
            raise ValueError("only footer key material names the KMS instance")

    def to_json(self) -> str:
        """The material as parquet-java writes it (``KeyMaterial.createSerialized``).

        Returns
        -------
        str
            Compact JSON, parquet-java's field order.

        Raises
        ------
        None
            Nothing of its own.
        """
        items: list[tuple[str, object]] = [("keyMaterialType", KEY_MATERIAL_TYPE)]
        if self.internal_storage:
            items.append(("internalStorage", True))
        items.append(("isFooterKey", self.is_footer_key))
        if self.is_footer_key:
            items += [("kmsInstanceID", self.kms_instance_id), ("kmsInstanceURL", self.kms_instance_url)]
        items += [("masterKeyID", self.master_key_id), ("wrappedDEK", self.wrapped_dek),
                  ("doubleWrapping", self.double_wrapping)]
        if self.double_wrapping:
            items += [("keyEncryptionKeyID", self.kek_id), ("wrappedKEK", self.wrapped_kek)]
        return java_hashmap_json(items, _MATERIAL_MAP_CAPACITY)

    @classmethod
    def from_json(cls, text: str | bytes) -> KeyMaterial:
        """Parse material JSON (any field order). Raises :class:`MalformedKeyMaterialError`.

        Parameters
        ----------
        text : str or bytes
            The material JSON.

        Returns
        -------
        KeyMaterial
            The material.

        Raises
        ------
        secure_bloom.errors.MalformedKeyMaterialError
            The JSON does not parse, or a field is missing or of the wrong type (named).
        """
        return cls.from_dict(_load_object(text, "key material"))

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> KeyMaterial:
        """Material from a parsed JSON object (the sidecar's values).

        Parameters
        ----------
        obj : dict
            The JSON object.

        Returns
        -------
        KeyMaterial
            The material.

        Raises
        ------
        secure_bloom.errors.MalformedKeyMaterialError
            The JSON does not parse, or a field is missing or of the wrong type (named).
        """
        get = obj.get
        is_footer, double, internal = get("isFooterKey"), get("doubleWrapping"), get("internalStorage")
        master, dek = get("masterKeyID"), get("wrappedDEK")
        kek_id = get("keyEncryptionKeyID") if double else None
        wrapped_kek = get("wrappedKEK") if double else None
        kms_id = get("kmsInstanceID") if is_footer else None
        kms_url = get("kmsInstanceURL") if is_footer else None
        if (get("keyMaterialType") == KEY_MATERIAL_TYPE and type(is_footer) is bool and type(double) is bool
                and (internal is None or type(internal) is bool) and type(master) is str and type(dek) is str
                and (not double or (type(kek_id) is str and type(wrapped_kek) is str))
                and (kms_id is None or type(kms_id) is str) and (kms_url is None or type(kms_url) is str)):
            # every field well typed (the common case, checked at once): the constructor's checks remain
            return _built("key material", lambda: cls(master, dek, is_footer, double, kek_id, wrapped_kek, kms_id,
                                                      kms_url, bool(internal)))
        return cls._from_dict_named(obj)

    @classmethod
    def _from_dict_named(cls, obj: dict[str, Any]) -> KeyMaterial:
        """:meth:`from_dict` field by field: the error names the first field in doubt."""
        what = "key material"
        if obj.get("keyMaterialType") != KEY_MATERIAL_TYPE:
            raise MalformedKeyMaterialError(f"{what}: keyMaterialType is not {KEY_MATERIAL_TYPE!r}")
        internal = _field(obj, "internalStorage", bool, what, required=False)
        is_footer = _field(obj, "isFooterKey", bool, what)
        double = _field(obj, "doubleWrapping", bool, what)
        return _built(what, lambda: cls(
            master_key_id=_field(obj, "masterKeyID", str, what),
            wrapped_dek=_field(obj, "wrappedDEK", str, what),
            is_footer_key=is_footer,
            double_wrapping=double,
            kek_id=_field(obj, "keyEncryptionKeyID", str, what) if double else None,
            wrapped_kek=_field(obj, "wrappedKEK", str, what) if double else None,
            kms_instance_id=_field(obj, "kmsInstanceID", str, what, required=False) if is_footer else None,
            kms_instance_url=_field(obj, "kmsInstanceURL", str, what, required=False) if is_footer else None,
            internal_storage=bool(internal),
        ))


@dataclass(frozen=True)
class KeyMetadata:
    """The key_metadata of a footer or column key written by key tools. Exactly one of:

    * ``material``: internal storage; the bytes are the material JSON with ``"internalStorage":true``;
    * ``key_reference``: external storage; the bytes are
      ``{"keyMaterialType":"PKMT1","internalStorage":false,"keyReference":"footerKey"|"columnKey<N>"}``
      and the material sits in the sidecar ``_KEY_MATERIAL_FOR_<file>.json`` under that reference.

    Parameters
    ----------
    material : KeyMaterial, optional
        Internal storage.
    key_reference : str, optional
        External storage: ``footerKey`` or ``columnKey<N>``.

    Raises
    ------
    ValueError
        Neither or both are given, internal material with ``internal_storage=False``, or an
        empty ``key_reference``.
    """

    material: KeyMaterial | None = None
    key_reference: str | None = None

    def __post_init__(self) -> None:
        if (self.material is None) == (self.key_reference is None):
            raise ValueError("give exactly one of material and key_reference")
        if self.material is not None and not self.material.internal_storage:
            raise ValueError("internal key metadata needs material with internal_storage=True")
        if self.key_reference is not None and (not isinstance(self.key_reference, str) or not self.key_reference):
            raise ValueError("key_reference must be a non-empty str")

    @property
    def internal_storage(self) -> bool:
        """True if the key material is stored in the file (False: in the sidecar)."""
        return self.material is not None

    def to_bytes(self) -> bytes:
        """The key_metadata bytes a file stores.

        Returns
        -------
        bytes
            Compact JSON.

        Raises
        ------
        None
            Nothing of its own.
        """
        if self.material is not None:
            return self.material.to_json().encode("utf-8")
        items: list[tuple[str, object]] = [("keyMaterialType", KEY_MATERIAL_TYPE),
                                           ("internalStorage", False), ("keyReference", self.key_reference)]
        return java_hashmap_json(items, _METADATA_MAP_CAPACITY).encode("utf-8")

    @staticmethod
    def looks_like_key_tools(key_metadata: bytes) -> bool:
        """True if the bytes are a JSON object (key tools), False for a plain key id.

        Parameters
        ----------
        key_metadata : bytes
            A chunk's or the footer's key metadata.

        Returns
        -------
        bool
            Whether it is key tools metadata.

        Raises
        ------
        None
            Nothing of its own.
        """
        return bytes(key_metadata[:64]).lstrip().startswith(b"{")

    @classmethod
    def from_bytes(cls, key_metadata: bytes) -> KeyMetadata:
        """Parse a file's key_metadata, once per distinct blob: the same bytes give the same
        (immutable) object, from a bounded cache of the last :data:`PARSED_KEY_METADATA` blobs
        (a file's key label, its unwrap and a lookup's recheck share one parse; key metadata
        holds wrapped keys and ids, never a key).

        Parameters
        ----------
        key_metadata : bytes
            A chunk's or the footer's key metadata, as stored in the file: key-tools JSON.

        Returns
        -------
        KeyMetadata
            Either the key material itself (internal storage) or a reference into the file's
            key-material sidecar (``keyReference``).

        Raises
        ------
        secure_bloom.errors.MalformedKeyMaterialError
            The JSON does not parse, or a field is missing or of the wrong type (the message
            names it). Raised on every call with those bytes: failures are not cached.
        """
        raw = bytes(key_metadata)
        return _parsed_key_metadata(raw) if cls is KeyMetadata else _parse_key_metadata(cls, raw)


#: How many distinct key_metadata blobs :meth:`KeyMetadata.from_bytes` keeps parsed.
PARSED_KEY_METADATA = 1024


def _parse_key_metadata(cls: type[KeyMetadata], raw: bytes) -> KeyMetadata:
    obj = _load_object(raw, "key metadata")
    internal = obj.get("internalStorage")
    if type(internal) is not bool:
        internal = _field(obj, "internalStorage", bool, "key metadata")
    if internal:
        return cls(material=KeyMaterial.from_dict(obj))
    reference = _field(obj, "keyReference", str, "key metadata")
    return _built("key metadata", lambda: cls(key_reference=reference))


@functools.lru_cache(maxsize=PARSED_KEY_METADATA)
def _parsed_key_metadata(raw: bytes) -> KeyMetadata:
    return _parse_key_metadata(KeyMetadata, raw)
