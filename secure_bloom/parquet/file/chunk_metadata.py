"""The full ColumnMetaData of one open file's chunks: plaintext as stored, encrypted decrypted once.

Spec: Encryption.md "Encrypted column metadata" (module type 1, SPEC_NOTES 4): an encrypted
chunk's ColumnMetaData is an AES-GCM module in ``encrypted_column_metadata``, bound by its AAD to
the file, the row group and the column. A batch of chunks is opened together, one native call per
key (the GIL released where the extension is built); a failure is named chunk by chunk, as a
single read names it.

A lookup reads four fields of a ColumnMetaData (its statistics, ``num_values`` and where its
Bloom filter lies): :meth:`ChunkMetadata.facts_many` gives them as :class:`ChunkFacts`, the rest
of each structure checked as the full decoding checks it but not made
(:func:`~secure_bloom.thrift_codec.parse_fields`); the full object is decoded from the kept
plaintext when it is asked for.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from ... import thrift_codec
from ...crypto.modules import ModuleType, decrypt_modules
from ...errors import SecureBloomError
from .chunk import ColumnChunk, FilterLocation
from .chunk_keys import ChunkKeys
from .crypto_context import MAX_THRIFT_MODULE_BYTES, decrypt_column_metadata, parse_thrift_plaintext
from .footer import Footer

__all__ = ["ChunkMetadata", "ChunkFacts", "GC_PAUSE_CHUNKS"]

#: Batches of at least this many chunks (their ColumnMetaData, their filters) are decoded with
#: the cyclic GC paused (:func:`~secure_bloom.thrift_codec.gc_paused`): a 2,000-row-group file
#: spent a third of its pruning in collections walking its footer's objects.
GC_PAUSE_CHUNKS = 64
_NO_PAUSE = contextlib.nullcontext()


def gc_pause_for(chunks: int) -> contextlib.AbstractContextManager[Any]:
    """The GC pause for decoding a batch of ``chunks`` objects (none below :data:`GC_PAUSE_CHUNKS`).

    Parameters
    ----------
    chunks : int
        How many chunks the batch decodes.

    Returns
    -------
    context manager
        :func:`~secure_bloom.thrift_codec.gc_paused` or a no-op.

    Raises
    ------
    None
    """
    return thrift_codec.gc_paused() if chunks >= GC_PAUSE_CHUNKS else _NO_PAUSE


class ChunkFacts(NamedTuple):
    """The fields of a chunk's ColumnMetaData a lookup reads, named as its fields are (a plaintext
    chunk's facts are its ColumnMetaData itself: both answer these four attributes).

    Parameters
    ----------
    statistics : Statistics or None
        ``ColumnMetaData.statistics``.
    num_values : int or None
        ``ColumnMetaData.num_values``.
    bloom_filter_offset : int or None
        ``ColumnMetaData.bloom_filter_offset``.
    bloom_filter_length : int or None
        ``ColumnMetaData.bloom_filter_length``.
    """

    statistics: Any
    num_values: int | None
    bloom_filter_offset: int | None
    bloom_filter_length: int | None


#: The ColumnMetaData fields :class:`ChunkFacts` holds, in its order.
_FACT_FIELDS = ("statistics", "num_values", "bloom_filter_offset", "bloom_filter_length")


class ChunkMetadata:
    """Decrypted ColumnMetaData of one file's chunks, kept until :meth:`close`.

    Made by :class:`~secure_bloom.parquet.file.reader.ParquetBloomReader` (its
    :attr:`~secure_bloom.parquet.file.reader.ParquetBloomReader.chunk_metadata`).

    Parameters
    ----------
    footer : Footer
        The opened footer (its file AAD).
    keys : ChunkKeys
        The file's chunk keys.
    """

    def __init__(self, footer: Footer, keys: ChunkKeys) -> None:
        self._footer = footer
        self._keys = keys
        self._decrypted: dict[tuple[int, int], tuple[Any, bytes | None]] = {}
        #: the plaintext modules opened for facts_many, their full objects not decoded yet
        self._plains: dict[tuple[int, int], bytes] = {}
        self._facts: dict[tuple[int, int], ChunkFacts] = {}

    def __repr__(self) -> str:
        return f"ChunkMetadata({self._keys.path!r}, decrypted={len(self._decrypted)})"

    def close(self) -> None:
        """Drop every decrypted ColumnMetaData.

        Raises
        ------
        None
        """
        self._decrypted.clear()
        self._plains.clear()
        self._facts.clear()

    def of(self, chunk: ColumnChunk) -> tuple[Any, bytes | None]:
        """The chunk's ColumnMetaData and, when stored encrypted, its exact decrypted Thrift.

        Parameters
        ----------
        chunk : ColumnChunk
            A chunk of this file.

        Returns
        -------
        (ColumnMetaData, bytes or None)
            The Thrift object and the plaintext module (None: stored in plaintext).

        Raises
        ------
        secure_bloom.errors.SecureBloomError
            As :meth:`~.reader.ParquetBloomReader.column_metadata`.
        """
        if chunk.encrypted_metadata is None:
            return chunk.visible_metadata, None
        at = (chunk.row_group, chunk.column_ordinal)
        found = self._decrypted.get(at)
        if found is None and at in self._plains:  # opened by facts_many: decoded in full now
            found = self._decrypted[at] = parse_thrift_plaintext(thrift_codec.idl().ColumnMetaData, self._plains[at],
                                                                 what=f"ColumnMetaData of {chunk.where}")
        if found is None:
            meta, thrift = decrypt_column_metadata(thrift_codec.idl().ColumnMetaData, chunk.encrypted_metadata,
                                                   self._keys.crypto_context(chunk),
                                                   what=f"ColumnMetaData of {chunk.where}")
            found = self._decrypted[at] = (meta, thrift)
        return found

    def many(self, chunks: Sequence[ColumnChunk]) -> list[Any]:
        """The ColumnMetaData of ``chunks``: the encrypted ones not yet decrypted opened together,
        one call per key, with the errors :meth:`of` raises.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file.

        Returns
        -------
        list
            The ColumnMetaData (Thrift objects), in order.

        Raises
        ------
        secure_bloom.errors.MissingKeyError, KeyManagementError, AuthenticationError, MalformedInputError
            As :meth:`of`, for the first chunk that fails.
        """
        decrypted = self._decrypted
        pending = [chunk for chunk in chunks if chunk.encrypted_metadata is not None
                   and (chunk.row_group, chunk.column.ordinal) not in decrypted]
        if pending:
            opened = self._open(pending)
            cls = thrift_codec.idl().ColumnMetaData
            try:  # objects of many row groups at once, none in a cycle: no collection among them
                with gc_pause_for(len(opened)):
                    parsed = [parse_thrift_plaintext(cls, plain, what="ColumnMetaData") for _, plain in opened]
            except SecureBloomError:  # named chunk by chunk, as of() names it
                self._name_failure(pending)
                raise
            for (chunk, _), meta_and_thrift in zip(opened, parsed):
                decrypted[(chunk.row_group, chunk.column.ordinal)] = meta_and_thrift
        out = []
        for chunk in chunks:
            if chunk.encrypted_metadata is None:
                out.append(chunk.visible_metadata)
            else:  # decrypted above (or earlier); of() again only if close() dropped it meanwhile
                found = decrypted.get((chunk.row_group, chunk.column.ordinal))
                out.append(found[0] if found is not None else self.of(chunk)[0])
        return out

    def facts_many(self, chunks: Sequence[ColumnChunk]) -> list[Any]:
        """What a lookup reads of each chunk's ColumnMetaData (:class:`ChunkFacts`), the encrypted
        ones not yet opened decrypted together (one call per key) and decoded together
        (:func:`~secure_bloom.thrift_codec.parse_fields`: each checked as :meth:`of` checks it,
        the fields a lookup does not read not made), with the errors :meth:`of` raises.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file.

        Returns
        -------
        list
            Per chunk, its :class:`ChunkFacts`, or its ColumnMetaData where it is stored in
            plaintext or was decoded in full already (they answer the same four attributes).

        Raises
        ------
        secure_bloom.errors.MissingKeyError, KeyManagementError, AuthenticationError, MalformedInputError
            As :meth:`of`, for the first chunk that fails.
        """
        decrypted, facts, plains = self._decrypted, self._facts, self._plains
        pending = [chunk for chunk in chunks if chunk.encrypted_metadata is not None
                   and (at := (chunk.row_group, chunk.column.ordinal)) not in decrypted and at not in facts]
        if pending:
            opened = self._open(pending)
            picked = thrift_codec.parse_fields(thrift_codec.idl().ColumnMetaData, [plain for _, plain in opened],
                                               _FACT_FIELDS, zero_padding=True)
            for (chunk, plain), found in zip(opened, picked):
                at = (chunk.row_group, chunk.column.ordinal)
                plains[at] = plain
                if found is None:  # not the structure, or only the full check can say: of() names it
                    self.of(chunk)
                else:
                    facts[at] = ChunkFacts(*found[0])
        out: list[Any] = []
        for chunk in chunks:
            if chunk.encrypted_metadata is None:
                out.append(chunk.visible_metadata)
                continue
            at = (chunk.row_group, chunk.column.ordinal)
            known = facts.get(at)
            out.append(known if known is not None else self.of(chunk)[0])
        return out

    def _open(self, chunks: list[ColumnChunk]) -> list[tuple[ColumnChunk, bytes]]:
        """The plaintext ColumnMetaData modules of ``chunks`` (encrypted): those :meth:`facts_many`
        kept, the others decrypted, one call per key (in no particular order)."""
        plains = self._plains
        opened = [(chunk, plains[at]) for chunk in chunks if (at := (chunk.row_group, chunk.column.ordinal)) in plains]
        if len(opened) < len(chunks):
            chunks = [chunk for chunk in chunks if (chunk.row_group, chunk.column.ordinal) not in plains]
        else:
            chunks = []
        for gcm, pending in self._keys.by_key(chunks):
            modules: list[bytes | memoryview] = [cast(bytes, chunk.encrypted_metadata) for chunk in pending]
            aads = self._keys.aads(pending, ModuleType.COLUMN_META_DATA)
            try:
                decrypted = decrypt_modules(modules, gcm, aads, module_type=ModuleType.COLUMN_META_DATA,
                                            max_plaintext=MAX_THRIFT_MODULE_BYTES)
            except SecureBloomError:  # named chunk by chunk, as of() names it
                self._name_failure(pending)
                raise
            opened.extend(zip(pending, decrypted))
        return opened

    def _name_failure(self, chunks: Sequence[ColumnChunk]) -> None:
        """Raise what :meth:`of` raises for the first of ``chunks`` that fails (a batch's messages
        name no chunk)."""
        for chunk in chunks:
            self.of(chunk)

    def readable(self, chunk: ColumnChunk) -> bool:
        """Whether :meth:`of` can be asked without a missing key or file AAD (it may still fail
        authentication).

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
            As :meth:`~.reader.ParquetBloomReader.metadata_readable`.
        """
        if chunk.encrypted_metadata is None or (chunk.row_group, chunk.column_ordinal) in self._decrypted:
            return True
        return self._keys.available(chunk) and self._footer.file_aad is not None

    def filter_location(self, chunk: ColumnChunk) -> FilterLocation | None:
        """Where the chunk's filter lies: ``bloom_filter_offset`` and ``bloom_filter_length`` of its
        full ColumnMetaData (BloomFilter.md, "File Format"), decrypted if needed.

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
        secure_bloom.errors.SecureBloomError
            As :meth:`~.reader.ParquetBloomReader.filter_location`.
        """
        return FilterLocation.of(self.of(chunk)[0])
