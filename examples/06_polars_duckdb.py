"""Polars and DuckDB prune encrypted Parquet by (encrypted) Bloom filters, from their own predicates.

Writes an encrypted Parquet file (pyarrow, key-list KMS, development keys; 8 row groups) with
encrypted Bloom filters on ``email``, then looks one email up with Polars
(``scan_pyarrow_dataset`` over ``secure_bloom.parquet.dataset``, and ``secure_bloom.parquet.polars.scan_parquet``)
and DuckDB SQL (``secure_bloom.parquet.duckdb.register``), each next to the same query over
pyarrow's own dataset of the same file. Every read goes through a filesystem that counts bytes.
Run: python examples/06_polars_duckdb.py
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sized
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet.encryption as pe

from secure_bloom.kms import KeyListKms
from secure_bloom.parquet import KeyAccess, PruningDataset, dataset, write_table
from secure_bloom.parquet.duckdb import register
from secure_bloom.parquet.polars import scan_dataset
from secure_bloom.parquet.read.api import parquet_format
from secure_bloom.parquet.file.read_counting import CountingFileSystem

KEYS = Path(__file__).resolve().parent.parent / "keys" / "dev-key-list.txt"  # development keys only


def main() -> None:
    kms = KeyListKms.from_file(KEYS)
    footer_key, email_key = list(kms.master_key_ids)[:2]
    keys = KeyAccess(kms=kms)
    rng = np.random.default_rng(0)
    emails = [f"user{rng.integers(10**12):012d}@example.com" for _ in range(400_000)]
    table = pa.table({"email": emails, "amount": rng.integers(0, 10_000, size=len(emails))})
    wanted = emails[123_456]
    with tempfile.TemporaryDirectory() as tmp:
        lake = Path(tmp) / "lake"
        lake.mkdir()
        encryption = pe.EncryptionConfiguration(footer_key=footer_key, column_keys={email_key: ["email"]})
        write_table(table, lake / "part-0.parquet", encryption=encryption, kms=kms, row_group_size=50_000,
                    bloom_filter_options={"email": True})  # encrypted Bloom filters, one pass

        counting = CountingFileSystem(pafs.LocalFileSystem())
        fs = pafs.PyFileSystem(counting)
        customers = dataset(str(lake), keys=keys, filesystem=fs)          # a pyarrow Dataset
        plain = ds.dataset(str(lake), filesystem=fs, format=parquet_format(keys))  # pyarrow's own

        total = sum(f.num_row_groups for f in plain.get_fragments())

        def measure(label: str, run: Callable[[], Sized], pruned: PruningDataset | None) -> None:
            before = counting.counter.bytes
            rows = run()
            read = counting.counter.bytes - before
            report = pruned.last_report if pruned is not None else None
            groups = f"{report.row_groups_read} of {report.row_groups_total}" if report else f"all {total}"
            print(f"{label:<36} {len(rows)} row(s), row groups read: {groups}, {read:>9,} bytes read")

        where = pl.col("email") == wanted
        measure("Polars scan_pyarrow_dataset", lambda: pl.scan_pyarrow_dataset(customers).filter(where).collect(),
                customers)
        measure("Polars IO source (scan_dataset)", lambda: scan_dataset(customers).filter(where).collect(), customers)
        measure("Polars, pyarrow's own dataset", lambda: pl.scan_pyarrow_dataset(plain).filter(where).collect(), None)

        con = duckdb.connect()
        registered = register(con, "customers", str(lake), keys=keys, filesystem=fs)
        con.register("customers_unpruned", plain)
        sql = "SELECT email, amount FROM {} WHERE email = ?"
        measure("DuckDB SQL (register)", lambda: con.execute(sql.format("customers"), [wanted]).fetchall(), registered)
        measure("DuckDB SQL, a Python variable", lambda customers_ds=customers: con.execute(  # a local of the caller
            "SELECT email, amount FROM customers_ds WHERE email = ?", [wanted]).fetchall(), customers)
        measure("DuckDB SQL, pyarrow's own dataset",
                lambda: con.execute(sql.format("customers_unpruned"), [wanted]).fetchall(), None)
        print(con.execute("SELECT count(*), sum(amount) FROM customers WHERE amount < 10").fetchall())


if __name__ == "__main__":
    main()
