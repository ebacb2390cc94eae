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

import bisect
import contextlib
import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO, cast

from ...encrypted_filter import COALESCED_FILTER_BYTES
from ...errors import KeyNotFoundError, MalformedThriftError, MissingKeyError, SecureBloomError
from ...fileio import RecordingFile
from ...filter import SplitBlockBloomFilter
from ...kms import KeyGrant, KeyMaterialStore
from ...kms.cache import ExpiringCache
from ...crypto.context import ChunkCryptoContext
from ...crypto.gcm import GcmKey
from ...crypto.modules import MAX_ORDINAL, ModuleType, decrypt_modules, module_aad
from ... import thrift_codec
from ...encrypted_filter import decrypt_bloom_filters
from ...types import ChunkEncryption, FilterForm, FooterMode
from ...values import TimeZoneLike, maybe_in, query_hashes
from .chunk import ChunkInfo, ColumnChunk, FilterLocation
from .crypto_context import MAX_THRIFT_MODULE_BYTES, decrypt_column_metadata, parse_thrift_plaintext
from .filter_io import (
    check_filter_region,
    check_plaintext_header,
    read_chunk_filter,
    read_chunk_filter_num_bytes,
    read_exact,
)
from .footer import Footer, key_id_of, master_key_of, open_footer
from .keys import NO_KEYS, KeyAccess, as_key_access
from .probe import ProbeResult, ProbeValues, probe_row_groups
from .schema import ColumnInfo, ColumnRef, find_column, shared_leaf_columns
from .identity import Identity, opened_identity
from .sources import display_path, locate, open_source, read_key_material
from .tail import TAIL_READ_BYTES, FileTail, read_tail

__all__ = ["ParquetBloomReader", "DEFAULT_FILTER_CACHE_BYTES", "COALESCE_GAP_BYTES", "COALESCE_MAX_BYTES", "coalesce",
           "FilterReadAhead"]

#: Filter spans at most this many bytes apart are fetched in one request on an object store
#: (:meth:`ParquetBloomReader.prefetch_filters`). 0: only filters side by side are merged, so a
#: lookup never reads a byte more than it did filter by filter (a column's filters interleaved
#: with other columns' filters are then read one by one); a larger gap trades bytes for requests
#: (Arrow C++ reads holes up to 8 KiB).
COALESCE_GAP_BYTES = 0
#: No coalesced read is longer than this (Arrow C++'s range_size_limit), and a reader holds at most
#: this much read ahead (older reads ahead are dropped first).
COALESCE_MAX_BYTES = 32 << 20


