"""Attach (encrypted) Bloom filters to an existing Parquet file, writing a verified copy.

Spec: BloomFilter.md "File Format", Encryption.md (SPEC_NOTES 4-6). The destination is::

    src[0 : footer_offset]          copied verbatim: data pages, indexes, existing filters
    new filters                     header + bitset; for encrypted columns the header module
                                    (type 8) and bitset module (type 9), GCM, column key,
                                    AAD = file_aad | type | rg ordinal | column ordinal
    footer                          the src footer with bloom_filter_offset / _length set:
                                    ColumnMetaData re-encrypted (type 1) with the column key
                                    where it was encrypted; the footer re-encrypted (PARE) or
                                    re-signed (plaintext footer) with the footer key
    footer length | magic

Values come from the file itself (pyarrow, decrypting through our KMS client); each filter is
sized for the chunk's distinct count at ``fpp`` (parquet-java's sizing) unless ``ndv`` is given.
The copy is written to a temporary file beside ``dst``, fsynced, re-opened with
:class:`ParquetBloomReader` (every new filter decrypted and compared, a sample of inserted values
must be "maybe", every kept filter unchanged) and only then renamed onto ``dst``. On any failure
no temporary file and no ``dst`` are left behind; ``src`` is only ever opened for reading.

Before anything is written, the parsed footer (and each decrypted ColumnMetaData) must
re-serialise to its original bytes: a field this library does not know would otherwise be lost.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import stat
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from .. import thrift_codec
from ..crypto.context import ChunkCryptoContext
from ..encrypted_filter import encrypt_bloom_filter
from ..errors import (
    AttachError,
    DestinationExistsError,
    MissingKeyError,
    PlaintextFilterOnEncryptedColumnError,
    SecureBloomError,
    SourceChangedError,
    UnsupportedParquetFeatureError,
)
from ..filter import SplitBlockBloomFilter, optimal_num_bytes
from ..spec import DEFAULT_FPP, WRITER_DEFAULT_MAX_BYTES
from ..types import PhysicalType
from ..values.physical import hash_value, hash_values
from ..kms.material import KeyMetadata
from ..kms.sidecar import _fsync_dir, sidecar_path
from .arrow_source import ArrowChunkSource, decryption_properties
from .crypto_context import encrypt_column_metadata
from .footer import encode_footer, key_id_of
from .keys import NO_KEYS, KeyAccess
from .reader import ParquetBloomReader, _Chunk
from .regions import Region, filter_extent, merge, metadata_regions
from .schema import ColumnInfo, ColumnRef

__all__ = ["attach_bloom_filters", "AttachReport", "AttachedFilter", "serialize_chunk_filter",
           "DEFAULT_FPP", "WRITER_DEFAULT_MAX_BYTES"]

_COPY_BLOCK = 1 << 20
_SAMPLE = 64

#: ``progress(stage, done, total)``; stages "filters" (chunks built) and "copy" (bytes written).
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class AttachedFilter:
    """One filter written: where, how big, for how many values."""

    row_group: int
    column: str
    encrypted: bool
    num_bytes: int
    ndv: int
    values: int
    offset: int
    length: int
    replaced: bool
    #: False-positive rate expected from the filter's size and ndv (``fpp_estimate``).
    expected_fpp: float = 0.0
    #: True when ``max_bytes`` made the filter smaller than the requested fpp needs.
    capped: bool = False


@dataclass(frozen=True)
class AttachReport:
    """What :func:`attach_bloom_filters` did."""

    src: str
    dst: str
    footer_mode: str
    filters: tuple[AttachedFilter, ...]
    kept_filters: int
    src_bytes: int
    dst_bytes: int
    verified_values: int

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["filters"] = [dataclasses.asdict(f) for f in self.filters]
        return out


def serialize_chunk_filter(bf: SplitBlockBloomFilter, *, column: str, encrypted: bool, key: bytes | None,
                           file_aad: bytes | None, row_group_ordinal: int, column_ordinal: int) -> bytes:
    """The on-disk bytes of one chunk's filter: encrypted modules for an encrypted column,
    header + bitset otherwise. Never writes a plaintext filter for an encrypted column."""
    if encrypted:
        if key is None or file_aad is None:
            raise PlaintextFilterOnEncryptedColumnError(
                f"column {column!r} is encrypted and its key or file AAD is unavailable; refusing to write "
                "its Bloom filter in plaintext")
        return encrypt_bloom_filter(bf, key, file_aad, row_group_ordinal, column_ordinal)
    return bf.to_bytes()


class _OutputFile:
    """The temporary destination; the one place bytes are written.

    Where Linux allows it (``O_TMPFILE``) the file has no name until :meth:`publish` links it in,
    so a process killed before that leaves nothing behind; elsewhere it is the hidden ``path``,
    which the caller removes on failure.
    """

    def __init__(self, path: Path, mode: int) -> None:
        self.path = path
        self.written = 0
        self.anonymous = False
        if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
            try:
                self._fd = os.open(path.parent, os.O_TMPFILE | os.O_WRONLY, mode)
                self.anonymous = True
            except OSError:  # the filesystem has no O_TMPFILE
                pass
        if not self.anonymous:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)

    @property
    def readable_path(self) -> Path:
        """A path that opens this file (also while it has no name)."""
        return Path(f"/proc/self/fd/{self._fd}") if self.anonymous else self.path

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
            self.written += n

    def sync(self) -> None:
        os.fsync(self._fd)

    def publish(self, target: Path, *, replace: bool) -> None:
        """Give the synced file the name ``target`` (beside ``path``) atomically.

        Without ``replace`` the file is hard-linked in (``linkat``), which never replaces
        anything: a ``target`` that exists, appeared meanwhile or is a dangling symlink raises
        :class:`DestinationExistsError` and is left as it is. With ``replace`` an anonymous file
        is linked in as ``path`` and renamed over ``target``: a kill between those two calls is
        the only way to leave a temporary file behind."""
        try:
            if self.anonymous:
                source = f"/proc/self/fd/{self._fd}"
                directory = os.open(target.parent, os.O_RDONLY)
                try:  # linkat(AT_SYMLINK_FOLLOW): os.link only passes it when given a dir fd
                    if not replace or not os.path.lexists(target):
                        try:
                            os.link(source, target.name, dst_dir_fd=directory, follow_symlinks=True)
                            self.close()
                            return
                        except FileExistsError:
                            if not replace:
                                raise
                    os.link(source, self.path.name, dst_dir_fd=directory, follow_symlinks=True)
                finally:
                    os.close(directory)
            elif not replace:
                try:
                    os.link(self.path, target)
                except FileExistsError:
                    raise
                except OSError:  # no hard links on this filesystem: check, then rename (a small race)
                    if os.path.lexists(target):
                        raise FileExistsError(target) from None
                else:
                    self.path.unlink()
                    self.close()
                    return
        except FileExistsError:
            raise DestinationExistsError(
                f"destination {target} appeared while attach ran; it was left as it is (pass overwrite=True "
                "to replace it)") from None
        os.replace(self.path, target)
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class _Source:
    """The source, opened once: the footer, the filters, the values (pyarrow) and the copied
    pages are all read through this one descriptor (``readable_path`` reopens the same inode),
    so they all come from one file even if ``path`` is replaced meanwhile.

    ``lock`` (in place) takes an exclusive ``flock`` held until :meth:`close`: a second in-place
    attach of the same file waits, then reads the file the first one published.
    :meth:`check_unchanged` refuses a source that was modified or replaced since it was opened.
    """

    def __init__(self, path: Path, *, lock: bool) -> None:
        self.path = path
        while True:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise AttachError(f"source {path} is not a regular file")
                if lock:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    if _identity(os.stat(path))[:2] != _identity(os.fstat(fd))[:2]:
                        os.close(fd)  # replaced while we waited for the lock: open the new file
                        continue
            except BaseException:
                os.close(fd)
                raise
            break
        self.fd = fd
        self.stat = os.fstat(fd)
        fd_dir = next((d for d in ("/proc/self/fd", "/dev/fd") if os.path.isdir(d)), None)
        self.readable_path = f"{fd_dir}/{fd}" if fd_dir is not None else os.fspath(path)

    def check_unchanged(self) -> None:
        """Raise :class:`SourceChangedError` if the file was written to, or ``path`` now names
        another file, since it was opened."""
        if _identity(os.fstat(self.fd)) != _identity(self.stat):
            raise SourceChangedError(f"source {self.path} was modified while attach read it; nothing was written")
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            now = None
        if now is None or _identity(now) != _identity(self.stat):
            raise SourceChangedError(f"source {self.path} was replaced or removed while attach read it; "
                                     "nothing was written")

    def copy_to(self, out: _OutputFile, size: int, zero: list[Region], progress: Progress | None,
                total: int) -> None:
        """Write bytes ``[0, size)`` of the source to ``out``, with the ``zero`` regions zeroed."""
        pos = 0
        while pos < size:
            block = os.pread(self.fd, min(_COPY_BLOCK, size - pos), pos)
            if not block:
                raise SourceChangedError(f"{self.path} shrank while being copied")
            end = pos + len(block)
            hits = [(max(s, pos) - pos, min(e, end) - pos) for s, e in zero if s < end and e > pos]
            if hits:
                buf = bytearray(block)
                for s, e in hits:
                    buf[s:e] = bytes(e - s)
                block = bytes(buf)
            out.write(block)
            pos = end
            if progress is not None:
                progress("copy", out.written, total)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # releases the lock
            self.fd = -1


@dataclass
class _Planned:
    chunk: _Chunk
    bf: SplitBlockBloomFilter
    ndv: int
    count: int
    sample: np.ndarray
    replaced: bool
    capped: bool = False
    inserted_distinct: int = 0
    data: bytes = b""
    offset: int = 0


def _per_column(option: Any, column: str, default: Any) -> Any:
    if isinstance(option, Mapping):
        return option.get(column, default)
    return default if option is None else option


def _check_round_trip(thrift_obj: Any, original: bytes, what: str) -> None:
    if thrift_codec.serialize(thrift_obj) != bytes(original):
        raise UnsupportedParquetFeatureError(
            f"{what} does not re-serialise to its original bytes (it holds fields this version does not "
            "know); attaching would drop them, so nothing was written")


def _choose_columns(reader: ParquetBloomReader, columns: Iterable[ColumnRef]) -> list[ColumnInfo]:
    chosen: list[ColumnInfo] = []
    for name in columns:
        info = reader.column(name)
        if info.physical_type is PhysicalType.BOOLEAN:
            raise UnsupportedParquetFeatureError(f"column {info.path!r} is BOOLEAN; Bloom filters never hold booleans")
        if info not in chosen:
            chosen.append(info)
    return chosen


def _build(reader: ParquetBloomReader, source: ArrowChunkSource, chunk: _Chunk, fpp: float,
           ndv: int | None, max_bytes: int) -> _Planned:
    info = chunk.column
    values = source.values(chunk.row_group, info)
    distinct = int(pc.count_distinct(values, mode="only_valid").as_py()) if ndv is None else int(ndv)
    bf = SplitBlockBloomFilter.for_ndv(distinct, fpp, max_bytes)
    capped = optimal_num_bytes(distinct, fpp) > bf.num_bytes
    hashes = hash_values(values, info.physical_type, type_length=info.type_length)
    bf.insert_hashes(hashes)
    meta = reader._meta(chunk)
    _cross_check(bf, meta.statistics, info)
    step = max(1, hashes.size // _SAMPLE)
    replaced = meta.bloom_filter_offset is not None
    return _Planned(chunk=chunk, bf=bf, ndv=distinct, count=int(hashes.size), sample=hashes[::step][:_SAMPLE],
                    replaced=replaced, capped=capped,
                    inserted_distinct=distinct if ndv is None else int(np.unique(hashes).size))


_STORED_WIDTH = {PhysicalType.INT32: 4, PhysicalType.INT64: 8, PhysicalType.FLOAT: 4, PhysicalType.DOUBLE: 8,
                 PhysicalType.INT96: 12}


def _stored_values(statistics: Any, info: ColumnInfo) -> list[bytes]:
    """The chunk's min and max as the file stores them (plain encoding, no length prefix): values
    the chunk holds, read without pyarrow. Left out: inexact (truncated) bounds, values of the
    wrong width, and floating-point zeros and NaN (writers put -0.0 / +0.0 in bounds in place of
    either zero, and leave NaN out)."""
    if statistics is None:
        return []
    width = _STORED_WIDTH.get(info.physical_type, info.type_length)
    is_float = info.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE) or info.logical_type == "FLOAT16"
    out: list[bytes] = []
    for raw, exact in ((statistics.min_value, statistics.is_min_value_exact),
                       (statistics.max_value, statistics.is_max_value_exact),
                       (statistics.min, None), (statistics.max, None)):
        if raw is None or exact is False or (width is not None and len(raw) != width):
            continue
        raw = bytes(raw)
        if is_float:
            number = np.frombuffer(raw, dtype={2: "<f2", 4: "<f4", 8: "<f8"}[len(raw)])[0]
            if number == 0 or np.isnan(number):
                continue
        out.append(raw)
    return out


def _cross_check(bf: SplitBlockBloomFilter, statistics: Any, info: ColumnInfo) -> None:
    """The chunk's stored min and max (footer statistics: the physical bytes as written, not
    values pyarrow converted) must be "maybe" in the new filter: a guard, independent of the
    Arrow read, against a conversion that does not give back what the file holds."""
    for raw in _stored_values(statistics, info):
        if not bf.check_hash(hash_value(raw, PhysicalType.BYTE_ARRAY)):
            raise AttachError(f"column {info.path!r} ({info.type_name}): a value the chunk stores (its statistics' "
                              f"min or max, 0x{raw.hex()[:64]}) is not in the filter built from the values pyarrow "
                              "read; refusing to write a wrong filter")


def _uses_external_material(reader: ParquetBloomReader) -> bool:
    kmds = [reader.footer.footer_key_metadata] + [c.key_metadata for row in reader._chunks for c in row]
    for kmd in kmds:
        if kmd is not None and KeyMetadata.looks_like_key_tools(bytes(kmd)):
            try:
                if not KeyMetadata.from_bytes(bytes(kmd)).internal_storage:
                    return True
            except SecureBloomError:
                continue
    return False


def _new_metadata(reader: ParquetBloomReader, planned: list[_Planned]) -> Any:
    """A fresh FileMetaData with every planned filter's offset and length set."""
    m = thrift_codec.idl()
    footer = reader.footer
    _check_round_trip(footer.metadata, footer.metadata_thrift, "the footer FileMetaData")
    metadata, _ = thrift_codec.parse(m.FileMetaData, footer.metadata_thrift)
    for p in planned:
        chunk = p.chunk
        cc = metadata.row_groups[chunk.row_group].columns[chunk.column.ordinal]
        if cc.encrypted_column_metadata is not None:
            full = reader._meta(chunk)
            original = chunk.meta_thrift or b""
            _check_round_trip(full, original,
                              f"the encrypted ColumnMetaData of row group {chunk.row_group}, column {chunk.column.path!r}")
            meta, _ = thrift_codec.parse(m.ColumnMetaData, original)
            meta.bloom_filter_offset, meta.bloom_filter_length = p.offset, len(p.data)
            context = ChunkCryptoContext(reader._key_for(chunk), footer.require_file_aad(), chunk.rg_ordinal,
                                         chunk.column.ordinal)
            cc.encrypted_column_metadata = encrypt_column_metadata(meta, context)
        if cc.meta_data is not None:
            # The plaintext (or, beside encrypted_column_metadata, redacted) metadata: parquet-java
            # keeps the filter's offset and length visible there.
            cc.meta_data.bloom_filter_offset, cc.meta_data.bloom_filter_length = p.offset, len(p.data)
    return metadata


