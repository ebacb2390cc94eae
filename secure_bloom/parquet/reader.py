"""Read and probe the Bloom filters of any Parquet file, encrypted or not.

Spec: BloomFilter.md "File Format", Encryption.md (SPEC_NOTES 4-6). :class:`ParquetBloomReader`
reads the file's tail (magic, footer) when opened and afterwards only Bloom filter bytes:

* plaintext filter at ``bloom_filter_offset``: Thrift header + bitset; with
  ``bloom_filter_length`` exactly that many bytes are read, without it (files before
  parquet-java 1.14) the header first, then ``numBytes`` of bitset;
* encrypted filter: header module (type 8) then bitset module (type 9), AES-GCM with the
  column's key and AAD ``file_aad | type | rg ordinal | column ordinal``.

Column metadata of columns encrypted with their own key is decrypted (module type 1) on first
use, so a file is readable with only the keys of the columns one asks about. A chunk with no
filter answers "maybe" in every probe; a chunk whose key is missing raises
:class:`MissingKeyError`, never "absent".
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

from ..crypto.context import ChunkCryptoContext
from ..crypto.modules import MAX_ORDINAL, ModuleType
from ..encrypted_filter import read_encrypted_bloom_filter, read_encrypted_filter_num_bytes
from ..errors import (
    ColumnNotFoundError,
    KeyNotFoundError,
    MalformedBitsetError,
    MalformedHeaderError,
    MalformedModuleError,
    MalformedThriftError,
    MissingKeyError,
    PlaintextFilterOnEncryptedColumnError,
    SecureBloomError,
)
from ..fileio import open_regular_file
from ..filter import SplitBlockBloomFilter
from ..header import parse_header, validate_num_bytes
from ..spec import MAX_HEADER_BYTES, SPEC_MAX_BITSET_BYTES
from ..values import TimeZoneLike, display_value, maybe_in, query_hashes
from .crypto_context import decrypt_column_metadata
from .footer import ENCRYPTED, SIGNED, Footer, key_id_of, open_footer
from .keys import NO_KEYS, KeyAccess
from .schema import ColumnInfo, ColumnRef, find_column, leaf_columns
from .tail import PLAIN_MAGIC, FileTail, read_tail

__all__ = ["ParquetBloomReader", "ChunkInfo", "ProbeResult", "RowGroupProbe", "MAYBE", "ABSENT"]

MAYBE = "maybe"
ABSENT = "absent"
_FIRST_HEADER_READ = 32
_R = TypeVar("_R")
#: Default bound on the filter bytes one reader keeps cached (least recently used go first). A
#: legal filter is at most 128 MiB; whatever the footer claims, a reader holds at most this much
#: plus the filter being read.
DEFAULT_FILTER_CACHE_BYTES = 256 << 20


@dataclass(frozen=True)
class ChunkInfo:
    """One column chunk's Bloom filter facts.

    ``has_bloom_filter`` is None when the chunk's metadata is encrypted and its key unavailable.
    ``filter_num_bytes`` is the bitset size from the filter header (None when not read).
    ``encryption`` is ``plaintext``, ``footer_key`` or ``column_key``. ``filter_error`` says why
    the chunk's metadata or filter could not be read (a missing key, a tampered or leaked filter);
    one bad chunk never hides the others.
    """

    row_group: int
    column: str
    column_ordinal: int
    encrypted: bool
    encryption: str
    key_id: str | None
    key_available: bool
    has_bloom_filter: bool | None
    bloom_filter_offset: int | None
    bloom_filter_length: int | None
    filter_num_bytes: int | None = None
    filter_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RowGroupProbe:
    """Answers for one row group: ``values`` holds a (label, "maybe" | "absent") pair per value
    probed, in the caller's order (duplicates and equal labels kept)."""

    row_group: int
    has_bloom_filter: bool
    encrypted: bool
    values: tuple[tuple[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"row_group": self.row_group, "has_bloom_filter": self.has_bloom_filter,
                "encrypted": self.encrypted,
                "values": [{"value": label, "answer": answer} for label, answer in self.values]}


@dataclass(frozen=True)
class ProbeResult:
    """The answer of :meth:`ParquetBloomReader.probe`; :meth:`to_dict` is its JSON shape::

        {"file": str, "column": str, "values": [label, ...],
         "row_groups": [{"row_group": i, "has_bloom_filter": bool, "encrypted": bool,
                         "values": [{"value": label, "answer": "maybe" | "absent"}, ...]}]}

    One answer per value the caller gave, in the caller's order, labelled with the caller's
    label (by default the value's text, :func:`~secure_bloom.values.text.display_value`). A
    list, not a mapping: two values with the same label (``-nan`` and ``nan``, or a value given
    twice) each keep their own answer.
    """

    file: str
    column: str
    row_groups: tuple[RowGroupProbe, ...]
    labels: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "column": self.column, "values": list(self.labels),
                "row_groups": [rg.to_dict() for rg in self.row_groups]}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def maybe_row_groups(self, index: int) -> list[int]:
        """Row groups where the ``index``-th value probed may be present."""
        if not -len(self.labels) <= index < len(self.labels):
            raise IndexError(f"value index {index} out of range: {len(self.labels)} values were probed")
        return [rg.row_group for rg in self.row_groups if rg.values[index][1] == MAYBE]

    def row_groups_maybe_containing(self, label: str) -> list[int]:
        """Row groups where the value labelled ``label`` may be present; the label must name
        exactly one value probed (else use :meth:`maybe_row_groups` with its position)."""
        found = [i for i, shown in enumerate(self.labels) if shown == label]
        if len(found) != 1:
            raise KeyError(f"{len(found)} values probed are labelled {label!r}; use maybe_row_groups(index)")
        return self.maybe_row_groups(found[0])

    @property
    def any_maybe(self) -> bool:
        return any(answer == MAYBE for rg in self.row_groups for _, answer in rg.values)


