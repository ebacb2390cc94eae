"""The keys of one open file's chunks: resolved on first use, kept as long as their KEKs, dropped at close.

Spec: Encryption.md "Encryption with column keys" / "Encryption with footer key" and "AAD"
(SPEC_NOTES 4). A COLUMN_KEY chunk's data key is unwrapped once per distinct key metadata and kept
for ``KeyAccess.cache_lifetime_s`` with the AES-GCM contexts made from it (one expiring entry, so
a context never outlives its key); FOOTER_KEY chunks use the footer key the footer was opened
with, held until :meth:`ChunkKeys.close`. A key that cannot be obtained is
:class:`~secure_bloom.errors.MissingKeyError`, never "absent". Key bytes never appear in a repr
or a message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...crypto.context import ChunkCryptoContext
from ...crypto.gcm import GcmKey
from ...crypto.modules import ModuleType, chunk_ordinals, module_aad, module_aad_prefix
from ...errors import KeyNotFoundError, MissingKeyError
from ...kms import FileKeyUnwrapper, KeyGrant
from ...kms.cache import ExpiringCache
from ...types import ChunkEncryption
from .chunk import ColumnChunk
from .footer import Footer

__all__ = ["ChunkKeys"]


class _ColumnKey:
    """One column key and the chunk contexts made with it: they live in one expiring cache entry,
    so a context never outlives its key there (KeyAccess.cache_lifetime_s). No key in its repr."""

    __slots__ = ("key", "contexts", "_gcm")

    def __init__(self, key: bytes) -> None:
        self.key = key
        self.contexts: dict[tuple[int, int], ChunkCryptoContext] = {}
        self._gcm: GcmKey | None = None

    @property
    def gcm(self) -> GcmKey:
        """The key's reusable AES-GCM contexts (made on first use)."""
        if self._gcm is None:
            self._gcm = GcmKey(self.key)
        return self._gcm

    def __repr__(self) -> str:
        return f"_ColumnKey(<{len(self.key)} bytes>, contexts={len(self.contexts)})"