def _location(meta: Any) -> tuple[int, int | None] | None:
    if meta is None or meta.bloom_filter_offset is None:
        return None
    return int(meta.bloom_filter_offset), None if meta.bloom_filter_length is None else int(meta.bloom_filter_length)


def _stale_filters(reader: ParquetBloomReader, source: _Source, chunks: list[_Chunk], metas: list[Any],
                   other_filters: list[Any]) -> list[Region]:
    """The bytes of the filters about to be replaced, to be zeroed in the copy: a replaced
    filter must not stay readable (a plaintext one on an encrypted column is a leak that no
    reference points to any more). Zeroing keeps every other offset valid. A filter whose bytes
    overlap anything else the file references is refused for an encrypted column (it cannot be
    removed safely) and left as it is otherwise."""
    data_end = reader.tail.footer_offset
    with open(source.fd, "rb", closefd=False) as raw:
        def extent(location: tuple[int, int | None]) -> Region | None:
            offset, length = location
            if not 4 <= offset < data_end:
                return None
            return filter_extent(raw, offset, length, data_end)

        keep = metadata_regions(reader.footer.metadata, metas)
        for meta in other_filters:
            location = _location(meta)
            region = extent(location) if location is not None else None
            if region is not None:
                keep.append(region)
        keep = merge(keep)
        stale: dict[Region, list[_Chunk]] = {}
        for chunk in chunks:
            location = _location(reader._meta(chunk))
            region = extent(location) if location is not None else None
            if region is not None:
                stale.setdefault(region, []).append(chunk)
    out = []
    for (start, end), owners in stale.items():
        if any(s < end and start < e for s, e in keep):
            if any(c.encryption != "plaintext" for c in owners):
                raise AttachError(
                    f"the existing Bloom filter of column {owners[0].column.path!r} (bytes {start}..{end}) "
                    "overlaps other data of the file, so it cannot be removed; nothing was written")
            continue
        out.append((start, end))
    return merge(out)


