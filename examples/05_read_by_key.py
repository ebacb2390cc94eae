"""Read by key: Bloom-filter pushdown for pyarrow, Polars and DuckDB (issue 12).

Writes an encrypted Parquet file with pyarrow (key-list KMS, development keys), attaches encrypted
Bloom filters with secure_bloom, then looks up one key three ways: secure_bloom.parquet.read_table,
Polars on the pruned dataset, DuckDB on the pruned dataset; then answers repeated lookups from a
PruneCache, as a lookup service would. Run: python examples/05_read_by_key.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory
from secure_bloom.parquet import KeyAccess, PruneCache, attach_bloom_filters
from secure_bloom.parquet.read.api import dataset, scan

KEYS = Path(__file__).resolve().parent.parent / "keys" / "dev-key-list.txt"  # development keys only


def main() -> None:
    kms = KeyListKms.from_file(KEYS)
    master = list(kms.master_key_ids)  # the first id for the footer, the second for the email column
    keys = KeyAccess(kms=kms)
    rng = np.random.default_rng(0)
    emails = [f"user{rng.integers(10**12):012d}@example.com" for _ in range(100_000)]
    table = pa.table({"email": emails, "amount": rng.integers(0, 10_000, size=len(emails))})
    with tempfile.TemporaryDirectory() as tmp:
        src, data = Path(tmp) / "src.parquet", Path(tmp) / "lake"
        data.mkdir()
        factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
        config = pe.EncryptionConfiguration(footer_key=master[0], column_keys={master[1]: ["email"]})
        props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config)
        pq.write_table(table, src, encryption_properties=props, row_group_size=10_000)
        attach_bloom_filters(src, data / "part-0.parquet", ["email"], keys)   # encrypted filters

        wanted = emails[54_321]
        pruned = scan(data, filters=[("email", "==", wanted)], keys=keys, count_reads=True)
        print(pruned.to_table().to_pylist())
        print(pruned.report.summary())

        restricted = dataset(data, filters=[("email", "in", [wanted, "nobody@example.com"])], keys=keys)
        print(pl.scan_pyarrow_dataset(restricted).select("email", "amount").collect())
        con = duckdb.connect()
        con.register("customers", restricted)
        print(con.execute("SELECT email, amount FROM customers").fetchall())

        # A lookup service keeps one PruneCache: unchanged files are stat-ed, not read again.
        cache = PruneCache()
        for email in (wanted, "nobody@example.com", wanted):
            lookup = scan(data, filters=[("email", "==", email)], keys=keys, cache=cache)
            rows = lookup.to_table().num_rows
            print(f"lookup: {rows} row(s), {lookup.report.row_groups_read} row group(s) read, "
                  f"{lookup.report.cache_hits} file(s) answered from the cache")


if __name__ == "__main__":
    main()
