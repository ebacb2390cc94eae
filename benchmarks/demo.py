"""The end-to-end demo: ``python -m benchmarks demo`` (``scripts/demo``, README's first command).

On the embedded defaults (local Spark, the development key list ``keys/dev-key-list.txt`` when run in
the repository, else a throwaway development key list it makes under ``--out``):

1. generate a synthetic customer table (emails, SSNs, account ids, amounts, cities);
2. Spark (parquet-java) writes it with column encryption and encrypted Bloom filters on the
   sensitive columns, using our Java KMS client and the same master keys Python uses;
3. secure_bloom audits it, probes present and absent values and reports the row groups the
   filters let a reader skip;
4. pyarrow writes an encrypted copy (it refuses Bloom filters with encryption: shown), and
   secure_bloom attaches encrypted Bloom filters to it;
5. the one-call write: ``secure_bloom.parquet.write_table`` writes the pyarrow table encrypted,
   with encrypted Bloom filters, in one pass (pyarrow's option names); audited and probed;
6. Spark reads the three files and a filtered query returns the right rows; parquet-java's own
   Bloom filter reader finds the values in the filters secure_bloom attached and wrote.

Prints a short report, writes ``report.json``, ``jvm.log`` (what Spark's JVM, log4j and py4j
print: kept off the narrative) and, when matplotlib is installed, ``lookups_vs_pyarrow.png`` (per
lookup: bytes read, time and row groups read, cold and warm, against pyarrow) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from secure_bloom.kms.key_list import DEVELOPMENT_KEYS_HEADER, write_development_key_list
from secure_bloom.spec import DEFAULT_FPP

__all__ = ["main", "run_demo", "find_dev_key_list", "throwaway_key_list"]

SENSITIVE = ("email", "ssn", "account_id")
COLUMN_KEYS = {"email": "pii_key", "ssn": "pii_key", "account_id": "finance_key", "amount": "finance_key"}
FOOTER_KEY = "footer_key"
CITIES = ("Amsterdam", "Berlin", "Chicago", "Delhi", "Lagos", "Lima", "Lisbon", "Madrid", "Nairobi",
          "Oslo", "Paris", "Quito", "Rome", "Seoul", "Sydney", "Tokyo", "Toronto", "Vienna", "Warsaw", "Zurich")


def find_dev_key_list(explicit: str | None = None) -> Path | None:
    """The development key list: ``--key-list-file`` (which must exist),
    $SECURE_BLOOM_KEY_LIST_FILE or ./keys/dev-key-list.txt (scripts/demo runs in the checkout); None when
    there is none (the demo then makes a throwaway one: :func:`throwaway_key_list`)."""
    if explicit:
        if not Path(explicit).is_file():
            raise FileNotFoundError(f"--key-list-file {explicit}: no such file")
        return Path(explicit)
    candidates = [os.environ.get("SECURE_BLOOM_KEY_LIST_FILE"), str(Path.cwd() / "keys" / "dev-key-list.txt")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


#: The first line of a key list the demo makes for itself (the library's throwaway key lists).
THROWAWAY_HEADER = DEVELOPMENT_KEYS_HEADER


def throwaway_key_list(out: Path) -> Path:
    """A fresh key list (random AES-128 master keys for the demo's key ids) written to
    ``out/DEVELOPMENT-KEYS-demo-key-list.txt`` (owner-only), marked as development keys: the
    demo's files can be read again with it, and with nothing else. A rerun into the same folder
    keeps the keys its earlier files were written with."""
    return write_development_key_list(out / "DEVELOPMENT-KEYS-demo-key-list.txt",
                                      tuple(dict.fromkeys([FOOTER_KEY, *COLUMN_KEYS.values()])))


def _key_list_text(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    return ", ".join(ln for ln in lines if ln and not ln.startswith("#"))


#: Where the narrative goes: standard output as it was before :func:`_jvm_output_to` moved fd 1.
_narrative: list[TextIO] = []


def _say(msg: str) -> None:
    print(msg, file=_narrative[-1] if _narrative else sys.stdout, flush=True)


@contextmanager
def _jvm_output_to(log: Path) -> Iterator[None]:
    """Send everything written to file descriptors 1 and 2 meanwhile to ``log``: the JVM Spark
    starts inherits them (its log4j warnings, stack traces of handled errors), as do py4j and
    Python warnings; the narrative (:func:`_say`) still reaches the original standard output."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    try:
        real_stdout = sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (pytest's capsys)
        real_stdout = False
    narrative = os.fdopen(os.dup(saved[0]), "w", encoding="utf-8", buffering=1) if real_stdout else sys.stdout
    log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    _narrative.append(narrative)
    try:
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log_fd):
            os.close(fd)
        _narrative.pop()
        if narrative is not sys.stdout:
            narrative.close()


class _Step:
    def __init__(self, title: str, timings: dict[str, float]) -> None:
        self.title, self.timings = title, timings

    def __enter__(self) -> _Step:
        _say(f"\n== {self.title}")
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timings[self.title] = round(time.perf_counter() - self.start, 2)


def _customers(spark: Any, rows: int) -> Any:
    """A deterministic synthetic customer table, sorted by customer_id."""
    from pyspark.sql import functions as F

    cities = F.array(*[F.lit(c) for c in CITIES])
    cid = F.col("id")
    h = F.abs(F.xxhash64(cid))
    return (spark.range(0, rows, numPartitions=2)
            .select(cid.alias("customer_id"),
                    F.format_string("customer%07d.%s@example.com", cid, F.substring(F.md5(cid.cast("string")), 1, 6))
                    .alias("email"),
                    F.format_string("%03d-%02d-%04d", (h % 899) + 100, (h / 1000 % 99).cast("int") + 1,
                                    (h / 100000 % 9999).cast("int") + 1).alias("ssn"),
                    F.format_string("ACCT-%010d", (cid * 7919 + 13) % 10_000_000_000).alias("account_id"),
                    F.round((h % 1_000_000) / 100.0, 2).alias("amount"),
                    F.element_at(cities, (cid % len(CITIES) + 1).cast("int")).alias("city")))


def _probe_values(rows: int, rng: random.Random) -> dict[str, dict[str, list[str]]]:
    present_ids = rng.sample(range(rows), 3)
    absent_ids = [rows + 1000 + i for i in range(3)]

    def email(i: int) -> str:
        import hashlib

        return f"customer{i:07d}.{hashlib.md5(str(i).encode()).hexdigest()[:6]}@example.com"

    def account(i: int) -> str:
        return f"ACCT-{(i * 7919 + 13) % 10_000_000_000:010d}"

    return {
        "email": {"present": [email(i) for i in present_ids], "absent": [email(i) for i in absent_ids]},
        "account_id": {"present": [account(i) for i in present_ids], "absent": [account(i) for i in absent_ids]},
    }


def _probe_file(path: Path, keys: Any, probes: dict[str, dict[str, list[str]]]) -> list[dict[str, Any]]:
    from secure_bloom.parquet import ParquetBloomReader

    results = []
    with ParquetBloomReader(path, keys=keys) as reader:
        total = reader.num_row_groups
        for column, kinds in probes.items():
            for kind, values in kinds.items():
                for value in values:
                    maybe = reader.row_groups_maybe_containing(column, value)
                    results.append({"file": path.name, "column": column, "value": value, "kind": kind,
                                    "row_groups": total, "maybe": maybe, "skipped": total - len(maybe)})
    return results


def _print_probes(results: list[dict[str, Any]]) -> None:
    _say(f"   {'column':<11} {'kind':<8} {'value':<42} {'may contain':<14} skipped")
    for r in results:
        where = ",".join(map(str, r["maybe"])) or "-"
        _say(f"   {r['column']:<11} {r['kind']:<8} {r['value']:<42} {where:<14} {r['skipped']}/{r['row_groups']}")


def _lookup_values(table: Any, rng: random.Random) -> list[tuple[str, str]]:
    """Two stored ssn values and two that are not stored, as (kind, value)."""
    stored = table.column("ssn").to_pylist()
    present = [stored[rng.randrange(len(stored))] for _ in range(2)]
    taken: set[str] = set(stored)
    absent: list[str] = []
    while len(absent) < 2:
        candidate = f"{rng.randrange(100, 999):03d}-{rng.randrange(1, 100):02d}-{rng.randrange(1, 10000):04d}"
        if candidate not in taken:
            absent.append(candidate)
    return [("present", v) for v in present] + [("absent", v) for v in absent]


#: Each timed lookup runs this many times; the median is reported.
_REPEATS = 3


def _ours(path: Path, value: str, keys: Any, cache: Any = None) -> tuple[int, Any, float]:
    """One lookup of ``ssn == value`` through secure_bloom: (rows, prune report, seconds)."""
    from secure_bloom.parquet.read.api import scan

    start = time.perf_counter()
    pruned = scan(path, filters=[("ssn", "==", value)], keys=keys, count_reads=True, cache=cache)
    rows = pruned.to_table(["ssn"]).num_rows
    return rows, pruned.report, time.perf_counter() - start


def _pyarrow_lookup(path: Path, value: str, kms: Any) -> tuple[int, int, float]:
    """The same lookup as pyarrow's own dataset does it (statistics, no Bloom filters), decrypting
    through the same KMS: (rows, bytes read, seconds)."""
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    from secure_bloom.parquet import KeyAccess
    from secure_bloom.parquet.read.api import parquet_format
    from secure_bloom.parquet.file.read_counting import CountingFileSystem, ReadCounter

    counter = ReadCounter()
    start = time.perf_counter()
    fs = pafs.PyFileSystem(CountingFileSystem(pafs.LocalFileSystem(), counter))
    dataset = ds.dataset(str(path), filesystem=fs, format=parquet_format(KeyAccess(kms=kms)))
    rows = dataset.to_table(columns=["ssn"], filter=ds.field("ssn") == value).num_rows
    return rows, counter.bytes, time.perf_counter() - start


def _read_by_key(path: Path, kms: Any, table: Any, rng: random.Random) -> list[dict[str, Any]]:
    """Lookups of ``path`` by ``ssn`` (issue 12): hash-like values, so every row group's min/max
    spans almost the whole range and only the (encrypted) Bloom filters can rule row groups out.

    Each lookup runs three ways, each returning the rows pyarrow's own filtered read returns:
    cold (no cache, a fresh :class:`KeyAccess`: footer and filters read and decrypted again),
    warm (one :class:`PruneCache` and ``KeyAccess`` kept across lookups and filled beforehand: an
    unchanged file is only stat-ed), and pyarrow's dataset scan (no Bloom filters). Bytes are what
    crossed the filesystem interface; times include decryption and the pyarrow read."""
    from secure_bloom.parquet import KeyAccess, PruneCache

    stored = table.column("ssn").to_pylist()
    size = path.stat().st_size
    out = []
    for kind, value in _lookup_values(table, rng):
        cold = [_ours(path, value, KeyAccess(kms=kms)) for _ in range(_REPEATS)]  # cold: nothing kept
        rows, r, seconds = cold[0][0], cold[0][1], statistics.median(c[2] for c in cold)
        runs = [_pyarrow_lookup(path, value, kms) for _ in range(_REPEATS)]
        pa_rows, pa_bytes, pa_seconds = runs[0][0], runs[0][1], statistics.median(p[2] for p in runs)
        out.append({"column": "ssn", "kind": kind, "value": value, "rows": rows, "expected_rows": stored.count(value),
                    "row_groups": r.row_groups_total, "pruned_by_statistics": r.row_groups_pruned_by_statistics,
                    "pruned_by_bloom": r.row_groups_pruned_by_bloom, "row_groups_read": r.row_groups_read,
                    "bytes_read": r.bytes_read, "metadata_bytes_read": r.metadata_bytes_read,
                    "cold_ms": round(1000 * seconds, 2), "cold_cache_hits": r.cache_hits,
                    "pyarrow_rows": pa_rows, "pyarrow_bytes_read": pa_bytes, "pyarrow_ms": round(1000 * pa_seconds, 2),
                    # pyarrow's dataset prunes by the same statistics, never by Bloom filters
                    "pyarrow_row_groups_read": r.row_groups_total - r.row_groups_pruned_by_statistics})
    _say(f"   {len(out)} lookups by ssn (hash-like: min/max statistics cannot skip anything), file {size:,} bytes; "
         f"times: median of {_REPEATS} runs")
    _say(f"   {'lookup':<10} {'rows':>4}  {'row groups read':>15}  {'cold: bytes':>12} {'ms':>7}  "
         f"{'pyarrow: bytes':>14} {'ms':>7}")
    for r in out:
        _say(f"   {r['kind']:<10} {r['rows']:>4}  {r['row_groups_read']:>7} of {r['row_groups']:<5}  "
             f"{r['bytes_read']:>12,} {r['cold_ms']:>7.1f}  {r['pyarrow_bytes_read']:>14,} {r['pyarrow_ms']:>7.1f}")
    warm_keys, cache = KeyAccess(kms=kms), PruneCache()
    for r in out:  # fill the cache: what a lookup service has done before the lookups we time
        _ours(path, r["value"], warm_keys, cache)
    for r in out:
        warm = [_ours(path, r["value"], warm_keys, cache) for _ in range(_REPEATS)]
        rows, w, seconds = warm[0][0], warm[0][1], statistics.median(x[2] for x in warm)
        r.update(warm_rows=rows, warm_cache_hits=w.cache_hits, warm_row_groups_read=w.row_groups_read,
                 warm_bytes_read=w.bytes_read, warm_ms=round(1000 * seconds, 2))
    _say(f"   again with a warm PruneCache: {sum(r['warm_cache_hits'] for r in out)}/{len(out)} lookups answered "
         f"from the cache, same rows: {all(r['warm_rows'] == r['rows'] for r in out)}, "
         f"{min(r['warm_ms'] for r in out):.1f}-{max(r['warm_ms'] for r in out):.1f} ms and "
         f"{min(r['warm_bytes_read'] for r in out):,}-{max(r['warm_bytes_read'] for r in out):,} bytes each")
    _sql_lookups(path, KeyAccess(kms=kms), out, [r["value"] for r in out])
    return out


def _sql_lookups(path: Path, keys: Any, out: list[dict[str, Any]], values: list[str]) -> None:
    """The same lookups in DuckDB SQL (``secure_bloom.parquet.duckdb.register``): DuckDB's own
    WHERE clause prunes by the encrypted Bloom filters. Skipped when DuckDB is not installed."""
    try:
        import duckdb
    except ImportError:
        _say("   DuckDB SQL: skipped (duckdb is not installed)")
        return
    from secure_bloom.parquet.duckdb import register

    con = duckdb.connect()
    view = register(con, "customers", str(path), keys=keys)
    for lookup, value in zip(out, values):
        rows = con.execute("SELECT ssn FROM customers WHERE ssn = ?", [value]).fetchall()
        assert view.last_report is not None
        lookup["duckdb_rows"] = len(rows)
        lookup["duckdb_row_groups_read"] = view.last_report.row_groups_read
    _say(f"   DuckDB SQL (SELECT ... WHERE ssn = ?): same rows: "
         f"{all(r['duckdb_rows'] == r['rows'] for r in out)}, row groups read per lookup: "
         f"{[r['duckdb_row_groups_read'] for r in out]} of {out[0]['row_groups'] if out else 0}")


def _single_parquet(directory: Path) -> Path:
    files = sorted(p for p in directory.iterdir() if p.suffix == ".parquet")
    if len(files) != 1:
        raise RuntimeError(f"expected one Parquet file in {directory}, found {len(files)}")
    return files[0]


def _audit(paths: list[Path], keys: Any) -> dict[str, Any]:
    from secure_bloom.parquet.audit.auditor import audit

    report = audit([str(p) for p in paths], list(SENSITIVE), keys=keys)
    raw = report.to_json()
    data: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else raw
    violations = data.get("violations", [])
    _say(f"   {len(paths)} file(s), sensitive columns {', '.join(SENSITIVE)}: "
         f"{'COMPLIANT' if report.is_compliant else 'VIOLATIONS'} ({len(violations)} violation(s))")
    for v in violations[:5]:
        _say(f"     - {v}")
    return {"compliant": bool(report.is_compliant), "violations": violations}


def _columns_by_key() -> dict[str, list[str]]:
    """COLUMN_KEYS in pyarrow's shape: master key id -> columns."""
    column_keys: dict[str, list[str]] = {}
    for column, key_id in COLUMN_KEYS.items():
        column_keys.setdefault(key_id, []).append(column)
    return column_keys


def _encryption_config() -> Any:
    import pyarrow.parquet.encryption as pe

    return pe.EncryptionConfiguration(footer_key=FOOTER_KEY, column_keys=_columns_by_key(), double_wrapping=True)


def _pyarrow_encrypted_copy(table: Any, path: Path, kms: Any) -> str:
    """pyarrow writes an encrypted copy; first show that it refuses Bloom filters with encryption."""
    import pyarrow.parquet as pq
    import pyarrow.parquet.encryption as pe

    from secure_bloom.kms import pyarrow_kms_client_factory

    factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
    config = _encryption_config()
    props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config)
    refusal = "(no error)"
    try:
        pq.write_table(table, str(path) + ".refused", encryption_properties=props,
                       bloom_filter_options={"email": {"ndv": 1000, "fpp": DEFAULT_FPP}})
    except Exception as e:  # the point: pyarrow cannot do this
        refusal = f"{type(e).__name__}: {e}"
    finally:
        Path(str(path) + ".refused").unlink(missing_ok=True)
    props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config)
    pq.write_table(table, path, encryption_properties=props, row_group_size=max(1, table.num_rows // 8))
    return refusal


def _spark_query(spark: Any, path: Path, column: str, value: str) -> int:
    from pyspark.sql import functions as F

    return int(spark.read.parquet(str(path)).where(F.col(column) == value).count())


#: Plot colours: ours cold, ours warm, pyarrow.
_COLOURS = {"secure_bloom, cold": "#1b7f79", "secure_bloom, warm cache": "#7fc8c0", "pyarrow.dataset": "#d1495b"}


def _plot(lookups: list[dict[str, Any]], out: Path) -> str | None:
    """Per lookup: bytes read, time and row groups read, ours (cold and warm) against pyarrow's
    dataset scan of the same encrypted file; ``lookups_vs_pyarrow.png``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    labels = [f"ssn {r['kind']}\n{r['rows']} row(s)" for r in lookups]
    total = lookups[0]["row_groups"]
    panels = [
        ("bytes read (KiB)", "KiB", [[r["bytes_read"] / 1024 for r in lookups], [r["warm_bytes_read"] / 1024 for r in lookups],
                                     [r["pyarrow_bytes_read"] / 1024 for r in lookups]]),
        ("time per lookup (ms)", "ms", [[r["cold_ms"] for r in lookups], [r["warm_ms"] for r in lookups],
                                        [r["pyarrow_ms"] for r in lookups]]),
        (f"row groups read (of {total})", "", [[r["row_groups_read"] for r in lookups],
                                               [r["warm_row_groups_read"] for r in lookups],
                                               [r["pyarrow_row_groups_read"] for r in lookups]]),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2))
    width = 0.27
    for ax, (title, unit, series) in zip(axes, panels):
        for i, (name, values) in enumerate(zip(_COLOURS, series)):
            xs = [x + (i - 1) * width for x in range(len(lookups))]
            bars = ax.bar(xs, values, width, color=_COLOURS[name], label=name)
            ax.bar_label(bars, labels=[f"{v:,.0f}" if v >= 10 else f"{v:.1f}".rstrip("0").rstrip(".") for v in values],
                         fontsize=8, padding=2)
        ax.set_title(title, fontsize=12)
        ax.set_xticks(range(len(lookups)))
        ax.set_xticklabels(labels, fontsize=10)
        ax.tick_params(axis="y", labelsize=9)
        ax.margins(y=0.15)
        ax.spines[["top", "right"]].set_visible(False)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.935), ncol=3, fontsize=11, frameon=False)
    fig.suptitle("Point lookups on an encrypted Parquet file: encrypted Bloom filters let secure_bloom skip the row "
                 "groups pyarrow reads and decrypts", fontsize=13)
    fig.text(0.5, 0.01, f"One file, {total} row groups, lookups by ssn (hash-like: min/max statistics skip nothing). "
             "Cold: no cache, fresh KeyAccess; warm: a PruneCache filled before. Times: median of "
             f"{_REPEATS} runs. All three return the same rows.",
             ha="center", fontsize=9.5, color="#444444")
    fig.tight_layout(rect=(0, 0.04, 1, 0.88))
    target = out / "lookups_vs_pyarrow.png"
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return str(target)


def run_demo(out: Path, rows: int, key_list_file: str | None = None, seed: int = 7) -> dict[str, Any]:
    """Run every step; returns the report (also written to ``out/report.json``). What the JVM,
    log4j, py4j and Python warnings print goes to ``out/jvm.log``, not into the narrative."""
    found = find_dev_key_list(key_list_file)  # a missing --key-list-file fails before anything is made
    out.mkdir(parents=True, exist_ok=True)
    with _jvm_output_to(out / "jvm.log"):
        return _run_steps(out, rows, found, seed)


def _run_steps(out: Path, rows: int, found: Path | None, seed: int) -> dict[str, Any]:
    from secure_bloom.kms import KeyListKms
    from secure_bloom.parquet import KeyAccess, attach_bloom_filters, write_table
    from secure_bloom.spark.policy import BloomFilterSpec, EncryptionPolicy, KeyListKmsConfig
    from secure_bloom.spark.session import clear_policy, local_spark

    timings: dict[str, float] = {}
    report: dict[str, Any] = {"rows": rows, "timings_s": timings}
    key_path = found or throwaway_key_list(out)
    kms = KeyListKms.from_file(key_path)
    keys = KeyAccess(kms=kms)
    row_groups = 8
    per_group = max(1, rows // row_groups)
    policy = EncryptionPolicy(
        footer_key=FOOTER_KEY, kms=KeyListKmsConfig(key_list=_key_list_text(key_path)),
        column_keys=_columns_by_key(),
        bloom_filters={c: BloomFilterSpec(ndv=per_group, fpp=DEFAULT_FPP) for c in SENSITIVE})
    _say(f"secure_bloom demo: {rows} synthetic customers, dev keys from {key_path} "
         "(development keys: never for production)")

    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    with _Step("1. Spark starts (local, our KMS client jar on the class path)", timings):
        spark = local_spark("secure-bloom-demo", cores=2, policy=policy)
        _say(f"   Spark {spark.version}")
    try:
        with _Step("2. Spark / parquet-java writes the table with encrypted Bloom filters", timings):
            df = _customers(spark, rows)
            spark_dir = out / "spark_customers"
            # About eight row groups: block size ~ 1/8 of the data's encoded size.
            block = max(64 * 1024, rows * 60 // row_groups)
            (df.coalesce(1).write.mode("overwrite").options(**policy.write_options())
             .option("parquet.block.size", str(block)).parquet(str(spark_dir)))
            spark_file = _single_parquet(spark_dir)
            _say(f"   wrote {spark_file.relative_to(out)} ({spark_file.stat().st_size:,} bytes); columns "
                 f"{', '.join(COLUMN_KEYS)} encrypted with their own keys, Bloom filters on {', '.join(SENSITIVE)}")

        with _Step("3. secure_bloom audits the Spark output", timings):
            report["audit_spark"] = _audit([spark_file], keys)

        rng = random.Random(seed)
        probes = _probe_values(rows, rng)
        with _Step("4. secure_bloom probes encrypted Bloom filters (no data pages read)", timings):
            spark_probes = _probe_file(spark_file, keys, probes)
            _print_probes(spark_probes)

        with _Step("5. pyarrow writes an encrypted copy; secure_bloom attaches encrypted filters", timings):
            table = df.toArrow()
            pa_file = out / "pyarrow_customers.parquet"
            refusal = _pyarrow_encrypted_copy(table, pa_file, kms)
            _say(f"   pyarrow with encryption + bloom_filter_options -> {refusal}")
            attached = out / "pyarrow_customers.bloom.parquet"
            attach_report = attach_bloom_filters(pa_file, attached, list(SENSITIVE), keys=keys, fpp=DEFAULT_FPP,
                                                 overwrite=True)
            filters = attach_report.filters
            _say(f"   attached -> {attached.name} ({attached.stat().st_size:,} bytes): {len(filters)} filters "
                 f"({sum(f.encrypted for f in filters)} encrypted with their column keys) over "
                 f"{len({f.row_group for f in filters})} row groups, {sum(f.num_bytes for f in filters):,} "
                 f"bitset bytes; verified {attach_report.verified_values:,} values after writing")
            report["pyarrow_refusal"] = refusal
            report["audit_attached"] = _audit([attached], keys)
            attached_probes = _probe_file(attached, keys, probes)
            _print_probes(attached_probes)

        with _Step("6. secure_bloom.parquet.write_table: the same pyarrow table, encrypted with encrypted "
                   "Bloom filters, in one call", timings):
            one_call = out / "one_call_customers.parquet"
            written = write_table(table, one_call, encryption=_encryption_config(), kms=kms,
                                  bloom_filter_options={c: {"fpp": DEFAULT_FPP} for c in SENSITIVE},
                                  row_group_size=max(1, table.num_rows // 8))
            _say(f"   wrote {one_call.name} ({written.size:,} bytes, {written.row_groups} row groups): "
                 f"{len(written.filters)} filters ({sum(f.encrypted for f in written.filters)} encrypted with "
                 f"their column keys), each sized for its row group's exact distinct count; "
                 f"max expected fpp {max(f.expected_fpp for f in written.filters):.3%}")
            report["one_call_write"] = written.to_dict()
            report["audit_one_call"] = _audit([one_call], keys)
            one_call_probes = _probe_file(one_call, keys, probes)
            _print_probes(one_call_probes)

        with _Step("7. secure_bloom.parquet.read_table: lookups by key that skip row groups by their "
                   "encrypted Bloom filters", timings):
            report["read_by_key"] = _read_by_key(one_call, kms, table, rng)

        with _Step("8. Spark reads the three files; a filtered query returns the right rows", timings):
            checks = []
            for path in (spark_dir, attached, one_call):
                for column in ("email", "account_id"):
                    for kind, want in (("present", 1), ("absent", 0)):
                        value = probes[column][kind][0]
                        got = _spark_query(spark, path, column, value)
                        checks.append({"file": path.name, "column": column, "kind": kind,
                                       "rows": got, "expected": want, "ok": got == want})
                        _say(f"   {path.name:<32} {column} = <{kind} value> -> {got} row(s) "
                             f"{'OK' if got == want else 'WRONG'}")
            report["spark_queries"] = checks

        with _Step("9. parquet-java's own Bloom filter reader checks the filters secure_bloom attached and "
                   "wrote", timings):
            report["parquet_java_probe"] = _parquet_java_probe(attached, policy, probes)
            report["parquet_java_probe_one_call"] = _parquet_java_probe(one_call, policy, probes)
    finally:
        if existing is None:
            spark.stop()
        else:  # a session we were handed (tests, notebooks): leave it running, without our keys
            clear_policy(spark)

    all_probes = spark_probes + attached_probes + one_call_probes
    absent = [r for r in all_probes if r["kind"] == "absent"]
    present = [r for r in all_probes if r["kind"] == "present"]
    report["probes"] = all_probes
    report["summary"] = {
        "absent_probes_row_groups_skipped": f"{sum(r['skipped'] for r in absent)}/{sum(r['row_groups'] for r in absent)}",
        "present_probes_row_groups_skipped": f"{sum(r['skipped'] for r in present)}/{sum(r['row_groups'] for r in present)}",
        "present_values_found": all(r["maybe"] for r in present),
        "spark_queries_ok": all(c["ok"] for c in report["spark_queries"]),
        "read_by_key_ok": all(r["rows"] == r["expected_rows"] == r["warm_rows"] == r["pyarrow_rows"]
                              == r.get("duckdb_rows", r["rows"]) for r in report["read_by_key"]),
        "audits_compliant": all(report[a]["compliant"] for a in ("audit_spark", "audit_attached", "audit_one_call")),
        "parquet_java_finds_present_values": all(
            hits[v] for probe in ("parquet_java_probe", "parquet_java_probe_one_call")
            for column, hits in report[probe].items() for v in probes[column]["present"]),
    }
    plot = _plot(report["read_by_key"], out)
    report["plot"] = plot
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    s = report["summary"]
    _say("\n== Summary")
    _say(f"   absent values: the filters let a reader skip {s['absent_probes_row_groups_skipped']} row groups")
    _say(f"   present values: skipped {s['present_probes_row_groups_skipped']} row groups, "
         f"every present value found: {s['present_values_found']}")
    _say(f"   audits compliant: {s['audits_compliant']}; Spark queries correct: {s['spark_queries_ok']}; "
         f"pruned reads correct: {s['read_by_key_ok']}; "
         f"parquet-java reads our filters: {s['parquet_java_finds_present_values']}")
    _say(f"   report: {out / 'report.json'}" + (f"; plot: {plot}" if plot else "")
         + f"; JVM and Spark log: {out / 'jvm.log'}")
    return report


def _parquet_java_probe(path: Path, policy: Any, probes: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    from benchmarks.parquet_java import ColumnProbe, bloom_probe

    result = bloom_probe(path, [ColumnProbe(c, "string", tuple(k["present"] + k["absent"]))
                                for c, k in probes.items()], policy.hadoop_conf())
    found: dict[str, Any] = {}
    for column, kinds in probes.items():
        groups = result["columns"][column]["row_groups"]
        hits = {v: any(rg["found"].get(v) for rg in groups) for v in kinds["present"] + kinds["absent"]}
        found[column] = hits
        ok = all(hits[v] for v in kinds["present"])
        _say(f"   {column}: parquet-java finds all present values: {ok}; "
             f"absent values it reports absent: {sum(not hits[v] for v in kinds['absent'])}/{len(kinds['absent'])}")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="demo-output", help="output directory (default: demo-output)")
    parser.add_argument("--rows", type=int, default=200_000, help="synthetic customers (default 200000)")
    parser.add_argument("--key-list-file", help="key list file (default: keys/dev-key-list.txt when run in the "
                        "repository, else a throwaway development key list made under --out)")
    parser.add_argument("--seed", type=int, default=7, help="seed for the probed values")
    args = parser.parse_args(argv)
    if args.rows < 100:
        parser.error("--rows must be at least 100")
    report = run_demo(Path(args.out), args.rows, args.key_list_file, args.seed)
    s = report["summary"]
    ok = all(s[k] for k in ("present_values_found", "spark_queries_ok", "read_by_key_ok", "audits_compliant",
                            "parquet_java_finds_present_values"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