def _verify(tmp: Path, keys: KeyAccess, key_file: str, planned: list[_Planned],
            kept: dict[tuple[int, int], SplitBlockBloomFilter]) -> int:
    checked = 0
    with ParquetBloomReader(tmp, keys, key_material_file=key_file) as check:
        for p in planned:
            got = check.bloom_filter(p.chunk.row_group, p.chunk.column.ordinal)
            if got is None or got != p.bf:
                raise AttachError(f"verification failed: the filter of row group {p.chunk.row_group}, column "
                                  f"{p.chunk.column.path!r} did not read back identical")
            if p.sample.size and not bool(got.check_hashes(p.sample).all()):
                raise AttachError(f"verification failed: inserted values of column {p.chunk.column.path!r} "
                                  f"are not found in row group {p.chunk.row_group}")
            checked += int(p.sample.size)
        for (rg, col), bf in kept.items():
            if check.bloom_filter(rg, col) != bf:
                raise AttachError(f"verification failed: the existing filter of row group {rg}, column {col} changed")
    return checked


def _copy_sidecar(src: Path, dst: Path, overwrite: bool, tmp_paths: list[Path]) -> _OutputFile | None:
    """Stage dst's external key material (a copy of src's); returns the staged, synced file."""
    source, target = sidecar_path(src), sidecar_path(dst)
    data = source.read_bytes()
    if target.exists():
        if target.read_bytes() == data:
            return None
        if not overwrite:
            raise AttachError(f"{target} exists with other key material; pass overwrite=True")
    staged = target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp")
    tmp_paths.append(staged)
    out = _OutputFile(staged, 0o600)
    try:
        out.write(data)
        out.sync()
    except BaseException:
        out.close()
        raise
    return out


