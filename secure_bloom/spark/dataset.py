"""Dataset-level operations on Spark: one Parquet file per task, results collected to the driver.

* :func:`probe_dataset` - which files and row groups may contain each value;
* :func:`prune_dataset` - the row groups to read for a filter (read_table's filters syntax);
* :func:`attach_dataset` - attach (encrypted) Bloom filters to every file of a directory;
* :func:`audit_dataset` - the compliance audit over a directory.

Tasks run secure_bloom in Spark's Python workers. A ``KeyAccess`` holds caches and locks and is
not shipped; workers rebuild it from a :class:`WorkerKeys`, a small picklable description of the
key sources (a key list, explicit keys, an OpenBao/Vault transit URL and the *name* of the
environment variable holding its token, an AWS KMS region and endpoint, an AAD prefix). Each worker process builds one KeyAccess
per description, so its KEK cache serves every task the worker runs. Secrets in a WorkerKeys
travel inside Spark task closures: fine for local and trusted clusters; on shared clusters prefer
transit (only the variable name travels).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..spec import DEFAULT_FPP

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..parquet.file.keys import KeyAccess

__all__ = ["WorkerKeys", "probe_dataset", "prune_dataset", "attach_dataset", "audit_dataset", "dataset_files"]


@dataclass(frozen=True)
class WorkerKeys:
    """A picklable, hashable description of key sources for Spark tasks. Its repr shows no secrets.

    Parameters
    ----------
    key_list : str, optional
        A key list (``KeyListKms``).
    explicit : tuple of (str, bytes), optional
        Explicit keys by id.
    aad_prefix : bytes, optional
        The AAD prefix of files that do not store theirs.
    transit_url : str, optional
        An OpenBao / Vault transit server.
    transit_token_env : str, optional
        The variable holding its token on the workers (None: VAULT_TOKEN, then BAO_TOKEN).
    transit_mount : str, default "transit"
        The transit mount.
    """

    key_list: str | None = field(default=None, repr=False)
    explicit: tuple[tuple[str, bytes], ...] = field(default=(), repr=False)
    aad_prefix: bytes | None = field(default=None, repr=False)
    transit_url: str | None = None
    #: The variable holding the OpenBao/Vault token on the workers; None: VAULT_TOKEN, then
    #: BAO_TOKEN (as the CLI's --kms-url reads them).
    transit_token_env: str | None = None
    transit_mount: str = "transit"
    #: AWS KMS in this region (credentials from boto3's chain on each worker: environment,
    #: profile, instance or container role); ``aws_endpoint`` overrides the endpoint.
    aws_region: str | None = None
    aws_endpoint: str | None = None

    def __repr__(self) -> str:
        parts = []
        if self.key_list is not None:
            from ..kms.key_list import parse_key_list

            parts.append(f"key_list_ids={tuple(parse_key_list(self.key_list))!r}")
        if self.explicit:
            parts.append(f"explicit_ids={tuple(k for k, _ in self.explicit)!r}")
        if self.transit_url:
            from ..parquet.file.keys import DEFAULT_TOKEN_VARIABLES

            token_env = self.transit_token_env or " or ".join(DEFAULT_TOKEN_VARIABLES)
            parts.append(f"transit_url={self.transit_url!r}, token_env={token_env!r}")
        if self.aws_region:
            parts.append(f"aws_region={self.aws_region!r}, aws_endpoint={self.aws_endpoint!r}")
        if self.aad_prefix is not None:
            parts.append("aad_prefix=set")
        return f"WorkerKeys({', '.join(parts)})"

    def key_access(self) -> KeyAccess:
        """The KeyAccess these keys describe (one per process and description).

        Returns
        -------
        KeyAccess
            Cached per process.

        Raises
        ------
        secure_bloom.errors.KeyAccessDeniedError
            A transit token variable is not set on the worker.
        secure_bloom.errors.MalformedKeyMaterialError
            The key list does not parse.
        """
        return _key_access(self)


@lru_cache(maxsize=16)
def _key_access(spec: WorkerKeys) -> KeyAccess:
    from ..kms import AwsKms, KeyListKms, OpenBaoTransitKms
    from ..parquet.file.keys import DEFAULT_TOKEN_VARIABLES, KeyAccess

    kms: Any = None
    if spec.key_list is not None:
        kms = KeyListKms(spec.key_list)
    elif spec.transit_url is not None:
        kms = OpenBaoTransitKms(spec.transit_url, token_env=spec.transit_token_env or DEFAULT_TOKEN_VARIABLES,
                                mount=spec.transit_mount)
    elif spec.aws_region is not None:
        kms = AwsKms(spec.aws_region, endpoint_url=spec.aws_endpoint)
    from ..kms import ExplicitKeys

    explicit = ExplicitKeys(dict(spec.explicit)) if spec.explicit else None
    return KeyAccess(kms=kms, explicit=explicit, aad_prefix=spec.aad_prefix)


def dataset_files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The Parquet files under ``paths`` (files, or directories searched recursively), sorted.
    A path that yields no file (missing, or a directory without Parquet files) is an error.

    Parameters
    ----------
    paths : str, os.PathLike or iterable
        Files or directories.

    Returns
    -------
    list of str
        The Parquet files, sorted.

    Raises
    ------
    FileNotFoundError
        A path yields no file.
    """
    from ..parquet.audit.discover import expand_paths

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found = expand_paths(paths)
    problems = [f"{p.origin}: {p.problem}" for p in found if p.problem is not None]
    if problems:
        raise FileNotFoundError("; ".join(problems))
    return sorted(p.path for p in found)


