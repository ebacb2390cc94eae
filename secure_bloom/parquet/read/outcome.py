"""What pruning decided: per file (:class:`FilePrune`) and for a whole read (:class:`PruneReport`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..file.identity import Identity
from .prune_cache import CacheStats

__all__ = ["FilePrune", "PruneReport"]


@dataclass(frozen=True, init=False)
class FilePrune:
    """One file's outcome: the row groups to read and why the others were skipped.

    Parameters
    ----------
    path : str
        The file.
    num_row_groups : int
        Its row groups.
    row_groups : tuple of int
        The row groups to read.
    pruned_by_statistics, pruned_by_bloom : tuple of int
        The row groups skipped, and why.
    metadata_bytes_read, metadata_requests : int
        Footer and filter bytes read, in how many requests.
    file_size : int, optional
        The file's size.
    from_cache : bool, optional
        None: no cache; True: answered from a :class:`PruneCache`; False: a miss.
    identity : tuple, optional
        The version of the file these row groups were chosen from.
    shared_format_opens : bool, default False
        pyarrow's shared format opens this version (a cached answer).
    """

    path: str
    num_row_groups: int
    row_groups: tuple[int, ...]
    pruned_by_statistics: tuple[int, ...] = ()
    pruned_by_bloom: tuple[int, ...] = ()
    metadata_bytes_read: int = 0
    metadata_requests: int = 0
    file_size: int | None = None
    #: None: no cache; True: answered (at least partly) from a :class:`PruneCache`; False: a miss.
    from_cache: bool | None = None
    #: The version of the file these row groups were chosen from (:mod:`.identity`; None: unknown).
    identity: Identity | None = field(default=None, repr=False, compare=False)
    #: Answered from a :class:`PruneCache` whose facts say pyarrow's shared format opens this
    #: version: ``on_reader`` was not called (``prune_files(on_reader_unless_shared=True)``).
    shared_format_opens: bool = field(default=False, repr=False, compare=False)
    #: What a scan checks when it opens this version, when ``identity`` alone does not prove it
    #: (:func:`~secure_bloom.parquet.file.identity.pinned_identity`; None: ``identity``).
    pinned: Identity | None = field(default=None, repr=False, compare=False)

    def __init__(self, path: str, num_row_groups: int, row_groups: tuple[int, ...],
                 pruned_by_statistics: tuple[int, ...] = (), pruned_by_bloom: tuple[int, ...] = (),
                 metadata_bytes_read: int = 0, metadata_requests: int = 0, file_size: int | None = None,
                 from_cache: bool | None = None, identity: Identity | None = None,
                 shared_format_opens: bool = False, pinned: Identity | None = None) -> None:
        # The fields (as declared above, in their order) set in one update of the instance dict,
        # as frozen: a lookup makes one per file, and the generated __init__'s object.__setattr__
        # per field took 1.7 us of a warm lookup's 17 us per file (this: 0.4 us).
        self.__dict__.update(
            path=path, num_row_groups=num_row_groups, row_groups=row_groups,
            pruned_by_statistics=pruned_by_statistics, pruned_by_bloom=pruned_by_bloom,
            metadata_bytes_read=metadata_bytes_read, metadata_requests=metadata_requests, file_size=file_size,
            from_cache=from_cache, identity=identity, shared_format_opens=shared_format_opens, pinned=pinned)

    @property
    def scan_identity(self) -> Identity | None:
        """The identity a scan of this version's row groups pins (:mod:`.identity`)."""
        return self.pinned if self.pinned is not None else self.identity

    def to_dict(self) -> dict[str, Any]:
        """The file's outcome as JSON-able values.

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape).

        Raises
        ------
        None
            Nothing of its own.
        """
        return {"path": self.path, "num_row_groups": self.num_row_groups, "row_groups": list(self.row_groups),
                "pruned_by_statistics": list(self.pruned_by_statistics),
                "pruned_by_bloom": list(self.pruned_by_bloom), "metadata_bytes_read": self.metadata_bytes_read,
                "metadata_requests": self.metadata_requests, "from_cache": self.from_cache}