class ChunkKeys:
    """The keys, key labels, grants and crypto contexts of one file's encrypted chunks.

    Made by :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader` when it opens a file
    (its :attr:`~secure_bloom.parquet.file.reader.ParquetBloomReader.chunk_keys`).

    Parameters
    ----------
    path : str
        The file's display path (named in messages).
    footer : Footer
        The opened footer: its footer key (None when not available), key metadata and file AAD.
    retriever : FileKeyUnwrapper or None
        Unwraps key metadata into a data key and keeps its grant
        (:meth:`~secure_bloom.parquet.file.keys.KeyAccess.retriever`); None: no keys were given.
    label : callable
        A printable label of key metadata (never key bytes).
    cache_lifetime_s : float
        How long an unwrapped column key is kept.
    """

    def __init__(self, path: str, footer: Footer, retriever: FileKeyUnwrapper | None, label: Callable[[bytes | None], str],
                 cache_lifetime_s: float) -> None:
        self.path = path
        self._footer = footer
        self._footer_key = footer.footer_key
        self._retriever = retriever
        self._label = label
        self._column_keys: ExpiringCache[bytes, _ColumnKey] = ExpiringCache(cache_lifetime_s)
        # Contexts of FOOTER_KEY chunks: the footer key is held until close(), and so are they.
        self._footer_contexts: dict[tuple[int, int], ChunkCryptoContext] = {}
        self._footer_gcm: GcmKey | None = None

    def __repr__(self) -> str:
        return f"ChunkKeys({self.path!r}, held={self.held})"

    @property
    def held(self) -> int:
        """How many data keys are held now (the footer key and cached column keys)."""
        return len(self._column_keys) + (self._footer_key is not None)

    def close(self) -> None:
        """Drop every key and context held (the footer key included).

        Raises
        ------
        None
            Closing twice is fine.
        """
        self._column_keys.clear()
        self._footer_contexts.clear()
        self._footer_gcm = None
        self._footer_key = None

    # ---------------------------------------------------------------- labels and grants

    def key_metadata(self, chunk: ColumnChunk) -> bytes | None:
        """The metadata of the key ``chunk`` is encrypted with (the footer key's for FOOTER_KEY).

        Parameters
        ----------
        chunk : ColumnChunk
            A chunk of this file.

        Returns
        -------
        bytes or None
            The key metadata; None for a plaintext chunk or none stored.

        Raises
        ------
        None
            Read from the footer.
        """
        if chunk.encryption is ChunkEncryption.FOOTER_KEY:
            return self._footer.footer_key_metadata
        return chunk.key_metadata

    def grant(self, chunk: ColumnChunk) -> KeyGrant | None:
        """How to recheck access to the key of an encrypted chunk obtained so far (the footer
        key's for FOOTER_KEY chunks).

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose key's grant is asked for.

        Returns
        -------
        KeyGrant or None
            None for a plaintext chunk, no keys, or a key not obtained yet.

        Raises
        ------
        None
        """
        kmd = self.key_metadata(chunk) if chunk.encrypted else None
        if kmd is None or self._retriever is None:
            return None
        return self._retriever.grant(bytes(kmd))

    def footer_grant(self) -> KeyGrant | None:
        """How to recheck access to the footer key the footer was opened with.

        Returns
        -------
        KeyGrant or None
            None when the footer needed no key (plaintext, or read unverified) or keys are closed.

        Raises
        ------
        None
            A lookup of the grants kept.
        """
        kmd = self._footer.footer_key_metadata
        if self._footer_key is None or kmd is None or self._retriever is None:
            return None
        return self._retriever.grant(bytes(kmd))

    # ---------------------------------------------------------------- keys

    def key_for(self, chunk: ColumnChunk) -> bytes:
        """The data key of an encrypted chunk (the footer key for FOOTER_KEY chunks).

        Parameters
        ----------
        chunk : ColumnChunk
            An encrypted chunk of this file.

        Returns
        -------
        bytes
            The data key (never logged or shown).

        Raises
        ------
        ValueError, secure_bloom.errors.KeyManagementError
            As :meth:`~.reader.ParquetBloomReader.key_for`.
        """
        if chunk.encryption is ChunkEncryption.FOOTER_KEY:
            return self._footer_key_of(chunk)
        return self._column_key(chunk).key

    def available(self, chunk: ColumnChunk) -> bool:
        """True for a plaintext chunk, or when :meth:`key_for` finds the chunk's key.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk.

        Returns
        -------
        bool
            Whether the caller's keys open it.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            As :meth:`~.reader.ParquetBloomReader.key_available`.
        """
        if not chunk.encrypted:
            return True
        try:
            self.key_for(chunk)
            return True
        except MissingKeyError:
            return False

    def crypto_context(self, chunk: ColumnChunk) -> ChunkCryptoContext:
        """Key, file AAD and ordinals of an encrypted chunk (Encryption.md, "AAD"), made once per
        chunk and kept as long as its key.

        Parameters
        ----------
        chunk : ColumnChunk
            An encrypted chunk of this file.

        Returns
        -------
        ChunkCryptoContext
            What its modules are decrypted with.

        Raises
        ------
        ValueError, secure_bloom.errors.KeyManagementError
            As :meth:`~.reader.ParquetBloomReader.crypto_context`.
        """
        if chunk.encryption is ChunkEncryption.FOOTER_KEY:
            key, contexts = self._footer_key_of(chunk), self._footer_contexts
        else:
            entry = self._column_key(chunk)
            key, contexts = entry.key, entry.contexts
        at = (chunk.row_group, chunk.column.ordinal)
        context = contexts.get(at)
        if context is None:
            context = contexts[at] = ChunkCryptoContext(key, self._footer.require_file_aad(),
                                                        chunk.row_group_ordinal, chunk.column.ordinal)
        return context

    def by_key(self, chunks: Sequence[ColumnChunk]) -> list[tuple[GcmKey, list[ColumnChunk]]]:
        """Encrypted ``chunks`` grouped by key, each key resolved once with its reusable AES-GCM
        contexts: what a batch of modules is opened with, one native call per key.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Encrypted chunks of this file.

        Returns
        -------
        list of (GcmKey, list of ColumnChunk)
            One entry per key, the chunks in the order given.

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            A chunk's key is not available.
        secure_bloom.errors.KeyManagementError
            The KMS failed otherwise.
        """
        groups: dict[tuple[ChunkEncryption, bytes | None], tuple[GcmKey, list[ColumnChunk]]] = {}
        for chunk in chunks:
            at = (chunk.encryption, chunk.key_metadata)
            group = groups.get(at)
            if group is None:
                group = groups[at] = (self._gcm_key(chunk), [])
            group[1].append(chunk)
        return list(groups.values())

    def aads(self, chunks: Sequence[ColumnChunk], module_type: ModuleType) -> list[bytes]:
        """The AAD of each encrypted chunk's module of ``module_type`` (Encryption.md, "AAD").

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Encrypted chunks of this file.
        module_type : ModuleType
            The module (ColumnMetaData, BloomFilterHeader, BloomFilterBitset...).

        Returns
        -------
        list of bytes
            One AAD per chunk.

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            The file AAD is not available (a withheld AAD prefix not supplied).
        """
        file_aad = self._footer.require_file_aad()
        if module_type in (ModuleType.FOOTER, ModuleType.DATA_PAGE, ModuleType.DATA_PAGE_HEADER):
            return [module_aad(file_aad, module_type, chunk.row_group_ordinal, chunk.column.ordinal) for chunk in chunks]
        prefix = module_aad_prefix(file_aad, module_type)  # the same bytes module_aad makes, the prefix once
        return [prefix + chunk_ordinals(chunk.row_group_ordinal, chunk.column.ordinal) for chunk in chunks]

    def _footer_key_of(self, chunk: ColumnChunk) -> bytes:
        if self._footer_key is None:
            raise MissingKeyError(
                f"{self.path}: column {chunk.column.path!r} is encrypted with the footer key "
                f"{self._label(self._footer.footer_key_metadata)!r}, which is not available")
        return self._footer_key

    def _column_key(self, chunk: ColumnChunk) -> _ColumnKey:
        """The cache entry of a COLUMN_KEY chunk's key (the key and its chunks' contexts)."""
        if not chunk.encrypted:
            raise ValueError(f"{self.path}: {chunk.where} is not encrypted; it has no key")
        kmd = bytes(chunk.key_metadata or b"")
        retriever = self._retriever
        if retriever is None:
            raise MissingKeyError(f"{self.path}: column {chunk.column.path!r} needs key "
                                  f"{self._label(chunk.key_metadata)!r} and no keys were given")

        def unwrap() -> _ColumnKey:
            try:
                return _ColumnKey(retriever(kmd))
            except (MissingKeyError, KeyNotFoundError) as e:
                raise MissingKeyError(f"{self.path}: column {chunk.column.path!r} needs key "
                                      f"{self._label(chunk.key_metadata)!r}: {e}") from None

        return self._column_keys.get_or_create(kmd, unwrap)

    def _gcm_key(self, chunk: ColumnChunk) -> GcmKey:
        """The reusable AES-GCM contexts of an encrypted chunk's key, made once per key."""
        if chunk.encryption is ChunkEncryption.FOOTER_KEY:
            key = self._footer_key_of(chunk)
            if self._footer_gcm is None:
                self._footer_gcm = GcmKey(key)
            return self._footer_gcm
        return self._column_key(chunk).gcm
