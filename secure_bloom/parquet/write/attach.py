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
The count is exact over the values' 64-bit hashes (:func:`secure_bloom.kernels.count_distinct_hashes`,
from the hashes the filter is built from: values differ in the filter only if their hashes do).
Three things overlap, on threads (pyarrow and the compiled kernel release the GIL): pyarrow reads
(decrypts, decodes) the next row group's chosen columns in one call (in parallel across them), the
current row group's are hashed, counted and inserted, and ``src[0 : footer_offset]`` is copied to
the destination. Memory: the values and hashes of two row groups' chosen columns at a time.
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
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ... import kernels
from ...errors import (
    AttachError,
    AttachVerificationError,
    DestinationExistsError,
    MissingKeyError,
    NotRegularFileError,
    SecureBloomError,
    SourceChangedError,
    UnsupportedParquetFeatureError,
)
from ...fileio import AtomicOutput, fsync_dir, open_regular_fd
from ...filter import SplitBlockBloomFilter, optimal_num_bytes
from ...kms.material import KeyMetadata
from ...kms.sidecar import sidecar_path
from ...types import ChunkEncryption, FilterSizing, PhysicalType
from ...values.physical import hash_values
from ..file.arrow_source import ArrowChunkSource, decryption_properties
from ..file.chunk import ColumnChunk, FilterLocation
from ..file.footer import key_id_of
from ..file.keys import NO_KEYS, KeyAccess
from ..file.leftovers import PairJournal, clean_leftovers
from ..file.reader import ParquetBloomReader
from ..file.regions import Region, filter_extent, merge, metadata_regions
from ..file.schema import ColumnRef
from .append import (
    NewFilter,
    cross_check_statistics,
    dictionary_hashes,
    filter_tail,
    sample_of,
    verify_filters,
)
from .options import (
    DEFAULT_FPP,
    WRITER_DEFAULT_MAX_BYTES,
    ColumnSpec,
    build_num_bytes,
    check_sizing,
    column_specs,
    needed_num_bytes,
    size_cap,
)

__all__ = ["attach_bloom_filters", "AttachReport", "AttachedFilter", "ColumnSpec", "DEFAULT_FPP",
           "WRITER_DEFAULT_MAX_BYTES"]
_COPY_BLOCK = 1 << 20

#: ``progress(stage, done, total)``; stages "filters" (chunks built) and "copy" (bytes written).
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class AttachedFilter:
    """One filter written: where, how big, for how many values.

    Parameters
    ----------
    row_group, column : int, str
        The chunk.
    encrypted : bool
        Encrypted with the column's key.
    num_bytes : int
        The bitset size.
    ndv : int
        The distinct count it was sized for.
    values : int
        Values inserted.
    offset, length : int
        Where it lies in the file (``bloom_filter_offset`` / ``bloom_filter_length``).
    replaced : bool
        A filter of this chunk existed and was rebuilt (its old bytes zeroed).
    expected_fpp : float
        The false-positive rate expected from its size and ``ndv``.
    capped : bool
        ``bloom_filter_max_bytes`` made it smaller than the requested fpp needs.
    """

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
    #: True when ``max_bytes`` (or a fixed ``num_bytes``) made the filter smaller than the
    #: requested fpp needs.
    capped: bool = False
    #: How the size was chosen: ``fixed`` (one size for all the column's row groups) or
    #: ``per_row_group`` (:class:`~secure_bloom.types.FilterSizing`).
    sizing: FilterSizing = FilterSizing.PER_ROW_GROUP


@dataclass(frozen=True)
class AttachReport:
    """What :func:`attach_bloom_filters` did (``--json``: :meth:`to_dict`).

    Parameters
    ----------
    src, dst : str
        The source and the file written.
    footer_mode : str
        The file's footer mode (plaintext, signed plaintext, encrypted).
    filters : tuple of AttachedFilter
        Every filter written.
    kept_filters : int
        Filters of other columns carried over unchanged.
    src_bytes, dst_bytes : int
        The sizes of both files.
    verified_values : int
        Values read back and found in their filters before publishing.
    """

    src: str
    dst: str
    footer_mode: str
    filters: tuple[AttachedFilter, ...]
    kept_filters: int
    src_bytes: int
    dst_bytes: int
    verified_values: int

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able values (``attach --json``).

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
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
                total: int, stop: threading.Event | None = None) -> None:
        """Write bytes ``[0, size)`` of the source to ``out``, with the ``zero`` regions zeroed;
        ``stop`` (set by another thread) ends the copy early, leaving ``out`` incomplete."""
        pos = 0
        while pos < size and not (stop is not None and stop.is_set()):
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
    need: int = 0
    sizing: FilterSizing = FilterSizing.PER_ROW_GROUP