@dataclass
class PruneReport:
    """What a pruned read did: files, row groups (total / skipped by statistics / skipped by Bloom
    filters / read) and bytes read (footers and filters by the pruner; ``data_bytes_read``: what
    pyarrow's scan read, its dataset discovery's footer read included).

    Parameters
    ----------
    files : list of FilePrune
        One per file considered.
    files_skipped_by_partition : int
        Files a partition filter ruled out.
    data_bytes_read, data_requests : int, optional
        What pyarrow's scan read (when reads are counted).
    rows : int, optional
        Rows returned (once read).
    cache : CacheStats, optional
        The cache's counts after pruning, when one was used.
    """

    files: list[FilePrune] = field(default_factory=list)
    files_skipped_by_partition: int = 0
    data_bytes_read: int | None = None
    data_requests: int | None = None
    rows: int | None = None
    #: The :class:`PruneCache` after pruning (counts only), when one was used.
    cache: CacheStats | None = None

    @property
    def cache_hits(self) -> int:
        """Files answered (at least partly) from the cache."""
        return sum(1 for f in self.files if f.from_cache)

    @property
    def cache_misses(self) -> int:
        """Files a cache was used for but did not hold (or held for another version)."""
        return sum(1 for f in self.files if f.from_cache is False)

    @property
    def row_groups_total(self) -> int:
        """Row groups in the files considered."""
        return sum(f.num_row_groups for f in self.files)

    @property
    def row_groups_pruned_by_statistics(self) -> int:
        """Row groups skipped by their min/max statistics."""
        return sum(len(f.pruned_by_statistics) for f in self.files)

    @property
    def row_groups_pruned_by_bloom(self) -> int:
        """Row groups skipped by their Bloom filters."""
        return sum(len(f.pruned_by_bloom) for f in self.files)

    @property
    def row_groups_read(self) -> int:
        """Row groups left to read."""
        return sum(len(f.row_groups) for f in self.files)

    @property
    def metadata_bytes_read(self) -> int:
        """Bytes of footers and filters read while pruning."""
        return sum(f.metadata_bytes_read for f in self.files)

    @property
    def bytes_read(self) -> int:
        """Metadata bytes plus data bytes read (data: when reads are counted)."""
        return self.metadata_bytes_read + (self.data_bytes_read or 0)

    @property
    def files_read(self) -> int:
        """Files with at least one row group to read."""
        return sum(1 for f in self.files if f.row_groups)

    def to_dict(self, *, with_files: bool = True) -> dict[str, Any]:
        """The report as JSON-able values (``query --explain --format json``).

        Parameters
        ----------
        with_files : bool, default True
            Add ``per_file``: each file's :meth:`FilePrune.to_dict`.

        Returns
        -------
        dict
            Plain JSON-able values (the ``--json`` document's shape); the cache's counts when a
            cache was used.

        Raises
        ------
        None
            Built from the report in memory.
        """
        out: dict[str, Any] = {
            "files": len(self.files) + self.files_skipped_by_partition,
            "files_skipped_by_partition": self.files_skipped_by_partition,
            "files_read": self.files_read,
            "row_groups_total": self.row_groups_total,
            "row_groups_pruned_by_statistics": self.row_groups_pruned_by_statistics,
            "row_groups_pruned_by_bloom": self.row_groups_pruned_by_bloom,
            "row_groups_read": self.row_groups_read,
            "metadata_bytes_read": self.metadata_bytes_read,
            "data_bytes_read": self.data_bytes_read,
            "bytes_read": self.bytes_read,
            "rows": self.rows,
        }
        if self.cache is not None:
            out["cache_hits"] = self.cache_hits
            out["cache_misses"] = self.cache_misses
            out["cache"] = self.cache.to_dict()
        if with_files:
            out["per_file"] = [f.to_dict() for f in self.files]
        return out

    def summary(self) -> str:
        """A few lines for a person (``query --explain``).

        Returns
        -------
        str
            Files, row groups (total / by statistics / by Bloom filters / read), bytes, rows.

        Raises
        ------
        None
            Nothing of its own.
        """
        files = len(self.files) + self.files_skipped_by_partition
        lines = [f"files: {files} ({self.files_skipped_by_partition} skipped by partition, {self.files_read} read)",
                 f"row groups: {self.row_groups_total} total, {self.row_groups_pruned_by_statistics} pruned by "
                 f"statistics, {self.row_groups_pruned_by_bloom} pruned by Bloom filters, "
                 f"{self.row_groups_read} read",
                 f"bytes read: {self.metadata_bytes_read} footer/filter"
                 + (f" + {self.data_bytes_read} by pyarrow (schema, data) = {self.bytes_read}" if self.data_bytes_read is not None else "")]
        if self.cache is not None:
            lines.append(f"cache: {self.cache_hits} files hit, {self.cache_misses} missed; holds {self.cache.files} "
                         f"files, {self.cache.bytes} of {self.cache.max_bytes} bytes")
        if self.rows is not None:
            lines.append(f"rows: {self.rows}")
        return "\n".join(lines)