def attach_bloom_filters(src: str | os.PathLike[str], dst: str | os.PathLike[str],
                         columns: Iterable[ColumnRef], keys: KeyAccess | None = None, *,
                         fpp: float | Mapping[str, float] = DEFAULT_FPP,
                         ndv: int | Mapping[str, int] | None = None,
                         max_bytes: int = WRITER_DEFAULT_MAX_BYTES, overwrite: bool = False, in_place: bool = False,
                         progress: Progress | None = None) -> AttachReport:
    """Write ``dst``: ``src`` plus Bloom filters for ``columns`` (encrypted where the column is).

    ``fpp`` and ``ndv`` are one value for every column or a mapping column path -> value (a
    missing ``ndv`` entry means "count the chunk's distinct values"). ``dst == src`` needs
    ``in_place=True`` (still atomic; a symlink is followed and its target replaced; a concurrent
    in-place attach of the same file waits for this one); an existing ``dst`` (a dangling
    symlink included) needs ``overwrite=True``, and without it a ``dst`` that appears while
    attach runs is never replaced (:class:`DestinationExistsError`). Existing filters of other
    columns are kept; those of the chosen columns are rebuilt, and the bytes of a replaced filter
    are zeroed in the copy. Everything is read from one open descriptor of ``src``; if ``src`` is
    modified or replaced meanwhile, :class:`SourceChangedError` and nothing is written.
    """
    keys = keys if keys is not None else NO_KEYS
    src_path, dst_path = Path(src), Path(dst)
    if not src_path.is_file():
        raise AttachError(f"source {src_path} is not a file")
    same = dst_path.exists() and os.path.samefile(src_path, dst_path)
    if same and not in_place:
        raise AttachError(f"destination {dst_path} is the source; pass in_place=True to replace it atomically")
    if os.path.lexists(dst_path) and not same and not overwrite:
        raise DestinationExistsError(f"destination {dst_path} exists; pass overwrite=True to replace it")
    # In place, the file itself is replaced, not a symlink that names it.
    target = Path(os.path.realpath(dst_path)) if same else dst_path
    if not target.parent.is_dir():
        raise AttachError(f"destination directory {target.parent} does not exist")

    columns = list(columns)
    if not columns:
        raise ValueError("columns must name at least one column")
    for p in (fpp.values() if isinstance(fpp, Mapping) else [fpp]):
        if isinstance(p, bool) or not isinstance(p, (float, int)) or not 0.0 < p < 1.0:
            raise ValueError(f"fpp must be in (0, 1), got {p!r}")
    for n in (ndv.values() if isinstance(ndv, Mapping) else [ndv]):
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise ValueError(f"ndv must be a non-negative int, got {n!r}")
    tmp_paths: list[Path] = []
    source = None
    try:
        source = _Source(src_path, lock=same)
        with ParquetBloomReader(source.readable_path, keys, key_material_file=src_path) as reader:
            reader.path = os.fspath(src_path)  # messages name the file, not the descriptor
            report = _attach(reader, source, dst_path, target, columns, keys, fpp, ndv, max_bytes, overwrite,
                             same, progress, tmp_paths)
    except BaseException as e:
        for path in tmp_paths:
            path.unlink(missing_ok=True)
        if source is not None and source.readable_path != os.fspath(src_path):
            e.args = tuple(a.replace(source.readable_path, os.fspath(src_path)) if isinstance(a, str) else a
                           for a in e.args)
        if isinstance(e, (SecureBloomError, KeyboardInterrupt, SystemExit)):
            raise
        raise AttachError(f"attach {src_path} -> {dst_path} failed: {type(e).__name__}: {e}") from e
    finally:
        if source is not None:
            source.close()
    return report