def _one_task_per_file(spark: SparkSession, files: Sequence[str], fn: Any) -> list[dict[str, Any]]:
    if not files:
        return []
    rdd = spark.sparkContext.parallelize(list(files), len(files))
    return list(rdd.flatMap(fn).collect())


def _probe_file(path: str, column: str, values: tuple[Any, ...], keys: WorkerKeys,
                timezone: Any) -> list[dict[str, Any]]:
    from ..errors import SecureBloomError, error_kind
    from ..parquet import ParquetBloomReader
    from ..types import Verdict

    try:
        with ParquetBloomReader(path, keys=keys.key_access()) as reader:
            result = reader.probe(column, list(values), timezone=timezone)  # hashed once, one kernel call
    except (SecureBloomError, OSError) as e:
        return [{"file": path, "row_group": None, "value_index": None, "value": None, "verdict": None,
                 "has_bloom_filter": None, "encrypted": None, "error": f"{type(e).__name__}: {e}",
                 "error_kind": error_kind(e).value}]
    verdicts = (str(Verdict.ABSENT), str(Verdict.MAYBE))
    labels = result.labels
    return [{"file": path, "row_group": rg, "value_index": index, "value": labels[index], "verdict": verdicts[maybe],
             "has_bloom_filter": has, "encrypted": encrypted, "error": None, "error_kind": None}
            for rg, (row, has, encrypted) in enumerate(zip(result.maybe.tolist(), result.has_bloom_filter,
                                                             result.encrypted))
            for index, maybe in enumerate(row)]