class _RecordingFile:
    """A read-only file wrapper that records every (offset, length) read: proof that a probe
    reads the tail and filter bytes only."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.ranges: list[tuple[int, int]] = []

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def read(self, n: int = -1) -> bytes:
        pos = self._raw.tell()
        data = self._raw.read(n)
        self.ranges.append((pos, len(data)))
        return data

    def close(self) -> None:
        self._raw.close()


@dataclass
class _Chunk:
    """Internal per-chunk state; ``meta`` is the full ColumnMetaData once known."""

    row_group: int
    rg_ordinal: int
    column: ColumnInfo
    encryption: str
    key_metadata: bytes | None
    visible_meta: Any
    encrypted_meta: bytes | None
    meta: Any = None
    meta_thrift: bytes | None = None


class ParquetBloomReader:
    """Bloom filters of one Parquet file. Use as a context manager, or call :meth:`close`.

    ``keys`` gives the key sources for encrypted files (:class:`KeyAccess`); a plaintext file or
    the plaintext columns of a plaintext-footer file need none. External key material is read
    from the sidecar beside ``key_material_file`` (default: ``path`` itself).

    Filters read are cached up to ``filter_cache_bytes`` of bitsets (least recently used are
    dropped first; 0 caches nothing). Plaintext filters are cached by their location, so chunks
    sharing one filter share one copy; encrypted ones by chunk (their AAD binds them to it).
    """

    def __init__(self, path: str | os.PathLike[str], keys: KeyAccess | None = None, *,
                 key_material_file: str | os.PathLike[str] | None = None,
                 filter_cache_bytes: int = DEFAULT_FILTER_CACHE_BYTES) -> None:
        if isinstance(filter_cache_bytes, bool) or not isinstance(filter_cache_bytes, int) or filter_cache_bytes < 0:
            raise ValueError(f"filter_cache_bytes must be an int >= 0, got {filter_cache_bytes!r}")
        self.path = os.fspath(path)
        self.keys = keys if keys is not None else NO_KEYS
        if not isinstance(self.keys, KeyAccess):
            raise TypeError(f"keys must be a KeyAccess, got {type(self.keys).__name__}")
        self._lock = threading.Lock()
        self._file = _RecordingFile(open_regular_file(self.path))
        try:
            self.tail: FileTail = read_tail(self._file, self.path)  # type: ignore[arg-type]
            key_file = self.path if key_material_file is None else os.fspath(key_material_file)
            self._key_file = key_file
            self._sidecar: Any = None
            self._retriever = self.keys.retriever(key_file) if self.keys.has_keys else None
            self.footer: Footer = open_footer(self.tail, self.keys, self._retriever)
            self._init_columns()
        except BaseException:
            self._file.close()
            raise
        self._column_keys: dict[bytes, bytes] = {}
        self._filters: OrderedDict[tuple[str, int, int | None], SplitBlockBloomFilter] = OrderedDict()
        self._filter_cache_bytes = filter_cache_bytes
        self._cached_bytes = 0

    # ---------------------------------------------------------------- opening

    def _init_columns(self) -> None:
        md = self.footer.metadata
        leaves = leaf_columns(md.schema)
        self._chunks: list[list[_Chunk]] = []
        for i, rg in enumerate(md.row_groups):
            if len(rg.columns) != len(leaves):
                raise MalformedThriftError(
                    f"{self.path}: row group {i} has {len(rg.columns)} column chunks, the schema {len(leaves)} leaves")
            ordinal = rg.ordinal if rg.ordinal is not None else i
            row: list[_Chunk] = []
            for leaf, cc in zip(leaves, rg.columns):
                row.append(self._chunk_state(i, ordinal, leaf, cc))
            self._chunks.append(row)
        columns = []
        for leaf in leaves:
            first = self._chunks[0][leaf.ordinal] if self._chunks else None
            if first is not None and first.encryption != "plaintext":
                kmd = first.key_metadata if first.encryption == "column_key" else self.footer.footer_key_metadata
                leaf = dataclasses.replace(leaf, encrypted=True, key_id=self._key_label(kmd))
            columns.append(leaf)
        self._columns = tuple(columns)
        self._by_path = {c.path: c for c in columns}

    def _key_label(self, key_metadata: bytes | None) -> str:
        """Printable key id; external key material is named by its master key from the sidecar."""
        return key_id_of(key_metadata, self._load_sidecar)

    def _load_sidecar(self) -> Any:
        if self._sidecar is None:
            from ..kms import KeyMaterialStore

            self._sidecar = KeyMaterialStore.for_data_file(self._key_file)
        return self._sidecar

    def _chunk_state(self, rg: int, ordinal: int, leaf: ColumnInfo, cc: Any) -> _Chunk:
        crypto = cc.crypto_metadata
        if crypto is None:
            encryption, kmd = "plaintext", None
        elif crypto.ENCRYPTION_WITH_FOOTER_KEY is not None:
            encryption, kmd = "footer_key", None
        else:
            with_key = crypto.ENCRYPTION_WITH_COLUMN_KEY
            if tuple(with_key.path_in_schema) != leaf.path_in_schema:
                raise MalformedThriftError(
                    f"{self.path}: row group {rg} column {leaf.ordinal}: crypto metadata names "
                    f"{'.'.join(with_key.path_in_schema)!r}, the schema {leaf.path!r}")
            encryption, kmd = "column_key", with_key.key_metadata
        if encryption != "plaintext":
            self._check_ordinals(rg, ordinal, leaf)
        if encryption == "plaintext" or cc.encrypted_column_metadata is None:
            if cc.meta_data is None:
                raise MalformedThriftError(f"{self.path}: row group {rg} column {leaf.path!r} has no metadata")
        meta = cc.meta_data if cc.encrypted_column_metadata is None else None
        return _Chunk(row_group=rg, rg_ordinal=ordinal, column=leaf, encryption=encryption, key_metadata=kmd,
                      visible_meta=cc.meta_data, encrypted_meta=cc.encrypted_column_metadata, meta=meta)

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
        self._file.close()

    def __enter__(self) -> ParquetBloomReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ParquetBloomReader({self.path!r}, footer={self.footer.mode}, row_groups={self.num_row_groups})"

    # ---------------------------------------------------------------- public facts

    @property
    def num_row_groups(self) -> int:
        return len(self._chunks)

    @property
    def num_rows(self) -> int:
        return int(self.footer.metadata.num_rows)

    @property
    def columns(self) -> tuple[ColumnInfo, ...]:
        return self._columns

    @property
    def read_ranges(self) -> tuple[tuple[int, int], ...]:
        """Every (offset, length) read from the file so far."""
        return tuple(self._file.ranges)

    @property
    def bytes_read(self) -> int:
        return sum(n for _, n in self._file.ranges)

    def column(self, column: ColumnRef) -> ColumnInfo:
        """A leaf column by dotted path, path parts (``("a", "b")`` vs ``("a.b",)``), ordinal, or
        ColumnInfo; a dotted path two leaves share raises :class:`AmbiguousColumnError`."""
        return find_column(self._columns, column, self.path)

    # ---------------------------------------------------------------- keys and metadata

    def _key_for(self, chunk: _Chunk) -> bytes:
        where = f"{self.path}: column {chunk.column.path!r}"
        if chunk.encryption == "footer_key":
            if self.footer.footer_key is None:
                raise MissingKeyError(
                    f"{where} is encrypted with the footer key {self._key_label(self.footer.footer_key_metadata)!r}, "
                    "which is not available")
            return self.footer.footer_key
        kmd = bytes(chunk.key_metadata or b"")
        if kmd in self._column_keys:
            return self._column_keys[kmd]
        if self._retriever is None:
            raise MissingKeyError(f"{where} needs key {self._key_label(chunk.key_metadata)!r} and no keys were given")
        try:
            key = self._retriever(kmd)
        except (MissingKeyError, KeyNotFoundError) as e:
            raise MissingKeyError(f"{where} needs key {self._key_label(chunk.key_metadata)!r}: {e}") from None
        self._column_keys[kmd] = key
        return key

    def _meta(self, chunk: _Chunk) -> Any:
        if chunk.meta is None:
            context = ChunkCryptoContext(self._key_for(chunk), self.footer.require_file_aad(), chunk.rg_ordinal,
                                         chunk.column.ordinal)
            what = f"ColumnMetaData of row group {chunk.row_group}, column {chunk.column.path!r}"
            chunk.meta, chunk.meta_thrift = decrypt_column_metadata(
                self._thrift().ColumnMetaData, chunk.encrypted_meta or b"", context, what=what)
        return chunk.meta

    @staticmethod
    def _thrift() -> Any:
        from .. import thrift_codec

        return thrift_codec.idl()

    def _key_available(self, chunk: _Chunk) -> bool:
        if chunk.encryption == "plaintext":
            return True
        try:
            self._key_for(chunk)
            return True
        except MissingKeyError:
            return False

    def _location(self, chunk: _Chunk) -> tuple[int, int | None] | None:
        """(offset, length or None) of the chunk's filter, or None without one."""
        meta = self._meta(chunk)
        if meta.bloom_filter_offset is None:
            return None
        return int(meta.bloom_filter_offset), (None if meta.bloom_filter_length is None
                                               else int(meta.bloom_filter_length))

    def _chunk(self, row_group: int, column: str | int | ColumnInfo) -> _Chunk:
        info = self.column(column)
        if isinstance(row_group, bool) or not isinstance(row_group, int) or not 0 <= row_group < len(self._chunks):
            raise IndexError(f"row group {row_group!r} out of range 0..{len(self._chunks) - 1}")
        return self._chunks[row_group][info.ordinal]

    # ---------------------------------------------------------------- filters

    def _check_region(self, chunk: _Chunk, offset: int, length: int | None) -> None:
        end = self.tail.footer_offset
        if offset < len(PLAIN_MAGIC) or offset >= end or (length is not None and (length <= 0 or offset + length > end)):
            raise MalformedThriftError(
                f"{self.path}: Bloom filter of row group {chunk.row_group}, column {chunk.column.path!r} "
                f"(offset {offset}, length {length}) lies outside the data region [4, {end})")

    def _read_at(self, offset: int, n: int) -> bytes:
        self._file.seek(offset)
        data = self._file.read(n)
        if len(data) != n:
            raise MalformedBitsetError(f"{self.path}: short read of {len(data)} bytes, wanted {n} at offset {offset}")
        return data

    def _plain_header(self, chunk: _Chunk, offset: int, length: int | None) -> tuple[Any, int]:
        """The plaintext filter's header and its size; numBytes checked against ``length`` (or,
        without one, against the data region) before any bitset byte is read."""
        if length is not None and length > MAX_HEADER_BYTES + SPEC_MAX_BITSET_BYTES:  # refused before reading
            raise MalformedBitsetError(
                f"{self.path}: bloom_filter_length {length} of row group {chunk.row_group}, column "
                f"{chunk.column.path!r} exceeds the largest filter ({MAX_HEADER_BYTES + SPEC_MAX_BITSET_BYTES} bytes)")
        limit = self.tail.footer_offset - offset if length is None else length
        want = min(_FIRST_HEADER_READ, limit)
        while True:
            head = self._read_at(offset, want)
            try:
                header, used = parse_header(head)
                break
            except MalformedHeaderError:
                if want >= min(MAX_HEADER_BYTES, limit):
                    raise
                want = min(want * 4, MAX_HEADER_BYTES, limit)
        validate_num_bytes(header.num_bytes, available=limit - used)
        if length is not None and used + header.num_bytes != length:
            raise MalformedBitsetError(
                f"{self.path}: bloom_filter_length {length} but header + bitset take {used + header.num_bytes} bytes")
        return header, used

    def _read_plain(self, chunk: _Chunk, offset: int, length: int | None) -> SplitBlockBloomFilter:
        header, used = self._plain_header(chunk, offset, length)
        return SplitBlockBloomFilter.from_bitset(self._read_at(offset + used, header.num_bytes))

    def _filter_location(self, chunk: _Chunk) -> tuple[tuple[str, int, int | None], int, int | None] | None:
        """(cache key, offset, length) of the chunk's filter after the region check; None without one.
        Plaintext filters are keyed by location (shared bytes, one copy); encrypted ones by chunk."""
        location = self._location(chunk)
        if location is None:
            return None
        offset, length = location
        self._check_region(chunk, offset, length)
        if chunk.encryption == "plaintext":
            return ("plaintext", offset, length), offset, length
        return ("encrypted", chunk.row_group, chunk.column.ordinal), offset, length

    def _remember(self, key: tuple[str, int, int | None], bf: SplitBlockBloomFilter) -> None:
        size = bf.num_bytes
        if size > self._filter_cache_bytes:
            return
        while self._filters and self._cached_bytes + size > self._filter_cache_bytes:
            _, old = self._filters.popitem(last=False)
            self._cached_bytes -= old.num_bytes
        self._filters[key] = bf
        self._cached_bytes += size

    def bloom_filter(self, row_group: int, column: str | int | ColumnInfo) -> SplitBlockBloomFilter | None:
        """The chunk's filter, decrypted if needed; None if the chunk has none."""
        chunk = self._chunk(row_group, column)
        found = self._filter_location(chunk)
        if found is None:
            return None
        cache_key, offset, length = found
        with self._lock:
            cached = self._filters.get(cache_key)
            if cached is not None:
                self._filters.move_to_end(cache_key)
                return cached
            if chunk.encryption == "plaintext":
                bf = self._read_plain(chunk, offset, length)
            else:
                bf = self._read_encrypted(chunk, offset, length, read_encrypted_bloom_filter)
            self._remember(cache_key, bf)
        return bf

    def _filter_num_bytes(self, chunk: _Chunk) -> int | None:
        """numBytes of the chunk's filter from its header alone (the bitset is neither read nor kept)."""
        found = self._filter_location(chunk)
        if found is None:
            return None
        cache_key, offset, length = found
        with self._lock:
            cached = self._filters.get(cache_key)
            if cached is not None:
                return cached.num_bytes
            if chunk.encryption == "plaintext":
                return int(self._plain_header(chunk, offset, length)[0].num_bytes)
            return self._read_encrypted(chunk, offset, length, read_encrypted_filter_num_bytes)

    def _read_encrypted(self, chunk: _Chunk, offset: int, length: int | None, read: Callable[..., _R]) -> _R:
        """``read(file, offset, length=, context=)`` for an encrypted chunk; broken framing that is a
        plaintext filter is reported as the leak it is."""
        context = ChunkCryptoContext(self._key_for(chunk), self.footer.require_file_aad(), chunk.rg_ordinal,
                                     chunk.column.ordinal)
        try:
            return read(self._file, offset, length=length, context=context)
        except MalformedModuleError:
            self._raise_if_plaintext(chunk, offset, length)
            raise

    def _raise_if_plaintext(self, chunk: _Chunk, offset: int, length: int | None) -> None:
        """An encrypted column whose filter bytes are a *plaintext* filter: say so (a leak, what
        arrow-rs writes), rather than report broken module framing."""
        from .filter_storage import PLAINTEXT, read_filter_storage

        storage = read_filter_storage(self._file, offset, length, self.tail.footer_offset)  # type: ignore[arg-type]
        if storage.form == PLAINTEXT:
            raise PlaintextFilterOnEncryptedColumnError(
                f"row group {chunk.row_group}, column {chunk.column.path!r}: the column is encrypted but its "
                "Bloom filter is stored in plaintext (it reveals the column's values)")

    def chunks(self, *, with_sizes: bool = True) -> list[ChunkInfo]:
        """Every (row group, column) chunk; ``with_sizes`` reads each filter's header (and
        authenticates it, if encrypted) to report its size; bitsets are not read."""
        out = []
        for row in self._chunks:
            for chunk in row:
                out.append(self._chunk_info(chunk, with_sizes))
        return out

    def _chunk_info(self, chunk: _Chunk, with_sizes: bool) -> ChunkInfo:
        available = self._key_available(chunk)
        kmd = chunk.key_metadata if chunk.encryption == "column_key" else (
            self.footer.footer_key_metadata if chunk.encryption == "footer_key" else None)
        readable = chunk.meta is not None or (available and self.footer.file_aad is not None)
        error = None
        try:
            meta = self._meta(chunk) if readable else chunk.visible_meta
        except SecureBloomError as e:
            meta, error = chunk.visible_meta, f"{type(e).__name__}: {e}"
        has = None if meta is None else meta.bloom_filter_offset is not None
        num_bytes = None
        if has and with_sizes and available and error is None:
            try:
                num_bytes = self._filter_num_bytes(chunk)
            except SecureBloomError as e:
                error = f"{type(e).__name__}: {e}"
        return ChunkInfo(
            row_group=chunk.row_group, column=chunk.column.path, column_ordinal=chunk.column.ordinal,
            encrypted=chunk.encryption != "plaintext", encryption=chunk.encryption,
            key_id=None if chunk.encryption == "plaintext" else self._key_label(kmd), key_available=available,
            has_bloom_filter=has,
            bloom_filter_offset=None if meta is None or meta.bloom_filter_offset is None else int(meta.bloom_filter_offset),
            bloom_filter_length=None if meta is None or meta.bloom_filter_length is None else int(meta.bloom_filter_length),
            filter_num_bytes=num_bytes, filter_error=error)

    # ---------------------------------------------------------------- probes

    def probe(self, column: str | int | ColumnInfo, values: Iterable[Any] | Any, *,
              labels: Sequence[str] | None = None, timezone: TimeZoneLike | None = None) -> ProbeResult:
        """Ask every row group's filter of ``column`` whether each of ``values`` may be there.

        Query semantics (:func:`~secure_bloom.values.column.query_hashes`): 0.0 finds -0.0 too,
        a NaN is always "maybe", and a naive date/time for a column of UTC instants is refused
        unless ``timezone`` names its zone. ``labels`` (one per value) name the answers; by
        default each value's text. One answer per value, in order, duplicates kept.
        """
        info = self.column(column)
        if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Iterable):
            values = [values]
        values = list(values)
        queries = [query_hashes(v, info, timezone=timezone) for v in values]
        shown = [display_value(v) for v in values] if labels is None else [str(label) for label in labels]
        if len(shown) != len(values):
            raise ValueError(f"{len(shown)} labels for {len(values)} values")
        row_groups = []
        for rg in range(self.num_row_groups):
            chunk = self._chunks[rg][info.ordinal]
            bf = self.bloom_filter(rg, info.ordinal)
            answers = [MAYBE if hit else ABSENT for hit in maybe_in(bf, queries)]
            row_groups.append(RowGroupProbe(row_group=rg, has_bloom_filter=bf is not None,
                                            encrypted=chunk.encryption != "plaintext",
                                            values=tuple(zip(shown, answers))))
        return ProbeResult(file=self.path, column=info.path, row_groups=tuple(row_groups), labels=tuple(shown))

    def row_groups_maybe_containing(self, column: str | int | ColumnInfo, value: Any, *,
                                    timezone: TimeZoneLike | None = None) -> list[int]:
        """Row groups whose filter may hold ``value`` (every group without a filter is included);
        query semantics as :meth:`probe`."""
        info = self.column(column)
        query = [query_hashes(value, info, timezone=timezone)]
        return [rg for rg in range(self.num_row_groups) if maybe_in(self.bloom_filter(rg, info.ordinal), query)[0]]

    def iter_filters(self, column: str | int | ColumnInfo) -> Iterator[tuple[int, SplitBlockBloomFilter | None]]:
        """(row group, filter or None) for every row group of ``column``."""
        info = self.column(column)
        for rg in range(self.num_row_groups):
            yield rg, self.bloom_filter(rg, info.ordinal)

    # ---------------------------------------------------------------- describe

    def describe(self, *, with_sizes: bool = True) -> dict[str, Any]:
        """Everything ``inspect --json`` shows: footer mode, encryption, columns and chunks."""
        footer = self.footer
        md = footer.metadata
        signature = None
        if footer.mode == SIGNED:
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
            "columns": [c.to_dict() for c in self._columns],
            "row_groups": row_groups,
        }
