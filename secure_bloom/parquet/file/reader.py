"""Read the Bloom filters of any Parquet file, encrypted or not: the one open file and its footer.

Spec: BloomFilter.md "File Format", Encryption.md (SPEC_NOTES 4-6). :class:`ParquetBloomReader`
reads the file's tail (magic, footer) when opened and afterwards only Bloom filter bytes, all
through one handle whose reads are logged (:attr:`~ParquetBloomReader.read_ranges`). It indexes
the column chunks (:class:`~secure_bloom.parquet.file.chunk.ColumnChunk`), resolves their keys and
decrypts their ColumnMetaData (module type 1) on first use, so a file is readable with only the
keys of the columns one asks about. Filter bytes are read by :mod:`.filter_io` and probed by
:mod:`.probe`. A chunk with no filter answers "maybe" in every probe; a chunk whose key is
missing raises :class:`MissingKeyError`, never "absent".
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO, cast

from ... import thrift_codec
from ...crypto.context import ChunkCryptoContext
from ...errors import SecureBloomError
from ...fileio import RecordingFile
from ...filter import SplitBlockBloomFilter
from ...kms import KeyGrant, KeyMaterialStore
from ...types import FooterMode
from ...values import TimeZoneLike, maybe_in, query_hashes
from .chunk import ChunkInfo, ColumnChunk, FilterLocation
from .chunk_index import ChunkIndex, column_layout
from .chunk_keys import ChunkKeys
from .chunk_metadata import ChunkMetadata
from .filter_reads import DEFAULT_FILTER_CACHE_BYTES, FilterReadAhead, FilterReads
from .footer import Footer, key_id_of, master_key_of, open_footer
from .keys import NO_KEYS, KeyAccess, as_key_access
from .probe import ProbeResult, ProbeValues, probe_row_groups
from .schema import ColumnInfo, ColumnRef, find_column
from .identity import Identity, opened_identity
from .sources import display_path, locate, open_source, read_key_material
from .tail import TAIL_READ_BYTES, FileTail, read_tail

__all__ = ["ParquetBloomReader"]


def _sidecar_reader(source: Any, filesystem: Any, key_material_file: Any) -> Callable[[], KeyMaterialStore]:
    """How to load the external key material of ``source`` (located: a path on ``filesystem``,
    None for a local one, or an open stream): the sidecar beside ``key_material_file`` (a local
    path or a URI) when given, else beside the file itself on the file's own filesystem."""
    def load() -> KeyMaterialStore:
        if key_material_file is not None:
            fs, path = locate(key_material_file)
        elif hasattr(source, "read"):
            fs, path = None, str(getattr(source, "name", "<stream>"))
        else:
            fs, path = filesystem, source
        return KeyMaterialStore.for_data_file(path) if fs is None else read_key_material(fs, path)
    return load


class _SidecarOnce:
    """A file's external key material, loaded on first use and kept (``__call__``), and the
    printable key ids it names (:meth:`label`). It holds no reference to the reader."""

    __slots__ = ("_read", "_store")

    def __init__(self, read: Callable[[], KeyMaterialStore]) -> None:
        self._read = read
        self._store: KeyMaterialStore | None = None

    def __call__(self) -> KeyMaterialStore:
        if self._store is None:
            self._store = self._read()
        return self._store

    def label(self, key_metadata: bytes | None) -> str:
        """Printable key id; external key material is named by its master key from the sidecar."""
        return key_id_of(key_metadata, self)


