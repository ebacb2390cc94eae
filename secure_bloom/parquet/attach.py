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
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from .. import thrift_codec
from ..errors import (
    AttachError,
    DestinationExistsError,
    MissingKeyError,
    NotRegularFileError,
    SecureBloomError,
    SourceChangedError,
    UnsupportedParquetFeatureError,
)
from ..fileio import AtomicOutput, fsync_dir, open_regular_fd
from ..filter import SplitBlockBloomFilter, optimal_num_bytes
from ..kms.material import KeyMetadata
from ..types import ChunkEncryption, PhysicalType
from ..values.physical import hash_value, hash_values
from ..kms.sidecar import sidecar_path
from .arrow_source import ArrowChunkSource, decryption_properties
from .crypto_context import encrypt_column_metadata
from .footer import encode_footer, key_id_of
from .keys import NO_KEYS, KeyAccess
from .leftovers import PairJournal, clean_leftovers
from .options import DEFAULT_FPP, WRITER_DEFAULT_MAX_BYTES, ColumnSpec, column_specs
from .chunk import ColumnChunk, FilterLocation
from .filter_io import serialize_chunk_filter
from .reader import ParquetBloomReader
from .regions import Region, filter_extent, merge, metadata_regions
from .schema import ColumnInfo, ColumnRef

__all__ = ["attach_bloom_filters", "AttachReport", "AttachedFilter", "ColumnSpec", "DEFAULT_FPP",
           "WRITER_DEFAULT_MAX_BYTES"]
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