def coalesce(spans: Iterable[tuple[int, int]], gap: int, limit: int = COALESCE_MAX_BYTES) -> list[tuple[int, int]]:
    """The (start, end) ``spans`` merged where they overlap or lie at most ``gap`` bytes apart,
    as long as the merged span stays within ``limit`` bytes (a longer span stays alone).

    Parameters
    ----------
    spans : iterable of (int, int)
        Byte ranges, start inclusive, end exclusive, in any order.
    gap : int
        The largest hole between two spans read as one (0: only touching or overlapping spans).
    limit : int, default COALESCE_MAX_BYTES
        The longest merged span.

    Returns
    -------
    list of (int, int)
        The merged spans, sorted by start.

    Raises
    ------
    None
        Arithmetic on the spans given.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start - merged[-1][1] <= gap and max(merged[-1][1], end) - merged[-1][0] <= limit:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged




class FilterReadAhead:
    """Fetches the filters of a reader's ``chunks`` (in the order they will be read) ahead of
    their reads, a step of about :data:`COALESCE_MAX_BYTES` at a time
    (:meth:`ParquetBloomReader.prefetch_filters`): call :meth:`before` with a chunk's index
    before reading its filter. A chunk the steps so far went past is never fetched again
    (it is held, cached, or read on its own as without read-ahead), so the work is linear in
    the chunks whatever the order of the calls. Made by :meth:`ParquetBloomReader.read_ahead`.

    Parameters
    ----------
    reader : ParquetBloomReader
        The open reader whose filters are fetched.
    chunks : sequence of ColumnChunk
        The reader's chunks, in the order their filters will be read.
    """

    def __init__(self, reader: ParquetBloomReader, chunks: Sequence[ColumnChunk]) -> None:
        self._reader = reader
        self._chunks = chunks
        self._covered = 0

    def before(self, index: int) -> None:
        """Fetch the next step of filters if ``chunks[index]`` lies beyond what was fetched so far
        (a local file: nothing is read).

        Parameters
        ----------
        index : int
            The position in ``chunks`` of the chunk whose filter is read next.

        Raises
        ------
        OSError
            A read ahead fails (``StorageUnavailableError`` on an object store); a chunk whose
            filter cannot be located is left out, not raised.
        """
        if index >= self._covered:
            self._covered = self._reader._read_ahead(self._chunks, index)[1]


#: Batches of at least this many chunks (their ColumnMetaData, their filters) are decoded with
#: the cyclic GC paused (:func:`~secure_bloom.thrift_codec.gc_paused`): a 2,000-row-group file
#: spent a third of its pruning in collections walking its footer's objects.
GC_PAUSE_CHUNKS = 64
_NO_PAUSE = contextlib.nullcontext()

#: Default bound on the filter bytes one reader keeps cached (least recently used go first). A
#: legal filter is at most 128 MiB; whatever the footer claims, a reader holds at most this much
#: plus the filter being read.
DEFAULT_FILTER_CACHE_BYTES = 256 << 20


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


#: Column layouts (leaves with their encryption and key labels) shared by the files that have them
#: alike: one tuple, so that what is planned for one layout is planned once (parquet/read/evaluate).
_LAYOUTS: dict[tuple[int, tuple[tuple[int, str], ...]], tuple[tuple[ColumnInfo, ...], tuple[ColumnInfo, ...]]] = {}
_LAYOUTS_MAX = 64
_layouts_lock = threading.Lock()


def _column_layout(leaves: tuple[ColumnInfo, ...], labels: tuple[tuple[int, str], ...]) -> tuple[ColumnInfo, ...]:
    """``leaves`` with the encrypted ones marked with their key labels (``labels``: ordinal,
    label), the same tuple for every file of that layout."""
    key = (id(leaves), labels)
    found = _LAYOUTS.get(key)
    if found is not None and found[0] is leaves:
        return found[1]
    named = dict(labels)
    columns = tuple(dataclasses.replace(leaf, encrypted=True, key_id=named[leaf.ordinal]) if leaf.ordinal in named
                    else leaf for leaf in leaves)
    with _layouts_lock:
        if len(_LAYOUTS) >= _LAYOUTS_MAX:
            _LAYOUTS.clear()
        _LAYOUTS[key] = (leaves, columns)
    return columns


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
        self._lock = threading.Lock()
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
            self._sidecar: Any = None
            self._read_sidecar = _sidecar_reader(path, filesystem, key_material_file) if key_material is None \
                else lambda: key_material
            self._retriever = self.keys.retriever(key_file, load_sidecar=self._read_sidecar) \
                if self.keys.has_keys else None
            with thrift_codec.gc_paused_for(len(self.tail.footer)):  # objects per chunk: no cycles
                self.footer: Footer = open_footer(self.tail, self.keys, self._retriever)
                self._index_chunks()
        except BaseException:
            self._file.close()
            raise
        # Data keys are kept no longer than the KEKs they come from (KeyAccess.cache_lifetime_s)
        # and dropped by close(): a long-lived reader does not hold them for its whole life.
        self._column_keys: ExpiringCache[bytes, _ColumnKey] = ExpiringCache(self.keys.cache_lifetime_s)
        # Contexts of FOOTER_KEY chunks: the footer key is held until close(), and so are they.
        self._footer_contexts: dict[tuple[int, int], ChunkCryptoContext] = {}
        self._footer_gcm: GcmKey | None = None
        self._metadata: dict[tuple[int, int], tuple[Any, bytes | None]] = {}
        self._filters: OrderedDict[tuple[str, int, int | None], SplitBlockBloomFilter] = OrderedDict()
        self._filter_cache_bytes = filter_cache_bytes
        self._cached_bytes = 0

    # ---------------------------------------------------------------- opening

    def _index_chunks(self) -> None:
        """Check the footer's row groups against its schema; each :class:`ColumnChunk` is made
        (and its crypto metadata checked) when it is first asked for (:meth:`_chunk_at`): a
        lookup asks for the chunks of the columns it filters on, and a footer of many row groups
        and columns is not turned into objects it never uses."""
        md = self.footer.metadata
        leaves = shared_leaf_columns(md.schema)
        width = len(leaves)
        for i, rg in enumerate(md.row_groups):
            if len(rg.columns) != width:
                raise MalformedThriftError(
                    f"{self.path}: row group {i} has {len(rg.columns)} column chunks, the schema {width} leaves")
        self._row_groups: list[Any] = md.row_groups
        self._made: dict[int, ColumnChunk] = {}  # rg * width + ordinal -> its chunk, once made
        self._leaves = leaves
        self._labelled: tuple[ColumnInfo, ...] | None = None  # columns with key labels: on first use

    def _chunk_at(self, rg: int, ordinal: int) -> ColumnChunk:
        """The chunk of leaf ``ordinal`` in row group ``rg`` (both in range), made and checked on
        first use: its crypto metadata must name its own column, an encrypted chunk's ordinals
        must fit the AAD, and it must have metadata (plaintext or encrypted)."""
        at = rg * len(self._leaves) + ordinal
        made = self._made.get(at)
        if made is not None:
            return made
        leaf = self._leaves[ordinal]
        group = self._row_groups[rg]
        cc = group.columns[ordinal]
        row_group_ordinal = group.ordinal if group.ordinal is not None else rg
        crypto = cc.crypto_metadata
        if crypto is None:
            encryption, kmd = ChunkEncryption.PLAINTEXT, None
        else:
            if crypto.ENCRYPTION_WITH_FOOTER_KEY is not None:
                encryption, kmd = ChunkEncryption.FOOTER_KEY, None
            else:
                with_key = crypto.ENCRYPTION_WITH_COLUMN_KEY
                if tuple(with_key.path_in_schema) != leaf.path_in_schema:
                    raise MalformedThriftError(
                        f"{self.path}: row group {rg} column {leaf.ordinal}: crypto metadata names "
                        f"{'.'.join(with_key.path_in_schema)!r}, the schema {leaf.path!r}")
                encryption, kmd = ChunkEncryption.COLUMN_KEY, with_key.key_metadata
            self._check_ordinals(rg, row_group_ordinal, leaf)
        if cc.meta_data is None and (crypto is None or cc.encrypted_column_metadata is None):
            raise MalformedThriftError(f"{self.path}: row group {rg} column {leaf.path!r} has no metadata")
        chunk = ColumnChunk(row_group=rg, row_group_ordinal=row_group_ordinal, column=leaf, encryption=encryption,
                            key_metadata=kmd, visible_metadata=cc.meta_data,
                            encrypted_metadata=cc.encrypted_column_metadata)
        return self._made.setdefault(at, chunk)  # one object per chunk, whichever thread made it

    def _key_label(self, key_metadata: bytes | None) -> str:
        """Printable key id; external key material is named by its master key from the sidecar."""
        return key_id_of(key_metadata, self._load_sidecar)

    def _load_sidecar(self) -> Any:
        if self._sidecar is None:
            self._sidecar = self._read_sidecar()
        return self._sidecar

    def _check_ordinals(self, rg: int, ordinal: int, leaf: ColumnInfo) -> None:
        """An encrypted chunk's modules are bound to int16 ordinals (Encryption.md, "AAD"): a
        footer naming others is malformed, whatever its signature or encryption vouches for."""
        if not 0 <= ordinal <= MAX_ORDINAL:
            raise MalformedThriftError(
                f"{self.path}: row group {rg} has ordinal {ordinal}; an encrypted file's row-group ordinals "
                f"are 0..{MAX_ORDINAL} (a file with more than {MAX_ORDINAL + 1} row groups cannot be encrypted)")
        if leaf.ordinal > MAX_ORDINAL:
            raise MalformedThriftError(
                f"{self.path}: column {leaf.path!r} is encrypted at leaf ordinal {leaf.ordinal}; an encrypted "
                f"file's column ordinals are 0..{MAX_ORDINAL} (a file with more than {MAX_ORDINAL + 1} leaf "
                "columns cannot be encrypted)")

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
        self._column_keys.clear()
        self._footer_contexts.clear()
        self._footer_gcm = None
        if self.footer.footer_key is not None:
            self.footer = dataclasses.replace(self.footer, footer_key=None)
        self._metadata.clear()
        self._filters.clear()
        self._cached_bytes = 0

    @property
    def keys_held(self) -> int:
        """How many data keys this reader holds now (the footer key and cached column keys):
        0 after :meth:`close`, and column keys expire after ``keys.cache_lifetime_s``."""
        return len(self._column_keys) + (self.footer.footer_key is not None)

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
        with self._lock:
            return read_exact(self.file, offset, n, self.path)

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
            self._labelled = _column_layout(self._leaves, labels)
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
        if chunk.encryption is ChunkEncryption.FOOTER_KEY:
            return self.footer.footer_key_metadata
        return chunk.key_metadata

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
        key metadata and kept for ``keys.cache_lifetime_s``.

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
        if chunk.encryption is ChunkEncryption.FOOTER_KEY:
            return self._footer_key(chunk)
        return self._column_key(chunk).key

    def _footer_key(self, chunk: ColumnChunk) -> bytes:
        if self.footer.footer_key is None:
            raise MissingKeyError(
                f"{self.path}: column {chunk.column.path!r} is encrypted with the footer key "
                f"{self._key_label(self.footer.footer_key_metadata)!r}, which is not available")
        return self.footer.footer_key

    def _column_key(self, chunk: ColumnChunk) -> _ColumnKey:
        """The cache entry of a COLUMN_KEY chunk's key (the key and its chunks' contexts)."""
        if not chunk.encrypted:
            raise ValueError(f"{self.path}: {chunk.where} is not encrypted; it has no key")
        kmd = bytes(chunk.key_metadata or b"")
        retriever = self._retriever
        if retriever is None:
            raise MissingKeyError(f"{self.path}: column {chunk.column.path!r} needs key "
                                  f"{self._key_label(chunk.key_metadata)!r} and no keys were given")

        def unwrap() -> _ColumnKey:
            try:
                return _ColumnKey(retriever(kmd))
            except (MissingKeyError, KeyNotFoundError) as e:
                raise MissingKeyError(f"{self.path}: column {chunk.column.path!r} needs key "
                                      f"{self._key_label(chunk.key_metadata)!r}: {e}") from None

        return self._column_keys.get_or_create(kmd, unwrap)

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
        kmd = self._key_metadata(chunk) if chunk.encrypted else None
        if kmd is None or self._retriever is None:
            return None
        return self._retriever.grant(bytes(kmd))

    @property
    def footer_grant(self) -> KeyGrant | None:
        """How to recheck access to the footer key the footer was decrypted or verified with;
        None when it needed none (plaintext, or read unverified)."""
        kmd = self.footer.footer_key_metadata
        if self.footer.footer_key is None or kmd is None or self._retriever is None:
            return None
        return self._retriever.grant(bytes(kmd))

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
        if chunk.encryption is ChunkEncryption.FOOTER_KEY:
            key, contexts = self._footer_key(chunk), self._footer_contexts
        else:
            entry = self._column_key(chunk)
            key, contexts = entry.key, entry.contexts
        at = (chunk.row_group, chunk.column.ordinal)
        context = contexts.get(at)
        if context is None:
            context = contexts[at] = ChunkCryptoContext(key, self.footer.require_file_aad(),
                                                        chunk.row_group_ordinal, chunk.column.ordinal)
        return context

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
        if not chunk.encrypted:
            return True
        try:
            self.key_for(chunk)
            return True
        except MissingKeyError:
            return False

    def _decrypted_metadata(self, chunk: ColumnChunk) -> tuple[Any, bytes | None]:
        if chunk.encrypted_metadata is None:
            return chunk.visible_metadata, None
        at = (chunk.row_group, chunk.column_ordinal)
        found = self._metadata.get(at)
        if found is None:
            meta, thrift = decrypt_column_metadata(self._thrift().ColumnMetaData, chunk.encrypted_metadata,
                                                   self.crypto_context(chunk), what=f"ColumnMetaData of {chunk.where}")
            found = self._metadata[at] = (meta, thrift)
        return found

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
        return self._decrypted_metadata(chunk)[0]

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
        return self._decrypted_metadata(chunk)[1]

    def _gcm_key(self, chunk: ColumnChunk) -> GcmKey:
        """The reusable AES-GCM contexts of an encrypted chunk's key (:class:`MissingKeyError`
        without it), made once per key."""
        if chunk.encryption is ChunkEncryption.FOOTER_KEY:
            key = self._footer_key(chunk)
            if self._footer_gcm is None:
                self._footer_gcm = GcmKey(key)
            return self._footer_gcm
        return self._column_key(chunk).gcm

    def _by_key(self, chunks: Sequence[ColumnChunk]) -> list[tuple[GcmKey, list[ColumnChunk]]]:
        """Encrypted ``chunks`` grouped by key, each key resolved once (:class:`MissingKeyError`
        without it)."""
        groups: dict[tuple[ChunkEncryption, bytes | None], tuple[GcmKey, list[ColumnChunk]]] = {}
        for chunk in chunks:
            at = (chunk.encryption, chunk.key_metadata)
            group = groups.get(at)
            if group is None:
                group = groups[at] = (self._gcm_key(chunk), [])
            group[1].append(chunk)
        return list(groups.values())

    def _aads(self, chunks: Sequence[ColumnChunk], module_type: ModuleType) -> list[bytes]:
        """The AAD of each encrypted chunk's module of ``module_type`` (Encryption.md, "AAD")."""
        file_aad = self.footer.require_file_aad()
        return [module_aad(file_aad, module_type, chunk.row_group_ordinal, chunk.column.ordinal) for chunk in chunks]

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
        chunks = [self.chunk(rg, ordinal) for rg in row_groups]
        cls = self._thrift().ColumnMetaData
        pending_chunks = [chunk for chunk in chunks
                          if chunk.encrypted_metadata is not None and (chunk.row_group, ordinal) not in self._metadata]
        for gcm, pending in self._by_key(pending_chunks):
            modules: list[bytes | memoryview] = [cast(bytes, chunk.encrypted_metadata) for chunk in pending]
            aads = self._aads(pending, ModuleType.COLUMN_META_DATA)
            try:
                plains = decrypt_modules(modules, gcm, aads, module_type=ModuleType.COLUMN_META_DATA,
                                         max_plaintext=MAX_THRIFT_MODULE_BYTES)
                # objects of many row groups at once, none in a cycle: no collection among them
                with thrift_codec.gc_paused() if len(pending) >= GC_PAUSE_CHUNKS else _NO_PAUSE:
                    parsed = [parse_thrift_plaintext(cls, plain, what=f"ColumnMetaData of {chunk.where}")
                              for chunk, plain in zip(pending, plains)]
            except SecureBloomError:  # named chunk by chunk, as column_metadata names it
                for chunk in pending:
                    self._decrypted_metadata(chunk)
                raise
            for chunk, found in zip(pending, parsed):
                self._metadata[(chunk.row_group, ordinal)] = found
        return [self._decrypted_metadata(chunk)[0] for chunk in chunks]

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
        if chunk.encrypted_metadata is None or (chunk.row_group, chunk.column_ordinal) in self._metadata:
            return True
        return self.key_available(chunk) and self.footer.file_aad is not None

    @staticmethod
    def _thrift() -> Any:
        return thrift_codec.idl()

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
        return FilterLocation.of(self.column_metadata(chunk))

    # ---------------------------------------------------------------- filters

    def _cache_key(self, chunk: ColumnChunk, location: FilterLocation) -> tuple[str, int, int | None]:
        """Plaintext filters are keyed by location (shared bytes, one copy); encrypted ones by chunk."""
        if chunk.encrypted:
            return FilterForm.ENCRYPTED, chunk.row_group, chunk.column_ordinal
        return FilterForm.PLAINTEXT, location.offset, location.length

    def _remember(self, key: tuple[str, int, int | None], bf: SplitBlockBloomFilter) -> None:
        size = bf.num_bytes
        if size > self._filter_cache_bytes:
            return
        while self._filters and self._cached_bytes + size > self._filter_cache_bytes:
            _, old = self._filters.popitem(last=False)
            self._cached_bytes -= old.num_bytes
        self._filters[key] = bf
        self._cached_bytes += size

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
        chunk = self.chunk(row_group, column)
        location = self.filter_location(chunk)
        if location is None:
            return None
        check_filter_region(chunk, location, self.tail.footer_offset, self.path)
        cache_key = self._cache_key(chunk, location)
        with self._lock:
            cached = self._filters.get(cache_key)
            if cached is not None:
                self._filters.move_to_end(cache_key)
                return cached
            context = self.crypto_context(chunk) if chunk.encrypted else None
            bf = read_chunk_filter(self.file, chunk, location, data_end=self.tail.footer_offset, path=self.path,
                                   context=context)
            self._remember(cache_key, bf)
        return bf

    def bloom_filters(self, column: ColumnRef, row_groups: Sequence[int]) -> list[SplitBlockBloomFilter | None]:
        """:meth:`bloom_filter` of the column's chunk in each of ``row_groups``, read together:
        the filters that store ``bloom_filter_length`` (at most
        :data:`~secure_bloom.encrypted_filter.COALESCED_FILTER_BYTES`) in one read per run of
        filters lying side by side (one request on an object store), the encrypted ones opened
        together, one call per key (in C, the GIL released, where the extension is built); the
        others as :meth:`bloom_filter` reads them. Same answers and errors as :meth:`bloom_filter`.

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
        found: dict[int, SplitBlockBloomFilter | None] = {}
        batch: list[tuple[int, ColumnChunk, FilterLocation]] = []
        for rg in row_groups:
            chunk = self.chunk(rg, ordinal)
            location = self.filter_location(chunk)
            if location is None:
                found[rg] = None
                continue
            check_filter_region(chunk, location, self.tail.footer_offset, self.path)
            cached = self._filters.get(self._cache_key(chunk, location))
            if cached is not None:
                found[rg] = cached
            elif location.length is None or location.length > COALESCED_FILTER_BYTES:
                found[rg] = self.bloom_filter(rg, ordinal)  # the header first, then the bitset
            else:
                batch.append((rg, chunk, location))
        if batch:
            try:
                found.update(self._read_filters(batch))
            except SecureBloomError:  # named filter by filter, as bloom_filter names it
                for rg, _, _ in batch:
                    self.bloom_filter(rg, ordinal)
                raise
        return [found[rg] for rg in row_groups]

    def _read_filters(self, batch: list[tuple[int, ColumnChunk, FilterLocation]]) -> dict[int, SplitBlockBloomFilter]:
        """The filters of ``batch`` (each with ``bloom_filter_length``), read in coalesced runs."""
        data = self._filter_bytes(batch)
        out: dict[int, SplitBlockBloomFilter] = {}
        encrypted = []
        for rg, chunk, loc in batch:
            if chunk.encrypted:
                encrypted.append(chunk)
            else:
                _, used = check_plaintext_header(data[rg], loc.length, loc.length or 0, self.path)
                out[rg] = SplitBlockBloomFilter.from_bitset(data[rg][used:])
        for gcm, chunks in self._by_key(encrypted):
            with thrift_codec.gc_paused() if len(chunks) >= GC_PAUSE_CHUNKS else _NO_PAUSE:
                opened = decrypt_bloom_filters([data[chunk.row_group] for chunk in chunks], gcm,
                                               self._aads(chunks, ModuleType.BLOOM_FILTER_HEADER),
                                               self._aads(chunks, ModuleType.BLOOM_FILTER_BITSET))
            out.update((chunk.row_group, bf) for chunk, bf in zip(chunks, opened))
        with self._lock:
            for rg, chunk, loc in batch:
                self._remember(self._cache_key(chunk, loc), out[rg])
        return out

    def _filter_bytes(self, batch: list[tuple[int, ColumnChunk, FilterLocation]]) -> dict[int, memoryview]:
        """Each filter's ``bloom_filter_length`` bytes: one read per run of filters side by side
        (those held in the tail window read from it)."""
        if len(batch) == 1:
            rg, _, loc = batch[0]
            return {rg: memoryview(self.read_at(loc.offset, cast(int, loc.length)))}
        spans = coalesce([(loc.offset, loc.offset + loc.length) for _, _, loc in batch  # type: ignore[operator]
                          if not self._file.holds(loc.offset, loc.length or 0)], COALESCE_GAP_BYTES)
        starts = [start for start, _ in spans]
        runs = [memoryview(self.read_at(start, end - start)) for start, end in spans]
        data: dict[int, memoryview] = {}
        for rg, _, loc in batch:
            length = cast(int, loc.length)
            at = bisect.bisect_right(starts, loc.offset) - 1  # the run starting at or before it
            if at >= 0 and loc.offset + length <= starts[at] + len(runs[at]):
                begin = loc.offset - starts[at]
                data[rg] = runs[at][begin:begin + length]
            else:
                data[rg] = memoryview(self.read_at(loc.offset, length))  # held in the tail window
        return data

    def prefetch_filters(self, chunks: Sequence[ColumnChunk]) -> int:
        """On an object store, read the filters of ``chunks`` (in the order they will be asked
        for) ahead, in as few requests as their layout allows, and hold them: their
        :meth:`bloom_filter` reads are then answered from memory. Spans at most
        :data:`COALESCE_GAP_BYTES` apart (by default: side by side, so no byte between two
        filters is read; a file whose filters are of one column has them so) are read as one.
        One call fetches about :data:`COALESCE_MAX_BYTES` (the first chunks' filters; the rest
        as :class:`FilterReadAhead` reaches them). Left out (:meth:`bloom_filter` reads or
        reports them as without this call): filters already cached or held (inside the tail
        read), filters longer than :data:`~secure_bloom.encrypted_filter.COALESCED_FILTER_BYTES`
        (their header is checked before the rest is fetched), and chunks whose filter cannot be
        located (no filter, missing key, no ``bloom_filter_length``, damaged metadata). Local
        files read nothing here (each read is a cheap ``pread``).

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
        return self._read_ahead(chunks, 0)[0]

    def _read_ahead(self, chunks: Sequence[ColumnChunk], start: int) -> tuple[int, int]:
        """(reads made, index after the last chunk considered) of one :meth:`prefetch_filters`
        step over ``chunks[start:]``: spans are gathered while they stay within
        :data:`COALESCE_MAX_BYTES`."""
        if not self.remote:
            return 0, len(chunks)
        spans: list[tuple[int, int]] = []
        total = 0
        index = start
        while index < len(chunks):
            span = self._span_to_fetch(chunks[index])
            if span is not None:
                if spans and total + span[1] - span[0] > COALESCE_MAX_BYTES:
                    break  # the next step starts here
                spans.append(span)
                total += span[1] - span[0]
            index += 1
        reads = 0
        with self._lock:
            for begin, end in coalesce(spans, COALESCE_GAP_BYTES, COALESCE_MAX_BYTES):
                self._file.read_ahead(begin, end - begin, keep_bytes=COALESCE_MAX_BYTES)
                reads += 1
        return reads, index

    def _span_to_fetch(self, chunk: ColumnChunk) -> tuple[int, int] | None:
        """(start, end) of the chunk's filter when it is to be fetched ahead (see
        :meth:`prefetch_filters` for what is left out), else None."""
        try:
            location = self.filter_location(chunk)
            if location is None or location.length is None or location.length > COALESCED_FILTER_BYTES:
                return None
            check_filter_region(chunk, location, self.tail.footer_offset, self.path)
        except SecureBloomError:
            return None
        if self._cache_key(chunk, location) in self._filters or self._file.holds(location.offset, location.length):
            return None
        return location.offset, location.offset + location.length

    def read_ahead(self, chunks: Sequence[ColumnChunk]) -> FilterReadAhead:
        """A :class:`FilterReadAhead` over ``chunks`` (in the order their filters will be read):
        what :meth:`iter_filters` and the lookups read through on an object store.

        Parameters
        ----------
        chunks : sequence of ColumnChunk
            Chunks of this file, in read order.

        Returns
        -------
        FilterReadAhead
            Nothing is read until its :meth:`~FilterReadAhead.before` is called.

        Raises
        ------
        None
            Nothing is read here.
        """
        return FilterReadAhead(self, chunks)

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
        location = self.filter_location(chunk)
        if location is None:
            return None
        check_filter_region(chunk, location, self.tail.footer_offset, self.path)
        with self._lock:
            cached = self._filters.get(self._cache_key(chunk, location))
            if cached is not None:
                return cached.num_bytes
            context = self.crypto_context(chunk) if chunk.encrypted else None
            return read_chunk_filter_num_bytes(self.file, chunk, location, data_end=self.tail.footer_offset,
                                               path=self.path, context=context)

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
