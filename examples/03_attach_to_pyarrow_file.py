"""pyarrow cannot write an encrypted Bloom filter; secure_bloom attaches one to pyarrow's file.

Uses the development key list in keys/ (never for production). Run from the repository root:
python examples/03_attach_to_pyarrow_file.py [OUT_DIR]
"""

import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pyarrow.parquet.encryption as pe

from secure_bloom.kms import KeyListKms, pyarrow_kms_client_factory
from secure_bloom.parquet import KeyAccess, ParquetBloomReader, attach_bloom_filters
from secure_bloom.parquet.audit.auditor import audit

ROOT = Path(__file__).resolve().parent.parent
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="secure-bloom-example-"))
kms = KeyListKms.from_file(ROOT / "keys" / "dev-key-list.txt")

# 1. pyarrow writes an encrypted file (footer key + a column key for the SSNs), without filters.
def ssn(i: int) -> str:
    return f"{i % 900 + 100:03d}-{i % 90 + 10:02d}-{i:04d}"


table = pa.table({"ssn": [ssn(i) for i in range(5000)],
                  "amount": pa.array([i * 1.25 for i in range(5000)])})
factory = pe.CryptoFactory(pyarrow_kms_client_factory(kms))
props = factory.file_encryption_properties(
    pe.KmsConnectionConfig(), pe.EncryptionConfiguration(footer_key="footer_key", column_keys={"pii_key": ["ssn"]}))
src = out / "customers.parquet"
pq.write_table(table, src, encryption_properties=props, row_group_size=1000)

# 2. secure_bloom attaches a Bloom filter for "ssn", encrypted with the ssn column's own key.
keys = KeyAccess(kms=kms)
dst = out / "customers.bloom.parquet"
report = attach_bloom_filters(src, dst, ["ssn"], keys=keys, fpp=0.01)
print(f"attached {len(report.filters)} encrypted filters -> {dst}")

# 3. Probe it, and prove to compliance that no filter leaks the sensitive column.
with ParquetBloomReader(dst, keys=keys) as reader:
    print(f"row groups that may hold {ssn(2013)}:", reader.row_groups_maybe_containing("ssn", ssn(2013)))
    print("row groups that may hold 000-00-0000:", reader.row_groups_maybe_containing("ssn", "000-00-0000"))
print("audit compliant:", audit([str(dst)], ["ssn"], keys=keys).is_compliant)