def _publish(out: AtomicOutput, target: Path, *, replace: bool) -> None:
    try:
        out.publish(target, replace=replace)
    except FileExistsError:
        raise DestinationExistsError(
            f"destination {target} appeared while attach ran; it was left as it is (pass overwrite=True "
            "to replace it)") from None


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
            try:
                fd = open_regular_fd(path)
            except (NotRegularFileError, IsADirectoryError):
                raise AttachError(f"source {path} is not a regular file") from None
            try:
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

    def copy_to(self, out: AtomicOutput, size: int, zero: list[Region], progress: Progress | None,
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
    chunk: ColumnChunk
    bf: SplitBlockBloomFilter
    ndv: int
    count: int
    sample: np.ndarray
    replaced: bool
    capped: bool = False
    inserted_distinct: int = 0
    data: bytes = b""
    offset: int = 0


def _check_round_trip(thrift_obj: Any, original: bytes, what: str) -> None:
    if thrift_codec.serialize(thrift_obj) != bytes(original):
        raise UnsupportedParquetFeatureError(
            f"{what} does not re-serialise to its original bytes (it holds fields this version does not "
            "know); attaching would drop them, so nothing was written")


def _choose_columns(reader: ParquetBloomReader, plan: _Plan) -> dict[int, ColumnSpec]:
    """Leaf ordinal -> the column's spec with every option resolved, in the order given."""
    chosen: dict[int, ColumnSpec] = {}
    for spec in plan.columns:
        info = reader.column(spec.path)
        if info.physical_type is PhysicalType.BOOLEAN:
            raise UnsupportedParquetFeatureError(f"column {info.path!r} is BOOLEAN; Bloom filters never hold booleans")
        resolved = spec.resolved(info, plan.fpp, plan.ndv)
        if chosen.setdefault(info.ordinal, resolved) != resolved:
            raise AttachError(f"column {info.path!r} is given twice with different options; nothing was written")
    return chosen


def _build(reader: ParquetBloomReader, source: ArrowChunkSource, chunk: ColumnChunk, spec: ColumnSpec,
           max_bytes: int) -> _Planned:
    info = chunk.column
    ndv, fpp = spec.ndv, spec.fpp
    assert fpp is not None
    values = source.values(chunk.row_group, info)
    distinct = int(pc.count_distinct(values, mode="only_valid").as_py()) if ndv is None else int(ndv)
    bf = SplitBlockBloomFilter.for_ndv(distinct, fpp, max_bytes)
    capped = optimal_num_bytes(distinct, fpp) > bf.num_bytes
    hashes = hash_values(values, info.physical_type, type_length=info.type_length)
    bf.insert_hashes(hashes)
    meta = reader.column_metadata(chunk)
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
    kmds = [reader.footer.footer_key_metadata] + [c.key_metadata for c in reader.column_chunks()]
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
            full = reader.column_metadata(chunk)
            original = reader.column_metadata_thrift(chunk) or b""
            _check_round_trip(full, original,
                              f"the encrypted ColumnMetaData of {chunk.where}")
            meta, _ = thrift_codec.parse(m.ColumnMetaData, original)
            meta.bloom_filter_offset, meta.bloom_filter_length = p.offset, len(p.data)
            cc.encrypted_column_metadata = encrypt_column_metadata(meta, reader.crypto_context(chunk))
        if cc.meta_data is not None:
            # The plaintext (or, beside encrypted_column_metadata, redacted) metadata: parquet-java
            # keeps the filter's offset and length visible there.
            cc.meta_data.bloom_filter_offset, cc.meta_data.bloom_filter_length = p.offset, len(p.data)
    return metadata


def _stale_filters(reader: ParquetBloomReader, chunks: list[ColumnChunk], metas: list[Any],
                   other_filters: list[Any]) -> list[Region]:
    """The bytes of the filters about to be replaced, to be zeroed in the copy: a replaced
    filter must not stay readable (a plaintext one on an encrypted column is a leak that no
    reference points to any more). Zeroing keeps every other offset valid. A filter whose bytes
    overlap anything else the file references is refused for an encrypted column (it cannot be
    removed safely) and left as it is otherwise."""
    data_end = reader.tail.footer_offset

    def extent(location: FilterLocation | None) -> Region | None:
        if location is None or not 4 <= location.offset < data_end:
            return None
        return filter_extent(reader.file, location.offset, location.length, data_end)

    keep = metadata_regions(reader.footer.metadata, metas)
    keep += [region for region in (extent(FilterLocation.of(meta)) for meta in other_filters) if region is not None]
    keep = merge(keep)
    stale: dict[Region, list[ColumnChunk]] = {}
    for chunk in chunks:
        region = extent(reader.filter_location(chunk))
        if region is not None:
            stale.setdefault(region, []).append(chunk)
    out = []
    for (start, end), owners in stale.items():
        if any(s < end and start < e for s, e in keep):
            if any(c.encrypted for c in owners):
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


def _copy_sidecar(src: Path, dst: Path, overwrite: bool, tmp_paths: list[Path]) -> AtomicOutput | None:
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
    out = AtomicOutput(staged, 0o600)
    try:
        out.write(data)
        out.sync()
    except BaseException:
        out.close()
        raise
    return out


def attach_bloom_filters(src: str | os.PathLike[str], dst: str | os.PathLike[str],
                         columns: Iterable[ColumnRef | ColumnSpec], keys: KeyAccess | None = None, *,
                         fpp: float | Mapping[str, float] = DEFAULT_FPP,
                         ndv: int | Mapping[str, int] | None = None,
                         max_bytes: int = WRITER_DEFAULT_MAX_BYTES, overwrite: bool = False, in_place: bool = False,
                         progress: Progress | None = None) -> AttachReport:
    """Write ``dst``: ``src`` plus Bloom filters for ``columns`` (encrypted where the column is).

    ``columns`` are leaf names (or :class:`ColumnSpec` with the column's own ``ndv`` / ``fpp``);
    ``fpp`` and ``ndv`` apply to the columns whose spec leaves them unset: one value for every
    column or a mapping column path -> value (a missing ``ndv`` means "count the chunk's distinct
    values"). ``dst == src`` needs
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

    plan = _Plan(src=src_path, dst=dst_path, target=target, columns=column_specs(columns, fpp, ndv), keys=keys,
                 fpp=fpp, ndv=ndv, max_bytes=max_bytes, overwrite=overwrite, in_place=same, progress=progress)
    tmp_paths: list[Path] = []
    source = None
    try:
        source = _Source(src_path, lock=same)
        with ParquetBloomReader(source.readable_path, keys, key_material_file=src_path) as reader:
            reader.path = os.fspath(src_path)  # messages name the file, not the descriptor
            report = _attach(reader, source, plan, tmp_paths)
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


@dataclass(frozen=True)
class _Plan:
    """One attach call's request, checked: ``target`` is the path published (``dst``, or in place
    the file a symlinked ``dst`` names); ``fpp`` / ``ndv`` the call-wide options."""

    src: Path
    dst: Path
    target: Path
    columns: tuple[ColumnSpec, ...]
    keys: KeyAccess
    fpp: float | Mapping[str, float]
    ndv: int | Mapping[str, int] | None
    max_bytes: int
    overwrite: bool
    in_place: bool
    progress: Progress | None


def _attach(reader: ParquetBloomReader, source: _Source, plan: _Plan, tmp_paths: list[Path]) -> AttachReport:
    src_path, dst_path, target, keys, progress = plan.src, plan.dst, plan.target, plan.keys, plan.progress
    same, overwrite = plan.in_place, plan.overwrite
    footer = reader.footer
    chosen = _choose_columns(reader, plan)
    if footer.encrypted and footer.footer_key is None:
        raise MissingKeyError(f"{src_path}: the footer key {key_id_of(footer.footer_key_metadata)!r} is needed "
                              "to re-encrypt or re-sign the footer")
    chunks = [reader.chunk(rg, ordinal) for rg in range(reader.num_row_groups) for ordinal in chosen]
    for chunk in chunks:            # every key, before pyarrow or any write
        if chunk.encrypted:
            reader.key_for(chunk)
        reader.column_metadata(chunk)
    kept: dict[tuple[int, int], SplitBlockBloomFilter] = {}
    metas: list[Any] = [reader.column_metadata(chunk) for chunk in chunks]
    other_filters: list[Any] = []   # metadata of the filters that stay
    for chunk in reader.column_chunks():
        if chunk.column.ordinal in chosen:
            continue
        try:
            meta = reader.column_metadata(chunk)
        except MissingKeyError:
            if chunk.visible_metadata is not None:
                other_filters.append(chunk.visible_metadata)
            continue            # copied verbatim; without its key it cannot be re-read
        metas.append(meta)
        other_filters.append(meta)
        if meta.bloom_filter_offset is not None:
            bf = reader.bloom_filter(chunk.row_group, chunk.column.ordinal)
            if bf is not None:
                kept[(chunk.row_group, chunk.column.ordinal)] = bf

    stale = _stale_filters(reader, chunks, metas, other_filters)
    column_keys = [c.key_metadata for c in chunks if c.encryption is ChunkEncryption.COLUMN_KEY]
    decryption = decryption_properties(footer, column_keys, keys, src_path)
    planned: list[_Planned] = []
    with ArrowChunkSource(source.readable_path, decryption) as values:
        for i, chunk in enumerate(chunks):
            planned.append(_build(reader, values, chunk, chosen[chunk.column.ordinal], plan.max_bytes))
            if progress is not None:
                progress("filters", i + 1, len(chunks))

    offset = reader.tail.footer_offset
    for p in planned:
        chunk = p.chunk
        p.data = serialize_chunk_filter(
            p.bf, column=chunk.column.path, encrypted=chunk.encrypted,
            key=reader.key_for(chunk) if chunk.encrypted else None,
            file_aad=footer.file_aad, row_group_ordinal=chunk.row_group_ordinal, column_ordinal=chunk.column.ordinal)
        p.offset = offset
        offset += len(p.data)
    footer_bytes = encode_footer(footer, _new_metadata(reader, planned))
    tail = footer_bytes + struct.pack("<I", len(footer_bytes)) + reader.tail.magic

    staged_sidecar = None
    clean_leftovers(target.parent, only_for=target.name, orphans=False)  # of an attach to dst killed earlier
    tmp = target.with_name(f".{target.name}.{os.urandom(6).hex()}.attach.tmp")
    tmp_paths.append(tmp)
    out = AtomicOutput(tmp, source.stat.st_mode & 0o777)
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
        # of src's), never a dst without its key material; the journal makes that recoverable
        # (parquet/leftovers.py: the next attach to dst, or `secure-bloom doctor --fix`).
        journal = None
        if staged_sidecar is not None:
            journal = PairJournal.begin(target, sidecar_path(dst_path))
        try:
            if staged_sidecar is not None:
                _publish(staged_sidecar, sidecar_path(dst_path), replace=overwrite)
            _publish(out, target, replace=overwrite or same)
        except BaseException:
            if journal is not None:
                journal.abort()
            raise
        if journal is not None:
            journal.done()
    finally:
        out.close()
        if staged_sidecar is not None:
            staged_sidecar.close()
    fsync_dir(target.parent)
    filters = tuple(AttachedFilter(row_group=p.chunk.row_group, column=p.chunk.column.path,
                                   encrypted=p.chunk.encrypted, num_bytes=p.bf.num_bytes,
                                   ndv=p.ndv, values=p.count, offset=p.offset, length=len(p.data),
                                   replaced=p.replaced, expected_fpp=p.bf.fpp_estimate(p.inserted_distinct),
                                   capped=p.capped) for p in planned)
    return AttachReport(src=os.fspath(src_path), dst=os.fspath(dst_path), footer_mode=footer.mode,
                        filters=filters, kept_filters=len(kept), src_bytes=reader.tail.file_size,
                        dst_bytes=total, verified_values=verified)
