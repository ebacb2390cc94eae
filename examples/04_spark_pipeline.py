"""Spark writes encrypted Bloom filters with the same master keys Python uses; Python builds a
filter on the cluster and probes a whole dataset, one file per task.

Uses local Spark and the development key list in keys/ (never for production).
Run from the repository root: python examples/04_spark_pipeline.py [OUT_DIR]
"""

import sys
import tempfile
from pathlib import Path

from pyspark.sql import functions as F

from secure_bloom.spark.build import build_bloom_filter
from secure_bloom.spark.dataset import WorkerKeys, probe_dataset
from secure_bloom.spark.policy import BloomFilterSpec, EncryptionPolicy, KeyListKmsConfig
from secure_bloom.spark.session import local_spark

ROOT = Path(__file__).resolve().parent.parent
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="secure-bloom-spark-"))
key_list = (ROOT / "keys" / "dev-key-list.txt").read_text()

policy = EncryptionPolicy(footer_key="footer_key", kms=KeyListKmsConfig(key_list=key_list),
                          column_keys={"pii_key": ["email"]},
                          bloom_filters={"email": BloomFilterSpec(ndv=20_000, fpp=0.01)})
spark = local_spark("secure-bloom-example", cores=2, policy=policy)
try:
    df = spark.range(0, 60_000, numPartitions=3).select(
        F.col("id"), F.format_string("user%06d@example.com", F.col("id")).alias("email"))
    # parquet-java writes the file; the email filters are AES-GCM modules under the email column key.
    df.write.mode("overwrite").options(**policy.write_options()).parquet(str(out / "users"))

    # A distributed build (numpy per partition, OR-merged) equals a local build of the same values.
    bf = build_bloom_filter(df, "email", fpp=0.01)
    print("distributed filter:", bf, "| has user000042:", bf.might_contain("user000042@example.com", "BYTE_ARRAY"))

    # Probe every file of the dataset, one file per Spark task, with the same master keys.
    rows = probe_dataset(spark, out / "users", "email", ["user000042@example.com", "nobody@example.com"],
                         WorkerKeys(key_list=key_list))
    for row in rows:
        print(Path(row["file"]).name, "row group", row["row_group"], row["value"], "->", row["verdict"])
finally:
    spark.stop()