def probe_dataset(spark: SparkSession, paths: Any, column: str, values: Sequence[Any], keys: WorkerKeys, *,
                  as_dataframe: bool = False, timezone: Any = None) -> list[dict[str, Any]] | DataFrame:
    """Probe ``values`` in ``column`` across every file under ``paths``, one file per task.

    One row per (file, row group, value): ``verdict`` is "maybe" or "absent" (a row group without a
    filter is "maybe"); ``value_index`` is the value's position in ``values`` and ``value`` its
    text (two values with the same text stay two rows). Query semantics as
    :meth:`~secure_bloom.parquet.ParquetBloomReader.probe`: a naive ``datetime`` (what PySpark's
    ``collect()`` returns, in the session's local zone) for a column of UTC instants needs
    ``timezone`` (a zone name or tzinfo). A file that cannot be read gives one row with ``error``
    and ``error_kind`` (an :class:`~secure_bloom.errors.ErrorKind` string) set.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session whose executors run the tasks.
    paths : str, os.PathLike or list
        Files or directories (searched for Parquet files on the driver).
    column : str
        The leaf column.
    values : sequence
        The values to probe for.
    keys : WorkerKeys
        Key sources the executors rebuild their ``KeyAccess`` from.
    as_dataframe : bool, default False
        Return a DataFrame instead of a list of dicts.
    timezone : str or tzinfo, optional
        The zone of naive date/time values for columns of UTC instants.

    Returns
    -------
    list of dict or pyspark.sql.DataFrame
        One row per (file, row group, value).

    Raises
    ------
    FileNotFoundError
        A path does not exist.
    secure_bloom.errors.InvalidValueError
        A value cannot be stored in the column (raised on the driver when the first file says so).
    """
    files = dataset_files(paths)
    frozen = tuple(values)
    rows = _one_task_per_file(spark, files, lambda p: _probe_file(p, column, frozen, keys, timezone))
    rows.sort(key=lambda r: (r["file"], -1 if r["row_group"] is None else r["row_group"],
                             -1 if r["value_index"] is None else r["value_index"]))
    if not as_dataframe:
        return rows
    schema = ("file string, row_group int, value_index int, value string, verdict string, "
              "has_bloom_filter boolean, encrypted boolean, error string, error_kind string")
    return spark.createDataFrame([{**r, "value": None if r["value"] is None else str(r["value"])} for r in rows],
                                 schema)


def _prune_file(path: str, filters: Any, keys: WorkerKeys) -> list[dict[str, Any]]:
    from ..errors import SecureBloomError, error_kind
    from ..parquet import ParquetBloomReader
    from ..parquet.read.predicate import predicate_tree, to_expression
    from ..parquet.read.prune import prune_reader

    try:
        tree = predicate_tree(to_expression(filters))
        with ParquetBloomReader(path, keys=keys.key_access()) as reader:
            result = prune_reader(reader, tree)
    except (SecureBloomError, OSError) as e:
        return [{"file": path, "num_row_groups": None, "row_groups": None, "pruned_by_statistics": None,
                 "pruned_by_bloom": None, "error": f"{type(e).__name__}: {e}", "error_kind": error_kind(e).value}]
    return [{"file": path, "num_row_groups": result.num_row_groups, "row_groups": list(result.row_groups),
             "pruned_by_statistics": list(result.pruned_by_statistics),
             "pruned_by_bloom": list(result.pruned_by_bloom), "error": None, "error_kind": None}]


def prune_dataset(spark: SparkSession, paths: Any, filters: Any, keys: WorkerKeys) -> list[dict[str, Any]]:
    """The row groups to read in every file under ``paths`` for ``filters`` (pyarrow's DNF list of
    ``(column, op, value)`` tuples, or a ``pyarrow.compute.Expression``: the syntax of
    :func:`secure_bloom.parquet.read_table`), one file per task: min/max statistics and Bloom
    filters (encrypted or not), as :mod:`secure_bloom.parquet.read.prune` does it locally.

    One dict per file, sorted by file: ``row_groups`` to read, ``pruned_by_statistics``,
    ``pruned_by_bloom``; a file that cannot be read has ``error`` / ``error_kind`` set (never an
    empty ``row_groups``). Literals are taken in each file's own column type (no dataset schema
    on the workers); a literal that does not convert exactly prunes nothing.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session whose executors run the tasks.
    paths : str, os.PathLike or list
        Files or directories (searched for Parquet files on the driver).
    filters : list or pyarrow.compute.Expression
        The filter, in :func:`~secure_bloom.parquet.read.api.read_table`'s syntax.
    keys : WorkerKeys
        Key sources the executors rebuild their ``KeyAccess`` from.

    Returns
    -------
    list of dict
        One per file: ``row_groups``, ``pruned_by_statistics``, ``pruned_by_bloom`` (or ``error``).

    Raises
    ------
    ValueError
        ``filters`` is malformed (refused on the driver).
    FileNotFoundError
        A path does not exist.
    """
    from ..parquet.read.predicate import to_expression

    expression = to_expression(filters)  # refuse bad filters on the driver, ship the Expression
    files = dataset_files(paths)
    rows = _one_task_per_file(spark, files, lambda p: _prune_file(p, expression, keys))
    return sorted(rows, key=lambda r: r["file"])


