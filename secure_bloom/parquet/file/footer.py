"""Opening and re-encoding the footer of a Parquet file in any of its three modes.

Spec: Parquet format "Metadata", Encryption.md "Encrypted footer mode" / "Plaintext footer mode"
(SPEC_NOTES 5-6):

* plaintext: ``FileMetaData`` alone;
* plaintext footer, signed: ``FileMetaData`` (with ``encryption_algorithm`` and
  ``footer_signing_key_metadata``) then a 28-byte signature. Readable without keys (plaintext
  columns); the signature is checked whenever the footer key is available;
* encrypted footer ("PARE"): ``FileCryptoMetaData`` then a GCM module (type 0) holding
  ``FileMetaData``, decrypted with the footer key named by ``FileCryptoMetaData.key_metadata``.

:func:`encode_footer` writes a footer of the same mode back (for ``attach``).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ... import thrift_codec
from ...crypto.modules import ModuleType, encrypt_module, footer_aad
from ...errors import KeyManagementError, SecureBloomError, KeyNotFoundError, MalformedThriftError, MissingKeyError
from .crypto_context import (
    SIGNATURE_LENGTH,
    EncryptionParams,
    decrypt_thrift_module,
    resolve_file_aad,
    sign_footer,
    verify_footer_signature,
)
from ...types import FooterMode
from .keys import KeyAccess
from .tail import FileTail

__all__ = ["Footer", "open_footer", "encode_footer", "key_id_of"]

KeyRetriever = Callable[[bytes], bytes]


def key_id_of(key_metadata: bytes | None, sidecar: Callable[[], Any] | None = None) -> str:
    """A printable id for messages and ``inspect``: the explicit key id, the master key id of
    internal key material, or of external material (looked up in ``sidecar()``, a
    :class:`~secure_bloom.kms.KeyMaterialStore`, else ``external:<reference>``). Never key bytes.

    Parameters
    ----------
    key_metadata : bytes or None
        A key's metadata.
    sidecar : callable, optional
        Loads the file's sidecar.

    Returns
    -------
    str
        A printable id.

    Raises
    ------
    None
        Nothing of its own.
    """
    if key_metadata is None:
        return "<no key_metadata>"
    from ...kms import KeyMetadata
    from ...kms.explicit import describe_key_id

    raw = bytes(key_metadata)
    if KeyMetadata.looks_like_key_tools(raw):
        try:
            md = KeyMetadata.from_bytes(raw)
        except Exception:
            return "<unreadable key metadata>"
        if md.material is not None:
            return md.material.master_key_id
        if sidecar is not None:
            try:
                return str(sidecar().get(md.key_reference).master_key_id)
            except (SecureBloomError, OSError):
                pass
        return f"external:{md.key_reference}"
    text = describe_key_id(raw)
    return text[1:-1] if text.startswith("'") and text.endswith("'") else text


def master_key_of(key_metadata: bytes | None, sidecar: Callable[[], Any] | None = None) -> str | None:
    """The KMS master key id of key tools metadata (internal, or external looked up in
    ``sidecar()``); None for a bare (explicit) key id, unreadable metadata or a sidecar that
    cannot be read."""
    if key_metadata is None:
        return None
    from ...kms import KeyMetadata

    raw = bytes(key_metadata)
    if not KeyMetadata.looks_like_key_tools(raw):
        return None
    try:
        md = KeyMetadata.from_bytes(raw)
        if md.material is not None:
            return md.material.master_key_id
        return None if sidecar is None else str(sidecar().get(md.key_reference).master_key_id)
    except (SecureBloomError, OSError):
        return None


@dataclass(frozen=True)
class Footer:
    """A parsed footer and the file-level crypto state readers and writers need.

    ``metadata_thrift`` is the FileMetaData's exact Thrift (decrypted, without padding).
    ``file_aad`` is None only for a plaintext-footer file whose withheld AAD prefix was not
    supplied (``aad_error`` then says why); ``footer_key`` is None when it is not available.

    Parameters
    ----------
    mode : FooterMode
        Plaintext, signed plaintext or encrypted.
    metadata : FileMetaData
        The parsed footer.
    metadata_thrift : bytes
        Its exact Thrift.
    crypto_metadata : FileCryptoMetaData, optional
        An encrypted footer's crypto metadata.
    params : EncryptionParams, optional
        Algorithm, AAD prefix and file unique.
    file_aad : bytes, optional
        The file's AAD (never in the repr).
    aad_error : str, optional
        Why ``file_aad`` is None.
    footer_key : bytes, optional
        The footer key, when available (never in the repr).
    footer_key_metadata : bytes, optional
        The footer key's metadata.
    signature_verified : bool, optional
        A signed plaintext footer: True once verified; None when it could not be.
    """

    mode: FooterMode
    metadata: Any
    metadata_thrift: bytes
    crypto_metadata: Any = None
    params: EncryptionParams | None = None
    file_aad: bytes | None = field(default=None, repr=False)
    aad_error: str | None = None
    footer_key: bytes | None = field(default=None, repr=False)
    footer_key_metadata: bytes | None = None
    signature_verified: bool | None = None

    @property
    def encrypted(self) -> bool:
        """True unless the file is plaintext (a signed plaintext footer counts as encrypted)."""
        return self.mode is not FooterMode.PLAINTEXT

    def require_file_aad(self) -> bytes:
        """The file AAD (Encryption.md, "AAD"): ``aad_prefix | aad_file_unique``.

        Returns
        -------
        bytes
            What every module's AAD starts with.

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            It is not available (a withheld AAD prefix not supplied: ``aad_error`` says why).
        """
        if self.file_aad is None:
            raise MissingKeyError(self.aad_error or "the file AAD is not available")
        return self.file_aad


def _footer_key(retriever: KeyRetriever | None, key_metadata: bytes | None, where: str) -> bytes:
    if retriever is None:
        raise MissingKeyError(f"{where}: the footer key {key_id_of(key_metadata)!r} is needed and no keys were given")
    if key_metadata is None:
        raise MissingKeyError(f"{where}: the footer key has no key_metadata; cannot resolve it")
    try:
        return retriever(bytes(key_metadata))
    except (MissingKeyError, KeyNotFoundError) as e:
        raise MissingKeyError(f"{where}: footer key {key_id_of(key_metadata)!r} not available ({e})") from None


def open_footer(tail: FileTail, keys: KeyAccess, retriever: KeyRetriever | None) -> Footer:
    """Parse (and decrypt or verify) the footer in ``tail``. ``retriever`` maps key_metadata to
    keys (None: no key source at all).

    Parameters
    ----------
    tail : FileTail
        The file's tail.
    keys : KeyAccess
        The caller's keys.
    retriever : callable or None
        key_metadata -> key.

    Returns
    -------
    Footer
        The parsed footer.

    Raises
    ------
    secure_bloom.errors.MalformedThriftError
        The footer does not parse.
    secure_bloom.errors.MissingKeyError
        An encrypted footer's key (or, with keys given, a signing key) cannot be obtained.
    secure_bloom.errors.AuthenticationError
        The footer fails authentication or its signature does not verify.
    """
    m = thrift_codec.idl()
    read_as = thrift_codec.footer_idl().FileMetaData  # each chunk's ColumnMetaData decoded when read
    where = tail.path
    if tail.encrypted_footer:
        crypto, used = thrift_codec.parse(m.FileCryptoMetaData, tail.footer, what="FileCryptoMetaData")
        params = EncryptionParams.from_thrift(crypto.encryption_algorithm)
        aad = resolve_file_aad(params, keys.aad_prefix, where)
        footer_key = _footer_key(retriever, crypto.key_metadata, where)
        detail = "footer (wrong footer key, wrong AAD prefix, or tampered file)"
        metadata, thrift_bytes, _ = decrypt_thrift_module(
            read_as, memoryview(tail.footer)[used:], footer_key, footer_aad(aad), ModuleType.FOOTER,
            what=detail)
        return Footer(mode=FooterMode.ENCRYPTED, metadata=metadata, metadata_thrift=thrift_bytes,
                      crypto_metadata=crypto, params=params, file_aad=aad, footer_key=footer_key,
                      footer_key_metadata=crypto.key_metadata)

    metadata, used = thrift_codec.parse(read_as, tail.footer, what="FileMetaData")
    thrift_bytes = tail.footer[:used]
    rest = len(tail.footer) - used
    if metadata.encryption_algorithm is None:
        if rest:
            raise MalformedThriftError(f"{where}: {rest} bytes after the FileMetaData in the footer")
        _refuse_encrypted_columns(metadata, where)
        return Footer(mode=FooterMode.PLAINTEXT, metadata=metadata, metadata_thrift=thrift_bytes)
    if rest != SIGNATURE_LENGTH:
        raise MalformedThriftError(
            f"{where}: plaintext footer is followed by {rest} bytes, expected the {SIGNATURE_LENGTH}-byte signature")
    params = EncryptionParams.from_thrift(metadata.encryption_algorithm)
    file_aad: bytes | None = None
    aad_error = None
    try:
        file_aad = resolve_file_aad(params, keys.aad_prefix, where)
    except MissingKeyError as e:
        aad_error = str(e)
    kmd = metadata.footer_signing_key_metadata
    key: bytes | None = None
    if retriever is not None and keys.has_keys:
        # Keys were given: the signature must be checked. Failing to obtain the signing key is an
        # error, never a silent downgrade to an unauthenticated footer (an attacker who rewrites
        # footer_signing_key_metadata must not be able to switch verification off).
        try:
            key = _footer_key(retriever, kmd, where)
        except KeyManagementError as e:
            if not keys.allow_unverified_footer:
                raise type(e)(f"{e}; the signed plaintext footer cannot be verified without it "
                              "(KeyAccess(allow_unverified_footer=True) reads it unverified)") from None
        if file_aad is None and not keys.allow_unverified_footer:
            # supply_aad_prefix sits in the unauthenticated footer: whoever sets it must not be
            # able to switch verification off either (parquet-java refuses without the prefix).
            raise MissingKeyError(f"{aad_error}; the signed plaintext footer cannot be verified without it "
                                  "(KeyAccess(allow_unverified_footer=True) reads it unverified)")
    verified: bool | None = None
    if key is not None and file_aad is not None:
        verify_footer_signature(thrift_bytes, tail.footer[used:], key, file_aad, where)
        verified = True
    return Footer(mode=FooterMode.SIGNED, metadata=metadata, metadata_thrift=thrift_bytes, params=params,
                  file_aad=file_aad, aad_error=aad_error, footer_key=key, footer_key_metadata=kmd,
                  signature_verified=verified)


def _refuse_encrypted_columns(metadata: Any, where: str) -> None:
    """A footer without an encryption algorithm whose columns carry crypto metadata is an
    encrypted file with its encryption stripped (and its signature with it): never read as plain."""
    chunks = list(itertools.chain.from_iterable(map(operator.attrgetter("columns"), metadata.row_groups)))
    for name in ("crypto_metadata", "encrypted_column_metadata"):  # C loops: a footer may hold 10^5 chunks
        if list(map(operator.attrgetter(name), chunks)).count(None) == len(chunks):
            continue
        for i, rg in enumerate(metadata.row_groups):
            for j, cc in enumerate(rg.columns):
                if getattr(cc, name) is not None:
                    raise MalformedThriftError(
                        f"{where}: row group {i} column chunk {j} carries encryption metadata but the "
                        "footer declares no encryption algorithm (an encrypted file's footer with its "
                        "encryption removed): refused")


def encode_footer(footer: Footer, metadata: Any) -> bytes:
    """The footer bytes (everything before the 4-byte length) for ``metadata`` in ``footer``'s mode:
    plain Thrift; Thrift + a fresh signature; or FileCryptoMetaData + a fresh footer module.

    Parameters
    ----------
    footer : Footer
        The file's footer (its mode, keys and AAD).
    metadata : FileMetaData
        The new metadata.

    Returns
    -------
    bytes
        The footer bytes.

    Raises
    ------
    secure_bloom.errors.MissingKeyError
        An encrypted or signed footer without its key.
    """
    thrift_bytes = thrift_codec.serialize(metadata)
    if footer.mode is FooterMode.PLAINTEXT:
        return thrift_bytes
    if footer.footer_key is None:
        raise MissingKeyError("the footer key is needed to re-sign or re-encrypt the footer")
    file_aad = footer.require_file_aad()
    if footer.mode is FooterMode.SIGNED:
        return thrift_bytes + sign_footer(thrift_bytes, footer.footer_key, file_aad)
    return (thrift_codec.serialize(footer.crypto_metadata)
            + encrypt_module(thrift_bytes, footer.footer_key, footer_aad(file_aad)))