def _choose_columns(reader: ParquetBloomReader, plan: _Plan) -> dict[int, ColumnSpec]:
    """Leaf ordinal -> the column's spec with every option resolved, in the order given."""
    chosen: dict[int, ColumnSpec] = {}
    for spec in plan.columns:
        info = reader.column(spec.path)
        if info.physical_type is PhysicalType.BOOLEAN:
            raise UnsupportedParquetFeatureError(f"column {info.path!r} is BOOLEAN; Bloom filters never hold booleans")
        resolved = spec.resolved(info, plan.fpp, plan.ndv, plan.sizing)
        try:
            check_sizing(resolved.sizing, resolved.num_bytes, plan.max_bytes)
        except ValueError as e:
            raise AttachError(f"column {info.path!r}: {e}; nothing was written") from None
        if chosen.setdefault(info.ordinal, resolved) != resolved:
            raise AttachError(f"column {info.path!r} is given twice with different options; nothing was written")
    return chosen


def _build(reader: ParquetBloomReader, values: Any, chunk: ColumnChunk, spec: ColumnSpec,
           max_bytes: int, bound_values: int | None) -> _Planned:
    """The filter of one column chunk from its values: hash once (the kernel), count the distinct
    hashes (exact-NDV sizing), insert the same hashes, check the chunk's stored min/max. A
    ``FIXED`` column without ``num_bytes`` or ``ndv`` is built for ``bound_values`` (the most
    values of any of its chunks) and folded later (:func:`_fix_sizes`)."""
    info = chunk.column
    ndv, fpp = spec.ndv, spec.fpp
    assert fpp is not None and spec.sizing is not None
    hashes = hash_values(values, info.physical_type, type_length=info.type_length)
    dictionary = dictionary_hashes([values], info)  # a writer may take the chunk's bounds from it
    del values
    counted = kernels.count_distinct_hashes(hashes)
    distinct = counted if ndv is None else int(ndv)
    need = needed_num_bytes(counted, ndv, fpp, max_bytes, spec.num_bytes)
    bf = SplitBlockBloomFilter(build_num_bytes(spec.sizing, ndv, fpp, max_bytes, spec.num_bytes, counted,
                                               bound_values))
    capped = optimal_num_bytes(distinct, fpp) > need
    bf.insert_hashes(hashes)
    meta = reader.column_metadata(chunk)
    cross_check_statistics(bf, meta.statistics, info, AttachError, dictionary=dictionary)
    replaced = meta.bloom_filter_offset is not None
    return _Planned(chunk=chunk, bf=bf, ndv=distinct, count=int(hashes.size), sample=sample_of(hashes).copy(),
                    replaced=replaced, capped=capped, inserted_distinct=counted, need=need, sizing=spec.sizing)


def _fix_sizes(planned: list[_Planned]) -> None:
    """Each ``FIXED`` column's filters folded to one size: the largest need among its chunks."""
    sizes: dict[int, int] = {}
    for p in planned:
        if p.sizing is FilterSizing.FIXED:
            sizes[p.chunk.column.ordinal] = max(sizes.get(p.chunk.column.ordinal, 0), p.need)
    for p in planned:
        size = sizes.get(p.chunk.column.ordinal)
        if size is not None and p.bf.num_bytes != size:
            p.bf = p.bf.folded(size)


def _await_copy(copied: Future[None], events: queue.SimpleQueue[int], progress: Progress | None,
                total: int) -> None:
    """Wait for the page copy, passing its queued progress events on (now that ``total`` is known)."""
    while True:
        finished = copied.done()
        while not events.empty():
            done = events.get()
            if progress is not None:
                progress("copy", done, total)
        if finished:
            break
        wait([copied], timeout=0.1)
    copied.result()


