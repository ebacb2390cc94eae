"""AWS KMS requests per 100 files written and read with encrypted Bloom filters (issue 32).

Starts moto's server (``moto[server]``) on 127.0.0.1 as the KMS API, makes a footer key and two
column keys (aliases), and counts the Encrypt and Decrypt requests botocore sends (its
``before-send`` event: every request that would leave the process, retries included) while
files are written and read in several ways. Each file: 2,000 rows in 2 row groups, columns
``email`` (key pii) and ``ssn`` (key ssn) encrypted with a Bloom filter each, ``n`` under the
footer key. Prints one table; nothing is asserted.

With ``--spark``, local Spark (2 cores, parquet-java with io.securebloom.AwsKmsClient) also
writes the files and reads them back; its requests are counted at the server (moto's KMS backend
runs in this process).

Usage::

    PYTHONPATH=. python benchmarks/aws_kms_requests.py [--files 100] [--spark]
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

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from secure_bloom.kms import AwsKms, pyarrow_kms_client_factory
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, read_table, write_table, write_to_dataset


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks aws-kms-requests", description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--spark", action="store_true", help="also write and read with Spark")
    args = parser.parse_args(argv)
    # boto3 and moto (the test extra) only past --help: the docs tests parse every documented command
    import boto3
    from moto.server import ThreadedMotoServer

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
        dataset = Path(tmp, "dataset")
        for d in (double, single, shared_pyarrow, dataset):
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
        t = time.perf_counter()
        # its own client: what one call costs alone (with ``client`` it would reuse the KEKs the
        # write_table calls above made: they share them within the cache lifetime)
        reports = write_to_dataset(pa.concat_tables([table(i) for i in range(n)]), dataset, encryption=config(),
                                   kms=kms(), bloom_filter_options=blooms, row_group_size=1000,
                                   max_rows_per_file=2000)
        assert len(reports) == n
        record("write_to_dataset, one call for all files", t)
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
        t = time.perf_counter()
        result = read_table(dataset, filters=[("email", "=", "p0100500@example.com")], keys=KeyAccess(kms=kms()))
        assert result.num_rows == (1 if n > 50 else 0)
        record("read_table(dir, filter) of the write_to_dataset files", t)
        if args.spark:
            spark_rows(n, endpoint, Path(tmp), rows)
    server.stop()

    print(f"AWS KMS requests for {n} files (3 master keys; 2 encrypted columns with filters, 2 row groups):")
    print(f"{'scenario':<54} {'Encrypt':>8} {'Decrypt':>8} {'per 100 files':>14} {'seconds':>8}")
    for label, encrypt, decrypt, seconds in rows:
        per100 = (encrypt + decrypt) * 100 / n
        print(f"{label:<54} {encrypt:>8} {decrypt:>8} {per100:>14.1f} {seconds:>8.2f}")
    return 0


def server_counter() -> collections.Counter[str]:
    """Counts Encrypt / Decrypt at moto's KMS backend (the server, in this process)."""
    from moto.kms import models

    counts: collections.Counter[str] = collections.Counter()
    for name in ("encrypt", "decrypt"):
        original = getattr(models.KmsBackend, name)

        def counted(self: Any, *a: Any, _original: Any = original, _name: str = name, **k: Any) -> Any:
            counts[_name.capitalize()] += 1
            return _original(self, *a, **k)

        setattr(models.KmsBackend, name, counted)
    return counts


def spark_rows(n: int, endpoint: str, tmp: Path, rows: list[tuple[str, int, int, float]]) -> None:
    import os

    from secure_bloom.spark.policy import AwsKmsConfig, BloomFilterSpec, EncryptionPolicy
    from secure_bloom.spark.session import applied_policy, local_spark

    os.environ.update({"AWS_ACCESS_KEY_ID": "AKIDBENCH", "AWS_SECRET_ACCESS_KEY": "bench-secret"})
    counts = server_counter()
    spark = local_spark("aws-kms-bench", cores=2)
    policy = EncryptionPolicy(footer_key="alias/footer", kms=AwsKmsConfig("us-east-1", endpoint=endpoint),
                              column_keys={"alias/pii": ["email"], "alias/ssn": ["ssn"]},
                              bloom_filters={"email": BloomFilterSpec(ndv=2000), "ssn": BloomFilterSpec(ndv=2000)})
    df = spark.createDataFrame(pa.concat_tables([table(i) for i in range(n)]).to_pandas()).repartition(n)
    out = tmp / "spark"
    t = time.perf_counter()
    with applied_policy(spark, policy):
        df.write.option("parquet.block.row.count.limit", "1000").parquet(str(out))
    rows.append((f"Spark write ({len(list(out.glob('*.parquet')))} files, 2 cores)", counts["Encrypt"],
                 counts["Decrypt"], time.perf_counter() - t))
    counts.clear()
    t = time.perf_counter()
    with applied_policy(spark, policy):
        found = spark.read.parquet(str(out)).where("email = 'p0000001@example.com'").count()
    assert found == 1
    rows.append(("Spark read(dir, filter)", counts["Encrypt"], counts["Decrypt"], time.perf_counter() - t))
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