def _attach_file(src: str, root: str, dst_root: str, columns: tuple[str, ...], fpp: float,
                 keys: WorkerKeys) -> list[dict[str, Any]]:
    from ..errors import SecureBloomError, error_kind
    from ..parquet.write.attach import attach_bloom_filters

    rel = os.path.relpath(src, root) if os.path.isdir(root) else os.path.basename(src)
    dst = os.path.join(dst_root, rel)
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    try:
        report = attach_bloom_filters(src, dst, list(columns), keys=keys.key_access(), fpp=fpp, overwrite=True)
    except (SecureBloomError, OSError) as e:
        return [{"src": src, "dst": None, "ok": False, "filters": 0, "error": f"{type(e).__name__}: {e}",
                 "error_kind": error_kind(e).value}]
    filters = len(getattr(report, "filters", ()) or ())
    return [{"src": src, "dst": dst, "ok": True, "filters": filters, "error": None, "error_kind": None}]


def attach_dataset(spark: SparkSession, src_dir: str | os.PathLike[str], dst_dir: str | os.PathLike[str],
                   columns: Sequence[str], keys: WorkerKeys, *, fpp: float = DEFAULT_FPP) -> list[dict[str, Any]]:
    """Attach Bloom filters for ``columns`` to every Parquet file under ``src_dir``, writing each
    to the same relative path under ``dst_dir`` (one file per task; each write is atomic).

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session whose executors run the tasks.
    src_dir : str or os.PathLike
        The source directory.
    dst_dir : str or os.PathLike
        Where the copies go.
    columns : sequence of str
        The columns to give filters.
    keys : WorkerKeys
        Key sources for the executors.
    fpp : float, default 0.01
        The false-positive probability.

    Returns
    -------
    list of dict
        One attach report (or error) per file.

    Raises
    ------
    FileNotFoundError
        ``src_dir`` holds no Parquet file.
    """
    root, dst_root = str(Path(src_dir)), str(Path(dst_dir))
    if os.path.realpath(root) == os.path.realpath(dst_root):
        raise ValueError("dst_dir must differ from src_dir")
    files = dataset_files(root)
    cols = tuple(columns)
    return sorted(_one_task_per_file(spark, files, lambda p: _attach_file(p, root, dst_root, cols, fpp, keys)),
                  key=lambda r: r["src"])


def _audit_file(path: str, sensitive: tuple[str, ...], allow_footer_key: bool,
                keys: WorkerKeys) -> list[dict[str, Any]]:
    from ..parquet.audit.auditor import audit

    report = audit([path], list(sensitive), keys=keys.key_access(), allow_footer_key=allow_footer_key)
    data = report.to_dict() if hasattr(report, "to_dict") else report.to_json()
    return [{"file": path, "compliant": bool(report.is_compliant), "report": data}]


def audit_dataset(spark: SparkSession, paths: Any, sensitive_columns: Sequence[str], keys: WorkerKeys, *,
                  allow_footer_key: bool = False) -> list[dict[str, Any]]:
    """Audit every Parquet file under ``paths`` (one file per task): one entry per file with
    ``compliant`` and the file's full audit report.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        The session whose executors run the tasks.
    paths : str, os.PathLike or list
        Files or directories.
    sensitive_columns : sequence of str
        The sensitive columns.
    keys : WorkerKeys
        Key sources for the executors.
    allow_footer_key : bool, default False
        Accept filters under the footer key.

    Returns
    -------
    list of dict
        One entry per file (``compliant``, the report).

    Raises
    ------
    FileNotFoundError
        A path yields no Parquet file.
    """
    files = dataset_files(paths)
    cols = tuple(sensitive_columns)
    return sorted(_one_task_per_file(spark, files, lambda p: _audit_file(p, cols, allow_footer_key, keys)),
                  key=lambda r: r["file"])