def _build_all(reader: ParquetBloomReader, source: ArrowChunkSource, chunks: list[ColumnChunk],
               chosen: Mapping[int, ColumnSpec], max_bytes: int, progress: Progress | None) -> list[_Planned]:
    """Every chunk's filter, in order, one row group at a time: pyarrow reads (decrypts, decodes)
    row group g + 1's chosen columns in one call on a thread, in parallel across its columns,
    while row group g's are hashed and inserted (at most two row groups' chosen columns in
    memory)."""
    groups: list[list[ColumnChunk]] = []
    for chunk in chunks:
        if groups and groups[-1][0].row_group == chunk.row_group:
            groups[-1].append(chunk)
        else:
            groups.append([chunk])
    planned: list[_Planned] = []
    bounds: dict[int, int | None] = {}  # leaf ordinal -> the most values of any of its chunks (None: unknown)
    for chunk in chunks:
        values, ordinal = reader.column_metadata(chunk).num_values, chunk.column.ordinal
        known = bounds.get(ordinal, 0)
        bounds[ordinal] = None if values is None or known is None else max(known, int(values))
    with ThreadPoolExecutor(1, thread_name_prefix="secure-bloom-read") as pool:
        def read(g: int) -> Future[Any] | None:
            if g >= len(groups):
                return None
            return pool.submit(source.row_group_values, groups[g][0].row_group, [c.column for c in groups[g]])

        pending = read(0)
        try:
            for g, group in enumerate(groups):
                assert pending is not None
                values = pending.result()
                pending = read(g + 1)
                for chunk, chunk_values in zip(group, values):
                    planned.append(_build(reader, chunk_values, chunk, chosen[chunk.column.ordinal], max_bytes,
                                          bounds[chunk.column.ordinal]))
                    if progress is not None:
                        progress("filters", len(planned), len(chunks))
                del values, chunk_values
        finally:
            if pending is not None:
                pending.cancel()
    _fix_sizes(planned)
    return planned


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
    return verify_filters(tmp, keys, key_file, [_new_filter(p) for p in planned], kept, AttachVerificationError)


