"""Probe the encrypted Bloom filters parquet-java wrote in a parquet-testing file.

The file's columns are encrypted with explicit keys (key ids kc1 / kc2, footer kf), as in
parquet-java's own tests. Run: python examples/02_probe_parquet_java_file.py
"""

from pathlib import Path

from secure_bloom.parquet import KeyAccess, ParquetBloomReader

HERE = Path(__file__).resolve().parent
FILE = HERE.parent / "tests" / "data" / "parquet-testing" / "encrypt_columns_and_footer_bloom_filter.parquet.encrypted"
KEYS = KeyAccess(explicit={"kf": b"0123456789012345", "kc1": b"1234567890123450", "kc2": b"1234567890123451"})

with ParquetBloomReader(FILE, keys=KEYS) as reader:
    for chunk in reader.chunks():
        print(chunk.to_dict())
    result = reader.probe("double_field", [0.5, 1999.5, 3.25, -7.0])
    print(result.to_json(indent=2))
    print("bytes read for all of this:", reader.bytes_read, "of", FILE.stat().st_size)