class ParquetBloomReader:
    """Bloom filters of one Parquet file. Use as a context manager, or call :meth:`close`.

    Every read is a range read of the bytes needed (the tail, then filters): nothing else of the
    file is fetched. Filters read are cached up to ``filter_cache_bytes`` of bitsets (least
    recently used are dropped first). Plaintext filters are cached by their location, so chunks
    sharing one filter share one copy; encrypted ones by chunk (their AAD binds them to it).

    Parameters
    ----------
    path : str, os.PathLike or binary file
        A local path, a path on ``filesystem``, a URI (``s3://bucket/key``, ``file:///...``) or an
        open seekable binary file (not closed by :meth:`close`).
    keys : KeyAccess, optional
        The key sources for encrypted files; a plaintext file or the plaintext columns of a
        plaintext-footer file need none.
    filesystem : pyarrow.fs.FileSystem, optional
        The filesystem ``path`` is on (S3, GCS, HDFS...).
    key_material_file : str or os.PathLike, optional
        Where the external key material sidecar sits beside (default: ``path`` itself).
    filter_cache_bytes : int, default 256 MiB
        Bitset bytes kept in memory; 0 caches nothing.
    key_material : KeyMaterialStore, optional
        External key material not yet on disk (:class:`~secure_bloom.kms.KeyMaterialStore`).
    opened : pyarrow.NativeFile, optional
        The file ``path`` already opened on ``filesystem`` by
        :func:`~secure_bloom.parquet.file.identity.open_identified`: read through it (no open, no
        HEAD of the reader's own) and closed by :meth:`close`.

    Raises
    ------
    TypeError
        ``keys`` is not a :class:`KeyAccess`.
    ValueError
        ``filter_cache_bytes`` is not an int >= 0.
    secure_bloom.errors.NotParquetError
        The file is not Parquet (no ``PAR1`` / ``PARE`` magic, a damaged footer).
    secure_bloom.errors.KeyManagementError
        The footer is encrypted (or signed) and its key cannot be obtained.
    secure_bloom.errors.AuthenticationError
        The footer fails authentication (a wrong key, a tampered file).
    OSError
        The file cannot be read (``NotRegularFileError`` for a FIFO or a device).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet.encryption as pe
    >>> from secure_bloom.kms import KeyListKms, write_development_key_list
    >>> from secure_bloom.parquet import KeyAccess, ParquetBloomReader, write_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kms = KeyListKms.from_file(write_development_key_list(tmp / "dev-keys.txt"))
    >>> _ = write_table(pa.table({"email": [f"user{i}@example.com" for i in range(2_000)]}), tmp / "users.parquet",
    ...                 kms=kms, row_group_size=1_000, bloom_filter_options={"email": True},
    ...                 encryption=pe.EncryptionConfiguration(footer_key="footer_key",
    ...                                                       column_keys={"pii_key": ["email"]}))
    >>> with ParquetBloomReader(tmp / "users.parquet", keys=KeyAccess(kms=kms)) as reader:
    ...     print(reader.num_row_groups, reader.row_groups_maybe_containing("email", "user1234@example.com"))
    2 [1]
    """

    def __init__(self, path: str | os.PathLike[str] | BinaryIO, keys: KeyAccess | None = None, *,
                 filesystem: Any = None, key_material_file: str | os.PathLike[str] | None = None,
                 filter_cache_bytes: int = DEFAULT_FILTER_CACHE_BYTES,
                 key_material: KeyMaterialStore | None = None, opened: Any = None) -> None:
        if isinstance(filter_cache_bytes, bool) or not isinstance(filter_cache_bytes, int) or filter_cache_bytes < 0:
            raise ValueError(f"filter_cache_bytes must be an int >= 0, got {filter_cache_bytes!r}")
        self.keys = as_key_access(keys) or NO_KEYS  # a KMS client or factory too
        if not hasattr(path, "read"):
            filesystem, path = locate(path, filesystem)
        if opened is not None:  # the open that told the file's identity (identity.open_identified)
            if filesystem is None or hasattr(path, "read"):
                raise ValueError("opened= is a file opened from a path on an object store's filesystem")
            self.path, raw, owned = display_path(filesystem, path), opened, True
        else:
            self.path, raw, owned = open_source(path, filesystem)
        remote = filesystem is not None and not hasattr(path, "read")
        # remote reads are digested: where a filesystem tells no strong identity, the bytes
        # pruning read are what proves the version a scan opens (identity.pinned_identity)
        self._file = RecordingFile(raw, close_raw=owned, digest=remote,  # a local file of ours: pread
                                   positional=owned and filesystem is None)
        try:
            # On an object store each read is a request: the tail comes in one speculative read
            # (and the leading magic is not read: .tail), the filters together (prefetch_filters).
            #: Whether the file is on an object store (each read a request; None filesystem: local).
            self.remote = remote
            self.tail: FileTail = read_tail(self.file, self.path, speculative_bytes=TAIL_READ_BYTES if remote else 0,
                                            leading_magic=not remote)
            #: Which version of the file this reader reads (:mod:`.identity`; None for a stream
            #: the caller opened, or where it cannot be told): taken from the open handle (and,
            #: on a filesystem without a strong identity, from the tail it read).
            self.identity: Identity | None = opened_identity(raw, filesystem, cast(str, path),
                                                             tail=self.tail) if owned else None
            if self.tail.window:  # filters written before the footer are often inside: no request then
                self._file.hold(self.tail.file_size - len(self.tail.window), self.tail.window)
            key_file = self.path if key_material_file is None else os.fspath(key_material_file)
            self._read_sidecar = _sidecar_reader(path, filesystem, key_material_file) if key_material is None \
                else lambda: key_material
            # Neither holds the reader: a reader in no reference cycle is freed, footer and all,
            # when it is dropped, not left for the cyclic collector to find (and walk) later.
            self._load_sidecar = _SidecarOnce(self._read_sidecar)
            self._key_label = self._load_sidecar.label
            self._retriever = self.keys.retriever(key_file, load_sidecar=self._read_sidecar) \
                if self.keys.has_keys else None
            with thrift_codec.gc_paused_for(len(self.tail.footer)):  # objects per chunk: no cycles
                self.footer: Footer = open_footer(self.tail, self.keys, self._retriever)
                self._index = ChunkIndex(self.path, self.footer.metadata)
                self._leaves = self._index.leaves
                self._row_groups = self._index.row_groups
                self._chunk_at = self._index.at
                self._labelled: tuple[ColumnInfo, ...] | None = None  # columns with key labels: on first use
        except BaseException:
            self._file.close()
            raise
        # Data keys are kept no longer than the KEKs they come from (KeyAccess.cache_lifetime_s)
        # and dropped by close(): a long-lived reader does not hold them for its whole life.
        #: The keys of the file's chunks (:class:`~.chunk_keys.ChunkKeys`).
        self.chunk_keys = ChunkKeys(self.path, self.footer, self._retriever, self._key_label,
                                    self.keys.cache_lifetime_s)
        #: The chunks' full ColumnMetaData (:class:`~.chunk_metadata.ChunkMetadata`).
        self.chunk_metadata = ChunkMetadata(self.footer, self.chunk_keys)
        #: The chunks' Bloom filters, read and cached (:class:`~.filter_reads.FilterReads`).
        self.filter_reads = FilterReads(self._file, self.path, self.tail.footer_offset, remote, self.chunk_keys,
                                        self.chunk_metadata, filter_cache_bytes)

    # ---------------------------------------------------------------- context manager

    def close(self) -> None:
        """Close the file and drop every key, decrypted metadata and filter this reader holds
        (the footer key included: :attr:`footer` keeps everything but it).

        Raises
        ------
        None
            Nothing of its own; closing twice is fine.
        """
        self._file.close()
        self.chunk_keys.close()
        if self.footer.footer_key is not None:
            self.footer = dataclasses.replace(self.footer, footer_key=None)
        self.chunk_metadata.close()
        self.filter_reads.close()

    @property
    def keys_held(self) -> int:
        """How many data keys this reader holds now (the footer key and cached column keys):
        0 after :meth:`close`, and column keys expire after ``keys.cache_lifetime_s``."""
        return self.chunk_keys.held

    def __enter__(self) -> ParquetBloomReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ParquetBloomReader({self.path!r}, footer={self.footer.mode}, row_groups={self.num_row_groups})"

    # ---------------------------------------------------------------- the file

    @property
    def file(self) -> BinaryIO:
        """The one open handle (read-only; every read is logged in :attr:`read_ranges`)."""
        return cast(BinaryIO, self._file)

    def read_at(self, offset: int, n: int) -> bytes:
        """Exactly ``n`` bytes at ``offset``, through the logged handle (bytes read ahead or held
        from the tail are answered from memory).

        Parameters
        ----------
        offset : int
            Where to read.
        n : int
            How many bytes.

        Returns
        -------
        bytes
            ``n`` bytes.

        Raises
        ------
        secure_bloom.errors.MalformedBitsetError
            Fewer than ``n`` bytes are there (the file ends).
        OSError
            The file cannot be read (``StorageUnavailableError`` on an object store).
        """
        return self.filter_reads.read_at(offset, n)

    @property
    def read_ranges(self) -> tuple[tuple[int, int], ...]:
        """Every (offset, length) read from the file so far."""
        return tuple(self._file.ranges)

    @property
    def read_digest(self) -> str | None:
        """The SHA-256 of every range read so far, in order (remote files only; else None)."""
        return self._file.digest

    @property
    def bytes_read(self) -> int:
        """Bytes read from the file so far (every range read counted)."""
        return sum(n for _, n in self._file.ranges)

    # ---------------------------------------------------------------- columns and chunks

    @property
    def num_row_groups(self) -> int:
        """The number of row groups."""
        return len(self._row_groups)

    @property
    def num_rows(self) -> int:
        """The number of rows, as the footer says."""
        return int(self.footer.metadata.num_rows)

    @property
    def columns(self) -> tuple[ColumnInfo, ...]:
        """The leaf columns, in schema order, the encrypted ones with their key's label."""
        if self._labelled is None:
            labels = tuple((leaf.ordinal, self._key_label(self._key_metadata(first))) for leaf in self._leaves
                           if self._row_groups and (first := self._chunk_at(0, leaf.ordinal)).encrypted)
            self._labelled = column_layout(self._leaves, labels)
        return self._labelled

    @property
    def leaves(self) -> tuple[ColumnInfo, ...]:
        """The leaf columns as the schema gives them (no key labels, so no key metadata parsed),
        one tuple shared by every file of the same schema: what a lookup plans with."""
        return self._leaves

    def _ordinal(self, column: ColumnRef) -> int:
        """The leaf ordinal of ``column`` (an int ordinal checked, anything else by :meth:`column`)."""
        if type(column) is int and 0 <= column < len(self._leaves):
            return column
        return self.column(column).ordinal

    def column(self, column: ColumnRef) -> ColumnInfo:
        """A leaf column by dotted path, path parts (``("a", "b")`` vs ``("a.b",)``), ordinal, or
        ColumnInfo.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.

        Returns
        -------
        ColumnInfo
            The leaf.

        Raises
        ------
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        """
        return find_column(self.columns, column, self.path)

    def chunk(self, row_group: int, column: ColumnRef) -> ColumnChunk:
        """The chunk of ``column`` in row group ``row_group`` (its position in the footer).

        Parameters
        ----------
        row_group : int
            The row group's position.
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.

        Returns
        -------
        ColumnChunk
            The chunk, as the footer describes it.

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        """
        ordinal = self._ordinal(column)
        if isinstance(row_group, bool) or not isinstance(row_group, int) or not 0 <= row_group < len(self._row_groups):
            raise IndexError(f"row group {row_group!r} out of range 0..{len(self._row_groups) - 1}")
        return self._chunk_at(row_group, ordinal)

    def column_chunks(self, column: ColumnRef | None = None) -> list[ColumnChunk]:
        """Every chunk (row group by row group, leaves in order), or those of ``column``.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo, optional
            A dotted path, path parts, an ordinal or a ColumnInfo; None: every column.

        Returns
        -------
        list of ColumnChunk
            In row group order (then leaf order when ``column`` is None).

        Raises
        ------
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        """
        if column is None:
            return [self._chunk_at(rg, ordinal) for rg in range(len(self._row_groups))
                    for ordinal in range(len(self._leaves))]
        ordinal = self.column(column).ordinal
        return [self._chunk_at(rg, ordinal) for rg in range(len(self._row_groups))]

    # ---------------------------------------------------------------- keys and metadata

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
        ordinal = self._ordinal(column)
        return self.chunk_metadata.many([self.chunk(rg, ordinal) for rg in row_groups])

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

    # ---------------------------------------------------------------- filters

    def bloom_filter(self, row_group: int, column: ColumnRef) -> SplitBlockBloomFilter | None:
        """The chunk's filter, decrypted if needed; None if the chunk has none.

        Parameters
        ----------
        row_group : int
            The row group's position.
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.

        Returns
        -------
        SplitBlockBloomFilter or None
            The filter (cached up to ``filter_cache_bytes``).

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        secure_bloom.errors.KeyManagementError
            The column's key cannot be obtained.
        secure_bloom.errors.AuthenticationError
            A filter fails authentication (tampered, or moved from another chunk).
        secure_bloom.errors.MalformedInputError
            A filter is damaged.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        return self.filter_reads.one(self.chunk(row_group, column))

    def bloom_filters(self, column: ColumnRef, row_groups: Sequence[int]) -> list[SplitBlockBloomFilter | None]:
        """:meth:`bloom_filter` of the column's chunk in each of ``row_groups``, read together
        (:meth:`.FilterReads.many`): filters side by side in one read (one request on an object
        store), the encrypted ones opened together, one call per key (in C, the GIL released,
        where the extension is built). Same answers and errors as :meth:`bloom_filter`.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.
        row_groups : sequence of int
            The row groups.

        Returns
        -------
        list of SplitBlockBloomFilter or None
            The filters (None: the chunk has none), in order.

        Raises
        ------
        IndexError
            No such row group.
        secure_bloom.errors.KeyManagementError
            A chunk's key cannot be obtained (``MissingKeyError`` when it is not given).
        secure_bloom.errors.AuthenticationError
            A filter fails authentication.
        secure_bloom.errors.MalformedInputError
            A filter is damaged.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        ordinal = self._ordinal(column)
        return self.filter_reads.many([self.chunk(rg, ordinal) for rg in row_groups])

    def prefetch_filters(self, chunks: Sequence[ColumnChunk]) -> int:
        """On an object store, read the filters of ``chunks`` (in the order they will be asked
        for) ahead, in as few requests as their layout allows, and hold them
        (:meth:`.FilterReads.prefetch`, which says what is left out). Local files read nothing.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file, in the order their filters will be read.

        Returns
        -------
        int
            The number of reads (requests) made; 0 for a local file.

        Raises
        ------
        OSError
            A read fails (``StorageUnavailableError`` on an object store).
        """
        return self.filter_reads.prefetch(chunks)

    def read_ahead(self, chunks: Sequence[ColumnChunk]) -> FilterReadAhead:
        """A :class:`~.filter_reads.FilterReadAhead` over ``chunks`` (in the order their filters
        will be read): what :meth:`iter_filters` and the lookups read through on an object store.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file, in read order.

        Returns
        -------
        FilterReadAhead
            Nothing is read until its :meth:`~.filter_reads.FilterReadAhead.before` is called.

        Raises
        ------
        None
            Nothing is read here.
        """
        return self.filter_reads.read_ahead(chunks)

    def filter_num_bytes(self, chunk: ColumnChunk) -> int | None:
        """``numBytes`` of the chunk's filter from its ``BloomFilterHeader`` alone (BloomFilter.md,
        "File Format"): the bitset is neither read nor kept; an encrypted header (module type 8)
        is authenticated. A cached filter answers without a read.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk whose filter header is read.

        Returns
        -------
        int or None
            The bitset's size in bytes; None when the chunk has no filter.

        Raises
        ------
        secure_bloom.errors.MissingKeyError
            The chunk is encrypted and its key or the file AAD is not available.
        secure_bloom.errors.KeyManagementError
            The KMS failed otherwise.
        secure_bloom.errors.AuthenticationError
            The header (or the encrypted ColumnMetaData) fails authentication.
        secure_bloom.errors.MalformedInputError
            The header or the metadata is damaged, or the filter lies outside the data.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        OSError
            The file cannot be read.
        """
        return self.filter_reads.num_bytes(chunk)

    def chunks(self, *, with_sizes: bool = True) -> list[ChunkInfo]:
        """Every (row group, column) chunk; ``with_sizes`` reads each filter's header (and
        authenticates it, if encrypted) to report its size; bitsets are not read.

        Parameters
        ----------
        with_sizes : bool, default True
            Read each filter's header for its size.

        Returns
        -------
        list of ChunkInfo
            In row group, then column order.

        Raises
        ------
        OSError
            The file cannot be read.
        """
        return [self.chunk_info(chunk, with_sizes=with_sizes) for chunk in self.column_chunks()]

    def chunk_info(self, chunk: ColumnChunk, *, with_sizes: bool = True) -> ChunkInfo:
        """:class:`ChunkInfo` of one chunk; a chunk whose metadata or filter cannot be read
        reports why in ``filter_error`` instead of raising.

        Parameters
        ----------
        chunk : ColumnChunk
            The chunk.
        with_sizes : bool, default True
            Read the filter's header (authenticating it) for its size.

        Returns
        -------
        ChunkInfo
            Its Bloom filter facts.

        Raises
        ------
        OSError
            The file cannot be read.
        """
        available = self.key_available(chunk)
        error = None
        try:
            meta = self.column_metadata(chunk) if self.metadata_readable(chunk) else chunk.visible_metadata
        except SecureBloomError as e:
            meta, error = chunk.visible_metadata, f"{type(e).__name__}: {e}"
        location = FilterLocation.of(meta)
        num_bytes = None
        if location is not None and with_sizes and available and error is None:
            try:
                num_bytes = self.filter_num_bytes(chunk)
            except SecureBloomError as e:
                error = f"{type(e).__name__}: {e}"
        return ChunkInfo(
            row_group=chunk.row_group, row_group_ordinal=chunk.row_group_ordinal, column=chunk.column.path,
            column_ordinal=chunk.column_ordinal, encrypted=chunk.encrypted, encryption=chunk.encryption,
            key_id=self.key_id(chunk), key_available=available,
            has_bloom_filter=None if meta is None else location is not None,
            bloom_filter_offset=None if location is None else location.offset,
            bloom_filter_length=None if location is None else location.length,
            filter_num_bytes=num_bytes, filter_error=error)

    # ---------------------------------------------------------------- probes

    def probe(self, column: ColumnRef, values: Iterable[Any] | Any, *,
              labels: Sequence[str] | None = None, timezone: TimeZoneLike | None = None) -> ProbeResult:
        """Ask every row group's filter of ``column`` whether each of ``values`` may be there.

        Query semantics (:func:`~secure_bloom.values.column.query_hashes`): 0.0 finds -0.0 too,
        a NaN is always "maybe", and a naive date/time for a column of UTC instants is refused
        unless ``timezone`` names its zone. ``labels`` (one per value) name the answers; by
        default each value's text. One answer per value, in order, duplicates kept.

        The values are hashed once, and every row group's filter is probed with all of them in
        one kernel call. Probing many files: give a :class:`~secure_bloom.parquet.file.probe.ProbeValues`
        as ``values`` (it carries its own labels and time zone) and it is hashed once for all.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            The leaf column (as :meth:`column` takes it).
        values : value, iterable of values, or ProbeValues
            What to look up.
        labels : sequence of str, optional
            One label per value (not with a ProbeValues).
        timezone : tzinfo or str, optional
            The zone of naive date/time values (not with a ProbeValues).

        Returns
        -------
        ProbeResult

        Raises
        ------
        InvalidValueError
            A value the column cannot hold.
        MissingKeyError
            An encrypted chunk whose key is not available (never "absent").
        ValueError
            ``labels`` or ``timezone`` given with a ProbeValues, or not one label per value.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> from secure_bloom.parquet import ParquetBloomReader, attach_bloom_filters
        >>> tmp = pathlib.Path(tempfile.mkdtemp())
        >>> pq.write_table(pa.table({"id": list(range(2_000))}), tmp / "ids.parquet", row_group_size=1_000)
        >>> _ = attach_bloom_filters(tmp / "ids.parquet", tmp / "ids.bloom.parquet", ["id"])
        >>> with ParquetBloomReader(tmp / "ids.bloom.parquet") as reader:
        ...     result = reader.probe("id", [7, 1999, -5])
        >>> [[str(verdict) for _, verdict in rg.values] for rg in result.row_groups]
        [['maybe', 'absent', 'absent'], ['absent', 'maybe', 'absent']]
        """
        info = self.column(column)
        if isinstance(values, ProbeValues):
            if labels is not None or timezone is not None:
                raise ValueError("labels= and timezone= are the ProbeValues' own: give them to ProbeValues")
            prepared = values
        else:
            if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Iterable):
                values = [values]
            prepared = ProbeValues(values, labels=labels, timezone=timezone)
        batch = prepared.batch(info)  # bad values fail before any filter is read
        filters = [bf for _, bf in self.iter_filters(info)]
        encrypted = [chunk.encrypted for chunk in self.column_chunks(info)]
        return probe_row_groups(self.path, info.path, filters, encrypted, batch, prepared.labels)

    def row_groups_maybe_containing(self, column: ColumnRef, value: Any, *,
                                    timezone: TimeZoneLike | None = None) -> list[int]:
        """Row groups whose filter may hold ``value`` (every group without a filter is included);
        query semantics as :meth:`probe`.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.
        value : object
            The value looked for.
        timezone : str or tzinfo, optional
            The zone of a naive date/time for a column of UTC instants.

        Returns
        -------
        list of int
            The row groups to read, in order.

        Raises
        ------
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        secure_bloom.errors.InvalidValueError
            ``value`` cannot be stored in the column.
        secure_bloom.errors.KeyManagementError
            The column's key cannot be obtained.
        secure_bloom.errors.AuthenticationError
            A filter fails authentication (tampered, or moved from another chunk).
        secure_bloom.errors.MalformedInputError
            A filter is damaged.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        info = self.column(column)
        query = [query_hashes(value, info, timezone=timezone)]
        return [rg for rg, bf in self.iter_filters(info) if maybe_in(bf, query)[0]]

    def iter_filters(self, column: ColumnRef) -> Iterator[tuple[int, SplitBlockBloomFilter | None]]:
        """(row group, filter or None) for every row group of ``column``.

        Parameters
        ----------
        column : str, tuple of str, int or ColumnInfo
            A dotted path, path parts, an ordinal or a ColumnInfo.

        Yields
        ------
        (int, SplitBlockBloomFilter or None)
            Each row group and its filter.

        Raises
        ------
        secure_bloom.errors.ColumnNotFoundError
            No such leaf (``AmbiguousColumnError`` when a dotted path names two).
        secure_bloom.errors.KeyManagementError
            The column's key cannot be obtained.
        secure_bloom.errors.AuthenticationError
            A filter fails authentication (tampered, or moved from another chunk).
        secure_bloom.errors.MalformedInputError
            A filter is damaged.
        secure_bloom.errors.PlaintextFilterOnEncryptedColumnError
            An encrypted column's filter is stored in plaintext.
        """
        info = self.column(column)
        ahead = self.read_ahead(self.column_chunks(info))  # object stores: filters side by side in one read
        for rg in range(self.num_row_groups):
            ahead.before(rg)
            yield rg, self.bloom_filter(rg, info.ordinal)

    # ---------------------------------------------------------------- describe

    def describe(self, *, with_sizes: bool = True) -> dict[str, Any]:
        """Everything ``inspect --json`` shows: footer mode, encryption, columns and chunks.

        Parameters
        ----------
        with_sizes : bool, default True
            Read each filter's header for its size.

        Returns
        -------
        dict
            The ``inspect`` document.

        Raises
        ------
        OSError
            The file cannot be read.
        """
        footer = self.footer
        md = footer.metadata
        signature = None
        if footer.mode is FooterMode.SIGNED:
            signature = "verified" if footer.signature_verified else "unverified"
        chunks = self.chunks(with_sizes=with_sizes)
        row_groups = []
        for i, rg in enumerate(md.row_groups):
            row_groups.append({"row_group": i, "num_rows": int(rg.num_rows),
                               "total_byte_size": int(rg.total_byte_size),
                               "chunks": [c.to_dict() for c in chunks if c.row_group == i]})
        return {
            "file": self.path,
            "file_size": self.tail.file_size,
            "footer": {
                "mode": footer.mode,
                "length": len(self.tail.footer),
                "encryption": footer.params.to_dict() if footer.params is not None else None,
                "footer_key_id": self._key_label(footer.footer_key_metadata) if footer.encrypted else None,
                "footer_key_available": footer.footer_key is not None if footer.encrypted else None,
                "signature": signature,
            },
            "created_by": md.created_by,
            "num_rows": int(md.num_rows),
            "num_row_groups": self.num_row_groups,
            "columns": [c.to_dict() for c in self.columns],
            "row_groups": row_groups,
        }