def _new_filter(p: _Planned) -> NewFilter:
    return NewFilter(chunk=p.chunk, bf=p.bf, sample=p.sample)


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
                         bloom_filter_max_bytes: int = WRITER_DEFAULT_MAX_BYTES, overwrite: bool = False,
                         in_place: bool = False, progress: Progress | None = None,
                         max_bytes: int | None = None,
                         sizing: FilterSizing | str = FilterSizing.PER_ROW_GROUP) -> AttachReport:
    """Write ``dst``: ``src`` plus Bloom filters for ``columns`` (encrypted where the column is).

    ``columns`` are leaf names (or :class:`ColumnSpec` with the column's own ``ndv`` / ``fpp``);
    ``fpp`` and ``ndv`` apply to the columns whose spec leaves them unset: one value for every
    column or a mapping column path -> value (a missing ``ndv`` means "count the chunk's distinct
    values"). ``sizing`` (:class:`~secure_bloom.types.FilterSizing`, for the columns whose spec
    leaves it unset): ``"fixed"`` gives every filter of a column one size, so the sizes, visible
    without any key, do not reveal each row group's distinct count (a ColumnSpec's ``num_bytes``
    fixes that size; else it is sized for ``ndv``, or for the largest chunk's distinct count;
    docs/security-model/filter-sizes.md). ``dst == src`` needs
    ``in_place=True`` (still atomic; a symlink is followed and its target replaced; a concurrent
    in-place attach of the same file waits for this one); an existing ``dst`` (a dangling
    symlink included) needs ``overwrite=True``, and without it a ``dst`` that appears while
    attach runs is never replaced (:class:`DestinationExistsError`). Existing filters of other
    columns are kept; those of the chosen columns are rebuilt, and the bytes of a replaced filter
    are zeroed in the copy. Everything is read from one open descriptor of ``src``; if ``src`` is
    modified or replaced meanwhile, :class:`SourceChangedError` and nothing is written.

    Parameters
    ----------
    src : str or os.PathLike
        The Parquet file to read (local; read through one open descriptor).
    dst : str or os.PathLike
        Where to write the copy with filters (local).
    columns : iterable of str, tuple or ColumnSpec
        Leaf column paths, or :class:`ColumnSpec` with the column's own ``ndv`` / ``fpp``.
    keys : KeyAccess, optional
        The keys of an encrypted ``src`` (its data keys wrap the new filters too).
    fpp : float or mapping, default 0.01
        False-positive probability for columns whose spec leaves it unset: one value, or a
        mapping column path -> value.
    ndv : int or mapping, optional
        Distinct values to size for, likewise; missing means "count the chunk's distinct values".
    bloom_filter_max_bytes : int, default 1 MiB
        The cap on one filter's bitset.
    overwrite : bool, default False
        Replace an existing ``dst`` (a dangling symlink included); without it a ``dst`` that
        appears while attach runs is never replaced.
    in_place : bool, default False
        Allow ``dst == src`` (still atomic; a symlink is followed and its target replaced;
        concurrent in-place attaches of one file run one after the other).
    progress : callable, optional
        Called with progress events (the CLI's progress bar).
    max_bytes : int, optional
        Deprecated spelling of ``bloom_filter_max_bytes``.
    sizing : FilterSizing or str, default "per_row_group"
        ``"fixed"``: every filter of a column (that its :class:`ColumnSpec` does not size
        otherwise) gets one size, the largest chunk's need, so sizes do not reveal each row
        group's distinct count (docs/security-model/filter-sizes.md).

    Returns
    -------
    AttachReport
        Source, destination and every filter written.

    Raises
    ------
    ValueError
        ``fpp`` outside (0, 1), an ``ndv`` below 1, an unknown ``sizing`` or no column (checked
        before ``src`` is opened).
    TypeError
        Both ``bloom_filter_max_bytes`` and ``max_bytes`` are given.
    secure_bloom.errors.AttachError
        ``src`` is not a file, ``dst`` is ``src`` without ``in_place``, the destination
        directory does not exist, a column is given twice with different options or a fixed
        size over the cap; and any failure that is not one of the library's own errors (an
        ``OSError`` reading ``src`` or writing ``dst``: the message names it).
    secure_bloom.errors.DestinationExistsError
        ``dst`` exists (or appeared meanwhile) and ``overwrite`` is False.
    secure_bloom.errors.SourceChangedError
        ``src`` was modified or replaced while it was read; nothing was written.
    secure_bloom.errors.ColumnNotFoundError
        A column is not in the file.
    secure_bloom.errors.UnsupportedParquetFeatureError
        A BOOLEAN column (Bloom filters never hold booleans), or a footer that does not
        re-serialise to its own bytes (fields this version would drop).
    secure_bloom.errors.KeyManagementError
        A key of an encrypted ``src`` cannot be obtained (``MissingKeyError``: the footer key
        is always needed, to re-encrypt or re-sign the footer).
    secure_bloom.errors.ParquetFileError
        ``src`` is malformed, or already holds a plaintext filter on an encrypted column
        (``PlaintextFilterOnEncryptedColumnError``).


    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from secure_bloom.parquet import ParquetBloomReader, attach_bloom_filters
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> pq.write_table(pa.table({"email": [f"user{i}@example.com" for i in range(2_000)]}), tmp / "plain.parquet",
    ...                row_group_size=1_000)
    >>> report = attach_bloom_filters(tmp / "plain.parquet", tmp / "bloom.parquet", ["email"])
    >>> [(f.row_group, f.column, f.num_bytes) for f in report.filters]
    [(0, 'email', 2048), (1, 'email', 2048)]
    >>> with ParquetBloomReader(tmp / "bloom.parquet") as reader:
    ...     reader.row_groups_maybe_containing("email", "user1500@example.com")
    [1]
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
                 fpp=fpp, ndv=ndv, sizing=FilterSizing.coerce(sizing), max_bytes=size_cap(bloom_filter_max_bytes, max_bytes), overwrite=overwrite, in_place=same, progress=progress)
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
    sizing: FilterSizing
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
    staged_sidecar = None
    clean_leftovers(target.parent, only_for=target.name, orphans=False)  # of an attach to dst killed earlier
    tmp = target.with_name(f".{target.name}.{os.urandom(6).hex()}.attach.tmp")
    tmp_paths.append(tmp)
    out = AtomicOutput(tmp, source.stat.st_mode & 0o777)
    try:
        if not same and _uses_external_material(reader):
            staged_sidecar = _copy_sidecar(src_path, dst_path, overwrite, tmp_paths)
        # The pages are copied on a thread while the filters are built: neither needs the other.
        # Its progress events wait in a queue until the filters are done (one stage at a time).
        stop, copy_events = threading.Event(), queue.SimpleQueue[int]()
        relay: Progress | None = None if progress is None else (lambda _stage, done, _total: copy_events.put(done))
        with ThreadPoolExecutor(1, thread_name_prefix="secure-bloom-copy") as copier:
            copied = copier.submit(source.copy_to, out, reader.tail.footer_offset, stale, relay, 0, stop)
            try:
                with ArrowChunkSource(source.readable_path, decryption) as values:
                    planned = _build_all(reader, values, chunks, chosen, plan.max_bytes, progress)
                layout = filter_tail(reader, [_new_filter(p) for p in planned])
                for p, blob, at in zip(planned, layout.blobs, layout.offsets):
                    p.data, p.offset = blob, at
                total = layout.size
                _await_copy(copied, copy_events, progress, total)
            except BaseException:
                stop.set()
                raise
        for data in layout.chunks():
            out.write(data)
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
                                   capped=p.capped, sizing=p.sizing) for p in planned)
    return AttachReport(src=os.fspath(src_path), dst=os.fspath(dst_path), footer_mode=footer.mode,
                        filters=filters, kept_filters=len(kept), src_bytes=reader.tail.file_size,
                        dst_bytes=total, verified_values=verified)
