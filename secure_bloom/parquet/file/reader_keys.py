"""The keys of an open Parquet file's chunks and their decrypted ColumnMetaData: the second part of
:class:`~secure_bloom.parquet.file.reader.ParquetBloomReader`.

Spec: Encryption.md "Key metadata", "AAD", "Encrypted column metadata" (module type 1;
SPEC_NOTES 4-6). Keys are unwrapped once per key metadata and kept no longer than the KEKs they
come from (:class:`~.chunk_keys.ChunkKeys`); ColumnMetaData is decrypted on first use and kept
(:class:`~.chunk_metadata.ChunkMetadata`). Key ids are printable labels, never key bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...crypto.context import ChunkCryptoContext
from ...kms import KeyGrant, KeyMaterialStore
from .chunk import ColumnChunk, FilterLocation
from .chunk_metadata import ChunkMetadata
from .footer import master_key_of
from .reader_chunks import ReaderChunks
from .schema import ColumnRef

__all__ = ["ReaderKeys"]


class ReaderKeys(ReaderChunks):
    """Keys and decrypted metadata of the open file's chunks (a part of
    :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader`; not made on its own)."""

    #: The chunks' full ColumnMetaData (:class:`~.chunk_metadata.ChunkMetadata`).
    chunk_metadata: ChunkMetadata
    _load_sidecar: Callable[[], KeyMaterialStore]


    def _key_metadata(self, chunk: ColumnChunk) -> bytes | None:
        """The metadata of the key ``chunk`` is encrypted with (the footer key's for FOOTER_KEY)."""
        return self.chunk_keys.key_metadata(chunk)

    @property
    def footer_key_id(self) -> str | None:
        """A printable id of the footer key (its master key id, from the sidecar for external
        material); None for a plaintext file."""
        return self._key_label(self.footer.footer_key_metadata) if self.footer.encrypted else None

    def key_id(self, chunk: ColumnChunk) -> str | None:
        """A printable id of the chunk's key (None for a plaintext chunk); never key bytes: the
        explicit key id, or the master key id of its key material (external material looked up in
        the sidecar; ``external:<reference>`` when it cannot be read).

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose key is named.

        Returns
        -------
        str or None
            The label, None for a plaintext chunk.

        Raises
        ------
        None
            Made from the key metadata; an unreadable one or sidecar is named, not raised.
        """
        return self._key_label(self._key_metadata(chunk)) if chunk.encrypted else None

    def master_key_id(self, chunk: ColumnChunk | None = None) -> str | None:
        """The KMS master key id an encrypted chunk's key (``chunk`` None: the footer key) is
        wrapped under.

        Parameters
        ----------
        chunk : ColumnChunk, optional
            A chunk of this file; None: the footer key.

        Returns
        -------
        str or None
            The master key id; None for a plaintext chunk or file, a bare (explicit) key id,
            unreadable key metadata or a sidecar that cannot be read.

        Raises
        ------
        None
            Failures to read the key material give None.
        """
        if chunk is None:
            return master_key_of(self.footer.footer_key_metadata, self._load_sidecar) if self.footer.encrypted else None
        return master_key_of(self._key_metadata(chunk), self._load_sidecar) if chunk.encrypted else None

    def key_for(self, chunk: ColumnChunk) -> bytes:
        """The key of an encrypted chunk (the footer key for FOOTER_KEY chunks), unwrapped once per
        key metadata and kept for ``keys.cache_lifetime_s`` (:meth:`.ChunkKeys.key_for`).

        Parameters
        ----------
        chunk : ColumnChunk
            An encrypted chunk of this file (its key is wanted).

        Returns
        -------
        bytes
            The data key (never logged or shown).

        Raises
        ------
        ValueError
            ``chunk`` is plaintext.
        secure_bloom.errors.MissingKeyError
            The key is not available: no keys were given, the KMS or the explicit keys do not hold
            it, or the footer key was not obtained.
        secure_bloom.errors.KeyManagementError
            The KMS failed otherwise (access denied, unavailable, key disabled).
        secure_bloom.errors.MalformedKeyMaterialError
            The key metadata or the sidecar's key material is damaged.
        """
        return self.chunk_keys.key_for(chunk)

    def key_grant(self, chunk: ColumnChunk) -> KeyGrant | None:
        """How to recheck access to the key of an encrypted chunk this reader obtained (the
        footer key's for FOOTER_KEY chunks), for :meth:`~secure_bloom.kms.KeyUnwrapper.recheck`.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose key's grant is asked for.

        Returns
        -------
        KeyGrant or None
            None for a plaintext chunk, a reader without keys, or a key not obtained yet.

        Raises
        ------
        None
            A lookup of the grants kept; nothing is unwrapped.
        """
        return self.chunk_keys.grant(chunk)

    @property
    def footer_grant(self) -> KeyGrant | None:
        """How to recheck access to the footer key the footer was decrypted or verified with;
        None when it needed none (plaintext, or read unverified)."""
        return self.chunk_keys.footer_grant()

    def crypto_context(self, chunk: ColumnChunk) -> ChunkCryptoContext:
        """Key, file AAD and ordinals of an encrypted chunk (Encryption.md, "AAD"): made once per
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
        ValueError
            ``chunk`` is plaintext.
        secure_bloom.errors.MissingKeyError
            The chunk's key is not available, or the file AAD is not (a withheld AAD prefix not
            supplied).
        secure_bloom.errors.KeyManagementError
            The KMS failed otherwise (as :meth:`key_for`).
        """
        return self.chunk_keys.crypto_context(chunk)

    def key_available(self, chunk: ColumnChunk) -> bool:
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
            The KMS failed for another reason than a missing key (a missing key is False).
        """
        return self.chunk_keys.available(chunk)

    def column_metadata(self, chunk: ColumnChunk) -> Any:
        """The chunk's full ColumnMetaData (Thrift object): as stored for a plaintext chunk, else
        decrypted from its ``encrypted_column_metadata`` module (type 1) on first use and kept.
        Lookups over many row groups read through :meth:`column_metadata_many`.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose metadata is read.

        Returns
        -------
        ColumnMetaData
            The Thrift object.

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            The chunk's key or the file AAD is not available.
        secure_bloom.errors.KeyManagementError
            The KMS failed otherwise.
        secure_bloom.errors.ModuleAuthenticationError
            The module fails authentication (a wrong key, tampered, or moved from another chunk).
        secure_bloom.errors.MalformedInputError
            The module or its Thrift is damaged.
        """
        return self.chunk_metadata.of(chunk)[0]

    def column_metadata_thrift(self, chunk: ColumnChunk) -> bytes | None:
        """The exact decrypted Thrift of an encrypted ColumnMetaData, as its module holds it.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose encrypted metadata is read.

        Returns
        -------
        bytes or None
            The plaintext module; None when the chunk's metadata is not stored encrypted.

        Raises
        ------
        secure_bloom.errors.KeyManagementError, AuthenticationError, MalformedInputError
            As :meth:`column_metadata` (a missing key or file AAD, a module failing
            authentication or damaged).
        """
        return self.chunk_metadata.of(chunk)[1]

    def column_metadata_many(self, column: ColumnRef, row_groups: Sequence[int]) -> list[Any]:
        """:meth:`column_metadata` of the column's chunk in each of ``row_groups``: the encrypted
        ones decrypted together, one call per key (in C, the GIL released, where the extension is
        built), with the errors :meth:`column_metadata` raises.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.
        row_groups : sequence of int
            The row groups.

        Returns
        -------
        list
            The ColumnMetaData (Thrift objects), in order.

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.MissingKeyError
            A chunk's key is not available.
        secure_bloom.errors.AuthenticationError
            A ColumnMetaData fails authentication.
        secure_bloom.errors.MalformedInputError
            A ColumnMetaData is damaged.
        """
        return self.chunk_metadata.many(self.chunks_of(column, row_groups))

    def column_facts_many(self, column: ColumnRef, row_groups: Sequence[int]) -> list[Any]:
        """What a lookup reads of the column's chunk in each of ``row_groups`` (its statistics,
        ``num_values``, ``bloom_filter_offset`` and ``bloom_filter_length``): as
        :meth:`column_metadata_many`, the encrypted ones decrypted together, but only those four
        fields made (every other field checked, not made; the full ColumnMetaData is decoded
        from the kept plaintext if :meth:`column_metadata` asks for it later).

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.
        row_groups : sequence of int
            The row groups.

        Returns
        -------
        list
            Per row group, a :class:`~secure_bloom.parquet.file.chunk_metadata.ChunkFacts` or
            the ColumnMetaData (both answer the four attributes), in order.

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.MissingKeyError
            A chunk's key is not available.
        secure_bloom.errors.AuthenticationError
            A ColumnMetaData fails authentication.
        secure_bloom.errors.MalformedInputError
            A ColumnMetaData is damaged.
        """
        return self.chunk_metadata.facts_many(self.chunks_of(column, row_groups))

    def metadata_readable(self, chunk: ColumnChunk) -> bool:
        """Whether :meth:`column_metadata` can be asked without a missing key or file AAD (it may
        still fail authentication).

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose metadata would be read.

        Returns
        -------
        bool
            True for metadata stored in plaintext or already decrypted, else whether the key and
            the file AAD are available.

        Raises
        ------
        secure_bloom.errors.KeyManagementError
            The KMS failed for another reason than a missing key (a missing key is False).
        """
        return self.chunk_metadata.readable(chunk)

    def filter_location(self, chunk: ColumnChunk) -> FilterLocation | None:
        """Where the chunk's filter lies: ``bloom_filter_offset`` and ``bloom_filter_length`` of
        its full ColumnMetaData (BloomFilter.md, "File Format"); decrypts it if needed.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose filter is located.

        Returns
        -------
        FilterLocation or None
            None when the chunk has no filter (or no metadata).

        Raises
        ------
        secure_bloom.errors.KeyManagementError, AuthenticationError, MalformedInputError
            Its ColumnMetaData is encrypted and cannot be read: as :meth:`column_metadata`.
        """
        return self.chunk_metadata.filter_location(chunk)
