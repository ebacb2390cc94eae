"""Read the Bloom filters of any Parquet file, encrypted or not: the one open file and its footer.

Spec: BloomFilter.md "File Format", Encryption.md (SPEC_NOTES 4-6). :class:`ParquetBloomReader`
reads the file's tail (magic, footer) when opened and afterwards only Bloom filter bytes, all
through one handle whose reads are logged (:attr:`~ParquetBloomReader.read_ranges`). It indexes
the column chunks (:class:`~secure_bloom.parquet.file.chunk.ColumnChunk`), resolves their keys and
decrypts their ColumnMetaData (module type 1) on first use, so a file is readable with only the
keys of the columns one asks about. Filter bytes are read by :mod:`.filter_io` and probed by
:mod:`.probe`. A chunk with no filter answers "maybe" in every probe; a chunk whose key is
missing raises :class:`MissingKeyError`, never "absent".

The reader is made of three parts, one module each, over what this module opens (the file, its
tail, footer and key sources) and closes: :class:`~.reader_chunks.ReaderChunks` (columns and
chunks), :class:`~.reader_keys.ReaderKeys` (keys and decrypted ColumnMetaData) and
:class:`~.reader_filters.ReaderFilters` (filters, probes, chunk facts).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any, BinaryIO, cast

from ... import thrift_codec
from ...fileio import RecordingFile
from ...kms import KeyMaterialStore
from ...types import FooterMode
from .chunk_index import ChunkIndex
from .chunk_keys import ChunkKeys
from .chunk_metadata import ChunkMetadata
from .filter_reads import DEFAULT_FILTER_CACHE_BYTES, FilterReads
from .footer import Footer, key_id_of, open_footer
from .keys import NO_KEYS, KeyAccess, as_key_access
from .reader_filters import ReaderFilters
from .schema import ColumnInfo
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


class ParquetBloomReader(ReaderFilters):
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
        (the footer key included: :attr:`~.ReaderChunks.footer` keeps everything but it).

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
