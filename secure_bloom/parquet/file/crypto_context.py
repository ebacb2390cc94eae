"""The encryption parameters of one Parquet file and the Thrift modules they protect.

Spec: Parquet Encryption.md, "Encryption algorithms", "AAD prefix", "Encrypted footer mode",
"Plaintext footer mode" and "Column metadata" (SPEC_NOTES 4-6). No I/O here: the file layer
hands in bytes and resolved keys.

* ``file_aad = aad_prefix | aad_file_unique``. The prefix is stored in the file, or withheld
  (``supply_aad_prefix``) and supplied by the reader; a supplied prefix must equal a stored one,
  and may not be supplied for a file written without one (parquet-java refuses both).
* Thrift modules (footer, type 0; ColumnMetaData, type 1) are AES-GCM in both algorithms.
  parquet-java encrypts its whole serialisation buffer, so the plaintext is Thrift followed by
  zero padding: it is parsed up to the STOP and the rest must be zeros.
* The plaintext footer's signature is ``nonce (12) | tag (16)`` of the footer Thrift encrypted
  with the footer key and the footer AAD.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass
from typing import Any, TypeVar

from ... import thrift_codec
from ...crypto import gcm
from ...crypto.context import ChunkCryptoContext
from ...crypto.modules import ModuleType, decrypt_module, encrypt_module, module_aad
from ...errors import (
    AuthenticationError,
    FooterSignatureError,
    MalformedModuleError,
    MalformedThriftError,
    MissingKeyError,
    ModuleAuthenticationError,
)
from ...spec import NONCE_LENGTH, TAG_LENGTH

__all__ = [
    "parse_thrift_plaintext",
    "MAX_THRIFT_MODULE_BYTES",
    "EncryptionParams",
    "SIGNATURE_LENGTH",
    "resolve_file_aad",
    "decrypt_thrift_module",
    "encrypt_thrift_module",
    "sign_footer",
    "verify_footer_signature",
    "decrypt_column_metadata",
    "encrypt_column_metadata",
]

SIGNATURE_LENGTH = NONCE_LENGTH + TAG_LENGTH
#: Decrypted Thrift modules larger than this are refused (footers of huge files reach a few MiB).
#: The largest Thrift module (footer, ColumnMetaData) a reader decrypts.
MAX_THRIFT_MODULE_BYTES = 256 << 20

T = TypeVar("T")


@dataclass(frozen=True)
class EncryptionParams:
    """``EncryptionAlgorithm`` of a file: which algorithm, and its AAD fields.

    Parameters
    ----------
    algorithm : str
        ``AES_GCM_V1`` or ``AES_GCM_CTR_V1``.
    aad_file_unique : bytes
        The file's unique AAD part.
    aad_prefix_stored : bytes or None
        The AAD prefix, when the file stores it.
    supply_aad_prefix : bool
        The reader must supply the prefix (the file withholds it).
    """

    algorithm: str                 # "AES_GCM_V1" or "AES_GCM_CTR_V1"
    aad_file_unique: bytes
    aad_prefix_stored: bytes | None
    supply_aad_prefix: bool

    @classmethod
    def from_thrift(cls, alg: Any) -> EncryptionParams:
        """From an ``EncryptionAlgorithm`` union (FileCryptoMetaData 1 or FileMetaData 8;
        Encryption.md, "Encryption algorithms").

        Parameters
        ----------
        alg : EncryptionAlgorithm
            The Thrift union (``AES_GCM_V1`` or ``AES_GCM_CTR_V1`` set).

        Returns
        -------
        EncryptionParams
            The algorithm's name, ``aad_file_unique`` (empty when absent), the stored AAD prefix
            and ``supply_aad_prefix``.

        Raises
        ------
        AttributeError
            Neither member of the union is set.
        """
        if alg.AES_GCM_V1 is not None:
            name, inner = "AES_GCM_V1", alg.AES_GCM_V1
        else:
            name, inner = "AES_GCM_CTR_V1", alg.AES_GCM_CTR_V1
        return cls(algorithm=name, aad_file_unique=bytes(inner.aad_file_unique or b""),
                   aad_prefix_stored=bytes(inner.aad_prefix) if inner.aad_prefix is not None else None,
                   supply_aad_prefix=bool(inner.supply_aad_prefix))

    def to_dict(self) -> dict[str, Any]:
        """For ``inspect --json``: the algorithm and how the AAD prefix is handled (not its value).

        Returns
        -------
        dict
            ``algorithm``, ``aad_prefix_stored`` (bool) and ``supply_aad_prefix``.

        Raises
        ------
        None
            Copies the fields.
        """
        return {"algorithm": self.algorithm,
                "aad_prefix_stored": self.aad_prefix_stored is not None,
                "supply_aad_prefix": self.supply_aad_prefix}


def resolve_file_aad(params: EncryptionParams, supplied_prefix: bytes | None, where: str) -> bytes:
    """``aad_prefix | aad_file_unique`` with the prefix rules of Encryption.md "AAD prefix".

    Parameters
    ----------
    params : EncryptionParams
        The footer's encryption algorithm parameters.
    supplied_prefix : bytes or None
        The caller's AAD prefix.
    where : str
        The file, as messages name it.

    Returns
    -------
    bytes
        The file AAD.

    Raises
    ------
    secure_bloom.errors.MissingKeyError
        The file withholds its prefix and none was supplied.
    secure_bloom.errors.AuthenticationError
        A supplied prefix differs from the one the file stores, or is given for a file written
        without one.
    """
    stored = params.aad_prefix_stored
    if supplied_prefix is not None:
        supplied = bytes(supplied_prefix)
        if stored is not None and not hmac.compare_digest(stored, supplied):
            raise AuthenticationError(f"{where}: the AAD prefix supplied differs from the one stored in the file")
        if stored is None and not params.supply_aad_prefix:
            raise AuthenticationError(
                f"{where}: an AAD prefix was supplied but the file was written without one")
        prefix = supplied
    elif params.supply_aad_prefix:
        raise MissingKeyError(
            f"{where}: the file was written with a withheld AAD prefix (supply_aad_prefix); "
            "pass it as KeyAccess(aad_prefix=...)")
    else:
        prefix = stored or b""
    return prefix + params.aad_file_unique



def decrypt_thrift_module(cls: type[T], module: bytes | memoryview, key: bytes | gcm.GcmKey, aad: bytes,
                          module_type: ModuleType, *, what: str,
                          exact: bool = True) -> tuple[T, bytes, int]:
    """Decrypt a GCM module holding one Thrift struct; returns ``(obj, thrift_bytes, consumed)``.

    ``thrift_bytes`` are the plaintext up to and including the STOP (zero padding removed).
    With ``exact`` the module must fill ``module`` (no trailing bytes).

    Parameters
    ----------
    cls : type
        The Thrift struct.
    module : bytes-like
        The module, length prefix first.
    key : bytes or GcmKey
        The key.
    aad : bytes
        The module's AAD.
    module_type : ModuleType
        Names the module in errors.
    what : str
        What messages call it.
    exact : bool, default True
        The module must fill ``module``.

    Returns
    -------
    (object, bytes, int)
        The struct, its Thrift bytes and the bytes consumed.

    Raises
    ------
    secure_bloom.errors.ModuleAuthenticationError
        The module fails authentication.
    secure_bloom.errors.MalformedModuleError
        Framing that does not add up, or trailing bytes with ``exact``.
    secure_bloom.errors.MalformedThriftError
        The plaintext is not the struct.
    """
    try:
        plain, consumed = decrypt_module(module, key, aad, module_type=module_type,
                                         max_plaintext=MAX_THRIFT_MODULE_BYTES)
    except ModuleAuthenticationError:
        raise ModuleAuthenticationError(module_type, what) from None
    if exact and consumed != len(memoryview(module)):
        raise MalformedThriftError(f"{what}: {len(memoryview(module)) - consumed} bytes after the encrypted module")
    obj, thrift = parse_thrift_plaintext(cls, plain, what=what)
    return obj, thrift, consumed


def parse_thrift_plaintext(cls: type[T], plain: bytes, *, what: str) -> tuple[T, bytes]:
    """The Thrift struct a decrypted module holds, then only zero padding (Encryption.md allows
    it after the STOP): ``(obj, thrift_bytes)``.

    Parameters
    ----------
    cls : type
        The Thrift struct.
    plain : bytes
        The module's plaintext.
    what : str
        What messages call it.

    Returns
    -------
    (object, bytes)
        The struct and its Thrift bytes (the padding removed).

    Raises
    ------
    secure_bloom.errors.MalformedThriftError
        The plaintext is not the struct, or non-zero bytes follow it.
    """
    obj, used = thrift_codec.parse(cls, plain, what=what)
    padding = plain[used:]
    if padding.count(0) != len(padding):
        raise MalformedThriftError(f"{what}: {len(padding)} bytes after the Thrift STOP are not zero padding")
    return obj, plain[:used]


def encrypt_thrift_module(obj: Any, key: bytes, aad: bytes) -> bytes:
    """One GCM module holding ``obj``'s compact Thrift (no padding).

    Parameters
    ----------
    obj : object
        A Thrift struct.
    key : bytes
        The key.
    aad : bytes
        The module's AAD.

    Returns
    -------
    bytes
        The module.

    Raises
    ------
    secure_bloom.errors.KeyUsageLimitError
        The key has made 2^32 encryptions.
    """
    return encrypt_module(thrift_codec.serialize(obj), key, aad)


def decrypt_column_metadata(cls: type[T], module: bytes | memoryview, chunk: ChunkCryptoContext, *,
                            what: str) -> tuple[T, bytes]:
    """A chunk's encrypted ColumnMetaData (module type 1): ``(obj, thrift_bytes)``.

    Parameters
    ----------
    cls : type
        The ColumnMetaData struct.
    module : bytes-like
        The module, length prefix first.
    chunk : ChunkCryptoContext
        The chunk's key and AAD.
    what : str
        What messages call it.

    Returns
    -------
    (object, bytes)
        The struct and its Thrift bytes.

    Raises
    ------
    secure_bloom.errors.ModuleAuthenticationError
        The module fails authentication.
    secure_bloom.errors.MalformedModuleError
        Framing that does not add up, or trailing bytes (the message names ``what``).
    secure_bloom.errors.MalformedThriftError
        The plaintext is not the struct.
    """
    try:
        obj, thrift, _ = decrypt_thrift_module(cls, module, chunk.key, chunk.aad(ModuleType.COLUMN_META_DATA),
                                               ModuleType.COLUMN_META_DATA, what=what)
    except MalformedModuleError as e:  # the framing's message names the module type: name the chunk too
        raise type(e)(f"{what}: {e}") from None
    return obj, thrift


def encrypt_column_metadata(meta: Any, chunk: ChunkCryptoContext) -> bytes:
    """A chunk's ColumnMetaData as its encrypted module (type 1).

    Parameters
    ----------
    meta : ColumnMetaData
        The chunk's metadata.
    chunk : ChunkCryptoContext
        The chunk's key and AAD.

    Returns
    -------
    bytes
        The encrypted module (type 1).

    Raises
    ------
    secure_bloom.errors.KeyUsageLimitError
        The key has made 2^32 encryptions.
    """
    return encrypt_thrift_module(meta, chunk.key, chunk.aad(ModuleType.COLUMN_META_DATA))


def sign_footer(footer_thrift: bytes, key: bytes, file_aad: bytes) -> bytes:
    """The 28-byte signature of a plaintext footer, with a fresh nonce.

    Parameters
    ----------
    footer_thrift : bytes
        The footer's Thrift bytes.
    key : bytes
        The footer key.
    file_aad : bytes
        The file's AAD.

    Returns
    -------
    bytes
        nonce (12) + tag (16).

    Raises
    ------
    secure_bloom.errors.KeyUsageLimitError
        The key has made 2^32 encryptions.
    """
    return gcm.sign(key, footer_thrift, module_aad(file_aad, ModuleType.FOOTER), os.urandom(NONCE_LENGTH))


def verify_footer_signature(footer_thrift: bytes, signature: bytes, key: bytes | gcm.GcmKey, file_aad: bytes,
                            where: str) -> None:
    """Raise :class:`FooterSignatureError` unless ``signature`` signs ``footer_thrift``.

    Parameters
    ----------
    footer_thrift : bytes
        The footer's Thrift bytes.
    signature : bytes
        The 28 stored bytes.
    key : bytes or GcmKey
        The footer key.
    file_aad : bytes
        The file's AAD.
    where : str
        The file, as messages name it.

    Raises
    ------
    secure_bloom.errors.FooterSignatureError
        The signature does not verify.
    """
    if len(signature) != SIGNATURE_LENGTH:
        raise FooterSignatureError(f"{where}: footer signature is {len(signature)} bytes, expected {SIGNATURE_LENGTH}")
    expected = gcm.sign(key, footer_thrift, module_aad(file_aad, ModuleType.FOOTER), signature[:NONCE_LENGTH])
    if not hmac.compare_digest(expected, bytes(signature)):
        raise FooterSignatureError(
            f"{where}: the plaintext footer's signature does not verify (wrong footer key, wrong AAD "
            "prefix, or tampered footer)")
