"""AWS KMS requests per 100 files written and read with encrypted Bloom filters (issue 32).

Starts moto's server (``moto[server]``) on 127.0.0.1 as the KMS API, makes a footer key and two
column keys (aliases), and counts the Encrypt and Decrypt requests botocore sends (its
``before-send`` event: every request that would leave the process, retries included) while
files are written and read in several ways. Each file: 2,000 rows in 2 row groups, columns
``email`` (key pii) and ``ssn`` (key ssn) encrypted with a Bloom filter each, ``n`` under the
footer key. Prints one table; nothing is asserted.

Usage::

    PYTHONPATH=. python benchmarks/aws_kms_requests.py [--files 100]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe
from moto.server import ThreadedMotoServer

from secure_bloom.kms import AwsKms, pyarrow_kms_client_factory
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, read_table, write_table


class Counter:
    """Counts KMS operations at botocore's before-send event (what goes on the wire)."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def __call__(self, request: Any, **_: Any) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else target
        with self._lock:
            self.counts[target.rpartition(".")[2]] += 1

    def take(self) -> tuple[int, int]:
        with self._lock:
            out = (self.counts["Encrypt"], self.counts["Decrypt"])
            self.counts.clear()
        return out


def table(i: int) -> pa.Table:
    rows = range(i * 2000, (i + 1) * 2000)
    return pa.table({"email": [f"p{r:07d}@example.com" for r in rows], "ssn": [f"{r:09d}" for r in rows],
                     "n": pa.array(rows, pa.int64())})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=100)
    args = parser.parse_args()
    n = args.files
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server._server.server_port}"
    session = boto3.session.Session(aws_access_key_id="AKIDBENCH", aws_secret_access_key="bench-secret",
                                    region_name="us-east-1")
    admin = session.client("kms", endpoint_url=endpoint)
    for alias in ("footer", "pii", "ssn"):
        admin.create_alias(AliasName=f"alias/{alias}", TargetKeyId=admin.create_key()["KeyMetadata"]["KeyId"])
    counter = Counter()

    def kms() -> AwsKms:
        client = AwsKms("us-east-1", endpoint_url=endpoint, session=session)
        client._client.meta.events.register("before-send.kms", counter)
        return client

    def config(**kw: Any) -> pe.EncryptionConfiguration:
        return pe.EncryptionConfiguration(footer_key="alias/footer",
                                          column_keys={"alias/pii": ["email"], "alias/ssn": ["ssn"]}, **kw)

    blooms = {"email": True, "ssn": True}
    rows: list[tuple[str, int, int, float]] = []

    def record(label: str, started: float) -> None:
        encrypt, decrypt = counter.take()
        rows.append((label, encrypt, decrypt, time.perf_counter() - started))

    with tempfile.TemporaryDirectory() as tmp:
        double, single, shared_pyarrow = Path(tmp, "double"), Path(tmp, "single"), Path(tmp, "pyarrow")
        for d in (double, single, shared_pyarrow):
            d.mkdir()
        counter.take()
        client = kms()
        t = time.perf_counter()
        for i in range(n):
            write_table(table(i), double / f"f{i:03d}.parquet", encryption=config(), kms=client,
                        bloom_filter_options=blooms, row_group_size=1000)
        record("write_table, double wrapping (default)", t)
        t = time.perf_counter()
        for i in range(n):
            write_table(table(i), single / f"f{i:03d}.parquet", encryption=config(double_wrapping=False), kms=client,
                        bloom_filter_options=blooms, row_group_size=1000)
        record("write_table, single wrapping", t)
        factory = pe.CryptoFactory(pyarrow_kms_client_factory(client))
        t = time.perf_counter()
        for i in range(n):
            props = factory.file_encryption_properties(pe.KmsConnectionConfig(), config())
            pq.write_table(table(i), shared_pyarrow / f"f{i:03d}.parquet", encryption_properties=props,
                           row_group_size=1000)
        record("pyarrow, one CryptoFactory (no filters)", t)

        t = time.perf_counter()
        result = read_table(double, filters=[("email", "=", "p0100500@example.com")], keys=KeyAccess(kms=kms()))
        assert result.num_rows == (1 if n > 50 else 0)
        record("read_table(dir, filter) of the write_table files", t)
        shared = KeyAccess(kms=kms())
        t = time.perf_counter()
        for path in sorted(double.iterdir()):
            with ParquetBloomReader(path, keys=shared) as reader:
                reader.row_groups_maybe_containing("email", "p0000001@example.com")
        record("probe each write_table file, one KeyAccess", t)
        t = time.perf_counter()
        for path in sorted(double.iterdir()):
            read_table(path, filters=[("email", "=", "p0000001@example.com")], keys=KeyAccess(kms=client))
        record("read_table each write_table file, new KeyAccess each", t)
        t = time.perf_counter()
        shared = KeyAccess(kms=kms())
        for path in sorted(single.iterdir()):
            with ParquetBloomReader(path, keys=shared) as reader:
                reader.row_groups_maybe_containing("email", "p0000001@example.com")
        record("probe each single-wrapped file, one KeyAccess", t)
        t = time.perf_counter()
        assert read_table(shared_pyarrow, keys=KeyAccess(kms=kms())).num_rows == 2000 * n
        record("read_table(dir) of the one-CryptoFactory files", t)
    server.stop()

    print(f"AWS KMS requests for {n} files (3 master keys; 2 encrypted columns with filters, 2 row groups):")
    print(f"{'scenario':<54} {'Encrypt':>8} {'Decrypt':>8} {'per 100 files':>14} {'seconds':>8}")
    for label, encrypt, decrypt, seconds in rows:
        per100 = (encrypt + decrypt) * 100 / n
        print(f"{label:<54} {encrypt:>8} {decrypt:>8} {per100:>14.1f} {seconds:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