def _attach(reader: ParquetBloomReader, source: _Source, dst_path: Path, target: Path,
            columns: Iterable[ColumnRef], keys: KeyAccess, fpp: Any, ndv: Any, max_bytes: int,
            overwrite: bool, same: bool, progress: Progress | None, tmp_paths: list[Path]) -> AttachReport:
    src_path = source.path
    footer = reader.footer
    chosen = _choose_columns(reader, columns)
    if footer.encrypted and footer.footer_key is None:
        raise MissingKeyError(f"{src_path}: the footer key {key_id_of(footer.footer_key_metadata)!r} is needed "
                              "to re-encrypt or re-sign the footer")
    chunks = [reader._chunks[rg][c.ordinal] for rg in range(reader.num_row_groups) for c in chosen]
    for chunk in chunks:            # every key, before pyarrow or any write
        if chunk.encryption != "plaintext":
            reader._key_for(chunk)
        reader._meta(chunk)
    kept: dict[tuple[int, int], SplitBlockBloomFilter] = {}
    chosen_ordinals = {c.ordinal for c in chosen}
    metas: list[Any] = [reader._meta(chunk) for chunk in chunks]
    other_filters: list[Any] = []   # metadata of the filters that stay
    for row in reader._chunks:
        for chunk in row:
            if chunk.column.ordinal in chosen_ordinals:
                continue
            try:
                meta = reader._meta(chunk)
            except MissingKeyError:
                if chunk.visible_meta is not None:
                    other_filters.append(chunk.visible_meta)
                continue            # copied verbatim; without its key it cannot be re-read
            metas.append(meta)
            other_filters.append(meta)
            if meta.bloom_filter_offset is not None:
                bf = reader.bloom_filter(chunk.row_group, chunk.column.ordinal)
                if bf is not None:
                    kept[(chunk.row_group, chunk.column.ordinal)] = bf

    stale = _stale_filters(reader, source, chunks, metas, other_filters)
    decryption = decryption_properties(footer, [c.key_metadata for c in chunks if c.encryption == "column_key"],
                                       keys, src_path)
    planned: list[_Planned] = []
    with ArrowChunkSource(source.readable_path, decryption) as values:
        for i, chunk in enumerate(chunks):
            path = chunk.column.path
            planned.append(_build(reader, values, chunk, float(_per_column(fpp, path, DEFAULT_FPP)),
                                  _per_column(ndv, path, None), max_bytes))
            if progress is not None:
                progress("filters", i + 1, len(chunks))

    offset = reader.tail.footer_offset
    for p in planned:
        chunk = p.chunk
        p.data = serialize_chunk_filter(
            p.bf, column=chunk.column.path, encrypted=chunk.encryption != "plaintext",
            key=reader._key_for(chunk) if chunk.encryption != "plaintext" else None,
            file_aad=footer.file_aad, row_group_ordinal=chunk.rg_ordinal, column_ordinal=chunk.column.ordinal)
        p.offset = offset
        offset += len(p.data)
    footer_bytes = encode_footer(footer, _new_metadata(reader, planned))
    tail = footer_bytes + struct.pack("<I", len(footer_bytes)) + reader.tail.magic

    staged_sidecar = None
    tmp = target.with_name(f".{target.name}.{os.urandom(6).hex()}.attach.tmp")
    tmp_paths.append(tmp)
    out = _OutputFile(tmp, source.stat.st_mode & 0o777)
    try:
        if not same and _uses_external_material(reader):
            staged_sidecar = _copy_sidecar(src_path, dst_path, overwrite, tmp_paths)
        total = offset + len(tail)
        source.copy_to(out, reader.tail.footer_offset, stale, progress, total)
        for p in planned:
            out.write(p.data)
        out.write(tail)
        if progress is not None:
            progress("copy", out.written, total)
        out.sync()
        verified = _verify(out.readable_path, keys, os.fspath(src_path), planned, kept)
        source.check_unchanged()
        # The sidecar first: a kill in between leaves dst absent (and its key material, a copy
        # of src's), never a dst without its key material.
        if staged_sidecar is not None:
            staged_sidecar.publish(sidecar_path(dst_path), replace=overwrite)
        out.publish(target, replace=overwrite or same)
    finally:
        out.close()
        if staged_sidecar is not None:
            staged_sidecar.close()
    _fsync_dir(target.parent)
    filters = tuple(AttachedFilter(row_group=p.chunk.row_group, column=p.chunk.column.path,
                                   encrypted=p.chunk.encryption != "plaintext", num_bytes=p.bf.num_bytes,
                                   ndv=p.ndv, values=p.count, offset=p.offset, length=len(p.data),
                                   replaced=p.replaced, expected_fpp=p.bf.fpp_estimate(p.inserted_distinct),
                                   capped=p.capped) for p in planned)
    return AttachReport(src=os.fspath(src_path), dst=os.fspath(dst_path), footer_mode=footer.mode,
                        filters=filters, kept_filters=len(kept), src_bytes=reader.tail.file_size,
                        dst_bytes=total, verified_values=verified)
